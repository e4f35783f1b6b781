package controller

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CreateTopic is one topic of a CreateTopics request.
type CreateTopic struct {
	Name string
	// NumPartitions and ReplicationFactor are -1 for the broker defaults,
	// and must both be -1 when Assignment is given.
	NumPartitions     int32
	ReplicationFactor int16
	// Assignment maps every partition 0..n-1 to its replicas, the first
	// being the preferred leader.
	Assignment map[int32][]int32
	// Configs are topic config overrides; a nil value is invalid.
	Configs map[string]*string
}

// CreateTopicResult is the outcome for one topic. On error NumPartitions and
// ReplicationFactor are -1 and TopicID is zero, as in Kafka's response; a
// validate-only success reports the partition count and replication factor
// that would be used but a zero id, since no topic exists.
type CreateTopicResult struct {
	Name              string
	TopicID           [16]byte
	NumPartitions     int32
	ReplicationFactor int16
	Err               error
}

// CreateTopics creates topics, each independently: one bad topic fails only
// its own result. All accepted topics are written as one command, so they
// appear in the image together. With validateOnly every check runs and
// nothing is written. A request for more than MaxPartitionsPerRequest
// partitions fails as a whole, and no broker is given more partition
// replicas than Config.BrokerPartitions allows (partition_limits.go).
func (c *Controller) CreateTopics(ctx context.Context, topics []CreateTopic, validateOnly bool) []CreateTopicResult {
	results := make([]CreateTopicResult, len(topics))
	for i, t := range topics {
		results[i] = CreateTopicResult{Name: t.Name, NumPartitions: -1, ReplicationFactor: -1}
	}
	occurrences := map[string]int{}
	for _, t := range topics {
		occurrences[t.Name]++
	}
	if createTopicsPartitions(topics, occurrences, c.cfg.DefaultPartitions) > MaxPartitionsPerRequest {
		for i := range results {
			results[i].Err = errExcessivePartitions
		}
		return results
	}
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}

	img := c.Image()
	brokers := placementBrokers(img)
	load := newBrokerLoad(img, c.cfg.BrokerPartitions)
	var (
		cmd     createTopicsCmd
		planned []int // indexes into results of the topics in cmd
		pending = map[string]bool{}
	)
	for i, t := range topics {
		if occurrences[t.Name] > 1 {
			results[i].Err = fmt.Errorf("%w: Duplicate topic name.", kerr.InvalidRequest)
			continue
		}
		rec, err := c.planTopic(img, brokers, pending, t)
		if err == nil {
			err = load.add(rec.Replicas)
		}
		if err != nil {
			results[i].Err = err
			continue
		}
		pending[rec.Name] = true
		results[i].NumPartitions = int32(len(rec.Replicas))
		results[i].ReplicationFactor = int16(len(rec.Replicas[0]))
		if !validateOnly {
			results[i].TopicID = rec.ID
		}
		cmd.Topics = append(cmd.Topics, rec)
		planned = append(planned, i)
	}
	if validateOnly || len(cmd.Topics) == 0 {
		return results
	}
	if err := c.apply(ctx, cmd); err != nil {
		for _, i := range planned {
			results[i] = CreateTopicResult{Name: topics[i].Name, NumPartitions: -1, ReplicationFactor: -1, Err: err}
		}
	}
	return results
}

