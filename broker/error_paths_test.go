package broker_test

// Error paths compared with Kafka's: each test sends the request a client
// (or a confused one) sends and checks the error code Kafka 4.x answers,
// on one connection so that no client-side retry or routing hides it.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// codeName names an error code for a failure message.
func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).Error()
}

// TestDescribeClusterEndpointTypes: a controller endpoint type sent to a
// broker is MISMATCHED_ENDPOINT_TYPE and an unknown one
// UNSUPPORTED_ENDPOINT_TYPE, as Kafka's AuthHelper answers (KIP-919).
func TestDescribeClusterEndpointTypes(t *testing.T) {
	n := groupNode(t)
	c := dialRawConn(t, n.Addr())
	for _, tc := range []struct {
		endpointType int8
		want         int16
	}{
		{1, 0},
		{2, kerr.MismatchedEndpointType.Code},
		{0, kerr.UnsupportedEndpointType.Code},
		{5, kerr.UnsupportedEndpointType.Code},
	} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = 1
		req.EndpointType = tc.endpointType
		_, r := c.do(req)
		resp := r.(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != tc.want {
			t.Errorf("endpoint type %d: %s, want %s", tc.endpointType, codeName(resp.ErrorCode), codeName(tc.want))
		}
		if tc.want != 0 && (resp.ErrorMessage == nil || *resp.ErrorMessage == "") {
			t.Errorf("endpoint type %d: no error message", tc.endpointType)
		}
	}
}

// TestDescribeTransactionsEmptyID: an empty transactional id is
// INVALID_REQUEST, as Kafka's TransactionCoordinator answers it, not
// TRANSACTIONAL_ID_NOT_FOUND.
func TestDescribeTransactionsEmptyID(t *testing.T) {
	n := groupNode(t)
	c := dialRawConn(t, n.Addr())
	findTxnCoordinator(t, c, "never-used")
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"", "never-used"}
	_, r := c.do(req)
	resp := r.(*kmsg.DescribeTransactionsResponse)
	want := []int16{kerr.InvalidRequest.Code, kerr.TransactionalIDNotFound.Code}
	if len(resp.TransactionStates) != len(want) {
		t.Fatalf("%d answers, want %d", len(resp.TransactionStates), len(want))
	}
	for i, st := range resp.TransactionStates {
		if st.ErrorCode != want[i] {
			t.Errorf("id %q: %s, want %s", st.TransactionalID, codeName(st.ErrorCode), codeName(want[i]))
		}
	}
}

// findTxnCoordinator asks FindCoordinator for id until it has an answer,
// so that __transaction_state exists and this node coordinates id.
func findTxnCoordinator(t *testing.T, c *rawConn, id string) {
	t.Helper()
	for range 100 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = 3
		req.CoordinatorType = 1
		req.CoordinatorKey = id
		_, r := c.do(req)
		if r.(*kmsg.FindCoordinatorResponse).ErrorCode == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no transaction coordinator")
}

