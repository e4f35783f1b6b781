package controller

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestCreateTopicsErrors(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.ValidateTopicConfig = func(key, value string) error {
		if key == "retention.ms" && strings.HasPrefix(value, "-2") {
			return fmt.Errorf("Invalid value %s for configuration %s", value, key)
		}
		return nil
	}
	c, _ := openTest(t, cfg)
	ctx := testCtx(t)
	mustCreate(t, c, "exists")
	mustCreate(t, c, "with_underscore")

	tests := []struct {
		name    string
		topic   CreateTopic
		want    *kerr.Error
		message string // a substring of the error message, if set
	}{
		{name: "empty name", topic: CreateTopic{Name: ""}, want: kerr.InvalidTopicException},
		{name: "dot", topic: CreateTopic{Name: "."}, want: kerr.InvalidTopicException},
		{name: "dot dot", topic: CreateTopic{Name: ".."}, want: kerr.InvalidTopicException},
		{name: "too long", topic: CreateTopic{Name: strings.Repeat("a", 250)}, want: kerr.InvalidTopicException},
		{name: "illegal character", topic: CreateTopic{Name: "a*b"}, want: kerr.InvalidTopicException},
		{name: "already exists", topic: CreateTopic{Name: "exists"}, want: kerr.TopicAlreadyExists,
			message: "Topic 'exists' already exists."},
		{name: "collides with existing", topic: CreateTopic{Name: "with.underscore"}, want: kerr.InvalidTopicException,
			message: "collides with existing topic: with_underscore"},
		{name: "metadata topic", topic: CreateTopic{Name: "__cluster_metadata"}, want: kerr.InvalidRequest},
		{name: "zero partitions", topic: CreateTopic{Name: "t", NumPartitions: 0, ReplicationFactor: -1}, want: kerr.InvalidPartitions},
		{name: "negative partitions", topic: CreateTopic{Name: "t", NumPartitions: -2, ReplicationFactor: -1}, want: kerr.InvalidPartitions},
		{name: "too many partitions", topic: CreateTopic{Name: "t", NumPartitions: 1 << 30, ReplicationFactor: -1}, want: kerr.PolicyViolation,
			message: "Excessively large number of partitions per request."},
		{name: "zero replication factor", topic: CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: 0}, want: kerr.InvalidReplicationFactor},
		{name: "negative replication factor", topic: CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -3}, want: kerr.InvalidReplicationFactor},
		{name: "replication factor above brokers", topic: CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 3},
			want:    kerr.InvalidReplicationFactor,
			message: "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 1 broker(s) are registered."},
		{name: "assignment with partitions", topic: CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {1}}}, want: kerr.InvalidRequest},
		{name: "assignment with replication factor", topic: CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: 1,
			Assignment: map[int32][]int32{0: {1}}}, want: kerr.InvalidRequest},
		{name: "assignment unknown broker", topic: CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {7}}}, want: kerr.InvalidReplicaAssignment, message: "broker 7"},
		{name: "assignment duplicate broker", topic: CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {1, 1}}}, want: kerr.InvalidReplicaAssignment, message: "more than once"},
		{name: "assignment uneven", topic: CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {1}, 1: {1, 2}}}, want: kerr.InvalidReplicaAssignment, message: "not consistent"},
		{name: "assignment empty replicas", topic: CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment not contiguous", topic: CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignment: map[int32][]int32{0: {1}, 2: {1}}}, want: kerr.InvalidReplicaAssignment},
		{name: "invalid config", topic: CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Configs: map[string]*string{"retention.ms": ptr("-20")}}, want: kerr.InvalidConfig,
			message: "Invalid value -20 for configuration retention.ms"},
		{name: "null config", topic: CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Configs: map[string]*string{"retention.ms": nil}}, want: kerr.InvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := c.Image()
			for _, validateOnly := range []bool{true, false} {
				res := c.CreateTopics(ctx, []CreateTopic{tt.topic}, validateOnly)
				if len(res) != 1 {
					t.Fatalf("%d results", len(res))
				}
				wantKafkaErr(t, res[0].Err, tt.want)
				if tt.message != "" && !strings.Contains(res[0].Err.Error(), tt.message) {
					t.Fatalf("message %q does not contain %q", res[0].Err, tt.message)
				}
				if res[0].NumPartitions != -1 || res[0].ReplicationFactor != -1 || res[0].TopicID != ([16]byte{}) {
					t.Fatalf("failed result = %+v", res[0])
				}
			}
			if c.Image() != before {
				t.Fatal("a failed create changed the image")
			}
		})
	}
}

