package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"
)

// frameTarget is the body size of the 100 MiB frames: just under sluice's
// (and Kafka's) default socket.request.max.bytes of 104,857,600.
const frameTarget = 100<<20 - 1024

// frameBuilder appends the body of one request after its header and says
// what it holds.
type frameBuilder func(ctx context.Context, h *harness) (key, version int16, body []byte, what string, err error)

// appendString appends a non-flexible (int16 length) string.
func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// tinyName is a short distinct name for element i.
func tinyName(prefix string, i int) string { return prefix + strconv.FormatInt(int64(i), 36) }

// fillArray appends int32 count and then elements from elem while the
// buffer stays within limit bytes; it returns the count.
func fillArray(b []byte, limit int, elem func(b []byte, i int) []byte) ([]byte, int) {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	n := 0
	for {
		next := elem(b, n)
		if len(next) > limit {
			break // b still ends after element n-1
		}
		b = next
		n++
	}
	binary.BigEndian.PutUint32(b[at:], uint32(n))
	return b, n
}

func metadataFlood(ctx context.Context, h *harness) (int16, int16, []byte, string, error) {
	b := make([]byte, 0, frameTarget+64)
	b, n := fillArray(b, frameTarget-1, func(b []byte, i int) []byte { return appendString(b, tinyName("t", i)) })
	b = append(b, 0) // allow_auto_topic_creation = false
	return 3, 4, b, fmt.Sprintf("%d topic names", n), nil
}

func fetchPartitionFlood(ctx context.Context, h *harness) (int16, int16, []byte, string, error) {
	const topic = "attack-fetch-flood"
	if err := h.createTopic(ctx, topic, 1, nil); err != nil {
		return 0, 0, nil, "", err
	}
	b := make([]byte, 0, frameTarget+64)
	b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // replica id -1
	b = binary.BigEndian.AppendUint32(b, 0)              // max wait
	b = binary.BigEndian.AppendUint32(b, 0)              // min bytes
	b = binary.BigEndian.AppendUint32(b, 1<<20)          // max bytes
	b = append(b, 0)                                     // isolation level
	b = binary.BigEndian.AppendUint32(b, 1)              // one topic
	b = appendString(b, topic)
	b, n := fillArray(b, frameTarget, func(b []byte, i int) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(i)) // partition
		b = binary.BigEndian.AppendUint64(b, 0)         // fetch offset
		return binary.BigEndian.AppendUint32(b, 1024)   // partition max bytes
	})
	return 1, 4, b, fmt.Sprintf("%d partitions", n), nil
}

func createTopicsFlood(ctx context.Context, h *harness) (int16, int16, []byte, string, error) {
	b := make([]byte, 0, frameTarget+64)
	b, n := fillArray(b, frameTarget-5, func(b []byte, i int) []byte {
		b = appendString(b, tinyName("x!", i))  // not a legal topic name
		b = binary.BigEndian.AppendUint32(b, 0) // num partitions: 0 is invalid
		b = binary.BigEndian.AppendUint16(b, 1) // replication factor
		b = binary.BigEndian.AppendUint32(b, 0) // no assignments
		return binary.BigEndian.AppendUint32(b, 0)
	})
	b = binary.BigEndian.AppendUint32(b, 1000) // timeout
	b = append(b, 1)                           // validate only
	return 19, 2, b, fmt.Sprintf("%d topics", n), nil
}

func describeConfigsFlood(ctx context.Context, h *harness) (int16, int16, []byte, string, error) {
	b := make([]byte, 0, frameTarget+64)
	b, n := fillArray(b, frameTarget-1, func(b []byte, i int) []byte {
		b = append(b, 2) // topic
		b = appendString(b, tinyName("c", i))
		return binary.BigEndian.AppendUint32(b, math.MaxUint32) // all configs (null)
	})
	b = append(b, 0) // include synonyms: no
	return 32, 1, b, fmt.Sprintf("%d resources", n), nil
}

func describeConfigsRepeat(ctx context.Context, h *harness) (int16, int16, []byte, string, error) {
	const topic = "attack-configs"
	if err := h.createTopic(ctx, topic, 1, nil); err != nil {
		return 0, 0, nil, "", err
	}
	b, n := fillArray(nil, 1<<20-1, func(b []byte, i int) []byte {
		b = append(b, 2)
		b = appendString(b, topic)
		return binary.BigEndian.AppendUint32(b, math.MaxUint32)
	})
	b = append(b, 0)
	return 32, 1, b, fmt.Sprintf("%d copies of one topic", n), nil
}

