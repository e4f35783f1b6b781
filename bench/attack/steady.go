package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	steadyTopic = "attack-steady"
	probeTopic  = "attack-probe"
)

// dialerFrom makes franz-go dial from the local address src.
func dialerFrom(src string) kgo.Opt {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return kgo.Dialer(d.DialContext)
}

// steadyProducer writes numbered records (the value is the number) to
// steadyTopic with franz-go's idempotent acks=all producer at a steady
// rate through the whole run, and remembers which numbers were
// acknowledged. It retries for ever (franz-go's default), so a record
// caught by a broker crash is acknowledged after the restart or never.
type steadyProducer struct {
	cl *kgo.Client

	mu      sync.Mutex
	next    int64
	acked   []bool
	failed  int64
	lastErr error

	cancel context.CancelFunc
	done   chan struct{}
}

func startSteady(addr string, rate int) (*steadyProducer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), dialerFrom(clientIP),
		kgo.DefaultProduceTopic(steadyTopic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(20000),
		kgo.ClientID("attack-steady"))
	if err != nil {
		return nil, err
	}
	// The loop stops on ctx; the records it handed over keep their own
	// context, so finish can wait for them rather than fail them.
	ctx, cancel := context.WithCancel(context.Background())
	s := &steadyProducer{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			s.mu.Lock()
			n := s.next
			s.next++
			s.acked = append(s.acked, false)
			s.mu.Unlock()
			cl.Produce(context.Background(), &kgo.Record{Value: []byte(strconv.FormatInt(n, 10))}, func(_ *kgo.Record, err error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				if err == nil {
					s.acked[n] = true
				} else {
					s.failed++
					s.lastErr = err
				}
			})
		}
	}()
	return s, nil
}

// snapshot copies the acknowledged set.
func (s *steadyProducer) snapshot() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.acked...)
}

// finish stops producing and waits up to timeout for records in flight.
func (s *steadyProducer) finish(timeout time.Duration) {
	s.cancel()
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_ = s.cl.Flush(ctx)
	s.cl.Close()
}

// tally is the data check of the steady topic.
type tally struct {
	acked, lost, duplicated, unackedPresent int64
	err                                     error
}

func (t tally) String() string {
	if t.err != nil {
		return fmt.Sprintf("check failed: %v (acked %d)", t.err, t.acked)
	}
	return fmt.Sprintf("acked %d, lost %d, duplicated %d", t.acked, t.lost, t.duplicated)
}

// verify reads the steady topic from the start to its end offsets and
// compares it with acked: an acknowledged number that is missing is lost,
// a number present more than once is duplicated. Numbers acknowledged
// before the end offsets were listed must all be below them (acks=all).
func verify(ctx context.Context, addr string, acked []bool) tally {
	t := tally{}
	for _, a := range acked {
		if a {
			t.acked++
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), dialerFrom(setupIP), kgo.ClientID("attack-verify"))
	if err != nil {
		t.err = err
		return t
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, steadyTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.err = fmt.Errorf("list end offsets: %w", err)
		return t
	}
	want := map[int32]kgo.Offset{}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = kgo.NewOffset().AtStart()
			remaining[o.Partition] = o.Offset
		}
	})
	seen := map[int64]int{}
	if len(want) > 0 {
		cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{steadyTopic: want})
	}
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.err = fmt.Errorf("consume: %w (partitions unfinished: %v)", ctx.Err(), remaining)
			return t
		}
		// Fetch errors are retried by the client; ctx bounds the wait.
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := remaining[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err == nil {
				seen[n]++
			}
			if r.Offset == end-1 {
				delete(remaining, r.Partition)
			}
		})
	}
	for n, c := range seen {
		if c > 1 {
			t.duplicated += int64(c - 1)
		}
		if n < int64(len(acked)) && !acked[n] {
			t.unackedPresent++
		}
	}
	for n, a := range acked {
		if a && seen[int64(n)] == 0 {
			t.lost++
		}
	}
	return t
}

// probeResult is one round of the normal client.
type probeResult struct {
	start time.Time
	took  time.Duration
	err   error
}

