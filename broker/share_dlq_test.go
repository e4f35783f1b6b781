package broker_test

// The share-group dead-letter queue (KIP-1191, broker/share_dlq.go) seen
// by franz-go's share consumer and a plain consumer of the DLQ topic.

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// waitShareVersion sets share.version to level and waits until the node
// reports it finalized.
func waitShareVersion(t *testing.T, addr string, level int16, upgradeType int8) {
	t.Helper()
	if resp := updateFeatures(t, addr, 1, false, featureUpdate("share.version", level, upgradeType)); resp.ErrorCode != 0 {
		t.Fatalf("UpdateFeatures share.version=%d: error %d %v", level, resp.ErrorCode, resp.ErrorMessage)
	}
	deadline := time.Now().Add(10 * time.Second)
	for apiVersionsFeatures(t, addr, 3).finalized["share.version"] != level {
		if time.Now().After(deadline) {
			t.Fatalf("share.version not finalized at %d", level)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShareGroupDeadLetterQueue: at share.version 1 a rejected record is
// only archived; at share.version 2 (Kafka 4.4's SV_2, the bootstrap
// level) a record REJECTed, and one RELEASEd until it was delivered
// share.delivery.count.limit times, land in the group's
// errors.deadletterqueue.topic.name topic as Kafka 4.4 writes them: no key,
// no value, and the __dlq.errors.* headers naming the source topic,
// partition, offset, group, delivery count and reason. An accepted record
// does not. With errors.deadletterqueue.copy.record.enable the DLQ record
// carries the original key and value too. The old code supported
// share.version up to 1 and had no dead-letter queue.
func TestShareGroupDeadLetterQueue(t *testing.T) {
	n := sluicetest.Start(t)
	addr := n.Addr()
	const topic, group, dlq = "sq-dlq", "sg-dlq", "dlq.sg-dlq"
	createTopic(t, n, topic, 1, nil)
	enable := "true"
	createTopic(t, n, dlq, 1, map[string]*string{"errors.deadletterqueue.group.enable": &enable})
	mustAlterGroupConfigs(t, n.Client(), group, "set:share.auto.offset.reset=earliest",
		"set:share.delivery.count.limit=2", "set:errors.deadletterqueue.topic.name="+dlq)
	if got := apiVersionsFeatures(t, addr, 3).finalized["share.version"]; got != 2 {
		t.Fatalf("a new cluster has share.version %d, want 2 (Kafka 4.4's bootstrap level)", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	producer := n.Client(kgo.DefaultProduceTopic(topic))
	t.Cleanup(producer.Close)
	consumer := n.Client(kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	t.Cleanup(consumer.Close)
	seen := map[string]int{}
	// consumeUntil acknowledges every delivery by its value until done.
	consumeUntil := func(done func() bool) {
		t.Helper()
		for !done() {
			fs := consumer.PollRecords(ctx, 10)
			if ctx.Err() != nil {
				t.Fatalf("deliveries so far %v: %v", seen, ctx.Err())
			}
			for _, r := range fs.Records() {
				v := string(r.Value)
				seen[v]++
				switch v {
				case "v1-reject", "reject", "copy-reject":
					r.Ack(kgo.AckReject)
				case "release":
					r.Ack(kgo.AckRelease)
				default:
					r.Ack(kgo.AckAccept)
				}
			}
			if err := consumer.FlushAcks(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}

	// share.version 1: a rejection is not dead-lettered.
	waitShareVersion(t, addr, 1, 2)
	if err := producer.ProduceSync(ctx, kgo.StringRecord("v1-reject")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumeUntil(func() bool { return seen["v1-reject"] == 1 })

	// share.version 2: offsets 1 (rejected), 2 (released twice) and 3
	// (accepted).
	waitShareVersion(t, addr, 2, 1)
	if err := producer.ProduceSync(ctx, kgo.StringRecord("reject"), kgo.StringRecord("release"), kgo.StringRecord("accept")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumeUntil(func() bool { return seen["reject"] == 1 && seen["release"] == 2 && seen["accept"] == 1 })

	got := consumeAll(t, addr, dlq, 2)
	want := []map[string]string{
		{"__dlq.errors.topic": topic, "__dlq.errors.partition": "0", "__dlq.errors.offset": "1", "__dlq.errors.group": group,
			"__dlq.errors.delivery.count": "1", "__dlq.errors.message": "Offset rejected by client."},
		{"__dlq.errors.topic": topic, "__dlq.errors.partition": "0", "__dlq.errors.offset": "2", "__dlq.errors.group": group,
			"__dlq.errors.delivery.count": "2", "__dlq.errors.message": "Offset delivery count exceeded the threshold."},
	}
	byOffset := map[string]map[string]string{}
	for _, r := range got {
		if r.Key != nil || r.Value != nil {
			t.Errorf("DLQ record %d has key %q value %q, want neither (errors.deadletterqueue.copy.record.enable is false)", r.Offset, r.Key, r.Value)
		}
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		byOffset[h["__dlq.errors.offset"]] = h
	}
	for _, w := range want {
		h := byOffset[w["__dlq.errors.offset"]]
		for k, v := range w {
			if h[k] != v {
				t.Errorf("DLQ record of source offset %s: header %s = %q, want %q (headers %v)", w["__dlq.errors.offset"], k, h[k], v, h)
			}
		}
		if len(h) != len(w) {
			t.Errorf("DLQ record of source offset %s has headers %v, want exactly %v", w["__dlq.errors.offset"], h, w)
		}
	}
	if len(byOffset) != 2 {
		t.Errorf("DLQ records for source offsets %v, want 1 and 2 only", byOffset)
	}
	ends, err := n.Admin().ListEndOffsets(ctx, dlq)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(dlq, 0); o.Offset != 2 {
		t.Errorf("DLQ topic end offset %d, want 2: the share.version 1 rejection or the accepted record was dead-lettered", o.Offset)
	}

	// errors.deadletterqueue.copy.record.enable: the key and value too.
	mustAlterGroupConfigs(t, n.Client(), group, "set:errors.deadletterqueue.copy.record.enable=true")
	if err := producer.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("copy-reject")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumeUntil(func() bool { return seen["copy-reject"] == 1 })
	got = consumeAll(t, addr, dlq, 3)
	last := got[len(got)-1]
	h := map[string]string{}
	for _, kv := range last.Headers {
		h[kv.Key] = string(kv.Value)
	}
	if string(last.Key) != "k" || string(last.Value) != "copy-reject" || h["__dlq.errors.offset"] != "4" || h["__dlq.errors.message"] != "Offset rejected by client." {
		t.Errorf("copied DLQ record: key %q value %q headers %v, want k=copy-reject with source offset 4 rejected", last.Key, last.Value, h)
	}
}

// TestShareGroupDeadLetterQueueRemoteLeader: on three nodes, the DLQ
// topic's partition led by another node than the source partition's
// leader: the share-partition leader produces the dead letters to it
// (acks=all), and every rejected record is there once.
func TestShareGroupDeadLetterQueueRemoteLeader(t *testing.T) {
	const topic, group, dlq, total = "sq-dlq3", "sg-dlq3", "dlq.three", 5
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	t.Cleanup(cl.Close)
	createAssigned(t, cl, topic, []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	createAssigned(t, cl, dlq, []int32{2, 3, 1}, map[string]string{"min.insync.replicas": "2", "errors.deadletterqueue.group.enable": "true"})
	src := waitState(t, cl, topic, "full ISR", isrLen(3))
	dst := waitState(t, cl, dlq, "full ISR", isrLen(3))
	if src.leader == dst.leader {
		t.Fatalf("source and DLQ partitions both led by %d", src.leader)
	}
	mustAlterGroupConfigs(t, cl, group, "set:share.auto.offset.reset=earliest", "set:errors.deadletterqueue.topic.name="+dlq)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for i := range total {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumer := clusterClient(c, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	t.Cleanup(consumer.Close)
	seen := map[string]bool{}
	for len(seen) < total {
		fs := consumer.PollRecords(ctx, total)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records delivered: %v", len(seen), total, ctx.Err())
		}
		for _, r := range fs.Records() {
			seen[string(r.Value)] = true
			r.Ack(kgo.AckReject)
		}
		if err := consumer.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
	}

	got := consumeAll(t, c.Addrs()[0], dlq, total)
	offsets := map[string]bool{}
	for _, r := range got {
		for _, h := range r.Headers {
			if h.Key == "__dlq.errors.offset" {
				offsets[string(h.Value)] = true
			}
		}
	}
	for i := range total {
		if !offsets[strconv.Itoa(i)] {
			t.Errorf("no DLQ record for source offset %d (DLQ records for %v)", i, offsets)
		}
	}
	if len(got) != total {
		t.Errorf("%d DLQ records, want %d", len(got), total)
	}
}

// TestShareGroupDeadLetterQueueRefused: a DLQ topic is written only as
// Kafka's validateDlqTopic allows. A rejection whose DLQ topic does not
// have errors.deadletterqueue.group.enable=true, or whose name does not
// start with errors.deadletterqueue.topic.name.prefix ("dlq."), is archived
// (the share-partition start offset moves past it once the refused write
// ended) and nothing is written; with the prefix set to "" (a dynamic
// cluster-wide change) the second topic takes the next rejection.
func TestShareGroupDeadLetterQueueRefused(t *testing.T) {
	n := sluicetest.Start(t)
	const topic, off, unprefixed = "sq-dlq-refused", "dlq.off", "unprefixed-dlq"
	createTopic(t, n, topic, 1, nil)
	createTopic(t, n, off, 1, nil)
	enable := "true"
	createTopic(t, n, unprefixed, 1, map[string]*string{"errors.deadletterqueue.group.enable": &enable})
	groups := map[string]string{"sg-off": off, "sg-unprefixed": unprefixed}
	for g, dlq := range groups {
		mustAlterGroupConfigs(t, n.Client(), g, "set:share.auto.offset.reset=earliest", "set:errors.deadletterqueue.topic.name="+dlq)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := n.Client()
	t.Cleanup(cl.Close)
	produce := func(v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumers := map[string]*kgo.Client{}
	for g := range groups {
		consumers[g] = n.Client(kgo.ConsumeTopics(topic), kgo.ShareGroup(g))
		t.Cleanup(consumers[g].Close)
	}
	// rejectNext rejects group g's next record and waits until the
	// share-partition start offset is past it: its DLQ write ended.
	rejectNext := func(g string, next int64) {
		t.Helper()
		for rejected := false; !rejected; {
			fs := consumers[g].PollRecords(ctx, 1)
			if ctx.Err() != nil {
				t.Fatalf("%s: no record to reject: %v", g, ctx.Err())
			}
			for _, r := range fs.Records() {
				r.Ack(kgo.AckReject)
				rejected = true
			}
			if err := consumers[g].FlushAcks(ctx); err != nil {
				t.Fatal(err)
			}
		}
		sluicetest.WaitFor(t, 30*time.Second, func() error {
			resp := describeShareTopicOffsets(ctx, t, cl, g, topic)
			if so := resp.Groups[0].Topics[0].Partitions[0].StartOffset; so != next {
				return fmt.Errorf("%s: share-partition start offset %d, want %d", g, so, next)
			}
			return nil
		})
	}
	endOffset := func(dlq string) int64 {
		t.Helper()
		ends, err := n.Admin().ListEndOffsets(ctx, dlq)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := ends.Lookup(dlq, 0)
		return o.Offset
	}

	produce("first")
	for g := range groups {
		rejectNext(g, 1)
	}
	for _, dlq := range groups {
		if o := endOffset(dlq); o != 0 {
			t.Errorf("refused DLQ topic %s has %d records", dlq, o)
		}
	}

	v := ""
	if _, err := n.Admin().AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "errors.deadletterqueue.topic.name.prefix", Value: &v}}); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		rc, err := n.Admin().DescribeBrokerConfigs(ctx)
		if err != nil {
			return err
		}
		c, err := rc.On("", nil)
		if err != nil {
			return err
		}
		for _, kv := range c.Configs {
			if kv.Key == "errors.deadletterqueue.topic.name.prefix" && kv.MaybeValue() == "" {
				return nil
			}
		}
		return fmt.Errorf("errors.deadletterqueue.topic.name.prefix not yet \"\"")
	})
	produce("second")
	rejectNext("sg-unprefixed", 2)
	if o := endOffset(unprefixed); o != 1 {
		t.Errorf("DLQ topic %s has %d records after the prefix was cleared, want 1", unprefixed, o)
	}
}
