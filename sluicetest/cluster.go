package sluicetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster is n in-process sluice nodes on loopback forming one cluster:
// node ids 1..n, the first min(3, n) raft voters, every node gossiping
// with every other.
type Cluster struct {
	t     testing.TB
	nodes []*Node // nodes[i] has node id i+1
	// quorum and joinList are the controller.quorum.voters and
	// gossip.join every node was started with; AddNode reuses them.
	quorum, joinList string
	// listenerNames are the Kafka listeners every node opens, the first
	// on the node's address (listenersOf).
	listenerNames []string
	overrides     []string // StartCluster's overrides
	// base holds every node's data directory. It is the test's temp
	// directory made before the cluster's close was registered, so the
	// nodes stop before their files are removed (cleanups run last
	// registered first).
	base string
}

// clusterStartTimeout bounds the formation of a cluster: every node's
// broker.New returns once it is registered and unfenced.
const clusterStartTimeout = 30 * time.Second

// StartCluster starts n nodes concurrently (the voters must see each other
// to elect a controller) with short timings: replica.lag.time.max.ms=1000
// and no initial rebalance delay. overrides (key=value) apply to every node
// and win over the cluster's own settings, except node.id, listeners and
// the quorum and gossip addresses. A listeners override names the Kafka
// listeners every node opens (their hosts and ports are replaced, the
// first listener on the node's address; the names' protocols come from a
// listener.security.protocol.map override); without one each node has a
// PLAINTEXT listener. Ports are reserved on 127.0.0.1 and the whole
// cluster is started again on fresh ports if one was taken in between.
func StartCluster(t testing.TB, n int, overrides ...string) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("sluicetest: StartCluster needs at least one node, got %d", n)
	}
	c := &Cluster{t: t, base: t.TempDir()}
	t.Cleanup(c.closeAll)
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		// Every attempt gets fresh data directories: a failed attempt
		// leaves a raft configuration naming its ports behind, and
		// voters reopened with that state on new ports never find
		// each other.
		dirs := make([]string, n)
		for i := range dirs {
			dirs[i] = c.nodeDir()
		}
		if err = c.tryStart(dirs, overrides); err == nil {
			return c
		}
		c.closeAll()
		inUse := errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
		if !inUse && attempt > 0 {
			break
		}
		t.Logf("sluicetest: cluster start attempt %d failed, starting again on fresh ports and directories: %v", attempt+1, err)
	}
	t.Fatalf("sluicetest: start cluster: %v", err)
	return nil
}

