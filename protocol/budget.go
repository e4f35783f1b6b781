package protocol

import (
	"context"
	"sync"
)

// memoryBudget is the broker-wide request memory budget,
// queued.max.request.bytes: the bytes held by every request between the
// moment its frame starts to arrive and the moment it has been answered.
//
// A connection reserves a frame's buffer step by step as the bytes arrive
// (readBody grows the buffer by doubling), so a client that claims 100 MiB
// and trickles holds only what it has sent; once the frame is complete it
// reserves what decoding it may cost (decodecost.go). While the budget is
// exhausted the connection waits and reads nothing more, as Kafka's memory
// pool mutes a channel.
//
// Waiters are served in arrival order. Reserving step by step could
// deadlock: every byte in use could be held by connections each waiting for
// one more step. When that happens (used == blocked) the oldest waiter is
// granted its step anyway, so the budget can be overshot by at most one
// frame's remaining growth: the bound is limit + socket.request.max.bytes.
//
// The zero value and a limit ≤ 0 are unbounded: acquire never waits.
type memoryBudget struct {
	limit int64

	mu      sync.Mutex
	used    int64
	blocked int64 // bytes held by connections now waiting in acquire
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n, held int64
	ready   chan struct{} // closed when granted
	granted bool
}

// acquire reserves n more bytes for a connection that already holds held
// bytes of the budget, waiting while they do not fit; onWait, if not nil,
// is called before it waits. It reports whether it had to wait, and
// returns ctx.Err() if ctx ends first (nothing is then reserved).
func (b *memoryBudget) acquire(ctx context.Context, n, held int64, onWait func()) (waited bool, err error) {
	if b == nil || b.limit <= 0 || n <= 0 {
		return false, nil
	}
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.limit {
		b.used += n
		b.mu.Unlock()
		return false, nil
	}
	w := &budgetWaiter{n: n, held: held, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.blocked += held
	b.grantLocked()
	b.mu.Unlock()

	select {
	case <-w.ready:
		return true, nil
	default:
	}
	if onWait != nil {
		onWait()
	}
	select {
	case <-w.ready:
		return true, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted {
		return true, nil
	}
	for i, x := range b.waiters {
		if x == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.blocked -= held
	b.grantLocked()
	return true, ctx.Err()
}

// release returns n bytes to the budget and wakes the waiters that now fit.
func (b *memoryBudget) release(n int64) {
	if b == nil || b.limit <= 0 || n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grantLocked()
	b.mu.Unlock()
}

// inUse returns the bytes reserved now.
func (b *memoryBudget) inUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// grantLocked grants waiters in order while the head fits, or while every
// byte in use is held by waiting connections (see memoryBudget).
// b.mu must be held.
func (b *memoryBudget) grantLocked() {
	for len(b.waiters) > 0 {
		w := b.waiters[0]
		if b.used+w.n > b.limit && b.used > b.blocked {
			return
		}
		b.waiters = b.waiters[1:]
		b.blocked -= w.held
		b.used += w.n
		w.granted = true
		close(w.ready)
	}
}
