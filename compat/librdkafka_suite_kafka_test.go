package compat

// The librdkafka suite against Apache Kafka 4.1.1, for the side-by-side
// comparison in the allow-list's reasons ("fails against Apache Kafka
// 4.1.1 too"). Not a row, and never run in CI: it starts real Kafka brokers
// from compat/'s jars (compat/bin/kafka-server-start.sh, KRaft, combined
// broker and controller on loopback) and runs the same tests as the
// librdkafka-suite rows with the same runner:
//
//	SLUICE_LIBRDKAFKA_KAFKA=1 go test ./compat -run '^TestLibrdkafkaSuiteKafka$' -count=1 -v -timeout 60m
//
// The one-node tests run against one Kafka node, 0103_transactions against
// three. Each test's outcome goes to results.tsv under
// SLUICE_COMPAT_LOGDIR/librdkafka-suite-kafka/ (or the test's temp dir).

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaSuiteProps are the settings of the Kafka brokers the suite runs
// against, on top of Kafka's defaults: internal topics that fit the
// cluster, the suite's default scenario (4 partitions per auto-created
// topic), and on one node an authorizer (StandardAuthorizer, allowing
// everything no ACL names) so that kafka-acls.sh works for the tests that
// deny a principal. The three-node run (0103 only, no ACLs) goes without:
// a quorum of StandardAuthorizers refuses the controllers' own Vote and
// Fetch requests until it has loaded, and never forms.
func kafkaSuiteProps(nodes int) []string {
	rf := fmt.Sprint(min(nodes, 3))
	props := []string{
		"offsets.topic.replication.factor=" + rf,
		"transaction.state.log.replication.factor=" + rf,
		"transaction.state.log.min.isr=" + fmt.Sprint(min(nodes, 2)),
		"num.partitions=4",
	}
	if nodes == 1 {
		props = append(props,
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"allow.everyone.if.no.acl.found=true")
	}
	return props
}

func TestLibrdkafkaSuiteKafka(t *testing.T) {
	if os.Getenv("SLUICE_LIBRDKAFKA_KAFKA") != "1" {
		t.Skip("set SLUICE_LIBRDKAFKA_KAFKA=1 to run librdkafka's suite against Apache Kafka 4.1.1 (side by side, not CI)")
	}
	root, logDir := compatDirs(t)
	dir := filepath.Join(logDir, "librdkafka-suite-kafka")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	testDir, err := buildLibrdkafkaSuite(ctx, root, dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}

	for _, txn := range []bool{false, true} {
		names, err := librdkafkaSuiteTests(txn)
		if err != nil {
			t.Fatal(err)
		}
		n, sub := 1, "one-node"
		if txn {
			n, sub = 3, "txn"
		}
		t.Run(sub, func(t *testing.T) {
			runDir := filepath.Join(dir, sub)
			nodes, err := startKafkaNodes(ctx, root, runDir, n)
			if err != nil {
				t.Fatal(err)
			}
			defer stopKafkaNodes(nodes)
			s := &rdkSuite{
				testDir:   testDir,
				root:      root,
				dir:       runDir,
				bootstrap: kafkaAddrs(nodes),
				parallel:  librdkafkaSuiteParallel(),
				quick:     os.Getenv("SLUICE_LIBRDKAFKA_FULL") != "1",
				logf:      t.Logf,
			}
			start := time.Now()
			results, err := s.run(ctx, names)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("librdkafka suite against Kafka %s (%d node(s)): %s in %.0fs; results in %s",
				librdkafkaSuiteKafkaVersion, n, rdkCounts(results), time.Since(start).Seconds(), filepath.Join(runDir, "results.tsv"))
		})
	}
}

// kafkaNode is one Apache Kafka process started for the comparison.
type kafkaNode struct {
	addr string
	cmd  *exec.Cmd
	log  *os.File
}

func kafkaAddrs(nodes []*kafkaNode) []string {
	var addrs []string
	for _, k := range nodes {
		addrs = append(addrs, k.addr)
	}
	return addrs
}

// startKafkaNodes formats and starts n Kafka 4.1.1 nodes (each a broker and
// a controller, all voters) on free loopback ports, with their data and
// logs under dir/node-<id>/, and waits until Metadata lists all of them.
func startKafkaNodes(ctx context.Context, root, dir string, n int) ([]*kafkaNode, error) {
	bin := filepath.Join(root, "compat", "bin")
	var ports []int
	for range 2 * n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports = append(ports, p)
	}
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	var idBytes [16]byte
	rand.Read(idBytes[:])
	clusterID := "k" + base64.RawURLEncoding.EncodeToString(idBytes[:])[1:]

	var nodes []*kafkaNode
	for i := range n {
		nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", i+1))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			stopKafkaNodes(nodes)
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", ports[2*i])
		props := append([]string{
			"process.roles=broker,controller",
			fmt.Sprintf("node.id=%d", i+1),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", addr, ports[2*i+1]),
			"advertised.listeners=PLAINTEXT://" + addr,
			"controller.listener.names=CONTROLLER",
			"inter.broker.listener.name=PLAINTEXT",
			"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			"log.dirs=" + filepath.Join(nodeDir, "data"),
		}, kafkaSuiteProps(n)...)
		propsPath := filepath.Join(nodeDir, "server.properties")
		if err := os.WriteFile(propsPath, []byte(strings.Join(props, "\n")+"\n"), 0o644); err != nil {
			stopKafkaNodes(nodes)
			return nil, err
		}
		format := exec.CommandContext(ctx, filepath.Join(bin, "kafka-storage.sh"), "format", "-t", clusterID, "-c", propsPath)
		if out, err := format.CombinedOutput(); err != nil {
			stopKafkaNodes(nodes)
			return nil, fmt.Errorf("kafka-storage.sh format: %w\n%s", err, out)
		}
		logFile, err := os.Create(filepath.Join(nodeDir, "broker.log"))
		if err != nil {
			stopKafkaNodes(nodes)
			return nil, err
		}
		cmd := exec.Command(filepath.Join(bin, "kafka-server-start.sh"), propsPath)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		bindToParent(cmd)
		if err := cmd.Start(); err != nil {
			logFile.Close()
			stopKafkaNodes(nodes)
			return nil, err
		}
		nodes = append(nodes, &kafkaNode{addr: addr, cmd: cmd, log: logFile})
	}

	deadline := time.Now().Add(3 * time.Minute)
	last := "no answer"
	for {
		// A fresh client each time: one created while the nodes were
		// still starting kept failing after they had formed.
		cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddrs(nodes)...))
		if err != nil {
			stopKafkaNodes(nodes)
			return nil, err
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		md, err := kadm.NewClient(cl).BrokerMetadata(rctx)
		cancel()
		cl.Close()
		if err == nil {
			if len(md.Brokers) == n {
				return nodes, nil
			}
			last = fmt.Sprintf("Metadata lists %d broker(s)", len(md.Brokers))
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stopKafkaNodes(nodes)
			return nil, fmt.Errorf("Kafka's %d node(s) did not form within 3 minutes (see %s); last: %s", n, dir, last)
		}
		time.Sleep(time.Second)
	}
}

// stopKafkaNodes stops the nodes (SIGTERM, then SIGKILL after 30 s).
func stopKafkaNodes(nodes []*kafkaNode) {
	for _, k := range nodes {
		k.cmd.Process.Signal(os.Interrupt)
	}
	for _, k := range nodes {
		done := make(chan struct{})
		go func() { k.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			k.cmd.Process.Kill()
			<-done
		}
		k.log.Close()
	}
}
