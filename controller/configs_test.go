package controller

import (
	"errors"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestAlterConfigs(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.ValidateTopicConfig = func(key, value string) error {
		if value == "bad" {
			return errors.New("bad value")
		}
		return nil
	}
	cfg.ValidateBrokerConfig = func(key, value string) error {
		if key == "broker.id" {
			return errors.New("broker.id is not dynamic")
		}
		return nil
	}
	cfg.IsListConfig = func(_ int8, key string) bool { return key == "cleanup.policy" || key == "list" }
	c, _ := openTest(t, cfg)
	ctx := testCtx(t)
	mustCreate(t, c, "t")
	topic := ConfigResource{Type: ResourceTopic, Name: "t"}
	topicConfigs := func() map[string]string { return c.Image().Topics["t"].Configs }

	steps := []struct {
		name        string
		res         ConfigResource
		ops         []ConfigOp
		incremental bool
		wantErr     *kerr.Error
		want        map[string]string // topic t's configs afterwards
	}{
		{name: "incremental set", res: topic, incremental: true,
			ops:  []ConfigOp{{Key: "retention.ms", Value: ptr("100")}, {Key: "cleanup.policy", Value: ptr("delete")}},
			want: map[string]string{"retention.ms": "100", "cleanup.policy": "delete"}},
		{name: "append", res: topic, incremental: true,
			ops:  []ConfigOp{{Key: "cleanup.policy", Value: ptr("compact,delete"), Op: OpAppend}},
			want: map[string]string{"retention.ms": "100", "cleanup.policy": "delete,compact"}},
		{name: "subtract", res: topic, incremental: true,
			ops:  []ConfigOp{{Key: "cleanup.policy", Value: ptr("delete"), Op: OpSubtract}},
			want: map[string]string{"retention.ms": "100", "cleanup.policy": "compact"}},
		{name: "subtract to empty deletes", res: topic, incremental: true,
			ops:  []ConfigOp{{Key: "cleanup.policy", Value: ptr("compact"), Op: OpSubtract}},
			want: map[string]string{"retention.ms": "100"}},
		{name: "append to unset list", res: topic, incremental: true,
			ops:  []ConfigOp{{Key: "list", Value: ptr("a"), Op: OpAppend}},
			want: map[string]string{"retention.ms": "100", "list": "a"}},
		{name: "delete", res: topic, incremental: true,
			ops:  []ConfigOp{{Key: "list", Op: OpDelete}, {Key: "never.set", Op: OpDelete}},
			want: map[string]string{"retention.ms": "100"}},
		{name: "non-incremental replaces the set", res: topic,
			ops:  []ConfigOp{{Key: "segment.ms", Value: ptr("7"), Op: OpDelete /* ignored */}},
			want: map[string]string{"segment.ms": "7"}},
		{name: "append to non-list", res: topic, incremental: true, wantErr: kerr.InvalidConfig,
			ops: []ConfigOp{{Key: "segment.ms", Value: ptr("1"), Op: OpAppend}}},
		{name: "invalid value", res: topic, incremental: true, wantErr: kerr.InvalidConfig,
			ops: []ConfigOp{{Key: "segment.ms", Value: ptr("bad")}}},
		{name: "invalid value non-incremental", res: topic, wantErr: kerr.InvalidConfig,
			ops: []ConfigOp{{Key: "segment.ms", Value: ptr("bad")}}},
		{name: "null value", res: topic, incremental: true, wantErr: kerr.InvalidRequest,
			ops: []ConfigOp{{Key: "segment.ms"}}},
		{name: "duplicate key", res: topic, incremental: true, wantErr: kerr.InvalidRequest,
			ops: []ConfigOp{{Key: "a", Value: ptr("1")}, {Key: "a", Op: OpDelete}}},
		{name: "unknown op", res: topic, incremental: true, wantErr: kerr.InvalidRequest,
			ops: []ConfigOp{{Key: "a", Value: ptr("1"), Op: 9}}},
		{name: "unknown topic", res: ConfigResource{Type: ResourceTopic, Name: "nope"}, incremental: true,
			wantErr: kerr.UnknownTopicOrPartition, ops: []ConfigOp{{Key: "a", Value: ptr("1")}}},
		{name: "bad broker name", res: ConfigResource{Type: ResourceBroker, Name: "one"}, incremental: true,
			wantErr: kerr.InvalidRequest, ops: []ConfigOp{{Key: "a", Value: ptr("1")}}},
		{name: "unknown resource type", res: ConfigResource{Type: 3, Name: "x"}, incremental: true,
			wantErr: kerr.InvalidRequest, ops: []ConfigOp{{Key: "a", Value: ptr("1")}}},
		{name: "invalid broker config", res: ConfigResource{Type: ResourceBroker, Name: "1"}, incremental: true,
			wantErr: kerr.InvalidConfig, ops: []ConfigOp{{Key: "broker.id", Value: ptr("2")}}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before := c.Image()
			if err := c.AlterConfigs(ctx, st.res, st.ops, st.incremental, true); st.wantErr != nil {
				wantKafkaErr(t, err, st.wantErr)
			} else if err != nil {
				t.Fatalf("validate-only: %v", err)
			}
			if c.Image() != before {
				t.Fatal("validate-only changed the image")
			}
			err := c.AlterConfigs(ctx, st.res, st.ops, st.incremental, false)
			if st.wantErr != nil {
				wantKafkaErr(t, err, st.wantErr)
				if c.Image() != before {
					t.Fatal("failed alter changed the image")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := topicConfigs(); !maps.Equal(got, st.want) {
				t.Fatalf("configs = %v, want %v", got, st.want)
			}
		})
	}

	// Broker resources: the cluster default and one broker are separate.
	if err := c.AlterConfigs(ctx, ConfigResource{Type: ResourceBroker}, []ConfigOp{{Key: "log.retention.ms", Value: ptr("1")}}, true, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterConfigs(ctx, ConfigResource{Type: ResourceBroker, Name: "1"}, []ConfigOp{{Key: "log.retention.ms", Value: ptr("2")}}, false, false); err != nil {
		t.Fatal(err)
	}
	img := c.Image()
	if img.BrokerConfig("")["log.retention.ms"] != "1" || img.BrokerConfig("1")["log.retention.ms"] != "2" {
		t.Fatalf("broker configs = %v", img.BrokerConfigs)
	}
	// Non-incremental with no configs clears the resource.
	if err := c.AlterConfigs(ctx, ConfigResource{Type: ResourceBroker, Name: "1"}, nil, false, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Image().BrokerConfigs["1"]; ok {
		t.Fatal("cleared broker config set still in the image")
	}
}
