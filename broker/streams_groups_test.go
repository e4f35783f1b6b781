package broker_test

// Streams groups (KIP-1071): StreamsGroupHeartbeat, StreamsGroupDescribe
// and StreamsGroupTopologyDescriptionUpdate sent as raw requests by a
// franz-go client to real nodes: the internal topics the coordinator has
// created, the task assignment and its hand-over between members,
// fencing, session expiry, statuses, offsets committed with member epochs,
// the streams.version gate, and a coordinator's kill on three nodes.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// streamsMember is a Streams member driven by the test: it heartbeats with
// its epoch and the tasks it was last given (it "owns" them at once).
type streamsMember struct {
	id, process string
	source      string // the topology's source topic
	changelog   string // the topology's changelog topic
	epoch       int32
	active      []int32 // partitions of subtopology "0"
	standby     []int32 // standby partitions of subtopology "0"
	status      []int8
	tags        map[string]string // client tags sent on a join
}

// toCoordinator sends a request to group's coordinator: franz-go does not
// route the streams-group requests itself.
func toCoordinator(ctx context.Context, cl *kgo.Client, group string, req kmsg.Request) (kmsg.Response, error) {
	node, err := findGroupCoordinatorNode(ctx, cl, group)
	if err != nil {
		return nil, err
	}
	return cl.Broker(int(node)).Request(ctx, req)
}

// findGroupCoordinatorNode is the node FindCoordinator names as group's
// coordinator.
func findGroupCoordinatorNode(ctx context.Context, cl *kgo.Client, group string) (int32, error) {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group}
	resp, err := fc.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
		return -1, fmt.Errorf("FindCoordinator %s: %+v", group, resp.Coordinators)
	}
	return resp.Coordinators[0].NodeID, nil
}

func (m *streamsMember) topology() *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID = "0"
	sub.SourceTopics = []string{m.source}
	cl := kmsg.NewTopicInfo()
	cl.Topic = m.changelog
	cfg := kmsg.NewTopicInfoConfig()
	cfg.Key, cfg.Value = "cleanup.policy", "compact"
	cl.Configs = []kmsg.TopicInfoConfig{cfg}
	sub.StateChangelogTopics = []kmsg.TopicInfo{cl}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
	return &t
}

// beat sends one heartbeat: a join at epoch 0, else the member's epoch
// and owned tasks.
func (m *streamsMember) beat(ctx context.Context, cl *kgo.Client, group string) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, m.id, m.epoch
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 5000
		req.Topology = m.topology()
		p := m.process
		req.ProcessID = &p
		ep := kmsg.NewStreamsGroupHeartbeatRequestUserEndpoint()
		ep.Host, ep.Port = "host-"+m.process, 8080
		req.UserEndpoint = &ep
		for _, k := range slices.Sorted(maps.Keys(m.tags)) {
			req.ClientTags = append(req.ClientTags, kmsg.StreamsGroupHeartbeatRequestClientTag{Key: k, Value: m.tags[k]})
		}
	}
	ids := kmsg.NewTaskIDs()
	ids.SubtopologyID, ids.Partitions = "0", m.active
	req.ActiveTasks = []kmsg.TaskIDs{}
	if len(m.active) > 0 {
		req.ActiveTasks = []kmsg.TaskIDs{ids}
	}
	req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	kresp, err := toCoordinator(ctx, cl, group, req)
	if err != nil {
		return nil, fmt.Errorf("StreamsGroupHeartbeat %s/%s@%d: %w", group, m.id, m.epoch, err)
	}
	resp := kresp.(*kmsg.StreamsGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		return resp, nil
	}
	m.epoch = resp.MemberEpoch
	m.status = m.status[:0]
	for _, s := range resp.Status {
		m.status = append(m.status, s.StatusCode)
	}
	if resp.ActiveTasks != nil {
		m.active, m.standby = []int32{}, []int32{}
		for _, t := range resp.ActiveTasks {
			if t.SubtopologyID == "0" {
				m.active = append(m.active, t.Partitions...)
			}
		}
		for _, t := range resp.StandbyTasks {
			if t.SubtopologyID == "0" {
				m.standby = append(m.standby, t.Partitions...)
			}
		}
		slices.Sort(m.active)
		slices.Sort(m.standby)
	}
	return resp, nil
}

