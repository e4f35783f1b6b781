package broker

// Forwarding of controller decisions to the active controller's broker.
//
// The controller decides only on the raft leader; on any other node its
// decision methods return NOT_CONTROLLER. So that clients may send admin
// requests to any broker, and so that partition leaders and stopping
// brokers can reach the controller, the broker wraps each decision in a
// method of the same shape (createTopics, deleteTopics, createPartitions,
// alterConfigs, allocateProducerIDs, alterPartition, controlledShutdown):
//
//   - when this node is the active controller, or none is known, the local
//     controller decides;
//   - otherwise the decision is re-encoded as the Kafka request for it
//     (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
//     IncrementalAlterConfigs, AllocateProducerIds, AlterPartition,
//     ControlledShutdown) and sent with a franz-go client to the active
//     controller's controller channel (control_listener.go): the Kafka
//     side of its controller listener, at its controller.quorum.voters
//     address, one client per address talking to that address alone
//     (its seed broker, found without Metadata). That broker's
//     handler calls its controller and answers with Kafka error codes,
//     which are turned back into the errors the local controller would
//     have returned;
//   - a NOT_CONTROLLER answer (leadership moved) or a network error is
//     retried against the then active controller, with backoff, until the
//     context ends (at most forwardTimeout).
//
// A request that arrives on the controller channel comes from a peer
// broker and is never forwarded again: it is answered by the local
// controller, NOT_CONTROLLER included, so a stale view of the controller
// cannot make two brokers bounce a request between them. Requests on the
// client listener are never a peer's, whatever their client id.
//
// Read-your-writes. A handler answers a client only once the change is in
// this node's image, as on the controller itself. The controller broker
// adds its applied raft index to the answer of a peer request as a tagged
// field (appliedIndexTag, ignored by every Kafka client, KIP-482), and the
// forwarding broker waits until its own reconciled image has applied that
// index (Image.Index is the same raft index on every node) before
// answering. This works for every kind of change (topics, configs, ISR,
// fencing) without a predicate per request.
//
// The client of the other brokers' Kafka listeners (peerClient) is what
// transaction coordinators send WriteTxnMarkers with (txn.go); it is not
// used for the controller.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

const (
	// peerClientIDPrefix starts the client id of the inter-broker client.
	peerClientIDPrefix = "sluice-broker-"
	// appliedIndexTag is the tagged field, in the top level of a flexible
	// response to a peer, that carries the responder's applied raft index
	// as 8 big-endian bytes. Kafka numbers its tags from 0 per struct; a
	// number this high will not collide with one Kafka adds.
	appliedIndexTag = 0x51CE
	// forwardTimeout bounds a forwarded decision, retries included, when
	// the caller's context has no earlier deadline.
	forwardTimeout = 15 * time.Second
	// controlledShutdownTimeout bounds the hand-over of leadership in Close.
	controlledShutdownTimeout = 5 * time.Second
)

// peerKey marks a context as serving a request from a peer broker.
type peerKey struct{}

func fromPeer(ctx context.Context) bool {
	v, _ := ctx.Value(peerKey{}).(bool)
	return v
}

// peerAPI wraps the handler of a request on the controller channel: it
// refuses a principal without CLUSTER_ACTION on the cluster with the
// request's CLUSTER_AUTHORIZATION_FAILED answer (authorize_requests.go),
// marks the context so the request is not forwarded again and stamps the
// answer with this node's applied raft index.
func (b *Broker) peerAPI(h protocol.Handler) protocol.Handler {
	return func(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
		if !b.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
			resp := clusterActionRefused(r.Body)
			if resp == nil {
				return nil, fmt.Errorf("broker: %s on the controller channel without CLUSTER_ACTION", r.Conn.Principal())
			}
			resp.SetVersion(r.Header.APIVersion)
			setAppliedIndex(resp, b.ctrl.Image().Index)
			return resp, nil
		}
		resp, err := h(context.WithValue(ctx, peerKey{}, true), r)
		if err == nil && resp != nil {
			resp.SetVersion(r.Header.APIVersion)
			setAppliedIndex(resp, b.ctrl.Image().Index)
		}
		return resp, err
	}
}

// setAppliedIndex puts index into resp's top-level tagged fields, if the
// response is flexible at its version.
func setAppliedIndex(resp kmsg.Response, index uint64) {
	if !resp.IsFlexible() {
		return
	}
	tags := unknownTags(resp)
	if tags == nil {
		return
	}
	tags.Set(appliedIndexTag, binary.BigEndian.AppendUint64(nil, index))
}

