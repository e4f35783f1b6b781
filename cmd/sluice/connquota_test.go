package main

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// attemptFrom opens a connection from src to addr, sends ApiVersions and
// reports whether the broker answered (true) or closed the connection
// without an answer (false); the connection is closed on return.
func attemptFrom(src, addr string) (bool, error) {
	d := net.Dialer{Timeout: waitTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return false, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitTimeout))
	if _, err := c.Write(apiVersionsRequest("conn-quota")); err != nil {
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			return false, nil
		}
		return false, err
	}
	var size [4]byte
	_, err = io.ReadFull(c, size[:])
	switch {
	case err == nil:
		_, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:])))
		return err == nil, err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return false, nil
	}
	return false, err
}

// TestConnectionCreationRateQuotaFlood is issue 18's acceptance 5, a
// measurement run only with SLUICE_CONN_QUOTA=1: 5,000 connection
// attempts from one address (127.0.0.40), paced at about 100 a second,
// against a connection_creation_rate quota of 50 on that address. It
// reports the accepted (answered) rate, the broker's RSS sampled every
// second, and the produce latency of a normal client on another address
// producing every 50 ms throughout (and for 5 s before, for comparison),
// and fails if the accepted rate is
// not within ±15 % of 50/s or a produce fails.
func TestConnectionCreationRateQuotaFlood(t *testing.T) {
	if os.Getenv("SLUICE_CONN_QUOTA") == "" {
		t.Skip("set SLUICE_CONN_QUOTA=1 to measure")
	}
	const (
		flooder  = "127.0.0.40"
		quota    = 50
		attempts = 5000
		pace     = 10 * time.Millisecond // ~100 attempts a second
		workers  = 32
	)
	p := startSluice(t, t.TempDir(), freePort(t))
	cl := p.client(kgo.DefaultProduceTopic("conn-quota"), kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "conn-quota"); err != nil {
		t.Fatal(err)
	}
	name := flooder
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: &name}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: quota}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas: %v %v", err, res)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm-up")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// The normal client's produce latency with no flood, for comparison.
	var baseline []time.Duration
	for range 100 {
		start := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("baseline")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		baseline = append(baseline, time.Since(start))
		time.Sleep(50 * time.Millisecond) // the pace of the produces below, not a synchronisation
	}
	slices.Sort(baseline)
	t.Logf("normal client before the flood: %d produces, latency p50 %v p99 %v max %v", len(baseline),
		baseline[50].Round(time.Microsecond), baseline[98].Round(time.Microsecond), baseline[99].Round(time.Microsecond))

	stop := make(chan struct{})
	var bg sync.WaitGroup
	// The normal client: one produce every 50 ms, latency recorded.
	var latencies []time.Duration
	var produceErr atomic.Value
	bg.Add(1)
	go func() {
		defer bg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			start := time.Now()
			pctx, cancel := context.WithTimeout(ctx, waitTimeout)
			err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("normal")}).FirstErr()
			cancel()
			if err != nil {
				produceErr.Store(err)
				return
			}
			latencies = append(latencies, time.Since(start))
		}
	}()
	// RSS every second.
	var rss []int64
	var rssMu sync.Mutex
	bg.Add(1)
	go func() {
		defer bg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			v := procStatus(t, p.pid(), "VmRSS")
			rssMu.Lock()
			rss = append(rss, v)
			rssMu.Unlock()
		}
	}()

	tokens := make(chan struct{}, attempts)
	var answered, closed atomic.Int64
	var attemptErr atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range tokens {
				ok, err := attemptFrom(flooder, p.addr)
				switch {
				case err != nil:
					attemptErr.Store(err)
				case ok:
					answered.Add(1)
				default:
					closed.Add(1)
				}
			}
		}()
	}
	start := time.Now()
	tick := time.NewTicker(pace)
	for range attempts {
		<-tick.C
		tokens <- struct{}{}
	}
	tick.Stop()
	close(tokens)
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	bg.Wait()

	if err, _ := attemptErr.Load().(error); err != nil {
		t.Errorf("an attempt failed otherwise than answered or closed: %v", err)
	}
	if err, _ := produceErr.Load().(error); err != nil {
		t.Errorf("the normal client's produce failed: %v", err)
	}
	rate := float64(answered.Load()) / elapsed.Seconds()
	t.Logf("%d attempts from %s in %v: %d answered, %d closed unanswered; accepted rate %.1f/s (quota %d/s)",
		attempts, flooder, elapsed.Round(time.Millisecond), answered.Load(), closed.Load(), rate, quota)
	slices.Sort(latencies)
	if n := len(latencies); n > 0 {
		t.Logf("normal client during the flood: %d produces, latency p50 %v p99 %v max %v", n,
			latencies[n/2].Round(time.Microsecond), latencies[n*99/100].Round(time.Microsecond), latencies[n-1].Round(time.Microsecond))
	}
	rssMu.Lock()
	if len(rss) > 0 {
		lo, hi := slices.Min(rss), slices.Max(rss)
		t.Logf("broker VmRSS over %d samples: first %d MiB, min %d MiB, max %d MiB, last %d MiB; VmHWM %d MiB",
			len(rss), rss[0]>>20, lo>>20, hi>>20, rss[len(rss)-1]>>20, procStatus(t, p.pid(), "VmHWM")>>20)
		t.Logf("VmRSS by second (MiB): %v", func() []int64 {
			out := make([]int64, len(rss))
			for i, v := range rss {
				out[i] = v >> 20
			}
			return out
		}())
	}
	rssMu.Unlock()
	if rate < quota*0.85 || rate > quota*1.15 {
		t.Errorf("accepted rate %.1f/s, want within ±15%% of %d/s", rate, quota)
	}
}
