package broker

// Produce (api key 0), versions 3–13: record format v2 only, as Kafka 4 does.
// ApiVersions lists it from v0 all the same, as Kafka 4 does (KAFKA-18659):
// librdkafka before 2.11.1 (Debian's kcat and python3-confluent-kafka among
// its users) takes a minimum above 0 to mean "no gzip, snappy or lz4" and
// sends those batches uncompressed. A v0–2 request is refused as any
// unsupported version is: its connection is closed, Kafka's answer too
// (protocol.Router.RegisterAdvertisedFrom).
//
// Each partition's records must be exactly one magic v2 batch, zstd only
// from v7 (validateProduceRecords, Kafka's ProduceRequest.validateRecords).
// The partition's log validates the batch (size, CRC, every record, with
// bounded streaming decompression: logstore/validate.go) and appends it as
// bytes: offsets and the leader epoch are stamped into the batch header,
// records are never rewritten. The batches of all the request's partitions
// share one budget of decompressed bytes (logstore.RequestDecompressBudget:
// the larger of 256 MiB and 32 times the request's record bytes, never
// below a partition's per-batch cap), so that a request naming many
// partitions cannot make the broker decompress each one's cap in turn; the
// partitions past it are MESSAGE_TOO_LARGE, as for the per-batch cap, and
// the others are appended. Kafka has no such cap. acks=0
// gets no response (and, as in Kafka, a partition error closes the
// connection so the client refreshes its metadata); acks=1 is answered after
// the leader's append; acks=-1 after the high watermark passes the batch, i.e.
// every in-sync replica has it, or REQUEST_TIMED_OUT after the request's
// timeout. Batches of idempotent and transactional producers are checked
// against the partition's producer table first (producer_state.go, package
// txn): a retry of one of the producer's last five batches is answered with
// its original base offset and not appended again, a sequence gap is
// OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH, a
// plain batch inside an open transaction INVALID_TXN_STATE and a control
// batch INVALID_RECORD. A transactional batch is first checked with the
// producer's transaction coordinator, or from v12 (KIP-890 part 2) added to
// the transaction by it, before anything is appended (txn_verify.go). acks=-1 with fewer in-sync replicas than min.insync.replicas is
// NOT_ENOUGH_REPLICAS before anything is written; if the high watermark
// passes the batch while the ISR is below min.insync.replicas (it shrank
// during the wait) the answer is NOT_ENOUGH_REPLICAS_AFTER_APPEND, and a
// leadership lost during the wait is NOT_LEADER_OR_FOLLOWER, as in Kafka. v13 (KIP-516) addresses
// topics by id. v10+ carries the partition's current leader in a tagged field
// on NOT_LEADER_OR_FOLLOWER (KIP-951). A leader whose heartbeats the
// active controller has not answered for broker.session.timeout.ms answers
// acks=-1 with NOT_LEADER_OR_FOLLOWER, before appending and again instead
// of a success: by then the controller has fenced it or is about to and
// may have elected another leader (controller_heartbeat.go).
//
// Internal topics (__consumer_offsets, __transaction_state) are closed to
// clients: a Produce to one is INVALID_TOPIC_EXCEPTION ("Cannot append to
// internal topic …") for that partition and nothing is appended, as in
// Kafka's ReplicaManager, checked after the topic and partition are known
// and before leadership. The coordinators write their records through the
// partition's leader append (broker/groups.go, broker/txn.go), not through
// this handler, and followers fetch, so neither is affected. Unlike Kafka,
// no client id ("__admin_client") is let through.
//
// The request's frame is reused for the connection's later requests once
// it has been answered (protocol.Router.ReuseFrames, issue 22), so nothing
// here keeps a byte of it past the handler's return: the log's append
// writes the records to the segment file (copying them into the page
// cache), the producer table keeps numbers, error messages are formatted
// strings, and the acks=all wait ends before the handler returns.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/txn"
)

