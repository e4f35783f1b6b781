package logstore_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/sluicetest"
)

// These tests send hand-made record batches to a real broker over
// loopback, as a hostile or broken client would (a raw ProduceRequest
// carrying the bytes), and check what a client observes: the partition's
// error code, and that the partition still answers ListOffsets by
// timestamp and takes ordinary records afterwards.

const baseTs = 1_700_000_000_000

// rawProduce sends batch to partition 0 of topic with acks=1 and returns
// the partition's error code.
func rawProduce(t *testing.T, cl *kgo.Client, topic string, id [16]byte, batch []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// offsetForTimestamp is ListOffsets by timestamp for partition 0.
func offsetForTimestamp(t *testing.T, cl *kgo.Client, topic string, ts int64) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

type hostileNode struct {
	t  *testing.T
	n  *sluicetest.Node
	cl *kgo.Client
}

func startHostileNode(t *testing.T) *hostileNode {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.RecordRetries(1), kgo.RequestRetries(1))
	t.Cleanup(cl.Close)
	return &hostileNode{t: t, n: n, cl: cl}
}

// topic creates topic with configs and returns its id; one good record
// (offset 0, timestamped a minute ago) goes in first so that ListOffsets by
// timestamp has something to find.
func (h *hostileNode) topic(name string, configs map[string]*string) [16]byte {
	t := h.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := h.n.Admin()
	if resp, err := adm.CreateTopic(ctx, 1, 1, configs, name); err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
	details, err := adm.ListTopics(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	id := details[name].ID
	if code := rawProduce(t, h.cl, name, id, logstore.HostileBatch(t, 0, 1, time.Now().UnixMilli()-60_000, logstore.Records(1))); code != 0 {
		t.Fatalf("produce a good record to %s: %v", name, kerr.ErrorForCode(code))
	}
	return id
}

// checkServed asserts the partition still answers timestamp lookups: the
// good record at offset 0 for timestamp 0, and nothing (-1) for a
// timestamp only the refused batch carried (a lookup that used to decode
// it, and with a count of 2^31-1 kill the broker). Then it takes an
// ordinary produce.
func (h *hostileNode) checkServed(topic string, id [16]byte) {
	t := h.t
	t.Helper()
	if off, code := offsetForTimestamp(t, h.cl, topic, 0); code != 0 || off != 0 {
		t.Errorf("ListOffsets by timestamp 0 on %s: offset %d, %v; want offset 0", topic, off, kerr.ErrorForCode(code))
	}
	if off, code := offsetForTimestamp(t, h.cl, topic, time.Now().UnixMilli()-30_000); code != 0 || off != -1 {
		t.Errorf("ListOffsets by the refused batch's timestamp on %s: offset %d, %v; want -1 (no such record)", topic, off, kerr.ErrorForCode(code))
	}
	if code := rawProduce(t, h.cl, topic, id, logstore.HostileBatch(t, 0, 1, time.Now().UnixMilli(), logstore.Records(1))); code != 0 {
		t.Errorf("ordinary produce to %s after the hostile one: %v", topic, kerr.ErrorForCode(code))
	}
}

// TestProduceRecordCountLies: batches whose header lies about their
// records are refused with INVALID_RECORD, as Kafka's LogValidator refuses
// them, instead of being stored; the lie of 2^31-1 records used to be
// stored and then crash the broker (out of memory) at every ListOffsets by
// timestamp, including after a restart.
func TestProduceRecordCountLies(t *testing.T) {
	h := startHostileNode(t)
	cases := []struct {
		name  string
		batch []byte
	}{
		{"count 2^31-1 holding one record", logstore.HostileBatch(t, 0, math.MaxInt32, time.Now().UnixMilli(), logstore.Records(1))},
		{"count 5 holding one record", logstore.HostileBatch(t, 0, 5, time.Now().UnixMilli(), logstore.Records(1))},
		{"record length 1000000", logstore.HostileBatch(t, 0, 1, time.Now().UnixMilli(), logstore.RecordWithLength(1_000_000))},
		{"trailing bytes", logstore.HostileBatch(t, 0, 1, time.Now().UnixMilli(), append(logstore.Records(1), 0, 0, 0, 0))},
		{"count 5 in zstd", logstore.HostileBatch(t, 4, 5, time.Now().UnixMilli(), logstore.Records(1))},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.t = t
			topic := "lie-" + string(rune('a'+i))
			id := h.topic(topic, nil)
			if len(c.batch) < 200 {
				t.Logf("batch of %d bytes", len(c.batch))
			}
			if code := rawProduce(t, h.cl, topic, id, c.batch); code != kerr.InvalidRecord.Code {
				t.Errorf("produce: %v, want INVALID_RECORD", kerr.ErrorForCode(code))
			}
			h.checkServed(topic, id)
		})
	}
}

