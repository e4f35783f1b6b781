package broker_test

// Topic auto-creation through Metadata, as a client sees it: the request
// that triggers the creation is answered UNKNOWN_TOPIC_OR_PARTITION with no
// partitions and no topic id (Kafka 4.x's AutoTopicCreationManager), and
// the topic shows on a later request.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// metadataFor sends one Metadata request of exactly the given version for
// topics (all topics if none) over conn, where a client would pick its own
// version, and returns the answer; allowCreate is the request's
// AllowAutoTopicCreation (v4+; earlier versions always allow it).
func metadataFor(t *testing.T, conn *rawConn, version int16, allowCreate bool, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	req.AllowAutoTopicCreation = allowCreate
	if topics == nil {
		req.Topics = nil
	}
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	_, resp := conn.do(req)
	return resp.(*kmsg.MetadataResponse)
}

// wantNoTopic checks that mt, the answer for name, is error want with no
// partitions and no topic id, marked internal exactly for Kafka's
// internal topics.
func wantNoTopic(t *testing.T, what string, mt kmsg.MetadataResponseTopic, name string, want *kerr.Error, internal bool) {
	t.Helper()
	if mt.Topic == nil || *mt.Topic != name {
		t.Fatalf("%s: answered for topic %v, want %q", what, mt.Topic, name)
	}
	if mt.ErrorCode != want.Code || len(mt.Partitions) != 0 || mt.TopicID != [16]byte{} || mt.IsInternal != internal {
		t.Fatalf("%s: %s: error %v, %d partitions, topic id %x, internal %v; want %v, no partitions, zero id, internal %v",
			what, name, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions), mt.TopicID, mt.IsInternal, want, internal)
	}
}

// waitLed waits until a Metadata request without auto-creation shows
// topic with partitions partitions, each led by node leader.
func waitLed(t *testing.T, conn *rawConn, topic string, partitions int, leader int32) {
	t.Helper()
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		mt := metadataFor(t, conn, 12, false, topic).Topics[0]
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return fmt.Errorf("%s: %w", topic, err)
		}
		if len(mt.Partitions) != partitions {
			return fmt.Errorf("%s: %d partitions, want %d", topic, len(mt.Partitions), partitions)
		}
		for _, p := range mt.Partitions {
			if p.ErrorCode != 0 || p.Leader != leader {
				return fmt.Errorf("%s-%d: leader %d, %v", topic, p.Partition, p.Leader, kerr.ErrorForCode(p.ErrorCode))
			}
		}
		if mt.TopicID == [16]byte{} {
			return fmt.Errorf("%s: no topic id", topic)
		}
		return nil
	})
}

// The request that creates a topic answers UNKNOWN_TOPIC_OR_PARTITION with
// no partitions; a later one shows the topic with its leaders. Before v4
// every Metadata request allows auto-creation; from v4 only one that says
// so. A topic that exists is answered in full next to one being created.
func TestMetadataAutoCreateAnswersOnALaterRequest(t *testing.T) {
	n := sluicetest.Start(t, "num.partitions=3")
	conn := dialRawConn(t, n.Addr())
	createTopic(t, n, "present", 2, nil)

	for _, tc := range []struct {
		version int16
		topic   string
	}{{12, "later"}, {3, "later-v3"}} {
		resp := metadataFor(t, conn, tc.version, true, "present", tc.topic)
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %d topics answered, want 2", tc.version, len(resp.Topics))
		}
		if p := resp.Topics[0]; p.ErrorCode != 0 || len(p.Partitions) != 2 {
			t.Fatalf("v%d: present: %v, %d partitions", tc.version, kerr.ErrorForCode(p.ErrorCode), len(p.Partitions))
		}
		wantNoTopic(t, fmt.Sprintf("v%d first request", tc.version), resp.Topics[1], tc.topic, kerr.UnknownTopicOrPartition, false)
		waitLed(t, conn, tc.topic, 3, 1)
	}

	// A v4+ request that does not allow auto-creation creates nothing.
	wantNoTopic(t, "v12 without auto-creation", metadataFor(t, conn, 12, false, "never").Topics[0], "never", kerr.UnknownTopicOrPartition, false)
	for _, mt := range metadataFor(t, conn, 12, false).Topics {
		if *mt.Topic == "never" {
			t.Fatal("a Metadata request without auto-creation created the topic")
		}
	}
}

// A topic whose creation the controller refuses is answered as one being
// created (UNKNOWN_TOPIC_OR_PARTITION), as Kafka 4.x answers before the
// controller has decided, on every request, and never appears.
func TestMetadataAutoCreateRefused(t *testing.T) {
	n := sluicetest.Start(t, "default.replication.factor=3")
	conn := dialRawConn(t, n.Addr())
	for i := range 2 {
		wantNoTopic(t, fmt.Sprintf("request %d for a topic with more replicas than brokers", i+1),
			metadataFor(t, conn, 12, true, "toowide").Topics[0], "toowide", kerr.UnknownTopicOrPartition, false)
	}
	if topics := metadataFor(t, conn, 12, false).Topics; len(topics) != 0 {
		t.Fatalf("a refused auto-creation left %d topics, the first %q", len(topics), *topics[0].Topic)
	}
}

// An illegal topic name is INVALID_TOPIC_EXCEPTION with or without
// auto-creation, and no creation is attempted (Kafka's Topic.validate).
func TestMetadataIllegalTopicName(t *testing.T) {
	n := sluicetest.Start(t)
	conn := dialRawConn(t, n.Addr())
	for _, allow := range []bool{false, true} {
		for _, name := range []string{"bad name", "..", "", strings.Repeat("x", 250)} {
			wantNoTopic(t, fmt.Sprintf("auto-creation %v", allow), metadataFor(t, conn, 12, allow, name).Topics[0], name, kerr.InvalidTopicException, false)
		}
	}
	if topics := metadataFor(t, conn, 12, false).Topics; len(topics) != 0 {
		t.Fatalf("illegal names left %d topics, the first %q", len(topics), *topics[0].Topic)
	}
}

// A client that names __consumer_offsets gets it created as the group
// coordinator would create it (offsets.topic.num.partitions, compacted),
// not as an ordinary topic with num.partitions, and marked internal from
// the first answer on.
func TestMetadataAutoCreateInternalTopic(t *testing.T) {
	n := sluicetest.Start(t, "num.partitions=1", "offsets.topic.num.partitions=5")
	conn := dialRawConn(t, n.Addr())
	wantNoTopic(t, "first request", metadataFor(t, conn, 12, true, "__consumer_offsets").Topics[0], "__consumer_offsets", kerr.UnknownTopicOrPartition, true)
	waitLed(t, conn, "__consumer_offsets", 5, 1)
	if mt := metadataFor(t, conn, 12, false, "__consumer_offsets").Topics[0]; !mt.IsInternal {
		t.Fatal("__consumer_offsets is not marked internal")
	}
	rc, err := n.Admin().DescribeTopicConfigs(context.Background(), "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	r, err := rc.On("__consumer_offsets", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Configs {
		if c.Key == "cleanup.policy" && (c.Value == nil || *c.Value != "compact") {
			t.Fatalf("__consumer_offsets created through Metadata has cleanup.policy %v", c.MaybeValue())
		}
	}
}

// A producer that lets the broker create its topic gets the first answer
// without partitions, asks again, and delivers.
func TestMetadataAutoCreateProducerDelivers(t *testing.T) {
	n := sluicetest.Start(t, "num.partitions=2")
	cl := n.Client(kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("delivered"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	waitLed(t, dialRawConn(t, n.Addr()), "delivered", 2, 1)
}
