package groups

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsHB is one StreamsGroupHeartbeat of a test member: a join (epoch
// 0, with a topology reading "t" and a changelog when changelog is set)
// or a regular heartbeat owning active tasks of subtopology "0".
func streamsHB(member, process string, epoch int32, active []int32, changelog string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "sg", member, epoch
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 5000
		t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		sub.SubtopologyID, sub.SourceTopics = "0", []string{"t"}
		if changelog != "" {
			info := kmsg.NewTopicInfo()
			info.Topic = changelog
			cfg := kmsg.NewTopicInfoConfig()
			cfg.Key, cfg.Value = "cleanup.policy", "compact"
			info.Configs = []kmsg.TopicInfoConfig{cfg}
			sub.StateChangelogTopics = []kmsg.TopicInfo{info}
		}
		t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
		req.Topology = &t
		req.ProcessID = &process
		ep := kmsg.NewStreamsGroupHeartbeatRequestUserEndpoint()
		ep.Host, ep.Port = "h-"+process, 9000
		req.UserEndpoint = &ep
		req.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{{Key: "zone", Value: "a"}}
	}
	ids := kmsg.NewTaskIDs()
	ids.SubtopologyID, ids.Partitions = "0", active
	req.ActiveTasks = []kmsg.TaskIDs{}
	if len(active) > 0 {
		req.ActiveTasks = []kmsg.TaskIDs{ids}
	}
	req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return req
}

func streamsSettingsForTest() StreamsGroupSettings {
	return StreamsGroupSettings{SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second, DefaultReplicationFactor: 1}
}

// streamsBeat sends a heartbeat and returns the member's epoch and active
// partitions of subtopology "0" (nil when the answer carries no tasks).
func streamsBeat(t *testing.T, c *Coordinator, req *kmsg.StreamsGroupHeartbeatRequest) (int32, []int32) {
	t.Helper()
	resp, _ := c.StreamsHeartbeat(context.Background(), req, "client", "host", streamsSettingsForTest())
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat of %s@%d: %v (%v)", req.MemberID, req.MemberEpoch, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	if resp.ActiveTasks == nil {
		return resp.MemberEpoch, nil
	}
	out := []int32{}
	for _, ts := range resp.ActiveTasks {
		out = append(out, ts.Partitions...)
	}
	slices.Sort(out)
	return resp.MemberEpoch, out
}

func describeString(d kmsg.StreamsGroupDescribeResponseGroup) string {
	r := kmsg.StreamsGroupDescribeResponse{Version: 1, Groups: []kmsg.StreamsGroupDescribeResponseGroup{d}}
	return string(r.AppendTo(nil))
}

