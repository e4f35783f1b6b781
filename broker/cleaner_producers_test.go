package broker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluicedev/sluice/sluicetest"
)

// fetchedBatches fetches topic's partition 0 from offset 0 up to its high
// watermark with raw Fetches (each answers from one segment) and returns
// every record batch, empty ones included (a consumer skips those; they
// are what the cleaner keeps of a producer).
func fetchedBatches(t *testing.T, n *sluicetest.Node, topic string) []kmsg.RecordBatch {
	t.Helper()
	// Fetch v12 names topics; a 3.0 client does not go past it.
	cl := n.Client(kgo.MaxVersions(kversion.V3_0_0()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []kmsg.RecordBatch
	for offset := int64(0); ; {
		req := fetchRequest(topic, []int32{0}, math.MaxInt32, 64<<20)
		req.Topics[0].Partitions[0].FetchOffset = offset
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			t.Fatalf("fetch %s at %d: error %d", topic, offset, rp.ErrorCode)
		}
		if offset >= rp.HighWatermark {
			return out
		}
		got := 0
		for raw := rp.RecordBatches; len(raw) >= 12; got++ {
			size := 12 + int(binary.BigEndian.Uint32(raw[8:12]))
			if size > len(raw) {
				break
			}
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw[:size]); err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
			offset = b.FirstOffset + int64(b.LastOffsetDelta) + 1
			raw = raw[size:]
		}
		if got == 0 {
			t.Fatalf("fetch %s at %d, below the high watermark %d: no batch", topic, offset, rp.HighWatermark)
		}
	}
}

// uncompressedRecords decodes the records of an uncompressed batch.
func uncompressedRecords(t *testing.T, b kmsg.RecordBatch) []kmsg.Record {
	t.Helper()
	if b.Attributes&0x07 != 0 {
		t.Fatalf("batch at %d is compressed", b.FirstOffset)
	}
	var out []kmsg.Record
	for raw := b.Records; len(raw) > 0; {
		size, n := binary.Varint(raw)
		if n <= 0 || int(size) > len(raw)-n {
			t.Fatalf("batch at %d: bad record length", b.FirstOffset)
		}
		var r kmsg.Record
		if err := r.ReadFrom(raw[:n+int(size)]); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
		raw = raw[n+int(size):]
	}
	return out
}

