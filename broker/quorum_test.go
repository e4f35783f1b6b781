package broker_test

// The quorum and cluster tools' APIs (quorum.go): DescribeQuorum,
// UnregisterBroker, AddRaftVoter and RemoveRaftVoter, sent with franz-go to
// chosen nodes of real clusters, so that forwarding to the active
// controller is exercised as well as the controller's answer.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluicedev/sluice/sluicetest"
)

// quorumRequest sends req to node id itself (not to whichever broker the
// client would pick) and returns the answer.
func quorumRequest(t *testing.T, cl *kgo.Client, id int, req kmsg.Request) kmsg.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.Broker(id).Request(ctx, req)
	if err != nil {
		t.Fatalf("%T to node %d: %v", req, id, err)
	}
	return resp
}

// describeQuorum asks node id for the metadata quorum at version v and
// returns the answer's one partition, failing on any error code.
func describeQuorum(t *testing.T, cl *kgo.Client, id int, v int16) (*kmsg.DescribeQuorumResponse, kmsg.DescribeQuorumResponseTopicPartition) {
	t.Helper()
	resp, p, err := tryDescribeQuorum(cl, id, v)
	if err != nil {
		t.Fatal(err)
	}
	return resp, p
}

// tryDescribeQuorum is describeQuorum returning its failure, for polling.
func tryDescribeQuorum(cl *kgo.Client, id int, v int16) (*kmsg.DescribeQuorumResponse, kmsg.DescribeQuorumResponseTopicPartition, error) {
	var p kmsg.DescribeQuorumResponseTopicPartition
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = v
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kresp, err := cl.Broker(id).Request(ctx, req)
	if err != nil {
		return nil, p, fmt.Errorf("DescribeQuorum via node %d: %w", id, err)
	}
	resp := kresp.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, p, fmt.Errorf("DescribeQuorum via node %d: %w", id, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, p, fmt.Errorf("DescribeQuorum via node %d: %d topics, want one partition", id, len(resp.Topics))
	}
	p = resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return nil, p, fmt.Errorf("DescribeQuorum via node %d: partition: %w", id, err)
	}
	return resp, p, nil
}

func replicaIDs(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) []int32 {
	var ids []int32
	for _, r := range rs {
		ids = append(ids, r.ReplicaID)
	}
	return ids
}

