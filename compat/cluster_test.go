package compat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A row with nodes: 3 runs against a cluster of three sluice processes on
// loopback, started as the README's three-node recipe starts them: node ids
// 1..n, each with a PLAINTEXT and a CONTROLLER listener, every node a raft
// voter (controller.quorum.voters lists all of them), serf gossip on its own
// port with every node's gossip address as seeds, and its own data dir and
// log file in <row dir>/node-<id>/. The row starts once every node has
// printed its ready line and Metadata from every node lists all n brokers,
// each at its address, and a controller.

// clusterFormTimeout bounds how long the nodes' Metadata may take to agree
// on the cluster after every node printed its ready line.
const clusterFormTimeout = 60 * time.Second

// clusterStartAttempts is how often startCluster tries when a node cannot
// bind a port it was given: a port found free may be taken by another
// process on the machine before the node binds it.
const clusterStartAttempts = 3

// startCluster starts n sluice processes forming one cluster, as described
// above, and waits until it has formed. On failure no process is left
// running. logf reports a retry.
func startCluster(ctx context.Context, bin, dir string, n int, overrides []string, logf func(string, ...any)) ([]*broker, error) {
	for attempt := 1; ; attempt++ {
		nodes, err := startClusterOnce(ctx, bin, dir, n, overrides)
		if err == nil {
			return nodes, nil
		}
		if attempt == clusterStartAttempts || ctx.Err() != nil || !errors.Is(err, errPortTaken) {
			return nil, err
		}
		logf("cluster start attempt %d: %v; retrying on other ports", attempt, firstLine(err.Error()))
	}
}

// errPortTaken marks a start that failed because a node could not bind one
// of its ports.
var errPortTaken = errors.New("a node's port was taken")

func startClusterOnce(ctx context.Context, bin, dir string, n int, overrides []string) ([]*broker, error) {
	ports, err := freeClusterPorts(n)
	if err != nil {
		return nil, err
	}
	var voters, gossip []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, p.controller))
		gossip = append(gossip, p.gossip)
	}
	var nodes []*broker
	for i, p := range ports {
		nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", i+1))
		// A retry starts from empty data directories.
		if err := os.RemoveAll(nodeDir); err != nil {
			stopAll(nodes)
			return nil, err
		}
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			stopAll(nodes)
			return nil, err
		}
		props := append([]string{
			"listeners=PLAINTEXT://" + p.kafka + ",CONTROLLER://" + p.controller,
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"gossip.listener=" + p.gossip,
			"gossip.join=" + strings.Join(gossip, ","),
		}, overrides...)
		b, err := spawnBroker(bin, nodeDir, int32(i+1), p.kafka, props)
		if err != nil {
			stopAll(nodes)
			return nil, fmt.Errorf("node %d: %w", i+1, err)
		}
		nodes = append(nodes, b)
	}

	// The nodes become ready together, once they have formed the cluster,
	// so wait for all of them at once; when one fails (say it exited
	// because a port was taken), stop waiting for the others.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range nodes {
		wg.Go(func() {
			if errs[i] = b.waitReady(wctx); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	var first error
	for i, err := range errs {
		if err == nil {
			continue
		}
		err = fmt.Errorf("node %d: %w", i+1, err)
		// Report the cause, not a node whose wait it cut short.
		if first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled) {
			first = err
		}
	}
	if first != nil {
		stopAll(nodes)
		for _, b := range nodes {
			if logHas(b.logPath, "address already in use") {
				return nil, fmt.Errorf("%w: %w", errPortTaken, first)
			}
		}
		return nil, first
	}

	for _, b := range nodes {
		if err := waitClusterMetadata(ctx, b, nodes); err != nil {
			stopAll(nodes)
			return nil, err
		}
	}
	return nodes, nil
}

// clusterPorts are one node's listener addresses.
type clusterPorts struct {
	kafka, controller, gossip string
}