func (c *Cluster) tryStart(dirs []string, overrides []string) error {
	n := len(dirs)
	voters := min(3, n)
	kafka, err := reservePorts(n, false)
	if err != nil {
		return err
	}
	raft, err := reservePorts(voters, false)
	if err != nil {
		return err
	}
	gossip, err := reservePorts(n, true)
	if err != nil {
		return err
	}
	var quorum []string
	for i := range voters {
		quorum = append(quorum, fmt.Sprintf("%d@%s", i+1, raft[i]))
	}
	joinList := strings.Join(gossip, ",")
	c.quorum, c.joinList, c.overrides = strings.Join(quorum, ","), joinList, overrides
	c.listenerNames = listenerNamesOf(overrides)
	c.nodes = make([]*Node, n)
	for i := range n {
		listeners, err := listenersOf(c.listenerNames, kafka[i])
		if err != nil {
			return err
		}
		if i < voters {
			listeners += ",CONTROLLER://" + raft[i]
		}
		ovr := []string{
			"replica.lag.time.max.ms=1000",
			"group.initial.rebalance.delay.ms=0",
		}
		ovr = append(ovr, overrides...)
		ovr = append(ovr,
			"node.id="+strconv.Itoa(i+1),
			"listeners="+listeners,
			"controller.quorum.voters="+strings.Join(quorum, ","),
			"gossip.listener="+gossip[i],
			"gossip.join="+joinList,
		)
		c.nodes[i] = &Node{t: c.t, Dir: dirs[i], Overrides: ovr, addr: kafka[i], name: "node" + strconv.Itoa(i+1), gossipAddr: gossip[i]}
		if i < voters {
			c.nodes[i].raftAddr = raft[i]
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, node := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := node.open(node.addr, clusterStartTimeout); err != nil {
				errs[i] = fmt.Errorf("node %d: %w", i+1, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.waitFormed(clusterStartTimeout)
}

// waitFormed waits until every node's metadata lists every node as a
// broker. Each node's broker.New returns once the controller has it
// registered and unfenced; the other nodes apply that a moment later, and
// until they do a client asking them cannot address it (kgo's Broker(id)
// finds the id in the metadata of whichever node it asks).
func (c *Cluster) waitFormed(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, n := range c.nodes {
		for {
			ids := n.Broker.ListedBrokers()
			if len(ids) == len(c.nodes) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s lists brokers %v after %s, want all %d", n.name, ids, timeout, len(c.nodes))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// AddNode starts one more node in the running cluster, as an operator
// adds a broker: the next node id, the same quorum voters (so it is a raft
// non-voter), gossip.join naming the first nodes' gossip addresses, and the
// cluster's overrides. It returns once the node is registered and
// unfenced; like any new broker it holds no replicas until topics are
// created or reassigned onto it.
func (c *Cluster) AddNode() *Node {
	c.t.Helper()
	id := len(c.nodes) + 1
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var kafka, gossip []string
		if kafka, err = reservePorts(1, false); err != nil {
			break
		}
		if gossip, err = reservePorts(1, true); err != nil {
			break
		}
		ovr := append([]string{"replica.lag.time.max.ms=1000", "group.initial.rebalance.delay.ms=0"}, c.overrides...)
		var listeners string
		if listeners, err = listenersOf(c.listenerNames, kafka[0]); err != nil {
			break
		}
		ovr = append(ovr,
			"node.id="+strconv.Itoa(id),
			"listeners="+listeners,
			"controller.quorum.voters="+c.quorum,
			"gossip.listener="+gossip[0],
			"gossip.join="+c.joinList,
		)
		n := &Node{t: c.t, Dir: c.nodeDir(), Overrides: ovr, addr: kafka[0], name: "node" + strconv.Itoa(id), gossipAddr: gossip[0]}
		if err = n.open(n.addr, clusterStartTimeout); err == nil {
			c.nodes = append(c.nodes, n)
			return n
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	c.t.Fatalf("sluicetest: add node %d: %v", id, err)
	return nil
}

// listenerNamesOf are the Kafka listener names of the last listeners
// override (PLAINTEXT without one), controller listeners left out.
func listenerNamesOf(overrides []string) []string {
	names := []string{"PLAINTEXT"}
	for _, o := range overrides {
		v, ok := strings.CutPrefix(o, "listeners=")
		if !ok {
			continue
		}
		names = nil
		for _, item := range strings.Split(v, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(item), "://")
			if name = strings.ToUpper(name); name != "" && name != "CONTROLLER" {
				names = append(names, name)
			}
		}
	}
	return names
}

// listenersOf is a node's listeners value: the first name on addr, the
// others on fresh loopback ports.
func listenersOf(names []string, addr string) (string, error) {
	parts := []string{names[0] + "://" + addr}
	if len(names) > 1 {
		more, err := reservePorts(len(names)-1, false)
		if err != nil {
			return "", err
		}
		for i, name := range names[1:] {
			parts = append(parts, name+"://"+more[i])
		}
	}
	return strings.Join(parts, ","), nil
}

// reservePorts finds n free loopback ports (free for UDP too when udp is
// set, as serf uses both) and returns them as host:port. They are released
// before returning, so another process may take one before the node
// binds it; StartCluster then starts over.
func reservePorts(n int, udp bool) ([]string, error) {
	var addrs []string
	var closers []func()
	defer func() {
		for _, f := range closers {
			f()
		}
	}()
	for len(addrs) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { ln.Close() })
		addr := ln.Addr().String()
		if udp {
			pc, err := net.ListenPacket("udp", addr)
			if err != nil {
				continue // the UDP port is busy; try another
			}
			closers = append(closers, func() { pc.Close() })
		}
		addrs = append(addrs, addr)
	}
	return addrs, nil
}

// closeAll stops every node cleanly, one at a time and the raft voters
// last, so each stopping broker still finds a controller to hand its
// leaderships to.
// nodeDir makes a fresh data directory for a node under c.base.
func (c *Cluster) nodeDir() string {
	c.t.Helper()
	d, err := os.MkdirTemp(c.base, "node")
	if err != nil {
		c.t.Fatalf("sluicetest: node data directory: %v", err)
	}
	return d
}

func (c *Cluster) closeAll() {
	for i := len(c.nodes) - 1; i >= 0; i-- {
		if n := c.nodes[i]; n != nil && n.Broker != nil {
			n.Broker.Close()
		}
	}
}

// Size is the number of nodes.
func (c *Cluster) Size() int { return len(c.nodes) }

// Node returns the node with node id id (1..n).
func (c *Cluster) Node(id int) *Node {
	c.t.Helper()
	if id < 1 || id > len(c.nodes) {
		c.t.Fatalf("sluicetest: no node %d in a cluster of %d", id, len(c.nodes))
	}
	return c.nodes[id-1]
}

// Kill stops node id as kill -9 leaves its files: nothing synced,
// checkpointed or marked clean. (Its controller still leaves serf and
// hands over raft leadership on the way out; a true kill -9 is only
// possible with the binary, see cmd/sluice's tests.)
func (c *Cluster) Kill(id int) {
	c.t.Helper()
	c.Node(id).Broker.Crash()
}

// Stop stops node id cleanly (controlled shutdown first).
func (c *Cluster) Stop(id int) {
	c.t.Helper()
	c.Node(id).Stop()
}

// Restart starts node id again on the same ports and data directory; a
// running node is stopped cleanly first.
func (c *Cluster) Restart(id int) {
	c.t.Helper()
	n := c.Node(id)
	n.Broker.Close() // a no-op when it was already stopped or killed
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := n.open(n.addr, clusterStartTimeout)
		if err == nil {
			return
		}
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "address already in use") {
			c.t.Fatalf("sluicetest: restart node %d: %v", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Addrs are the Kafka listener addresses of every node, running or not.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.addr
	}
	return addrs
}

// Client returns a franz-go client seeded with every node, closed at the
// end of the test.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, opts...)...)
	if err != nil {
		c.t.Fatalf("sluicetest: client: %v", err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client seeded with every node.
func (c *Cluster) Admin(opts ...kgo.Opt) *kadm.Client {
	return kadm.NewClient(c.Client(opts...))
}

// metadata asks a running node for the cluster's metadata (all topics).
func (c *Cluster) metadata(ctx context.Context) (*kmsg.MetadataResponse, error) {
	var lastErr error = errors.New("no node is running")
	for _, n := range c.nodes {
		if n.Broker == nil {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RequestRetries(0))
		if err != nil {
			return nil, err
		}
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl)
		cl.Close()
		if err == nil {
			return resp, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// WaitForBrokers waits until Metadata lists exactly n brokers and a
// controller.
func (c *Cluster) WaitForBrokers(n int) {
	c.t.Helper()
	WaitFor(c.t, 15*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := c.metadata(ctx)
		if err != nil {
			return err
		}
		if len(resp.Brokers) != n || resp.ControllerID < 0 {
			return fmt.Errorf("metadata lists %d brokers (want %d), controller %d", len(resp.Brokers), n, resp.ControllerID)
		}
		return nil
	})
}

// WaitForISR waits until partition of topic has a leader and an ISR of
// size replicas.
func (c *Cluster) WaitForISR(topic string, partition int32, size int) {
	c.t.Helper()
	WaitFor(c.t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := c.metadata(ctx)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			if t.Topic == nil || *t.Topic != topic {
				continue
			}
			for _, p := range t.Partitions {
				if p.Partition != partition {
					continue
				}
				if p.Leader < 0 || len(p.ISR) != size {
					return fmt.Errorf("%s-%d: leader %d, ISR %v (want %d)", topic, partition, p.Leader, p.ISR, size)
				}
				return nil
			}
		}
		return fmt.Errorf("%s-%d not in metadata", topic, partition)
	})
}

// WaitForTopic waits until every running node's own Metadata lists topic
// with each of its partitions led. CreateTopics answers once the controller
// committed the topic, as Kafka's does; a node applies it a moment later,
// and a request it serves before then (an OffsetCommit to the group
// coordinator, say) gets UNKNOWN_TOPIC_OR_PARTITION, as it would from Kafka.
func (c *Cluster) WaitForTopic(topic string) {
	c.t.Helper()
	WaitFor(c.t, 20*time.Second, func() error {
		for _, n := range c.nodes {
			if n.Broker == nil {
				continue
			}
			if err := topicLedAt(n.addr, topic); err != nil {
				return fmt.Errorf("node %s: %w", n.addr, err)
			}
		}
		return nil
	})
}

// topicLedAt asks the node at addr alone whether its metadata lists topic
// with a leader for every partition.
func topicLedAt(addr, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			return fmt.Errorf("%s: error code %d", topic, t.ErrorCode)
		}
		if len(t.Partitions) == 0 {
			return fmt.Errorf("%s has no partitions yet", topic)
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				return fmt.Errorf("%s-%d has no leader", topic, p.Partition)
			}
		}
		return nil
	}
	return fmt.Errorf("%s not in metadata", topic)
}

// Controller returns the node id of the active controller as Metadata
// reports it, waiting for there to be one.
func (c *Cluster) Controller() int {
	c.t.Helper()
	var id int32 = -1
	WaitFor(c.t, 15*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := c.metadata(ctx)
		if err != nil {
			return err
		}
		if resp.ControllerID < 0 || !slices.ContainsFunc(resp.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == resp.ControllerID }) {
			return fmt.Errorf("no live controller (metadata says %d)", resp.ControllerID)
		}
		id = resp.ControllerID
		return nil
	})
	return int(id)
}
