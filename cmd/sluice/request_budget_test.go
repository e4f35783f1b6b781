package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The tests in this file check the request memory budget
// (queued.max.request.bytes) and the bound on what decoding a request may
// cost, as a client observes them.

// produceFrame is a Produce v9 frame of exactly size bytes (prefix
// included) for a topic that does not exist: one partition whose records
// field is filled with zeros to reach the size. The broker answers it with
// an error code; what matters here is the memory it holds while it does.
func produceFrame(t *testing.T, size int) []byte {
	t.Helper()
	build := func(records int) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.Version = 9
		req.Acks = 1
		req.TimeoutMillis = 5000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "budget-no-such-topic"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = make([]byte, records)
		tp.Partitions = append(tp.Partitions, pp)
		req.Topics = append(req.Topics, tp)
		return kmsg.NewRequestFormatter(kmsg.FormatterClientID("budget")).AppendRequest(nil, req, 1)
	}
	// The records' compact length grows with its value, so settle the
	// size in a few steps.
	records := size
	f := build(records)
	for i := 0; i < 3 && len(f) != size; i++ {
		records -= len(f) - size
		f = build(records)
	}
	if len(f) != size {
		t.Fatalf("produce frame of %d bytes, wanted %d", len(f), size)
	}
	return f
}

// readAnswer waits up to d for one response frame on c.
func readAnswer(c net.Conn, d time.Duration) error {
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err
	}
	_, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:])))
	return err
}

// TestRequestBudgetMutesConnection: with queued.max.request.bytes = 1 MiB,
// two 700 KiB requests, each held after 600 KiB, do not fit together: the
// broker reserves each frame's buffer as its bytes arrive, so one of them
// gets its 700 KiB and the other is muted (and logged) until that one has
// been answered. Even once complete, the muted request is not answered
// before the other is complete and answered; then it is.
func TestRequestBudgetMutesConnection(t *testing.T) {
	t.Parallel()
	p := startSluice(t, t.TempDir(), freePort(t), "--log-level", "debug",
		"--override", "socket.request.max.bytes=1048576",
		"--override", "queued.max.request.bytes=1048576")

	conns := map[string]net.Conn{"a": dialFrom(t, "127.0.0.11", p.addr), "b": dialFrom(t, "127.0.0.12", p.addr)}
	frames := map[string][]byte{"a": produceFrame(t, 700<<10), "b": produceFrame(t, 700<<10)}
	const sent = 600 << 10
	for _, k := range []string{"a", "b"} {
		if _, err := conns[k].Write(frames[k][:sent]); err != nil {
			t.Fatal(err)
		}
	}

	// Neither can complete, so neither releases: one must be muted.
	var muted string
	waitFor(t, "a connection muted by the request memory budget", func() error {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if !strings.Contains(line, "queued.max.request.bytes") {
				continue
			}
			switch {
			case strings.Contains(line, "127.0.0.11:"):
				muted = "a"
			case strings.Contains(line, "127.0.0.12:"):
				muted = "b"
			default:
				continue
			}
			return nil
		}
		return errors.New("no such log line")
	})
	other := map[string]string{"a": "b", "b": "a"}[muted]
	t.Logf("muted connection: %s", muted)

	// The muted request, complete now, is not even read while the other
	// holds the budget.
	if _, err := conns[muted].Write(frames[muted][sent:]); err != nil {
		t.Fatal(err)
	}
	if err := readAnswer(conns[muted], 500*time.Millisecond); err == nil {
		t.Fatal("the muted connection was answered while the budget was exhausted")
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("muted connection: %v", err)
	}
	if _, err := conns[other].Write(frames[other][sent:]); err != nil {
		t.Fatal(err)
	}
	if err := readAnswer(conns[other], waitTimeout); err != nil {
		t.Fatalf("%s: %v", other, err)
	}
	if err := readAnswer(conns[muted], waitTimeout); err != nil {
		t.Fatalf("%s, once memory was released: %v", muted, err)
	}
}

// metadataTinyTopicsFrame is a Metadata v8 request of exactly size bytes
// naming empty topic names: two bytes on the wire each, the cheapest
// element there is to send and one of the dearest to decode and answer.
func metadataTinyTopicsFrame(size int) []byte {
	hdr := []byte{0, 3, 0, 8, 0, 0, 0, 9, 0, 4}
	hdr = append(hdr, "tiny"...)
	tail := []byte{0, 0, 0} // allow_auto_topic_creation, include_cluster/topic_authorized_operations
	n := (size - 4 - len(hdr) - 4 - len(tail)) / 2
	f := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)+4+2*n+len(tail)))
	f = append(f, hdr...)
	f = binary.BigEndian.AppendUint32(f, uint32(n))
	f = append(f, make([]byte, 2*n)...)
	return append(f, tail...)
}

