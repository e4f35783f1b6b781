package protocol

import (
	"encoding/binary"
	"errors"
)

// What decoding a request may cost, charged to the request memory budget
// (budget.go) before kmsg decodes it.
//
// kmsg decodes every array element into a struct, every string into a
// copy, and every non-empty tagged-field section into a map of its own, so
// a frame of the smallest possible elements costs many times its size to
// decode: an empty topic name is 2 bytes on the wire and 48 decoded, an
// element carrying one unknown tag 3 more bytes and a map of some 250. A
// 100 MiB Metadata request of empty topic names took an unguarded broker
// to 3.4 GiB.
//
// A request is charged its frame plus frame × decodeFactor(api key) plus
// requestOverhead, before it is decoded. decodeFactors is measured, not
// guessed: TestDecodeFactorsCoverMeasured builds, for every api key kmsg
// knows and every version of it, bodies whose arrays (one at a time, at
// every depth) hold the smallest elements there are, with and without an
// unknown tag in each, and a body whose own tag section holds thousands of
// unknown tags, and fails if the table is below the bytes allocated per
// body byte. The table is the measurement rounded up with a margin.
//
// A request is also charged an allowance for its answer (answerFactor).
//
// Charging the worst case to every request is right for requests that are
// small by nature, but not for Produce, whose frames are mostly record
// bytes that kmsg does not copy (they alias the frame), nor for Metadata,
// which may name 100,000 topics of ordinary length. These two are charged
// from a walk of their arrays instead (decodeWalkers): per element, per
// byte of names, per tag section.
//
// A request whose charge exceeds the whole budget cannot be served: its
// connection is closed with a log line, as soon as the api key is known
// for the table-charged keys, after the walk for the others. With the
// default budget of 512 MiB that is a request of another key than Produce
// and Metadata larger than 3.7 to 5.7 MiB, depending on its factor; a
// Fetch naming 100,000 partitions (3.3 MB) is charged 382 MiB, an
// OffsetCommit of as many 209 MiB, a Metadata request naming 100,000
// topics 52 MiB (TestLargeNaturalRequestsFitDefaultBudget).

// requestOverhead is charged to every request on top of its frame: the
// decoded request's own struct, the header, the response before it is
// encoded.
const requestOverhead = 4 << 10

// The answer is charged too, though only a handler knows what it builds:
// every element a request names is usually answered, with an error code
// at least. answerFactor (per byte of a table-charged request) and
// metadataTopicAnswer (per topic of a walked Metadata request) come from
// the peak RSS of a broker answering the largest such requests the budget
// admits (TestAmplificationPeakRSS): DescribeGroups of distinct 4-byte
// names cost 85 bytes per request byte in all (decode 57), Fetch of
// partitions 50 (decode 89), Metadata of distinct 4-byte names 368 bytes
// per topic.
const (
	answerFactor        = 32
	metadataTopicAnswer = 384
)

// defaultDecodeFactor is the factor of an api key missing from the table
// (the router refuses keys kmsg does not know, but the charge comes
// first).
const defaultDecodeFactor = 128

// decodeFactor returns the most bytes kmsg allocates per byte of a request
// body of api key key.
func decodeFactor(key int16) int64 {
	if f, ok := decodeFactors[key]; ok {
		return f
	}
	return defaultDecodeFactor
}

// requestCharge returns what a request frame (header and body, without
// the size prefix) is charged to the budget.
func requestCharge(frame []byte) int64 {
	n := int64(len(frame))
	h, _, err := parseHeaderPrefix(frame)
	if err != nil {
		return n + requestOverhead
	}
	if walk, ok := decodeWalkers[h.APIKey]; ok {
		if _, body, err := ParseRequestHeader(frame); err == nil {
			if cost, err := walk(h.APIVersion, body); err == nil {
				return n + cost + requestOverhead
			}
		}
	}
	return tableCharge(h.APIKey, n)
}

// tableCharge is the charge of a request of key that is frameSize bytes
// long, when it is not walked: the frame, the worst-case decode, the
// answer allowance and the fixed overhead.
func tableCharge(key int16, frameSize int64) int64 {
	return frameSize*(1+decodeFactor(key)+answerFactor) + requestOverhead
}

// decodeWalkers charge the requests whose large frames are mostly bytes
// that decode cheaply from a walk of their arrays instead of the worst
// case: Produce (record batches, which kmsg does not copy) and Metadata
// (topic names, a copy each). A request of these keys cannot be refused
// before its body has arrived.
var decodeWalkers = map[int16]func(version int16, body []byte) (int64, error){
	produceKey:  produceDecodeCost,
	metadataKey: metadataDecodeCost,
}

const (
	produceKey  int16 = 0
	metadataKey int16 = 3
)

// Per-element charges of the walks, each above what kmsg allocates
// (TestWalkedDecodeCostsCoverMeasured): a ProduceRequestTopic is 64
// bytes, a partition 48, a MetadataRequestTopic 32 and its name pointer
// 16, a tag section with entries a map.
const (
	produceTopicCost     = 96
	producePartitionCost = 64
	metadataTopicCost    = 80  // plus the name's bytes
	tagSectionCost       = 512 // a non-empty tag section's map
	tagEntryCost         = 96  // per tag in it, growth included
)

