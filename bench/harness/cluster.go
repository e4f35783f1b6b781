package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// system is one of the two brokers under test. Both start their nodes as
// processes on loopback with fresh data directories; the workloads see a
// cluster only through its Kafka listeners and its processes' /proc
// entries.
type system interface {
	// name is "kafka" or "sluice", as in the table and the -systems flag.
	name() string
	// startCluster starts n nodes forming one cluster (every node a
	// controller-quorum voter) under dir and returns once Metadata from
	// every node lists all n brokers. Its nodes' addresses and the
	// cluster's opts are those of sec's client listener.
	startCluster(ctx context.Context, dir string, n int, sec *security) (*cluster, error)
	// startSingle prepares a one-node cluster with an empty data directory
	// under dir and starts its process; it returns as soon as the process
	// runs, before the broker serves, so the caller can time the start.
	// Preparation that Kafka needs before its process starts (formatting
	// the log dir) is done first and not part of the process's life.
	startSingle(ctx context.Context, dir string) (*node, error)
}

// node is one broker of a cluster: its id, its client address, and how to
// start its process again with the same configuration and data directory.
type node struct {
	id   int32
	addr string
	// metricsAddr is the node's metrics.listener (sluice under
	// -metrics-cost), "" when it has none.
	metricsAddr string
	dataDir     string                // the node's log dir: <topic>-<partition>/ directories of segments
	proc        *proc                 // nil while stopped
	spawn       func() (*proc, error) // starts the node's process, returning at once
}

// cluster is a running set of nodes of one system.
type cluster struct {
	nodes []*node
	// opts are what a client needs besides its seeds to talk to the
	// cluster: TLS and SASL under -security sasl_ssl, nothing otherwise.
	opts []kgo.Opt
	// scraper fetches every node's /metrics while the cluster runs
	// (sluice under -metrics-cost's "on" variant), nil otherwise; stop
	// ends it before the nodes stop.
	scraper *scraper
}

// addrs returns the client addresses of the nodes that run.
func (c *cluster) addrs() []string {
	var addrs []string
	for _, n := range c.nodes {
		if n.proc != nil && n.proc.alive() {
			addrs = append(addrs, n.addr)
		}
	}
	return addrs
}

