package broker

// CreateTopics (api key 19), versions 2–7.
//
// The controller validates and commits each topic (name rules, partitions,
// replication factor against the live brokers, explicit replica assignment,
// topic configs) and the answer comes after the metadata log holds it, so the
// topic is immediately usable. validateOnly (v1+) runs every check and
// creates nothing. v5+ (KIP-525) returns the partition count, replication
// factor and the topic's full effective config; v7 the topic id (KIP-516).
// A manual assignment that names a partition twice is
// INVALID_REPLICA_ASSIGNMENT ("Found multiple manual partition assignments
// for partition N", as Kafka's ReplicationControlManager answers), checked
// here before the controller sees the topic, so it comes before the
// controller's other checks of that topic.
// A name given twice in one request is answered once, INVALID_REQUEST
// "Duplicate topic name.", and is not created, as KRaft's ControllerApis
// answers it. A request for more than 10,000 partitions in all fails as a
// whole with POLICY_VIOLATION, and a topic whose replicas would take a
// broker past max.broker.partitions fails with
// POLICY_VIOLATION (controller/partition_limits.go); the duplicates of a
// request failed as a whole get its error too, as in Kafka, where the
// controller's exception becomes every topic's answer.
// Topics are charged to the client's controller_mutation_rate (KIP-599,
// mutation_quota.go): strict from v6, permissive before.
//
// A topic needs CREATE on the cluster or on the topic, or it is
// TOPIC_AUTHORIZATION_FAILED ("Authorization failed.") and not created; a
// created topic's configs (v5+) need DESCRIBE_CONFIGS on it, or the answer
// carries TOPIC_AUTHORIZATION_FAILED as its config error instead, as
// Kafka's ControllerApis.createTopics answers (authorize_requests.go).

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleCreateTopics(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	seen := make(map[string]int)
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	var create []controller.CreateTopic
	// refused holds the topics answered here, not sent to the controller:
	// a manual assignment naming a partition twice (the controller's
	// assignment is a map, which would keep the last).
	refused := make(map[string]error)
	// CREATE on the cluster or on each topic, checked here, on the broker
	// the client is connected to, before anything is forwarded; a peer's
	// request was checked on its broker (authorize_requests.go).
	client := clientRequest(ctx)
	creatable := b.metadataCreateAuth(r)
	for _, rt := range req.Topics {
		if seen[rt.Topic] > 1 {
			continue
		}
		if client && !creatable(rt.Topic) {
			refused[rt.Topic] = errCreateTopicDenied
			continue
		}
		ct := controller.CreateTopic{Name: rt.Topic, NumPartitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor}
		if len(rt.ReplicaAssignment) > 0 {
			ct.Assignment = make(map[int32][]int32, len(rt.ReplicaAssignment))
			for _, a := range rt.ReplicaAssignment {
				if _, twice := ct.Assignment[a.Partition]; twice {
					refused[rt.Topic] = fmt.Errorf("%w: Found multiple manual partition assignments for partition %d",
						kerr.InvalidReplicaAssignment, a.Partition)
					break
				}
				ct.Assignment[a.Partition] = a.Replicas
			}
			if refused[rt.Topic] != nil {
				continue
			}
		}
		if len(rt.Configs) > 0 {
			ct.Configs = make(map[string]*string, len(rt.Configs))
			for _, c := range rt.Configs {
				ct.Configs[c.Name] = c.Value
			}
		}
		create = append(create, ct)
	}
	ctx, mutations := startMutationQuota(ctx, r, &req.UnknownTags, createTopicsStrictVersion)
	results := b.createTopics(ctx, create, req.ValidateOnly)
	b.waitCreatedLogs(ctx, req.TimeoutMillis, func(yield func(string) bool) {
		for _, res := range results {
			if res.Err == nil && !req.ValidateOnly && !yield(res.Name) {
				return
			}
		}
	})
	byName := make(map[string]controller.CreateTopicResult, len(results)+len(refused))
	for _, res := range results {
		byName[res.Name] = res
	}
	for name, err := range refused {
		byName[name] = controller.CreateTopicResult{Name: name, Err: err}
	}
	duplicateCode, duplicateMessage := kerr.InvalidRequest.Code, "Duplicate topic name."
	if len(results) > 0 && isExcessivePartitions(results[0].Err) {
		duplicateCode, duplicateMessage = errorCode(results[0].Err), controller.ExcessivePartitionsMessage
	}

	img := b.metadata()
	perBroker, clusterDefault := b.dynamicBrokerConfigs(img)
	configsVisible := b.topicAuth(r, kmsg.ACLOperationDescribeConfigs)
	done := make(map[string]bool)
	for i, rt := range req.Topics {
		if done[rt.Topic] {
			continue
		}
		done[rt.Topic] = true
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		if seen[rt.Topic] > 1 {
			st.ErrorCode = duplicateCode
			st.ErrorMessage = kmsg.StringPtr(duplicateMessage)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		res := byName[rt.Topic]
		if res.Err != nil {
			st.ErrorCode = errorCode(res.Err)
			st.ErrorMessage = errorMessage(res.Err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = res.TopicID
		st.NumPartitions = res.NumPartitions
		st.ReplicationFactor = res.ReplicationFactor
		if req.Version >= 5 && client && !configsVisible.allowed(rt.Topic) {
			// The topic's configs need DESCRIBE_CONFIGS on it.
			st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if req.Version >= 5 {
			set := make(map[string]string)
			for _, c := range req.Topics[i].Configs {
				if c.Value != nil {
					set[c.Name] = *c.Value
				}
			}
			for _, e := range b.cfg.DescribeTopic(set, perBroker, clusterDefault) {
				st.Configs = append(st.Configs, kmsg.CreateTopicsResponseTopicConfig{
					Name: e.Name, Value: e.Value, ReadOnly: e.ReadOnly, Source: e.Source, IsSensitive: e.Sensitive,
				})
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	finishMutationQuota(ctx, mutations, resp)
	return resp, nil
}

// isExcessivePartitions reports whether err is the controller's refusal of
// a whole request over 10,000 partitions; a forwarded answer carries only
// the code and the message, so they are what is compared.
func isExcessivePartitions(err error) bool {
	msg := errorMessage(err)
	return errorCode(err) == kerr.PolicyViolation.Code && msg != nil && strings.HasSuffix(*msg, controller.ExcessivePartitionsMessage)
}

// errCreateTopicDenied is a topic the principal may not create.
var errCreateTopicDenied = fmt.Errorf("%w: Authorization failed.", kerr.TopicAuthorizationFailed)
