package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// txnTopic is workload 11's topic: benchPartitions partitions at RF 3.
const txnTopic = "bench-txn"

// txnRecords is how many records each transaction holds.
const txnRecords = 10

// transactions is workload 11 (issue 22): -txn-producers producers, each
// with a transactional id of its own, each running transactions one
// after the other for -txn-time — begin, produce txnRecords records
// (acks=all, no linger, franz-go's default partitioner), flush, commit —
// after one untimed transaction (which finds the coordinator and inits
// the producer id). The figure is transactions committed per second over
// all producers. Then the same producers without transactional ids, only
// idempotent (franz-go's default), do the same cycle without begin and
// commit: produce txnRecords records and flush. Their batches of
// txnRecords per second, and the ratio of the two, are what exactly-once
// costs over idempotence on each system.
func (r *runner) transactions(ctx context.Context) error {
	if err := createTopic(ctx, r.c, txnTopic, benchPartitions, benchRF, 2*time.Minute); err != nil {
		return err
	}
	eos, err := r.txnCycles(ctx, true)
	if err != nil {
		return fmt.Errorf("transactional: %w", err)
	}
	idem, err := r.txnCycles(ctx, false)
	if err != nil {
		return fmt.Errorf("idempotent: %w", err)
	}
	r.set("txn_tps", eos)
	r.set("txn_idem_bps", idem)
	r.set("txn_eos_ratio", eos/idem)
	return nil
}

// txnCycles runs -txn-producers producers for -txn-time, each repeating
// its cycle (a transaction of txnRecords records when transactional, a
// flushed batch of as many otherwise), and returns the cycles per second
// over all of them.
func (r *runner) txnCycles(ctx context.Context, transactional bool) (float64, error) {
	s := r.cfg.stress
	var cycles atomic.Int64
	var failed errCount
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	var began time.Time
	for i := range s.txnProducers {
		opts := []kgo.Opt{
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.DefaultProduceTopic(txnTopic),
			kgo.ProducerLinger(0),
		}
		if transactional {
			opts = append(opts, kgo.TransactionalID(fmt.Sprintf("bench-txn-%d", i)))
		}
		cl, err := r.client(opts...)
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		cycle := func() error {
			if transactional {
				if err := cl.BeginTransaction(); err != nil {
					return err
				}
			}
			var batch errCount
			for range txnRecords {
				cl.Produce(ctx, &kgo.Record{Value: r.values.value()}, func(_ *kgo.Record, err error) { batch.add(err) })
			}
			if err := cl.Flush(ctx); err != nil {
				return err
			}
			commit := kgo.TryCommit
			if batch.err() != nil {
				commit = kgo.TryAbort
			}
			if transactional {
				if err := cl.EndTransaction(ctx, commit); err != nil {
					return err
				}
			}
			return batch.err()
		}
		ready.Add(1)
		wg.Go(func() {
			err := cycle() // untimed
			ready.Done()
			if err != nil {
				failed.add(fmt.Errorf("producer %d, first cycle: %w", i, err))
				return
			}
			<-start
			for time.Since(began) < s.txnTime && ctx.Err() == nil {
				if err := cycle(); err != nil {
					failed.add(fmt.Errorf("producer %d: %w", i, err))
					return
				}
				cycles.Add(1)
			}
		})
	}
	ready.Wait()
	began = time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := failed.err(); err != nil {
		return 0, err
	}
	kind := "idempotent batches"
	if transactional {
		kind = "transactions"
	}
	r.res.note("%s workload 11: %d %s of %d records by %d producers in %s",
		r.name(), cycles.Load(), kind, txnRecords, s.txnProducers, elapsed.Round(time.Millisecond))
	return float64(cycles.Load()) / elapsed.Seconds(), nil
}