// node returns the node with id, or nil.
func (c *cluster) node(id int32) *node {
	for _, n := range c.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// crashed returns an error naming the first node whose process exited
// without being stopped by the harness.
func (c *cluster) crashed() error {
	for _, n := range c.nodes {
		if n.proc != nil {
			if err := n.proc.exitErr(); err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
		}
	}
	return nil
}

// stop stops every node at once with SIGTERM (each makes its controlled
// shutdown) and returns the first error.
func (c *cluster) stop(timeout time.Duration) error {
	if c.scraper != nil {
		c.scraper.stop()
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.nodes))
	for i, n := range c.nodes {
		if n.proc == nil {
			continue
		}
		wg.Go(func() { errs[i] = n.proc.stop(timeout) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// restart starts a stopped or killed node's process again.
func (n *node) restart() error {
	if n.proc != nil && n.proc.alive() {
		return fmt.Errorf("node %d still runs", n.id)
	}
	p, err := n.spawn()
	if err != nil {
		return err
	}
	n.proc = p
	return nil
}

// permanent wraps an error after which poll stops trying.
type permanent struct{ error }

// poll calls f every interval until it returns nil or a permanent error,
// ctx ends or timeout passes; the error then carries f's last error.
func poll(ctx context.Context, timeout, interval time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		if p, ok := err.(permanent); ok {
			return p.error
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s: %w", timeout, err)
		case <-time.After(interval):
		}
	}
}

// metadataFrom sends one Metadata request to the broker at addr itself
// (all topics when none is named), with the client options opts (a
// cluster's), and returns its answer.
func metadataFrom(ctx context.Context, opts []kgo.Opt, addr string, topics ...string) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return req.RequestWith(rctx, cl.SeedBrokers()[0])
}

// waitFormed waits until Metadata from every running node lists exactly the
// running nodes, each at its address.
func (c *cluster) waitFormed(ctx context.Context, timeout time.Duration) error {
	want := map[int32]string{}
	for _, n := range c.nodes {
		if n.proc != nil {
			want[n.id] = n.addr
		}
	}
	return poll(ctx, timeout, 200*time.Millisecond, func() error {
		// A node whose process has exited will not form: say so at once
		// rather than after the whole budget (12 minutes of an
		// acceptance run's workload 12 went that way).
		if err := c.crashed(); err != nil {
			return permanent{err}
		}
		for _, n := range c.nodes {
			if n.proc == nil {
				continue
			}
			resp, err := metadataFrom(ctx, c.opts, n.addr)
			if err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
			got := map[int32]string{}
			for _, b := range resp.Brokers {
				got[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
			}
			if len(got) != len(want) {
				return fmt.Errorf("node %d lists brokers %v, want %v", n.id, got, want)
			}
			for id, addr := range want {
				if got[id] != addr {
					return fmt.Errorf("node %d lists brokers %v, want %v", n.id, got, want)
				}
			}
		}
		return nil
	})
}

// isrState counts, from one Metadata answer, the partitions and those
// that have a leader and every assigned replica in the ISR.
func isrState(resp *kmsg.MetadataResponse) (partitions, full int) {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			partitions++
			if p.ErrorCode == 0 && p.Leader >= 0 && len(p.Replicas) > 0 && len(p.ISR) == len(p.Replicas) {
				full++
			}
		}
	}
	return partitions, full
}

// isrStallTimeout is how long waitISRFull waits without one more
// partition reaching a full ISR before it gives up: a broker that has run
// out of file descriptors never gets there, and the run should go on.
// Kafka creating 10,000 partitions on the 2-core machine while other work
// ran on it went 2 minutes without progress in two runs (issue 15's
// re-run), so a stall must be long before the harness gives up on it.
const isrStallTimeout = 5 * time.Minute

// waitISRFull waits until Metadata from the node at addr shows every
// partition of topics (of all topics when none is named) with a leader
// and a full ISR, and, when want >= 0, exactly want partitions. It gives
// up after timeout, or once isrStallTimeout passes without progress;
// partitions of the topics the node already knows count as progress while
// it answers others with an error.
func waitISRFull(ctx context.Context, opts []kgo.Opt, addr string, want int, timeout time.Duration, topics ...string) error {
	best, bestAt := -1, time.Now()
	var last error
	return poll(ctx, timeout, 100*time.Millisecond, func() error {
		if time.Since(bestAt) > isrStallTimeout {
			return permanent{fmt.Errorf("stalled for %s at %d partitions with a full ISR (last: %v)", isrStallTimeout, max(best, 0), last)}
		}
		last = func() error {
			resp, err := metadataFrom(ctx, opts, addr, topics...)
			if err != nil {
				return err
			}
			parts, full := isrState(resp)
			if full > best {
				best, bestAt = full, time.Now()
			}
			for _, t := range resp.Topics {
				if t.ErrorCode != 0 {
					return fmt.Errorf("topic %v: error code %d", deref(t.Topic), t.ErrorCode)
				}
			}
			if full == parts && (want < 0 || parts == want) {
				return nil
			}
			return fmt.Errorf("%d of %d partitions with a full ISR (want %d)", full, parts, want)
		}()
		return last
	})
}

// leaderOf returns the leader of partition 0 of topic as the node at addr
// sees it.
func leaderOf(ctx context.Context, opts []kgo.Opt, addr, topic string) (int32, error) {
	resp, err := metadataFrom(ctx, opts, addr, topic)
	if err != nil {
		return -1, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Partition == 0 && p.ErrorCode == 0 && p.Leader >= 0 {
				return p.Leader, nil
			}
		}
	}
	return -1, fmt.Errorf("topic %s partition 0 has no leader", topic)
}

// createTopic creates topic with partitions at replication factor rf and
// min.insync.replicas 2 (1 for a single node), and waits until the first
// running node shows every partition with its full ISR.
func createTopic(ctx context.Context, c *cluster, topic string, partitions int32, rf int16, timeout time.Duration) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs()...)}, c.opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	minISR := "2"
	if rf < 2 {
		minISR = "1"
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(cctx, partitions, rf, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return waitISRFull(ctx, c.opts, c.addrs()[0], int(partitions), timeout, topic)
}

// others returns the running nodes other than skip.
func (c *cluster) others(skip int32) []*node {
	return slices.DeleteFunc(slices.Clone(c.nodes), func(n *node) bool {
		return n.id == skip || n.proc == nil || !n.proc.alive()
	})
}

// deref returns *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
