package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sendfileLine matches strace -yy's rendering of a sendfile(2) call from a
// partition's segment file to a TCP socket, e.g.
//
//	1234  sendfile(12<TCP:[127.0.0.1:9092->127.0.0.1:40112]>, 15</tmp/x/sf-0/00000000000000000000.log>, [0] => [1048576], 1048576) = 1048576
var sendfileLine = regexp.MustCompile(`sendfile\(\d+<TCP(?:v6)?:\[[^\]]*\]>, \d+<([^>]*/sf-0/\d{20}\.log)>, .*\) = (\d+)`)

// TestFetchSendfileSyscall watches the broker's system calls with strace
// while a consumer reads 4 MiB of incompressible records: the record bytes
// must leave through sendfile(2) calls whose source is the partition's
// segment file (.log) and whose destination is the consumer's TCP socket,
// adding up to at least the records' size. A regression to reading the
// segment into memory and writing it out fails here. Skipped where strace
// is missing or cannot attach (no ptrace permission); CI installs it.
func TestFetchSendfileSyscall(t *testing.T) {
	straceBin, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed")
	}
	p := startSluice(t, t.TempDir(), freePort(t))
	p.createTopic("sf", 1)
	const records, size = 4096, 1024
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []*kgo.Record
	for range records {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		recs = append(recs, &kgo.Record{Topic: "sf", Value: v})
	}
	cl := p.client(kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	out := filepath.Join(t.TempDir(), "strace.out")
	var stderr lockedBuffer
	st := exec.Command(straceBin, "-f", "-yy", "-e", "trace=sendfile", "-o", out, "-p", strconv.Itoa(p.pid()))
	st.Stderr = &stderr
	if err := st.Start(); err != nil {
		t.Skipf("strace: %v", err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			st.Process.Signal(syscall.SIGINT) // detaches from the broker, which runs on
			st.Wait()
		}
	}
	defer stop()
	// strace reports each thread it attached to; wait for that before the
	// consumer starts, or its fetches could go unwatched.
	for deadline := time.Now().Add(waitTimeout); !strings.Contains(stderr.String(), "attached"); {
		if strings.Contains(stderr.String(), "Operation not permitted") {
			t.Skipf("strace cannot attach here: %s", stderr.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("strace did not attach: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	got := p.consumeAll("sf", map[int32]int64{0: records})[0]
	if len(got) != records {
		t.Fatalf("consumed %d records, want %d", len(got), records)
	}
	for i, r := range got {
		if !bytes.Equal(r.Value, recs[i].Value) {
			t.Fatalf("record %d differs from what was produced", i)
		}
	}
	stop()

	trace, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var calls, sent int64
	for _, m := range sendfileLine.FindAllStringSubmatch(string(trace), -1) {
		n, _ := strconv.ParseInt(m[2], 10, 64)
		calls++
		sent += n
	}
	t.Logf("%d sendfile(2) calls from sf-0's segment to a TCP socket, %d bytes", calls, sent)
	if sent < records*size {
		t.Fatalf("sendfile(2) sent %d bytes of sf-0's segment, want at least %d; strace saw:\n%.2000s", sent, records*size, trace)
	}
}