// beatErr heartbeats once and returns the request's error or the
// response's error code as an error (nil when both are fine).
func (m *streamsMember) beatErr(ctx context.Context, cl *kgo.Client, group string) error {
	resp, err := m.beat(ctx, cl, group)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// describeTopology sends m's StreamsGroupTopologyDescriptionUpdate (an
// empty description of topology epoch 0, the epoch m's topology has) to
// group's coordinator and returns its error code.
func (m *streamsMember) describeTopology(ctx context.Context, cl *kgo.Client, group string) (int16, error) {
	req := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	req.Group, req.MemberID, req.TopologyEpoch = group, m.id, 0
	kresp, err := toCoordinator(ctx, cl, group, req)
	if err != nil {
		return 0, fmt.Errorf("StreamsGroupTopologyDescriptionUpdate %s/%s: %w", group, m.id, err)
	}
	return kresp.(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse).ErrorCode, nil
}

// beatOK is beat failing the test on any error but those a client
// retries (the coordinator loading or moving), which it retries.
func (m *streamsMember) beatOK(ctx context.Context, t *testing.T, cl *kgo.Client, group string) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	var resp *kmsg.StreamsGroupHeartbeatResponse
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		var err error
		if resp, err = m.beat(ctx, cl, group); err != nil {
			t.Fatal(err)
		}
		switch resp.ErrorCode {
		case kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
			return kerr.ErrorForCode(resp.ErrorCode)
		}
		return nil
	})
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat of %s@%d: %v (%v)", m.id, m.epoch, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	return resp
}

func streamsDescribe(ctx context.Context, t *testing.T, cl *kgo.Client, group string) kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	kresp, err := toCoordinator(ctx, cl, group, req)
	if err != nil {
		t.Fatalf("StreamsGroupDescribe %s: %v", group, err)
	}
	resp := kresp.(*kmsg.StreamsGroupDescribeResponse)
	if len(resp.Groups) != 1 {
		t.Fatalf("StreamsGroupDescribe %s: %+v", group, resp)
	}
	return resp.Groups[0]
}

func streamsNode(t *testing.T) *sluicetest.Node {
	return sluicetest.Start(t,
		"group.streams.min.session.timeout.ms=1000",
		"group.streams.session.timeout.ms=3000",
		"group.streams.min.heartbeat.interval.ms=100",
		"group.streams.heartbeat.interval.ms=200",
		// Assign at once: the waits have tests of their own
		// (streams_assignment_test.go).
		"group.streams.initial.rebalance.delay.ms=0",
		"group.streams.assignment.interval.ms=0",
	)
}

