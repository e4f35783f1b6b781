package broker_test

import (
	"context"
	"fmt"
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

// Group config resources (type 32, KIP-848's dynamic group configuration,
// issue 16 problem 3): DescribeConfigs lists Kafka 4.4's group configs,
// IncrementalAlterConfigs and AlterConfigs change them with Kafka's
// validation and messages (checked against a Kafka 4.4 broker), the values
// live in the metadata log, and a KIP-848 consumer group runs with its own
// session timeout and heartbeat interval.

// kafkaGroupConfigNames are the group configs a Kafka 4.4 broker lists for
// kafka-configs.sh --entity-type groups --describe --all (its internal
// ones, such as consumer.assignor.offload.enable, are never described).
var kafkaGroupConfigNames = []string{
	"consumer.assignment.interval.ms",
	"consumer.heartbeat.interval.ms",
	"consumer.session.timeout.ms",
	"errors.deadletterqueue.copy.record.enable",
	"errors.deadletterqueue.topic.name",
	"share.assignment.interval.ms",
	"share.auto.offset.reset",
	"share.delivery.count.limit",
	"share.heartbeat.interval.ms",
	"share.isolation.level",
	"share.partition.max.record.locks",
	"share.record.lock.duration.ms",
	"share.renew.acknowledge.enable",
	"share.session.timeout.ms",
	"streams.assignment.interval.ms",
	"streams.assignor.name",
	"streams.heartbeat.interval.ms",
	"streams.initial.rebalance.delay.ms",
	"streams.num.standby.replicas",
	"streams.rack.aware.assignment.tags",
	"streams.session.timeout.ms",
}

// describeGroupConfigs sends one DescribeConfigs for a group resource,
// with synonyms and documentation, and returns its one resource.
func describeGroupConfigs(t *testing.T, cl kmsg.Requestor, group string, names ...string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, names
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeConfigs: %v", err)
	}
	if len(resp.Resources) != 1 {
		t.Fatalf("DescribeConfigs answered %d resources, want 1", len(resp.Resources))
	}
	return resp.Resources[0]
}