// appliedIndexOf reads the index setAppliedIndex put into resp.
func appliedIndexOf(resp kmsg.Response) (index uint64, ok bool) {
	tags := unknownTags(resp)
	if tags == nil {
		return 0, false
	}
	tags.Each(func(key uint32, val []byte) {
		if key == appliedIndexTag && len(val) == 8 {
			index, ok = binary.BigEndian.Uint64(val), true
		}
	})
	return index, ok
}

// unknownTags returns the address of the UnknownTags field every kmsg
// message struct has.
func unknownTags(resp kmsg.Response) *kmsg.Tags {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("UnknownTags")
	if !f.IsValid() || !f.CanAddr() {
		return nil
	}
	tags, _ := f.Addr().Interface().(*kmsg.Tags)
	return tags
}

// peerClient holds the inter-broker clients: cl, lazily created, of the
// other brokers' Kafka listeners, seeded with this broker's own listener
// (the local Metadata answer lists every live broker, which is how
// franz-go finds a broker by id); and ctrl, one client per controller
// listener address, of the controller channel.
type peerClient struct {
	mu     sync.Mutex
	cl     *kgo.Client
	ctrl   map[string]*kgo.Client
	closed bool

	// ctrlDial opens connections to controller listeners
	// (Options.RaftDial; nil means a net.Dialer).
	ctrlDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// voters maps each raft voter to its controller listener, parsed
	// once from controller.quorum.voters (controllerAddr).
	votersOnce sync.Once
	voters     map[int32]string
}

func (b *Broker) peerClient() (*kgo.Client, error) {
	b.peers.mu.Lock()
	defer b.peers.mu.Unlock()
	if b.peers.closed {
		return nil, errors.New("broker: closed")
	}
	if b.peers.cl == nil {
		host, port := b.advertised()
		cl, err := kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(fmt.Sprintf("%s:%d", host, port)),
			kgo.ClientID(peerClientIDPrefix + strconv.Itoa(int(b.cfg.NodeID))),
			kgo.DialTimeout(2 * time.Second),
			kgo.RequestRetries(0),
			kgo.MetadataMinAge(100 * time.Millisecond),
		}, b.peerDialOpts()...)...)
		if err != nil {
			return nil, err
		}
		b.peers.cl = cl
	}
	return b.peers.cl, nil
}

// controllerClient returns the client of the controller channel at addr.
// It sends its requests to that address alone (its seed broker); it needs
// no Metadata to find it.
func (b *Broker) controllerClient(addr string) (*kgo.Client, error) {
	b.peers.mu.Lock()
	defer b.peers.mu.Unlock()
	if b.peers.closed {
		return nil, errors.New("broker: closed")
	}
	if cl := b.peers.ctrl[addr]; cl != nil {
		return cl, nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(peerClientIDPrefix+strconv.Itoa(int(b.cfg.NodeID))),
		kgo.Dialer(b.dialController),
		kgo.DialTimeout(2*time.Second),
		kgo.RequestRetries(0),
		// franz-go asks for Metadata at least this often even when it
		// has nothing to look up; the channel answers it.
		kgo.MetadataMaxAge(time.Hour),
	)
	if err != nil {
		return nil, err
	}
	if b.peers.ctrl == nil {
		b.peers.ctrl = make(map[string]*kgo.Client)
	}
	b.peers.ctrl[addr] = cl
	return cl, nil
}

func (p *peerClient) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.cl != nil {
		p.cl.Close()
		p.cl = nil
	}
	for addr, cl := range p.ctrl {
		cl.Close()
		delete(p.ctrl, addr)
	}
}

// sendToController sends req to the controller channel of node id and,
// once answered, waits until this node's image has applied everything
// the answering broker had.
func (b *Broker) sendToController(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	defer requestWait(ctx)() // the controller's time, not this request's (request_quota.go)
	addr := b.controllerAddr(id)
	if addr == "" {
		addr = b.ctrl.VoterAddr(id) // added by AddRaftVoter (quorum.go)
	}
	if addr == "" {
		return nil, errNoControllerAddr(id)
	}
	cl, err := b.controllerClient(addr)
	if err != nil {
		return nil, err
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, errNoControllerAddr(id)
	}
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	if index, ok := appliedIndexOf(resp); ok {
		if err := b.waitApplied(ctx, index); err != nil {
			b.logger.Warn("forwarded change not yet applied locally", "api_key", req.Key(), "index", index, "err", err)
		}
	}
	return resp, nil
}

