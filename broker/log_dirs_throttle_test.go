package broker_test

// Tests of num.replica.alter.log.dirs.threads and the move throttle
// (replica.alter.log.dirs.io.max.bytes.per.second and its windows), as
// DescribeLogDirs shows the future replicas to a client.

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// fillTopic produces n records of 1 KiB (random, uncompressed) to
// topic's partition 0.
func fillTopic(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for range n {
		v := make([]byte, 1024)
		rand.Read(v)
		recs = append(recs, &kgo.Record{Topic: topic, Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// futureSizes is the size DescribeLogDirs gives each future replica of
// node 1, by topic.
func futureSizes(t *testing.T, adm *kadm.Client) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, d := range describeDirs(t, adm) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.IsFuture {
				out[p.Topic] = p.Size
			}
		})
	}
	return out
}

// setMoveThrottle sets (value non-nil) or deletes node 1's
// replica.alter.log.dirs.io.max.bytes.per.second.
func setMoveThrottle(t *testing.T, adm *kadm.Client, value *string) {
	t.Helper()
	op := kadm.SetConfig
	if value == nil {
		op = kadm.DeleteConfig
	}
	rs, err := adm.AlterBrokerConfigs(context.Background(), []kadm.AlterConfig{{Op: op, Name: "replica.alter.log.dirs.io.max.bytes.per.second", Value: value}}, 1)
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatalf("replica.alter.log.dirs.io.max.bytes.per.second: %v", err)
	}
}

// startMoves puts two topics of about 400 KiB each (64 KiB segments) in
// node 1's two log dirs, throttles moves to 20 KiB/s, and moves each topic
// to the other dir. It returns the topics and their destinations.
func startMoves(t *testing.T, n *sluicetest.Node) (adm *kadm.Client, dest map[string]string) {
	t.Helper()
	adm = n.Admin()
	d1, d2 := jbodDirsOf(n)
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	dest = map[string]string{}
	for _, topic := range []string{"move-a", "move-b"} {
		createTopic(t, n, topic, 1, map[string]*string{"segment.bytes": kadm.StringPtr("65536")})
		fillTopic(t, cl, topic, 400)
		_, to := replicaDirs(t, adm, 1, topic, d1, d2)
		dest[topic] = to
	}
	if dest["move-a"] == dest["move-b"] {
		t.Fatalf("both topics placed in the same dir: %v", dest)
	}
	setMoveThrottle(t, adm, kmsg.StringPtr("20480"))
	for topic, to := range dest {
		var move kadm.AlterReplicaLogDirsReq
		move.Add(to, kadm.TopicsSet{topic: {0: {}}})
		resps, err := adm.AlterBrokerReplicaLogDirs(context.Background(), 1, move)
		if err != nil {
			t.Fatalf("alter replica log dirs: %v", err)
		}
		resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			if r.Err != nil {
				t.Fatalf("moving %s-%d to %s: %v", r.Topic, r.Partition, r.Dir, r.Err)
			}
		})
	}
	return adm, dest
}

// finishMoves lifts the throttle and waits for both moves to end.
func finishMoves(t *testing.T, adm *kadm.Client, dest map[string]string) {
	t.Helper()
	setMoveThrottle(t, adm, nil)
	sluicetest.WaitFor(t, 60*time.Second, func() error {
		for topic, to := range dest {
			if got := partitionsIn(describeDirs(t, adm), topic); len(got[to]) != 1 {
				return fmt.Errorf("%s in %v, want %s", topic, got, to)
			}
		}
		return nil
	})
}

// TestMoveThrottleOneThread: with num.replica.alter.log.dirs.threads=1
// two moves copy one after the other (DescribeLogDirs never shows both
// future replicas with bytes copied), and
// replica.alter.log.dirs.io.max.bytes.per.second, measured over the
// alter.log.dirs.replication.quota.window.* windows, holds a move part
// way (its future replica shows some bytes copied, not all) until the
// throttle is deleted.
func TestMoveThrottleOneThread(t *testing.T) {
	n := sluicetest.Start(t, jbodDirs, "num.replica.alter.log.dirs.threads=1",
		"alter.log.dirs.replication.quota.window.num=2", "alter.log.dirs.replication.quota.window.size.seconds=1")
	adm, dest := startMoves(t, n)
	partial := false
	sluicetest.WaitFor(t, 60*time.Second, func() error {
		sizes := futureSizes(t, adm)
		copying := 0
		for _, size := range sizes {
			if size > 0 {
				copying++
			}
			if size > 0 && size < 200<<10 {
				partial = true
			}
		}
		if copying > 1 {
			t.Fatalf("two moves copying at once with one thread: %v", sizes)
		}
		if !partial {
			return fmt.Errorf("no future replica part way copied yet: %v", sizes)
		}
		return nil
	})
	// Held by the throttle (at 20 KiB/s the moves take some 20 s; without
	// it, milliseconds): a second later neither replica has moved yet.
	time.Sleep(time.Second)
	for topic, to := range dest {
		if got := partitionsIn(describeDirs(t, adm), topic); len(got[to]) != 0 {
			t.Fatalf("%s moved to %s while the throttle holds it: %v", topic, to, got)
		}
	}
	finishMoves(t, adm, dest)
}

// TestMoveThreadsDefault: with num.replica.alter.log.dirs.threads unset a
// node with two log dirs copies two moves at once (both future replicas
// show bytes copied while the throttle holds them).
func TestMoveThreadsDefault(t *testing.T) {
	n := sluicetest.Start(t, jbodDirs, "alter.log.dirs.replication.quota.window.num=2")
	adm, dest := startMoves(t, n)
	sluicetest.WaitFor(t, 60*time.Second, func() error {
		sizes := futureSizes(t, adm)
		if len(sizes) != 2 || sizes["move-a"] == 0 || sizes["move-b"] == 0 {
			return fmt.Errorf("future replicas %v, want both copying", sizes)
		}
		return nil
	})
	finishMoves(t, adm, dest)
}