// TestStreamsGroupHeartbeat: a member joins with a topology whose
// changelog does not exist: the coordinator reports
// MISSING_INTERNAL_TOPICS and creates it (compacted, one partition per
// task), then hands out every task; a second member gets half of them only
// after the first released them; describe, list, fencing, offsets by
// member epoch, statuses and session expiry behave as in Kafka.
func TestStreamsGroupHeartbeat(t *testing.T) {
	n := streamsNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := n.Client()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	const group = "app"
	a := &streamsMember{id: "member-a", process: "p1", source: "in", changelog: "app-store-changelog"}
	resp := a.beatOK(ctx, t, cl, group)
	if resp.MemberEpoch < 1 || !slices.Contains(a.status, 3) || len(a.active) != 0 {
		t.Fatalf("first join: epoch %d, statuses %v, tasks %v; want MISSING_INTERNAL_TOPICS (3) and no tasks", resp.MemberEpoch, a.status, a.active)
	}
	// The coordinator created the changelog; the member gets every task.
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		a.beatOK(ctx, t, cl, group)
		if !slices.Equal(a.active, []int32{0, 1, 2, 3}) || len(a.status) > 0 {
			return fmt.Errorf("member a: tasks %v, statuses %v", a.active, a.status)
		}
		return nil
	})
	topics, err := adm.ListTopics(ctx, "app-store-changelog")
	if err != nil || len(topics["app-store-changelog"].Partitions) != 4 {
		t.Fatalf("changelog: %v %+v, want 4 partitions", err, topics)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "app-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := cfgs.On("app-store-changelog", nil); !slices.ContainsFunc(c.Configs, func(e kadm.Config) bool {
		return e.Key == "cleanup.policy" && e.MaybeValue() == "compact"
	}) {
		t.Fatalf("changelog configs %+v, want cleanup.policy=compact", c.Configs)
	}

	// A second member: a keeps two tasks, b gets the other two once a's
	// heartbeat no longer owns them.
	b := &streamsMember{id: "member-b", process: "p2", source: "in", changelog: "app-store-changelog"}
	b.beatOK(ctx, t, cl, group)
	if len(b.active) != 0 {
		t.Fatalf("member b got %v while a still owns every task", b.active)
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		a.beatOK(ctx, t, cl, group)
		b.beatOK(ctx, t, cl, group)
		if len(a.active) != 2 || len(b.active) != 2 {
			return fmt.Errorf("a %v, b %v", a.active, b.active)
		}
		return nil
	})
	if slices.ContainsFunc(a.active, func(p int32) bool { return slices.Contains(b.active, p) }) {
		t.Fatalf("a task is active on both: a %v, b %v", a.active, b.active)
	}
	resp = a.beatOK(ctx, t, cl, group)
	if len(resp.PartitionsByUserEndpoint) != 0 && resp.EndpointInformationEpoch == 0 {
		t.Fatalf("endpoint epoch 0 with partitions by endpoint %+v", resp.PartitionsByUserEndpoint)
	}
	d := streamsDescribe(ctx, t, cl, group)
	if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 2 || d.Topology == nil || len(d.Topology.Subtopologies) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	if d.Members[0].ProcessID != "p1" || d.Members[0].UserEndpoint == nil || d.Members[0].UserEndpoint.Host != "host-p1" {
		t.Fatalf("describe member: %+v", d.Members[0])
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lg, ok := listed[group]; !ok || lg.GroupType != "streams" || lg.State != "Stable" {
		t.Fatalf("ListGroups: %+v", listed)
	}

	// A wrong epoch is fenced.
	stale := *a
	stale.epoch = a.epoch + 5
	if r, err := stale.beat(ctx, cl, group); err != nil || r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("heartbeat with a greater epoch: %v %+v, want FENCED_MEMBER_EPOCH", err, r)
	}
	// Offsets are committed with the member epoch (OffsetCommit v9+).
	in, err := adm.ListTopics(ctx, "in")
	if err != nil {
		t.Fatal(err)
	}
	commit := func(epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, a.id, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "in", in["in"].ID
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = a.active[0], 1
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(a.epoch); code != 0 {
		t.Fatalf("commit at the member epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit(a.epoch - 1); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at an older epoch: %v, want STALE_MEMBER_EPOCH", kerr.ErrorForCode(code))
	}
	// A classic member cannot join it.
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	if r, err := jg.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup on a streams group: %v %+v, want INCONSISTENT_GROUP_PROTOCOL", err, r)
	}

	// b stops heartbeating: its session expires and a gets every task.
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		a.beatOK(ctx, t, cl, group)
		if len(a.active) != 4 {
			return fmt.Errorf("a has %v", a.active)
		}
		return nil
	})
	if r, err := b.beat(ctx, cl, group); err != nil || r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of the expired member: %v %+v, want UNKNOWN_MEMBER_ID", err, r)
	}

	// A topology whose source topic is missing gets no tasks.
	c := &streamsMember{id: "member-c", process: "p3", source: "nope", changelog: "other-changelog"}
	c.beatOK(ctx, t, cl, "other")
	if !slices.Contains(c.status, 1) || len(c.active) != 0 {
		t.Fatalf("missing source topic: statuses %v, tasks %v; want MISSING_SOURCE_TOPICS (1)", c.status, c.active)
	}
	if d := streamsDescribe(ctx, t, cl, "other"); d.State != "NotReady" {
		t.Fatalf("describe of a group without its source topic: %s, want NotReady", d.State)
	}

	// a leaves: the group is empty, and may be deleted.
	a.epoch = -1
	if r, err := a.beat(ctx, cl, group); err != nil || r.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, r)
	}
	if d := streamsDescribe(ctx, t, cl, group); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("describe after the leave: %+v", d)
	}
	if _, err := adm.DeleteGroup(ctx, group); err != nil {
		t.Fatalf("delete the empty streams group: %v", err)
	}
}