// onController calls call with the id of the active controller (this
// node's own id meaning: decide locally) until call reports an answer other
// than NOT_CONTROLLER or ctx ends; the last call's answer stands. A peer's
// request is decided locally once, never forwarded.
func (b *Broker) onController(ctx context.Context, call func(ctx context.Context, controllerID int32) (retry bool)) {
	defer requestWait(ctx)() // the controller's time, not this request's (request_quota.go)
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	self := b.cfg.NodeID
	backoff := 20 * time.Millisecond
	for {
		id := b.ctrl.ActiveControllerID()
		if id < 0 || fromPeer(ctx) || b.metadata().Brokers[id] == nil {
			id = self
		}
		if !call(ctx, id) || fromPeer(ctx) {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// remoteError turns a code and message from a controller broker's answer
// back into the error its controller returned.
func remoteError(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	ke := kerr.ErrorForCode(code)
	if msg != nil && *msg != "" && *msg != ke.Error() {
		return fmt.Errorf("%w: %s", ke, *msg)
	}
	return ke
}

// transportError is how a forwarded decision fails when no answer came
// back: the request may have reached the controller and been committed
// (only the answer was lost), so the outcome is unknown
// (controller.ErrOutcomeUnknown), never a rejection. Clients get
// NOT_CONTROLLER, which they retry after refreshing metadata, and
// onController retries it against the then active controller, as Kafka's
// forwarding does after a disconnect.
func transportError(err error) error {
	return fmt.Errorf("%w: %w: no answer from the active controller: %v", kerr.NotController, controller.ErrOutcomeUnknown, err)
}

// outcomeUnknown reports whether err leaves open whether the decision was
// applied.
func outcomeUnknown(err error) bool { return errors.Is(err, controller.ErrOutcomeUnknown) }

func isNotController(err error) bool { return errors.Is(err, kerr.NotController) }

// timeoutMillis is what is left of ctx's deadline, for requests that carry
// a timeout.
func timeoutMillis(ctx context.Context) int32 {
	if d, ok := ctx.Deadline(); ok {
		return int32(max(time.Until(d).Milliseconds(), 1))
	}
	return int32(forwardTimeout.Milliseconds())
}

// createTopics is Controller.CreateTopics on the active controller.
func (b *Broker) createTopics(ctx context.Context, topics []controller.CreateTopic, validateOnly bool) []controller.CreateTopicResult {
	var results []controller.CreateTopicResult
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			results = b.decideCreateTopics(ctx, topics, validateOnly)
		} else {
			results = b.forwardCreateTopics(ctx, id, topics, validateOnly)
		}
		return slices.ContainsFunc(results, func(r controller.CreateTopicResult) bool { return isNotController(r.Err) })
	})
	return results
}

func (b *Broker) forwardCreateTopics(ctx context.Context, id int32, topics []controller.CreateTopic, validateOnly bool) []controller.CreateTopicResult {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	req.ValidateOnly = validateOnly
	for _, t := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Name, t.NumPartitions, t.ReplicationFactor
		for _, p := range slices.Sorted(maps.Keys(t.Assignment)) {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = p, t.Assignment[p]
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		for _, k := range slices.Sorted(maps.Keys(t.Configs)) {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, t.Configs[k]
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
	}
	results := make([]controller.CreateTopicResult, len(topics))
	for i, t := range topics {
		results[i] = controller.CreateTopicResult{Name: t.Name}
	}
	forwardMutationQuota(ctx, &req.UnknownTags)
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		for i := range results {
			results[i].Err = transportError(err)
		}
		return results
	}
	forwardedMutationThrottle(ctx, kresp)
	resp := kresp.(*kmsg.CreateTopicsResponse)
	byName := make(map[string]kmsg.CreateTopicsResponseTopic, len(resp.Topics))
	for _, st := range resp.Topics {
		byName[st.Topic] = st
	}
	for i := range results {
		st, ok := byName[results[i].Name]
		if !ok {
			results[i].Err = fmt.Errorf("%w: the controller did not answer for this topic", kerr.UnknownServerError)
			continue
		}
		results[i].TopicID, results[i].NumPartitions, results[i].ReplicationFactor = st.TopicID, st.NumPartitions, st.ReplicationFactor
		results[i].Err = remoteError(st.ErrorCode, st.ErrorMessage)
	}
	return results
}

