package broker

// Moving a replica between this node's log directories
// (AlterReplicaLogDirs, 34_alter_replica_log_dirs.go): Kafka's
// ReplicaAlterLogDirsThread as logstore.Dir.MoveLog does it. A move copies
// the log into a future directory of the destination while the replica
// keeps serving (leader or follower), then swaps it in under the log's
// append lock, so no acknowledged write is lost and the *logstore.Log the
// partition holds stays the same. At most num.replica.alter.log.dirs.threads
// moves copy at once per node (default: one per log dir, as Kafka's
// ReplicaAlterLogDirsManager has one thread per log dir; the others wait
// their turn, their future replica shown with size 0), and they copy
// together at most replica.alter.log.dirs.io.max.bytes.per.second, measured
// over alter.log.dirs.replication.quota.window.num samples of
// alter.log.dirs.replication.quota.window.size.seconds (quotas.MoveRate;
// the key is dynamic, per broker or cluster-wide, as
// kafka-reassign-partitions.sh --replica-alter-log-dirs-throttle sets it).
// A new destination for a replica stops its move and starts another. A move interrupted by a restart starts again
// from the beginning at the next start, as Kafka resumes it: the partial
// -future directory tells where the replica was going (logstore removes
// the partial copy, resumeMoves copies afresh).

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/quotas"
)

// Keys of the moves between log dirs.
const (
	moveThreadsKey       = "num.replica.alter.log.dirs.threads"
	moveThrottleKey      = "replica.alter.log.dirs.io.max.bytes.per.second"
	moveWindowNumKey     = "alter.log.dirs.replication.quota.window.num"
	moveWindowSecondsKey = "alter.log.dirs.replication.quota.window.size.seconds"
)

// configureMoves sizes the moves' semaphore and throttle window from cfg
// (static keys; called once, before any move starts).
func (s *logDirs) configureMoves(cfg *config.Broker) {
	intKey := func(key string, def int) int {
		if v, ok := cfg.Get(key); ok && v != "" {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return n
			}
		}
		return def
	}
	s.moveSem = make(chan struct{}, intKey(moveThreadsKey, len(s.dirs)))
	s.moveRate = quotas.NewMoveRate(quotas.WindowConfig{
		Samples: intKey(moveWindowNumKey, 11),
		Window:  time.Duration(intKey(moveWindowSecondsKey, 1)) * time.Second,
	})
}

// updateMoveThrottle sets the moves' byte rate from img (this node's
// dynamic value, the cluster's, the static one, else none).
func (b *Broker) updateMoveThrottle(img *controller.Image) {
	b.dir.moveRate.SetLimit(b.throttleRate(img, moveThrottleKey))
}

// logMove is one replica's move in progress.
type logMove struct {
	dest   *logDir
	stop   chan struct{}
	done   chan struct{}
	bytes  atomic.Int64
	offset atomic.Int64
	log    *logstore.Log
	once   sync.Once
}

// cancel stops the move (once).
func (m *logMove) cancel() { m.once.Do(func() { close(m.stop) }) }

// dirByPath returns the log directory whose absolute path is path, or nil.
func (s *logDirs) dirByPath(path string) *logDir {
	if !filepath.IsAbs(path) {
		return nil
	}
	path = filepath.Clean(path)
	for _, ld := range s.dirs {
		if ld.path == path {
			return ld
		}
	}
	return nil
}

// futuresInLocked lists the future logs held in ld. Lock should be held
// (logDirs.mu).
func (s *logDirs) futuresInLocked(ld *logDir) []dirReplica {
	var out []dirReplica
	for tp, m := range s.moves {
		if m.dest == ld {
			out = append(out, dirReplica{tp: tp, size: m.bytes.Load(), logEnd: m.offset.Load(), future: true})
		}
	}
	return out
}

// setPreferred records the directory a replica not created yet is to be
// created in (Kafka's LogManager.maybeUpdatePreferredLogDir).
func (s *logDirs) setPreferred(tp logstore.TopicPartition, ld *logDir) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.preferred == nil {
		s.preferred = make(map[logstore.TopicPartition]*logDir)
	}
	s.preferred[tp] = ld
}