// TestStreamsGroupReload: a coordinator that replays __consumer_offsets
// gets the streams group back as it was (topology, epochs, members with
// their process, endpoint, tags and tasks, targets): the members carry on
// with their epochs and no new assignment, and a deleted group stays
// deleted.
func TestStreamsGroupReload(t *testing.T) {
	h := newConsumerHarness(t)
	c := h.c
	epochA, a := streamsBeat(t, c, streamsHB("a", "p1", 0, nil, ""))
	if !slices.Equal(a, []int32{0, 1, 2, 3}) {
		t.Fatalf("a lone member got %v", a)
	}
	epochB, _ := streamsBeat(t, c, streamsHB("b", "p2", 0, nil, ""))
	epochA, a2 := streamsBeat(t, c, streamsHB("a", "p1", epochA, a, ""))
	if len(a2) != 2 {
		t.Fatalf("a after b joined: %v", a2)
	}
	epochA, _ = streamsBeat(t, c, streamsHB("a", "p1", epochA, a2, ""))
	epochB, b := streamsBeat(t, c, streamsHB("b", "p2", epochB, nil, ""))
	if len(b) != 2 {
		t.Fatalf("b: %v", b)
	}
	before := c.StreamsDescribe("sg", 1, false)

	h.start() // a new coordinator replays the log
	after := h.c.StreamsDescribe("sg", 1, false)
	if describeString(before) != describeString(after) {
		t.Fatalf("after reload:\n%+v\nbefore:\n%+v", after, before)
	}
	e, got := streamsBeat(t, h.c, streamsHB("a", "p1", epochA, a2, ""))
	if e != epochA || got != nil {
		t.Fatalf("a after reload: epoch %d tasks %v, want epoch %d and no new tasks", e, got, epochA)
	}
	e, _ = streamsBeat(t, h.c, streamsHB("b", "p2", epochB, b, ""))
	if e != epochB {
		t.Fatalf("b after reload: epoch %d, want %d", e, epochB)
	}
	if d := h.c.StreamsDescribe("sg", 1, false); d.State != "Stable" || d.Topology == nil || len(d.Topology.Subtopologies) != 1 {
		t.Fatalf("describe after reload: %+v", d)
	}

	// Both leave; the group is deleted and does not come back.
	for _, m := range []struct {
		id    string
		epoch int32
	}{{"a", epochA}, {"b", epochB}} {
		req := streamsHB(m.id, "", -1, nil, "")
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = nil, nil, nil
		if resp, _ := h.c.StreamsHeartbeat(context.Background(), req, "c", "h", streamsSettingsForTest()); resp.ErrorCode != 0 {
			t.Fatalf("leave %s: %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	h.start()
	if d := h.c.StreamsDescribe("sg", 1, false); d.State != "Empty" {
		t.Fatalf("emptied group after reload: %+v", d)
	}
	if code := h.c.Delete(context.Background(), "sg"); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	h.start()
	if d := h.c.StreamsDescribe("sg", 1, false); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group after reload: %+v", d)
	}
}

// TestStreamsRecordsRoundTrip: every record value decodes to what was
// encoded.
func TestStreamsRecordsRoundTrip(t *testing.T) {
	inst, rack := "i1", "r1"
	m := &streamsMember{
		id: "m", instanceID: &inst, rackID: &rack, clientID: "cid", clientHost: "/1.2.3.4",
		processID: "proc", clientTags: map[string]string{"zone": "a", "rack": "b"},
		topologyEpoch: 3, rebalanceTimeout: 5 * time.Second,
		epoch: 7, previousEpoch: 6, state: memberUnrevokedPartitions,
		assigned: streamsTasks{active: tasksOf("0:1", "1:2"), standby: tasksOf("0:3")},
		pending:  streamsTasks{active: tasksOf("0:0")},
	}
	ep := kmsg.NewStreamsGroupHeartbeatRequestUserEndpoint()
	ep.Host, ep.Port = "host", 65000
	m.endpoint = &ep
	var got streamsMember
	if err := decodeStreamsMember(m.metadataValue(), &got); err != nil {
		t.Fatal(err)
	}
	if err := decodeStreamsCurrent(m.currentValue(), &got); err != nil {
		t.Fatal(err)
	}
	if *got.instanceID != inst || *got.rackID != rack || got.clientID != m.clientID || got.clientHost != m.clientHost ||
		got.processID != m.processID || !mapsEqual(got.clientTags, m.clientTags) || got.topologyEpoch != 3 ||
		got.rebalanceTimeout != m.rebalanceTimeout || got.endpoint.Host != "host" || got.endpoint.Port != 65000 ||
		got.epoch != 7 || got.previousEpoch != 6 || got.state != memberUnrevokedPartitions ||
		!got.assigned.equal(m.assigned) || !got.pending.equal(m.pending) {
		t.Fatalf("member round trip:\n%+v\nwant\n%+v", got, *m)
	}
	target := streamsTasks{active: tasksOf("0:0", "0:1"), warmup: tasksOf("1:1")}
	if back, err := decodeStreamsTargetMember(streamsTargetMemberValue(target)); err != nil || !back.equal(target) {
		t.Fatalf("target round trip: %v %v", back, err)
	}
	topo := streamsHB("x", "p", 0, nil, "cl").Topology
	topo.Epoch = 4
	topo.Subtopologies[0].CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0}}}
	back, err := decodeStreamsTopology(streamsTopologyValue(topo))
	if err != nil || fmt.Sprint(back) != fmt.Sprint(topo) {
		t.Fatalf("topology round trip: %v\n%+v\nwant\n%+v", err, back, topo)
	}
	for _, validated := range []int32{-1, 4} {
		epoch, hash, standbys, err := decodeStreamsMetadata(streamsMetadataValue(9, -42, validated, 2))
		if err != nil || epoch != 9 || hash != -42 || standbys != 2 {
			t.Fatalf("metadata round trip: %d %d %d %v", epoch, hash, standbys, err)
		}
	}
	for _, v := range []int16{17, 19, 20, 21, 22, 23} {
		key := groupKeyOf(v, "g")
		if isStreamsMemberKeyVersion(v) {
			key = memberKeyOf(v, "g", "m")
		}
		k, err := decodeKey(key)
		if err != nil || k.group != "g" || (isStreamsMemberKeyVersion(v) && k.member != "m") {
			t.Fatalf("key %d: %+v %v", v, k, err)
		}
	}
}