// deleteTopics is Controller.DeleteTopics on the active controller.
func (b *Broker) deleteTopics(ctx context.Context, names []string, ids [][16]byte) []controller.DeleteTopicResult {
	var results []controller.DeleteTopicResult
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			results = b.decideDeleteTopics(ctx, names, ids)
		} else {
			results = b.forwardDeleteTopics(ctx, id, names, ids)
		}
		return slices.ContainsFunc(results, func(r controller.DeleteTopicResult) bool { return isNotController(r.Err) })
	})
	return results
}

func (b *Broker) forwardDeleteTopics(ctx context.Context, id int32, names []string, ids [][16]byte) []controller.DeleteTopicResult {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	results := make([]controller.DeleteTopicResult, 0, len(names)+len(ids))
	for _, n := range names {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, t)
		req.TopicNames = append(req.TopicNames, n)
		results = append(results, controller.DeleteTopicResult{Name: n})
	}
	for _, tid := range ids {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.TopicID = tid
		req.Topics = append(req.Topics, t)
		results = append(results, controller.DeleteTopicResult{TopicID: tid})
	}
	forwardMutationQuota(ctx, &req.UnknownTags)
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		for i := range results {
			results[i].Err = transportError(err)
		}
		return results
	}
	forwardedMutationThrottle(ctx, kresp)
	resp := kresp.(*kmsg.DeleteTopicsResponse)
	// The controller's broker answers in request order, names first.
	for i := range results {
		if i >= len(resp.Topics) {
			results[i].Err = fmt.Errorf("%w: the controller did not answer for this topic", kerr.UnknownServerError)
			continue
		}
		st := resp.Topics[i]
		if st.Topic != nil {
			results[i].Name = *st.Topic
		}
		if st.TopicID != ([16]byte{}) {
			results[i].TopicID = st.TopicID
		}
		results[i].Err = remoteError(st.ErrorCode, st.ErrorMessage)
	}
	return results
}

// createPartitions is Controller.CreatePartitions on the active controller.
func (b *Broker) createPartitions(ctx context.Context, reqs []controller.CreatePartitions, validateOnly bool) []controller.CreatePartitionsResult {
	var results []controller.CreatePartitionsResult
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			results = b.decideCreatePartitions(ctx, reqs, validateOnly)
		} else {
			results = b.forwardCreatePartitions(ctx, id, reqs, validateOnly)
		}
		return slices.ContainsFunc(results, func(r controller.CreatePartitionsResult) bool { return isNotController(r.Err) })
	})
	return results
}

func (b *Broker) forwardCreatePartitions(ctx context.Context, id int32, reqs []controller.CreatePartitions, validateOnly bool) []controller.CreatePartitionsResult {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	req.ValidateOnly = validateOnly
	results := make([]controller.CreatePartitionsResult, len(reqs))
	for i, r := range reqs {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = r.Topic, r.Count
		for _, replicas := range r.Assignment {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = replicas
			rt.Assignment = append(rt.Assignment, a)
		}
		req.Topics = append(req.Topics, rt)
		results[i].Topic = r.Topic
	}
	forwardMutationQuota(ctx, &req.UnknownTags)
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		for i := range results {
			results[i].Err = transportError(err)
		}
		return results
	}
	forwardedMutationThrottle(ctx, kresp)
	resp := kresp.(*kmsg.CreatePartitionsResponse)
	byName := make(map[string]kmsg.CreatePartitionsResponseTopic, len(resp.Topics))
	for _, st := range resp.Topics {
		byName[st.Topic] = st
	}
	for i := range results {
		st, ok := byName[results[i].Topic]
		if !ok {
			results[i].Err = fmt.Errorf("%w: the controller did not answer for this topic", kerr.UnknownServerError)
			continue
		}
		results[i].Err = remoteError(st.ErrorCode, st.ErrorMessage)
	}
	return results
}

// alterConfigs is Controller.AlterConfigs on the active controller.
func (b *Broker) alterConfigs(ctx context.Context, res controller.ConfigResource, ops []controller.ConfigOp, incremental, validateOnly bool) error {
	var result error
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			result = b.ctrl.AlterConfigs(ctx, res, ops, incremental, validateOnly)
		} else {
			result = b.forwardAlterConfigs(ctx, id, res, ops, incremental, validateOnly)
		}
		return isNotController(result)
	})
	return result
}