// Many short-lived idempotent producers (each client a new producer id)
// overwrite the same keys of a compacted topic. Once producer expiry has
// dropped them (producer.id.expiration.ms, checked every
// producer.id.expiration.check.interval.ms), cleaning keeps one record per
// key and, of the producers, only the last batch of the one still active
// (emptied, as all its records were overwritten): no empty batch per
// expired producer id, as Kafka's cleaner keeps the last batches of active
// producers only. The active producer then goes on producing, without
// OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID and with its
// producer id and epoch unchanged, after the cleaning, a clean restart and
// a crash restart (the producer state then rebuilt from the cleaned log).
func TestCleanerKeepsLastBatchOfActiveProducersOnly(t *testing.T) {
	const topic, keys, shortLived = "short-lived-producers", 10, 30
	n := sluicetest.Start(t, "producer.id.expiration.ms=600000", "producer.id.expiration.check.interval.ms=20",
		"log.cleaner.backoff.ms=3600000")
	createTopic(t, n, topic, 1, map[string]*string{"cleanup.policy": ptr("compact"), "segment.bytes": ptr("1024")})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}
	round := func(cl *kgo.Client, name string, ts time.Time) {
		t.Helper()
		var recs []*kgo.Record
		for k := 0; k < keys; k++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", k)), Value: []byte(name), Timestamp: ts})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	producerID := func(cl *kgo.Client) (int64, int16) {
		t.Helper()
		id, epoch, err := cl.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return id, epoch
	}

	active := n.Client(opts...)
	round(active, "active-0", time.Now())
	activeID, activeEpoch := producerID(active)
	// The short-lived producers wrote an hour ago: expired at the first
	// check, while the active one has ten minutes.
	expired := map[int64]bool{}
	for i := 0; i < shortLived; i++ {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.Addr())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		round(cl, fmt.Sprintf("short-%d", i), time.Now().Add(-time.Hour))
		id, _ := producerID(cl)
		cl.Close()
		if id == activeID || expired[id] {
			t.Fatalf("producer id %d given twice", id)
		}
		expired[id] = true
	}
	// Two batches without a producer id, each too big to share a segment,
	// so every producer's batch is below the active segment.
	plain := n.Client(append(opts, kgo.DisableIdempotentWrite())...)
	for i := 0; i < 2; i++ {
		r := &kgo.Record{Key: []byte(fmt.Sprintf("filler-%d", i)), Value: []byte(strings.Repeat("f", 600))}
		if err := plain.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	listed := func() ([]int64, error) {
		ds, err := n.Admin().DescribeProducers(ctx, nil)
		if err != nil {
			return nil, err
		}
		var ids []int64
		for _, p := range ds.SortedProducers() {
			if p.Topic == topic {
				ids = append(ids, p.ProducerID)
			}
		}
		return ids, nil
	}
	onlyActive := func() error {
		ids, err := listed()
		if err == nil && !slices.Equal(ids, []int64{activeID}) {
			err = fmt.Errorf("producers %v, want only the active %d", ids, activeID)
		}
		return err
	}
	sluicetest.WaitFor(t, 10*time.Second, onlyActive)

	passes := 0
	for n.Broker.RunCleaner() {
		if passes++; passes > 20 {
			t.Fatal("the cleaner never runs out of work")
		}
	}
	if passes == 0 {
		t.Fatal("no cleaning pass ran")
	}

	// checkLog checks the cleaned part of the log (below the last filler,
	// which is in the active segment): one record per key, the last
	// short-lived producer's values, and no batch of an expired producer
	// left empty; the active producer's batch stays, empty.
	checkLog := func(when string) {
		t.Helper()
		seen := map[string]int{}
		activeKept := false
		var emptyExpired []int64
		for _, b := range fetchedBatches(t, n, topic) {
			if b.NumRecords == 0 {
				switch {
				case b.ProducerID == activeID:
					activeKept = true
				case expired[b.ProducerID]:
					emptyExpired = append(emptyExpired, b.ProducerID)
				default:
					t.Fatalf("%s: empty batch of producer %d at %d", when, b.ProducerID, b.FirstOffset)
				}
				continue
			}
			for _, r := range uncompressedRecords(t, b) {
				seen[string(r.Key)]++
				if strings.HasPrefix(string(r.Key), "key-") && string(r.Value) != fmt.Sprintf("short-%d", shortLived-1) {
					t.Fatalf("%s: %s=%s, want the last short-lived producer's value", when, r.Key, r.Value)
				}
			}
		}
		if len(emptyExpired) > 0 {
			t.Fatalf("%s: %d empty batches of expired producers kept (%v)", when, len(emptyExpired), emptyExpired)
		}
		if !activeKept {
			t.Fatalf("%s: the active producer's last batch is gone", when)
		}
		for k := 0; k < keys; k++ {
			if c := seen[fmt.Sprintf("key-%d", k)]; c != 1 {
				t.Fatalf("%s: key-%d %d times, want once", when, k, c)
			}
		}
	}
	checkLog("after cleaning")

	// The active producer goes on: same id and epoch, no error.
	goOn := func(when string, i int) {
		t.Helper()
		round(active, fmt.Sprintf("active-%d", i), time.Now())
		if id, epoch := producerID(active); id != activeID || epoch != activeEpoch {
			t.Fatalf("%s: producer %d epoch %d, want %d epoch %d (reset after an error)", when, id, epoch, activeID, activeEpoch)
		}
	}
	goOn("after cleaning", 1)
	n.Restart()
	sluicetest.WaitFor(t, 10*time.Second, onlyActive)
	goOn("after a restart", 2)
	n.CrashRestart()
	sluicetest.WaitFor(t, 10*time.Second, onlyActive)
	goOn("after a crash restart", 3)
}