// bigFrame sends the built request on an attacker connection and reads
// its answer without keeping it: the table shows whether it came, how big
// it was (its size prefix), or that the connection was closed.
func bigFrame(build frameBuilder) func(context.Context, *harness) outcome {
	return func(ctx context.Context, h *harness) outcome {
		key, version, body, what, err := build(ctx, h)
		if err != nil {
			return outcome{answer: "setup failed: " + err.Error()}
		}
		hdr := requestHeader(key, version, 1, false)
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)+len(body)))
		frame = append(frame, hdr...)
		w, err := h.attackConn(ctx)
		if err != nil {
			return outcome{answer: "dial: " + describeErr(err)}
		}
		defer w.Close()
		notes := fmt.Sprintf("%s frame, %s", human(int64(len(frame)+len(body))), what)
		w.c.SetDeadline(time.Now().Add(90 * time.Second))
		if err := w.write(frame); err == nil {
			err = w.write(body)
		}
		body = nil
		if err != nil {
			return outcome{answer: "connection closed while sending (" + describeErr(err) + ")", notes: notes}
		}
		return outcome{answer: readAnswer(w, time.Now().Add(2*time.Minute)), notes: notes}
	}
}

// readAnswer reads one response frame and describes it by its size, or
// says the connection was closed or nothing came.
func readAnswer(w *wireConn, deadline time.Time) string {
	w.c.SetReadDeadline(deadline)
	start := time.Now()
	size, _, err := w.readFrame(0)
	took := time.Since(start).Round(100 * time.Millisecond)
	switch {
	case err != nil && size == 0:
		return describeErr(err)
	case size < 0:
		return fmt.Sprintf("**response size prefix negative (%d)**: frame over 2 GiB", size)
	case err != nil:
		return fmt.Sprintf("%s response, cut short: %s", human(int64(size)), describeErr(err))
	default:
		return fmt.Sprintf("answered: %s response (read in %s)", human(int64(size)), took)
	}
}

// fetchDuplicates fills one partition with 24 KiB of records, then asks
// for it 100,000 times in one Fetch with every byte limit at 2^31-1.
func fetchDuplicates(ctx context.Context, h *harness) outcome {
	const topic = "attack-fetch-dup"
	if err := h.createTopic(ctx, topic, 1, nil); err != nil {
		return outcome{answer: "setup failed: " + err.Error()}
	}
	var batches [][]byte
	for i := range 24 {
		val := make([]byte, 1000)
		for j := range val {
			val[j] = byte('a' + (i+j)%26)
		}
		batches = append(batches, plainBatch(time.Now().UnixMilli(), record(0, 0, nil, val, -1)).encode())
	}
	if err := h.produceSetup(ctx, topic, 0, batches...); err != nil {
		return outcome{answer: "setup failed: " + err.Error()}
	}
	var b []byte
	b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // replica id -1
	b = binary.BigEndian.AppendUint32(b, 0)              // max wait
	b = binary.BigEndian.AppendUint32(b, 0)              // min bytes
	b = binary.BigEndian.AppendUint32(b, math.MaxInt32)  // max bytes
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = appendString(b, topic)
	b = binary.BigEndian.AppendUint32(b, 100_000)
	for range 100_000 {
		b = binary.BigEndian.AppendUint32(b, 0)
		b = binary.BigEndian.AppendUint64(b, 0)
		b = binary.BigEndian.AppendUint32(b, math.MaxInt32)
	}
	hdr := requestHeader(1, 4, 1, false)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)+len(b)))
	frame = append(append(frame, hdr...), b...)
	w, err := h.attackConn(ctx)
	if err != nil {
		return outcome{answer: "dial: " + describeErr(err)}
	}
	defer w.Close()
	w.c.SetWriteDeadline(time.Now().Add(time.Minute))
	if err := w.write(frame); err != nil {
		return outcome{answer: "connection closed while sending (" + describeErr(err) + ")"}
	}
	return outcome{answer: readAnswer(w, time.Now().Add(3*time.Minute)), notes: fmt.Sprintf("%s request", human(int64(len(frame))))}
}