func (b *Broker) forwardAlterConfigs(ctx context.Context, id int32, res controller.ConfigResource, ops []controller.ConfigOp, incremental, validateOnly bool) error {
	var req kmsg.Request
	if incremental {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.ValidateOnly = validateOnly
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		for _, op := range ops {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value, c.Op = op.Key, op.Value, kmsg.IncrementalAlterConfigOp(op.Op)
			rr.Configs = append(rr.Configs, c)
		}
		r.Resources = append(r.Resources, rr)
		req = r
	} else {
		r := kmsg.NewPtrAlterConfigsRequest()
		r.ValidateOnly = validateOnly
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		for _, op := range ops {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = op.Key, op.Value
			rr.Configs = append(rr.Configs, c)
		}
		r.Resources = append(r.Resources, rr)
		req = r
	}
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		return transportError(err)
	}
	switch resp := kresp.(type) {
	case *kmsg.IncrementalAlterConfigsResponse:
		if len(resp.Resources) == 1 {
			return remoteError(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage)
		}
	case *kmsg.AlterConfigsResponse:
		if len(resp.Resources) == 1 {
			return remoteError(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage)
		}
	}
	return fmt.Errorf("%w: the controller did not answer for the resource", kerr.UnknownServerError)
}

// configResourceFor is configResource for a change, except that a peer
// broker forwarding a change of its own broker config may name any
// registered broker: the check that a client names the broker it talks to
// was made there. The empty topic name is INVALID_REQUEST, as Kafka's
// ControllerConfigurationValidator answers a change of it.
func (b *Broker) configResourceFor(ctx context.Context, img *controller.Image, typ int8, name string) (controller.ConfigResource, error) {
	if typ == resourceTopic && name == "" {
		return controller.ConfigResource{}, fmt.Errorf("%w: Default topic resources are not allowed.", kerr.InvalidRequest)
	}
	if fromPeer(ctx) && typ == resourceBroker && name != "" {
		if id, err := strconv.Atoi(name); err == nil && img.Brokers[int32(id)] != nil {
			return controller.ConfigResource{Type: typ, Name: name}, nil
		}
	}
	return b.configResource(img, typ, name)
}

// allocateProducerIDs is Controller.AllocateProducerIDs on the active
// controller; it returns the first id and the size of the block.
func (b *Broker) allocateProducerIDs(ctx context.Context, count int64) (first, n int64, err error) {
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			first, err = b.ctrl.AllocateProducerIDs(ctx, b.cfg.NodeID, count)
			n = count
			return isNotController(err)
		}
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, b.brokerEpoch()
		kresp, sendErr := b.sendToController(ctx, id, req)
		if sendErr != nil {
			err = transportError(sendErr)
			return true
		}
		resp := kresp.(*kmsg.AllocateProducerIDsResponse)
		err = remoteError(resp.ErrorCode, nil)
		first, n = resp.ProducerIDStart, int64(resp.ProducerIDLen)
		return isNotController(err)
	})
	return first, n, err
}

// brokerEpoch is this broker's epoch in the reconciled image, or -1.
func (b *Broker) brokerEpoch() int64 {
	if br := b.metadata().Brokers[b.cfg.NodeID]; br != nil {
		return br.Epoch
	}
	return -1
}

// alterPartitions proposes ISR changes of partitions this node leads to the
// active controller, all in one AlterPartition request, and returns the
// answer for each, parallel to reqs. The error is for the whole request
// (NOT_CONTROLLER when no controller answered in time); the controller's
// answer is in this node's image by the time it returns.
func (b *Broker) alterPartitions(ctx context.Context, reqs []controller.AlterPartitionRequest) ([]controller.AlterPartitionResult, error) {
	var (
		results []controller.AlterPartitionResult
		err     error
	)
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			results, err = b.ctrl.AlterPartitions(ctx, reqs)
		} else {
			results, err = b.forwardAlterPartitions(ctx, id, reqs)
		}
		return isNotController(err)
	})
	return results, err
}