// planTopic validates one topic against img and the topics already planned
// in the same request, and decides its id and replica placement.
func (c *Controller) planTopic(img *Image, brokers []placementBroker, pending map[string]bool, t CreateTopic) (topicRecord, error) {
	if err := validateTopicName(t.Name); err != nil {
		return topicRecord{}, err
	}
	if t.Name == metadataTopicName {
		return topicRecord{}, fmt.Errorf("%w: Creation of internal topic %s is prohibited.", kerr.InvalidRequest, t.Name)
	}
	if _, ok := img.Topics[t.Name]; ok {
		return topicRecord{}, fmt.Errorf("%w: Topic '%s' already exists.", kerr.TopicAlreadyExists, t.Name)
	}
	if other := collidingTopic(img, t.Name); other != "" {
		return topicRecord{}, fmt.Errorf("%w: Topic '%s' collides with existing topic: %s", kerr.InvalidTopicException, t.Name, other)
	}
	for other := range pending {
		if collisionKey(other) == collisionKey(t.Name) {
			return topicRecord{}, fmt.Errorf("%w: Topic '%s' collides with topic '%s' in the same request", kerr.InvalidTopicException, t.Name, other)
		}
	}

	var replicas [][]int32
	if len(t.Assignment) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return topicRecord{}, fmt.Errorf("%w: Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.", kerr.InvalidRequest)
		}
		var err error
		if replicas, err = assignmentList(t.Assignment); err != nil {
			return topicRecord{}, err
		}
		if err := validateAssignment(img, replicas, 0); err != nil {
			return topicRecord{}, err
		}
	} else {
		partitions, rf := t.NumPartitions, int(t.ReplicationFactor)
		if partitions == -1 {
			partitions = max(c.cfg.DefaultPartitions, 1)
		}
		if rf == -1 {
			rf = int(max(c.cfg.DefaultReplicationFactor, 1))
		}
		if partitions <= 0 {
			return topicRecord{}, fmt.Errorf("%w: Number of partitions was set to an invalid non-positive value.", kerr.InvalidPartitions)
		}
		if rf <= 0 {
			return topicRecord{}, fmt.Errorf("%w: Replication factor must be larger than 0, or -1 to use the default value.", kerr.InvalidReplicationFactor)
		}
		if err := checkReplicationFactor(rf, len(brokers)); err != nil {
			return topicRecord{}, err
		}
		replicas = placement{
			brokers:           brokers,
			partitions:        int(partitions),
			replicationFactor: rf,
			fixedStart:        -1,
			intn:              rand.IntN,
		}.place()
	}

	configs, err := c.validateNewTopicConfigs(t.Configs)
	if err != nil {
		return topicRecord{}, err
	}
	return topicRecord{
		Name:     t.Name,
		ID:       c.newTopicID(img),
		Internal: IsInternalTopic(t.Name),
		Replicas: replicas,
		Configs:  configs,
	}, nil
}

// newTopicID draws an id not used by any topic in img. A collision among
// 122 random bits will not happen, but checking is cheap and the FSM would
// otherwise reject the whole command.
func (c *Controller) newTopicID(img *Image) [16]byte {
	for {
		id := newUUID()
		if _, taken := img.TopicsByID[id]; !taken {
			return id
		}
	}
}

// checkReplicationFactor fails with Kafka's message when there are fewer
// brokers able to host replicas than the replication factor.
func checkReplicationFactor(rf, brokers int) error {
	if rf > brokers {
		return fmt.Errorf("%w: Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
			kerr.InvalidReplicationFactor, rf, rf, brokers)
	}
	return nil
}

// assignmentList turns a manual assignment keyed by partition into a list,
// requiring the keys to be exactly 0..n-1. CreateTopics has bounded n by
// MaxPartitionsPerRequest already.
func assignmentList(assignment map[int32][]int32) ([][]int32, error) {
	n := int32(len(assignment))
	out := make([][]int32, n)
	for p, r := range assignment {
		if p < 0 || p >= n {
			return nil, fmt.Errorf("%w: Partitions should be a consecutive 0-based integer sequence, but partition %d was given for %d partition(s).",
				kerr.InvalidReplicaAssignment, p, n)
		}
		out[p] = r
	}
	return out, nil
}