func (b *Broker) handleProduce(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	img := b.metadata()

	// acked records what acks=-1 must wait for: the index of a response
	// partition and the offset the high watermark has to pass.
	type acked struct {
		topic, part int
		p           *partition
		epoch       int32
		next        int64
	}
	failed, notLeader := false, false
	var recordBytes int64
	partitions := 0
	for _, rt := range req.Topics {
		partitions += len(rt.Partitions)
		for _, rp := range rt.Partitions {
			recordBytes += int64(len(rp.Records))
		}
	}
	// Sized up front: the answer and the waits grow no slice (issue 22).
	var waits []acked
	if req.Acks == -1 {
		waits = make([]acked, 0, partitions)
	}
	resp.Topics = make([]kmsg.ProduceResponseTopic, 0, len(req.Topics))
	budget := logstore.NewRequestDecompressBudget(recordBytes)

	// Transactional records need WRITE on the transactional id, or the
	// whole request is refused (authorize_requests.go).
	if hasTransactionalBatch(req) && (req.TransactionID == nil || !b.authorizedTxnID(r, kmsg.ACLOperationWrite, *req.TransactionID)) {
		if req.Acks == 0 {
			return nil, errors.New("transactional produce with acks=0 not authorized for its transactional id; closing the connection")
		}
		return produceRefused(req, kerr.TransactionalIDAuthorizationFailed.Code), nil
	}
	writable := b.topicAuth(r, kmsg.ACLOperationWrite)
	// Transactional batches are checked with (v12+: added to) the
	// producer's transaction first (txn_verify.go).
	txnChecks := b.produceTxnChecks(ctx, img, req, writable)

	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(rt.Partitions))
		topic := lookupTopic(img, req.Version >= 13, rt.Topic, rt.TopicID)
		// WRITE on the topic, asked by the name the request gives or its
		// id resolves to, before anything else about it is looked at; an
		// id no topic has is UNKNOWN_TOPIC_ID first, as in Kafka.
		denied := false
		if req.Version < 13 {
			denied = !writable.allowed(rt.Topic)
		} else if topic != nil {
			denied = !writable.allowed(topic.Name)
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			var (
				p     *partition
				epoch int32
				last  int64
				err   error
			)
			check := txnChecks[[2]int{i, j}]
			switch {
			case denied:
				err = kerr.TopicAuthorizationFailed
			case check != nil && check.err != nil:
				err = check.err
			default:
				var guard txn.VerificationGuard
				if check != nil {
					guard = check.guard
				}
				p, epoch, last, err = b.producePartition(img, topic, req, rp, &sp, budget, guard)
			}
			if err != nil {
				failed = true
				sp.ErrorCode = errorCode(err)
				if sp.ErrorCode == kerr.NotLeaderForPartition.Code {
					notLeader = true
					setProduceCurrentLeader(topic, rp.Partition, &sp)
				}
				if sp.ErrorCode == kerr.UnknownServerError.Code {
					b.logger.Error("produce failed", "topic", rt.Topic, "partition", rp.Partition, "err", err)
				}
				if req.Version >= 8 {
					sp.ErrorMessage = errorMessage(err)
					setRecordErrors(err, &sp)
				}
			} else if req.Acks == -1 {
				waits = append(waits, acked{topic: i, part: j, p: p, epoch: epoch, next: last + 1})
			}
			if topic != nil && !denied {
				b.metrics.producedPartition(topic.Name, sp.ErrorCode) // metrics_requests_topics.go
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if notLeader {
		resp.Brokers = produceBrokers(img)
	}
	if req.Acks == 0 {
		if failed {
			return nil, errors.New("produce with acks=0 failed on a partition; closing the connection so the client refreshes metadata")
		}
		r.ThrottleMillis = b.produceThrottle(r) // mutes the connection (client_throttle.go)
		return nil, nil
	}

	if len(waits) > 0 {
		defer requestWait(ctx)() // not request time (request_quota.go)
		timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		for _, w := range waits {
			sp := &resp.Topics[w.topic].Partitions[w.part]
			sp.ErrorCode = b.waitAcks(ctx, w.p, w.epoch, w.next, deadline.C)
			if sp.ErrorCode == 0 && !b.leadsForAcksAll() {
				// Replicated, but by an ISR the controller may have
				// replaced meanwhile: the outcome is not this
				// broker's to confirm.
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			}
		}
	}
	resp.ThrottleMillis = b.produceThrottle(r) // client_throttle.go
	return resp, nil
}

// waitAcks blocks until p's high watermark reaches next (the records
// appended at leader epoch are on every ISR member), the leadership is lost,
// the deadline fires or ctx ends, and returns the partition's error code
// (see partition.ackResult); running out of time is REQUEST_TIMED_OUT.
func (b *Broker) waitAcks(ctx context.Context, p *partition, epoch int32, next int64, deadline <-chan time.Time) int16 {
	self := b.cfg.NodeID
	for {
		ch := p.watch()
		if code, done := p.ackResult(self, epoch, next); done {
			return code
		}
		select {
		case <-ch:
		case <-deadline:
			if code, done := p.ackResult(self, epoch, next); done {
				return code
			}
			return kerr.RequestTimedOut.Code
		case <-ctx.Done():
			if code, done := p.ackResult(self, epoch, next); done {
				return code
			}
			return kerr.RequestTimedOut.Code
		}
	}
}

// producePartition appends one partition's batches, within the request's
// decompression budget, and fills in the offsets; it returns the replica,
// the leader epoch it appended at and the last offset written.
func (b *Broker) producePartition(img *controller.Image, topic *controller.Topic, req *kmsg.ProduceRequest, rp *kmsg.ProduceRequestTopicPartition, sp *kmsg.ProduceResponseTopicPartition, budget *logstore.RequestDecompressBudget, guard txn.VerificationGuard) (*partition, int32, int64, error) {
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		return nil, 0, 0, kerr.InvalidRequiredAcks
	}
	if topic == nil {
		if req.Version >= 13 {
			return nil, 0, 0, kerr.UnknownTopicID
		}
		return nil, 0, 0, kerr.UnknownTopicOrPartition
	}
	if rp.Partition < 0 || int(rp.Partition) >= len(topic.Partitions) {
		return nil, 0, 0, kerr.UnknownTopicOrPartition
	}
	if topic.Internal || controller.IsInternalTopic(topic.Name) {
		return nil, 0, 0, internalTopicWriteError(topic.Name)
	}
	if err := validateProduceRecords(req.Version, rp.Records); err != nil {
		return nil, 0, 0, err
	}
	p, err := b.hostedReplica(logstore.TopicPartition{Topic: topic.Name, Partition: rp.Partition})
	if err != nil {
		return nil, 0, 0, err
	}
	leader, epoch := p.state()
	if leader != b.cfg.NodeID {
		return nil, 0, 0, kerr.NotLeaderForPartition
	}
	if req.Acks == -1 && !b.leadsForAcksAll() {
		return nil, 0, 0, errControllerSessionLapsed
	}
	if req.Acks == -1 && !p.enoughInsync() {
		return nil, 0, 0, kerr.NotEnoughReplicas
	}
	// A retried idempotent batch the log already holds is answered with
	// its original offsets, not appended again.
	out, err := p.appendAsLeaderWithin(rp.Records, epoch, txn.OriginClient, 0, budget, guard)
	if err != nil {
		return nil, 0, 0, err
	}
	if out.duplicate {
		sp.BaseOffset = out.dupFirst
		sp.LogStartOffset = p.log.LogStartOffset()
		return p, epoch, out.dupLast, nil
	}
	res := out.res
	sp.BaseOffset = res.FirstOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
	p.appendedAsLeader(b.cfg.NodeID)
	b.metrics.produced(topic.Name, len(rp.Records), res.LastOffset-res.FirstOffset+1) // metrics.go
	return p, epoch, res.LastOffset, nil
}