func (b *Broker) forwardAlterPartitions(ctx context.Context, id int32, aps []controller.AlterPartitionRequest) ([]controller.AlterPartitionResult, error) {
	img := b.metadata()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = aps[0].BrokerID, aps[0].BrokerEpoch
	// One request topic per run of proposals for the same topic, so the
	// answer comes back in the order of aps.
	topicIDs := make([][16]byte, len(aps))
	for i, ap := range aps {
		topicID, topic := ap.TopicID, ap.Topic
		if t := lookupTopic(img, topicID != ([16]byte{}), topic, topicID); t != nil {
			topicID, topic = t.ID, t.Name
		}
		topicIDs[i] = topicID
		if n := len(req.Topics); n == 0 || req.Topics[n-1].TopicID != topicID || req.Topics[n-1].Topic != topic {
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.Topic, rt.TopicID = topic, topicID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = ap.Partition, ap.LeaderEpoch, ap.PartitionEpoch
		rp.NewISR = slices.Clone(ap.NewISR)
		for _, r := range ap.NewISR {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = r, -1
			if br := img.Brokers[r]; br != nil {
				e.BrokerEpoch = br.Epoch
			}
			rp.NewEpochISR = append(rp.NewEpochISR, e)
		}
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}

	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		return nil, transportError(err)
	}
	resp := kresp.(*kmsg.AlterPartitionResponse)
	if err := remoteError(resp.ErrorCode, nil); err != nil {
		return nil, err
	}
	var answers []kmsg.AlterPartitionResponseTopicPartition
	for _, rt := range resp.Topics {
		answers = append(answers, rt.Partitions...)
	}
	if len(answers) != len(aps) {
		return nil, fmt.Errorf("%w: the controller answered for %d of %d partitions", kerr.UnknownServerError, len(answers), len(aps))
	}
	// The answer has no replica lists; the image, caught up with the
	// controller's answer, has.
	img = b.metadata()
	results := make([]controller.AlterPartitionResult, len(aps))
	for i, sp := range answers {
		if sp.Partition != aps[i].Partition {
			results[i].Err = fmt.Errorf("%w: the controller answered for partition %d, not %d", kerr.UnknownServerError, sp.Partition, aps[i].Partition)
			continue
		}
		if err := remoteError(sp.ErrorCode, nil); err != nil {
			results[i].Err = err
			continue
		}
		p := controller.Partition{
			Partition:      sp.Partition,
			ISR:            slices.Clone(sp.ISR),
			Leader:         sp.LeaderID,
			LeaderEpoch:    sp.LeaderEpoch,
			PartitionEpoch: sp.PartitionEpoch,
		}
		if t := lookupTopic(img, true, "", topicIDs[i]); t != nil && int(sp.Partition) < len(t.Partitions) {
			p.Replicas = slices.Clone(t.Partitions[sp.Partition].Replicas)
		}
		results[i].Partition = p
	}
	return results, nil
}

// controlledShutdown moves this broker's leaderships to other in-sync
// replicas before it stops (Kafka's controlled shutdown), within
// controlledShutdownTimeout. It does nothing for a single node, with
// controlled.shutdown.enable=false, or when no partition this node leads
// has another replica. Failure is logged, never fatal: the node stops
// anyway and the controller fences it when it leaves.
func (b *Broker) controlledShutdown() {
	if len(b.cfg.ControllerQuorumVoters) == 0 {
		return
	}
	if v, ok := b.cfg.Get("controlled.shutdown.enable"); ok && v == "false" {
		return
	}
	if !b.leadsReplicatedPartition(b.metadata()) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), controlledShutdownTimeout)
	defer cancel()
	start := time.Now()
	var err error
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			err = b.ctrl.ControlledShutdown(ctx, b.cfg.NodeID)
			return isNotController(err)
		}
		req := kmsg.NewPtrControlledShutdownRequest()
		req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, b.brokerEpoch()
		kresp, sendErr := b.sendToController(ctx, id, req)
		if sendErr != nil {
			err = transportError(sendErr)
			return true
		}
		err = remoteError(kresp.(*kmsg.ControlledShutdownResponse).ErrorCode, nil)
		return isNotController(err)
	})
	if err != nil {
		b.logger.Warn("controlled shutdown failed; stopping anyway", "err", err)
		return
	}
	b.logger.Info("controlled shutdown done", "took", time.Since(start))
}

// leadsReplicatedPartition reports whether this node leads a partition
// that has another live (unfenced) replica to take over.
func (b *Broker) leadsReplicatedPartition(img *controller.Image) bool {
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			if p.Leader != b.cfg.NodeID {
				continue
			}
			for _, r := range p.Replicas {
				if br := img.Brokers[r]; r != b.cfg.NodeID && br != nil && !br.Fenced {
					return true
				}
			}
		}
	}
	return false
}
