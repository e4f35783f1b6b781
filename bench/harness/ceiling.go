package main

// This file owns the machine's ceiling (issue 22): before the systems
// run, the harness measures what this machine can move — loopback TCP,
// sequential writes to the work directory's disk, memory copies — and
// derives from those rates the best a three-replica cluster on this one
// box could do, so that the table can say how close each system gets to
// the hardware and not only to the other system.
//
// Loopback is measured twice: senders writing from memory (a client
// sending a request: a copy into the socket, a copy out of it), and
// senders sending a file from the page cache with sendfile(2) (a broker
// serving a fetch, as both Kafka and sluice do: no copy on the sending
// side). Each rate is the machine's, not one core's: the loopback
// measurements run NumCPU/2 sender/receiver pairs (at least one; a pair
// keeps two threads busy), the disk and memory measurements NumCPU
// writers or copiers side by side. So each rate is what the whole machine
// does when it does nothing else.
//
// The model. On one box the three brokers and the clients share the same
// cores and the same memory bus, and loopback TCP, page-cache writes and
// memory copies are all work of those cores (copies, mostly): they do not
// overlap for free. A byte that costs 1/R seconds of the machine in each
// step it goes through can therefore go through all of them at no more
// than
//
//	ceiling = 1 / (w/disk + n/loopback + s/sendfile + k/memcpy)
//
// MiB/s, where w counts how many times each byte is written to the page
// cache, n and s how many times it crosses loopback from memory and from
// the page cache, and k how many times it is copied in memory besides
// (the copies inside a loopback crossing and a page-cache write are
// already in those rates). The looser bound that treats the steps as
// independent resources, min(rate/count), is printed beside it but is not
// the ceiling: on this box they are not independent.
//
//   - produce (workload 1, RF 3, acks=all): each byte crosses loopback
//     three times — producer → leader from the client's memory, then
//     leader → each of the two followers from the leader's page cache —
//     and is written three times, once by each replica; a broker need copy
//     it nowhere else (it reads it from the socket into the buffer it
//     writes to its segment): w=3, n=1, s=2, k=0. (The issue's "sent over
//     loopback twice" counts the replication only; the producer runs on
//     this box too, and its bytes cross loopback as well.)
//   - consume (workload 3): the records are in the page cache (just
//     written); each byte crosses loopback once, leader → consumer, with
//     sendfile: s=1, the rest 0.
//
// disk is the page-cache write rate, not the rate with fsync: neither
// broker fsyncs per write (both run with Kafka's defaults,
// log.flush.interval.messages and log.flush.interval.ms unbounded, which
// leave flushing to the OS), so a produce is acknowledged once the bytes
// are in the page cache of three replicas. The rate with the fsync at the
// end is printed too, for what the device itself takes. The memory copy
// rate counts in neither model (k=0: an ideal broker copies nothing the
// kernel does not); it is printed for what a copy of every byte would
// cost.
//
// What the ceiling leaves out makes it a bound nobody reaches: the
// clients' own work (batching, CRCs, the codec), request parsing and
// validation, the replicas' fetch round trips. The goals are 0.6
// of it for produce and 0.8 for consume. Record values are what the
// workloads count (record and batch overheads, a few per cent at 1 KiB,
// cross loopback and land on disk too), so the ratios lean a little
// against the systems. On a shared machine the ceiling moves with
// whatever else runs, as every figure does, and it is measured minutes
// away from the systems' figures: each rate is the best tenth of its
// window (the disk's the best of three rounds), measured before the
// systems and again after them, the better kept, so that the ceiling
// errs high, as a bound should, rather than below what a system reached
// in a quieter minute. A sluice / ceiling above 1 still means the machine
// was busier while the ceiling was measured than during the workload.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// machine is what measureMachine found, in MiB/s (2^20 bytes).
type machine struct {
	loopback  float64 // loopback TCP from memory, pairs side by side
	sendfile  float64 // loopback TCP from the page cache with sendfile(2)
	pairs     int
	disk      float64 // sequential writes into the page cache
	diskFsync float64 // the same with the fsync at the end counted
	diskMiB   int64   // written, over writers files
	writers   int
	memcpy    float64 // memory copy, copiers side by side
	copiers   int
	rounds    int // how many times measureMachine ran (best keeps the best)
}

// ceilingModel counts what each byte of a workload costs the machine:
// page-cache writes, loopback crossings, and memory copies besides.
type ceilingModel struct {
	name                              string
	disk, loopback, sendfile, memcopy float64
}

