package broker_test

// Retention and cleanup.policy: time and size retention trim a log only
// when its cleanup.policy includes delete (issue 13, problem 5). Each test
// runs a real node with log.retention.check.interval.ms lowered, so its
// own retention passes run while the test polls.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// eightDaysAgo is a CreateTime older than the default retention.ms (seven
// days) and far older than the retention.ms the tests set.
var eightDaysAgo = time.Now().Add(-8 * 24 * time.Hour)

// produceOld produces n records to partition 0 of topic one at a time, so
// each is its own batch (and, with a tiny segment.bytes, its own segment),
// stamped with CreateTime eightDaysAgo.
func produceOld(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		// Keyed: a compacted topic refuses a record without a key.
		r := &kgo.Record{Topic: topic, Partition: 0, Key: fmt.Appendf(nil, "k%03d", i), Value: fmt.Appendf(nil, "%s-%03d", topic, i), Timestamp: eightDaysAgo}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
}

// startOffset is ListOffsets earliest of partition 0 of topic.
func startOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list start offsets of %s: %v", topic, err)
	}
	o, ok := starts.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("list start offset of %s-0: %v", topic, o.Err)
	}
	return o.Offset
}

// waitTrimmed waits until retention has moved topic's log start offset.
func waitTrimmed(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		if o := startOffset(t, adm, topic); o == 0 {
			return fmt.Errorf("%s: log start offset still 0", topic)
		}
		return nil
	})
}

// checkAllThere asserts that topic still starts at offset 0 and that a
// consumer from the start reads all n records at offsets 0..n-1.
func checkAllThere(t *testing.T, n *sluicetest.Node, topic string, want int) {
	t.Helper()
	if o := startOffset(t, n.Admin(), topic); o != 0 {
		t.Fatalf("%s: log start offset %d, want 0 (trimmed by retention)", topic, o)
	}
	got := consumeAll(t, n.Addr(), topic, want)
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("%s-%03d", topic, i) {
			t.Fatalf("%s: record %d is offset %d value %q", topic, i, r.Offset, r.Value)
		}
	}
}

// TestCompactTopicNotTrimmedByRetention: a cleanup.policy=compact topic
// with retention.ms=1000 and a segment per record keeps records stamped
// eight days ago through many retention passes, while a delete topic
// beside it is trimmed by the same passes; altering the compact topic to
// compact,delete trims it at the next pass.
func TestCompactTopicNotTrimmedByRetention(t *testing.T) {
	n := sluicetest.Start(t, "log.retention.check.interval.ms=100")
	small := map[string]*string{"retention.ms": ptr("1000"), "segment.bytes": ptr("150"), "segment.ms": ptr("100")}
	with := func(policy string) map[string]*string {
		m := map[string]*string{"cleanup.policy": ptr(policy)}
		for k, v := range small {
			m[k] = v
		}
		return m
	}
	createTopic(t, n, "changelog", 1, with("compact"))
	createTopic(t, n, "events", 1, with("delete"))
	cl := n.Client()
	produceOld(t, cl, "changelog", 20)
	produceOld(t, cl, "events", 20)
	adm := n.Admin()
	// The pass that trims events has looked at changelog too; wait for a
	// few more before looking.
	waitTrimmed(t, adm, "events")
	time.Sleep(500 * time.Millisecond) // five more passes at 100 ms
	checkAllThere(t, n, "changelog", 20)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: ptr("compact,delete")}}, "changelog")
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("alter cleanup.policy: %v", err)
	}
	waitTrimmed(t, adm, "changelog")
}

// TestBrokerDefaultCleanupPolicyCompact: with log.cleanup.policy=compact a
// topic that sets no policy inherits compact and is never trimmed by time;
// one that sets delete is.
func TestBrokerDefaultCleanupPolicyCompact(t *testing.T) {
	n := sluicetest.Start(t, "log.retention.check.interval.ms=100", "log.cleanup.policy=compact")
	small := func() map[string]*string {
		return map[string]*string{"retention.ms": ptr("1000"), "segment.bytes": ptr("150")}
	}
	createTopic(t, n, "inherits", 1, small())
	explicit := small()
	explicit["cleanup.policy"] = ptr("delete")
	createTopic(t, n, "deletes", 1, explicit)
	cl := n.Client()
	produceOld(t, cl, "inherits", 10)
	produceOld(t, cl, "deletes", 10)
	waitTrimmed(t, n.Admin(), "deletes")
	time.Sleep(500 * time.Millisecond)
	checkAllThere(t, n, "inherits", 10)
}

// TestInternalTopicsNotTrimmedByRetention: __consumer_offsets and
// __transaction_state are compact topics (DescribeConfigs says so) and
// keep their records under a broker-wide log.retention.ms of one second:
// a committed offset survives many retention passes and a restart, which
// reloads the group from the log.
func TestInternalTopicsNotTrimmedByRetention(t *testing.T) {
	n := sluicetest.Start(t, "log.retention.check.interval.ms=100", "log.retention.ms=1000",
		"offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1")
	createTopic(t, n, "in", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A transaction writes __transaction_state; a commit writes
	// __consumer_offsets.
	txc := n.Client(kgo.TransactionalID("tx-1"))
	if err := txc.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txc.ProduceSync(ctx, &kgo.Record{Topic: "in", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txc.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	adm := n.Admin()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "in", Partition: 0, At: 1})
	if err := adm.CommitAllOffsets(ctx, "g1", offsets); err != nil {
		t.Fatal(err)
	}

	rc, err := adm.DescribeTopicConfigs(ctx, "__consumer_offsets", "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		r, err := rc.On(topic, nil)
		if err != nil {
			t.Fatal(err)
		}
		policy := ""
		for _, c := range r.Configs {
			if c.Key == "cleanup.policy" {
				policy = c.MaybeValue()
			}
		}
		if policy != "compact" {
			t.Errorf("%s: cleanup.policy %q, want compact", topic, policy)
		}
	}

	// Records written a second ago are past log.retention.ms from the
	// second pass on; give the passes three seconds.
	time.Sleep(3 * time.Second)
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		if o := startOffset(t, adm, topic); o != 0 {
			t.Errorf("%s: log start offset %d, want 0 (trimmed by retention)", topic, o)
		}
	}
	n.Restart()
	fetched, err := n.Admin().FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("in", 0); !ok || o.Err != nil || o.At != 1 {
		t.Fatalf("committed offset after restart: %+v (ok %v), want 1", o, ok)
	}
}
