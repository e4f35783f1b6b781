//go:build linux

package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Timings every node gets. They are short so that a scenario's faults
// need only seconds, and written here once so that scenarios derive their
// waits from them.
const (
	// lagTime is replica.lag.time.max.ms: a follower that has not caught up
	// for this long leaves the ISR.
	lagTime = 2 * time.Second
	// sessionTimeout is broker.session.timeout.ms: a broker the controller
	// has not heard from for this long is fenced (issue 13's heartbeats; on
	// code where serf alone decides, fencing is faster). Pauses last longer.
	sessionTimeout = 6 * time.Second
	// heartbeatInterval is broker.heartbeat.interval.ms.
	heartbeatInterval = 1 * time.Second

	// requestTimeout bounds one admin request to one node.
	requestTimeout = 3 * time.Second
	// formTimeout bounds how long three fresh nodes take to agree on the
	// cluster after every one printed its ready line.
	formTimeout = 60 * time.Second
)

// buildBinary returns the sluice binary to test: SLUICE_CHAOS_BIN if set
// (a binary built from another commit, to compare old and new code), else
// ./cmd/sluice built into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	if bin := os.Getenv("SLUICE_CHAOS_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("SLUICE_CHAOS_BIN: %v", err)
		}
		return bin
	}
	bin := filepath.Join(dir, "sluice")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sluice: %v\n%s", err, out)
	}
	return bin
}

// cluster is three sluice processes, every one a raft voter, each in its own
// namespace, started as the README's three-node recipe starts them.
type cluster struct {
	t     *testing.T
	net   *network
	nodes []*node // nodes[i] has node.id i+1

	mu     sync.Mutex
	admins map[int32]*kgo.Client // one client per node, seeded with that node only
}

