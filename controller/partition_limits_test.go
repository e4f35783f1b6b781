package controller

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestCreateTopicsPartitionsCount(t *testing.T) {
	tests := []struct {
		name   string
		topics []CreateTopic
		want   int64
	}{
		{"counts", []CreateTopic{{Name: "a", NumPartitions: 7}, {Name: "b", NumPartitions: 3}}, 10},
		{"default for -1", []CreateTopic{{Name: "a", NumPartitions: -1}}, 4},
		{"invalid counts add nothing", []CreateTopic{{Name: "a", NumPartitions: 0}, {Name: "b", NumPartitions: -5}}, 0},
		{"assignments win", []CreateTopic{{Name: "a", NumPartitions: 100, Assignment: map[int32][]int32{0: {1}, 1: {1}}}}, 2},
		{"duplicates left out", []CreateTopic{{Name: "d", NumPartitions: 9000}, {Name: "d", NumPartitions: 9000}, {Name: "x", NumPartitions: 1}}, 1},
		{"no overflow", []CreateTopic{{Name: "a", NumPartitions: 1<<31 - 1}, {Name: "b", NumPartitions: 1<<31 - 1}}, 2 * (1<<31 - 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			occ := map[string]int{}
			for _, tp := range tt.topics {
				occ[tp.Name]++
			}
			if got := createTopicsPartitions(tt.topics, occ, 4); got != tt.want {
				t.Fatalf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// TestCreateTopicsPerRequestLimit: more than 10,000 partitions in one
// request fail every topic with POLICY_VIOLATION, validate-only or not, and
// change nothing; 10,000 are fine.
func TestCreateTopicsPerRequestLimit(t *testing.T) {
	c, _ := openTest(t, testConfig(t, t.TempDir()))
	ctx := testCtx(t)
	before := c.Image()
	for _, validateOnly := range []bool{true, false} {
		res := c.CreateTopics(ctx, []CreateTopic{
			{Name: "a", NumPartitions: 9999, ReplicationFactor: -1},
			{Name: "b", NumPartitions: -1, ReplicationFactor: -1}, // num.partitions = 3
			{Name: "bad/name", NumPartitions: 1, ReplicationFactor: -1},
		}, validateOnly)
		for _, r := range res {
			wantKafkaErr(t, r.Err, kerr.PolicyViolation)
			if !strings.HasSuffix(r.Err.Error(), ": "+ExcessivePartitionsMessage) {
				t.Fatalf("%s: %v", r.Name, r.Err)
			}
		}
	}
	if c.Image() != before {
		t.Fatal("a refused request changed the image")
	}
	res := c.CreateTopics(ctx, []CreateTopic{{Name: "a", NumPartitions: 9997, ReplicationFactor: -1}, {Name: "b", NumPartitions: -1, ReplicationFactor: -1}}, true)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s at the limit: %v", r.Name, r.Err)
		}
	}
}

// TestBrokerPartitionLimit: a topic whose replicas would take a broker past
// BrokerPartitions fails alone with POLICY_VIOLATION; the topics that fit,
// counting those accepted before them in the same request, are created.
func TestBrokerPartitionLimit(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.BrokerPartitions = BrokerPartitionLimit{Max: 10, Reason: "max.broker.partitions=10"}
	c, _ := openTest(t, cfg)
	ctx := testCtx(t)
	mustCreateRF(t, c, "first", 6, 1)

	res := c.CreateTopics(ctx, []CreateTopic{
		{Name: "fits", NumPartitions: 3, ReplicationFactor: 1},
		{Name: "over", NumPartitions: 2, ReplicationFactor: 1}, // 6 + 3 + 2 > 10
		{Name: "last", NumPartitions: 1, ReplicationFactor: 1},
	}, false)
	if res[0].Err != nil || res[2].Err != nil {
		t.Fatalf("fitting topics failed: %v, %v", res[0].Err, res[2].Err)
	}
	wantKafkaErr(t, res[1].Err, kerr.PolicyViolation)
	for _, want := range []string{"broker 1", "already hosts 9", "most one broker may host is 10", "max.broker.partitions=10"} {
		if !strings.Contains(res[1].Err.Error(), want) {
			t.Errorf("message %q does not say %q", res[1].Err, want)
		}
	}
	img := c.Image()
	if img.Topics["over"] != nil || img.Topics["fits"] == nil || img.Topics["last"] == nil {
		t.Fatalf("topics after the request: fits %v, over %v, last %v", img.Topics["fits"] != nil, img.Topics["over"] != nil, img.Topics["last"] != nil)
	}

	// The broker is full: a manual assignment and a partition increase are
	// refused too, validate-only or not.
	for _, validateOnly := range []bool{true, false} {
		r := c.CreateTopics(ctx, []CreateTopic{{Name: "manual", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1}}}}, validateOnly)
		wantKafkaErr(t, r[0].Err, kerr.PolicyViolation)
		p := c.CreatePartitions(ctx, []CreatePartitions{{Topic: "last", Count: 2}}, validateOnly)
		wantKafkaErr(t, p[0].Err, kerr.PolicyViolation)
	}
	if c.Image() != img {
		t.Fatal("a refused request changed the image")
	}
}

// TestCreatePartitionsPerRequestLimit: partitions added across the topics of
// one CreatePartitions count against the 10,000 limit.
func TestCreatePartitionsPerRequestLimit(t *testing.T) {
	c, _ := openTest(t, testConfig(t, t.TempDir()))
	ctx := testCtx(t)
	mustCreate(t, c, "a") // 3 partitions
	mustCreate(t, c, "b")
	before := c.Image()
	for _, validateOnly := range []bool{true, false} {
		res := c.CreatePartitions(ctx, []CreatePartitions{{Topic: "a", Count: 5003}, {Topic: "b", Count: 5004}, {Topic: "nope", Count: 9}}, validateOnly)
		for _, r := range res {
			wantKafkaErr(t, r.Err, kerr.PolicyViolation)
		}
	}
	if c.Image() != before {
		t.Fatal("a refused request changed the image")
	}
	res := c.CreatePartitions(ctx, []CreatePartitions{{Topic: "a", Count: 5003}, {Topic: "b", Count: 5003}}, true)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s at the limit: %v", r.Topic, r.Err)
		}
	}
}
