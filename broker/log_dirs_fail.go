package broker

// A log directory failing while the node runs (JBOD, KIP-858): a write,
// flush or checkpoint in it fails with an I/O error (logstore's
// OnStorageError, or a storage error from a periodic job). As Kafka's
// LogDirFailureChannel does, only that directory goes offline: its
// replicas stop being served here (KAFKA_STORAGE_ERROR: hostedReplica
// finds them offline), their logs are closed where they are (files kept
// as they are, never deleted, no clean-shutdown marker), moves into or
// out of it stop, and the other directories keep serving. The node keeps
// running even when every directory has failed (Kafka halts then); its
// replicas are all offline.
//
// The controller learns it from the node's heartbeats
// (controller/log_dirs.go): the failed directories' ids and the replicas
// offline on this node, which leave their ISRs and lose their
// leaderships as when a broker dies, and are not elected while the
// directory is offline. A restart checks the directory again.
//
// If the controller has not acknowledged a directory that failed while
// running within log.dir.failure.timeout.ms (Kafka's
// BrokerLifecycleManager.propagateDirectoryFailure), the node shuts itself
// down, as Kafka's broker does, rather than keep leading replicas the
// cluster still believes it serves: acknowledged means this node's metadata
// image has the directory among the node's offline log dirs, which the
// controller writes on receiving the heartbeat that reports it. Halted
// tells the binary, which exits with an error.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// failDir marks ld offline because of err and wakes the broker's handling.
// It must not block: logstore calls it with a log's append lock held.
func (s *logDirs) failDir(ld *logDir, err error) {
	s.mu.Lock()
	if ld.offline == nil {
		ld.offline = fmt.Errorf("%w: log dir %s failed: %w", logstore.ErrLogOffline, ld.path, err)
		s.logger.Error("log dir failed; it is offline and its replicas with it until the next start", "dir", ld.path, "err", err)
	}
	s.mu.Unlock()
	select {
	case s.failed <- struct{}{}:
	default:
	}
}

// runLogDirFailures takes the directories that failed offline, until ctx
// ends.
func (b *Broker) runLogDirFailures(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.dir.failed:
			b.takeFailedDirsOffline()
		}
	}
}

// takeFailedDirsOffline stops serving the replicas of every directory that
// failed since the last call and closes its logs. It holds reconcileMu, so
// no reconcile is between opening a log of such a directory and adding its
// replica to the partition table: once the Dir is abandoned, no Open in it
// succeeds.
func (b *Broker) takeFailedDirsOffline() {
	b.reconcileMu.Lock()
	defer b.reconcileMu.Unlock()
	s := b.dir
	s.mu.Lock()
	var failed []*logDir
	for _, ld := range s.dirs {
		if ld.offline != nil && !ld.handled && ld.dir != nil {
			ld.handled = true
			failed = append(failed, ld)
		}
	}
	var moves []logstore.TopicPartition
	for tp, m := range s.moves {
		if slices.Contains(failed, m.dest) || slices.Contains(failed, s.where[tp]) {
			moves = append(moves, tp)
		}
	}
	s.mu.Unlock()
	if len(failed) == 0 {
		return
	}
	for _, tp := range moves {
		s.stopMove(tp)
	}
	var gone []*partition
	b.mu.Lock()
	for tp, p := range b.partitions {
		if slices.Contains(failed, s.holder(tp)) {
			delete(b.partitions, tp)
			gone = append(gone, p)
		}
	}
	b.mu.Unlock()
	for _, p := range gone {
		p.stopReplica()
	}
	for _, ld := range failed {
		ld.dir.Abandon()
		b.logger.Error("log dir taken offline", "dir", ld.path, "replicas", len(gone))
		go b.awaitDirFailureAck(ld)
	}
	b.kickReplication()
}

// dirFailureTimeoutKey bounds how long the controller may take to learn of
// a failed log dir.
const dirFailureTimeoutKey = "log.dir.failure.timeout.ms"

