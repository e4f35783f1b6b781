package broker_test

// AlterReplicaLogDirs (34): moving a replica between the log dirs of a
// node while it serves produce traffic (issue 20).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// ackedProducer produces to topic's partition 0 until stopped, keeping
// every acknowledged record's offset and value.
type ackedProducer struct {
	mu    sync.Mutex
	acked map[int64]string
	errs  int
	stop  chan struct{}
	done  chan struct{}
}

func startAckedProducer(t *testing.T, cl *kgo.Client, topic string) *ackedProducer {
	p := &ackedProducer{acked: map[int64]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		var wg sync.WaitGroup
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				wg.Wait()
				return
			default:
			}
			v := fmt.Sprintf("v-%d-%0100d", i, i)
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					p.errs++
					return
				}
				p.acked[r.Offset] = string(r.Value)
			})
			if i%200 == 199 {
				cl.Flush(context.Background())
			}
		}
	}()
	return p
}

func (p *ackedProducer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// waitAcked waits until at least n records are acknowledged.
func (p *ackedProducer) waitAcked(t *testing.T, n int) {
	t.Helper()
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		if c := p.count(); c < n {
			return fmt.Errorf("%d records acknowledged, want %d", c, n)
		}
		return nil
	})
}

func (p *ackedProducer) finish() map[int64]string {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked
}

// readBack consumes partition 0 of topic up to its end through n and checks
// every acknowledged record is there, at its offset, with its value.
func readBack(t *testing.T, n *sluicetest.Node, topic string, acked map[int64]string) {
	t.Helper()
	last := maxKey(acked)
	cl := n.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[int64]string{}
	for len(got) == 0 || maxKey(got) < last {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: read up to offset %d of %d: %v", topic, maxKey(got), last, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Offset] = string(r.Value) })
	}
	for off, v := range acked {
		if got[off] != v {
			t.Fatalf("%s: acknowledged offset %d read back as %q, want %q", topic, off, got[off], v)
		}
	}
}

// moveReplica moves node's replica of topic's partition 0 from its log dir
// from to its log dir to with AlterReplicaLogDirs, and waits until
// DescribeLogDirs shows it in to only.
func moveReplica(t *testing.T, adm *kadm.Client, node int32, topic, from, to string) {
	t.Helper()
	var move kadm.AlterReplicaLogDirsReq
	move.Add(to, kadm.TopicsSet{topic: {0: {}}})
	resps, err := adm.AlterBrokerReplicaLogDirs(context.Background(), node, move)
	if err != nil {
		t.Fatalf("alter replica log dirs: %v", err)
	}
	resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Fatalf("moving %s-%d to %s: %v", r.Topic, r.Partition, r.Dir, r.Err)
		}
	})
	sluicetest.WaitFor(t, 60*time.Second, func() error {
		if got := partitionsIn(describeBrokerDirs(t, adm, node), topic); len(got[to]) != 1 || len(got[from]) != 0 {
			return fmt.Errorf("node %d's replica in %v", node, got)
		}
		return nil
	})
}

// moveUnderLoad moves node's replica of topic's partition 0 from its log
// dir from to to (moveReplica) while prod writes to the partition: once
// 3000 records are acknowledged, and until 1000 more are after the move.
// It stops prod and returns the records acknowledged, and how many were
// when the move had completed.
func moveUnderLoad(t *testing.T, adm *kadm.Client, node int32, topic, from, to string, prod *ackedProducer) (acked map[int64]string, before int) {
	t.Helper()
	prod.waitAcked(t, 3000)
	moveReplica(t, adm, node, topic, from, to)
	before = prod.count()
	prod.waitAcked(t, before+1000)
	return prod.finish(), before
}

// replicaDirs returns the one of the log dirs d1 and d2 of node that holds
// topic's partition 0, and the other one.
func replicaDirs(t *testing.T, adm *kadm.Client, node int32, topic, d1, d2 string) (from, to string) {
	t.Helper()
	if len(partitionsIn(describeBrokerDirs(t, adm, node), topic)[d2]) == 1 {
		return d2, d1
	}
	return d1, d2
}

func maxKey(m map[int64]string) int64 {
	var out int64 = -1
	for k := range m {
		out = max(out, k)
	}
	return out
}

// TestAlterReplicaLogDirsUnderLoad moves a partition's only replica from
// one log dir to the other while a producer writes to it with acks=all:
// the move completes, DescribeLogDirs shows the replica in its new
// directory, and every acknowledged record reads back, before and after a
// restart.
func TestAlterReplicaLogDirsUnderLoad(t *testing.T) {
	n := sluicetest.Start(t, jbodDirs)
	d1, d2 := jbodDirsOf(n)
	adm := n.Admin()
	ctx := context.Background()
	const topic = "moving"
	createTopic(t, n, topic, 1, map[string]*string{"segment.bytes": kadm.StringPtr("65536")})
	from, to := replicaDirs(t, adm, 1, topic, d1, d2)

	// Errors first: a path that is not a log dir, a partition not here.
	var bad kadm.AlterReplicaLogDirsReq
	bad.Add(filepath.Join(n.Dir, "nowhere"), kadm.TopicsSet{topic: {0: {}}})
	bad.Add(to, kadm.TopicsSet{"no-such-topic": {0: {}}})
	resps, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, bad)
	if err != nil {
		t.Fatalf("alter replica log dirs: %v", err)
	}
	resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		want := kerr.LogDirNotFound
		if r.Topic == "no-such-topic" {
			want = kerr.ReplicaNotAvailable
		}
		if !errors.Is(r.Err, want) {
			t.Fatalf("%s-%d to %s: %v, want %v", r.Topic, r.Partition, r.Dir, r.Err, want)
		}
	})

	prod := startAckedProducer(t, n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond)), topic)
	acked, before := moveUnderLoad(t, adm, 1, topic, from, to, prod)
	t.Logf("moved %s-0 from %s to %s; %d records acknowledged (%d before the move completed), %d produce errors",
		topic, filepath.Base(from), filepath.Base(to), len(acked), before, prod.errs)
	readBack(t, n, topic, acked)

	n.Restart()
	adm = n.Admin()
	if got := partitionsIn(describeDirs(t, adm), topic); len(got[to]) != 1 {
		t.Fatalf("after restart the replica is in %v, want %s", got, to)
	}
	readBack(t, n, topic, acked)
}

