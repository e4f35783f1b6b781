package broker_test

// Error paths of the data-plane APIs (Fetch, ListOffsets,
// DescribeTopicPartitions, DescribeProducers) compared with Kafka's.
// Helpers are in error_paths_test.go.

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestListOffsetsSpecialTimestampVersions: a negative timestamp is one of
// the special ones, each from the version that brought it (-3 v7, -4 v8,
// -5 v9), or UNSUPPORTED_VERSION, before the partition is even looked up,
// as Kafka's ReplicaManager.fetchOffset answers
// (isListOffsetsTimestampUnsupported).
func TestListOffsetsSpecialTimestampVersions(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	waitServed(t, c, "codes-t")
	for _, tc := range []struct {
		topic     string
		v         int16
		timestamp int64
		want      int16
	}{
		{"codes-t", 1, -1, 0},
		{"codes-t", 1, -2, 0},
		{"codes-t", 6, -3, kerr.UnsupportedVersion.Code},
		{"codes-t", 7, -3, 0},
		{"codes-t", 7, -4, kerr.UnsupportedVersion.Code},
		{"codes-t", 8, -4, 0},
		{"codes-t", 8, -5, kerr.UnsupportedVersion.Code},
		{"codes-t", 9, -5, 0},
		{"codes-t", 9, -6, kerr.UnsupportedVersion.Code},
		{"codes-t", 9, -100, kerr.UnsupportedVersion.Code},
		{"missing-t", 9, -6, kerr.UnsupportedVersion.Code},
		{"missing-t", 9, -1, kerr.UnknownTopicOrPartition.Code},
	} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = tc.v
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = tc.timestamp
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: tc.topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{rp}}}
		_, r := c.do(req)
		got := r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
		if got != tc.want {
			t.Errorf("%s v%d timestamp %d: %s, want %s", tc.topic, tc.v, tc.timestamp, codeName(got), codeName(tc.want))
		}
	}
}

// TestFetchIncrementalWithoutSession: an incremental fetch (SessionEpoch
// other than 0 or -1) naming a session the broker does not have is
// answered, as Kafka's FetchManager.newContext answers it,
// FETCH_SESSION_ID_NOT_FOUND at the top level with no partitions, and the
// client falls back to a full fetch. A full fetch (epoch 0 or -1) is served
// whatever session id it names; at epoch 0 it opens a session
// (fetch_session_test.go has the rest).
func TestFetchIncrementalWithoutSession(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	waitServed(t, c, "codes-t")
	for _, tc := range []struct {
		sessionID, epoch int32
		want             int16
	}{
		{0, 0, 0},
		{0, -1, 0},
		{12345, 0, 0},
		{12345, -1, 0},
		{12345, 1, kerr.FetchSessionIDNotFound.Code},
		{0, 5, kerr.FetchSessionIDNotFound.Code},
	} {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.MaxBytes = 1 << 20
		req.SessionID, req.SessionEpoch = tc.sessionID, tc.epoch
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "codes-t", Partitions: []kmsg.FetchRequestTopicPartition{rp}}}
		_, r := c.do(req)
		resp := r.(*kmsg.FetchResponse)
		if resp.ErrorCode != tc.want {
			t.Errorf("session %d epoch %d: %s, want %s", tc.sessionID, tc.epoch, codeName(resp.ErrorCode), codeName(tc.want))
		}
		if tc.want != 0 && len(resp.Topics) != 0 {
			t.Errorf("session %d epoch %d: %d topics in a session error", tc.sessionID, tc.epoch, len(resp.Topics))
		}
		if tc.want == 0 && (len(resp.Topics) != 1 || (resp.SessionID != 0) != (tc.epoch == 0)) {
			t.Errorf("session %d epoch %d: %d topics, session %d", tc.sessionID, tc.epoch, len(resp.Topics), resp.SessionID)
		}
	}
}

