package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// consumeToEnd reads topic's partition 0 from the start up to its end
// offset with a real consumer and returns every record.
func consumeToEnd(t *testing.T, n *sluicetest.Node, topic string) []*kgo.Record {
	t.Helper()
	return readAllRecords(t, []string{n.Addr()}, topic)
}

// readAllRecords reads partition 0 of topic from the start up to its end
// offset with a consumer seeded with seeds (the leader answers) and
// returns every record.
func readAllRecords(t *testing.T, seeds []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	for len(got) == 0 || got[len(got)-1].Offset < end.Offset-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed up to %d of %d", len(got), end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	return got
}

// A compacted topic is cleaned by the broker: a consumer reading it from
// the start sees each key's latest value (tombstones included, until
// delete.retention.ms), far fewer records than were produced, offsets
// increasing with gaps; and the cleaned log is the same after a restart.
func TestCompactedTopicIsCleaned(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "compacted", 1, map[string]*string{"cleanup.policy": ptr("compact"), "segment.bytes": ptr("16384")})
	cl := n.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	latest := map[string]string{}
	produced := 0
	for round := 0; round < 40; round++ {
		var recs []*kgo.Record
		for k := 0; k < 50; k++ {
			key := fmt.Sprintf("key-%02d", k)
			r := &kgo.Record{Topic: "compacted", Key: []byte(key), Value: []byte(fmt.Sprintf("v-%d-%d", round, k))}
			if round == 30 && k < 5 {
				r.Value = nil // tombstone
			}
			if round > 30 && k < 5 {
				continue
			}
			latest[key] = string(r.Value)
			recs = append(recs, r)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced += len(recs)
	}
	passes := 0
	for n.Broker.RunCleaner() {
		if passes++; passes > 50 {
			t.Fatal("the cleaner never runs out of work")
		}
	}
	if passes == 0 {
		t.Fatal("no cleaning pass ran on a compacted topic with rolled segments")
	}
	check := func(got []*kgo.Record) {
		t.Helper()
		if len(got) >= produced/2 {
			t.Fatalf("consumed %d of %d produced records: not compacted", len(got), produced)
		}
		last := map[string]string{}
		for i, r := range got {
			if i > 0 && r.Offset <= got[i-1].Offset {
				t.Fatalf("offset %d after %d", r.Offset, got[i-1].Offset)
			}
			last[string(r.Key)] = string(r.Value)
		}
		for k, v := range latest {
			if last[k] != v {
				t.Fatalf("key %s: last value %q, want %q", k, last[k], v)
			}
		}
	}
	before := consumeToEnd(t, n, "compacted")
	check(before)
	t.Logf("%d passes; %d records produced, %d consumed after cleaning", passes, produced, len(before))
	n.Restart()
	after := consumeToEnd(t, n, "compacted")
	check(after)
	if len(after) != len(before) {
		t.Fatalf("after restart %d records, before %d", len(after), len(before))
	}
}

// The topic's compaction configs are enforced and an alter takes effect
// without a restart: min.compaction.lag.ms of a day holds the cleaner off
// until it is lowered, and with delete.retention.ms=0 the tombstones the
// first pass kept (giving them a delete horizon) go at the next pass.
func TestCompactionConfigsApply(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "tuned", 1, map[string]*string{"cleanup.policy": ptr("compact"), "segment.bytes": ptr("16384"),
		"min.compaction.lag.ms": ptr("86400000"), "delete.retention.ms": ptr("0")})
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression())) // so segments fill and roll
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(recs []*kgo.Record) {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rounds := func(n int) {
		for round := 0; round < n; round++ {
			var recs []*kgo.Record
			for k := 0; k < 50; k++ {
				recs = append(recs, &kgo.Record{Topic: "tuned", Key: []byte(fmt.Sprintf("key-%02d", k)), Value: []byte(fmt.Sprintf("v-%d", round))})
			}
			produce(recs)
		}
	}
	rounds(10)
	var gone []*kgo.Record
	for k := 0; k < 10; k++ {
		gone = append(gone, &kgo.Record{Topic: "tuned", Key: []byte(fmt.Sprintf("gone-%d", k))})
	}
	produce(gone)
	rounds(20)
	if n.Broker.RunCleaner() {
		t.Fatal("cleaned records younger than min.compaction.lag.ms")
	}
	res, err := n.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "min.compaction.lag.ms", Value: ptr("0")}}, "tuned")
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	// One pass (the map holds every key); the next one would already be
	// the rescheduled pass for the tombstones' expired delete horizon.
	waitFor(t, func() bool { return n.Broker.RunCleaner() })
	tombstones := func() int {
		c := 0
		for _, r := range consumeToEnd(t, n, "tuned") {
			if r.Value == nil {
				c++
			}
		}
		return c
	}
	if got := tombstones(); got != 10 {
		t.Fatalf("%d tombstones after the first pass, want the 10 kept until a pass after their delete horizon", got)
	}
	rounds(20)
	for n.Broker.RunCleaner() {
	}
	if got := tombstones(); got != 0 {
		t.Fatalf("%d tombstones left with delete.retention.ms=0 after a second pass", got)
	}
}

// waitFor polls cond for up to 10 s: a topic config change reaches the
// log when the broker applies the new metadata image.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