// TestAmplifiedRequestRefused: a 6 MiB Metadata request of three million
// empty topic names would cost the broker far more than
// queued.max.request.bytes (32 MiB here) to decode and answer. The broker
// closes its connection without decoding it, and a normal client is
// served before, during and after.
func TestAmplifiedRequestRefused(t *testing.T) {
	t.Parallel()
	p := startSluice(t, t.TempDir(), freePort(t),
		"--override", "socket.request.max.bytes=8388608",
		"--override", "queued.max.request.bytes=33554432")
	const topic = "amplified"
	p.createTopic(topic, 1)
	cl := p.client(kgo.DefaultProduceTopic(topic))
	produce := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(what)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", what, err)
		}
	}
	produce("before")
	if msg := sendAndAwaitClose(p.addr, metadataTinyTopicsFrame(6<<20)); msg != "" {
		t.Fatalf("6 MiB of empty topic names: %s", msg)
	}
	produce("after")
	// The broker logs the refusal as it closes the connection; the line
	// reaches p.stderr through the pipe's copier, possibly after the
	// close was seen, so wait for it.
	waitFor(t, "a log line naming queued.max.request.bytes", func() error {
		if !strings.Contains(p.stderr.String(), "queued.max.request.bytes") {
			return fmt.Errorf("not in stderr:\n%s", p.stderr.String())
		}
		return nil
	})
}

// TestAmplificationPeakRSS measures the broker's peak RSS (VmHWM) while it
// is sent 100 MiB requests of tiny elements, one API at a time, and logs
// it. It is a measurement, not a check, so it runs only with
// SLUICE_RSS_ATTACK=1:
//
//	SLUICE_RSS_ATTACK=1 go test ./cmd/sluice -run TestAmplificationPeakRSS -v
func TestAmplificationPeakRSS(t *testing.T) {
	if os.Getenv("SLUICE_RSS_ATTACK") == "" {
		t.Skip("set SLUICE_RSS_ATTACK=1 to measure")
	}
	// Each case has a broker of its own, so that VmHWM is the case's.
	var p *sluiceProc
	fresh := func() {
		if p != nil {
			p.kill()
		}
		p = startSluice(t, t.TempDir(), freePort(t))
		p.createTopic("rss", 1)
	}
	const size = 100 << 20
	for _, tc := range []struct {
		name     string
		frame    []byte
		answered bool // admitted: wait for the answer, not for a close
	}{
		// The largest requests of each kind the default budget admits
		// (their charges just below 512 MiB), decoded and answered.
		{"Metadata v8, 2.2 MiB of empty names", metadataTinyTopicsFrame(2250 << 10), true},
		// Distinct names are each answered (UNKNOWN_TOPIC_OR_PARTITION).
		{"Metadata v8, 6.3 MiB of distinct names", metadataDistinctTopicsFrame(6450 << 10), true},
		{"DescribeGroups v0, 5.7 MiB of distinct names", describeGroupsDistinctFrame(5850 << 10), true},
		{"Fetch v4, 4.2 MiB of partitions", fetchTinyPartitionsFrame(4320 << 10), true},
		// DescribeConfigs answers every name asked for, synonyms
		// included: a name repeated is the dearest answer per request byte.
		{"DescribeConfigs v4, 4.8 MiB of one name", describeConfigsRepeatedFrame(4960 << 10), true},
		{"Metadata v8, empty topic names", metadataTinyTopicsFrame(size), false},
		{"Fetch v4, one topic, empty partitions", fetchTinyPartitionsFrame(size), false},
		{"DescribeGroups v0, empty group names", describeGroupsTinyFrame(size), false},
		{"Produce v9, empty partitions", produceTinyPartitionsFrame(size), false},
	} {
		fresh()
		rest := procStatus(t, p.pid(), "VmRSS")
		start := time.Now()
		var msg string
		if !tc.answered {
			if msg = sendAndAwaitClose(p.addr, tc.frame); msg == "" {
				msg = "connection closed"
			}
		} else {
			msg = "answered"
			c, err := net.DialTimeout("tcp", p.addr, waitTimeout)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(tc.frame); err != nil {
				t.Fatal(err)
			}
			if err := readAnswer(c, 10*time.Minute); err != nil {
				msg = fmt.Sprintf("not answered: %v", err)
			}
			c.Close()
		}
		t.Logf("%-48s %s in %v; %d bytes sent; VmHWM %d MiB (at rest %d MiB)", tc.name, msg, time.Since(start).Round(time.Millisecond),
			len(tc.frame), procStatus(t, p.pid(), "VmHWM")>>20, rest>>20)
	}
	fresh()

	// Four concurrent 100 MiB Produce requests of one batch each, the
	// shape a legitimate client sends: all four fit the budget together.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", p.addr, waitTimeout)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			if _, err := c.Write(produceFrame(t, size)); err != nil {
				errs <- err
				return
			}
			errs <- readAnswer(c, 10*time.Minute)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a 100 MiB Produce: %v", err)
		}
	}
	t.Logf("%-48s answered in %v; VmHWM %d MiB", "4 concurrent Produce v9 of 100 MiB", time.Since(start).Round(time.Millisecond),
		procStatus(t, p.pid(), "VmHWM")>>20)

	cl := p.client(kgo.DefaultProduceTopic("rss"))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("still served")}).FirstErr(); err != nil {
		t.Errorf("a normal client after the attack: %v", err)
	}
}