// TestFindCoordinatorEmptyTransactionalID: Kafka's FindCoordinator finds
// the coordinator of any key, the empty transactional id included (it is
// InitProducerId that refuses an empty id).
func TestFindCoordinatorEmptyTransactionalID(t *testing.T) {
	n := groupNode(t)
	c := dialRawConn(t, n.Addr())
	var last *kmsg.FindCoordinatorResponse
	for range 100 { // the first asks create __transaction_state
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = 4
		req.CoordinatorType = 1
		req.CoordinatorKeys = []string{""}
		_, r := c.do(req)
		last = r.(*kmsg.FindCoordinatorResponse)
		if len(last.Coordinators) == 1 && last.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(last.Coordinators) != 1 {
		t.Fatalf("%d coordinators", len(last.Coordinators))
	}
	if co := last.Coordinators[0]; co.ErrorCode != 0 || co.NodeID != 1 {
		t.Fatalf("empty transactional id: %s, node %d; want the coordinator", codeName(co.ErrorCode), co.NodeID)
	}
}

// joinAlone makes one member join group with JoinGroup v5 and returns its
// member id: the group, with the initial rebalance delay off, is then
// CompletingRebalance at generation 1 until the member sends SyncGroup.
func joinAlone(t *testing.T, c *rawConn, group string) string {
	t.Helper()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 5
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = group, 30000, 60000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
	for range 100 { // COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR while __consumer_offsets starts
		_, r := c.do(join)
		resp := r.(*kmsg.JoinGroupResponse)
		switch {
		case resp.ErrorCode == kerr.MemberIDRequired.Code:
			join.MemberID = resp.MemberID
		case resp.ErrorCode == 0:
			if resp.Generation != 1 {
				t.Fatalf("join: generation %d", resp.Generation)
			}
			return resp.MemberID
		case kerr.IsRetriable(kerr.ErrorForCode(resp.ErrorCode)):
		default:
			t.Fatalf("join: %s", codeName(resp.ErrorCode))
		}
		findGroupCoordinator(t, c, group)
	}
	t.Fatal("join: no answer")
	return ""
}

// findGroupCoordinator asks FindCoordinator for group until it has an
// answer, so that __consumer_offsets exists.
func findGroupCoordinator(t *testing.T, c *rawConn, group string) {
	t.Helper()
	for range 100 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = 3
		req.CoordinatorKey = group
		_, r := c.do(req)
		if r.(*kmsg.FindCoordinatorResponse).ErrorCode == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no group coordinator")
}

// offsetCommitCode sends one OffsetCommit of codes-t partition 0 at version
// v and returns the partition's error code.
func offsetCommitCode(t *testing.T, c *rawConn, v int16, group, member string, generation int32) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = v
	req.Group, req.MemberID, req.Generation = group, member, generation
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Offset = 1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "codes-t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
	_, r := c.do(req)
	return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// TestOffsetCommitErrorOrder: a classic group's commit checks the member
// and the generation before the group's state, as Kafka's
// ClassicGroup.validateOffsetCommit does, so a commit of an unknown member
// or of another generation while the group is CompletingRebalance is
// UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION (telling the client to reset or
// rejoin), and only a current member hears REBALANCE_IN_PROGRESS. A
// member's commit to a group that does not exist is GROUP_ID_NOT_FOUND from
// v9 and ILLEGAL_GENERATION before (Kafka's OffsetMetadataManager).
func TestOffsetCommitErrorOrder(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	member := joinAlone(t, c, "completing")
	for _, tc := range []struct {
		name       string
		v          int16
		group      string
		member     string
		generation int32
		want       int16
	}{
		{"current member", 8, "completing", member, 1, kerr.RebalanceInProgress.Code},
		{"unknown member", 8, "completing", "ghost", 1, kerr.UnknownMemberID.Code},
		{"other generation", 8, "completing", member, 7, kerr.IllegalGeneration.Code},
		{"missing group v8", 8, "missing", "m", 3, kerr.IllegalGeneration.Code},
		{"missing group v9", 9, "missing", "m", 3, kerr.GroupIDNotFound.Code},
	} {
		if got := offsetCommitCode(t, c, tc.v, tc.group, tc.member, tc.generation); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, codeName(got), codeName(tc.want))
		}
	}
}

// TestOffsetCommitEmptyGroupID: Kafka's group coordinator takes an offset
// commit for the empty group id, "for backwards compatibility", as a simple
// consumer's commit, and OffsetFetch returns it; only TxnOffsetCommit
// refuses the empty id (INVALID_GROUP_ID).
func TestOffsetCommitEmptyGroupID(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	findGroupCoordinator(t, c, "")
	if got := offsetCommitCode(t, c, 8, "", "", -1); got != 0 {
		t.Fatalf("commit for the empty group id: %s, want NONE", codeName(got))
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 7
	fetch.Group = ""
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "codes-t", Partitions: []int32{0}}}
	_, r := c.do(fetch)
	resp := r.(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Offset != 1 {
		t.Fatalf("fetch for the empty group id: %+v", resp)
	}
}