// The workloads' models (see this file's doc comment).
var (
	produceCeiling = ceilingModel{name: "produce, RF 3", disk: 3, loopback: 1, sendfile: 2}
	consumeCeiling = ceilingModel{name: "consume", sendfile: 1}
)

// ceilingModels are the models by the metric they bound.
var ceilingModels = map[string]ceilingModel{
	"produce_mibs": produceCeiling,
	"consume_mibs": consumeCeiling,
}

// terms are the model's steps: how many times per byte, and the rate.
func (cm ceilingModel) terms(m *machine) [][2]float64 {
	return [][2]float64{{cm.disk, m.disk}, {cm.loopback, m.loopback}, {cm.sendfile, m.sendfile}, {cm.memcopy, m.memcpy}}
}

// rate is the ceiling in MiB/s: 1 / Σ count/rate over the steps the
// model counts, or 0 when a step it counts was not measured.
func (cm ceilingModel) rate(m *machine) float64 {
	var t float64
	for _, s := range cm.terms(m) {
		if s[0] == 0 {
			continue
		}
		if s[1] <= 0 {
			return 0
		}
		t += s[0] / s[1]
	}
	if t == 0 {
		return 0
	}
	return 1 / t
}

// bound is the looser bound of independent resources: the least of
// rate/count over the steps the model counts (0 when one is unmeasured).
func (cm ceilingModel) bound(m *machine) float64 {
	b := 0.0
	for _, s := range cm.terms(m) {
		if s[0] == 0 {
			continue
		}
		if s[1] <= 0 {
			return 0
		}
		if q := s[1] / s[0]; b == 0 || q < b {
			b = q
		}
	}
	return b
}

// formula prints the model, e.g. "1 / (3/disk + 1/loopback + 2/sendfile)".
func (cm ceilingModel) formula() string {
	f := ""
	for i, s := range cm.terms(&machine{}) {
		if s[0] == 0 {
			continue
		}
		if f != "" {
			f += " + "
		}
		f += fmt.Sprintf("%g/%s", s[0], [...]string{"disk", "loopback", "sendfile", "memcpy"}[i])
	}
	return "1 / (" + f + ")"
}

// measureMachine measures the machine's rates, each for d, the disk's
// with fileMiB MiB written under dir.
func measureMachine(ctx context.Context, dir string, d time.Duration, fileMiB int64, logf func(string, ...any)) (*machine, error) {
	m := &machine{rounds: 1}
	var err error
	logf("the machine's ceiling: loopback TCP for %s", d)
	if m.loopback, m.pairs, err = measureLoopback(ctx, d); err != nil {
		return nil, fmt.Errorf("loopback: %w", err)
	}
	logf("the machine's ceiling: loopback TCP with sendfile for %s", d)
	if m.sendfile, err = measureSendfile(ctx, dir, d); err != nil {
		return nil, fmt.Errorf("loopback with sendfile: %w", err)
	}
	logf("the machine's ceiling: %d MiB of sequential writes under %s, %d rounds", fileMiB, dir, diskRounds)
	for range diskRounds {
		pc, fs, writers, err := measureDisk(ctx, dir, fileMiB)
		if err != nil {
			return nil, fmt.Errorf("disk: %w", err)
		}
		m.disk, m.diskFsync, m.writers = max(m.disk, pc), max(m.diskFsync, fs), writers
	}
	m.diskMiB = fileMiB
	logf("the machine's ceiling: memory copy for %s", d)
	m.memcpy, m.copiers = measureMemcpy(ctx, d)
	logf("the machine's ceiling: loopback %.0f MiB/s (%d pairs), with sendfile %.0f, disk %.0f MiB/s (page cache), %.0f MiB/s (with fsync), memcpy %.0f MiB/s; produce RF 3 %.0f MiB/s, consume %.0f MiB/s",
		m.loopback, m.pairs, m.sendfile, m.disk, m.diskFsync, m.memcpy, produceCeiling.rate(m), consumeCeiling.rate(m))
	return m, ctx.Err()
}

// diskRounds is how many times measureMachine measures the disk, keeping
// the best rates (as bestSlice does for the others).
const diskRounds = 3

