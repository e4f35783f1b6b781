package broker_test

// Issue 14, problem 7: partition floods. One CreateTopics or
// CreatePartitions may ask for at most 10,000 new partitions, as in KRaft
// (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH), and no broker may
// be given more partition replicas than max.broker.partitions (or its
// open-file limit) allows. Both are refused with POLICY_VIOLATION and
// create nothing.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

const excessivePartitionsMessage = "Excessively large number of partitions per request."

// createTopicsRaw sends one CreateTopics with the given name → partition
// count and replication factor entries, in order, and returns the answer.
func createTopicsRaw(t *testing.T, cl kmsg.Requestor, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsResponse {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	req.ValidateOnly = validateOnly
	req.Topics = topics
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	return resp
}

func newTopic(name string, partitions int32, rf int16) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	return rt
}

// createPartitionsRaw sends one CreatePartitions growing each named topic to
// its count.
func createPartitionsRaw(t *testing.T, cl kmsg.Requestor, validateOnly bool, counts ...any) *kmsg.CreatePartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 10000
	req.ValidateOnly = validateOnly
	for i := 0; i < len(counts); i += 2 {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = counts[i].(string), int32(counts[i+1].(int))
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	return resp
}

// wantTopicErrors checks that every topic of a response carries code, and
// that its message contains msg.
func wantCreateTopicsErrors(t *testing.T, resp *kmsg.CreateTopicsResponse, names []string, code int16, msg string) {
	t.Helper()
	if len(resp.Topics) != len(names) {
		t.Errorf("%d topics in the answer, want %d", len(resp.Topics), len(names))
	}
	for _, st := range resp.Topics {
		got := ""
		if st.ErrorMessage != nil {
			got = *st.ErrorMessage
		}
		if st.ErrorCode != code || !strings.Contains(got, msg) || (msg == excessivePartitionsMessage && got != msg) {
			t.Errorf("topic %s: %v %q, want %v with %q", st.Topic, kerr.ErrorForCode(st.ErrorCode), got, kerr.ErrorForCode(code), msg)
		}
	}
}

func wantCreatePartitionsErrors(t *testing.T, resp *kmsg.CreatePartitionsResponse, names []string, code int16, msg string) {
	t.Helper()
	if len(resp.Topics) != len(names) {
		t.Errorf("%d topics in the answer, want %d", len(resp.Topics), len(names))
	}
	for _, st := range resp.Topics {
		got := ""
		if st.ErrorMessage != nil {
			got = *st.ErrorMessage
		}
		if st.ErrorCode != code || !strings.Contains(got, msg) || (msg == excessivePartitionsMessage && got != msg) {
			t.Errorf("topic %s: %v %q, want %v with %q", st.Topic, kerr.ErrorForCode(st.ErrorCode), got, kerr.ErrorForCode(code), msg)
		}
	}
}

// partitionCounts lists every topic's partition count.
func partitionCounts(t *testing.T, n *sluicetest.Node) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := n.Admin().ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for name, d := range topics {
		out[name] = len(d.Partitions)
	}
	return out
}