// TestOffsetCommitNotEnoughReplicas: when __consumer_offsets has fewer
// in-sync replicas than min.insync.replicas, Kafka's group coordinator
// answers an offset commit COORDINATOR_NOT_AVAILABLE
// (CoordinatorOperationExceptionHelper.handleOperationException), which
// consumers retry after finding the coordinator again, not
// NOT_ENOUGH_REPLICAS, which the Java consumer's commit takes as fatal.
func TestOffsetCommitNotEnoughReplicas(t *testing.T) {
	n := sluicetest.Start(t, "min.insync.replicas=2", "group.initial.rebalance.delay.ms=0")
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	findGroupCoordinator(t, c, "short")
	if got := offsetCommitCode(t, c, 8, "short", "", -1); got != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit without enough in-sync replicas: %s, want %s", codeName(got), codeName(kerr.CoordinatorNotAvailable.Code))
	}
}

// TestListOffsetsSpecialTimestampVersions: a negative timestamp is one of
// the special ones, each from the version that brought it (-3 v7, -4 v8,
// -5 v9), or UNSUPPORTED_VERSION, before the partition is even looked up,
// as Kafka's ReplicaManager.fetchOffset answers
// (isListOffsetsTimestampUnsupported).
func TestListOffsetsSpecialTimestampVersions(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
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

// TestConsumerGroupHeartbeatValidation: a static member's leave (epoch -2)
// without its instance id, and a join without a subscription, are refused
// before the group is looked up, with the messages of Kafka's
// GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid.
func TestConsumerGroupHeartbeatValidation(t *testing.T) {
	n := groupNode(t)
	c := dialRawConn(t, n.Addr())
	findGroupCoordinator(t, c, "cg-valid")
	for _, tc := range []struct {
		name    string
		modify  func(*kmsg.ConsumerGroupHeartbeatRequest)
		message string
	}{
		{"static leave without instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch = -2
		}, "InstanceId can't be null."},
		{"join without subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames = nil
		}, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
	} {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "cg-valid", "member-1", 30000
		req.SubscribedTopicNames = []string{"codes-t"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		tc.modify(req)
		_, r := c.do(req)
		resp := r.(*kmsg.ConsumerGroupHeartbeatResponse)
		if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != tc.message {
			msg := "<nil>"
			if resp.ErrorMessage != nil {
				msg = *resp.ErrorMessage
			}
			t.Errorf("%s: %s %q, want INVALID_REQUEST %q", tc.name, codeName(resp.ErrorCode), msg, tc.message)
		}
	}
}

// TestConfigResourceNames: config resources are checked as Kafka checks
// them. A topic name that cannot be a topic is INVALID_TOPIC_EXCEPTION,
// not UNKNOWN_TOPIC_OR_PARTITION (Topic.validate in ConfigHelper and
// ControllerConfigurationValidator); altering the empty topic name is
// INVALID_REQUEST ("Default topic resources are not allowed."); and a
// broker-logger resource must name this broker (ConfigHelper).
func TestConfigResourceNames(t *testing.T) {
	n := groupNode(t)
	c := dialRawConn(t, n.Addr())
	long := strings.Repeat("x", 250)
	for _, tc := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		want int16
	}{
		{kmsg.ConfigResourceTypeTopic, "bad/name", kerr.InvalidTopicException.Code},
		{kmsg.ConfigResourceTypeTopic, "..", kerr.InvalidTopicException.Code},
		{kmsg.ConfigResourceTypeTopic, long, kerr.InvalidTopicException.Code},
		{kmsg.ConfigResourceTypeTopic, "", kerr.InvalidTopicException.Code},
		{kmsg.ConfigResourceTypeTopic, "missing-t", kerr.UnknownTopicOrPartition.Code},
		{kmsg.ConfigResourceTypeBrokerLogger, "1", 0},
		{kmsg.ConfigResourceTypeBrokerLogger, "", kerr.InvalidRequest.Code},
		{kmsg.ConfigResourceTypeBrokerLogger, "7", kerr.InvalidRequest.Code},
		{kmsg.ConfigResourceTypeBrokerLogger, "x", kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = tc.typ, tc.name
		req.Resources = append(req.Resources, rr)
		_, r := c.do(req)
		if got := r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode; got != tc.want {
			t.Errorf("describe %v %.20q: %s, want %s", tc.typ, tc.name, codeName(got), codeName(tc.want))
		}
	}
	for _, tc := range []struct {
		name string
		want int16
	}{
		{"bad/name", kerr.InvalidTopicException.Code},
		{"", kerr.InvalidRequest.Code},
		{"missing-t", kerr.UnknownTopicOrPartition.Code},
	} {
		inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
		inc.Version = 1
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, tc.name
		ir.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}
		inc.Resources = append(inc.Resources, ir)
		_, r := c.do(inc)
		if got := r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; got != tc.want {
			t.Errorf("incremental alter topic %q: %s, want %s", tc.name, codeName(got), codeName(tc.want))
		}
		alt := kmsg.NewPtrAlterConfigsRequest()
		alt.Version = 2
		ar := kmsg.NewAlterConfigsRequestResource()
		ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, tc.name
		ar.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}
		alt.Resources = append(alt.Resources, ar)
		_, r = c.do(alt)
		if got := r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode; got != tc.want {
			t.Errorf("alter topic %q: %s, want %s", tc.name, codeName(got), codeName(tc.want))
		}
	}
}