// TestStreamsGroupsNeedStreamsVersion: with streams.version downgraded to
// 0 the streams-group APIs (heartbeat, describe, topology description
// update) answer UNSUPPORTED_VERSION, as Kafka's do; a new cluster has it
// at 1.
func TestStreamsGroupsNeedStreamsVersion(t *testing.T) {
	n := streamsNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := n.Client()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 10000
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "streams.version", 0, 2
	req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{u}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 || len(resp.Results) > 0 && resp.Results[0].ErrorCode != 0 {
		t.Fatalf("downgrade streams.version: %v %+v", err, resp)
	}
	m := &streamsMember{id: "m", process: "p", source: "in", changelog: "x-changelog"}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		r, err := m.beat(ctx, cl, "g")
		if err != nil {
			return err
		}
		if r.ErrorCode != kerr.UnsupportedVersion.Code {
			return fmt.Errorf("heartbeat: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(r.ErrorCode))
		}
		return nil
	})
	if d := streamsDescribe(ctx, t, cl, "g"); d.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("describe: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(d.ErrorCode))
	}
	if code, err := m.describeTopology(ctx, cl, "g"); err != nil || code != kerr.UnsupportedVersion.Code {
		t.Fatalf("topology description update: %v %v, want UNSUPPORTED_VERSION", err, kerr.ErrorForCode(code))
	}
}

// TestStreamsGroupCoordinatorFailover: on three nodes, the coordinator of
// a streams group is killed. Its successor loads the group from
// __consumer_offsets (the StreamsGroup* records): the member goes on
// heartbeating with its epoch and keeps its tasks, without a rebalance,
// as with Kafka; a second member that joins then gets half the tasks.
func TestStreamsGroupCoordinatorFailover(t *testing.T) {
	c := sluicetest.StartCluster(t, 3,
		"group.streams.min.session.timeout.ms=1000",
		"group.streams.session.timeout.ms=3000",
		"group.streams.min.heartbeat.interval.ms=100",
		"group.streams.heartbeat.interval.ms=200",
		// Assign at once: the waits have tests of their own
		// (streams_assignment_test.go).
		"group.streams.initial.rebalance.delay.ms=0",
		"group.streams.assignment.interval.ms=0",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := clusterClient(c)
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(ctx, 4, 3, nil, "in"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	const group = "failover-app"
	m := &streamsMember{id: "member-a", process: "p1", source: "in", changelog: "failover-app-store-changelog"}
	sluicetest.WaitFor(t, 60*time.Second, func() error {
		if err := m.beatErr(ctx, cl, group); err != nil {
			return err
		}
		if len(m.active) != 4 {
			return fmt.Errorf("tasks %v, statuses %v", m.active, m.status)
		}
		return nil
	})
	old, err := findGroupCoordinatorNode(ctx, cl, group)
	if err != nil {
		t.Fatal(err)
	}
	epoch := m.epoch
	c.Kill(int(old))

	sluicetest.WaitFor(t, 60*time.Second, func() error {
		resp, err := m.beat(ctx, cl, group)
		if err != nil {
			return err
		}
		switch resp.ErrorCode {
		case 0:
		case kerr.UnknownMemberID.Code, kerr.FencedMemberEpoch.Code:
			t.Fatalf("the new coordinator fenced the member: %v", kerr.ErrorForCode(resp.ErrorCode))
		default:
			return kerr.ErrorForCode(resp.ErrorCode) // NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS...
		}
		return nil
	})
	if m.epoch != epoch || len(m.active) != 4 {
		t.Fatalf("after the failover: epoch %d (was %d), tasks %v; want both kept", m.epoch, epoch, m.active)
	}
	b := &streamsMember{id: "member-b", process: "p2", source: "in", changelog: "failover-app-store-changelog"}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		for _, x := range []*streamsMember{m, b} {
			if err := x.beatErr(ctx, cl, group); err != nil {
				return err
			}
		}
		if len(m.active) != 2 || len(b.active) != 2 {
			return fmt.Errorf("a %v, b %v", m.active, b.active)
		}
		return nil
	})
	if now, err := findGroupCoordinatorNode(ctx, cl, group); err != nil || now == old {
		t.Fatalf("FindCoordinator after the kill: node %d, %v (old coordinator %d)", now, err, old)
	}
	if d := streamsDescribe(ctx, t, cl, group); d.State != "Stable" || len(d.Members) != 2 {
		t.Fatalf("describe on the new coordinator: %+v", d)
	}
}

