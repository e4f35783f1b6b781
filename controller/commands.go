package controller

import (
	"encoding/json"
	"fmt"
)

// commandType is the first byte of every raft log entry the controller
// writes. The numbers are frozen: they are on disk in every metadata log and
// snapshot-less replay depends on them. New types are appended at the end;
// a type is never renumbered or reused, even after it stops being written.
type commandType uint8

const (
	cmdInitCluster         commandType = 1
	cmdRegisterBroker      commandType = 2
	cmdCreateTopics        commandType = 3
	cmdDeleteTopics        commandType = 4
	cmdCreatePartitions    commandType = 5
	cmdAlterConfigs        commandType = 6
	cmdAllocateProducerIDs commandType = 7
	cmdFenceBroker         commandType = 8
	cmdUnfenceBroker       commandType = 9
	cmdChangePartitions    commandType = 10
	cmdReassignPartitions  commandType = 11
	cmdAlterClientQuotas   commandType = 12
	cmdAlterScram          commandType = 13
	cmdCreateACLs          commandType = 14
	cmdDeleteACLs          commandType = 15
	cmdUpdateFeatures      commandType = 16
	cmdUnregisterBroker    commandType = 17
	// Append new command types here.
)

func (t commandType) String() string {
	switch t {
	case cmdInitCluster:
		return "InitCluster"
	case cmdRegisterBroker:
		return "RegisterBroker"
	case cmdCreateTopics:
		return "CreateTopics"
	case cmdDeleteTopics:
		return "DeleteTopics"
	case cmdCreatePartitions:
		return "CreatePartitions"
	case cmdAlterConfigs:
		return "AlterConfigs"
	case cmdAllocateProducerIDs:
		return "AllocateProducerIDs"
	case cmdFenceBroker:
		return "FenceBroker"
	case cmdUnfenceBroker:
		return "UnfenceBroker"
	case cmdChangePartitions:
		return "ChangePartitions"
	case cmdReassignPartitions:
		return "ReassignPartitions"
	case cmdAlterClientQuotas:
		return "AlterClientQuotas"
	case cmdAlterScram:
		return "AlterScram"
	case cmdCreateACLs:
		return "CreateACLs"
	case cmdDeleteACLs:
		return "DeleteACLs"
	case cmdUpdateFeatures:
		return "UpdateFeatures"
	case cmdUnregisterBroker:
		return "UnregisterBroker"
	case cmdReplicasOffline:
		return "ReplicasOffline"
	}
	return fmt.Sprintf("commandType(%d)", uint8(t))
}

// command is implemented by every command payload so encodeCommand can
// prefix the right type byte without a separate argument that could
// disagree with the payload.
type command interface {
	commandType() commandType
}

// encodeCommand renders a command as a log entry: one type byte followed by
// the payload as JSON. JSON is slower than a binary codec but is readable in
// a hex dump of the log, and metadata commands are rare and small.
func encodeCommand(c command) ([]byte, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("controller: encode %v: %w", c.commandType(), err)
	}
	return append([]byte{byte(c.commandType())}, payload...), nil
}

// initClusterCmd fixes the cluster id. It is the first command of every
// metadata log, written once by the first active controller.
type initClusterCmd struct {
	ClusterID string `json:"clusterId"`
}

// registerBrokerCmd records a broker's endpoint. The applied broker epoch is
// the log index of this command.
type registerBrokerCmd struct {
	ID          int32    `json:"id"`
	Host        string   `json:"host"`
	Port        int32    `json:"port"`
	Rack        string   `json:"rack,omitempty"`
	Incarnation [16]byte `json:"incarnation"`
	Fenced      bool     `json:"fenced,omitempty"`
	// Endpoints are every advertised listener (Broker.Endpoints); absent
	// in commands written before listeners were named.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
}

// createTopicsCmd creates topics whose ids and replica placement were
// chosen by the active controller; the FSM itself never draws random numbers,
// so every replica of the log builds the same image.
type createTopicsCmd struct {
	Topics []topicRecord `json:"topics"`
}

// topicRecord is one topic to create. Partition i gets Replicas[i] as its
// assignment, its ISR, and Replicas[i][0] as leader at epoch 0.
type topicRecord struct {
	Name     string            `json:"name"`
	ID       [16]byte          `json:"id"`
	Internal bool              `json:"internal,omitempty"`
	Replicas [][]int32         `json:"replicas"`
	Configs  map[string]string `json:"configs,omitempty"`
}

// deleteTopicsCmd removes topics by id: ids, unlike names, cannot refer to
// a same-named topic re-created after the decision was made.
type deleteTopicsCmd struct {
	IDs [][16]byte `json:"ids"`
}

// createPartitionsCmd appends partitions to existing topics.
type createPartitionsCmd struct {
	Topics []newPartitionsRecord `json:"topics"`
}

