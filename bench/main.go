// Command bench measures produce and consume throughput against a running
// Kafka-compatible broker (sluice or Apache Kafka) with franz-go: it creates
// a topic, produces a fixed number of records as fast as the client can
// with the chosen acks, then consumes them all from the beginning, and
// prints MB/s and records/s for both phases.
//
//	go run ./bench -brokers 127.0.0.1:9092 -records 1000000 -size 1024 -partitions 6 -acks all
//
// It is a measuring tool, not a test: nothing asserts a time. To compare
// sluice with Apache Kafka on issue 8's workloads, clusters and all, use
// the harness in bench/harness (go run ./bench/harness).
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap address")
	topic := flag.String("topic", "", "topic to use (default: a new bench-<time> topic)")
	records := flag.Int("records", 1_000_000, "records to produce and consume")
	size := flag.Int("size", 1024, "record value size in bytes")
	partitions := flag.Int("partitions", 6, "partitions of the new topic")
	rf := flag.Int("rf", 1, "replication factor of the new topic")
	acks := flag.String("acks", "all", "producer acks: all, 1 or 0")
	compression := flag.String("compression", "none", "producer compression: none, snappy, lz4, zstd, gzip")
	flag.Parse()

	if *topic == "" {
		*topic = fmt.Sprintf("bench-%d", time.Now().UnixNano())
	}
	if err := run(*brokers, *topic, *records, *size, int32(*partitions), int16(*rf), *acks, *compression); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(brokers, topic string, n, size int, partitions int32, rf int16, acksFlag, compression string) error {
	ctx := context.Background()
	var acks kgo.Acks
	opts := []kgo.Opt{kgo.SeedBrokers(brokers)}
	switch acksFlag {
	case "all", "-1":
		acks = kgo.AllISRAcks()
	case "1":
		acks = kgo.LeaderAck()
		opts = append(opts, kgo.DisableIdempotentWrite())
	case "0":
		acks = kgo.NoAck()
		opts = append(opts, kgo.DisableIdempotentWrite())
	default:
		return fmt.Errorf("-acks %q: want all, 1 or 0", acksFlag)
	}

	var codec kgo.CompressionCodec
	switch compression {
	case "none":
		codec = kgo.NoCompression()
	case "snappy":
		codec = kgo.SnappyCompression()
	case "lz4":
		codec = kgo.Lz4Compression()
	case "zstd":
		codec = kgo.ZstdCompression()
	case "gzip":
		codec = kgo.GzipCompression()
	default:
		return fmt.Errorf("-compression %q: want none, snappy, lz4, zstd or gzip", compression)
	}

	admCl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, partitions, rf, nil, topic); err != nil {
		admCl.Close()
		return fmt.Errorf("create topic: %w", err)
	}
	admCl.Close()

	prod, err := kgo.NewClient(append(opts,
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedRecords(100_000),
	)...)
	if err != nil {
		return err
	}
	// Random values: a compressible payload would measure the codec,
	// not the broker.
	value := make([]byte, size)
	rand.Read(value)
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	produceTime := time.Since(start)
	prod.Close()
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d records failed, first: %v", f, firstErr.Load())
	}
	report("produce", n, size, produceTime)

	cons, err := kgo.NewClient(append(opts,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(50<<20),
		kgo.FetchMaxPartitionBytes(10<<20),
	)...)
	if err != nil {
		return err
	}
	defer cons.Close()
	start = time.Now()
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("consume: %v", errs[0].Err)
		}
		got += fs.NumRecords()
	}
	report("consume", got, size, time.Since(start))
	return nil
}

func report(phase string, n, size int, d time.Duration) {
	secs := d.Seconds()
	mb := float64(n) * float64(size) / (1 << 20)
	fmt.Printf("%-8s %d records of %d B in %.2fs: %.1f MB/s, %.0f records/s\n", phase, n, size, secs, mb/secs, float64(n)/secs)
}
