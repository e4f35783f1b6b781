package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

func TestCreateTopicsErrors(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "exists", 1, nil)
	cl := n.Client()
	ctx := context.Background()
	tests := []struct {
		name  string
		topic string
		parts int32
		rf    int16
		cfg   map[string]string
		only  bool
		want  error
	}{
		{"already exists", "exists", 1, 1, nil, false, kerr.TopicAlreadyExists},
		{"bad name", "bad/name", 1, 1, nil, false, kerr.InvalidTopicException},
		{"dot name", ".", 1, 1, nil, false, kerr.InvalidTopicException},
		{"too long", strings.Repeat("x", 250), 1, 1, nil, false, kerr.InvalidTopicException},
		{"rf above brokers", "rf3", 1, 3, nil, false, kerr.InvalidReplicationFactor},
		{"zero partitions", "zero", 0, 1, nil, false, kerr.InvalidPartitions},
		{"bad config value", "badcfg", 1, 1, map[string]string{"retention.ms": "soon"}, false, kerr.InvalidConfig},
		{"unknown config", "unkcfg", 1, 1, map[string]string{"no.such.config": "1"}, false, kerr.InvalidConfig},
		{"validate only", "dry", 3, 1, nil, true, nil},
		{"defaults", "defaults", -1, -1, nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.ValidateOnly = tt.only
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = tt.topic, tt.parts, tt.rf
			for k, v := range tt.cfg {
				rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			got := kerr.ErrorForCode(resp.Topics[0].ErrorCode)
			if !errors.Is(got, tt.want) && !(got == nil && tt.want == nil) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	topics, err := n.Admin().ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("dry") {
		t.Fatal("validate-only created the topic")
	}
	if d := topics["defaults"]; len(d.Partitions) != 1 {
		t.Fatalf("topic created with defaults has %d partitions, want num.partitions=1", len(d.Partitions))
	}
}

func TestDeleteTopicByNameAndID(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "a", 2, nil)
	createTopic(t, n, "b", 2, nil)
	produceKeyed(t, n.Client(), "a", 0, 10)
	ctx := context.Background()
	adm := n.Admin()
	topics, err := adm.ListTopics(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("a")}, {TopicID: topics["b"].ID}, {Topic: kmsg.StringPtr("nope")}}
	resp, err := req.RequestWith(ctx, n.Client())
	if err != nil {
		t.Fatal(err)
	}
	want := []int16{0, 0, kerr.UnknownTopicOrPartition.Code}
	for i, rt := range resp.Topics {
		if rt.ErrorCode != want[i] {
			t.Fatalf("topic %d: error %v, want %v", i, kerr.ErrorForCode(rt.ErrorCode), kerr.ErrorForCode(want[i]))
		}
	}
	left, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left.Has("a") || left.Has("b") {
		t.Fatalf("topics left after delete: %v", left.Names())
	}
	// A new topic under the old name starts empty.
	createTopic(t, n, "a", 1, nil)
	ends, err := adm.ListEndOffsets(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("a", 0); o.Offset != 0 {
		t.Fatalf("recreated topic has end offset %d", o.Offset)
	}
}

func TestCreatePartitions(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "grow", 2, nil)
	ctx := context.Background()
	adm := n.Admin()
	res, err := adm.CreatePartitions(ctx, 3, "grow")
	if err != nil || res["grow"].Err != nil {
		t.Fatalf("create partitions: %v %v", err, res["grow"].Err)
	}
	topics, _ := adm.ListTopics(ctx, "grow")
	if got := len(topics["grow"].Partitions); got != 5 {
		t.Fatalf("partitions after +3: %d, want 5", got)
	}
	res, err = adm.UpdatePartitions(ctx, 4, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res["grow"].Err, kerr.InvalidPartitions) {
		t.Fatalf("shrinking partitions: got %v, want INVALID_PARTITIONS", res["grow"].Err)
	}
	// The new partitions take writes.
	cl := n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: 4, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func TestMetadataAutoCreate(t *testing.T) {
	n := sluicetest.Start(t, "num.partitions=3")
	ctx := context.Background()
	cl := n.Client(kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	topics, err := n.Admin().ListTopics(ctx, "auto")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(topics["auto"].Partitions); got != 3 {
		t.Fatalf("auto-created topic has %d partitions, want 3", got)
	}

	off := sluicetest.Start(t, "auto.create.topics.enable=false")
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("nothere")}}
	resp, err := req.RequestWith(ctx, off.Client())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata for a missing topic: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
}

func TestDescribeAndAlterConfigs(t *testing.T) {
	n := sluicetest.Start(t, "log.retention.hours=24")
	createTopic(t, n, "cfg", 1, map[string]*string{"segment.bytes": ptr("2097152")})
	ctx := context.Background()
	adm := n.Admin()
	describe := func() map[string][2]string {
		rc, err := adm.DescribeTopicConfigs(ctx, "cfg")
		if err != nil {
			t.Fatal(err)
		}
		r, err := rc.On("cfg", nil)
		if err != nil {
			t.Fatal(err)
		}
		out := make(map[string][2]string)
		for _, c := range r.Configs {
			out[c.Key] = [2]string{c.MaybeValue(), c.Source.String()}
		}
		return out
	}
	got := describe()
	checks := map[string][2]string{
		"segment.bytes":  {"2097152", "DYNAMIC_TOPIC_CONFIG"},
		"retention.ms":   {"86400000", "STATIC_BROKER_CONFIG"},
		"cleanup.policy": {"delete", "DEFAULT_CONFIG"},
	}
	for k, want := range checks {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	// Incremental: set one, delete another.
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "retention.ms", Value: ptr("1000")},
		{Name: "segment.bytes", Op: kadm.DeleteConfig},
	}, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ar {
		if r.Err != nil {
			t.Fatalf("alter %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	got = describe()
	if got["retention.ms"] != [2]string{"1000", "DYNAMIC_TOPIC_CONFIG"} {
		t.Errorf("retention.ms after alter = %v", got["retention.ms"])
	}
	if got["segment.bytes"][1] == "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("segment.bytes still set on the topic after delete: %v", got["segment.bytes"])
	}
	n.Restart()
	adm = n.Admin()
	got = describe()
	if got["retention.ms"] != [2]string{"1000", "DYNAMIC_TOPIC_CONFIG"} {
		t.Errorf("retention.ms after restart = %v", got["retention.ms"])
	}
}