// groupConfig returns the described config called name, failing the test
// if the resource has an error or no such config.
func groupConfig(t *testing.T, res kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	if res.ErrorCode != 0 {
		t.Fatalf("DescribeConfigs of group %q: %v (%v)", res.ResourceName, kerr.ErrorForCode(res.ErrorCode), str(res.ErrorMessage))
	}
	for _, c := range res.Configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("DescribeConfigs of group %q has no %s", res.ResourceName, name)
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

func str(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// groupOp is one IncrementalAlterConfigs entry: "set:key=value",
// "del:key" or "append:key=value".
func groupOps(entries ...string) []kmsg.IncrementalAlterConfigsRequestResourceConfig {
	var out []kmsg.IncrementalAlterConfigsRequestResourceConfig
	for _, e := range entries {
		op, kv, _ := strings.Cut(e, ":")
		key, value, hasValue := strings.Cut(kv, "=")
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = key
		if hasValue {
			c.Value = kmsg.StringPtr(value)
		}
		switch op {
		case "set":
			c.Op = kmsg.IncrementalAlterConfigOpSet
		case "del":
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		case "append":
			c.Op = kmsg.IncrementalAlterConfigOpAppend
		}
		out = append(out, c)
	}
	return out
}

// alterGroupConfigs sends one IncrementalAlterConfigs of group and returns
// its error code and message.
func alterGroupConfigs(t *testing.T, cl kmsg.Requestor, group string, validateOnly bool, entries ...string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeGroupConfig, group, groupOps(entries...)
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	if len(resp.Resources) != 1 {
		t.Fatalf("IncrementalAlterConfigs answered %d resources, want 1", len(resp.Resources))
	}
	return resp.Resources[0].ErrorCode, str(resp.Resources[0].ErrorMessage)
}

// mustAlterGroupConfigs is alterGroupConfigs that must succeed.
func mustAlterGroupConfigs(t *testing.T, cl kmsg.Requestor, group string, entries ...string) {
	t.Helper()
	if code, msg := alterGroupConfigs(t, cl, group, false, entries...); code != 0 {
		t.Fatalf("IncrementalAlterConfigs of group %s %v: %v (%s)", group, entries, kerr.ErrorForCode(code), msg)
	}
}

// synonymsString renders a config's synonyms as kafka-configs.sh does:
// SOURCE:name=value, ...
func synonymsString(c kmsg.DescribeConfigsResponseResourceConfig) string {
	var parts []string
	for _, s := range c.ConfigSynonyms {
		parts = append(parts, fmt.Sprintf("%s:%s=%s", s.Source, s.Name, str(s.Value)))
	}
	return strings.Join(parts, ", ")
}

// TestDescribeGroupConfigs: a group resource, for a group id that has no
// group, lists Kafka 4.4's group configs with the broker's values as
// defaults (group.consumer.session.timeout.ms set in the broker's config
// shows as STATIC_BROKER_CONFIG), types and documentation; an empty group
// id is INVALID_REQUEST. The old code answered every group resource with
// INVALID_REQUEST "unsupported resource type 32".
func TestDescribeGroupConfigs(t *testing.T) {
	n := sluicetest.Start(t, "group.consumer.session.timeout.ms=50000")
	cl := n.Client()

	res := describeGroupConfigs(t, cl, "no-such-group")
	if res.ErrorCode != 0 {
		t.Fatalf("DescribeConfigs of a group: %v (%s)", kerr.ErrorForCode(res.ErrorCode), str(res.ErrorMessage))
	}
	var names []string
	for _, c := range res.Configs {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, kafkaGroupConfigNames) {
		t.Errorf("group configs described:\n%v\nwant Kafka 4.4's:\n%v", names, kafkaGroupConfigNames)
	}

	session := groupConfig(t, res, "consumer.session.timeout.ms")
	if str(session.Value) != "50000" || session.Source != kmsg.ConfigSourceStaticBrokerConfig || session.ConfigType != kmsg.ConfigTypeInt || session.ReadOnly {
		t.Errorf("consumer.session.timeout.ms = %s source %v type %v read-only %v, want 50000 STATIC_BROKER_CONFIG INT writable",
			str(session.Value), session.Source, session.ConfigType, session.ReadOnly)
	}
	if got, want := synonymsString(session), "STATIC_BROKER_CONFIG:group.consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000"; got != want {
		t.Errorf("consumer.session.timeout.ms synonyms %s, want %s", got, want)
	}
	if session.Documentation == nil || *session.Documentation == "" {
		t.Error("consumer.session.timeout.ms has no documentation")
	}
	for name, want := range map[string]string{
		"consumer.heartbeat.interval.ms": "DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000",
		"share.auto.offset.reset":        "DEFAULT_CONFIG:share.auto.offset.reset=latest",
		"share.session.timeout.ms":       "DEFAULT_CONFIG:group.share.session.timeout.ms=45000",
		"streams.assignor.name":          "DEFAULT_CONFIG:group.streams.assignors=sticky",
	} {
		c := groupConfig(t, res, name)
		if got := synonymsString(c); got != want || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s: source %v synonyms %s, want DEFAULT_CONFIG and %s", name, c.Source, got, want)
		}
	}

	if only := describeGroupConfigs(t, cl, "g", "consumer.heartbeat.interval.ms", "consumer.assignor.offload.enable"); len(only.Configs) != 1 || only.Configs[0].Name != "consumer.heartbeat.interval.ms" {
		t.Errorf("asking for one config and an internal one answered %d configs, want consumer.heartbeat.interval.ms alone", len(only.Configs))
	}

	empty := describeGroupConfigs(t, cl, "")
	if empty.ErrorCode != kerr.InvalidRequest.Code || str(empty.ErrorMessage) != "Group name must not be empty" {
		t.Errorf("DescribeConfigs of the empty group id: %v (%s), want INVALID_REQUEST (Group name must not be empty)", kerr.ErrorForCode(empty.ErrorCode), str(empty.ErrorMessage))
	}
}

// TestAlterGroupConfigsRoundTrip: SET, validateOnly, DELETE and the
// legacy AlterConfigs of a group, each seen by DescribeConfigs as Kafka
// shows it (DYNAMIC_GROUP_CONFIG first among the synonyms).
func TestAlterGroupConfigsRoundTrip(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client()
	const group = "round-trip"

	if code, msg := alterGroupConfigs(t, cl, group, true, "set:consumer.session.timeout.ms=50000"); code != 0 {
		t.Fatalf("validateOnly SET: %v (%s)", kerr.ErrorForCode(code), msg)
	}
	if c := groupConfig(t, describeGroupConfigs(t, cl, group), "consumer.session.timeout.ms"); str(c.Value) != "45000" {
		t.Fatalf("validateOnly changed consumer.session.timeout.ms to %s", str(c.Value))
	}

	mustAlterGroupConfigs(t, cl, group, "set:consumer.session.timeout.ms=50000", "set:consumer.heartbeat.interval.ms=6000")
	res := describeGroupConfigs(t, cl, group)
	c := groupConfig(t, res, "consumer.session.timeout.ms")
	if str(c.Value) != "50000" || c.Source != kmsg.ConfigSourceGroupConfig {
		t.Errorf("after SET: consumer.session.timeout.ms = %s source %v, want 50000 DYNAMIC_GROUP_CONFIG", str(c.Value), c.Source)
	}
	if got, want := synonymsString(c), "GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000"; got != want {
		t.Errorf("after SET: synonyms %s, want %s", got, want)
	}
	if c := groupConfig(t, res, "consumer.heartbeat.interval.ms"); str(c.Value) != "6000" || c.Source != kmsg.ConfigSourceGroupConfig {
		t.Errorf("after SET: consumer.heartbeat.interval.ms = %s source %v, want 6000 DYNAMIC_GROUP_CONFIG", str(c.Value), c.Source)
	}

	mustAlterGroupConfigs(t, cl, group, "del:consumer.heartbeat.interval.ms")
	res = describeGroupConfigs(t, cl, group)
	if c := groupConfig(t, res, "consumer.heartbeat.interval.ms"); str(c.Value) != "5000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("after DELETE: consumer.heartbeat.interval.ms = %s source %v, want 5000 DEFAULT_CONFIG", str(c.Value), c.Source)
	}
	if c := groupConfig(t, res, "consumer.session.timeout.ms"); str(c.Value) != "50000" {
		t.Errorf("DELETE of another key changed consumer.session.timeout.ms to %s", str(c.Value))
	}

	// The legacy AlterConfigs replaces the group's whole set, as Kafka 4.4
	// does for group resources.
	req := kmsg.NewPtrAlterConfigsRequest()
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	rc := kmsg.NewAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "consumer.heartbeat.interval.ms", kmsg.StringPtr("7000")
	r.Configs = append(r.Configs, rc)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("AlterConfigs of a group: %v (%s)", kerr.ErrorForCode(code), str(resp.Resources[0].ErrorMessage))
	}
	res = describeGroupConfigs(t, cl, group)
	if c := groupConfig(t, res, "consumer.heartbeat.interval.ms"); str(c.Value) != "7000" || c.Source != kmsg.ConfigSourceGroupConfig {
		t.Errorf("after AlterConfigs: consumer.heartbeat.interval.ms = %s source %v, want 7000 DYNAMIC_GROUP_CONFIG", str(c.Value), c.Source)
	}
	if c := groupConfig(t, res, "consumer.session.timeout.ms"); str(c.Value) != "45000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("AlterConfigs kept consumer.session.timeout.ms = %s source %v, want it back at 45000 DEFAULT_CONFIG", str(c.Value), c.Source)
	}
}