// fetchTinyPartitionsFrame is a Fetch v4 request of about size bytes: one
// topic with as many partitions as fit, each 16 bytes on the wire.
func fetchTinyPartitionsFrame(size int) []byte {
	var b []byte
	b = append(b, 0, 1, 0, 4, 0, 0, 0, 9, 0, 4)
	b = append(b, "tiny"...)
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // replica id -1
	b = binary.BigEndian.AppendUint32(b, 0)          // max wait
	b = binary.BigEndian.AppendUint32(b, 1)          // min bytes
	b = binary.BigEndian.AppendUint32(b, 1<<20)      // max bytes
	b = append(b, 0)                                 // isolation level
	b = binary.BigEndian.AppendUint32(b, 1)          // one topic
	b = append(b, 0, 3)
	b = append(b, "rss"...)
	n := (size - 4 - len(b) - 4) / 16
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	for i := range n {
		b = binary.BigEndian.AppendUint32(b, uint32(i))
		b = append(b, make([]byte, 12)...) // offset 0, partition max bytes 0
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// metadataDistinctTopicsFrame is a Metadata v8 request of about size
// bytes naming distinct 4-character topics that do not exist, without
// auto-creation.
func metadataDistinctTopicsFrame(size int) []byte {
	hdr := []byte{0, 3, 0, 8, 0, 0, 0, 9, 0, 4}
	hdr = append(hdr, "dist"...)
	n := (size - 4 - len(hdr) - 4 - 3) / 6
	b := append([]byte(nil), hdr...)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	for i := range n {
		b = append(b, 0, 4, digits[i/46656%36], digits[i/1296%36], digits[i/36%36], digits[i%36])
	}
	b = append(b, 0, 0, 0)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// describeGroupsDistinctFrame is a DescribeGroups v0 request of about
// size bytes naming distinct 4-character groups.
func describeGroupsDistinctFrame(size int) []byte {
	b := []byte{0, 15, 0, 0, 0, 0, 0, 9, 0, 4}
	b = append(b, "dist"...)
	n := (size - 4 - len(b) - 4) / 6
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	for i := range n {
		b = append(b, 0, 4, digits[i/46656%36], digits[i/1296%36], digits[i/36%36], digits[i%36])
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// produceTinyPartitionsFrame is a Produce v9 request of about size bytes:
// one topic with as many partitions as fit, each with null records, six
// bytes on the wire.
func produceTinyPartitionsFrame(size int) []byte {
	var b []byte
	b = append(b, 0, 0, 0, 9, 0, 0, 0, 9, 0, 4)
	b = append(b, "tiny"...)
	b = append(b, 0)                         // header tags
	b = append(b, 0)                         // transactional id: null
	b = binary.BigEndian.AppendUint16(b, 1)  // acks
	b = binary.BigEndian.AppendUint32(b, 10) // timeout
	b = append(b, 2, 4)                      // one topic, named "rss"
	b = append(b, "rss"...)
	n := (size - 4 - len(b) - 8) / 6
	b = binary.AppendUvarint(b, uint64(n)+1)
	for i := range n {
		b = binary.BigEndian.AppendUint32(b, uint32(i))
		b = append(b, 0, 0) // null records, no tags
	}
	b = append(b, 0, 0) // topic tags, request tags
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// describeConfigsRepeatedFrame is a DescribeConfigs v4 request of about
// size bytes for broker 1's configs, naming log.retention.ms over and
// over.
func describeConfigsRepeatedFrame(size int) []byte {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	req.IncludeSynonyms = true
	req.IncludeDocumentation = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceTypeBroker
	r.ResourceName = "1"
	const name = "log.retention.ms"
	r.ConfigNames = make([]string, size/(len(name)+1))
	for i := range r.ConfigNames {
		r.ConfigNames[i] = name
	}
	req.Resources = append(req.Resources, r)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("rss")).AppendRequest(nil, req, 1)
}

// describeGroupsTinyFrame is a DescribeGroups v0 request of about size
// bytes naming empty group names, two bytes each.
func describeGroupsTinyFrame(size int) []byte {
	var b []byte
	b = append(b, 0, 15, 0, 0, 0, 0, 0, 9, 0, 4)
	b = append(b, "tiny"...)
	n := (size - 4 - len(b) - 4) / 2
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, make([]byte, 2*n)...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}