// freeClusterPorts finds 3n distinct free loopback ports, the gossip ones
// free for UDP as well (serf uses both). Every port is held until all are
// found, so that no two are the same.
func freeClusterPorts(n int) ([]clusterPorts, error) {
	var held []func() error
	defer func() {
		for _, release := range held {
			release()
		}
	}()
	take := func(udp bool) (string, error) {
		for range 100 {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return "", err
			}
			addr := ln.Addr().String()
			if !udp {
				held = append(held, ln.Close)
				return addr, nil
			}
			pc, err := net.ListenPacket("udp", addr)
			if err != nil {
				ln.Close()
				continue
			}
			held = append(held, ln.Close, pc.Close)
			return addr, nil
		}
		return "", errors.New("no loopback port free for both TCP and UDP in 100 tries")
	}
	ports := make([]clusterPorts, n)
	for i := range ports {
		var err error
		if ports[i].kafka, err = take(false); err != nil {
			return nil, err
		}
		if ports[i].controller, err = take(false); err != nil {
			return nil, err
		}
		if ports[i].gossip, err = take(true); err != nil {
			return nil, err
		}
	}
	return ports, nil
}

// waitClusterMetadata polls Metadata from b itself until it lists exactly
// the nodes, each at its address, and a controller among them.
func waitClusterMetadata(ctx context.Context, b *broker, nodes []*broker) error {
	want := map[int32]string{}
	for _, n := range nodes {
		want[n.id] = n.addr
	}
	err := pollUntil(ctx, clusterFormTimeout, func() error {
		if crash := b.crashed(); crash != nil {
			return crash
		}
		resp, err := metadataFrom(ctx, b)
		if err != nil {
			return err
		}
		got := map[int32]string{}
		for _, br := range resp.Brokers {
			got[br.NodeID] = net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port)))
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("brokers %v, want %v", got, want)
		}
		if _, ok := want[resp.ControllerID]; !ok {
			return fmt.Errorf("controller %d", resp.ControllerID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("node %d: Metadata from it does not show the formed cluster within %s: %w\n%s",
			b.id, clusterFormTimeout, err, tail(b.logPath, 20))
	}
	return nil
}

// metadataFrom sends one Metadata request for topics (all topics when none
// is named) to b itself and returns b's answer. A franz-go client would
// send it to whichever broker it likes.
func metadataFrom(ctx context.Context, b *broker, topics ...string) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return req.RequestWith(rctx, cl.SeedBrokers()[0])
}

// logHas reports whether the file at path contains s.
func logHas(path, s string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), s)
}

// addrsOf returns the nodes' client addresses, in node order.
func addrsOf(nodes []*broker) []string {
	var addrs []string
	for _, b := range nodes {
		addrs = append(addrs, b.addr)
	}
	return addrs
}

// nodeErr names the node in err when the row has more than one.
func nodeErr(nodes []*broker, b *broker, err error) error {
	if err == nil || len(nodes) == 1 {
		return err
	}
	return fmt.Errorf("node %d: %w", b.id, err)
}

// crashedAny returns the first node's crash, naming the node.
func crashedAny(nodes []*broker) error {
	for _, b := range nodes {
		if err := b.crashed(); err != nil {
			return nodeErr(nodes, b, err)
		}
	}
	return nil
}

// raceAny returns the first node's data race report, naming the node.
func raceAny(nodes []*broker) error {
	for _, b := range nodes {
		if err := b.raceReport(); err != nil {
			return nodeErr(nodes, b, err)
		}
	}
	return nil
}