// TestReassignToNamedLogDir: the order kafka-reassign-partitions.sh uses
// for "log_dirs" naming a directory on a node that does not hold the
// replica yet: AlterReplicaLogDirs first answers REPLICA_NOT_AVAILABLE and
// remembers the directory, the reassignment then creates the replica there
// (not in the first directory, where placement alone would put it on an
// empty node), and the same request now answers NONE.
func TestReassignToNamedLogDir(t *testing.T) {
	c := sluicetest.StartCluster(t, 2, jbodDirs)
	c.WaitForBrokers(2)
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	const topic = "to-named-dir"
	createAssigned(t, cl, topic, []int32{1}, nil)
	produceTo(t, cl, topic, 1, 30)

	want := filepath.Join(c.Node(2).Dir, "d2")
	var req kadm.AlterReplicaLogDirsReq
	req.Add(want, kadm.TopicsSet{topic: {0: {}}})
	alter := func() error {
		resps, err := adm.AlterBrokerReplicaLogDirs(ctx, 2, req)
		if err != nil {
			t.Fatalf("alter replica log dirs: %v", err)
		}
		var first error
		resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			if first == nil {
				first = r.Err
			}
		})
		return first
	}
	if err := alter(); !errors.Is(err, kerr.ReplicaNotAvailable) {
		t.Fatalf("before the reassignment: %v, want REPLICA_NOT_AVAILABLE", err)
	}
	var move kadm.AlterPartitionAssignmentsReq
	move.Assign(topic, 0, []int32{2})
	if _, err := adm.AlterPartitionAssignments(ctx, move); err != nil {
		t.Fatalf("reassign: %v", err)
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		if got := partitionsIn(describeBrokerDirs(t, adm, 2), topic); len(got[want]) != 1 {
			return fmt.Errorf("node 2 holds %s in %v, want %s", topic, got, want)
		}
		return nil
	})
	if err := alter(); err != nil {
		t.Fatalf("after the reassignment: %v, want no error", err)
	}
	checkPartition(t, c.Node(2), topic, 0, 30)
}

// TestAlterReplicaLogDirsResumesAfterRestart: a node stopped in the middle
// of a move (a partial -future copy in the destination) starts it again
// at its next start, as Kafka resumes it: the replica ends up in the
// destination with every record.
func TestAlterReplicaLogDirsResumesAfterRestart(t *testing.T) {
	n := sluicetest.Start(t, jbodDirs)
	d1, d2 := jbodDirsOf(n)
	adm := n.Admin()
	const topic = "resumed"
	createTopic(t, n, topic, 1, nil)
	produceTo(t, n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, 1, 100)
	from, to := replicaDirs(t, adm, 1, topic, d1, d2)
	n.Stop()
	partial := filepath.Join(to, topic+"-0.0123456789abcdef0123456789abcdef-future")
	if err := os.MkdirAll(partial, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(partial, "00000000000000000000.log"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.Restart()
	adm = n.Admin()
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		if got := partitionsIn(describeDirs(t, adm), topic); len(got[to]) != 1 || len(got[from]) != 0 {
			return fmt.Errorf("replica in %v, want %s", got, to)
		}
		return nil
	})
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Fatalf("the partial copy is still there: %v", err)
	}
	checkPartition(t, n, topic, 0, 100)
}

// TestAlterReplicaLogDirsFollowerUnderLoad: on three nodes, the follower
// replica of node 2 moves between its log dirs while a producer writes
// with acks=all: the move completes, node 2 is back in the ISR, and once
// node 1 stops node 2 leads and serves every acknowledged record from its
// new directory.
func TestAlterReplicaLogDirsFollowerUnderLoad(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, jbodDirs)
	c.WaitForBrokers(3)
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond))
	adm := kadm.NewClient(cl)
	const topic = "moving-follower"
	createAssigned(t, cl, topic, []int32{1, 2, 3}, map[string]string{"segment.bytes": "65536", "min.insync.replicas": "2"})
	c.WaitForISR(topic, 0, 3)
	n2 := c.Node(2)
	d1, d2 := jbodDirsOf(n2)
	from, to := replicaDirs(t, adm, 2, topic, d1, d2)

	prod := startAckedProducer(t, cl, topic)
	acked, _ := moveUnderLoad(t, adm, 2, topic, from, to, prod)
	t.Logf("moved node 2's follower of %s-0 from %s to %s; %d records acknowledged, %d produce errors",
		topic, filepath.Base(from), filepath.Base(to), len(acked), prod.errs)
	c.WaitForISR(topic, 0, 3)

	// Node 1 stops: node 2, first in the assignment after it, leads from
	// its new directory and serves every acknowledged record.
	c.Stop(1)
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		md, err := topicMetadata(n2.Client(), topic)
		if err != nil {
			return err
		}
		if l := md.Partitions[0].Leader; l != 2 {
			return fmt.Errorf("leader %d, want 2", l)
		}
		return nil
	})
	readBack(t, n2, topic, acked)
}
