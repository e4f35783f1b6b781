package broker

// Metadata (api key 3), versions 0–13.
//
// Brokers are the unfenced brokers of the metadata image, the controller id
// is the active controller's. A null topic list (an empty one before v1)
// asks for every topic. A topic named more than once is answered once, as
// Kafka reads the requested topics into a set; sluice keeps the order in
// which they first appear. A partition without a leader reports
// LEADER_NOT_AVAILABLE.
//
// A requested topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION with
// no partitions and no topic id, or INVALID_TOPIC_EXCEPTION if its name
// breaks Kafka's rules (KafkaApis.getTopicMetadata); one asked for by id
// (v10+, KIP-516) is UNKNOWN_TOPIC_ID. IsInternal is set by name, so
// __consumer_offsets is internal even before it exists.
//
// Auto-creation follows Kafka 4.x (KRaft): when auto.create.topics.enable
// is on and the request allows it (AllowAutoTopicCreation, v4+; always
// before), each missing topic with a legal name is created with the
// broker's defaults — __consumer_offsets, __transaction_state and
// __share_group_state with the settings their coordinators use — and the
// request that triggered the creation is still answered
// UNKNOWN_TOPIC_OR_PARTITION without partitions (AutoTopicCreationManager
// answers before the controller decides); the
// topic shows on a later request, which every client sends after a short
// backoff. A creation the controller refuses (say a replication factor
// above the live brokers) is answered the same way and logged, as in Kafka
// 4.x, where the refusal reaches only the broker's log; the next request
// tries again. Unlike Kafka, sluice waits for the controller's decision
// before answering, and for this node's new replicas to be served (their
// logs opened; replicaOpenWait at most), so the client's next request finds
// the topic committed and applied on this broker, and a produce to a
// partition it leads served, rather than racing the creation.
//
// With an authorizer (authorize_requests.go) a topic the principal may not
// DESCRIBE is left out of an all-topics answer and answered
// TOPIC_AUTHORIZATION_FAILED when named, whether or not it exists, without
// its id (asked for by id: with the id and without the name, since ids are
// not secret); a missing topic is auto-created only with CREATE on the
// cluster or the topic, and is TOPIC_AUTHORIZATION_FAILED without it, as
// KafkaApis.handleTopicMetadataRequest answers.
//
// Authorized operations (v8+, KIP-430) as KafkaApis.handleTopicMetadataRequest
// fills them (authorized_ops.go): the cluster's when asked, in v8–v10 only
// (v11 dropped the field for DescribeCluster's); each topic's when asked,
// for every topic answered by name, a missing one included; a topic asked
// for by an unknown id keeps the "not requested" value.

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleMetadata(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	img := b.metadata()

	for _, br := range sortedBrokers(img) {
		resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: br.ID, Host: br.Host, Port: br.Port, Rack: rackPtr(br.Rack)})
	}
	clusterID := img.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = b.ctrl.ActiveControllerID()

	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = b.clusterAuthorizedOps(r)
	}

	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, t := range sortedTopics(img) {
			if describable.allowed(t.Name) {
				resp.Topics = append(resp.Topics, metadataTopic(img, t))
			}
		}
		b.fillTopicAuthorizedOps(r, req, resp)
		return resp, nil
	}
	allowCreate := b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	creatable := b.metadataCreateAuth(r)
	var create []string
	for _, rt := range uniqueMetadataTopics(req.Topics) {
		var t *controller.Topic
		switch {
		case rt.Topic != nil:
			t = img.Topics[*rt.Topic]
		case rt.TopicID != [16]byte{}:
			t = img.TopicsByID[rt.TopicID]
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
		switch {
		case rt.Topic == nil && t != nil && !describable.allowed(t.Name):
			// A topic id is not secret: its answer keeps the id,
			// without the name (KafkaApis.handleTopicMetadataRequest).
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		case rt.Topic != nil && !describable.allowed(*rt.Topic):
			// Whether or not it exists: its existence is not told.
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		case t != nil:
			resp.Topics = append(resp.Topics, metadataTopic(img, t))
			continue
		}
		switch {
		case rt.Topic == nil:
			mt.ErrorCode = kerr.UnknownTopicID.Code
		case allowCreate && !creatable(*rt.Topic):
			// Auto-creation needs CREATE on the cluster or the topic.
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			mt.IsInternal = controller.IsInternalTopic(*rt.Topic)
		case controller.ValidateTopicName(*rt.Topic) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
			mt.IsInternal = controller.IsInternalTopic(*rt.Topic)
		default:
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			mt.IsInternal = controller.IsInternalTopic(*rt.Topic)
			if allowCreate {
				create = append(create, *rt.Topic)
			}
		}
		resp.Topics = append(resp.Topics, mt)
	}
	b.autoCreateTopics(ctx, r, create)
	b.fillTopicAuthorizedOps(r, req, resp)
	return resp, nil
}