// awaitDirFailureAck waits until this node's metadata image has ld among
// its offline log dirs, and shuts the broker down if that takes longer
// than log.dir.failure.timeout.ms.
func (b *Broker) awaitDirFailureAck(ld *logDir) {
	timeout := 30 * time.Second
	if v, ok := b.cfg.Get(dirFailureTimeoutKey); ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		b.appliedMu.Lock()
		applied := b.applied
		b.appliedMu.Unlock()
		if img := b.metadata(); img != nil {
			if nb := img.Brokers[b.cfg.NodeID]; nb != nil && slices.Contains(nb.OfflineLogDirs, ld.id) {
				return
			}
		}
		select {
		case <-applied:
		case <-b.stopped:
			return
		case <-deadline.C:
			if b.closed.Load() {
				return
			}
			b.logger.Error("shutting down because the controller has not acknowledged an offline log dir within log.dir.failure.timeout.ms",
				"dir", ld.path, "timeout", timeout)
			b.dir.haltOnce.Do(func() { close(b.halted) })
			b.Close()
			return
		}
	}
}

// Halted is closed when the broker has shut itself down (a failed log dir
// the controller did not acknowledge in time); Close returns once the
// shutdown has finished.
func (b *Broker) Halted() <-chan struct{} { return b.halted }

// offlineReport is this node's report of its failed directories and the
// replicas offline with them (those in a failed directory and those that
// could not be created while one is offline), limited to the replicas img
// assigns to self, sorted.
func (s *logDirs) offlineReport(img *controller.Image, self int32) controller.OfflineReport {
	var r controller.OfflineReport
	if img == nil {
		return r
	}
	s.mu.Lock()
	var tps []logstore.TopicPartition
	for _, ld := range s.dirs {
		if ld.offline != nil {
			r.Dirs = append(r.Dirs, ld.id)
		}
	}
	for tp, ld := range s.where {
		if ld.offline != nil {
			tps = append(tps, tp)
		}
	}
	for tp := range s.unplaced {
		tps = append(tps, tp)
	}
	s.mu.Unlock()
	for _, tp := range tps {
		t := img.Topics[tp.Topic]
		if mp := topicPartition(t, tp.Partition); mp != nil && slices.Contains(mp.Replicas, self) {
			r.Replicas = append(r.Replicas, controller.ReplicaRef{TopicID: t.ID, Partition: tp.Partition})
		}
	}
	slices.SortFunc(r.Replicas, func(a, b controller.ReplicaRef) int {
		if c := slices.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	r.Replicas = slices.Compact(r.Replicas)
	return r
}

// offlineReplicasTag is the tagged field of a BrokerHeartbeat request that
// holds the sender's offline replicas (JSON), beside OfflineLogDirs. Like
// incarnationTag it is numbered far above any tag Kafka will add.
const offlineReplicasTag = 0x51D0

// setOfflineReport puts r in a heartbeat request.
func setOfflineReport(req *kmsg.BrokerHeartbeatRequest, r controller.OfflineReport) {
	req.OfflineLogDirs = r.Dirs
	if len(r.Replicas) > 0 {
		if b, err := json.Marshal(r.Replicas); err == nil {
			req.UnknownTags.Set(offlineReplicasTag, b)
		}
	}
}

// offlineReportOf reads the report of a heartbeat request. Only brokers
// send it, on the controller channel; a malformed list is ignored.
func offlineReportOf(req *kmsg.BrokerHeartbeatRequest) controller.OfflineReport {
	r := controller.OfflineReport{Dirs: req.OfflineLogDirs}
	req.UnknownTags.Each(func(key uint32, val []byte) {
		if key == offlineReplicasTag {
			var refs []controller.ReplicaRef
			if json.Unmarshal(val, &refs) == nil {
				r.Replicas = refs
			}
		}
	})
	return r
}