// TestAlterGroupConfigsValidation: values outside the broker's bounds, of
// the wrong type, unknown keys, and keys of features sluice does not have
// yet are refused with Kafka's codes and messages (the Kafka ones as a
// Kafka 4.4 broker with group.consumer.min.session.timeout.ms=1000 gives
// them), and a refused change changes nothing.
func TestAlterGroupConfigsValidation(t *testing.T) {
	n := sluicetest.Start(t, "group.consumer.min.session.timeout.ms=1000")
	cl := n.Client()
	const group = "validated"
	mustAlterGroupConfigs(t, cl, group, "set:consumer.session.timeout.ms=50000")

	for _, tc := range []struct {
		name    string
		group   string
		entries []string
		code    int16
		msg     string
	}{
		{"below min", group, []string{"set:consumer.session.timeout.ms=999"}, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be in the range 1000 to 60000 inclusive."},
		{"above max", group, []string{"set:consumer.session.timeout.ms=60001"}, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be in the range 1000 to 60000 inclusive."},
		{"heartbeat below min", group, []string{"set:consumer.heartbeat.interval.ms=999"}, kerr.InvalidConfig.Code,
			"consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{"session not above heartbeat", group, []string{"set:consumer.session.timeout.ms=1000"}, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{"not an int", group, []string{"set:consumer.session.timeout.ms=abc"}, kerr.InvalidConfig.Code,
			"Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{"below one", group, []string{"set:consumer.session.timeout.ms=0"}, kerr.InvalidConfig.Code,
			"Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"},
		{"unknown key", group, []string{"set:consumer.session.timeout.ms=55000", "set:foo=1"}, kerr.InvalidConfig.Code,
			"Unknown group config name: foo"},
		{"bad enum", group, []string{"set:share.isolation.level=bad"}, kerr.InvalidConfig.Code,
			"Invalid value bad for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"append to an int", group, []string{"append:consumer.session.timeout.ms=5"}, kerr.InvalidConfig.Code,
			"Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."},
		{"empty group id", "", []string{"set:consumer.session.timeout.ms=50000"}, kerr.InvalidRequest.Code,
			"Default group resources are not allowed."},
		{"share assignment interval above max", group, []string{"set:share.assignment.interval.ms=15001"}, kerr.InvalidConfig.Code,
			"share.assignment.interval.ms must be in the range 0 to 15000 inclusive."},
		{"share session below min", group, []string{"set:share.session.timeout.ms=1000"}, kerr.InvalidConfig.Code,
			"share.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"streams assignment interval above max", group, []string{"set:streams.assignment.interval.ms=15001"}, kerr.InvalidConfig.Code,
			"streams.assignment.interval.ms must be in the range 0 to 15000 inclusive."},
		{"streams standbys above max", group, []string{"set:streams.num.standby.replicas=3"}, kerr.InvalidConfig.Code,
			"streams.num.standby.replicas must be in the range 0 to 2 inclusive."},
		{"streams session below min", group, []string{"set:streams.session.timeout.ms=1000"}, kerr.InvalidConfig.Code,
			"streams.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"assignment interval", group, []string{"set:consumer.assignment.interval.ms=0"}, kerr.InvalidConfig.Code,
			`consumer.assignment.interval.ms is not supported by sluice yet (sluice recomputes a consumer group's target assignment as soon as its group epoch moves), so only its default "1000" may be set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := alterGroupConfigs(t, cl, tc.group, false, tc.entries...)
			if code != tc.code || msg != tc.msg {
				t.Errorf("%v: %v (%s)\nwant %v (%s)", tc.entries, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tc.code), tc.msg)
			}
		})
	}
	if c := groupConfig(t, describeGroupConfigs(t, cl, group), "consumer.session.timeout.ms"); str(c.Value) != "50000" {
		t.Errorf("refused changes left consumer.session.timeout.ms at %s, want 50000", str(c.Value))
	}
	// Setting a not-yet-supported key to its default is no promise broken.
	mustAlterGroupConfigs(t, cl, group, "set:consumer.assignment.interval.ms=1000")
}

// TestGroupConfigsInMetadataLog: a group config set through one node of a
// cluster (forwarded to the active controller when it is elsewhere) is
// described by every node, survives a restart of a whole single-node
// cluster, and outlives DeleteGroups of its group, as in Kafka 4.4.
func TestGroupConfigsInMetadataLog(t *testing.T) {
	t.Run("cluster", func(t *testing.T) {
		c := sluicetest.StartCluster(t, 2)
		from := 1
		if c.Controller() == 1 {
			from = 2
		}
		mustAlterGroupConfigs(t, c.Node(from).Client(), "shared", "set:consumer.session.timeout.ms=55000")
		for id := 1; id <= 2; id++ {
			cl := c.Node(id).Client()
			sluicetest.WaitFor(t, 15*time.Second, func() error {
				res := describeGroupConfigs(t, cl, "shared", "consumer.session.timeout.ms")
				if res.ErrorCode != 0 || len(res.Configs) != 1 || str(res.Configs[0].Value) != "55000" {
					return fmt.Errorf("node %d describes %+v", id, res)
				}
				return nil
			})
		}
	})
	t.Run("restart", func(t *testing.T) {
		n := sluicetest.Start(t, "group.initial.rebalance.delay.ms=0")
		const group, topic = "durable", "durable-topic"
		createTopic(t, n, topic, 1, nil)
		produceKeyed(t, n.Client(kgo.DefaultProduceTopic(topic)), topic, 0, 1)
		mustAlterGroupConfigs(t, n.Client(), group, "set:consumer.session.timeout.ms=55000")
		n.Restart()
		cl := n.Client()
		if c := groupConfig(t, describeGroupConfigs(t, cl, group), "consumer.session.timeout.ms"); str(c.Value) != "55000" || c.Source != kmsg.ConfigSourceGroupConfig {
			t.Fatalf("after a restart consumer.session.timeout.ms = %s source %v, want 55000 DYNAMIC_GROUP_CONFIG", str(c.Value), c.Source)
		}
		// A group with committed offsets is deleted; its configs stay.
		adm := n.Admin()
		offsets := make(kadm.Offsets)
		offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
		if err := adm.CommitAllOffsets(context.Background(), group, offsets); err != nil {
			t.Fatalf("commit an offset of group %s: %v", group, err)
		}
		resp, err := adm.DeleteGroups(context.Background(), group)
		if err != nil || resp[group].Err != nil {
			t.Fatalf("DeleteGroups: %v %v", err, resp[group].Err)
		}
		if c := groupConfig(t, describeGroupConfigs(t, cl, group), "consumer.session.timeout.ms"); str(c.Value) != "55000" {
			t.Errorf("after DeleteGroups consumer.session.timeout.ms = %s, want 55000 kept as Kafka 4.4 keeps it", str(c.Value))
		}
	})
}

// consumerGroupHeartbeat sends one ConsumerGroupHeartbeat of member in
// group: a join (epoch 0, subscribing to topic) or a regular heartbeat
// that changes nothing.
func consumerGroupHeartbeat(t *testing.T, cl kmsg.Requestor, group, member string, epoch int32, topic string, instance ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	if len(instance) > 0 {
		req.InstanceID = &instance[0]
	}
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = []string{topic}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// A coordinator still loading the group's __consumer_offsets partition
	// has not processed the request: ask again, as a client does.
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	for {
		var err error
		resp, err = req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ConsumerGroupHeartbeat: %v", err)
		}
		switch resp.ErrorCode {
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
			time.Sleep(20 * time.Millisecond)
			continue
		}
		break
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ConsumerGroupHeartbeat of %s (epoch %d): %v (%s)", member, epoch, kerr.ErrorForCode(resp.ErrorCode), str(resp.ErrorMessage))
	}
	return resp
}

// TestConsumerGroupRunsWithGroupConfigs: a KIP-848 member is told the
// group's consumer.heartbeat.interval.ms from its next heartbeat after the
// group config changes, and a member that stops heartbeating is removed
// after the group's consumer.session.timeout.ms (1.5s), long before the
// broker's group.consumer.session.timeout.ms (60s) would remove it; so is a
// static member that leaves for now (member epoch -2). No restart in
// between: a group config takes effect as it changes, as in Kafka.
func TestConsumerGroupRunsWithGroupConfigs(t *testing.T) {
	n := sluicetest.Start(t,
		"group.consumer.min.session.timeout.ms=1000",
		"group.consumer.session.timeout.ms=60000",
		"group.consumer.min.heartbeat.interval.ms=100",
		"group.consumer.heartbeat.interval.ms=5000",
	)
	const topic, group, member = "group-configs-848", "group-configs-848", "member-a"
	createTopic(t, n, topic, 2, nil)
	cl := n.Client()

	joined := consumerGroupHeartbeat(t, cl, group, member, 0, topic)
	if joined.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("joined with heartbeat interval %dms, want the broker's 5000", joined.HeartbeatIntervalMillis)
	}

	mustAlterGroupConfigs(t, cl, group, "set:consumer.heartbeat.interval.ms=200", "set:consumer.session.timeout.ms=1500")
	hb := consumerGroupHeartbeat(t, cl, group, member, joined.MemberEpoch, topic)
	if hb.HeartbeatIntervalMillis != 200 {
		t.Errorf("after the group config changed the member is told %dms, want the group's 200", hb.HeartbeatIntervalMillis)
	}

	// A static member leaves for now; its place is kept for the group's
	// session timeout.
	consumerGroupHeartbeat(t, cl, group, "member-s", 0, topic, "instance-s")
	consumerGroupHeartbeat(t, cl, group, "member-s", -2, topic, "instance-s")

	// The member stops heartbeating now; its session is the group's.
	adm := n.Admin()
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		d, err := adm.DescribeConsumerGroups(context.Background(), group)
		if err != nil {
			return err
		}
		if got := len(d[group].Members); got != 0 {
			return fmt.Errorf("%d members, want the silent one and the static one that left removed after the group's 1.5s session timeout", got)
		}
		return nil
	})
}

// TestStaticMemberExpiresWithGroupSessionTimeout: a franz-go KIP-848
// static member that closes without leaving is removed when its group's
// consumer.session.timeout.ms (2s) passes, not the broker's
// group.consumer.session.timeout.ms (60s, longer than the wait here).
func TestStaticMemberExpiresWithGroupSessionTimeout(t *testing.T) {
	n := sluicetest.Start(t,
		"group.consumer.min.heartbeat.interval.ms=50",
		"group.consumer.heartbeat.interval.ms=100",
		"group.consumer.min.session.timeout.ms=1000",
		"group.consumer.session.timeout.ms=60000",
	)
	const topic, group = "static-group-config", "static-group-config"
	createTopic(t, n, topic, 2, nil)
	produceKeyed(t, n.Client(kgo.DefaultProduceTopic(topic)), topic, 0, 10)
	mustAlterGroupConfigs(t, n.Client(), group, "set:consumer.session.timeout.ms=2000")
	s := &seen{n: map[[2]int64]int{}}
	m := startMember(t, n, group, topic, s, kgo.InstanceID("only"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	waitSeen(t, s, 10)
	m.stop()
	waitEmptyAndDelete(t, n.Admin(), group)
}