// hasTransactionalBatch reports whether a partition of req carries a
// transactional batch (Kafka's RequestUtils.hasTransactionalRecords): a
// magic v2 batch with the transactional attribute (bit 4). Only the first
// batch of each partition is looked at; validateProduceRecords refuses a
// partition with more than one.
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	const magicAt, attributesLowAt, transactional = 16, 22, 0x10
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			rec := req.Topics[i].Partitions[j].Records
			if len(rec) > attributesLowAt && rec[magicAt] == 2 && rec[attributesLowAt]&transactional != 0 {
				return true
			}
		}
	}
	return false
}

// produceRefused is the answer to a Produce refused as a whole with code:
// every partition with the error and no offsets
// (ProduceRequest.getErrorResponse).
func produceRefused(req *kmsg.ProduceRequest, code int16) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			sp.BaseOffset, sp.LogStartOffset = -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// setRecordErrors fills a refused partition's record_errors (v8+, KIP-467)
// when records of its batch were at fault: each one's index in the batch
// and message, and Kafka's error_message, so that a client fails those
// records only. The whole batch stays refused, as in Kafka.
func setRecordErrors(err error, sp *kmsg.ProduceResponseTopicPartition) {
	var re *logstore.RecordErrors
	if !errors.As(err, &re) {
		return
	}
	msg := re.Message()
	sp.ErrorMessage = &msg
	for _, r := range re.Records {
		e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		e.RelativeOffset = r.Index
		m := r.Message
		e.ErrorMessage = &m
		sp.ErrorRecords = append(sp.ErrorRecords, e)
	}
}

// internalTopicWriteError is a client's Produce to an internal topic:
// INVALID_TOPIC_EXCEPTION with Kafka's message, which is all the response
// carries (errorMessage keeps an error's own words).
type internalTopicWriteError string

func (e internalTopicWriteError) Error() string {
	return "Cannot append to internal topic " + string(e)
}

func (e internalTopicWriteError) Unwrap() error { return kerr.InvalidTopicException }

