package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterProcs is a cluster of sluice processes formed as the README's
// three-node recipe does it, on free loopback ports.
type clusterProcs struct {
	t     *testing.T
	procs []*sluiceProc // procs[i] is node id i+1
	args  [][]string    // args[i] started procs[i]; restart reuses them
}

// freeGossipPort returns a loopback port free for both TCP and UDP, as
// serf needs both.
func freeGossipPort(t *testing.T) int {
	t.Helper()
	for {
		port := freePort(t)
		pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			pc.Close()
			return port
		}
	}
}

// startClusterProcs starts n processes, all voters, concurrently and waits
// until each is ready (registered and unfenced in a formed cluster). Free
// ports are found before the processes bind them, so another process may
// take one in between: the whole cluster is then started again on fresh
// ports and directories. extra arguments (--override key=value) go to
// every node.
func startClusterProcs(t *testing.T, n int, extra ...string) *clusterProcs {
	t.Helper()
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		c := &clusterProcs{t: t}
		if err = c.start(n, extra); err == nil {
			return c
		}
		for _, p := range c.procs {
			p.kill()
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
		t.Logf("cluster start attempt %d: a port was taken; starting again", attempt)
	}
	t.Fatalf("start a cluster of %d processes: %v", n, err)
	return nil
}

func (c *clusterProcs) start(n int, extra []string) error {
	t := c.t
	kafka, raft, gossip := make([]string, n), make([]string, n), make([]string, n)
	var voters []string
	for i := range n {
		kafka[i] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		raft[i] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		gossip[i] = "127.0.0.1:" + strconv.Itoa(freeGossipPort(t))
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, raft[i]))
	}
	for i := range n {
		args := []string{
			"--override", "node.id=" + strconv.Itoa(i+1),
			"--override", "listeners=PLAINTEXT://" + kafka[i] + ",CONTROLLER://" + raft[i],
			"--override", "controller.quorum.voters=" + strings.Join(voters, ","),
			"--override", "gossip.listener=" + gossip[i],
			"--override", "gossip.join=" + strings.Join(gossip, ","),
			"--override", "log.dirs=" + t.TempDir(),
		}
		args = append(args, extra...)
		c.args = append(c.args, args)
		c.procs = append(c.procs, spawnProc(t, kafka[i], t.TempDir(), args...))
	}
	for _, p := range c.procs {
		if err := p.tryReady(); err != nil {
			return err
		}
	}
	return nil
}

// restart starts node id again with its data directory and ports, after
// it was killed or stopped, and waits until it is ready.
func (c *clusterProcs) restart(id int32) {
	c.t.Helper()
	old := c.procs[id-1]
	old.kill()
	c.procs[id-1] = startProc(c.t, old.addr, c.t.TempDir(), c.args[id-1]...)
}

func (c *clusterProcs) addrs() []string {
	var addrs []string
	for _, p := range c.procs {
		addrs = append(addrs, p.addr)
	}
	return addrs
}

func (c *clusterProcs) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs()...)}, opts...)...)
	if err != nil {
		c.t.Fatalf("kgo.NewClient: %v", err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// describeCluster asks the process p.
func describeCluster(ctx context.Context, p *sluiceProc) (*kmsg.DescribeClusterResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl.SeedBrokers()[0])
}

// Issue 4, acceptance 1 (placement part) and 6: three processes form a
// cluster with one controller; a kill -9 of the controller's process
// leaves the other two with a new controller, and a topic created right
// after succeeds.
func TestThreeProcessClusterControllerFailover(t *testing.T) {
	start := time.Now()
	c := startClusterProcs(t, 3)
	t.Logf("cluster formed in %s", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	var controller int32
	for _, p := range c.procs {
		waitFor(t, "three brokers and a controller from "+p.addr, func() error {
			resp, err := describeCluster(ctx, p)
			if err != nil {
				return err
			}
			var ids []int32
			for _, b := range resp.Brokers {
				ids = append(ids, b.NodeID)
			}
			if !slices.Equal(ids, []int32{1, 2, 3}) || resp.ControllerID < 1 || resp.ControllerID > 3 {
				return fmt.Errorf("brokers %v, controller %d", ids, resp.ControllerID)
			}
			if controller != 0 && resp.ControllerID != controller {
				return fmt.Errorf("controller %d, another node said %d", resp.ControllerID, controller)
			}
			controller = resp.ControllerID
			return nil
		})
	}

	// Brokers other than the controller apply a new topic a moment after
	// it is created, as in Kafka; franz-go's metadata cache must not hide
	// that moment for seconds.
	adm := kadm.NewClient(c.client(kgo.MetadataMinAge(10 * time.Millisecond)))
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "spread"); err != nil {
		t.Fatalf("create spread: %v", err)
	}
	var leaders []int32
	waitFor(t, "three different leaders with full ISRs", func() error {
		md, err := adm.Metadata(ctx, "spread")
		if err != nil {
			return err
		}
		leaders = leaders[:0]
		for _, p := range md.Topics["spread"].Partitions {
			if len(p.Replicas) != 3 || len(p.ISR) != 3 {
				return fmt.Errorf("partition %d: replicas %v ISR %v", p.Partition, p.Replicas, p.ISR)
			}
			leaders = append(leaders, p.Leader)
		}
		slices.Sort(leaders)
		if !slices.Equal(slices.Compact(leaders), []int32{1, 2, 3}) {
			return fmt.Errorf("leaders %v", leaders)
		}
		return nil
	})

	// kill -9 the controller.
	victim := c.procs[controller-1]
	victim.kill()
	killed := time.Now()
	var survivors []*sluiceProc
	for i, p := range c.procs {
		if int32(i+1) != controller {
			survivors = append(survivors, p)
		}
	}
	var next int32
	waitFor(t, "a new controller", func() error {
		resp, err := describeCluster(ctx, survivors[0])
		if err != nil {
			return err
		}
		if resp.ControllerID < 0 || resp.ControllerID == controller {
			return fmt.Errorf("controller %d", resp.ControllerID)
		}
		next = resp.ControllerID
		return nil
	})
	t.Logf("controller %d killed; node %d is controller after %s", controller, next, time.Since(killed).Round(time.Millisecond))

	// A topic created right away, through a survivor, succeeds.
	survivorCl, err := kgo.NewClient(kgo.SeedBrokers(survivors[0].addr, survivors[1].addr), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer survivorCl.Close()
	if _, err := kadm.NewClient(survivorCl).CreateTopic(ctx, 3, 2, nil, "after-failover"); err != nil {
		t.Fatalf("create after failover: %v", err)
	}
	waitFor(t, "the new topic in Metadata", func() error {
		md, err := kadm.NewClient(survivorCl).Metadata(ctx, "after-failover")
		if err != nil {
			return err
		}
		if tp := md.Topics["after-failover"]; tp.Err != nil || len(tp.Partitions) != 3 {
			return fmt.Errorf("%v, %d partitions", tp.Err, len(tp.Partitions))
		}
		return nil
	})
}