func TestCreateTopics(t *testing.T) {
	c, _ := openTest(t, testConfig(t, t.TempDir()))
	ctx := testCtx(t)

	// Validate-only reports what would happen and changes nothing.
	before := c.Image()
	res := c.CreateTopics(ctx, []CreateTopic{{Name: "v", NumPartitions: -1, ReplicationFactor: -1}}, true)
	if res[0].Err != nil || res[0].NumPartitions != 3 || res[0].ReplicationFactor != 1 {
		t.Fatalf("validate-only result = %+v", res[0])
	}
	if c.Image() != before {
		t.Fatal("validate-only changed the image")
	}

	res = c.CreateTopics(ctx, []CreateTopic{
		{Name: "defaults", NumPartitions: -1, ReplicationFactor: -1},
		{Name: "manual", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1}, 1: {1}}},
		{Name: "__consumer_offsets", NumPartitions: 5, ReplicationFactor: 1},
		{Name: "bad!", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "dup", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "dup", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "x.y", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "x_y", NumPartitions: 1, ReplicationFactor: 1},
	}, false)
	wantCodes := []*kerr.Error{nil, nil, nil, kerr.InvalidTopicException, kerr.InvalidRequest, kerr.InvalidRequest, nil, kerr.InvalidTopicException}
	for i, want := range wantCodes {
		if want == nil {
			if res[i].Err != nil {
				t.Fatalf("%s: %v", res[i].Name, res[i].Err)
			}
			continue
		}
		wantKafkaErr(t, res[i].Err, want)
	}
	img := c.Image()
	for _, r := range res {
		if r.Err != nil {
			if _, ok := img.Topics[r.Name]; ok && r.Name != "dup" {
				t.Fatalf("failed topic %s exists", r.Name)
			}
			continue
		}
		topic := img.Topics[r.Name]
		if topic == nil || topic.ID != r.TopicID || img.TopicsByID[r.TopicID] != topic {
			t.Fatalf("topic %s not in the image under id %s", r.Name, uuidString(r.TopicID))
		}
		if int32(len(topic.Partitions)) != r.NumPartitions {
			t.Fatalf("%s has %d partitions, result says %d", r.Name, len(topic.Partitions), r.NumPartitions)
		}
		for i, p := range topic.Partitions {
			if p.Partition != int32(i) || p.Leader != testNodeID || len(p.ISR) != 1 || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
				t.Fatalf("%s partition %d = %+v", r.Name, i, *p)
			}
		}
	}
	if _, ok := img.Topics["dup"]; ok {
		t.Fatal("duplicated topic created")
	}
	if !img.Topics["__consumer_offsets"].Internal || img.Topics["defaults"].Internal {
		t.Fatal("internal flag wrong")
	}
}

// TestCreateTopicsConcurrent creates one topic from many goroutines: the
// decision lock must let exactly one succeed.
func TestCreateTopicsConcurrent(t *testing.T) {
	c, _ := openTest(t, testConfig(t, t.TempDir()))
	ctx := testCtx(t)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		succeeded int
	)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := c.CreateTopics(ctx, []CreateTopic{{Name: "race", NumPartitions: 1, ReplicationFactor: 1}}, false)
			if res[0].Err == nil {
				mu.Lock()
				succeeded++
				mu.Unlock()
			} else if !errors.Is(res[0].Err, kerr.TopicAlreadyExists) {
				t.Error(res[0].Err)
			}
		}()
	}
	wg.Wait()
	if succeeded != 1 {
		t.Fatalf("%d creates succeeded, want 1", succeeded)
	}
}

