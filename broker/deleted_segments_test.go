package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// Segment files renamed *.deleted are removed file.delete.delay.ms after
// the rename (Kafka's delayed file deletion), not at the next retention
// check: these tests keep log.retention.check.interval.ms at 5 minutes and
// wait at most 30 s for the files to go.

// deletedFiles lists the *.deleted files in a partition directory.
func deletedFiles(t *testing.T, n *sluicetest.Node, topic string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(n.Dir, topic+"-0"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".deleted") {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitNoDeletedFiles polls until the partition directory holds no
// *.deleted file, well within the retention check interval.
func waitNoDeletedFiles(t *testing.T, n *sluicetest.Node, topic string) {
	t.Helper()
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		if left := deletedFiles(t, n, topic); len(left) > 0 {
			return fmt.Errorf("%d *.deleted files left: %v", len(left), left)
		}
		return nil
	})
}

// A compacted topic cleaned by the broker loses its replaced segments'
// files file.delete.delay.ms (200 ms) after the swap, long before the next
// retention check, while a consumer reading the topic from the start over
// and over is unaffected: no fetch error, offsets always increasing (a
// reset would go back), every key's latest value last.
func TestCleanedSegmentFilesRemovedAfterDeleteDelay(t *testing.T) {
	n := sluicetest.Start(t, "log.retention.check.interval.ms=300000", "log.cleaner.backoff.ms=3600000")
	const topic = "cleaned-delay"
	createTopic(t, n, topic, 1, map[string]*string{"cleanup.policy": ptr("compact"), "segment.bytes": ptr("16384"),
		"file.delete.delay.ms": ptr("200")})
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression())) // so segments fill and roll
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	latest := map[string]string{}
	for round := 0; round < 40; round++ {
		var recs []*kgo.Record
		for k := 0; k < 50; k++ {
			key := fmt.Sprintf("key-%02d", k)
			v := fmt.Sprintf("v-%d-%d", round, k)
			latest[key] = v
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(v)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ends, err := n.Admin().ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var readErr error
	rounds := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if readErr = readFromStart(ctx, n, topic, end.Offset, latest); readErr != nil {
				return
			}
			rounds++
		}
	}()

	passes := 0
	for n.Broker.RunCleaner() {
		if passes++; passes > 50 {
			t.Fatal("the cleaner never runs out of work")
		}
	}
	if passes == 0 {
		t.Fatal("no cleaning pass ran on a compacted topic with rolled segments")
	}
	waitNoDeletedFiles(t, n, topic)
	close(stop)
	wg.Wait()
	if readErr != nil {
		t.Fatalf("consumer reading while the topic was cleaned: %v", readErr)
	}
	if err := readFromStart(ctx, n, topic, end.Offset, latest); err != nil {
		t.Fatalf("consumer after the clean: %v", err)
	}
	t.Logf("%d cleaning passes; %d full reads ran alongside", passes, rounds)
}

// readFromStart consumes partition 0 of topic from the start up to end
// with small fetches and checks what a consumer must see whether or not
// the log is cleaned under it.
func readFromStart(ctx context.Context, n *sluicetest.Node, topic string, end int64, latest map[string]string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(2048))
	if err != nil {
		return err
	}
	defer cl.Close()
	last := map[string]string{}
	prev := int64(-1)
	for prev < end-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("read up to offset %d of %d: %v", prev, end, ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("fetch error after offset %d: %v", prev, errs[0].Err)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= prev && bad == nil {
				bad = fmt.Errorf("offset %d after %d: the consumer went back", r.Offset, prev)
			}
			prev = r.Offset
			last[string(r.Key)] = string(r.Value)
		})
		if bad != nil {
			return bad
		}
	}
	for k, v := range latest {
		if last[k] != v {
			return fmt.Errorf("key %s: last value %q, want %q", k, last[k], v)
		}
	}
	return nil
}

// Segments deleted by retention go file.delete.delay.ms after the
// retention check that deleted them, and the topic's own value counts,
// changes included: with file.delete.delay.ms of 10 minutes the files
// stay; lowered to 200 ms by an AlterConfigs they go at once, and the next
// trim's files go 200 ms after it.
func TestTrimmedSegmentFilesRemovedAfterDeleteDelay(t *testing.T) {
	n := sluicetest.Start(t, "log.retention.check.interval.ms=300000")
	const topic = "trimmed-delay"
	createTopic(t, n, topic, 1, map[string]*string{"segment.bytes": ptr("2048"), "retention.bytes": ptr("4096"),
		"file.delete.delay.ms": ptr("600000")})
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(from int) {
		t.Helper()
		for i := from; i < from+100; i++ {
			r := &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 100)))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	trim := func() int64 {
		t.Helper()
		n.Broker.RunRetention() // the retention check, which runs every 5 minutes here
		starts, err := n.Admin().ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		start, _ := starts.Lookup(topic, 0)
		return start.Offset
	}

	produce(0)
	start := trim()
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	if len(deletedFiles(t, n, topic)) == 0 {
		t.Fatal("no *.deleted files after retention with file.delete.delay.ms=600000")
	}
	res, err := n.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "file.delete.delay.ms", Value: ptr("200")}}, topic)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.On(topic, nil); err != nil {
		t.Fatal(err)
	}
	waitNoDeletedFiles(t, n, topic)

	produce(100)
	if again := trim(); again <= start {
		t.Fatalf("second trim: log start %d, was %d", again, start)
	}
	waitNoDeletedFiles(t, n, topic)
}