// TestStreamsTopologyEpochs: a member joining with a newer topology while
// another runs the group's is refused (STREAMS_INVALID_TOPOLOGY_EPOCH)
// and not added; once the group is empty a newer topology replaces the
// group's, and a member with an older one is told STALE_TOPOLOGY.
func TestStreamsTopologyEpochs(t *testing.T) {
	h := newConsumerHarness(t)
	c := h.c
	streamsBeat(t, c, streamsHB("a", "p1", 0, nil, ""))
	newer := streamsHB("b", "p2", 0, nil, "")
	newer.Topology.Epoch = 1
	resp, _ := c.StreamsHeartbeat(context.Background(), newer, "c", "h", streamsSettingsForTest())
	if resp.ErrorCode != kerr.StreamsInvalidTopologyEpoch.Code {
		t.Fatalf("newer topology with a member running: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if d := c.StreamsDescribe("sg", 1, false); len(d.Members) != 1 {
		t.Fatalf("the refused member was added: %+v", d.Members)
	}
	leave := streamsHB("a", "", -1, nil, "")
	leave.ActiveTasks, leave.StandbyTasks, leave.WarmupTasks = nil, nil, nil
	if resp, _ := c.StreamsHeartbeat(context.Background(), leave, "c", "h", streamsSettingsForTest()); resp.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	streamsBeat(t, c, newer)
	if d := c.StreamsDescribe("sg", 1, false); d.Topology == nil || d.Topology.Epoch != 1 {
		t.Fatalf("topology after the update: %+v", d.Topology)
	}
	resp, _ = c.StreamsHeartbeat(context.Background(), streamsHB("c", "p3", 0, nil, ""), "c", "h", streamsSettingsForTest())
	if resp.ErrorCode != 0 || len(resp.Status) == 0 || resp.Status[0].StatusCode != streamsStatusStaleTopology {
		t.Fatalf("older topology: %v %+v, want STALE_TOPOLOGY", kerr.ErrorForCode(resp.ErrorCode), resp.Status)
	}
}

// TestStreamsOffsetDelete: OffsetDelete on a streams group with members
// keeps the offsets of the topics its topology reads
// (GROUP_SUBSCRIBED_TO_TOPIC) and deletes the others'.
func TestStreamsOffsetDelete(t *testing.T) {
	h := newConsumerHarness(t)
	c := h.c
	h.topics["other"] = TopicInfo{Name: "other", ID: [16]byte{9}, Partitions: 1}
	epoch, _ := streamsBeat(t, c, streamsHB("a", "p1", 0, nil, ""))
	for _, topic := range []string{"t", "other"} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.MemberID, req.Generation = "sg", "a", epoch
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}}}
		if code := c.CommitOffsets(context.Background(), req).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("commit %s: %v", topic, kerr.ErrorForCode(code))
		}
	}
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "sg"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "other", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
	}
	resp := c.DeleteOffsets(context.Background(), del)
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code || resp.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetDelete: %+v", resp)
	}
}

// TestStreamsShutdownAndEndpoints: a member's ShutdownApplication is
// passed to every member as SHUTDOWN_APPLICATION; members learn the
// partitions of the source topic each endpoint holds (interactive
// queries) when their endpoint epoch is behind.
func TestStreamsShutdownAndEndpoints(t *testing.T) {
	h := newConsumerHarness(t)
	c := h.c
	ea, a := streamsBeat(t, c, streamsHB("a", "p1", 0, nil, ""))
	eb, _ := streamsBeat(t, c, streamsHB("b", "p2", 0, nil, ""))
	ea, a = streamsBeat(t, c, streamsHB("a", "p1", ea, a, "")) // revokes two
	ea, _ = streamsBeat(t, c, streamsHB("a", "p1", ea, a, ""))
	req := streamsHB("b", "p2", eb, nil, "")
	req.EndpointInformationEpoch = -1
	resp, _ := c.StreamsHeartbeat(context.Background(), req, "c", "h", streamsSettingsForTest())
	if resp.ErrorCode != 0 || len(resp.PartitionsByUserEndpoint) != 2 {
		t.Fatalf("partitions by endpoint: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp.PartitionsByUserEndpoint)
	}
	held := map[string][]int32{}
	for _, e := range resp.PartitionsByUserEndpoint {
		for _, p := range e.ActivePartitions {
			if p.Topic == "t" {
				held[e.UserEndpoint.Host] = p.Partitions
			}
		}
	}
	if len(held["h-p1"])+len(held["h-p2"]) != 4 {
		t.Fatalf("endpoints hold %v, want the 4 partitions of t between them", held)
	}
	req = streamsHB("b", "p2", resp.MemberEpoch, nil, "")
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = nil, nil, nil
	req.EndpointInformationEpoch = resp.EndpointInformationEpoch
	req.ShutdownApplication = true
	if resp, _ = c.StreamsHeartbeat(context.Background(), req, "c", "h", streamsSettingsForTest()); resp.ErrorCode != 0 || resp.PartitionsByUserEndpoint != nil {
		t.Fatalf("heartbeat with a current endpoint epoch: %v, partitions by endpoint %+v", kerr.ErrorForCode(resp.ErrorCode), resp.PartitionsByUserEndpoint)
	}
	req = streamsHB("a", "p1", ea, nil, "")
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = nil, nil, nil
	resp, _ = c.StreamsHeartbeat(context.Background(), req, "c", "h", streamsSettingsForTest())
	if resp.ErrorCode != 0 || !slices.ContainsFunc(resp.Status, func(s kmsg.StreamsGroupHeartbeatResponseStatus) bool {
		return s.StatusCode == streamsStatusShutdownApplication
	}) {
		t.Fatalf("after b asked to shut down, a got %v %+v, want SHUTDOWN_APPLICATION", kerr.ErrorForCode(resp.ErrorCode), resp.Status)
	}
}