// TestCreateTopicsPartitionsPerRequest: a CreateTopics whose topics add up
// to more than 10,000 partitions is refused as a whole with
// POLICY_VIOLATION, validate-only or not, and creates nothing. The old
// code created the small topic and judged each topic alone. The requests
// are built so that the old code, too, creates at most one partition.
func TestCreateTopicsPartitionsPerRequest(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client()

	// 10,000 partitions at an impossible replication factor plus one good
	// topic: 10,001 in all.
	names := []string{"flood-big", "flood-small"}
	resp := createTopicsRaw(t, cl, false, newTopic("flood-big", 10000, 3), newTopic("flood-small", 1, 1))
	wantCreateTopicsErrors(t, resp, names, kerr.PolicyViolation.Code, excessivePartitionsMessage)

	// A name given twice in a request that fails as a whole gets its error,
	// as every topic of the request does in Kafka.
	resp = createTopicsRaw(t, cl, false, newTopic("flood-big", 10000, 3), newTopic("flood-dup", 1, 1), newTopic("flood-dup", 1, 1), newTopic("flood-small", 1, 1))
	wantCreateTopicsErrors(t, resp, []string{"flood-big", "flood-dup", "flood-small"}, kerr.PolicyViolation.Code, excessivePartitionsMessage)

	// Three topics of 4,000, validate-only: the old code said yes.
	names = []string{"dry-0", "dry-1", "dry-2"}
	resp = createTopicsRaw(t, cl, true, newTopic("dry-0", 4000, 1), newTopic("dry-1", 4000, 1), newTopic("dry-2", 4000, 1))
	wantCreateTopicsErrors(t, resp, names, kerr.PolicyViolation.Code, excessivePartitionsMessage)

	// One topic of 10,001 is over the limit too (Kafka has no per-topic
	// limit; the old code answered INVALID_PARTITIONS).
	resp = createTopicsRaw(t, cl, true, newTopic("one-big", 10001, 1))
	wantCreateTopicsErrors(t, resp, []string{"one-big"}, kerr.PolicyViolation.Code, excessivePartitionsMessage)

	// Exactly 10,000 in one request is allowed (validate-only, so cheap).
	resp = createTopicsRaw(t, cl, true, newTopic("at-limit-0", 5000, 1), newTopic("at-limit-1", 5000, 1))
	wantCreateTopicsErrors(t, resp, []string{"at-limit-0", "at-limit-1"}, 0, "")

	for name := range partitionCounts(t, n) {
		if strings.HasPrefix(name, "flood") || strings.HasPrefix(name, "dry") || strings.HasPrefix(name, "one-big") || strings.HasPrefix(name, "at-limit") {
			t.Errorf("topic %s was created", name)
		}
	}
}

// TestCreateTopicsDuplicateNames: a name given twice is answered once with
// INVALID_REQUEST "Duplicate topic name." as KRaft's ControllerApis does,
// and the other topics of the request are created.
func TestCreateTopicsDuplicateNames(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client()
	resp := createTopicsRaw(t, cl, false, newTopic("twice", 1, 1), newTopic("once", 1, 1), newTopic("twice", 2, 1))
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics in the answer, want 2: %+v", len(resp.Topics), resp.Topics)
	}
	for _, st := range resp.Topics {
		switch st.Topic {
		case "twice":
			if st.ErrorCode != kerr.InvalidRequest.Code || st.ErrorMessage == nil || *st.ErrorMessage != "Duplicate topic name." {
				t.Errorf("twice: %v %v, want INVALID_REQUEST \"Duplicate topic name.\"", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage)
			}
		case "once":
			if st.ErrorCode != 0 {
				t.Errorf("once: %v", kerr.ErrorForCode(st.ErrorCode))
			}
		}
	}
	counts := partitionCounts(t, n)
	if _, ok := counts["twice"]; ok {
		t.Error("the duplicated topic was created")
	}
	if counts["once"] != 1 {
		t.Errorf("once has %d partitions, want 1", counts["once"])
	}

	createTopic(t, n, "grow", 1, nil)
	presp := createPartitionsRaw(t, cl, false, "grow", 2, "grow", 3)
	wantCreatePartitionsErrors(t, presp, []string{"grow"}, kerr.InvalidRequest.Code, "Duplicate topic name.")
	if c := partitionCounts(t, n)["grow"]; c != 1 {
		t.Errorf("grow has %d partitions after a refused CreatePartitions, want 1", c)
	}
}

// TestCreatePartitionsPerRequest: a CreatePartitions that adds more than
// 10,000 partitions in all is refused with POLICY_VIOLATION and adds none.
func TestCreatePartitionsPerRequest(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client()
	createTopic(t, n, "grow-a", 1, nil)
	createTopic(t, n, "grow-b", 1, nil)

	// 6,000 + 6,000 new partitions, validate-only: the old code said yes.
	resp := createPartitionsRaw(t, cl, true, "grow-a", 6001, "grow-b", 6001)
	wantCreatePartitionsErrors(t, resp, []string{"grow-a", "grow-b"}, kerr.PolicyViolation.Code, excessivePartitionsMessage)
	// 10,001 new partitions for one topic.
	resp = createPartitionsRaw(t, cl, false, "grow-a", 10002)
	wantCreatePartitionsErrors(t, resp, []string{"grow-a"}, kerr.PolicyViolation.Code, excessivePartitionsMessage)

	counts := partitionCounts(t, n)
	if counts["grow-a"] != 1 || counts["grow-b"] != 1 {
		t.Errorf("partition counts after refused requests: %v", counts)
	}
}