// TestAddOffsetsToTxnEmptyGroupID: Kafka's AddOffsetsToTxn adds the empty
// group id's __consumer_offsets partition like any other
// (KafkaApis.handleAddOffsetsToTxnRequest checks no group name); it is
// TxnOffsetCommit that refuses the empty id, with INVALID_GROUP_ID.
func TestAddOffsetsToTxnEmptyGroupID(t *testing.T) {
	n := groupNode(t)
	c := dialRawConn(t, n.Addr())
	findTxnCoordinator(t, c, "tx-empty-group")
	findGroupCoordinator(t, c, "")
	var pid int64
	var epoch int16
	for range 100 {
		init := kmsg.NewPtrInitProducerIDRequest()
		init.Version = 4
		init.TransactionalID = kmsg.StringPtr("tx-empty-group")
		init.TransactionTimeoutMillis = 60000
		init.ProducerID, init.ProducerEpoch = -1, -1
		_, r := c.do(init)
		resp := r.(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode == 0 {
			pid, epoch = resp.ProducerID, resp.ProducerEpoch
			break
		}
		if !kerr.IsRetriable(kerr.ErrorForCode(resp.ErrorCode)) {
			t.Fatalf("init producer id: %s", codeName(resp.ErrorCode))
		}
		time.Sleep(50 * time.Millisecond)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "tx-empty-group", pid, epoch, ""
	_, r := c.do(add)
	if got := r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode; got != 0 {
		t.Fatalf("add offsets of the empty group id: %s, want NONE", codeName(got))
	}
}

// TestFetchIncrementalWithoutSession: sluice offers no fetch sessions
// (every answer's SessionID is 0), so an incremental fetch (SessionEpoch
// other than 0 or -1) names a session it does not have: Kafka's
// FetchManager.newContext answers FETCH_SESSION_ID_NOT_FOUND at the top
// level with no partitions, and the client falls back to a full fetch. A
// full fetch (epoch 0 or -1) is served whatever session id it names.
func TestFetchIncrementalWithoutSession(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
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
		if tc.want == 0 && (len(resp.Topics) != 1 || resp.SessionID != 0) {
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
	describe := func(node int) kmsg.DescribeProducersResponseTopicPartition {
		rc := dialRawConn(t, c.Node(node).Addr())
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
	if p := describe(3); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("broker without a replica: %s, want NOT_LEADER_OR_FOLLOWER", codeName(p.ErrorCode))
	}
}

// TestAdminErrorMessages: the messages a CLI prints for a missing topic or
// partition in ElectLeaders and AlterPartitionReassignments, a cancel with
// nothing to cancel, and a consumer-group heartbeat to a missing group are
// Kafka's (ReplicationControlManager.electLeader and
// alterPartitionReassignment, Errors.NO_REASSIGNMENT_IN_PROGRESS,
// GroupMetadataManager.getOrMaybeCreateConsumerGroup).
func TestAdminErrorMessages(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	msg := func(m *string) string {
		if m == nil {
			return "<nil>"
		}
		return *m
	}
	check := func(what string, code int16, m *string, wantCode int16, want string) {
		t.Helper()
		if code != wantCode || msg(m) != want {
			t.Errorf("%s: %s %q, want %s %q", what, codeName(code), msg(m), codeName(wantCode), want)
		}
	}

	elect := kmsg.NewPtrElectLeadersRequest()
	elect.Version = 2
	elect.TimeoutMillis = 10000
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "missing-t", Partitions: []int32{0}}, {Topic: "codes-t", Partitions: []int32{7}}}
	_, r := c.do(elect)
	er := r.(*kmsg.ElectLeadersResponse)
	if len(er.Topics) != 2 {
		t.Fatalf("elect leaders: %d topics", len(er.Topics))
	}
	p := er.Topics[0].Partitions[0]
	check("elect missing topic", p.ErrorCode, p.ErrorMessage, kerr.UnknownTopicOrPartition.Code, "No such topic as missing-t")
	p = er.Topics[1].Partitions[0]
	check("elect missing partition", p.ErrorCode, p.ErrorMessage, kerr.UnknownTopicOrPartition.Code, "No such partition as codes-t-7")

	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	alter.TimeoutMillis = 10000
	alter.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{
		{Topic: "missing-t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}}},
		{Topic: "codes-t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 7}, {Partition: 0}}},
	}
	_, r = c.do(alter)
	ar := r.(*kmsg.AlterPartitionAssignmentsResponse)
	if len(ar.Topics) != 2 || len(ar.Topics[1].Partitions) != 2 {
		t.Fatalf("alter reassignments: %+v", ar)
	}
	ap := ar.Topics[0].Partitions[0]
	check("reassign missing topic", ap.ErrorCode, ap.ErrorMessage, kerr.UnknownTopicOrPartition.Code, "Unable to find a topic named missing-t.")
	ap = ar.Topics[1].Partitions[0]
	check("reassign missing partition", ap.ErrorCode, ap.ErrorMessage, kerr.UnknownTopicOrPartition.Code, "Unable to find partition codes-t:7.")
	ap = ar.Topics[1].Partitions[1]
	check("cancel without reassignment", ap.ErrorCode, ap.ErrorMessage, kerr.NoReassignmentInProgress.Code, "No partition reassignment is in progress.")

	findGroupCoordinator(t, c, "cg-missing")
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version = 1
	hb.Group, hb.MemberID, hb.MemberEpoch = "cg-missing", "member-1", 3
	_, r = c.do(hb)
	hr := r.(*kmsg.ConsumerGroupHeartbeatResponse)
	check("heartbeat to a missing consumer group", hr.ErrorCode, hr.ErrorMessage, kerr.GroupIDNotFound.Code, "Consumer group cg-missing not found.")
}

// TestCreateTopicsRepeatedAssignment: a manual assignment that names a
// partition twice is INVALID_REPLICA_ASSIGNMENT, as Kafka's
// ReplicationControlManager.createTopic answers ("Found multiple manual
// partition assignments for partition 0"), and nothing is created; sluice
// took the last of them.
func TestCreateTopicsRepeatedAssignment(t *testing.T) {
	n := groupNode(t)
	c := dialRawConn(t, n.Addr())
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "repeated-asg", -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{
		{Partition: 0, Replicas: []int32{1}},
		{Partition: 0, Replicas: []int32{1}},
	}
	req.Topics = append(req.Topics, rt)
	_, r := c.do(req)
	st := r.(*kmsg.CreateTopicsResponse).Topics[0]
	want := "Found multiple manual partition assignments for partition 0"
	if st.ErrorCode != kerr.InvalidReplicaAssignment.Code || st.ErrorMessage == nil || *st.ErrorMessage != want {
		t.Fatalf("repeated partition: %s %v, want INVALID_REPLICA_ASSIGNMENT %q", codeName(st.ErrorCode), st.ErrorMessage, want)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.AllowAutoTopicCreation = false
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("repeated-asg")}}
	_, r = c.do(md)
	if mt := r.(*kmsg.MetadataResponse).Topics[0]; mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("the refused topic exists: %s", codeName(mt.ErrorCode))
	}
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

// TestIncrementalAlterConfigsListOpMessages: APPEND or SUBTRACT on a topic
// config that is not a list carries the message of Kafka's
// ConfigurationControlManager; on a broker config, that of its
// ConfigAdminManager. Both are INVALID_CONFIG.
func TestIncrementalAlterConfigsListOpMessages(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	for _, tc := range []struct {
		typ        kmsg.ConfigResourceType
		name, key  string
		op         kmsg.IncrementalAlterConfigOp
		wantPrefix string
	}{
		{kmsg.ConfigResourceTypeTopic, "codes-t", "retention.ms", kmsg.IncrementalAlterConfigOpAppend, "Can't APPEND to key retention.ms because its type is not LIST."},
		{kmsg.ConfigResourceTypeTopic, "codes-t", "retention.ms", kmsg.IncrementalAlterConfigOpSubtract, "Can't SUBTRACT to key retention.ms because its type is not LIST."},
		{kmsg.ConfigResourceTypeBroker, "1", "log.retention.ms", kmsg.IncrementalAlterConfigOpAppend, "Config value append is not allowed for config key: log.retention.ms"},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = 1
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = tc.typ, tc.name
		rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: tc.key, Op: tc.op, Value: kmsg.StringPtr("1000")}}
		req.Resources = append(req.Resources, rr)
		_, r := c.do(req)
		res := r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		if res.ErrorCode != kerr.InvalidConfig.Code || res.ErrorMessage == nil || *res.ErrorMessage != tc.wantPrefix {
			msg := "<nil>"
			if res.ErrorMessage != nil {
				msg = *res.ErrorMessage
			}
			t.Errorf("%v %s %v: %s %q, want INVALID_CONFIG %q", tc.typ, tc.key, tc.op, codeName(res.ErrorCode), msg, tc.wantPrefix)
		}
	}
}