// newPartitionsRecord adds len(Replicas) partitions to one topic, numbered
// from its current partition count, which the FSM checks against
// FirstPartition so a stale decision cannot number them wrongly.
type newPartitionsRecord struct {
	TopicID        [16]byte  `json:"topicId"`
	FirstPartition int32     `json:"firstPartition"`
	Replicas       [][]int32 `json:"replicas"`
}

// alterConfigsCmd changes the explicitly set configs of one resource. A nil
// value in Changes deletes the key. The active controller resolves
// incremental ops (APPEND, SUBTRACT) and whole-set replacement into this
// per-key form, as KRaft's ConfigRecord does.
type alterConfigsCmd struct {
	ResourceType int8               `json:"resourceType"`
	ResourceName string             `json:"resourceName"`
	Changes      map[string]*string `json:"changes"`
}

func (initClusterCmd) commandType() commandType      { return cmdInitCluster }
func (registerBrokerCmd) commandType() commandType   { return cmdRegisterBroker }
func (createTopicsCmd) commandType() commandType     { return cmdCreateTopics }
func (deleteTopicsCmd) commandType() commandType     { return cmdDeleteTopics }
func (createPartitionsCmd) commandType() commandType { return cmdCreatePartitions }
func (alterConfigsCmd) commandType() commandType     { return cmdAlterConfigs }

// Resource types of ConfigResource, Kafka's DescribeConfigs/AlterConfigs
// resource type codes.
const (
	ResourceTopic  int8 = 2
	ResourceBroker int8 = 4
	// ResourceGroup is a group's configs (KIP-848's dynamic group
	// configuration, Kafka's ConfigResource.Type.GROUP).
	ResourceGroup int8 = 32
)

// allocateProducerIDsCmd hands a block of producer ids to one broker (the
// KIP-730 AllocateProducerIds decision). First must equal the image's next
// unallocated id, so two racing decisions cannot hand out the same block.
type allocateProducerIDsCmd struct {
	BrokerID int32 `json:"brokerId"`
	First    int64 `json:"first"`
	Count    int64 `json:"count"`
}

func (allocateProducerIDsCmd) commandType() commandType { return cmdAllocateProducerIDs }

// fenceBrokerCmd fences a broker (serf declared it failed or left, or it
// asked for a controlled shutdown) and, in the same entry, applies every
// partition change that follows: the broker leaves every ISR and the
// partitions it led elect new leaders. Epoch must be the broker's current
// epoch, so a fence decided against an earlier registration of the same id
// never fences a newer process.
type fenceBrokerCmd struct {
	ID      int32             `json:"id"`
	Epoch   int64             `json:"epoch"`
	Changes []partitionChange `json:"changes,omitempty"`
	// Controlled marks a fence asked for by the broker itself (controlled
	// shutdown) rather than decided on a failure; it changes nothing in the
	// image and is kept for whoever reads the log.
	Controlled bool `json:"controlled,omitempty"`
}

// unfenceBrokerCmd unfences a broker that is alive again and applies the
// elections that its return makes possible (offline partitions it is in
// sync for).
type unfenceBrokerCmd struct {
	ID      int32             `json:"id"`
	Epoch   int64             `json:"epoch"`
	Changes []partitionChange `json:"changes,omitempty"`
}

// changePartitionsCmd applies partition changes decided on their own: an
// AlterPartition (ISR change) from a partition leader, or elections of
// offline partitions after a config change.
type changePartitionsCmd struct {
	Changes []partitionChange `json:"changes"`
}

func (fenceBrokerCmd) commandType() commandType      { return cmdFenceBroker }
func (unfenceBrokerCmd) commandType() commandType    { return cmdUnfenceBroker }
func (changePartitionsCmd) commandType() commandType { return cmdChangePartitions }

// reassignPartitionsCmd starts, replaces, cancels or completes partition
// reassignments (reassign.go). Each record is the partition's whole new
// state, decided against PartitionEpoch.
type reassignPartitionsCmd struct {
	Changes []reassignmentRecord `json:"changes"`
}

// reassignmentRecord sets one partition's replicas, reassignment lists, ISR
// and leader. The FSM applies it only if the partition is still at
// PartitionEpoch, and then sets the partition epoch to PartitionEpoch+1.
type reassignmentRecord struct {
	TopicID          [16]byte `json:"topicId"`
	Partition        int32    `json:"partition"`
	PartitionEpoch   int32    `json:"partitionEpoch"`
	Replicas         []int32  `json:"replicas"`
	AddingReplicas   []int32  `json:"addingReplicas,omitempty"`
	RemovingReplicas []int32  `json:"removingReplicas,omitempty"`
	ISR              []int32  `json:"isr"`
	Leader           int32    `json:"leader"`
	LeaderEpoch      int32    `json:"leaderEpoch"`
}

func (reassignPartitionsCmd) commandType() commandType { return cmdReassignPartitions }
