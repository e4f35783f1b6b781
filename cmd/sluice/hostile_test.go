package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// requestHeader encodes a request header: api key, version, correlation
// id, client id, and for flexible versions (header v2) an empty tag
// section.
func requestHeader(key, version int16, flexible bool) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 7)
	const clientID = "hostile"
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if flexible {
		b = append(b, 0) // no tagged fields
	}
	return b
}

// framed prefixes body with its int32 size.
func framed(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// withPrefix is a raw size prefix followed by whatever bytes follow it.
func withPrefix(size uint32, rest []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, size), rest...)
}

// TestHostileFrames sends frames no client should send, each on its own
// raw connection, while a well-behaved producer keeps producing on another:
// the broker closes each hostile connection, the producer never notices,
// and a 2 GiB size claim does not make the broker allocate for it.
func TestHostileFrames(t *testing.T) {
	t.Parallel()
	p := startSluice(t, t.TempDir(), freePort(t))
	const topic = "hostile"
	p.createTopic(topic, 1)

	// The bystander: acks=1, one record at a time, counting successes.
	prod := p.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	ctx, cancel := context.WithCancel(context.Background())
	var (
		produced atomic.Int64
		errMu    sync.Mutex
		prodErrs []error
		wg       sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.FormatInt(produced.Load(), 10))}).FirstErr()
			switch {
			case err == nil:
				produced.Add(1)
			case ctx.Err() == nil:
				errMu.Lock()
				prodErrs = append(prodErrs, err)
				errMu.Unlock()
			}
		}
	}()
	defer func() {
		cancel()
		wg.Wait()
		errMu.Lock()
		defer errMu.Unlock()
		for _, err := range prodErrs {
			t.Errorf("bystander producer failed: %v", err)
		}
		t.Logf("bystander produced %d records", produced.Load())
	}()
	producerMoves := func(what string) {
		t.Helper()
		from := produced.Load()
		waitFor(t, "bystander producer after "+what, func() error {
			if produced.Load() <= from {
				return fmt.Errorf("still at %d acknowledged records", from)
			}
			return nil
		})
	}
	producerMoves("start")

	metadataV9 := requestHeader(3, 9, true) // Metadata v9+ uses header v2
	tests := []struct {
		name string
		send []byte
	}{
		{"size prefix claiming 2 GiB-1", withPrefix(0x7fffffff, []byte("not two gigabytes"))},
		{"valid Metadata v9 header, garbage body", framed(append(metadataV9, bytes.Repeat([]byte{0xff}, 16)...))},
		{"unknown api key 9999", framed(requestHeader(9999, 0, false))},
		{"negative size prefix -1", withPrefix(0xffffffff, []byte("abc"))},
		{"negative size prefix MinInt32", withPrefix(0x80000000, []byte("abc"))},
		{"zero size prefix", withPrefix(0, nil)},
	}
	for i, tc := range tests {
		rssBefore, vmBefore := procStatus(t, p.pid(), "VmRSS"), procStatus(t, p.pid(), "VmSize")
		// Several at once, so a broker that allocated the claimed size
		// would show it in its RSS, not just in one short-lived buffer.
		const parallel = 4
		var cw sync.WaitGroup
		got := make([]string, parallel)
		for j := range parallel {
			cw.Add(1)
			go func() {
				defer cw.Done()
				got[j] = sendAndAwaitClose(p.addr, tc.send)
			}()
		}
		cw.Wait()
		for _, g := range got {
			if g != "" {
				t.Errorf("%s: %s", tc.name, g)
			}
		}
		rssAfter, vmAfter := procStatus(t, p.pid(), "VmRSS"), procStatus(t, p.pid(), "VmSize")
		t.Logf("%s: VmRSS %d -> %d KiB, VmSize %d -> %d KiB",
			tc.name, rssBefore>>10, rssAfter>>10, vmBefore>>10, vmAfter>>10)
		if i == 0 {
			if rssAfter-rssBefore > 64<<20 {
				t.Errorf("%s: broker RSS grew by %d MiB", tc.name, (rssAfter-rssBefore)>>20)
			}
			// Fresh pages from the OS are not resident until written,
			// so a buffer allocated for the claim but never filled
			// shows in the address space, not in the RSS.
			if vmAfter-vmBefore > 1<<30 {
				t.Errorf("%s: broker address space grew by %d MiB", tc.name, (vmAfter-vmBefore)>>20)
			}
		}
		producerMoves(tc.name)
	}
}

// sendAndAwaitClose writes b on a new connection and waits for the broker
// to close it. It returns "" when the broker closed the connection, or what
// went wrong.
func sendAndAwaitClose(addr string, b []byte) string {
	c, err := net.DialTimeout("tcp", addr, waitTimeout)
	if err != nil {
		return fmt.Sprintf("dial: %v", err)
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		return fmt.Sprintf("write: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(waitTimeout))
	n, err := io.Copy(io.Discard, c)
	switch {
	case err == nil, errors.Is(err, syscall.ECONNRESET):
		if n > 0 {
			return fmt.Sprintf("broker answered with %d bytes before closing", n)
		}
		return ""
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "the broker did not close the connection"
	default:
		return fmt.Sprintf("read: %v", err)
	}
}

// procStatus reads a size field (VmRSS, VmSize, ...) of a process's
// /proc/<pid>/status, in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s %q: %v", field, rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
