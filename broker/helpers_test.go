package broker_test

// Helpers shared by the multi-node tests: creating a topic on chosen
// replicas, and reading one topic's Metadata.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createOnReplicas creates topic with each partition of assignment on its
// replicas (the first is the preferred leader) and the topic configs.
func createOnReplicas(t *testing.T, cl *kgo.Client, topic string, assignment map[int32][]int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	for _, p := range slices.Sorted(maps.Keys(assignment)) {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, assignment[p]
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// createPlaced creates topic with partition i on replicas[i].
func createPlaced(t *testing.T, cl *kgo.Client, topic string, replicas [][]int32, configs map[string]string) {
	t.Helper()
	assignment := make(map[int32][]int32, len(replicas))
	for i, rs := range replicas {
		assignment[int32(i)] = rs
	}
	createOnReplicas(t, cl, topic, assignment, configs)
}

// createAssigned creates a one-partition topic on exactly the given
// replicas (the first is the preferred leader) with the topic configs.
func createAssigned(t *testing.T, cl *kgo.Client, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	createOnReplicas(t, cl, topic, map[int32][]int32{0: replicas}, configs)
}

// createSpread creates topic with exactly the given replicas per partition.
func createSpread(t *testing.T, cl *kgo.Client, topic string, assignment map[int32][]int32) {
	t.Helper()
	createOnReplicas(t, cl, topic, assignment, nil)
}

// topicMetadata is Metadata's answer for topic alone, asked with a 2s
// timeout; the topic's error code is the caller's to check.
func topicMetadata(cl *kgo.Client, topic string) (kmsg.MetadataResponseTopic, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.MetadataResponseTopic{}, err
	}
	if len(resp.Topics) != 1 {
		return kmsg.MetadataResponseTopic{}, fmt.Errorf("metadata: %d topics", len(resp.Topics))
	}
	return resp.Topics[0], nil
}
