package controller

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/sluicedev/sluice/quotas"
)

// Image is the cluster metadata as of one applied raft index. An Image is
// immutable once published: the FSM builds the next image copy-on-write and
// swaps a pointer, so readers (request handlers, the broker's reconciler) can
// hold one without locks and never see a half-applied command. Callers must
// never modify an Image or anything reachable from it.
type Image struct {
	// Index is the raft index of the last command applied to this image.
	Index uint64
	// ClusterID is Kafka's cluster id (22 base64url characters); empty until
	// the first InitCluster command is applied.
	ClusterID string
	// Brokers holds every registered broker by node id.
	Brokers map[int32]*Broker
	// Topics and TopicsByID index the same *Topic values by name and by id.
	Topics     map[string]*Topic
	TopicsByID map[[16]byte]*Topic
	// BrokerConfigs holds dynamic broker configs: key "" is the cluster-wide
	// default, "<id>" the per-broker override. Only explicitly set keys appear.
	BrokerConfigs map[string]map[string]string
	// GroupConfigs holds the configs set on groups (KIP-848's GROUP config
	// resource) by group id. Only explicitly set keys appear; a group id
	// needs no group to have configs, and deleting a group keeps them, as
	// in Kafka.
	GroupConfigs map[string]map[string]string
	// ClientMetricsConfigs holds the client metrics subscriptions
	// (KIP-714's CLIENT_METRICS config resources, client_metrics.go) by
	// name; nil or empty when there are none.
	ClientMetricsConfigs map[string]map[string]string
	// NextProducerID is the first producer id not yet handed out in a
	// block; producer ids are unique cluster-wide.
	NextProducerID int64
	// ClientQuotas are the client quotas set (client_quotas.go), nil when
	// none are; built once per change and shared by later images.
	ClientQuotas *quotas.ClientConfig
	// Scram holds the SCRAM credentials of users (scram.go), nil when
	// none are set; built once per change and shared by later images.
	Scram *ScramCredentials
	// ACLs holds the access control entries (acls.go), nil when none
	// are set; built once per change and shared by later images.
	ACLs *ACLSet
	// Features holds the finalized feature levels (KIP-584, features.go)
	// by feature name, e.g. "transaction.version"; a feature not listed
	// is at level 0.
	Features map[string]int16

	// changed names the topics created, changed or deleted by the command
	// that built this image from the image at index changedFrom
	// (TopicsChangedSince); hasDelta is false for an image that was not
	// built by one command (a restored snapshot).
	changed     []string
	changedFrom uint64
	hasDelta    bool
}

// TopicsChangedSince returns the names of the topics created, changed
// (partitions, configs) or deleted between prev and img, when img is the
// image applying one command to prev built; ok is false otherwise, and the
// caller compares the topic maps. A name may appear twice. It lets a
// reader of every image (the broker's reconcile) do work proportional to
// the change rather than to the number of topics.
func (img *Image) TopicsChangedSince(prev *Image) (names []string, ok bool) {
	if prev == nil || !img.hasDelta || img.changedFrom != prev.Index {
		return nil, false
	}
	return img.changed, true
}

// Broker is one registered broker: its Kafka endpoint and liveness.
type Broker struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	// Endpoints are the broker's advertised listeners, one per named
	// listener (Kafka's BrokerRegistration endpoints); a client is told
	// the endpoint of the listener it is connected to. Empty in logs
	// written before listeners were named: Host and Port then stand for
	// the one listener. Host and Port are always the endpoint of the
	// inter-broker listener.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	Rack      string     `json:"rack,omitempty"`
	Fenced    bool       `json:"fenced,omitempty"`
	// ShutDown marks a broker fenced by its own controlled shutdown; the
	// controller keeps it fenced while this incarnation is still gossiping,
	// and a restarted process (a new incarnation) is unfenced as usual.
	ShutDown bool `json:"shutDown,omitempty"`
	// Epoch is the raft index of the broker's latest registration, so it
	// grows with every re-registration as Kafka's broker epoch does (KIP-631
	// uses the offset of the registration record).
	Epoch int64 `json:"epoch"`
	// Incarnation is a random id chosen by the broker process that
	// registered; a new one with the same node id means a restarted process.
	Incarnation [16]byte `json:"incarnation"`
	// OfflineLogDirs and OfflineReplicas are the broker's failed log
	// directories and the replicas offline with them, as it reported them
	// (log_dirs.go); no election picks such a replica. A new registration
	// clears them.
	OfflineLogDirs  [][16]byte   `json:"offlineLogDirs,omitempty"`
	OfflineReplicas []ReplicaRef `json:"offlineReplicas,omitempty"`
}

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Listener         string `json:"listener"`
	Host             string `json:"host"`
	Port             int32  `json:"port"`
	SecurityProtocol string `json:"securityProtocol"`
}