func setProduceCurrentLeader(topic *controller.Topic, partition int32, sp *kmsg.ProduceResponseTopicPartition) {
	if topic == nil || partition < 0 || int(partition) >= len(topic.Partitions) {
		return
	}
	mp := topic.Partitions[partition]
	sp.CurrentLeader.LeaderID = mp.Leader
	sp.CurrentLeader.LeaderEpoch = mp.LeaderEpoch
}

func produceBrokers(img *controller.Image) []kmsg.ProduceResponseBroker {
	var out []kmsg.ProduceResponseBroker
	for _, br := range sortedBrokers(img) {
		out = append(out, kmsg.ProduceResponseBroker{NodeID: br.ID, Host: br.Host, Port: br.Port, Rack: rackPtr(br.Rack)})
	}
	return out
}

// waitHighWatermark blocks until p's high watermark reaches next, the
// deadline fires or ctx ends. It reports whether the high watermark got
// there. The group coordinator waits on it for its own offset commits.
func (b *Broker) waitHighWatermark(ctx context.Context, p *partition, next int64, deadline <-chan time.Time) bool {
	defer requestWait(ctx)() // not request time (request_quota.go)
	for {
		ch := p.watch()
		if p.highWatermark() >= next {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return p.highWatermark() >= next
		case <-ctx.Done():
			return p.highWatermark() >= next
		}
	}
}

// validateProduceRecords checks the shape Kafka requires of one
// partition's records in a Produce request (ProduceRequest.validateRecords):
// from v3 exactly one record batch, of magic v2, and zstd only from v7 on
// (KIP-110), UNSUPPORTED_COMPRESSION_TYPE below. A magic v0 or v1 message
// set is INVALID_RECORD, as in Kafka 4, whatever the size of its messages,
// and so is a v2 batch followed by one. Records that do not parse as
// batches at all are left to the log's append, which refuses them with its
// own error.
func validateProduceRecords(version int16, records []byte) error {
	if len(records) == 0 {
		return fmt.Errorf("%w: Produce requests with version %d must have at least one record batch per partition", kerr.InvalidRecord, version)
	}
	if legacyMessage(records) {
		return fmt.Errorf("%w: Produce requests with version %d are only allowed to contain record batches with magic version 2", kerr.InvalidRecord, version)
	}
	first, batches := logstore.CountBatchHeaders(records)
	if batches == 0 {
		if _, n := logstore.CountBatchHeaders(records[:batchEnd(records)]); n == 1 && legacyMessage(records[batchEnd(records):]) {
			return fmt.Errorf("%w: Produce requests with version %d are only allowed to contain exactly one record batch per partition", kerr.InvalidRecord, version)
		}
		return nil
	}
	if version < 7 && first.Attributes&0x07 == 4 {
		return fmt.Errorf("%w: Produce requests with version %d are not allowed to use ZStandard compression", kerr.UnsupportedCompressionType, version)
	}
	if batches > 1 {
		return fmt.Errorf("%w: Produce requests with version %d are only allowed to contain exactly one record batch per partition", kerr.InvalidRecord, version)
	}
	return nil
}

// Offsets in the header every message format shares: the entry's offset
// (int64) and size (int32), then, 4 bytes on (a v0/v1 message's CRC, a v2
// batch's partition leader epoch), the magic byte.
const (
	entrySizeAt  = 8
	entryMagicAt = 16
	// legacyMessageMin is the smallest size a magic v0 message can have
	// (Kafka's LegacyRecord.RECORD_OVERHEAD_V0); Kafka calls a smaller
	// entry corrupt before it looks at the magic.
	legacyMessageMin = 14
)

// legacyMessage reports whether records starts with a magic v0 or v1
// message as Kafka's reader (ByteBufferLogInputStream) sees one: a size it
// accepts and a magic byte of 0 or 1, whether or not the whole message is
// there.
func legacyMessage(records []byte) bool {
	if len(records) <= entryMagicAt {
		return false
	}
	size := int32(binary.BigEndian.Uint32(records[entrySizeAt:]))
	magic := records[entryMagicAt]
	return size >= legacyMessageMin && (magic == 0 || magic == 1)
}

// batchEnd is where the first entry of records ends by its size field,
// clamped to len(records).
func batchEnd(records []byte) int {
	if len(records) < entrySizeAt+4 {
		return len(records)
	}
	end := int64(entrySizeAt+4) + int64(int32(binary.BigEndian.Uint32(records[entrySizeAt:])))
	if end < entrySizeAt+4 || end > int64(len(records)) {
		return len(records)
	}
	return int(end)
}