// prober is the normal client: every interval it sends Metadata, produces
// one small record (acks=all) and fetches it back, on a connection of its
// own, and counts the round served when all three answer without error
// within timeout. A failed round drops the connection; the next dials
// again, as a client would.
type prober struct {
	addr     string
	interval time.Duration
	timeout  time.Duration

	mu      sync.Mutex
	results []probeResult

	cancel context.CancelFunc
	done   chan struct{}
}

func startProber(addr string, interval, timeout time.Duration) *prober {
	ctx, cancel := context.WithCancel(context.Background())
	p := &prober{addr: addr, interval: interval, timeout: timeout, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		var w *wireConn
		defer func() {
			if w != nil {
				w.Close()
			}
		}()
		for ctx.Err() == nil {
			start := time.Now()
			var err error
			if w == nil {
				w, err = dialFrom(ctx, clientIP, addr, nil)
			}
			if err == nil {
				err = p.round(w, start.Add(timeout))
			}
			if err != nil && w != nil {
				w.Close()
				w = nil
			}
			p.mu.Lock()
			p.results = append(p.results, probeResult{start: start, took: time.Since(start), err: err})
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(start.Add(interval))):
			}
		}
	}()
	return p
}

// round is one Metadata + Produce + Fetch, all before deadline.
func (p *prober) round(w *wireConn, deadline time.Time) error {
	left := func() time.Duration { return max(time.Until(deadline), time.Millisecond) }
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(probeTopic)
	md.Topics = append(md.Topics, t)
	resp, err := w.roundTrip(md, left())
	if err != nil {
		return fmt.Errorf("metadata: %s", describeErr(err))
	}
	if mr := resp.(*kmsg.MetadataResponse); len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 {
		return errors.New("metadata: probe topic not served")
	}
	val := []byte(time.Now().Format(time.RFC3339Nano))
	rec := record(0, 0, nil, val, -1)
	resp, err = w.roundTrip(produceRequest(probeTopic, 0, plainBatch(time.Now().UnixMilli(), rec).encode(), -1), left())
	if err != nil {
		return fmt.Errorf("produce: %s", describeErr(err))
	}
	pr := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if pr.ErrorCode != 0 {
		return fmt.Errorf("produce: %s", errName(pr.ErrorCode))
	}
	f := fetchRequest(probeTopic, 0, pr.BaseOffset, 1<<20)
	resp, err = w.roundTrip(f, left())
	if err != nil {
		return fmt.Errorf("fetch: %s", describeErr(err))
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return errors.New("fetch: malformed answer")
	}
	fp := fr.Topics[0].Partitions[0]
	if fp.ErrorCode != 0 {
		return fmt.Errorf("fetch: %s", errName(fp.ErrorCode))
	}
	if len(fp.RecordBatches) == 0 {
		return errors.New("fetch: the record just produced was not returned")
	}
	return nil
}

// window summarises the rounds that started in [from, to): served, total,
// the slowest, and the first failure. It waits until a round has started
// after to (or timeout passed), so a round hanging at the end counts.
func (p *prober) window(from, to time.Time) (served, total int, slowest time.Duration, firstErr error) {
	deadline := time.Now().Add(p.timeout + p.interval + time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		n := len(p.results)
		past := n > 0 && !p.results[n-1].start.Before(to)
		p.mu.Unlock()
		if past {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.results {
		if r.start.Before(from) || !r.start.Before(to) {
			continue
		}
		total++
		slowest = max(slowest, r.took)
		if r.err == nil {
			served++
		} else if firstErr == nil {
			firstErr = r.err
		}
	}
	return served, total, slowest, firstErr
}

func (p *prober) stop() {
	p.cancel()
	<-p.done
}

// produceRequest is an acks=all Produce of one batch to one partition.
func produceRequest(topic string, partition int32, batch []byte, acks int16) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = acks
	req.TimeoutMillis = 10000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = partition
	p.Records = batch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// fetchRequest is a Fetch (v11, topic names) of one partition from offset.
func fetchRequest(topic string, partition int32, offset int64, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = maxBytes
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = partition
	p.FetchOffset = offset
	p.PartitionMaxBytes = maxBytes
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}