// Topic is one topic and its partitions.
type Topic struct {
	Name     string   `json:"name"`
	ID       [16]byte `json:"id"`
	Internal bool     `json:"internal,omitempty"`
	// Partitions is indexed by partition number: Partitions[i].Partition == i.
	Partitions []*Partition `json:"partitions"`
	// Configs holds only the explicitly set topic configs; defaults are the
	// broker's business, so changing a default never rewrites every topic.
	Configs map[string]string `json:"configs,omitempty"`
}

// Partition is one partition's replica set and leadership, Kafka's
// PartitionRecord / PartitionChangeRecord state.
type Partition struct {
	Partition int32 `json:"partition"`
	// Replicas is the assigned replica list (AR); Replicas[0] is the
	// preferred leader.
	Replicas []int32 `json:"replicas"`
	ISR      []int32 `json:"isr"`
	// Leader is the leading broker id, or -1 when the partition is offline.
	Leader int32 `json:"leader"`
	// LeaderEpoch grows on every leader change; PartitionEpoch on every
	// change of the partition at all (replicas, ISR, leader), which is what
	// AlterPartition requests are checked against.
	LeaderEpoch    int32 `json:"leaderEpoch"`
	PartitionEpoch int32 `json:"partitionEpoch"`
	// AddingReplicas and RemovingReplicas are set while the partition is
	// being reassigned (reassign.go): Replicas is then the target followed
	// by the replicas leaving, AddingReplicas the target replicas not in
	// the original assignment and RemovingReplicas the original replicas
	// not in the target. Both are empty otherwise.
	AddingReplicas   []int32 `json:"addingReplicas,omitempty"`
	RemovingReplicas []int32 `json:"removingReplicas,omitempty"`
	// ELR and LastKnownELR are KIP-966's eligible leader replicas (replicas
	// that left the ISR while it was below min.insync.replicas, so they
	// hold every committed record) and the last members of the ELR known
	// before it emptied (elr.go). Both are empty while the
	// eligible.leader.replicas.version feature is 0.
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"lastKnownElr,omitempty"`
}

// emptyImage returns the image of a cluster that has applied nothing.
func emptyImage() *Image {
	return &Image{
		Brokers:       map[int32]*Broker{},
		Topics:        map[string]*Topic{},
		TopicsByID:    map[[16]byte]*Topic{},
		BrokerConfigs: map[string]map[string]string{},
		GroupConfigs:  map[string]map[string]string{},
	}
}

// UnfencedBrokers returns the ids of the brokers that may host new replicas,
// in ascending order.
func (img *Image) UnfencedBrokers() []int32 {
	var ids []int32
	for id, b := range img.Brokers {
		if !b.Fenced {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// BrokerConfig returns the dynamic config set for one broker resource name
// ("" cluster default, "<id>" one broker); nil if none is set.
func (img *Image) BrokerConfig(name string) map[string]string {
	return img.BrokerConfigs[name]
}

// brokerConfigName is the BrokerConfigs key of broker id.
func brokerConfigName(id int32) string { return strconv.FormatInt(int64(id), 10) }

// imageBuilder produces the next image from a base copy-on-write: the
// top-level maps are copied the first time a command changes them, and a
// changed topic or broker is replaced by a new value, never modified, because
// the base image may still be held by readers.
type imageBuilder struct {
	base *Image
	next *Image

	brokersCopied bool
	topicsCopied  bool
	configsCopied bool
	groupsCopied  bool
	// ownTopics holds the topics this builder already replaced by copies
	// (with their own Partitions slices), which it may modify further.
	ownTopics map[[16]byte]*Topic
	// elections and unclean count the leader elections the command makes
	// (metrics_state.go).
	elections, unclean int
	// changed names the topics putTopic and removeTopic touched.
	changed []string
}

func newImageBuilder(base *Image) *imageBuilder {
	next := *base
	return &imageBuilder{base: base, next: &next}
}

// brokers returns the next image's broker map, safe to modify.
func (b *imageBuilder) brokers() map[int32]*Broker {
	if !b.brokersCopied {
		b.next.Brokers = maps.Clone(b.base.Brokers)
		b.brokersCopied = true
	}
	return b.next.Brokers
}

// putTopic adds or replaces a topic in both topic indexes.
func (b *imageBuilder) putTopic(t *Topic) {
	b.copyTopics()
	b.changed = append(b.changed, t.Name)
	b.next.Topics[t.Name] = t
	b.next.TopicsByID[t.ID] = t
}

// removeTopic drops a topic from both topic indexes.
func (b *imageBuilder) removeTopic(t *Topic) {
	b.copyTopics()
	b.changed = append(b.changed, t.Name)
	delete(b.next.Topics, t.Name)
	delete(b.next.TopicsByID, t.ID)
}

// setPartition replaces one partition of topic id, which must exist.
func (b *imageBuilder) setPartition(id [16]byte, p *Partition) {
	if t := b.base.TopicsByID[id]; t != nil && int(p.Partition) < len(t.Partitions) {
		b.countElection(t.Partitions[p.Partition], p)
	}
	t, ok := b.ownTopics[id]
	if !ok {
		cp := *b.next.TopicsByID[id]
		cp.Partitions = slices.Clone(cp.Partitions)
		t = &cp
		if b.ownTopics == nil {
			b.ownTopics = map[[16]byte]*Topic{}
		}
		b.ownTopics[id] = t
		b.putTopic(t)
	}
	t.Partitions[p.Partition] = p
}

func (b *imageBuilder) copyTopics() {
	if !b.topicsCopied {
		b.next.Topics = maps.Clone(b.base.Topics)
		b.next.TopicsByID = maps.Clone(b.base.TopicsByID)
		b.topicsCopied = true
	}
}

// setBrokerConfig replaces one broker resource's config set; an empty set
// removes the resource so the image holds only what was explicitly set.
func (b *imageBuilder) setBrokerConfig(name string, configs map[string]string) {
	if !b.configsCopied {
		b.next.BrokerConfigs = maps.Clone(b.base.BrokerConfigs)
		b.configsCopied = true
	}
	if len(configs) == 0 {
		delete(b.next.BrokerConfigs, name)
		return
	}
	b.next.BrokerConfigs[name] = configs
}

// setGroupConfig replaces one group's config set; an empty set removes the
// group so the image holds only what was explicitly set.
func (b *imageBuilder) setGroupConfig(group string, configs map[string]string) {
	if !b.groupsCopied {
		b.next.GroupConfigs = maps.Clone(b.base.GroupConfigs)
		if b.next.GroupConfigs == nil {
			b.next.GroupConfigs = map[string]map[string]string{}
		}
		b.groupsCopied = true
	}
	if len(configs) == 0 {
		delete(b.next.GroupConfigs, group)
		return
	}
	b.next.GroupConfigs[group] = configs
}

// imageSnapshotVersion is the format version of an encoded image snapshot.
// Frozen: bump it, and keep decoding the old one, if the shape changes.
// Fields added with omitempty (GroupConfigs) keep version 1: a snapshot
// without them decodes as before.
const imageSnapshotVersion = 1

// imageSnapshot is the JSON shape of a whole image in a raft snapshot. Slices
// sorted by key keep snapshots of equal images byte-identical, which makes
// them easy to compare in tests and when debugging.
type imageSnapshot struct {
	Version        int                          `json:"version"`
	Index          uint64                       `json:"index"`
	ClusterID      string                       `json:"clusterId"`
	Brokers        []*Broker                    `json:"brokers"`
	Topics         []*Topic                     `json:"topics"`
	BrokerConfigs  map[string]map[string]string `json:"brokerConfigs,omitempty"`
	GroupConfigs   map[string]map[string]string `json:"groupConfigs,omitempty"`
	NextProducerID int64                        `json:"nextProducerId,omitempty"`
	// ClientQuotas are the quota records that rebuild the image's client
	// quotas, as Kafka's snapshot holds ClientQuotaRecords.
	ClientQuotas []clientQuotaRecord `json:"clientQuotas,omitempty"`
	// Scram and ACLs are the records that rebuild the image's SCRAM
	// credentials (scram.go) and ACLs (acls.go).
	Scram []scramRecord `json:"scram,omitempty"`
	ACLs  []aclRecord   `json:"acls,omitempty"`
	// Features are the finalized feature levels (features.go).
	Features map[string]int16 `json:"features,omitempty"`
	// ClientMetrics are the client metrics subscriptions (client_metrics.go).
	ClientMetrics map[string]map[string]string `json:"clientMetrics,omitempty"`
}

func snapshotOf(img *Image) *imageSnapshot {
	s := &imageSnapshot{
		Version:        imageSnapshotVersion,
		Index:          img.Index,
		ClusterID:      img.ClusterID,
		BrokerConfigs:  img.BrokerConfigs,
		GroupConfigs:   img.GroupConfigs,
		ClientMetrics:  img.ClientMetricsConfigs,
		NextProducerID: img.NextProducerID,
		ClientQuotas:   quotaSnapshotRecords(img.ClientQuotas),
		Scram:          scramSnapshotRecords(img.Scram),
		ACLs:           aclSnapshotRecords(img.ACLs),
		Features:       img.Features,
	}
	for _, b := range img.Brokers {
		s.Brokers = append(s.Brokers, b)
	}
	sort.Slice(s.Brokers, func(i, j int) bool { return s.Brokers[i].ID < s.Brokers[j].ID })
	for _, t := range img.Topics {
		s.Topics = append(s.Topics, t)
	}
	sort.Slice(s.Topics, func(i, j int) bool { return s.Topics[i].Name < s.Topics[j].Name })
	return s
}

// image rebuilds the indexes of a decoded snapshot.
func (s *imageSnapshot) image() (*Image, error) {
	img := emptyImage()
	img.Index = s.Index
	img.ClusterID = s.ClusterID
	img.NextProducerID = s.NextProducerID
	img.Features = s.Features
	img.ClientMetricsConfigs = s.ClientMetrics
	for _, b := range s.Brokers {
		img.Brokers[b.ID] = b
	}
	for _, t := range s.Topics {
		img.Topics[t.Name] = t
		img.TopicsByID[t.ID] = t
	}
	for name, cfg := range s.BrokerConfigs {
		img.BrokerConfigs[name] = cfg
	}
	for group, cfg := range s.GroupConfigs {
		img.GroupConfigs[group] = cfg
	}
	qs, err := applyQuotaRecords(nil, s.ClientQuotas)
	if err != nil {
		return nil, fmt.Errorf("controller: metadata snapshot client quotas: %w", err)
	}
	img.ClientQuotas = qs
	if img.Scram, err = scramFromRecords(s.Scram); err != nil {
		return nil, fmt.Errorf("controller: metadata snapshot SCRAM credentials: %w", err)
	}
	if img.ACLs, err = aclsFromRecords(s.ACLs); err != nil {
		return nil, fmt.Errorf("controller: metadata snapshot ACLs: %w", err)
	}
	return img, nil
}
