package broker

// The Fetch long poll's wait (01_fetch.go). A fetch that found less than
// MinBytes waits until one of its partitions changes: for a consumer, its
// high watermark (or leadership, log start, ISR) moves; for a follower, the
// leader appends. A follower's fetch names every partition it follows from
// this leader — thousands on a broker with many partitions — so the wait
// must not cost a select case per partition (reflect.Select, as it was):
// each request registers one fetchWaiter with every partition it read, each
// partition's wake-up signals the waiters registered with it, and the
// request waits on the waiter's single channel.
//
// Registering happens right after the read, while the partition is hot in
// the CPU caches. Removing the registrations when the wait ends would touch
// every partition again 500 ms later, cold — that pass alone was a tenth of
// an idle broker's CPU with 10,000 partitions — so a finished waiter is only
// marked done, and a partition drops its done waiters whenever it is
// touched anyway: at the next registration or wake-up. A partition holds a
// done waiter or two per fetching client meanwhile.
//
// A change between a partition's read and the registration is not missed:
// the read took the partition's wake-up channel (watchFetch) before
// reading, and registering compares it with the partition's current one;
// if the partition was woken since, the waiter is signalled at once.
//
// Lock order: partition.mu only; signalling never blocks.

import (
	"context"
	"sync/atomic"
	"time"
)

// partitionWatch is what a fetch saw of one partition it read: the
// partition and its wake-up channel at the time.
type partitionWatch struct {
	p *partition
	// appended selects what the fetch waits for: any append (a follower's
	// fetch, which waits for data beyond its log end offset, above the
	// high watermark) or a high watermark move (a consumer's).
	appended bool
	ch       <-chan struct{}
}

// fetchWaiter is one waiting fetch request.
type fetchWaiter struct {
	ch   chan struct{} // capacity 1
	done atomic.Bool   // the wait is over; partitions may drop it
}

func (w *fetchWaiter) signal() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// signalWaiters signals every waiter still waiting and returns the list
// without the done ones.
func signalWaiters(ws []*fetchWaiter) []*fetchWaiter {
	for _, w := range ws {
		w.signal()
	}
	return dropDone(ws)
}

// dropDone removes the waiters whose wait is over, in place.
func dropDone(ws []*fetchWaiter) []*fetchWaiter {
	kept := ws[:0]
	for _, w := range ws {
		if !w.done.Load() {
			kept = append(kept, w)
		}
	}
	clear(ws[len(kept):])
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// watchFetch takes the partition's wake-up channel for a fetch by
// replicaID (-1 for a consumer), before it reads: the append channel for
// a follower, the high watermark's otherwise.
func (p *partition) watchFetch(replicaID int32) *partitionWatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if replicaID >= 0 {
		return &partitionWatch{p: p, appended: true, ch: p.appended}
	}
	return &partitionWatch{p: p, ch: p.waiters}
}

// addFetchWaiter registers w for the partition change pw waits for. It
// reports false, registering nothing, if that change already happened
// since pw was taken.
func (p *partition) addFetchWaiter(w *fetchWaiter, pw *partitionWatch) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pw.appended {
		if p.appended != pw.ch {
			return false
		}
		p.appendWaiters = append(dropDone(p.appendWaiters), w)
		return true
	}
	if p.waiters != pw.ch {
		return false
	}
	p.hwWaiters = append(dropDone(p.hwWaiters), w)
	return true
}

// waitFetch blocks until one of the watched partitions changes or session
// (a fetch session's own waiter, fetch_session_idle.go; may be nil) is
// signalled (true), or the deadline passes or ctx ends (false).
func waitFetch(ctx context.Context, deadline <-chan time.Time, watches []*partitionWatch, session <-chan struct{}) bool {
	w := &fetchWaiter{ch: make(chan struct{}, 1)}
	defer w.done.Store(true)
	for _, pw := range watches {
		if !pw.p.addFetchWaiter(w, pw) {
			return true
		}
	}
	select {
	case <-w.ch:
		return true
	case <-session:
		return true
	case <-deadline:
	case <-ctx.Done():
	}
	return false
}
