package broker_test

// Error paths compared with Kafka's (issue 15): each test sends the request a client
// (or a confused one) sends and checks the error code Kafka 4.x answers,
// on one connection so that no client-side retry or routing hides it.

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// whileLoading calls send until its code is neither
// COORDINATOR_LOAD_IN_PROGRESS nor NOT_COORDINATOR, as a client retries
// while a coordinator partition it just found is still being loaded, and
// returns the last code.
func whileLoading(send func() int16) int16 {
	var code int16
	for range 200 {
		code = send()
		if code != kerr.CoordinatorLoadInProgress.Code && code != kerr.NotCoordinator.Code {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return code
}

// codeName names an error code for a failure message.
func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).Error()
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
	var resp *kmsg.DescribeTransactionsResponse
	whileLoading(func() int16 {
		_, r := c.do(req)
		resp = r.(*kmsg.DescribeTransactionsResponse)
		if len(resp.TransactionStates) != 2 {
			return 0
		}
		return resp.TransactionStates[1].ErrorCode
	})
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
	// COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR while __consumer_offsets
	// starts: FindCoordinator can answer at once while the group's partition
	// is still loading, so a retriable answer waits before asking again.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
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
			time.Sleep(20 * time.Millisecond)
		default:
			t.Fatalf("join: %s", codeName(resp.ErrorCode))
		}
		findGroupCoordinator(t, c, group)
	}
	t.Fatal("join: no answer in 30 s")
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
// v and returns the partition's error code, once the group's partition is
// loaded.
func offsetCommitCode(t *testing.T, c *rawConn, v int16, group, member string, generation int32) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = v
	req.Group, req.MemberID, req.Generation = group, member, generation
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Offset = 1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "codes-t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
	return whileLoading(func() int16 {
		_, r := c.do(req)
		return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	})
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