var errWalk = errors.New("protocol: produce walk: truncated or malformed")

// wireReader reads the primitive types of the Kafka protocol, recording
// the first error.
type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) skip(n int) {
	if r.err != nil {
		return
	}
	if n < 0 || n > len(r.b) {
		r.err = errWalk
		return
	}
	r.b = r.b[n:]
}

func (r *wireReader) int16() int16 {
	if r.err != nil || len(r.b) < 2 {
		r.err = errWalk
		return 0
	}
	v := int16(binary.BigEndian.Uint16(r.b))
	r.b = r.b[2:]
	return v
}

func (r *wireReader) int32() int32 {
	if r.err != nil || len(r.b) < 4 {
		r.err = errWalk
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.b))
	r.b = r.b[4:]
	return v
}

func (r *wireReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errWalk
		return 0
	}
	r.b = r.b[n:]
	return v
}

// length reads an array, string or bytes length: int16 or int32 in
// non-flexible versions, uvarint+1 in flexible ones. -1 is null.
func (r *wireReader) length(flexible, wide bool) int {
	switch {
	case flexible:
		return int(min(r.uvarint(), 1<<31)) - 1
	case wide:
		return int(r.int32())
	default:
		return int(r.int16())
	}
}

// tags skips a tagged-field section and returns what decoding it costs.
func (r *wireReader) tags() int64 {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return 0
	}
	if n > uint64(len(r.b)) {
		r.err = errWalk
		return 0
	}
	for range n {
		r.uvarint()
		r.skip(int(min(r.uvarint(), 1<<31)))
	}
	return tagSectionCost + int64(n)*tagEntryCost
}

// produceDecodeCost walks a Produce request body of version and returns
// what kmsg allocates to decode it, beyond the frame itself.
func produceDecodeCost(version int16, body []byte) (int64, error) {
	r := &wireReader{b: body}
	flexible := version >= 9
	var cost int64
	if version >= 3 {
		if n := r.length(flexible, false); n > 0 {
			r.skip(n)
			cost += int64(n) + 16
		}
	}
	r.skip(2 + 4) // acks, timeout
	topics := r.length(flexible, true)
	for i := 0; i < topics && r.err == nil; i++ {
		cost += produceTopicCost
		if version <= 12 {
			n := r.length(flexible, false)
			r.skip(n)
			cost += int64(max(n, 0))
		} else {
			r.skip(16)
		}
		partitions := r.length(flexible, true)
		for j := 0; j < partitions && r.err == nil; j++ {
			cost += producePartitionCost
			r.skip(4)
			r.skip(max(r.length(flexible, true), 0))
			if flexible {
				cost += r.tags()
			}
		}
		if flexible {
			cost += r.tags()
		}
	}
	if flexible {
		cost += r.tags()
	}
	return cost, r.err
}

// metadataDecodeCost walks a Metadata request body of version and returns
// what kmsg allocates to decode it, beyond the frame itself. Only the
// topics array matters; what follows it is a few fixed fields and tags.
func metadataDecodeCost(version int16, body []byte) (int64, error) {
	r := &wireReader{b: body}
	flexible := version >= 9
	var cost int64
	topics := r.length(flexible, true)
	for i := 0; i < topics && r.err == nil; i++ {
		cost += metadataTopicCost + metadataTopicAnswer
		if version >= 10 {
			r.skip(16)
		}
		if n := r.length(flexible, false); n > 0 {
			r.skip(n)
			cost += int64(n)
		}
		if flexible {
			cost += r.tags()
		}
	}
	if version >= 4 {
		r.skip(1)
	}
	if version >= 8 && version <= 10 {
		r.skip(1)
	}
	if version >= 8 {
		r.skip(1)
	}
	if flexible {
		cost += r.tags()
	}
	return cost, r.err
}