// startMove moves tp's log to dest in the background, unless it is there
// or already moving there; a move of tp elsewhere is stopped first.
func (s *logDirs) startMove(tp logstore.TopicPartition, dest *logDir) error {
	s.mu.Lock()
	src := s.where[tp]
	m := s.moves[tp]
	if m != nil && m.dest == dest {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	if m != nil {
		m.cancel()
		<-m.done
	}
	if src == nil || src.dir == nil {
		return logstore.ErrLogClosed
	}
	if src == dest {
		return nil
	}
	l := src.dir.Log(tp)
	if l == nil {
		return logstore.ErrLogClosed
	}
	m = &logMove{dest: dest, stop: make(chan struct{}), done: make(chan struct{}), log: l}
	s.mu.Lock()
	select {
	case <-s.stop:
		s.mu.Unlock()
		return logstore.ErrLogClosed
	default:
	}
	if s.moves == nil {
		s.moves = make(map[logstore.TopicPartition]*logMove)
	}
	s.moves[tp] = m
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer close(m.done)
		err := s.runMove(tp, src, m)
		s.mu.Lock()
		if s.moves[tp] == m {
			delete(s.moves, tp)
		}
		if err == nil && s.where[tp] == src {
			s.place(tp, dest)
		}
		s.mu.Unlock()
		switch {
		case err == nil:
			s.logger.Info("replica moved to another log dir", "topic", tp.Topic, "partition", tp.Partition, "from", src.path, "to", dest.path)
		case errors.Is(err, logstore.ErrMoveStopped):
		default:
			s.logger.Error("moving a replica between log dirs failed; it stays where it was", "topic", tp.Topic,
				"partition", tp.Partition, "from", src.path, "to", dest.path, "err", err)
		}
	}()
	return nil
}

// runMove runs one move once no other is running.
func (s *logDirs) runMove(tp logstore.TopicPartition, src *logDir, m *logMove) error {
	stop := make(chan struct{})
	go func() {
		select {
		case <-m.stop:
		case <-s.stop:
		case <-m.done:
			return
		}
		close(stop)
	}()
	select {
	case s.moveSem <- struct{}{}:
	case <-stop:
		return logstore.ErrMoveStopped
	}
	defer func() { <-s.moveSem }()
	if err := s.dirOffline(m.dest); err != nil {
		return err
	}
	return src.dir.MoveLogPaced(tp, m.dest.dir, stop, func(bytes, offset int64) {
		m.bytes.Store(bytes)
		m.offset.Store(offset)
	}, s.moveRate)
}

// stopMove stops tp's move, if any, and waits for it.
func (s *logDirs) stopMove(tp logstore.TopicPartition) {
	s.mu.Lock()
	m := s.moves[tp]
	s.mu.Unlock()
	if m != nil {
		m.cancel()
		<-m.done
	}
}

// noteUnfinishedMoves records the -future directories in ld, moves to ld a
// previous process did not finish. Called before ld is opened (which
// removes them).
func (s *logDirs) noteUnfinishedMoves(ld *logDir) {
	entries, err := os.ReadDir(ld.path)
	if err != nil {
		return
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), "-future")
		if !e.IsDir() || !ok {
			continue
		}
		i := strings.LastIndexByte(name, '.')
		if i <= 0 {
			continue
		}
		name = name[:i]
		j := strings.LastIndexByte(name, '-')
		p, err := strconv.ParseInt(name[j+1:], 10, 32)
		if j <= 0 || err != nil || p < 0 {
			continue
		}
		if s.resume == nil {
			s.resume = make(map[logstore.TopicPartition]*logDir)
		}
		s.resume[logstore.TopicPartition{Topic: name[:j], Partition: int32(p)}] = ld
	}
}

// resumeMoves starts again the moves a previous process left unfinished,
// of the replicas this node holds in another online directory.
func (s *logDirs) resumeMoves() {
	s.mu.Lock()
	resume := s.resume
	s.resume = nil
	s.mu.Unlock()
	for tp, ld := range resume {
		src := s.holder(tp)
		if src == nil || src == ld || s.dirOffline(ld) != nil || s.anyOffline() {
			continue
		}
		if err := s.startMove(tp, ld); err != nil {
			s.logger.Warn("cannot resume moving a replica between log dirs", "topic", tp.Topic, "partition", tp.Partition, "to", ld.path, "err", err)
			continue
		}
		s.logger.Info("resuming a replica's move between log dirs", "topic", tp.Topic, "partition", tp.Partition, "to", ld.path)
	}
}