// metadataCreateAuth returns whether r's principal may have a missing
// topic auto-created: CREATE on the cluster, asked once and only when a
// topic is missing, or else CREATE on the topic.
func (b *Broker) metadataCreateAuth(r *protocol.Request) func(topic string) bool {
	asked, cluster := false, false
	creatable := b.topicAuth(r, kmsg.ACLOperationCreate)
	return func(topic string) bool {
		if !asked {
			asked, cluster = true, b.authorizedCluster(r, kmsg.ACLOperationCreate)
		}
		return cluster || creatable.allowed(topic)
	}
}

// fillTopicAuthorizedOps sets each answered topic's authorized operations
// when the request asks for them (v8+): every topic answered by name, as
// Kafka sets them on getTopicMetadata's answers, missing topics included;
// one refused TOPIC_AUTHORIZATION_FAILED or asked for by an unknown id is
// left unset, as Kafka leaves them.
func (b *Broker) fillTopicAuthorizedOps(r *protocol.Request, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if req.Version < 8 || !req.IncludeTopicAuthorizedOperations {
		return
	}
	for i := range resp.Topics {
		if mt := &resp.Topics[i]; mt.Topic != nil && mt.ErrorCode != kerr.TopicAuthorizationFailed.Code {
			mt.AuthorizedOperations = b.topicAuthorizedOps(r, *mt.Topic)
		}
	}
}

// autoCreateTopics has the controller create the named topics for a
// Metadata request that allowed it, and returns once it has decided: the
// internal topics as their coordinators create them, every other with the
// broker's num.partitions and default.replication.factor. A topic created
// meanwhile by someone else is fine; any other failure is only logged, as
// the client's answer does not depend on it (see the file comment).
func (b *Broker) autoCreateTopics(ctx context.Context, r *protocol.Request, names []string) {
	if len(names) == 0 {
		return
	}
	clientID, _ := memberClient(r)
	failed := func(name string, err error) {
		if err != nil && errorCode(err) != kerr.TopicAlreadyExists.Code {
			b.logger.Warn("auto topic creation failed", "topic", name, "err", err, "client_id", clientID)
		}
	}
	var create []controller.CreateTopic
	for _, name := range names {
		switch name {
		case offsetsTopicName:
			failed(name, b.ensureOffsetsTopic(ctx))
		case txnStateTopicName:
			failed(name, b.ensureTxnStateTopic(ctx))
		case shareStateTopicName:
			failed(name, b.ensureShareStateTopic(ctx))
		default:
			create = append(create, controller.CreateTopic{Name: name, NumPartitions: -1, ReplicationFactor: -1})
		}
	}
	if len(create) == 0 {
		return
	}
	var created []string
	for _, res := range b.createTopics(ctx, create, false) {
		failed(res.Name, res.Err)
		if res.Err == nil {
			created = append(created, res.Name)
		}
	}
	// As CreateTopics does, the answer waits (a little) for this node's
	// new replicas to be served: a client that produces right after this
	// Metadata named this node the leader must not hear
	// NOT_LEADER_OR_FOLLOWER because the log was still being opened
	// (kafka-go's Conn, for one, does not retry it).
	b.waitCreatedLogs(ctx, int32(replicaOpenWait/time.Millisecond), slices.Values(created))
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
