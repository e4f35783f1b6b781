package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// applyFunc applies one decoded-on-demand command to the image under
// construction. It returns a non-nil error to reject the command as a whole;
// a rejection must depend only on the image and the payload, never on time,
// randomness or local state, so that every node rejects the same commands.
type applyFunc func(b *imageBuilder, index uint64, payload []byte) error

// applyTable maps every command type ever written to its apply function.
// A type missing here panics in Apply: skipping a command this binary does
// not understand would silently make this node's image diverge.
var applyTable = map[commandType]applyFunc{
	cmdInitCluster:         applyInitCluster,
	cmdRegisterBroker:      applyRegisterBroker,
	cmdCreateTopics:        applyCreateTopics,
	cmdDeleteTopics:        applyDeleteTopics,
	cmdCreatePartitions:    applyCreatePartitions,
	cmdAlterConfigs:        applyAlterConfigs,
	cmdAllocateProducerIDs: applyAllocateProducerIDs,
	cmdFenceBroker:         applyFenceBroker,
	cmdUnfenceBroker:       applyUnfenceBroker,
	cmdChangePartitions:    applyChangePartitions,
	cmdReassignPartitions:  applyReassignPartitions,
	cmdAlterClientQuotas:   applyAlterClientQuotas,
	cmdAlterScram:          applyAlterScram,
	cmdCreateACLs:          applyCreateACLs,
	cmdDeleteACLs:          applyDeleteACLs,
	cmdUpdateFeatures:      applyUpdateFeatures,
	cmdUnregisterBroker:    applyUnregisterBroker,
	cmdReplicasOffline:     applyReplicasOffline, // log_dirs.go
}

// fsm is the metadata state machine driven by raft. raft calls Apply,
// Snapshot and Restore from one goroutine, never concurrently; readers load
// the current image at any time through an atomic pointer.
type fsm struct {
	image   atomic.Pointer[Image]
	onApply func(*Image)
	// elections counts the leader elections this node applied while it
	// led raft (metrics_state.go).
	elections electionCounts

	// mu guards changed, which is closed and replaced whenever a new image
	// is published so waitFor can block without polling.
	mu      sync.Mutex
	changed chan struct{}
}

func newFSM(onApply func(*Image)) *fsm {
	f := &fsm{onApply: onApply, changed: make(chan struct{})}
	f.image.Store(emptyImage())
	return f
}

// current returns the latest published image.
func (f *fsm) current() *Image { return f.image.Load() }

// publish makes img the current image, tells OnApply, and wakes waiters.
// OnApply runs before waiters wake so a caller of Controller.apply that
// returns has seen its OnApply complete.
func (f *fsm) publish(img *Image) {
	f.image.Store(img)
	if f.onApply != nil {
		f.onApply(img)
	}
	f.mu.Lock()
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// waitFor blocks until pred holds for the current image or ctx ends.
func (f *fsm) waitFor(ctx context.Context, pred func(*Image) bool) error {
	for {
		f.mu.Lock()
		ch := f.changed
		f.mu.Unlock()
		if pred(f.current()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Apply implements raft.FSM. It returns nil or the error that rejected the
// command; either way the index advances and a new image is published.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	return f.applyEntry(l.Index, l.Data)
}

// applyEntry applies one encoded command at index. It is Apply without raft,
// which is how the tests drive the state machine.
func (f *fsm) applyEntry(index uint64, data []byte) error {
	if len(data) == 0 {
		panic(fmt.Sprintf("controller: empty metadata log entry at index %d", index))
	}
	typ := commandType(data[0])
	apply, ok := applyTable[typ]
	if !ok {
		panic(fmt.Sprintf("controller: unknown metadata command type %d at index %d", typ, index))
	}
	b := newImageBuilder(f.current())
	err := apply(b, index, data[1:])
	next := b.next
	if err != nil {
		// Discard the half-built image but still record the index, so the
		// image always says how far the log has been applied.
		cp := *f.current()
		next = &cp
	}
	next.Index = index
	// What changed against the image this one was built from: nothing
	// when the command was rejected.
	next.changed, next.changedFrom, next.hasDelta = nil, f.current().Index, true
	if err == nil {
		slices.Sort(b.changed)
		next.changed = slices.Compact(b.changed)
		f.elections.note(b)
	}
	f.publish(next)
	return err
}

// decodePayload decodes a command payload or panics: a committed entry that
// does not decode means this binary cannot follow the log, and guessing
// would make replicas diverge.
func decodePayload(typ commandType, index uint64, payload []byte, v any) {
	if err := json.Unmarshal(payload, v); err != nil {
		panic(fmt.Sprintf("controller: decode %v at index %d: %v", typ, index, err))
	}
}

// Snapshot implements raft.FSM. Images are immutable, so capturing the
// pointer is the whole snapshot; encoding happens in Persist, off raft's
// apply goroutine.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{image: f.current()}, nil
}

// Restore implements raft.FSM, replacing the image with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var s imageSnapshot
	if err := json.NewDecoder(rc).Decode(&s); err != nil {
		return fmt.Errorf("controller: decode metadata snapshot: %w", err)
	}
	if s.Version != imageSnapshotVersion {
		return fmt.Errorf("controller: metadata snapshot version %d, want %d", s.Version, imageSnapshotVersion)
	}
	img, err := s.image()
	if err != nil {
		return err
	}
	f.publish(img)
	return nil
}

type fsmSnapshot struct{ image *Image }

// Persist writes the image as one JSON document.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(snapshotOf(s.image)); err != nil {
		sink.Cancel()
		return fmt.Errorf("controller: persist metadata snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
