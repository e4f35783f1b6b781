package broker

// Metadata (api key 3), versions 0–13.
//
// Brokers are the unfenced brokers of the metadata image, the controller id
// is the active controller's. A null topic list (an empty one before v1)
// asks for every topic. A requested topic that does not exist is created
// with the broker's defaults when the request allows it (v4+, always before)
// and auto.create.topics.enable is on; it is then returned at once, because
// the creation is committed before this answer. Otherwise it is
// UNKNOWN_TOPIC_OR_PARTITION, or UNKNOWN_TOPIC_ID for a topic asked for by id
// (v10+, KIP-516). A partition without a leader reports
// LEADER_NOT_AVAILABLE. A topic named more than once is answered once, as
// Kafka reads the requested topics into a set; sluice keeps the order in
// which they first appear.

import (
	"bytes"
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleMetadata(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	img := b.metadata()

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	topics := uniqueMetadataTopics(req.Topics)
	if !allTopics && allowCreate && b.cfg.AutoCreateTopics {
		var create []controller.CreateTopic
		for _, rt := range topics {
			if rt.Topic != nil && img.Topics[*rt.Topic] == nil {
				create = append(create, controller.CreateTopic{Name: *rt.Topic, NumPartitions: -1, ReplicationFactor: -1})
			}
		}
		if len(create) > 0 {
			results := b.createTopics(ctx, create, false)
			createErr := make(map[string]error)
			for _, res := range results {
				if res.Err != nil && errorCode(res.Err) != kerr.TopicAlreadyExists.Code {
					createErr[res.Name] = res.Err
					b.logger.Info("auto topic creation failed", "topic", res.Name, "err", res.Err)
				}
			}
			img = b.metadata()
			defer func() {
				for i := range resp.Topics {
					t := &resp.Topics[i]
					if t.Topic != nil && createErr[*t.Topic] != nil {
						t.ErrorCode = errorCode(createErr[*t.Topic])
					}
				}
			}()
		}
	}

	for _, br := range sortedBrokers(img) {
		resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: br.ID, Host: br.Host, Port: br.Port, Rack: rackPtr(br.Rack)})
	}
	clusterID := img.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = b.ctrl.ActiveControllerID()

	if allTopics {
		for _, t := range sortedTopics(img) {
			resp.Topics = append(resp.Topics, metadataTopic(img, t))
		}
		return resp, nil
	}
	for _, rt := range topics {
		var t *controller.Topic
		switch {
		case rt.Topic != nil:
			t = img.Topics[*rt.Topic]
		case rt.TopicID != [16]byte{}:
			t = img.TopicsByID[rt.TopicID]
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if rt.Topic == nil {
				mt.ErrorCode = kerr.UnknownTopicID.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, metadataTopic(img, t))
	}
	return resp, nil
}

// uniqueMetadataTopics returns the requested topics without repeats, in
// the order they first appear: by name, or by id for an entry without one.
func uniqueMetadataTopics(topics []kmsg.MetadataRequestTopic) []*kmsg.MetadataRequestTopic {
	firsts, _ := repeatedKeys(len(topics), func(i, j int) int {
		a, b := &topics[i], &topics[j]
		switch {
		case a.Topic != nil && b.Topic != nil:
			return strings.Compare(*a.Topic, *b.Topic)
		case a.Topic != nil:
			return -1
		case b.Topic != nil:
			return 1
		}
		return bytes.Compare(a.TopicID[:], b.TopicID[:])
	})
	out := make([]*kmsg.MetadataRequestTopic, 0, len(topics))
	for i := range firstEntries(len(topics), firsts) {
		out = append(out, &topics[i])
	}
	return out
}

func metadataTopic(img *controller.Image, t *controller.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = t.Internal
	for _, mp := range t.Partitions {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition = mp.Partition
		p.Leader = mp.Leader
		p.LeaderEpoch = mp.LeaderEpoch
		p.Replicas = append([]int32{}, mp.Replicas...)
		p.ISR = append([]int32{}, mp.ISR...)
		p.OfflineReplicas = offlineReplicas(img, mp)
		if mp.Leader < 0 {
			p.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, p)
	}
	return mt
}
