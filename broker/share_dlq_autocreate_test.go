package broker_test

// errors.deadletterqueue.auto.create.topics.enable (KIP-1191): the
// share-group DLQ writer creates a missing DLQ topic (broker/share_dlq.go).

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestShareGroupDeadLetterQueueAutoCreate: a rejection whose DLQ topic
// does not exist is archived and creates nothing while
// errors.deadletterqueue.auto.create.topics.enable is false (its default);
// once it is set true cluster-wide, the next rejection creates the topic
// with the broker's num.partitions and errors.deadletterqueue.group.enable
// =true, and its DLQ record lands there. A missing topic whose name does
// not start with errors.deadletterqueue.topic.name.prefix is still not
// created (Kafka checks the prefix first).
func TestShareGroupDeadLetterQueueAutoCreate(t *testing.T) {
	n := sluicetest.Start(t, "num.partitions=2")
	const topic, dlq, unprefixed = "sq-dlq-auto", "dlq.auto", "auto-unprefixed"
	createTopic(t, n, topic, 1, nil)
	groups := map[string]string{"sg-auto": dlq, "sg-auto-unprefixed": unprefixed}
	for g, d := range groups {
		mustAlterGroupConfigs(t, n.Client(), g, "set:share.auto.offset.reset=earliest", "set:errors.deadletterqueue.topic.name="+d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := n.Client()
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	consumers := map[string]*kgo.Client{}
	for g := range groups {
		consumers[g] = n.Client(kgo.ConsumeTopics(topic), kgo.ShareGroup(g))
		t.Cleanup(consumers[g].Close)
	}
	produce := func(v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
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
	exists := func(name string) bool {
		t.Helper()
		td, err := adm.ListTopics(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return td.Has(name)
	}

	produce("first")
	for g := range groups {
		rejectNext(g, 1)
	}
	for _, d := range groups {
		if exists(d) {
			t.Fatalf("DLQ topic %s created with errors.deadletterqueue.auto.create.topics.enable false", d)
		}
	}

	on := "true"
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "errors.deadletterqueue.auto.create.topics.enable", Value: &on}})
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatalf("errors.deadletterqueue.auto.create.topics.enable=true: %v", err)
	}
	produce("second")
	for g := range groups {
		rejectNext(g, 2)
	}
	if exists(unprefixed) {
		t.Errorf("DLQ topic %s, not starting with the prefix dlq., was created", unprefixed)
	}
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		td, err := adm.ListTopics(ctx, dlq)
		if err != nil {
			return err
		}
		if got := len(td[dlq].Partitions); got != 2 {
			return fmt.Errorf("DLQ topic %s: %d partitions, want num.partitions=2 (%v)", dlq, got, td[dlq].Err)
		}
		return nil
	})
	rc, err := adm.DescribeTopicConfigs(ctx, dlq)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On(dlq, nil)
	if err != nil {
		t.Fatal(err)
	}
	enabled := ""
	for _, kv := range c.Configs {
		if kv.Key == "errors.deadletterqueue.group.enable" {
			enabled = kv.MaybeValue()
		}
	}
	if enabled != "true" {
		t.Errorf("DLQ topic %s: errors.deadletterqueue.group.enable=%q, want true", dlq, enabled)
	}
	got := consumeAll(t, n.Addr(), dlq, 1)
	h := map[string]string{}
	for _, kv := range got[0].Headers {
		h[kv.Key] = string(kv.Value)
	}
	if got[0].Partition != 0 || h["__dlq.errors.offset"] != "1" || h["__dlq.errors.group"] != "sg-auto" || h["__dlq.errors.message"] != "Offset rejected by client." {
		t.Errorf("DLQ record in partition %d with headers %v, want partition 0, offset 1 of sg-auto, rejected", got[0].Partition, h)
	}
}