// TestStreamsGroupStandbyReplicas: the group config
// streams.num.standby.replicas (KIP-1071's group-level setting) gives each
// task a standby on the other process: two members of two processes each
// hold half the tasks active and the other half as standbys.
func TestStreamsGroupStandbyReplicas(t *testing.T) {
	n := streamsNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := n.Client()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	const group = "standby-app"
	if code, msg := alterGroupConfigs(t, cl, group, false, "set:streams.num.standby.replicas=1"); code != 0 {
		t.Fatalf("set streams.num.standby.replicas: %v (%s)", kerr.ErrorForCode(code), msg)
	}
	a := &streamsMember{id: "a", process: "p1", source: "in", changelog: "standby-app-store-changelog"}
	b := &streamsMember{id: "b", process: "p2", source: "in", changelog: "standby-app-store-changelog"}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		a.beatOK(ctx, t, cl, group)
		b.beatOK(ctx, t, cl, group)
		if len(a.active) != 2 || len(b.active) != 2 || !slices.Equal(a.standby, b.active) || !slices.Equal(b.standby, a.active) {
			return fmt.Errorf("a active %v standby %v, b active %v standby %v", a.active, a.standby, b.active, b.standby)
		}
		return nil
	})
}

// TestStreamsGroupHeartbeatAuthorization: READ on the group and DESCRIBE
// on the topology's source topics are needed, as in Kafka's KafkaApis
// (authorize_requests_test.go explains the ACL setup); READ on the group
// also for StreamsGroupTopologyDescriptionUpdate.
func TestStreamsGroupHeartbeatAuthorization(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := n.Admin()
	createTopic(t, n, "open-in", 1, nil)
	createTopic(t, n, "closed-in", 1, nil)
	createACLs(t, adm, kadm.NewACLs().Groups("closed-app").Allow(anonymous).AllowHosts("*").Operations(kadm.OpDescribe))
	createACLs(t, adm, kadm.NewACLs().Topics("closed-in").Allow("User:admin").AllowHosts("*").Operations(kadm.OpDescribe))
	cl := n.Client()
	m := &streamsMember{id: "m", process: "p", source: "open-in", changelog: "closed-app-changelog"}
	if r, err := m.beat(ctx, cl, "closed-app"); err != nil || r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("heartbeat without READ on the group: %v %+v", err, r)
	}
	if code, err := m.describeTopology(ctx, cl, "closed-app"); err != nil || code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("topology description update without READ on the group: %v %v", err, kerr.ErrorForCode(code))
	}
	m = &streamsMember{id: "m", process: "p", source: "closed-in", changelog: "open-app-changelog"}
	if r, err := m.beat(ctx, cl, "open-app"); err != nil || r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("heartbeat without DESCRIBE on the source topic: %v %+v", err, r)
	}
	m = &streamsMember{id: "m", process: "p", source: "open-in", changelog: "open-app-changelog"}
	m.beatOK(ctx, t, cl, "open-app")
	if code, err := m.describeTopology(ctx, cl, "open-app"); err != nil || code != 0 {
		t.Fatalf("topology description update by a member with READ: %v %v", err, kerr.ErrorForCode(code))
	}
}

