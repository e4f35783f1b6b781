package controller

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Partition floods (issue 14): two limits keep one request from making the
// cluster create more partitions than it can hold.
//
// Per request, as KRaft does: ReplicationControlManager refuses a
// CreateTopics whose topics ask for more than MAX_PARTITIONS_PER_BATCH
// (10,000) partitions in all with POLICY_VIOLATION "Excessively large
// number of partitions per request.", before any other check and for
// validate-only requests too; the whole request fails, so every topic gets
// that error and nothing is created. A topic counts its assignments if it
// has any, else its partition count, num.partitions for -1, and nothing
// for a count below 1 (that topic fails on its own). Names given twice are
// left out (the broker answers them INVALID_REQUEST). Kafka bounds
// CreatePartitions only through the 10,000-record list of one controller
// operation (QuorumController.MAX_RECORDS_PER_USER_OP), whose overflow it
// turns into an error for the topic that overflowed; sluice applies the
// CreateTopics rule to it instead, counting the partitions each topic would
// add, so a client gets the same clear answer from both APIs and no topic
// is half grown. Kafka has no per-topic limit, and neither has sluice.
//
// Per broker, from KIP-578 (max.broker.partitions; the KIP was not adopted
// by Kafka, but its name and meaning are the ones a Kafka user would look
// for): the broker hands the controller BrokerPartitionLimit, which is
// max.broker.partitions or no limit (the open-file limit no longer bounds
// it since segment files are opened through a bounded file cache; see
// broker/partition_capacity.go). The active controller counts the replicas
// each broker already hosts (every replica listed in the image, those
// being added by a reassignment included) and refuses, with
// POLICY_VIOLATION and a message naming the broker and the limit, a topic
// or a partition increase whose placement would take a broker past
// BrokerPartitionLimit. Topics are judged one at a time, in request order,
// each counting the replicas of the topics accepted before it in the same
// request, so one topic that does not fit fails alone, as any other
// per-topic error does.

// MaxPartitionsPerRequest is the most partitions one CreateTopics or
// CreatePartitions request may create (Kafka's MAX_PARTITIONS_PER_BATCH).
const MaxPartitionsPerRequest = 10000

// ExcessivePartitionsMessage is Kafka's error message for a request over
// MaxPartitionsPerRequest. The broker gives it to names it answers itself
// (duplicates) when the rest of the request failed with it.
const ExcessivePartitionsMessage = "Excessively large number of partitions per request."

// errExcessivePartitions is the error of every topic of a request over
// MaxPartitionsPerRequest.
var errExcessivePartitions error = &policyViolation{ExcessivePartitionsMessage}

// policyViolation is POLICY_VIOLATION with a message of its own. Its text
// is the code's name, ": " and the message, which the broker's
// errorMessage turns into the message alone, as Kafka sends it (a
// "%w: ..." wrap of kerr.PolicyViolation would leave the code's
// description in front).
type policyViolation struct{ message string }

func (e *policyViolation) Error() string { return kerr.PolicyViolation.Message + ": " + e.message }
func (e *policyViolation) Unwrap() error { return kerr.PolicyViolation }

// BrokerPartitionLimit bounds the partition replicas the active controller
// lets one broker host. Every broker is held to the same limit, the active
// controller's (KIP-578's max.broker.partitions is cluster-wide too).
type BrokerPartitionLimit struct {
	// Max is the most partition replicas one broker may host; 0 or less
	// means no limit.
	Max int
	// Reason says where Max comes from, for the error message, e.g.
	// "max.broker.partitions=20".
	Reason string
}

// createTopicsPartitions is the number of partitions a CreateTopics asks
// for, counted as Kafka counts it; topics named more than once are left out.
func createTopicsPartitions(topics []CreateTopic, occurrences map[string]int, defaultPartitions int32) int64 {
	var total int64
	for _, t := range topics {
		switch {
		case occurrences[t.Name] > 1:
		case len(t.Assignment) > 0:
			total += int64(len(t.Assignment))
		case t.NumPartitions == -1:
			total += int64(max(defaultPartitions, 1))
		case t.NumPartitions > 0:
			total += int64(t.NumPartitions)
		}
	}
	return total
}

// createPartitionsAdded is the number of partitions a CreatePartitions
// would add to the topics of img; unknown topics, counts that do not grow a
// topic and topics named more than once add none.
func createPartitionsAdded(img *Image, reqs []CreatePartitions, occurrences map[string]int) int64 {
	var total int64
	for _, r := range reqs {
		if occurrences[r.Topic] > 1 {
			continue
		}
		if t, ok := img.Topics[r.Topic]; ok && int(r.Count) > len(t.Partitions) {
			total += int64(r.Count) - int64(len(t.Partitions))
		}
	}
	return total
}

// brokerLoad counts the partition replicas each broker hosts, as the image
// assigns them plus what the request being decided has accepted so far.
type brokerLoad struct {
	limit    BrokerPartitionLimit
	replicas map[int32]int
}

// newBrokerLoad counts the replicas of img; with no limit it counts nothing.
func newBrokerLoad(img *Image, limit BrokerPartitionLimit) *brokerLoad {
	l := &brokerLoad{limit: limit}
	if limit.Max <= 0 {
		return l
	}
	l.replicas = map[int32]int{}
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			for _, b := range p.Replicas {
				l.replicas[b]++
			}
		}
	}
	return l
}

// add takes on the replica lists of new partitions if every broker stays
// within the limit, and otherwise changes nothing and returns
// POLICY_VIOLATION naming the first broker, by id, that would pass it.
func (l *brokerLoad) add(replicas [][]int32) error {
	if l.limit.Max <= 0 {
		return nil
	}
	added := map[int32]int{}
	for _, r := range replicas {
		for _, b := range r {
			added[b]++
		}
	}
	over, overBy := int32(-1), 0
	for b, n := range added {
		if total := l.replicas[b] + n; total > l.limit.Max && (over == -1 || b < over) {
			over, overBy = b, total
		}
	}
	if over != -1 {
		return &policyViolation{fmt.Sprintf("Creating %d partition(s) would place %d partition replica(s) on broker %d, which already hosts %d; the most one broker may host is %d (%s).",
			len(replicas), added[over], over, overBy-added[over], l.limit.Max, l.limit.Reason)}
	}
	for b, n := range added {
		l.replicas[b] += n
	}
	return nil
}
