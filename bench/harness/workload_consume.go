package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeThroughput is workload 3: -consume-mib of record values are
// written (untimed) to a topic of their own, then a consumer without a
// group reads them from the beginning. Reading the produce topic instead
// would compare unlike things: each system wrote as much to it as its
// workload 1 allowed (sluice several times Kafka's), so its first
// gigabytes were in the page cache for one system and long evicted to
// disk for the other. Here both read the same volume, written the same
// way just before.
func (r *runner) consumeThroughput(ctx context.Context) error {
	want := r.cfg.consumeMiB << 20 / int64(r.cfg.recordSize)
	if err := createTopic(ctx, r.c, consumeTopic, benchPartitions, benchRF, 2*time.Minute); err != nil {
		return err
	}
	r.logf("producing %.0f MiB to read back", r.mib(want))
	written, _, err := r.produceMax(ctx, consumeTopic, 0, want)
	if err != nil {
		return fmt.Errorf("write %s: %w", consumeTopic, err)
	}
	if err := r.checkLanded(ctx, landedConsume, consumeTopic, written); err != nil {
		return err
	}
	if have, err := r.topicRecords(ctx, consumeTopic); err != nil {
		return err
	} else if have < want {
		return fmt.Errorf("%s holds %d records, want %d", consumeTopic, have, want)
	}

	start := time.Now()
	cl, err := r.client(
		kgo.ConsumeTopics(consumeTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(50<<20),
		kgo.FetchMaxPartitionBytes(10<<20),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	var got, gotBytes int64
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("consume %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if got < want {
				got++
				gotBytes += int64(len(rec.Value))
			}
		})
	}
	elapsed := time.Since(start)
	r.set("consume_mibs", float64(gotBytes)/(1<<20)/elapsed.Seconds())
	r.res.note("%s workload 3 read %.0f MiB in %s", r.name(), float64(gotBytes)/(1<<20), elapsed.Round(time.Millisecond))
	return nil
}

// topicRecords returns how many records topic holds: the sum over its
// partitions of end offset minus start offset.
func (r *runner) topicRecords(ctx context.Context, topic string) (int64, error) {
	cl, err := r.client()
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("list end offsets: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("list start offsets: %w", err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		n += o.Offset
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok {
			n -= s.Offset
		}
	})
	return n, nil
}

// arrival is a record the end-to-end consumer received, and when.
type arrival struct {
	key string
	at  time.Time
}

// endToEnd is workload 4: one record in flight. Each record is produced
// with acks=all to a one-partition topic at RF 3 and timed until a
// consumer, long-polling the partition's end, hands it over; only then is
// the next one sent.
func (r *runner) endToEnd(ctx context.Context) error {
	if err := createTopic(ctx, r.c, e2eTopic, 1, benchRF, 2*time.Minute); err != nil {
		return err
	}
	prod, err := r.client(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(e2eTopic),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return err
	}
	defer prod.Close()
	cons, err := r.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		e2eTopic: {0: kgo.NewOffset().AtEnd()},
	}))
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	arrivals := make(chan arrival, 1024)
	var wg sync.WaitGroup
	wg.Go(func() {
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			at := time.Now()
			fs.EachRecord(func(rec *kgo.Record) {
				select {
				case arrivals <- arrival{string(rec.Key), at}:
				case <-cctx.Done():
				}
			})
		}
	})
	defer func() {
		cancel()
		wg.Wait()
		cons.Close()
	}()

	// The consumer resolves "the end" at its first fetch; warm up until a
	// record sent after that arrives.
	err = poll(ctx, time.Minute, 0, func() error {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte("warm-up"), Value: r.values.value()}).FirstErr(); err != nil {
			return err
		}
		select {
		case <-arrivals:
			return nil
		case <-time.After(time.Second):
			return errors.New("no record arrived within 1s")
		}
	})
	if err != nil {
		return fmt.Errorf("warm up: %w", err)
	}

	samples := make([]time.Duration, 0, r.cfg.e2eRecords)
	for i := range r.cfg.e2eRecords {
		key := strconv.Itoa(i)
		sent := time.Now()
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: r.values.value()}).FirstErr(); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		for a := range wait(ctx, arrivals, 30*time.Second) {
			if a.key == key {
				samples = append(samples, a.at.Sub(sent))
				break
			}
		}
		if len(samples) != i+1 {
			return fmt.Errorf("record %d did not arrive within 30s", i)
		}
	}
	slices.Sort(samples)
	r.set("e2e_p50", ms(percentile(samples, 0.50)))
	r.set("e2e_p99", ms(percentile(samples, 0.99)))
	return nil
}

// wait yields what arrives on ch until ctx ends or d passes.
func wait(ctx context.Context, ch <-chan arrival, d time.Duration) func(func(arrival) bool) {
	return func(yield func(arrival) bool) {
		timer := time.NewTimer(d)
		defer timer.Stop()
		for {
			select {
			case a := <-ch:
				if !yield(a) {
					return
				}
			case <-timer.C:
				return
			case <-ctx.Done():
				return
			}
		}
	}
}