func TestDeleteTopics(t *testing.T) {
	c, _ := openTest(t, testConfig(t, t.TempDir()))
	ctx := testCtx(t)
	a := mustCreate(t, c, "a")
	b := mustCreate(t, c, "b")
	cc := mustCreate(t, c, "c")

	res := c.DeleteTopics(ctx, []string{"a", "missing", "c"}, [][16]byte{b.TopicID, {9, 9}, cc.TopicID})
	if len(res) != 6 {
		t.Fatalf("%d results, want 6", len(res))
	}
	wantCodes := []*kerr.Error{nil, kerr.UnknownTopicOrPartition, nil, nil, kerr.UnknownTopicID, nil}
	for i, want := range wantCodes {
		if want == nil && res[i].Err != nil {
			t.Fatalf("result %d: %v", i, res[i].Err)
		} else if want != nil {
			wantKafkaErr(t, res[i].Err, want)
		}
	}
	if res[0].TopicID != a.TopicID || res[3].Name != "b" || res[5].Name != "c" {
		t.Fatalf("results not filled in: %+v", res)
	}
	img := c.Image()
	if len(img.Topics) != 0 || len(img.TopicsByID) != 0 {
		t.Fatalf("topics left: %v", img.Topics)
	}

	// A deleted name can be created again, with a new id.
	again := mustCreate(t, c, "a")
	if again.TopicID == a.TopicID {
		t.Fatal("re-created topic reused its old id")
	}
}

func TestCreatePartitions(t *testing.T) {
	c, _ := openTest(t, testConfig(t, t.TempDir()))
	ctx := testCtx(t)
	mustCreate(t, c, "t") // 3 partitions by default
	mustCreate(t, c, "u")

	tests := []struct {
		name string
		req  CreatePartitions
		want *kerr.Error
	}{
		{"unknown topic", CreatePartitions{Topic: "nope", Count: 5}, kerr.UnknownTopicOrPartition},
		{"fewer", CreatePartitions{Topic: "t", Count: 2}, kerr.InvalidPartitions},
		{"same", CreatePartitions{Topic: "t", Count: 3}, kerr.InvalidPartitions},
		{"too many", CreatePartitions{Topic: "t", Count: 1 << 30}, kerr.PolicyViolation},
		{"assignment count", CreatePartitions{Topic: "t", Count: 5, Assignment: [][]int32{{1}}}, kerr.InvalidReplicaAssignment},
		{"assignment unknown broker", CreatePartitions{Topic: "t", Count: 4, Assignment: [][]int32{{4}}}, kerr.InvalidReplicaAssignment},
		{"assignment wrong replication factor", CreatePartitions{Topic: "t", Count: 4, Assignment: [][]int32{{1, 2}}}, kerr.InvalidReplicaAssignment},
		{"assignment empty", CreatePartitions{Topic: "t", Count: 4, Assignment: [][]int32{{}}}, kerr.InvalidReplicaAssignment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := c.Image()
			for _, validateOnly := range []bool{true, false} {
				res := c.CreatePartitions(ctx, []CreatePartitions{tt.req}, validateOnly)
				wantKafkaErr(t, res[0].Err, tt.want)
			}
			if c.Image() != before {
				t.Fatal("failed request changed the image")
			}
		})
	}

	before := c.Image()
	res := c.CreatePartitions(ctx, []CreatePartitions{{Topic: "t", Count: 5}}, true)
	if res[0].Err != nil || c.Image() != before {
		t.Fatalf("validate-only: %v, image changed: %v", res[0].Err, c.Image() != before)
	}

	res = c.CreatePartitions(ctx, []CreatePartitions{
		{Topic: "t", Count: 5},
		{Topic: "u", Count: 4, Assignment: [][]int32{{1}}},
	}, false)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Topic, r.Err)
		}
	}
	img := c.Image()
	if n := len(img.Topics["t"].Partitions); n != 5 {
		t.Fatalf("t has %d partitions, want 5", n)
	}
	if n := len(img.Topics["u"].Partitions); n != 4 {
		t.Fatalf("u has %d partitions, want 4", n)
	}
	p := img.Topics["t"].Partitions[4]
	if p.Partition != 4 || p.Leader != testNodeID || len(p.Replicas) != 1 {
		t.Fatalf("new partition = %+v", *p)
	}
	if img.TopicsByID[img.Topics["t"].ID] != img.Topics["t"] {
		t.Fatal("id index stale after CreatePartitions")
	}
}