// TestDescribeTopicPartitionsCursorAndLimit: as Kafka's
// DescribeTopicPartitionsRequestHandler, a cursor naming a topic the
// request does not list, or a negative cursor partition, is INVALID_REQUEST
// for every listed topic, and the partition limit is at least 1 (a limit
// of 0 answers one partition and a cursor, not every partition).
func TestDescribeTopicPartitionsCursorAndLimit(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-a", 3, nil)
	createTopic(t, n, "codes-b", 1, nil)
	c := dialRawConn(t, n.Addr())
	describe := func(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = limit
		req.Cursor = cursor
		for _, name := range topics {
			req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: name})
		}
		_, r := c.do(req)
		return r.(*kmsg.DescribeTopicPartitionsResponse)
	}
	for _, tc := range []struct {
		name   string
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
	}{
		{"cursor topic not listed", &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "codes-c", Partition: 0}},
		{"negative cursor partition", &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "codes-a", Partition: -1}},
	} {
		resp := describe(2000, tc.cursor, "codes-a", "codes-b")
		if len(resp.Topics) != 2 {
			t.Errorf("%s: %d topics, want both listed", tc.name, len(resp.Topics))
			continue
		}
		for _, st := range resp.Topics {
			if st.ErrorCode != kerr.InvalidRequest.Code || len(st.Partitions) != 0 {
				t.Errorf("%s: topic %s: %s with %d partitions, want INVALID_REQUEST", tc.name, *st.Topic, codeName(st.ErrorCode), len(st.Partitions))
			}
		}
	}
	resp := describe(0, nil, "codes-a")
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.NextCursor == nil || resp.NextCursor.Partition != 1 {
		t.Errorf("limit 0: %d topics, next cursor %+v; want one partition and a cursor at partition 1", len(resp.Topics), resp.NextCursor)
	}
}

// TestDescribeProducersOnFollower: KIP-664 lets kafka-transactions.sh ask
// any replica (--broker-id): Kafka's Partition.activeProducerState answers
// from the replica's log on a follower too, not NOT_LEADER_OR_FOLLOWER. A
// broker without a replica of the partition still says
// NOT_LEADER_OR_FOLLOWER.
func TestDescribeProducersOnFollower(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	c.WaitForBrokers(3)
	cl := c.Client()
	createAssigned(t, cl, "producers-t", []int32{1, 2}, nil)
	c.WaitForISR("producers-t", 0, 2)
	produceKeyed(t, c.Client(kgo.DefaultProduceTopic("producers-t")), "producers-t", 0, 5)
	conns := map[int]*rawConn{}
	describe := func(node int) kmsg.DescribeProducersResponseTopicPartition {
		rc := conns[node]
		if rc == nil {
			rc = dialRawConn(t, c.Node(node).Addr())
			conns[node] = rc
		}
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "producers-t", Partitions: []int32{0}}}
		_, r := rc.do(req)
		return r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		p := describe(2)
		if p.ErrorCode != 0 || len(p.ActiveProducers) != 1 {
			return fmt.Errorf("follower: %s with %d producers, want NONE with the one producer", codeName(p.ErrorCode), len(p.ActiveProducers))
		}
		return nil
	})
	sluicetest.WaitFor(t, 30*time.Second, func() error { // once node 3 has the topic in its image
		if p := describe(3); p.ErrorCode != kerr.NotLeaderForPartition.Code {
			return fmt.Errorf("broker without a replica: %s, want NOT_LEADER_OR_FOLLOWER", codeName(p.ErrorCode))
		}
		return nil
	})
}

// TestFetchFromUnassignedReplica: a replica fetch from a broker the leader
// does not count among the partition's replicas is UNKNOWN_LEADER_EPOCH
// when the request carries the current leader epoch, so the follower
// retries until the leader learns of it (a reassignment adding it), and
// NOT_LEADER_OR_FOLLOWER without one, as Kafka's
// Partition.followerReplicaOrThrow answers.
func TestFetchFromUnassignedReplica(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	waitServed(t, c, "codes-t")
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("codes-t")}}
	_, r := c.do(md)
	epoch := r.(*kmsg.MetadataResponse).Topics[0].Partitions[0].LeaderEpoch
	for _, tc := range []struct {
		current int32
		want    int16
	}{
		{epoch, kerr.UnknownLeaderEpoch.Code},
		{-1, kerr.NotLeaderForPartition.Code},
	} {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID = 9
		req.MaxBytes = 1 << 20
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rp.CurrentLeaderEpoch = tc.current
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "codes-t", Partitions: []kmsg.FetchRequestTopicPartition{rp}}}
		_, r := c.do(req)
		resp := r.(*kmsg.FetchResponse)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("replica 9, current leader epoch %d: %s, want %s", tc.current, codeName(got), codeName(tc.want))
		}
	}
}

// waitServed polls ListOffsets for partition 0 of topic until this node
// serves it as leader, so that a test right after createTopic does not see
// the partition still opening.
func waitServed(t *testing.T, c *rawConn, topic string) {
	t.Helper()
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 1
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{rp}}}
		_, r := c.do(req)
		if code := r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			return fmt.Errorf("%s-0 not served yet: %s", topic, codeName(code))
		}
		return nil
	})
}