// best returns a machine with the better of m's and o's rates (either
// may be nil): the ceiling measured before and after the systems.
func (m *machine) best(o *machine) *machine {
	if m == nil || o == nil {
		return cmp.Or(m, o)
	}
	b := *m
	b.loopback, b.sendfile = max(m.loopback, o.loopback), max(m.sendfile, o.sendfile)
	b.disk, b.diskFsync, b.memcpy = max(m.disk, o.disk), max(m.diskFsync, o.diskFsync), max(m.memcpy, o.memcpy)
	b.rounds = m.rounds + o.rounds
	return &b
}

// chunk is the size of every write and read of the measurements.
const chunk = 1 << 20

// randomChunk returns a chunk of random bytes (a page of zeros might be
// cheaper to move somewhere along the way).
func randomChunk() []byte {
	b := make([]byte, chunk)
	r := rand.NewChaCha8([32]byte{22})
	r.Read(b)
	return b
}

// measureLoopback runs max(1, NumCPU/2) sender/receiver pairs over
// 127.0.0.1, each sender writing the same 1 MiB of memory again and
// again, and returns the bytes received per second over d, after a
// warm-up of d/5, and the number of pairs.
func measureLoopback(ctx context.Context, d time.Duration) (float64, int, error) {
	buf := randomChunk()
	return measureStreams(ctx, d, func(out net.Conn) error {
		for {
			if _, err := out.Write(buf); err != nil {
				return err
			}
		}
	})
}

// sendfileMiB is the size of the file measureSendfile sends from.
const sendfileMiB = 64

// measureSendfile is measureLoopback with each sender sending a file of
// sendfileMiB MiB under dir, in the page cache, with sendfile(2) (Go's
// TCPConn.ReadFrom of an *os.File), from its start again each time it
// reaches the end: how brokers serve fetches. The file is removed.
func measureSendfile(ctx context.Context, dir string, d time.Duration) (float64, error) {
	path := filepath.Join(dir, "ceiling-sendfile")
	buf := randomChunk()
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	for range sendfileMiB {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	rate, _, err := measureStreams(ctx, d, func(out net.Conn) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			if _, err := out.(*net.TCPConn).ReadFrom(f); err != nil {
				return err
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
		}
	})
	return rate, err
}

// measureStreams runs max(1, NumCPU/2) pairs of connections over
// 127.0.0.1, send writing into one end until it is closed and a receiver
// reading the other into a 1 MiB buffer, and returns the bytes received
// per second over d, after a warm-up of d/5, and the number of pairs.
func measureStreams(ctx context.Context, d time.Duration, send func(net.Conn) error) (float64, int, error) {
	pairs := max(1, runtime.NumCPU()/2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	var received atomic.Int64
	var conns []net.Conn
	var wg sync.WaitGroup
	sendErrs := make(chan error, pairs)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	for range pairs {
		out, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return 0, 0, err
		}
		conns = append(conns, out)
		in, err := ln.Accept()
		if err != nil {
			return 0, 0, err
		}
		conns = append(conns, in)
		wg.Go(func() { sendErrs <- send(out) })
		wg.Go(func() {
			b := make([]byte, chunk)
			for {
				n, err := in.Read(b)
				received.Add(int64(n))
				if err != nil {
					return
				}
			}
		})
	}
	if err := sleep(ctx, d/5); err != nil {
		return 0, 0, err
	}
	rate, err := bestSlice(ctx, d, received.Load)
	if err != nil {
		return 0, 0, err
	}
	select {
	case err := <-sendErrs:
		// A sender stopped before the connections were closed.
		return 0, 0, fmt.Errorf("sender: %w", err)
	default:
	}
	return rate, pairs, nil
}

// bestSlices is how many parts bestSlice cuts its window into.
const bestSlices = 10

// bestSlice watches counter for d, in slices of d/10, and returns the
// best slice's rate in MiB/s. The machine is shared: the best slice is
// the nearest to what it can do, and a ceiling errs high (it is a bound)
// rather than low.
func bestSlice(ctx context.Context, d time.Duration, counter func() int64) (float64, error) {
	best := 0.0
	n0, t0 := counter(), time.Now()
	for range bestSlices {
		if err := sleep(ctx, d/bestSlices); err != nil {
			return 0, err
		}
		n1, t1 := counter(), time.Now()
		best = max(best, mibPerSec(n1-n0, t1.Sub(t0)))
		n0, t0 = n1, t1
	}
	return best, nil
}

