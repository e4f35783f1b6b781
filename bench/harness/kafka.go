package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// kafkaVersions are the releases -kafka-version accepts: the ones
// compat/kafkatools has a pom for.
var kafkaVersions = []string{"4.4.0", "4.1.1"}

// fetchKafka makes sure the jars of Kafka release version are in the
// cache, with compat/kafkatools/fetch.sh (instant when they are), and
// returns their directory.
func fetchKafka(ctx context.Context, root, version string, logf func(string, ...any)) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "compat", "kafkatools", "fetch.sh"), version)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("compat/kafkatools/fetch.sh %s: %w\n%s", version, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	libs := lines[len(lines)-1]
	logf("kafka %s jars: %s", version, libs)
	return libs, nil
}

// kafkaSystem starts Apache Kafka brokers in KRaft mode — release
// -kafka-version, 4.4.0 (the newest, issue 22's baseline) unless set, or
// 4.1.1 (issue 8's) — from the jars compat/kafkatools/fetch.sh VERSION
// keeps in ~/.cache/sluice/kafka-VERSION/libs, through
// compat/bin/kafka-server-start.sh with SLUICE_KAFKA_LIBS naming that
// directory, which gives them Kafka's stock server JVM settings
// (KAFKA_HEAP_OPTS -Xmx1G -Xms1G, G1 with its pause target). Both
// releases' brokers run on Java 17 (their classes are Java 17's, version
// 61), the JDK the machine's java is.
// Every node is a combined broker and controller (process.roles =
// broker,controller) and a voter of the static quorum
// (controller.quorum.voters); its log dir is formatted with
// kafka-storage.sh format and a fresh cluster id before it starts.
// Everything else is Kafka's defaults, not the development settings of
// Kafka's sample server.properties.
type kafkaSystem struct {
	root    string // the sluice repository, for compat/bin/
	version string // the release, e.g. 4.4.0
	libs    string // its jars, as fetch.sh printed them
}

// env is what compat/bin's launchers need to run this release.
func (k *kafkaSystem) env() []string { return []string{"SLUICE_KAFKA_LIBS=" + k.libs} }

func (k *kafkaSystem) name() string { return "kafka" }

// script returns the path of one of compat/bin's launchers.
func (k *kafkaSystem) script(name string) string {
	return filepath.Join(k.root, "compat", "bin", name)
}

// kafkaNode is one node's place in a cluster: its ports and properties.
type kafkaNode struct {
	id               int32
	client, ctrlPort int
}

// properties returns node's server.properties in security mode sec:
// one client listener, named for its protocol (PLAINTEXT or SASL_SSL),
// that the brokers replicate over too.
func (kn kafkaNode) properties(voters, logDir string, sec *security) string {
	l := sec.listenerName()
	return strings.Join(append([]string{
		"process.roles=broker,controller",
		fmt.Sprintf("node.id=%d", kn.id),
		"controller.quorum.voters=" + voters,
		fmt.Sprintf("listeners=%s://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", l, kn.client, kn.ctrlPort),
		fmt.Sprintf("advertised.listeners=%s://127.0.0.1:%d", l, kn.client),
		"controller.listener.names=CONTROLLER",
		fmt.Sprintf("listener.security.protocol.map=CONTROLLER:PLAINTEXT,%s:%s", l, l),
		"log.dirs=" + logDir,
	}, sec.brokerProperties()...), "\n") + "\n"
}

// prepare writes the node's server.properties under nodeDir, formats its log
// dir for clusterID (with the SCRAM users of sec) and returns the node, not
// yet started.
func (k *kafkaSystem) prepare(ctx context.Context, nodeDir, clusterID, voters string, kn kafkaNode, sec *security) (*node, error) {
	logDir := filepath.Join(nodeDir, "data")
	if err := os.MkdirAll(nodeDir, 0o755); err != nil {
		return nil, err
	}
	propsPath := filepath.Join(nodeDir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(kn.properties(voters, logDir, sec)), 0o600); err != nil {
		return nil, err
	}
	format := exec.CommandContext(ctx, k.script("kafka-storage.sh"), append([]string{"format", "-t", clusterID, "-c", propsPath}, sec.kafkaScramArgs()...)...)
	format.Env = append(os.Environ(), k.env()...)
	if out, err := format.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafka-storage.sh format for node %d: %w\n%s", kn.id, err, out)
	}
	nd := &node{id: kn.id, addr: fmt.Sprintf("127.0.0.1:%d", kn.client), dataDir: logDir}
	nd.spawn = func() (*proc, error) {
		return spawn(k.script("kafka-server-start.sh"), []string{propsPath}, k.env(), nodeDir, filepath.Join(nodeDir, "broker.log"))
	}
	return nd, nil
}

// layout picks ports for n nodes and returns them with the quorum's
// controller.quorum.voters value.
func kafkaLayout(n int) ([]kafkaNode, string, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, "", err
	}
	var nodes []kafkaNode
	var voters []string
	for i := range n {
		kn := kafkaNode{id: int32(i + 1), client: ports[2*i], ctrlPort: ports[2*i+1]}
		nodes = append(nodes, kn)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", kn.id, kn.ctrlPort))
	}
	return nodes, strings.Join(voters, ","), nil
}

// newClusterID returns a random cluster id as kafka-storage.sh random-uuid
// prints one: 16 random bytes, URL-safe base64 without padding, and, as
// Kafka's Uuid.randomUuid ensures, not starting with '-' (the tool would
// take it for an option).
func newClusterID() string {
	for {
		var b [16]byte
		rand.Read(b[:])
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

func (k *kafkaSystem) startCluster(ctx context.Context, dir string, n int, sec *security) (*cluster, error) {
	layout, voters, err := kafkaLayout(n)
	if err != nil {
		return nil, err
	}
	clusterID := newClusterID()
	c := &cluster{nodes: make([]*node, n), opts: sec.clientOpts()}
	// Formatting is a JVM start each; do the nodes side by side.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, kn := range layout {
		wg.Go(func() {
			c.nodes[i], errs[i] = k.prepare(ctx, filepath.Join(dir, fmt.Sprintf("node-%d", kn.id)), clusterID, voters, kn, sec)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, nd := range c.nodes {
		if err := nd.restart(); err != nil {
			c.stop(10 * time.Second)
			return nil, err
		}
	}
	// Three JVMs starting on 2 cores that other work shares took over 3
	// minutes to serve a SASL_SSL listener (TLS and SCRAM set up too).
	if err := c.waitFormed(ctx, 5*time.Minute); err != nil {
		c.stop(30 * time.Second)
		return nil, fmt.Errorf("kafka cluster did not form: %w", err)
	}
	return c, nil
}

func (k *kafkaSystem) startSingle(ctx context.Context, dir string) (*node, error) {
	layout, voters, err := kafkaLayout(1)
	if err != nil {
		return nil, err
	}
	nd, err := k.prepare(ctx, dir, newClusterID(), voters, layout[0], nil)
	if err != nil {
		return nil, err
	}
	return nd, nd.restart()
}