// TestDeleteTopicsDisabledByVersion: with delete.topic.enable=false Kafka's
// ControllerApis.deleteTopics answers INVALID_REQUEST ("Topic deletion is
// disabled.") before v3, which has no TOPIC_DELETION_DISABLED, and
// TOPIC_DELETION_DISABLED from v3.
func TestDeleteTopicsDisabledByVersion(t *testing.T) {
	n := sluicetest.Start(t, "delete.topic.enable=false")
	createTopic(t, n, "codes-t", 1, nil)
	c := dialRawConn(t, n.Addr())
	for _, tc := range []struct {
		v    int16
		want int16
	}{
		{1, kerr.InvalidRequest.Code},
		{2, kerr.InvalidRequest.Code},
		{3, kerr.TopicDeletionDisabled.Code},
		{6, kerr.TopicDeletionDisabled.Code},
	} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = tc.v
		req.TimeoutMillis = 10000
		req.TopicNames = []string{"codes-t"}
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("codes-t")}}
		_, r := c.do(req)
		resp := r.(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != tc.want {
			got := "no topic"
			if len(resp.Topics) > 0 {
				got = codeName(resp.Topics[0].ErrorCode)
			}
			t.Errorf("v%d: %s, want %s", tc.v, got, codeName(tc.want))
		}
	}
}

// TestCreatePartitionsNoIncreaseMessages: a CreatePartitions count that is
// not an increase is INVALID_PARTITIONS with the messages of Kafka's KRaft
// controller (ReplicationControlManager.createPartitions), not those of
// the old ZooKeeper admin code.
func TestCreatePartitionsNoIncreaseMessages(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes-t", 2, nil)
	c := dialRawConn(t, n.Addr())
	for _, tc := range []struct {
		count int32
		want  string
	}{
		{2, "Topic already has 2 partition(s)."},
		{1, "The topic codes-t currently has 2 partition(s); 1 would not be an increase."},
	} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version = 3
		req.TimeoutMillis = 10000
		req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "codes-t", Count: tc.count}}
		_, r := c.do(req)
		st := r.(*kmsg.CreatePartitionsResponse).Topics[0]
		if st.ErrorCode != kerr.InvalidPartitions.Code || st.ErrorMessage == nil || *st.ErrorMessage != tc.want {
			msg := "<nil>"
			if st.ErrorMessage != nil {
				msg = *st.ErrorMessage
			}
			t.Errorf("count %d: %s %q, want INVALID_PARTITIONS %q", tc.count, codeName(st.ErrorCode), msg, tc.want)
		}
	}
}