// decodeFactors is the table TestDecodeFactorsCoverMeasured checks: for
// each api key, bytes allocated per body byte by kmsg's decoder in the
// worst case measured, rounded up to a multiple of 8 with at least 4 to
// spare.
var decodeFactors = map[int16]int64{
	0:  88,  // Produce, measured 80.06
	1:  88,  // Fetch, measured 80.04
	2:  80,  // ListOffsets, measured 76.82
	3:  104, // Metadata, measured 95.99
	4:  88,  // LeaderAndISR, measured 80.05
	5:  88,  // StopReplica, measured 83.18
	6:  88,  // UpdateMetadata, measured 80.05
	7:  56,  // ControlledShutdown, measured 52.23
	8:  88,  // OffsetCommit, measured 80.06
	9:  88,  // OffsetFetch, measured 80.07
	10: 56,  // FindCoordinator, measured 52.24
	11: 80,  // JoinGroup, measured 76.81
	12: 56,  // Heartbeat, measured 52.24
	13: 80,  // LeaveGroup, measured 75.20
	14: 80,  // SyncGroup, measured 76.81
	15: 56,  // DescribeGroups, measured 52.24
	16: 56,  // ListGroups, measured 52.24
	17: 16,  // SASLHandshake, measured 0.00
	18: 56,  // ApiVersions, measured 52.24
	19: 80,  // CreateTopics, measured 73.68
	20: 56,  // DeleteTopics, measured 52.24
	21: 80,  // DeleteRecords, measured 76.82
	22: 56,  // InitProducerID, measured 52.24
	23: 80,  // OffsetForLeaderEpoch, measured 76.82
	24: 80,  // AddPartitionsToTxn, measured 76.81
	25: 56,  // AddOffsetsToTxn, measured 52.23
	26: 56,  // EndTxn, measured 52.23
	27: 80,  // WriteTxnMarkers, measured 76.80
	28: 88,  // TxnOffsetCommit, measured 80.05
	29: 56,  // DescribeACLs, measured 52.24
	30: 56,  // CreateACLs, measured 52.24
	31: 56,  // DeleteACLs, measured 52.24
	32: 72,  // DescribeConfigs, measured 65.37
	33: 80,  // AlterConfigs, measured 73.69
	34: 80,  // AlterReplicaLogDirs, measured 76.82
	35: 80,  // DescribeLogDirs, measured 76.82
	36: 56,  // SASLAuthenticate, measured 52.24
	37: 96,  // CreatePartitions, measured 91.98
	38: 80,  // CreateDelegationToken, measured 75.19
	39: 56,  // RenewDelegationToken, measured 52.24
	40: 56,  // ExpireDelegationToken, measured 52.24
	41: 80,  // DescribeDelegationToken, measured 75.20
	42: 56,  // DeleteGroups, measured 52.24
	43: 80,  // ElectLeaders, measured 76.82
	44: 72,  // IncrementalAlterConfigs, measured 65.37
	45: 80,  // AlterPartitionAssignments, measured 76.82
	46: 80,  // ListPartitionReassignments, measured 76.82
	47: 16,  // OffsetDelete, measured 6.75
	48: 72,  // DescribeClientQuotas, measured 62.75
	49: 88,  // AlterClientQuotas, measured 78.45
	50: 96,  // DescribeUserSCRAMCredentials, measured 89.99
	51: 80,  // AlterUserSCRAMCredentials, measured 73.70
	52: 80,  // Vote, measured 76.82
	53: 80,  // BeginQuorumEpoch, measured 76.81
	54: 80,  // EndQuorumEpoch, measured 76.82
	55: 80,  // DescribeQuorum, measured 76.82
	56: 88,  // AlterPartition, measured 80.06
	57: 56,  // UpdateFeatures, measured 52.62
	58: 56,  // Envelope, measured 52.24
	59: 80,  // FetchSnapshot, measured 76.81
	60: 56,  // DescribeCluster, measured 52.24
	61: 80,  // DescribeProducers, measured 76.82
	62: 56,  // BrokerRegistration, measured 52.22
	63: 56,  // BrokerHeartbeat, measured 52.22
	64: 56,  // UnregisterBroker, measured 52.24
	65: 56,  // DescribeTransactions, measured 52.24
	66: 56,  // ListTransactions, measured 52.24
	67: 56,  // AllocateProducerIDs, measured 52.23
	68: 56,  // ConsumerGroupHeartbeat, measured 52.23
	69: 56,  // ConsumerGroupDescribe, measured 52.24
	70: 56,  // ControllerRegistration, measured 52.22
	71: 56,  // GetTelemetrySubscriptions, measured 52.23
	72: 56,  // PushTelemetry, measured 52.22
	73: 56,  // AssignReplicasToDirs, measured 52.23
	74: 56,  // ListConfigResources, measured 52.24
	75: 96,  // DescribeTopicPartitions, measured 89.99
	76: 56,  // ShareGroupHeartbeat, measured 52.24
	77: 56,  // ShareGroupDescribe, measured 52.24
	78: 56,  // ShareFetch, measured 52.22
	79: 56,  // ShareAcknowledge, measured 52.24
	80: 64,  // AddRaftVoter, measured 54.85
	81: 56,  // RemoveRaftVoter, measured 52.22
	82: 64,  // UpdateRaftVoter, measured 54.85
	83: 56,  // InitializeShareGroupState, measured 52.24
	84: 56,  // ReadShareGroupState, measured 52.24
	85: 56,  // WriteShareGroupState, measured 52.24
	86: 56,  // DeleteShareGroupState, measured 52.24
	87: 56,  // ReadShareGroupStateSummary, measured 52.24
	88: 80,  // StreamsGroupHeartbeat, measured 76.79
	89: 56,  // StreamsGroupDescribe, measured 52.24
	90: 80,  // DescribeShareGroupOffsets, measured 76.82
	91: 80,  // AlterShareGroupOffsets, measured 76.82
	92: 96,  // DeleteShareGroupOffsets, measured 89.99
	93: 56,  // StreamsGroupTopologyDescriptionUpdate, measured 52.24
	94: 56,  // UnregisterController, measured 52.24
}
