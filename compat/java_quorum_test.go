package compat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rows for kafka-metadata-quorum.sh and kafka-cluster.sh (issue 20;
// broker/quorum.go, controller/quorum.go):
//
//   - kafka-metadata-quorum, one broker: `describe --status` and
//     `describe --replication` print the lone node as leader and only
//     voter, with no lag; `kafka-cluster.sh cluster-id` prints the
//     cluster id; `kafka-cluster.sh unregister --id 7` fails with
//     BROKER_ID_NOT_REGISTERED.
//   - kafka-metadata-quorum-rf3, three nodes (all voters) and a fourth
//     added as a broker: `describe --status` lists the three voters with
//     their CONTROLLER endpoints and node 4 as observer; then, while a
//     franz-go producer (acks=all) writes, a voter that is not the
//     controller is killed and replaced: `add-controller` with node 4's
//     command config, `remove-controller` with the dead voter's id and
//     the directory id `describe --replication` printed, and
//     `kafka-cluster.sh unregister` of the dead broker. `describe
//     --status` then lists voters 1, 2 and 4 less the dead one, every
//     acknowledged record is read back and nothing was lost.
//
// add-controller reads node.id, process.roles, the controller listener
// and the directory id of the metadata log dir (its meta.properties)
// from --command-config, as on a Kafka controller. sluice writes no
// meta.properties and promotes the node at the raft address it already
// replicates on (controller/quorum.go), so the row writes the small
// properties file and meta.properties an operator would write for the
// tool.

func javaMetadataQuorumRow() row {
	return javaRow("kafka-metadata-quorum", 2*time.Minute, runJavaMetadataQuorum)
}

func javaMetadataQuorumRF3Row() row {
	return javaClusterRow("kafka-metadata-quorum-rf3", 4*time.Minute, runJavaMetadataQuorumRF3)
}

// quorumStatus is `describe --status` parsed: "Key: value" lines.
type quorumStatus map[string]string

func describeQuorumStatus(ctx context.Context, env *rowEnv, addr string) (quorumStatus, string, error) {
	out, err := kafkaTool(ctx, env, nil, "kafka-metadata-quorum.sh", "--bootstrap-server", addr, "describe", "--status")
	if err != nil {
		return nil, out, err
	}
	st := quorumStatus{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			st[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs", "CurrentVoters", "CurrentObservers"} {
		if _, ok := st[k]; !ok {
			return nil, out, fmt.Errorf("describe --status printed no %s: %q", k, firstLine(out))
		}
	}
	return st, out, nil
}

var quorumIDRE = regexp.MustCompile(`"id": (\d+)`)

// ids returns the node ids in a CurrentVoters or CurrentObservers value.
func (st quorumStatus) ids(key string) []string {
	var ids []string
	for _, m := range quorumIDRE.FindAllStringSubmatch(st[key], -1) {
		ids = append(ids, m[1])
	}
	slices.Sort(ids)
	return ids
}

// quorumReplica is one row of `describe --replication`.
type quorumReplica struct {
	id, dirID, status       string
	logEnd, lag             int64
	lastFetch, lastCaughtUp int64
}

func describeQuorumReplication(ctx context.Context, env *rowEnv, addr string) ([]quorumReplica, string, error) {
	out, err := kafkaTool(ctx, env, nil, "kafka-metadata-quorum.sh", "--bootstrap-server", addr, "describe", "--replication")
	if err != nil {
		return nil, out, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || !slices.Equal(strings.Fields(lines[0]), []string{"NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"}) {
		return nil, out, fmt.Errorf("describe --replication header %q", firstLine(out))
	}
	var rs []quorumReplica
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != 7 {
			return nil, out, fmt.Errorf("describe --replication line %q", line)
		}
		r := quorumReplica{id: f[0], dirID: f[1], status: f[6]}
		for i, p := range []*int64{&r.logEnd, &r.lag, &r.lastFetch, &r.lastCaughtUp} {
			n, err := strconv.ParseInt(f[2+i], 10, 64)
			if err != nil {
				return nil, out, fmt.Errorf("describe --replication line %q: %v", line, err)
			}
			*p = n
		}
		rs = append(rs, r)
	}
	return rs, out, nil
}

func runJavaMetadataQuorum(ctx context.Context, env *rowEnv) error {
	addr := env.broker.addr
	st, out, err := describeQuorumStatus(ctx, env, addr)
	if err != nil {
		return err
	}
	if st["LeaderId"] != "1" || st["MaxFollowerLag"] != "0" || st["MaxFollowerLagTimeMs"] != "0" ||
		!slices.Equal(st.ids("CurrentVoters"), []string{"1"}) || st["CurrentObservers"] != "[]" {
		return fmt.Errorf("describe --status: want node 1 leading alone without lag, got:\n%s", out)
	}
	if n, err := strconv.Atoi(st["LeaderEpoch"]); err != nil || n < 1 {
		return fmt.Errorf("describe --status: LeaderEpoch %q, want a positive epoch", st["LeaderEpoch"])
	}
	if n, err := strconv.Atoi(st["HighWatermark"]); err != nil || n < 1 {
		return fmt.Errorf("describe --status: HighWatermark %q, want a positive index", st["HighWatermark"])
	}
	rs, out, err := describeQuorumReplication(ctx, env, addr)
	if err != nil {
		return err
	}
	if len(rs) != 1 || rs[0].id != "1" || rs[0].status != "Leader" || rs[0].lag != 0 || rs[0].lastCaughtUp <= 0 ||
		!strings.Contains(st["CurrentVoters"], `"directoryId": "`+rs[0].dirID+`"`) {
		return fmt.Errorf("describe --replication: want node 1 as Leader, lag 0, with the directory id --status prints, got:\n%s", out)
	}

	out, err = kafkaTool(ctx, env, nil, "kafka-cluster.sh", "cluster-id", "--bootstrap-server", addr)
	if err != nil {
		return err
	}
	if want := "Cluster ID: " + st["ClusterId"]; strings.TrimSpace(out) != want {
		return fmt.Errorf("kafka-cluster.sh cluster-id printed %q, want %q", firstLine(out), want)
	}
	out, stderr, err := kafkaToolOutput(ctx, env, nil, "kafka-cluster.sh", "unregister", "--bootstrap-server", addr, "--id", "7")
	if err == nil || !strings.Contains(stderr+out, "BrokerIdNotRegisteredException") {
		return fmt.Errorf("kafka-cluster.sh unregister --id 7: want it to fail with BrokerIdNotRegisteredException, got %v: %q", err, firstLine(stderr+out))
	}
	return nil
}

func runJavaMetadataQuorumRF3(ctx context.Context, env *rowEnv) error {
	if len(env.nodes) != 3 {
		return fmt.Errorf("row needs 3 nodes, has %d", len(env.nodes))
	}
	if _, err := env.addNode(ctx); err != nil {
		return err
	}
	// The new broker is an observer once the controller heard from it.
	var st quorumStatus
	var out string
	err := pollUntil(ctx, 30*time.Second, func() error {
		var err error
		if st, out, err = describeQuorumStatus(ctx, env, env.nodes[1].addr); err != nil {
			return err
		}
		if !slices.Equal(st.ids("CurrentVoters"), []string{"1", "2", "3"}) || !slices.Equal(st.ids("CurrentObservers"), []string{"4"}) {
			return fmt.Errorf("describe --status: want voters 1-3 and observer 4, got:\n%s", out)
		}
		if st["MaxFollowerLagTimeMs"] == "-1" {
			return fmt.Errorf("describe --status: a voter has not caught up yet:\n%s", out)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n := strings.Count(st["CurrentVoters"], `"CONTROLLER://127.0.0.1:`); n != 3 {
		return fmt.Errorf("describe --status: %d voters with a CONTROLLER endpoint, want 3: %s", n, st["CurrentVoters"])
	}
	leader := st["LeaderId"]
	victim := "3"
	if leader == "3" {
		victim = "2"
	}
	rs, out, err := describeQuorumReplication(ctx, env, env.nodes[0].addr)
	if err != nil {
		return err
	}
	var victimDir string
	for _, r := range rs {
		if r.id == victim {
			victimDir = r.dirID
		}
		want := "Follower"
		switch r.id {
		case leader:
			want = "Leader"
		case "4":
			want = "Observer"
		}
		if r.status != want || r.logEnd < 1 {
			return fmt.Errorf("describe --replication: node %s is %s at log end %d, want %s:\n%s", r.id, r.status, r.logEnd, want, out)
		}
	}
	if victimDir == "" {
		return fmt.Errorf("describe --replication lists no node %s:\n%s", victim, out)
	}

	// A producer writes to a topic on nodes 1, 2 and 4 throughout.
	const topic = "compat-quorum"
	keep := []int32{1, 2, 4}
	if victim == "2" {
		keep = []int32{1, 3, 4}
	}
	if err := createTopicOn(ctx, env, topic, keep); err != nil {
		return err
	}
	bp, err := startLightProducer(env, topic)
	if err != nil {
		return err
	}
	defer bp.stop()

	victimID, _ := strconv.Atoi(victim)
	env.nodes[victimID-1].kill()

	// add-controller with node 4's configuration, as on the new node.
	cfgPath, err := writeControllerConfig(env, 4, st["ClusterId"])
	if err != nil {
		return err
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-metadata-quorum.sh", "--bootstrap-server", env.nodes[0].addr,
		"--command-config", cfgPath, "add-controller")
	if err != nil {
		return err
	}
	if !strings.HasPrefix(strings.TrimSpace(out), "Added controller 4 with directory id ") {
		return fmt.Errorf("add-controller printed %q", firstLine(out))
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-metadata-quorum.sh", "--bootstrap-server", env.nodes[0].addr,
		"remove-controller", "--controller-id", victim, "--controller-directory-id", victimDir)
	if err != nil {
		return err
	}
	// Kafka 4.1's tool prints "Removed  KRaft controller" (two spaces).
	if want := "Removed KRaft controller " + victim + " with directory id " + victimDir; strings.Join(strings.Fields(out), " ") != want {
		return fmt.Errorf("remove-controller printed %q, want %q", firstLine(out), want)
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-cluster.sh", "unregister", "--bootstrap-server", env.nodes[0].addr, "--id", victim)
	if err != nil {
		return err
	}
	if want := "Broker " + victim + " is no longer registered."; strings.TrimSpace(out) != want {
		return fmt.Errorf("kafka-cluster.sh unregister printed %q, want %q", firstLine(out), want)
	}

	var wantVoters []string
	for _, id := range keep {
		wantVoters = append(wantVoters, strconv.Itoa(int(id)))
	}
	err = pollUntil(ctx, 30*time.Second, func() error {
		st, out, err = describeQuorumStatus(ctx, env, env.nodes[3].addr)
		if err != nil {
			return err
		}
		if !slices.Equal(st.ids("CurrentVoters"), wantVoters) || st["CurrentObservers"] != "[]" {
			return fmt.Errorf("describe --status after the replacement: want voters %v and no observer, got:\n%s", wantVoters, out)
		}
		if st["MaxFollowerLagTimeMs"] == "-1" {
			return fmt.Errorf("describe --status: node 4 has not caught up as a voter:\n%s", out)
		}
		return nil
	})
	if err != nil {
		return err
	}

	acked, err := bp.finish()
	if err != nil {
		return err
	}
	if len(acked) == 0 {
		return errors.New("the producer had nothing acknowledged during the replacement")
	}
	return readBackAll(ctx, env, topic, 1, "none", 0, acked)
}

// createTopicOn creates topic with one partition on replicas, through
// the controller, and waits until it has a leader.
func createTopicOn(ctx context.Context, env *rowEnv, topic string, replicas []int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("create %s on %v: %w", topic, replicas, err)
	}
	return pollUntil(ctx, 30*time.Second, func() error {
		m, err := metadataFrom(ctx, env.nodes[0], topic)
		if err != nil {
			return err
		}
		if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 || m.Topics[0].Partitions[0].Leader < 0 {
			return fmt.Errorf("%s has no leader yet", topic)
		}
		return nil
	})
}

// writeControllerConfig writes the properties add-controller reads for
// node id: its id and roles, the controller listener, and a log dir whose
// meta.properties holds a directory id.
func writeControllerConfig(env *rowEnv, id int, clusterID string) (string, error) {
	dir := filepath.Join(env.dir, fmt.Sprintf("controller-%d", id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	meta := fmt.Sprintf("version=1\ncluster.id=%s\nnode.id=%d\ndirectory.id=%s\n", clusterID, id, "7bZ0b2JZS5ySTFKhyBPUHw")
	if err := os.WriteFile(filepath.Join(dir, "meta.properties"), []byte(meta), 0o644); err != nil {
		return "", err
	}
	path := filepath.Join(env.dir, fmt.Sprintf("controller-%d.properties", id))
	props := fmt.Sprintf("node.id=%d\nprocess.roles=broker,controller\nlog.dirs=%s\nlisteners=CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\n", id, dir)
	return path, os.WriteFile(path, []byte(props), 0o644)
}

// lightProducer writes one record every few milliseconds with acks=all,
// remembering every acknowledged value: a light load while the quorum
// changes.
type lightProducer struct {
	cl    *kgo.Client
	quit  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	acked map[string]bool
	err   error
	once  sync.Once
}

func startLightProducer(env *rowEnv, topic string) (*lightProducer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		return nil, err
	}
	p := &lightProducer{cl: cl, quit: make(chan struct{}), done: make(chan struct{}), acked: map[string]bool{}}
	go func() {
		defer close(p.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.quit:
				return
			case <-t.C:
			}
			v := fmt.Sprintf("live-%d", i)
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil && p.err == nil {
					p.err = fmt.Errorf("the producer running during the voter replacement lost %q: %w", v, err)
				} else if err == nil {
					p.acked[v] = true
				}
			})
		}
	}()
	return p, nil
}

func (p *lightProducer) finish() (map[string]bool, error) {
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked, p.err
}

func (p *lightProducer) stop() {
	p.once.Do(func() {
		close(p.quit)
		<-p.done
		p.cl.Close()
	})
}