// TestMaxBrokerPartitions: with max.broker.partitions=20 a single node
// accepts topics up to 20 partition replicas and refuses, with
// POLICY_VIOLATION and a message naming the broker and the limit, any topic
// of a CreateTopics or CreatePartitions (validate-only too) that would pass
// it; a refused topic is not created, the others of its request are, and
// the node keeps serving.
func TestMaxBrokerPartitions(t *testing.T) {
	n := sluicetest.Start(t, "max.broker.partitions=20")
	cl := n.Client()
	createTopic(t, n, "first", 15, nil)

	resp := createTopicsRaw(t, cl, false, newTopic("over", 6, 1), newTopic("fits", 1, 1))
	for _, st := range resp.Topics {
		msg := ""
		if st.ErrorMessage != nil {
			msg = *st.ErrorMessage
		}
		switch st.Topic {
		case "over":
			if st.ErrorCode != kerr.PolicyViolation.Code || !strings.Contains(msg, "broker 1") || !strings.Contains(msg, "max.broker.partitions=20") {
				t.Errorf("%s: %v %q, want POLICY_VIOLATION naming broker 1 and max.broker.partitions=20", st.Topic, kerr.ErrorForCode(st.ErrorCode), msg)
			} else {
				t.Logf("%s: POLICY_VIOLATION %q", st.Topic, msg)
			}
		case "fits":
			if st.ErrorCode != 0 {
				t.Errorf("fits: %v %q", kerr.ErrorForCode(st.ErrorCode), msg)
			}
		}
	}
	resp = createTopicsRaw(t, cl, true, newTopic("over-dry", 6, 1))
	wantCreateTopicsErrors(t, resp, []string{"over-dry"}, kerr.PolicyViolation.Code, "max.broker.partitions=20")

	presp := createPartitionsRaw(t, cl, false, "first", 21)
	wantCreatePartitionsErrors(t, presp, []string{"first"}, kerr.PolicyViolation.Code, "max.broker.partitions=20")

	counts := partitionCounts(t, n)
	if counts["first"] != 15 || counts["fits"] != 1 {
		t.Errorf("first has %d partitions, fits %d, want 15 and 1", counts["first"], counts["fits"])
	}
	for _, name := range []string{"over", "over-dry"} {
		if _, ok := counts[name]; ok {
			t.Errorf("topic %s was created", name)
		}
	}

	// Up to the limit is fine, and the node still serves a producer.
	resp = createTopicsRaw(t, cl, false, newTopic("last", 4, 1))
	wantCreateTopicsErrors(t, resp, []string{"last"}, 0, "")
	produceKeyed(t, n.Client(), "last", 0, 10)
}

// TestPartitionLimitsThroughAnyBroker: in a cluster of three, requests sent
// to a broker that is not the controller are forwarded and refused there:
// more than 10,000 partitions for every topic, duplicates included, and a
// partition increase that would take a broker past max.broker.partitions=4.
func TestPartitionLimitsThroughAnyBroker(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, "max.broker.partitions=4")
	c.WaitForBrokers(3)
	id := nonController(c)
	node := pinned(t, c, id)

	resp := createTopicsRaw(t, node, false, newTopic("big", 10001, 1), newTopic("dup", 1, 1), newTopic("dup", 1, 1))
	wantCreateTopicsErrors(t, resp, []string{"big", "dup"}, kerr.PolicyViolation.Code, "Excessively large number of partitions per request")

	// 6 partitions at RF 2 are 4 replicas on each of the three brokers.
	resp = createTopicsRaw(t, node, false, newTopic("spread", 6, 2))
	wantCreateTopicsErrors(t, resp, []string{"spread"}, 0, "")
	presp := createPartitionsRaw(t, node, false, "spread", 7)
	wantCreatePartitionsErrors(t, presp, []string{"spread"}, kerr.PolicyViolation.Code, "max.broker.partitions=4")
	if tp := topicOf(clusterMetadata(t, node, "spread"), "spread"); tp == nil || len(tp.Partitions) != 6 {
		t.Fatalf("spread after a refused increase: %+v", tp)
	}
}