// startCluster makes the network and starts n nodes in it with the given
// extra overrides, and waits until every node's Metadata lists every broker
// and a controller. Everything is stopped and removed in t.Cleanup.
func startCluster(t *testing.T, iptables, bin, dir string, n int, extra ...string) *cluster {
	t.Helper()
	nw := newNetwork(t, iptables, n)
	c := &cluster{t: t, net: nw, admins: map[int32]*kgo.Client{}}
	t.Cleanup(c.close)

	var voters, seeds []string
	for i, nn := range nw.nodes {
		voters = append(voters, fmt.Sprintf("%d@%s:%d", i+1, nn.ip, raftPort))
		seeds = append(seeds, fmt.Sprintf("%s:%d", nn.ip, gossipPort))
	}
	for i, nn := range nw.nodes {
		nd := &node{id: int32(i + 1), ns: nn.ns, ip: nn.ip, bin: bin, dir: filepath.Join(dir, fmt.Sprintf("node-%d", i+1))}
		if err := os.MkdirAll(filepath.Join(nd.dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		props := append([]string{
			fmt.Sprintf("node.id=%d", nd.id),
			"log.dirs=" + nd.dataDir(),
			fmt.Sprintf("listeners=PLAINTEXT://%s:%d,CONTROLLER://%s:%d", nn.ip, kafkaPort, nn.ip, raftPort),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			fmt.Sprintf("gossip.listener=%s:%d", nn.ip, gossipPort),
			"gossip.join=" + strings.Join(seeds, ","),
			"default.replication.factor=3",
			"min.insync.replicas=2",
			"unclean.leader.election.enable=false",
			"auto.create.topics.enable=false",
			fmt.Sprintf("replica.lag.time.max.ms=%d", lagTime.Milliseconds()),
			fmt.Sprintf("broker.session.timeout.ms=%d", sessionTimeout.Milliseconds()),
			fmt.Sprintf("broker.heartbeat.interval.ms=%d", heartbeatInterval.Milliseconds()),
			"offsets.topic.num.partitions=3",
			"transaction.state.log.num.partitions=3",
		}, extra...)
		if level := os.Getenv("SLUICE_CHAOS_LOG_LEVEL"); level != "" {
			nd.args = append(nd.args, "--log-level", level)
		}
		for _, p := range props {
			nd.args = append(nd.args, "--override", p)
		}
		c.nodes = append(c.nodes, nd)
		if err := nd.start(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		wg.Go(func() { errs[i] = nd.waitReady(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("chaos: start the cluster: %v", err)
	}
	for _, nd := range c.nodes {
		if err := c.waitFormed(nd); err != nil {
			t.Fatalf("chaos: %v", err)
		}
	}
	return c
}

// waitFormed polls nd's Metadata until it lists every node at its address
// and a controller.
func (c *cluster) waitFormed(nd *node) error {
	return pollFor(formTimeout, func() error {
		m, err := c.metadata(nd.id)
		if err != nil {
			return err
		}
		if len(m.Brokers) != len(c.nodes) || m.ControllerID < 0 {
			return fmt.Errorf("node %d lists %d brokers, controller %d", nd.id, len(m.Brokers), m.ControllerID)
		}
		return nil
	})
}

// close stops every node cleanly (a paused one is continued first) and
// closes the admin clients. The network is removed by its own cleanup,
// registered earlier and so run later.
func (c *cluster) close() {
	c.mu.Lock()
	for _, cl := range c.admins {
		cl.Close()
	}
	c.admins = map[int32]*kgo.Client{}
	c.mu.Unlock()
	c.stopAll()
}

// stopAll stops every node with SIGTERM, in parallel.
func (c *cluster) stopAll() {
	var wg sync.WaitGroup
	for _, nd := range c.nodes {
		wg.Go(func() { nd.stop() })
	}
	wg.Wait()
}

func (c *cluster) node(id int32) *node { return c.nodes[id-1] }

func (c *cluster) addrs() []string {
	var addrs []string
	for _, nd := range c.nodes {
		addrs = append(addrs, nd.addr())
	}
	return addrs
}

// admin returns the client that talks to node id only, so that a request
// sees that node's own view of the metadata.
func (c *cluster) admin(id int32) (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.admins[id]; cl != nil {
		return cl, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(id).addr()), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	c.admins[id] = cl
	return cl, nil
}

// request sends req to node id itself, within requestTimeout.
func (c *cluster) request(id int32, req kmsg.Request) (kmsg.Response, error) {
	cl, err := c.admin(id)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return cl.SeedBrokers()[0].RetriableRequest(ctx, req)
}

// metadata is node id's answer to Metadata for topics (all topics if none).
func (c *cluster) metadata(id int32, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	if len(topics) > 0 {
		for _, tp := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(tp)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := c.request(id, req)
	if err != nil {
		return nil, fmt.Errorf("metadata from node %d: %w", id, err)
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// controller returns the controller id as node from reports it.
func (c *cluster) controller(from int32) (int32, error) {
	m, err := c.metadata(from)
	if err != nil {
		return -1, err
	}
	if m.ControllerID < 0 {
		return -1, fmt.Errorf("node %d knows no controller", from)
	}
	return m.ControllerID, nil
}

// partitionState is one partition as a node's Metadata describes it.
type partitionState struct {
	leader   int32
	replicas []int32
	isr      []int32
}

// partitions returns topic's partitions as node from sees them.
func (c *cluster) partitions(from int32, topic string) (map[int32]partitionState, error) {
	m, err := c.metadata(from, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]partitionState{}
	for _, tp := range m.Topics {
		if err := kerr.ErrorForCode(tp.ErrorCode); err != nil {
			return nil, fmt.Errorf("metadata of %s from node %d: %w", topic, from, err)
		}
		for _, p := range tp.Partitions {
			out[p.Partition] = partitionState{leader: p.Leader, replicas: p.Replicas, isr: p.ISR}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("node %d knows no partitions of %s", from, topic)
	}
	return out, nil
}

// createTopic creates topic with one partition per entry of assignment
// (replica lists; the first is the preferred leader) and the durability
// configs of the workloads, then waits until every node sees a leader for
// every partition.
func (c *cluster) createTopic(topic string, assignment [][]int32) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions = -1
	rt.ReplicationFactor = -1
	for p, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition = int32(p)
		ra.Replicas = replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for k, v := range map[string]string{"min.insync.replicas": "2", "unclean.leader.election.enable": "false"} {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	err := pollFor(30*time.Second, func() error {
		ctrl, err := c.controller(1)
		if err != nil {
			return err
		}
		cl, err := c.admin(ctrl)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		code := resp.Topics[0].ErrorCode
		if code != 0 && code != kerr.TopicAlreadyExists.Code {
			return fmt.Errorf("create %s: %w", topic, kerr.ErrorForCode(code))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, nd := range c.nodes {
		err := pollFor(30*time.Second, func() error {
			ps, err := c.partitions(nd.id, topic)
			if err != nil {
				return err
			}
			for p, st := range ps {
				if st.leader < 0 || len(st.isr) != len(st.replicas) {
					return fmt.Errorf("node %d: %s-%d leader %d isr %v", nd.id, topic, p, st.leader, st.isr)
				}
			}
			if len(ps) != len(assignment) {
				return fmt.Errorf("node %d sees %d partitions of %s", nd.id, len(ps), topic)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// waitFullISR waits until some node that is the controller in its own
// view reports, for every partition of topics, a leader and an ISR equal
// to the replicas, and every other node agrees on the leader. It returns
// how long that took.
func (c *cluster) waitFullISR(timeout time.Duration, topics ...string) (time.Duration, error) {
	start := time.Now()
	err := pollFor(timeout, func() error {
		for _, nd := range c.nodes {
			for _, topic := range topics {
				ps, err := c.partitions(nd.id, topic)
				if err != nil {
					return err
				}
				for p, st := range ps {
					if st.leader < 0 || len(st.isr) != len(st.replicas) {
						return fmt.Errorf("node %d: %s-%d leader %d replicas %v isr %v", nd.id, topic, p, st.leader, st.replicas, st.isr)
					}
				}
			}
		}
		return nil
	})
	return time.Since(start), err
}

// others returns the node ids other than the given ones, in order.
func (c *cluster) others(not ...int32) []int32 {
	var out []int32
	for _, nd := range c.nodes {
		if !slices.Contains(not, nd.id) {
			out = append(out, nd.id)
		}
	}
	return out
}

// pollFor calls f until it returns nil or timeout passes, and returns f's
// last error then.
func pollFor(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