// A lone broker is a quorum of one voter, itself, leading at a positive
// epoch; removing its only voter is refused and an unknown node cannot be
// added.
func TestDescribeQuorumLoneBroker(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client()
	_, p := describeQuorum(t, cl, 1, 2)
	if p.LeaderID != 1 || p.LeaderEpoch < 1 || p.HighWatermark < 1 {
		t.Fatalf("leader %d epoch %d high watermark %d, want node 1 at a positive epoch and watermark", p.LeaderID, p.LeaderEpoch, p.HighWatermark)
	}
	if got := replicaIDs(p.CurrentVoters); !slices.Equal(got, []int32{1}) || len(p.Observers) != 0 {
		t.Fatalf("voters %v observers %v, want [1] and none", got, replicaIDs(p.Observers))
	}
	if v := p.CurrentVoters[0]; v.LogEndOffset < p.HighWatermark || v.LastCaughtUpTimestamp <= 0 || v.ReplicaDirectoryID == ([16]byte{}) {
		t.Fatalf("leader's row %+v: want its log end at or past the watermark %d, a caught-up time and a directory id", v, p.HighWatermark)
	}

	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.VoterID = 1
	// Kafka 4.4 refuses the zero directory id, then sluice the only voter.
	if r := quorumRequest(t, cl, 1, rm).(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != kerr.InvalidRequest.Code ||
		deref(r.ErrorMessage) != "Remove voter request didn't include a valid voter" {
		t.Fatalf("removing a voter without directory id: %v %q, want INVALID_REQUEST", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	rm.VoterDirectoryID = p.CurrentVoters[0].ReplicaDirectoryID
	if code := quorumRequest(t, cl, 1, rm).(*kmsg.RemoveRaftVoterResponse).ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("removing the only voter: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID = 2
	add.VoterDirectoryID = [16]byte{2}
	add.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093}}
	if code := quorumRequest(t, cl, 1, add).(*kmsg.AddRaftVoterResponse).ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("adding a node that does not exist: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
	un := kmsg.NewPtrUnregisterBrokerRequest()
	un.BrokerID = 7
	if code := quorumRequest(t, cl, 1, un).(*kmsg.UnregisterBrokerResponse).ErrorCode; code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregistering an unknown broker: %v, want BROKER_ID_NOT_REGISTERED", kerr.ErrorForCode(code))
	}
}

// On four nodes (voters 1-3, node 4 a broker) DescribeQuorum from any node
// shows the active controller's view: the three voters with their
// controller listeners and caught-up log ends, node 4 as observer. Then a
// dead voter is replaced while a producer writes: node 4 is added as a
// voter and the dead one removed (a wrong directory id first, which is
// VOTER_NOT_FOUND), both through a node that is not the controller; the
// quorum survives the loss of the controller afterwards, with node 4
// voting, and the dead broker is unregistered.
func TestQuorumReplaceDeadVoter(t *testing.T) {
	const topic = "quorum-replace"
	c := sluicetest.StartCluster(t, 4)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	ctrl := c.Controller()

	// Every voter reports its log end in its heartbeats; wait until the
	// controller has heard from each and all have caught up.
	var p kmsg.DescribeQuorumResponseTopicPartition
	var resp *kmsg.DescribeQuorumResponse
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		var err error
		if resp, p, err = tryDescribeQuorum(cl, 4, 2); err != nil {
			return err
		}
		for _, r := range append(slices.Clone(p.CurrentVoters), p.Observers...) {
			if r.LogEndOffset < 1 || r.LastFetchTimestamp <= 0 || r.LastCaughtUpTimestamp <= 0 {
				return fmt.Errorf("replica %d: log end %d, last fetch %d, last caught up %d", r.ReplicaID, r.LogEndOffset, r.LastFetchTimestamp, r.LastCaughtUpTimestamp)
			}
		}
		return nil
	})
	if p.LeaderID != int32(ctrl) || p.LeaderEpoch < 1 || p.HighWatermark < 1 {
		t.Fatalf("leader %d epoch %d watermark %d; the controller is %d", p.LeaderID, p.LeaderEpoch, p.HighWatermark, ctrl)
	}
	if got := replicaIDs(p.CurrentVoters); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("voters %v, want [1 2 3]", got)
	}
	if got := replicaIDs(p.Observers); !slices.Equal(got, []int32{4}) {
		t.Fatalf("observers %v, want [4]", got)
	}
	if len(resp.Nodes) != 3 {
		t.Fatalf("%d nodes, want the three voters", len(resp.Nodes))
	}
	for _, n := range resp.Nodes {
		if len(n.Listeners) != 1 || n.Listeners[0].Name != "CONTROLLER" || n.Listeners[0].Port == 0 {
			t.Fatalf("node %d listeners %+v, want its CONTROLLER listener", n.NodeID, n.Listeners)
		}
	}
	// v0 has no timestamps but the same quorum.
	v0 := kversion.Stable()
	v0.SetMaxKeyVersion(55, 0)
	if _, p0 := describeQuorum(t, clusterClient(c, kgo.MaxVersions(v0)), 1, 0); p0.LeaderID != p.LeaderID || len(p0.CurrentVoters) != 3 ||
		p0.CurrentVoters[0].LastFetchTimestamp != -1 {
		t.Fatalf("v0: leader %d voters %+v, want the same leader and voters without timestamps", p0.LeaderID, p0.CurrentVoters)
	}

	createAssigned(t, cl, topic, []int32{1, 2, 4}, nil)
	bp := startProducer(cl, topic)

	// A voter that is not the controller dies.
	victim := 3
	if ctrl == 3 {
		victim = 2
	}
	var victimDir [16]byte
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == int32(victim) {
			victimDir = v.ReplicaDirectoryID
		}
	}
	c.Kill(victim)
	via := 4 // never the controller: it is no voter yet

	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID = 4
	add.VoterDirectoryID = [16]byte{4}
	add.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}
	if r := quorumRequest(t, cl, via, add).(*kmsg.AddRaftVoterResponse); r.ErrorCode != 0 {
		t.Fatalf("AddRaftVoter 4: %v %s", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	if code := quorumRequest(t, cl, via, add).(*kmsg.AddRaftVoterResponse).ErrorCode; code != kerr.DuplicateVoter.Code {
		t.Fatalf("adding voter 4 again: %v, want DUPLICATE_VOTER", kerr.ErrorForCode(code))
	}
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.VoterID = int32(victim)
	rm.VoterDirectoryID = [16]byte{1}
	if code := quorumRequest(t, cl, via, rm).(*kmsg.RemoveRaftVoterResponse).ErrorCode; code != kerr.VoterNotFound.Code {
		t.Fatalf("removing voter %d with a wrong directory id: %v, want VOTER_NOT_FOUND", victim, kerr.ErrorForCode(code))
	}
	rm.VoterDirectoryID = victimDir
	if r := quorumRequest(t, cl, via, rm).(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != 0 {
		t.Fatalf("RemoveRaftVoter %d: %v %s", victim, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	want := []int32{1, 2, 4}
	if victim == 2 {
		want = []int32{1, 3, 4}
	}
	if _, p := describeQuorum(t, cl, via, 2); !slices.Equal(replicaIDs(p.CurrentVoters), want) {
		t.Fatalf("voters after the replacement %v, want %v", replicaIDs(p.CurrentVoters), want)
	}

	// The controller goes too: the two voters left, node 4 one of them,
	// elect another, and admin requests reach it from any node.
	c.Kill(ctrl)
	var next int
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		_, p, err := tryDescribeQuorum(cl, 4, 2)
		if err != nil {
			return err
		}
		if p.LeaderID == int32(ctrl) || !slices.Contains(want, p.LeaderID) {
			return fmt.Errorf("leader %d", p.LeaderID)
		}
		next = int(p.LeaderID)
		return nil
	})
	other := slices.DeleteFunc(slices.Clone(want), func(id int32) bool { return id == int32(ctrl) || id == int32(next) })
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic+"-after", 1, 2
	ct.Topics = append(ct.Topics, rt)
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kr, err := cl.Broker(int(other[0])).Request(ctx, ct)
		if err != nil {
			return err
		}
		r := kr.(*kmsg.CreateTopicsResponse)
		if err := kerr.ErrorForCode(r.Topics[0].ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
			return fmt.Errorf("CreateTopics through node %d with node %d controlling: %w", other[0], next, err)
		}
		return nil
	})
	acked := bp.finish(t)
	if len(acked) == 0 {
		t.Fatal("the producer had nothing acknowledged")
	}

	// The dead voter's registration goes; asking again is an error.
	un := kmsg.NewPtrUnregisterBrokerRequest()
	un.BrokerID = int32(victim)
	if r := quorumRequest(t, cl, 4, un).(*kmsg.UnregisterBrokerResponse); r.ErrorCode != 0 {
		t.Fatalf("UnregisterBroker %d: %v %s", victim, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	if code := quorumRequest(t, cl, 4, un).(*kmsg.UnregisterBrokerResponse).ErrorCode; code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregistering broker %d again: %v, want BROKER_ID_NOT_REGISTERED", victim, kerr.ErrorForCode(code))
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.Version, dc.IncludeFencedBrokers = 2, true
	for _, b := range quorumRequest(t, cl, 4, dc).(*kmsg.DescribeClusterResponse).Brokers {
		if b.NodeID == int32(victim) {
			t.Fatalf("DescribeCluster still lists unregistered broker %d", victim)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Removing the active controller from the voters (after node 4 joined
// them, so three remain) moves leadership to another voter; the old
// controller keeps running as a broker and replicates the metadata log
// again as an observer, and what the new controller decides reaches it.
func TestQuorumRemoveActiveController(t *testing.T) {
	c := sluicetest.StartCluster(t, 4)
	cl := clusterClient(c)
	ctrl := c.Controller()
	var p0 kmsg.DescribeQuorumResponseTopicPartition
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		_, p, err := tryDescribeQuorum(cl, 4, 2)
		if err != nil {
			return err
		}
		p0 = p
		if len(p.Observers) != 1 || p.Observers[0].LastCaughtUpTimestamp <= 0 {
			return fmt.Errorf("observers %+v, want node 4 caught up", p.Observers)
		}
		return nil
	})
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID = 4
	add.VoterDirectoryID = [16]byte{4}
	add.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}
	if r := quorumRequest(t, cl, 4, add).(*kmsg.AddRaftVoterResponse); r.ErrorCode != 0 {
		t.Fatalf("AddRaftVoter 4: %v %s", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.VoterID = int32(ctrl)
	for _, v := range p0.CurrentVoters {
		if v.ReplicaID == int32(ctrl) {
			rm.VoterDirectoryID = v.ReplicaDirectoryID
		}
	}
	if r := quorumRequest(t, cl, 4, rm).(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != 0 {
		t.Fatalf("RemoveRaftVoter %d (the controller): %v %s", ctrl, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		_, p, err := tryDescribeQuorum(cl, 4, 2)
		if err != nil {
			return err
		}
		if p.LeaderID == int32(ctrl) || slices.Contains(replicaIDs(p.CurrentVoters), int32(ctrl)) || len(p.CurrentVoters) != 3 {
			return fmt.Errorf("leader %d voters %v", p.LeaderID, replicaIDs(p.CurrentVoters))
		}
		if !slices.Equal(replicaIDs(p.Observers), []int32{int32(ctrl)}) {
			return fmt.Errorf("observers %v, want the old controller %d", replicaIDs(p.Observers), ctrl)
		}
		for _, o := range p.Observers {
			if o.LastCaughtUpTimestamp <= 0 {
				return fmt.Errorf("old controller %d has not caught up as an observer", ctrl)
			}
		}
		return nil
	})
	// A topic created now is known to the old controller's broker.
	const topic = "quorum-after-removal"
	createAssigned(t, cl, topic, []int32{int32(ctrl)}, nil)
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		kr, err := cl.Broker(ctrl).Request(ctx, req)
		if err != nil {
			return err
		}
		m := kr.(*kmsg.MetadataResponse)
		if len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || len(m.Topics[0].Partitions) != 1 || m.Topics[0].Partitions[0].Leader != int32(ctrl) {
			return fmt.Errorf("node %d's metadata for %s: %+v", ctrl, topic, m.Topics)
		}
		return nil
	})
}

// Under the authorizer DescribeQuorum needs DESCRIBE on the cluster and
// the other three ALTER, as Kafka's ControllerApis asks; without them each
// is answered CLUSTER_AUTHORIZATION_FAILED and changes nothing.
func TestQuorumAPIsAuthorized(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	cl := n.Client()
	_, p := describeQuorum(t, cl, 1, 2) // no ACL names the cluster yet
	dir := p.CurrentVoters[0].ReplicaDirectoryID
	// In one request, since CreateAcls itself needs ALTER on the cluster:
	// only User:admin may DESCRIBE or ALTER it from now on.
	createACLsAtOnce(t, cl, aclEntry{kmsg.ACLResourceTypeCluster, "kafka-cluster", "User:admin",
		[]kmsg.ACLOperation{kmsg.ACLOperationDescribe, kmsg.ACLOperationAlter}})

	dq := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	dq.Topics = append(dq.Topics, rt)
	if code := quorumRequest(t, cl, 1, dq).(*kmsg.DescribeQuorumResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("DescribeQuorum without DESCRIBE: %v", kerr.ErrorForCode(code))
	}
	un := kmsg.NewPtrUnregisterBrokerRequest()
	un.BrokerID = 1
	if code := quorumRequest(t, cl, 1, un).(*kmsg.UnregisterBrokerResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("UnregisterBroker without ALTER: %v", kerr.ErrorForCode(code))
	}
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID, add.VoterDirectoryID = 2, [16]byte{2}
	add.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}
	if code := quorumRequest(t, cl, 1, add).(*kmsg.AddRaftVoterResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("AddRaftVoter without ALTER: %v", kerr.ErrorForCode(code))
	}
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.VoterID, rm.VoterDirectoryID = 1, dir
	if code := quorumRequest(t, cl, 1, rm).(*kmsg.RemoveRaftVoterResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("RemoveRaftVoter without ALTER: %v", kerr.ErrorForCode(code))
	}
	if m := quorumRequest(t, cl, 1, kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(m.Brokers) != 1 {
		t.Fatalf("Metadata lists %d brokers after a refused UnregisterBroker, want 1", len(m.Brokers))
	}
}

// A dead broker that is no voter is unregistered through another node: it
// leaves DescribeCluster and the quorum's observers. (sluicetest's Kill
// leaves serf gracefully, which takes a non-voter out of raft already; a
// kill -9 leaves it there until UnregisterBroker removes it.) A live broker
// unregistered registers again at once (Kafka's is left unregistered until
// it restarts) and keeps serving.
func TestUnregisterBroker(t *testing.T) {
	c := sluicetest.StartCluster(t, 5)
	cl := clusterClient(c)
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		_, p, err := tryDescribeQuorum(cl, 1, 2)
		if err != nil {
			return err
		}
		if got := replicaIDs(p.Observers); !slices.Equal(got, []int32{4, 5}) {
			return fmt.Errorf("observers %v, want [4 5]", got)
		}
		return nil
	})
	c.Kill(5)
	listed := func(id int32) bool {
		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.Version, dc.IncludeFencedBrokers = 2, true
		for _, b := range quorumRequest(t, cl, 2, dc).(*kmsg.DescribeClusterResponse).Brokers {
			if b.NodeID == id {
				return true
			}
		}
		return false
	}
	un := kmsg.NewPtrUnregisterBrokerRequest()
	un.BrokerID = 5
	if r := quorumRequest(t, cl, 4, un).(*kmsg.UnregisterBrokerResponse); r.ErrorCode != 0 {
		t.Fatalf("UnregisterBroker 5: %v %s", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if listed(5) {
			return fmt.Errorf("DescribeCluster still lists broker 5")
		}
		_, p, err := tryDescribeQuorum(cl, 4, 2)
		if err != nil {
			return err
		}
		if got := replicaIDs(p.Observers); !slices.Equal(got, []int32{4}) {
			return fmt.Errorf("observers %v, want [4]", got)
		}
		return nil
	})

	// Node 4 is alive: unregistered, it is back at its next heartbeat,
	// unfenced, and leads what is placed on it.
	un.BrokerID = 4
	if r := quorumRequest(t, cl, 1, un).(*kmsg.UnregisterBrokerResponse); r.ErrorCode != 0 {
		t.Fatalf("UnregisterBroker 4: %v %s", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		if !listed(4) {
			return fmt.Errorf("broker 4 not registered again")
		}
		_, p, err := tryDescribeQuorum(cl, 4, 2)
		if err != nil {
			return err
		}
		if got := replicaIDs(p.Observers); !slices.Equal(got, []int32{4}) {
			return fmt.Errorf("observers %v, want node 4 back", got)
		}
		return nil
	})
	// The unregistration and the new registration reach every node in
	// log order; a topic placed on node 4 alone is created once the
	// controller has it again.
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "unregistered-live", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = []int32{4}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	ct.Topics = append(ct.Topics, rt)
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		r := quorumRequest(t, cl, 1, ct).(*kmsg.CreateTopicsResponse)
		if err := kerr.ErrorForCode(r.Topics[0].ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
			return fmt.Errorf("create a topic on broker 4: %w", err)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "unregistered-live", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce to a partition on the re-registered broker 4: %v", err)
	}
}