// measureDisk writes fileMiB MiB under dir, in 1 MiB writes, split over
// NumCPU files written side by side, then fsyncs them, and returns the
// rate until the last write returned (the page cache's), the rate until
// the last fsync returned, and the number of writers. The files are
// removed.
func measureDisk(ctx context.Context, dir string, fileMiB int64) (pageCache, withFsync float64, writers int, err error) {
	writers = max(1, min(runtime.NumCPU(), int(fileMiB)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, 0, err
	}
	buf := randomChunk()
	files := make([]*os.File, writers)
	for i := range files {
		if files[i], err = os.Create(filepath.Join(dir, fmt.Sprintf("ceiling-%d", i))); err != nil {
			return 0, 0, 0, err
		}
		defer os.Remove(files[i].Name())
		defer files[i].Close()
	}
	errs := make([]error, writers)
	each := fileMiB / int64(writers)
	start := time.Now()
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			for range each {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					return
				}
				if _, err := f.Write(buf); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	written := time.Since(start)
	for i, f := range files {
		wg.Go(func() {
			if err := f.Sync(); err != nil && errs[i] == nil {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	synced := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, err
	}
	total := each * int64(writers) * chunk
	return mibPerSec(total, written), mibPerSec(total, synced), writers, nil
}

// memcpyBuffer is the size of each copier's buffers: well past any
// cache. It is copied in pieces of memcpyPiece, which the clock counts.
const (
	memcpyBuffer = 64 << 20
	memcpyPiece  = 8 << 20
)

// measureMemcpy has NumCPU goroutines copy a 64 MiB buffer into another,
// 8 MiB at a time, over and over for d (after a warm-up copy each) and
// returns the bytes copied per second in the best tenth of d, and the
// number of copiers.
func measureMemcpy(ctx context.Context, d time.Duration) (float64, int) {
	copiers := runtime.NumCPU()
	var copied atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	ready := make(chan struct{}, copiers)
	for range copiers {
		wg.Go(func() {
			src, dst := make([]byte, memcpyBuffer), make([]byte, memcpyBuffer)
			copy(src, randomChunk())
			copy(dst, src) // fault every page in
			ready <- struct{}{}
			for o := 0; !stop.Load(); o = (o + memcpyPiece) % memcpyBuffer {
				copied.Add(int64(copy(dst[o:o+memcpyPiece], src[o:o+memcpyPiece])))
				// The copy cannot be preempted: without a yield the
				// copiers would keep the clock's goroutine off every
				// core.
				runtime.Gosched()
			}
		})
	}
	for range copiers {
		<-ready
	}
	rate, _ := bestSlice(ctx, d, copied.Load)
	stop.Store(true)
	wg.Wait()
	return rate, copiers
}

// mibPerSec is n bytes over d in MiB/s.
func mibPerSec(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / (1 << 20) / d.Seconds()
}

// write prints the machine's rates and the ceilings derived from
// them, as a Markdown table, and which rate the ceilings use.
func (m *machine) write(w io.Writer) {
	when := "before the systems"
	if m.rounds > 1 {
		when = "before and after the systems, the better of each rate"
	}
	fmt.Fprintf(w, "| the machine, measured %s | MiB/s |\n", when)
	fmt.Fprintln(w, "|---|--:|")
	fmt.Fprintf(w, "| loopback TCP, %d sender/receiver pair(s), 1 MiB writes from memory | %s |\n", m.pairs, formatValue(m.loopback))
	fmt.Fprintf(w, "| loopback TCP, the same sending a %d MiB file from the page cache with sendfile | %s |\n", sendfileMiB, formatValue(m.sendfile))
	fmt.Fprintf(w, "| sequential write, %d MiB over %d file(s), page cache (the ceiling's disk), best of %d | %s |\n", m.diskMiB, m.writers, diskRounds, formatValue(m.disk))
	fmt.Fprintf(w, "| sequential write, the same with fsync at the end | %s |\n", formatValue(m.diskFsync))
	fmt.Fprintf(w, "| memory copy, %d copier(s), 64 MiB buffers | %s |\n", m.copiers, formatValue(m.memcpy))
	for _, cm := range []ceilingModel{produceCeiling, consumeCeiling} {
		fmt.Fprintf(w, "| ceiling, %s: %s (independent resources: %s) | %s |\n", cm.name, cm.formula(), formatValue(cm.bound(m)), formatValue(cm.rate(m)))
	}
	fmt.Fprintln(w)
}