// TestProduceCompressionBombs: batches that decompress far beyond the
// per-batch cap are refused (MESSAGE_TOO_LARGE), and snappy data using S2
// extensions, or a zstd window past the decoder's limit, is CORRUPT_MESSAGE;
// none of them is stored.
func TestProduceCompressionBombs(t *testing.T) {
	h := startHostileNode(t)
	want := map[string]error{
		"gzip 768 MiB":           kerr.MessageTooLarge,
		"zstd 1 GiB":             kerr.MessageTooLarge,
		"lz4 128 MiB":            kerr.MessageTooLarge,
		"zstd 512 MiB window":    kerr.CorruptMessage,
		"xerial snappy S2 2 GiB": kerr.CorruptMessage,
		"snappy S2 extension":    kerr.CorruptMessage,
	}
	for i, b := range logstore.Bombs() {
		t.Run(b.Name, func(t *testing.T) {
			h.t = t
			topic := "bomb-" + string(rune('a'+i))
			id := h.topic(topic, nil)
			batch := logstore.WrapBatch(b.Codec, 1, time.Now().UnixMilli(), b.Build(t))
			code := rawProduce(t, h.cl, topic, id, batch)
			if w := want[b.Name]; !errors.Is(kerr.ErrorForCode(code), w) {
				t.Errorf("produce of a %d-byte bomb: %v, want %v", len(batch), kerr.ErrorForCode(code), w)
			}
			h.checkServed(topic, id)
		})
	}
}

// TestProduceCompactedTopicNeedsKeys: a record without a key is refused
// on a topic whose cleanup.policy includes compact (INVALID_RECORD, as in
// Kafka), accepted on a delete-only topic.
func TestProduceCompactedTopicNeedsKeys(t *testing.T) {
	h := startHostileNode(t)
	compact := "compact"
	keyless := logstore.HostileBatch(t, 0, 1, time.Now().UnixMilli(), keylessRecord())
	id := h.topic("changelog", map[string]*string{"cleanup.policy": &compact})
	if code := rawProduce(t, h.cl, "changelog", id, keyless); code != kerr.InvalidRecord.Code {
		t.Errorf("keyless record to a compacted topic: %v, want INVALID_RECORD", kerr.ErrorForCode(code))
	}
	id = h.topic("events", nil)
	if code := rawProduce(t, h.cl, "events", id, keyless); code != 0 {
		t.Errorf("keyless record to a delete topic: %v, want success", kerr.ErrorForCode(code))
	}
}

// TestProduceTimestampOutOfRange: with message.timestamp.after.max.ms at
// its default (one hour) a record two hours ahead is INVALID_TIMESTAMP;
// message.timestamp.before.max.ms refuses one too far back.
func TestProduceTimestampOutOfRange(t *testing.T) {
	h := startHostileNode(t)
	now := time.Now().UnixMilli()
	clockID := h.topic("clock", nil)
	ahead := logstore.HostileBatch(t, 0, 1, now+2*3_600_000, logstore.Records(1))
	if code := rawProduce(t, h.cl, "clock", clockID, ahead); code != kerr.InvalidTimestamp.Code {
		t.Errorf("record two hours ahead: %v, want INVALID_TIMESTAMP", kerr.ErrorForCode(code))
	}
	day := "86400000"
	id := h.topic("recent", map[string]*string{"message.timestamp.before.max.ms": &day})
	old := logstore.HostileBatch(t, 0, 1, now-2*86_400_000, logstore.Records(1))
	if code := rawProduce(t, h.cl, "recent", id, old); code != kerr.InvalidTimestamp.Code {
		t.Errorf("record two days old with before.max.ms one day: %v, want INVALID_TIMESTAMP", kerr.ErrorForCode(code))
	}
	if code := rawProduce(t, h.cl, "clock", clockID, old); code == kerr.InvalidTimestamp.Code {
		t.Errorf("record two days old under the default before.max.ms: INVALID_TIMESTAMP")
	}
}

// keylessRecord is one well-formed record with a null key.
func keylessRecord() []byte {
	body := []byte{0, 0, 0} // attributes, timestamp delta, offset delta
	body = binary.AppendVarint(body, -1)
	body = binary.AppendVarint(body, 1)
	body = append(body, 'v')
	body = binary.AppendVarint(body, 0)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}