// validateAssignment checks manually assigned replica lists: none empty, no
// broker twice in one list, every broker registered, and all lists of the
// same length — rf if it is positive, else the first list's.
func validateAssignment(img *Image, replicas [][]int32, rf int) error {
	for _, r := range replicas {
		if len(r) == 0 {
			return fmt.Errorf("%w: The manual partition assignment includes an empty replica list.", kerr.InvalidReplicaAssignment)
		}
		if rf <= 0 {
			rf = len(r)
		}
		if len(r) != rf {
			return fmt.Errorf("%w: The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).",
				kerr.InvalidReplicaAssignment, len(r), rf)
		}
		seen := map[int32]bool{}
		for _, b := range r {
			if seen[b] {
				return fmt.Errorf("%w: The manual partition assignment includes the broker %d more than once.", kerr.InvalidReplicaAssignment, b)
			}
			seen[b] = true
			if _, ok := img.Brokers[b]; !ok {
				return fmt.Errorf("%w: The manual partition assignment includes broker %d, but no such broker is registered.", kerr.InvalidReplicaAssignment, b)
			}
		}
	}
	return nil
}

// validateNewTopicConfigs checks a CreateTopics config set and returns it
// without pointers.
func (c *Controller) validateNewTopicConfigs(configs map[string]*string) (map[string]string, error) {
	if len(configs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(configs))
	for k, v := range configs {
		if v == nil {
			return nil, fmt.Errorf("%w: Null value not supported for topic configs: %s", kerr.InvalidConfig, k)
		}
		if err := validateConfig(c.cfg.ValidateTopicConfig, k, *v); err != nil {
			return nil, err
		}
		out[k] = *v
	}
	return out, nil
}

// validateConfig runs a validator, turning its error into INVALID_CONFIG.
func validateConfig(validate func(key, value string) error, key, value string) error {
	if validate == nil {
		return nil
	}
	if err := validate(key, value); err != nil {
		return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
	}
	return nil
}

// DeleteTopicResult is the outcome for one topic of DeleteTopics.
type DeleteTopicResult struct {
	Name    string
	TopicID [16]byte
	Err     error
}

// DeleteTopics deletes topics named by name or by id. Results come in
// request order, names first, then ids, each filled in with both the name and
// the id when the topic exists. All deletions are one command.
func (c *Controller) DeleteTopics(ctx context.Context, names []string, ids [][16]byte) []DeleteTopicResult {
	results := make([]DeleteTopicResult, 0, len(names)+len(ids))
	for _, n := range names {
		results = append(results, DeleteTopicResult{Name: n})
	}
	for _, id := range ids {
		results = append(results, DeleteTopicResult{TopicID: id})
	}
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}

	img := c.Image()
	var (
		cmd     deleteTopicsCmd
		planned []int
		target  = map[[16]byte]bool{}
	)
	nameCount := map[string]int{}
	for _, n := range names {
		nameCount[n]++
	}
	idCount := map[[16]byte]int{}
	for _, id := range ids {
		idCount[id]++
	}
	for i := range results {
		r := &results[i]
		var t *Topic
		if i < len(names) {
			if nameCount[r.Name] > 1 {
				r.Err = fmt.Errorf("%w: Duplicate topic name.", kerr.InvalidRequest)
				continue
			}
			if t = img.Topics[r.Name]; t == nil {
				r.Err = fmt.Errorf("%w: This server does not host this topic-partition.", kerr.UnknownTopicOrPartition)
				continue
			}
		} else {
			if idCount[r.TopicID] > 1 {
				r.Err = fmt.Errorf("%w: Duplicate topic id.", kerr.InvalidRequest)
				continue
			}
			if t = img.TopicsByID[r.TopicID]; t == nil {
				r.Err = fmt.Errorf("%w: This server does not host this topic ID.", kerr.UnknownTopicID)
				continue
			}
		}
		r.Name, r.TopicID = t.Name, t.ID
		if target[t.ID] {
			// Named both by name and by id: delete once, report success twice.
			planned = append(planned, i)
			continue
		}
		target[t.ID] = true
		cmd.IDs = append(cmd.IDs, t.ID)
		planned = append(planned, i)
	}
	if len(cmd.IDs) == 0 {
		return results
	}
	if err := c.apply(ctx, cmd); err != nil {
		for _, i := range planned {
			results[i].Err = err
		}
	}
	return results
}