// TestStreamsGroupInternalTopicsNeedCreate: the coordinator creates a
// group's internal topics only for a principal with CREATE on the cluster
// or on the topic; otherwise the member is told "Unauthorized to CREATE"
// in its MISSING_INTERNAL_TOPICS status and the topic is not created.
func TestStreamsGroupInternalTopicsNeedCreate(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := n.Admin()
	createTopic(t, n, "in", 1, nil)
	// The cluster's ACL last: once it has one, ACL changes need ALTER on it.
	createACLs(t, adm, kadm.NewACLs().Topics("denied-changelog").Deny(anonymous).DenyHosts("*").Operations(kadm.OpCreate))
	createACLs(t, adm, kadm.NewACLs().Topics("denied-changelog").Allow(anonymous).AllowHosts("*").Operations(kadm.OpDescribe))
	createACLs(t, adm, kadm.NewACLs().Clusters().Deny(anonymous).DenyHosts("*").Operations(kadm.OpCreate))
	cl := n.Client()
	m := &streamsMember{id: "m", process: "p", source: "in", changelog: "denied-changelog"}
	resp := m.beatOK(ctx, t, cl, "denied-app")
	if !slices.ContainsFunc(resp.Status, func(s kmsg.StreamsGroupHeartbeatResponseStatus) bool {
		return s.StatusCode == 3 && strings.Contains(s.StatusDetail, "Unauthorized to CREATE on topics denied-changelog")
	}) {
		t.Fatalf("statuses %+v, want MISSING_INTERNAL_TOPICS naming the unauthorized topic", resp.Status)
	}
	topics, err := adm.ListTopics(ctx, "denied-changelog")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := topics["denied-changelog"]; ok && d.Err == nil {
		t.Fatalf("the coordinator created denied-changelog for a principal without CREATE")
	}
}

// TestStreamsGroupDescribeOtherGroups: StreamsGroupDescribe of a group
// that does not exist, or of a group of another type, and
// ConsumerGroupDescribe of a streams group answer GROUP_ID_NOT_FOUND with
// Kafka's messages.
func TestStreamsGroupDescribeOtherGroups(t *testing.T) {
	n := streamsNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := n.Client()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	m := &streamsMember{id: "m", process: "p", source: "in", changelog: "app-changelog"}
	m.beatOK(ctx, t, cl, "app")
	// A group with only committed offsets (an admin commit) is of neither type.
	offsets := kadm.Offsets{}
	offsets.AddOffset("in", 0, 1, -1)
	if r, err := adm.CommitOffsets(ctx, "offsets-only", offsets); err != nil || r.Error() != nil {
		t.Fatalf("commit to offsets-only: %v %v", err, r.Error())
	}
	for _, c := range []struct{ group, want string }{
		{"missing", "Group missing not found."},
		{"offsets-only", "Group offsets-only is not a streams group."},
	} {
		d := streamsDescribe(ctx, t, cl, c.group)
		if d.ErrorCode != kerr.GroupIDNotFound.Code || d.ErrorMessage == nil || *d.ErrorMessage != c.want {
			t.Errorf("StreamsGroupDescribe %s: %v %v, want GROUP_ID_NOT_FOUND %q", c.group, kerr.ErrorForCode(d.ErrorCode), d.ErrorMessage, c.want)
		}
	}
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"app"}
	kresp, err := toCoordinator(ctx, cl, "app", req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.ConsumerGroupDescribeResponse)
	const want = "Group app is not a consumer group."
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code || resp.Groups[0].ErrorMessage == nil || *resp.Groups[0].ErrorMessage != want {
		t.Fatalf("ConsumerGroupDescribe of a streams group: %+v, want GROUP_ID_NOT_FOUND %q", resp.Groups, want)
	}
}