// stopAll stops every node at once (each hands its leaderships over within
// its own bounded controlled shutdown) and returns the first error.
func stopAll(nodes []*broker) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, b := range nodes {
		wg.Go(func() { errs[i] = nodeErr(nodes, b, b.stop()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// logTails returns the last n lines of every node's log, each under a
// heading naming the node and the file.
func logTails(nodes []*broker, n int) string {
	var s strings.Builder
	for _, b := range nodes {
		if len(nodes) > 1 {
			fmt.Fprintf(&s, "--- node %d ", b.id)
		}
		fmt.Fprintf(&s, "broker log tail (%s):\n%s\n", b.logPath, tail(b.logPath, n))
	}
	return s.String()
}

// nodeIDs returns the nodes' ids as strings, sorted, for comparing with tool
// output.
func nodeIDs(nodes []*broker) []string {
	var ids []string
	for _, b := range nodes {
		ids = append(ids, strconv.Itoa(int(b.id)))
	}
	slices.Sort(ids)
	return ids
}

// kill stops b as kill -9 does: no controlled shutdown, nothing flushed.
// The exit is expected, so it is not reported as a crash.
func (b *broker) kill() {
	b.mu.Lock()
	b.stopping = true
	b.mu.Unlock()
	_ = b.cmd.Process.Kill()
	<-b.exited
}

// restartNode starts node id of the row's cluster again, after kill or
// stop, with the same command line, data directory and ports, appending
// to its broker.log, and waits for its ready line. The new process
// replaces the old one in env.nodes (and env.broker), so the row's end
// checks (crash, race, stop) cover it.
func (env *rowEnv) restartNode(ctx context.Context, id int32) error {
	i := slices.IndexFunc(env.nodes, func(b *broker) bool { return b.id == id })
	if i < 0 {
		return fmt.Errorf("no node %d in the row's cluster", id)
	}
	old := env.nodes[i]
	if err := old.stop(); err != nil {
		return fmt.Errorf("node %d: %w", id, err)
	}
	var nb *broker
	// The old process's ports may take a moment to be free again.
	err := pollUntil(ctx, 30*time.Second, func() error {
		var err error
		if nb, err = spawnBrokerLog(old.bin, old.dir, old.id, old.addr, old.props, os.O_APPEND); err != nil {
			return err
		}
		if err := nb.waitReady(ctx); err != nil {
			nb.stop()
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("restart node %d: %w", id, err)
	}
	env.nodes[i] = nb
	if env.broker == old {
		env.broker = nb
	}
	return nil
}

// addNode starts one more node in the row's cluster, as an operator adds
// a broker: the next node id, a PLAINTEXT listener only, node 1's
// controller.quorum.voters (so the new node is a raft non-voter), its own
// gossip listener with gossip.join naming node 1's, and extra overrides.
// It is appended to env.nodes, so the row's end checks (crash, race,
// stop) cover it, and addNode returns once it printed its ready line.
func (env *rowEnv) addNode(ctx context.Context, overrides ...string) (*broker, error) {
	first := env.nodes[0]
	var quorum, gossip string
	for _, p := range first.props {
		if v, ok := strings.CutPrefix(p, "controller.quorum.voters="); ok {
			quorum = v
		}
		if v, ok := strings.CutPrefix(p, "gossip.listener="); ok {
			gossip = v
		}
	}
	if quorum == "" || gossip == "" {
		return nil, errors.New("addNode needs a row that runs as a cluster (row.cluster or nodes > 1)")
	}
	id := int32(len(env.nodes) + 1)
	dir := filepath.Join(env.dir, fmt.Sprintf("node-%d", id))
	for attempt := 1; ; attempt++ {
		b, err := env.startAddedNode(ctx, id, dir, quorum, gossip, overrides)
		if err == nil {
			return b, nil
		}
		// A free port found by freeClusterPorts can be taken by another
		// process before the node binds it; start again on other ports,
		// as startCluster does.
		if attempt == clusterStartAttempts || ctx.Err() != nil || !errors.Is(err, errPortTaken) {
			return nil, err
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
}

// startAddedNode is one attempt of addNode. When the node exits because one
// of its ports was taken, it is dropped from env.nodes again and the error
// wraps errPortTaken.
func (env *rowEnv) startAddedNode(ctx context.Context, id int32, dir, quorum, gossip string, overrides []string) (*broker, error) {
	ports, err := freeClusterPorts(1)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	props := append([]string{
		"listeners=PLAINTEXT://" + ports[0].kafka,
		"controller.quorum.voters=" + quorum,
		"gossip.listener=" + ports[0].gossip,
		"gossip.join=" + gossip,
	}, overrides...)
	b, err := spawnBroker(env.nodes[0].bin, dir, id, ports[0].kafka, props)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", id, err)
	}
	env.nodes = append(env.nodes, b)
	env.bootstrap = append(env.bootstrap, b.addr)
	if err := b.waitReady(ctx); err != nil {
		if logHas(b.logPath, "address already in use") {
			stopAll([]*broker{b})
			env.nodes = env.nodes[:len(env.nodes)-1]
			env.bootstrap = env.bootstrap[:len(env.bootstrap)-1]
			return nil, fmt.Errorf("node %d: %w: %w", id, errPortTaken, err)
		}
		return nil, fmt.Errorf("node %d: %w", id, err)
	}
	return b, nil
}
