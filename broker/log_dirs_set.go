package broker

// The node's log directories (log.dirs, JBOD as in KIP-858): logDirs holds
// one logstore.Dir per directory and knows which one holds each replica.
//
// At start every directory is opened; one that fails (not creatable, not
// writable, locked by another process, unreadable checkpoints) is offline
// for the life of the process, as Kafka's LogManager takes it offline, and
// the node starts unless all of them fail. Replicas are found in whichever
// directory holds them; a replica present in two directories is an error
// Kafka refuses to start with, sluice logs it and serves the first (the
// other is kept as it is, never deleted). A new replica goes to the online
// directory holding the fewest replicas (Kafka's default placement), the
// earlier one in log.dirs on a tie. While a directory is offline a replica
// that is on no online directory is created only if the metadata says it
// is new on this node (a new partition, or one reassigned here): an older
// one may be in the offline directory, and Kafka's LogManager refuses to
// create it elsewhere for the same reason (KAFKA_STORAGE_ERROR until the
// directory is back).
//
// Each directory has a meta.properties as Kafka's brokers write it
// (version 1, node.id, cluster.id, directory.id); the directory id is kept
// across restarts and reported by DescribeLogDirs' tools.
//
// The cleaner and the periodic jobs (flush, checkpoint, retention, removal
// of deleted segments) run over every online directory; the cleaner picks
// the dirtiest log per directory, taking the directories in turn, where
// Kafka compares all logs of the node.
//
// Lock order: logDirs.mu is a leaf, taken after Broker.mu and, when
// logstore reports a storage error (failDir), after a Log's append lock;
// nothing in logstore is called while it is held.

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/quotas"
)

// metaPropertiesFile is Kafka's per-directory identity file.
const metaPropertiesFile = "meta.properties"

// logDir is one entry of log.dirs.
type logDir struct {
	path string   // absolute
	id   [16]byte // directory.id of meta.properties
	dir  *logstore.Dir
	// offline is why the directory is offline (wrapping
	// logstore.ErrLogOffline), or nil; guarded by logDirs.mu. dir is nil
	// when it failed at start. handled is set once the broker has taken
	// a directory that failed while running offline (log_dirs_fail.go).
	offline error
	handled bool
	// replicas counts the entries of logDirs.where naming this
	// directory, for Open's choice of the least loaded one without a
	// walk over every replica per new log; guarded by logDirs.mu.
	replicas int
}

// logDirs is the set of this node's log directories.
type logDirs struct {
	logger *slog.Logger
	dirs   []*logDir

	mu sync.Mutex
	// where holds the directory of each replica on disk (or being
	// created); future the directory of a replica's future log while it
	// moves (AlterReplicaLogDirs, log_dirs_move.go).
	// where changes only through place and unplace, which keep each
	// directory's replicas count.
	where map[logstore.TopicPartition]*logDir
	moves map[logstore.TopicPartition]*logMove
	// preferred holds the directory AlterReplicaLogDirs named for a
	// replica this node does not hold yet.
	preferred map[logstore.TopicPartition]*logDir
	// moveSem holds a token per move copying (num.replica.alter.log.dirs.
	// threads); moveRate throttles them together (log_dirs_move.go).
	moveSem  chan struct{}
	moveRate *quotas.MoveRate
	// unplaced holds the replicas that could not be created because a
	// directory is offline (they may be in it): offline replicas too.
	unplaced map[logstore.TopicPartition]bool
	// failed wakes the broker's handling of a directory failing while
	// running (log_dirs_fail.go); haltOnce closes Broker.halted once.
	failed   chan struct{}
	haltOnce sync.Once
	// started is set once the node's first image is reconciled: until
	// then the metadata log is being replayed, and a partition it
	// creates is not new to this node (Open).
	started atomic.Bool
	// resume holds the moves a previous process left unfinished (a
	// -future directory in the destination), restarted by resumeMoves.
	resume map[logstore.TopicPartition]*logDir
	// next is the directory the cleaner looks at first in its next pass.
	next int

	noticed chan struct{} // wakes removeDeletedSegments
	stop    chan struct{}
	wg      sync.WaitGroup
}

// openLogDirs opens every directory of paths (the first one holds the
// metadata log and must open). A directory that fails is offline.
func openLogDirs(paths []string, opts logstore.Options, logger *slog.Logger) (*logDirs, error) {
	s := &logDirs{logger: logger, where: make(map[logstore.TopicPartition]*logDir),
		noticed: make(chan struct{}, 1), stop: make(chan struct{}), moveSem: make(chan struct{}, 1),
		moveRate: quotas.NewMoveRate(quotas.DefaultWindow), failed: make(chan struct{}, 1)}
	online := 0
	var errs []error
	for i, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		ld := &logDir{path: abs}
		s.dirs = append(s.dirs, ld)
		s.noteUnfinishedMoves(ld)
		dirOpts := opts
		dirOpts.OnStorageError = func(tp logstore.TopicPartition, err error) { s.failDir(ld, err) }
		d, err := logstore.OpenDir(p, dirOpts)
		if err == nil {
			ld.id, err = readDirectoryID(abs)
			if err != nil {
				d.Close(nil)
			}
		}
		if err != nil {
			errs = append(errs, err)
			if i == 0 || errors.Is(err, logstore.ErrDirLocked) {
				s.closeAll()
				return nil, err
			}
			ld.offline = fmt.Errorf("%w: log dir %s is offline: %w", logstore.ErrLogOffline, abs, err)
			logger.Error("log dir failed at start; it is offline and its replicas with it", "dir", abs, "err", err)
			continue
		}
		ld.dir = d
		online++
		for _, tp := range d.Partitions() {
			if other := s.where[tp]; other != nil {
				logger.Error("a partition is in two log dirs; serving the first, keeping the other as it is",
					"topic", tp.Topic, "partition", tp.Partition, "first", other.path, "second", abs)
				continue
			}
			s.place(tp, ld)
		}
	}
	if online == 0 {
		return nil, errors.Join(errs...)
	}
	for _, ld := range s.dirs {
		if ld.dir == nil {
			continue
		}
		s.wg.Add(1)
		go func(ch <-chan struct{}) {
			defer s.wg.Done()
			for {
				select {
				case <-s.stop:
					return
				case <-ch:
					select {
					case s.noticed <- struct{}{}:
					default:
					}
				}
			}
		}(ld.dir.DeletesNoticed())
	}
	return s, nil
}

// closeAll closes the directories opened so far (a failed start).
func (s *logDirs) closeAll() {
	for _, ld := range s.dirs {
		if ld.dir != nil {
			ld.dir.Close(nil)
		}
	}
}

// readDirectoryID reads directory.id from dir's meta.properties, or makes
// a new random one if there is none yet (writeMeta stores it).
func readDirectoryID(dir string) ([16]byte, error) {
	var id [16]byte
	props, err := readProperties(filepath.Join(dir, metaPropertiesFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return id, err
	}
	if v := props["directory.id"]; v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || len(b) != 16 {
			return id, fmt.Errorf("%s: directory.id %q is not a Uuid", metaPropertiesFile, v)
		}
		copy(id[:], b)
		return id, nil
	}
	for {
		_, _ = rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		// Kafka reserves the ids below 100 (Uuid.RESERVED) and the tools
		// would read a leading '-' as a flag.
		if id[0]>>2 != 62 && !reservedDirectoryID(id) {
			return id, nil
		}
	}
}

func reservedDirectoryID(id [16]byte) bool {
	for _, b := range id[:15] {
		if b != 0 {
			return false
		}
	}
	return id[15] < 100
}

// readProperties reads a Java properties file of key=value lines.
func readProperties(name string) (map[string]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, sc.Err()
}

// writeMeta writes meta.properties in every online directory, as Kafka's
// MetaPropertiesEnsemble writes it (version 1).
func (s *logDirs) writeMeta(clusterID string, nodeID int32, now time.Time) {
	for _, ld := range s.dirs {
		if ld.dir == nil {
			continue
		}
		body := fmt.Sprintf("#\n#%s\nnode.id=%d\ndirectory.id=%s\nversion=1\ncluster.id=%s\n",
			now.UTC().Format("Mon Jan 02 15:04:05 MST 2006"), nodeID, uuidString(ld.id), clusterID)
		name := filepath.Join(ld.path, metaPropertiesFile)
		if old, err := os.ReadFile(name); err == nil && sameMeta(string(old), body) {
			continue
		}
		tmp := name + ".tmp"
		err := os.WriteFile(tmp, []byte(body), 0o644)
		if err == nil {
			err = os.Rename(tmp, name)
		}
		if err != nil {
			s.logger.Warn("cannot write meta.properties", "dir", ld.path, "err", err)
		}
	}
}

// sameMeta compares two meta.properties bodies without their date line.
func sameMeta(a, b string) bool {
	strip := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, "#") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	return strip(a) == strip(b)
}

// uuidString prints a Uuid as Kafka does: URL-safe base64, no padding.
func uuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// online returns the online directories.
func (s *logDirs) online() []*logDir {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*logDir
	for _, ld := range s.dirs {
		if ld.offline == nil && ld.dir != nil {
			out = append(out, ld)
		}
	}
	return out
}

// holder returns the directory holding tp, or nil.
func (s *logDirs) holder(tp logstore.TopicPartition) *logDir {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.where[tp]
}

// anyOffline reports whether a directory is offline.
func (s *logDirs) anyOffline() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ld := range s.dirs {
		if ld.offline != nil {
			return true
		}
	}
	return false
}

// HadCleanShutdown reports whether every online directory was closed
// cleanly by the previous process.
func (s *logDirs) HadCleanShutdown() bool {
	for _, ld := range s.online() {
		if !ld.dir.HadCleanShutdown() {
			return false
		}
	}
	return true
}

// RecoveryStats sums the recovery work of every directory.
func (s *logDirs) RecoveryStats() logstore.RecoveryStats {
	var out logstore.RecoveryStats
	for _, ld := range s.dirs {
		if ld.dir != nil {
			st := ld.dir.RecoveryStats()
			out.SegmentsScanned += st.SegmentsScanned
			out.BytesTruncated += st.BytesTruncated
		}
	}
	return out
}

// Partitions lists the replicas on disk in the online and offline
// directories this process knows of.
func (s *logDirs) Partitions() []logstore.TopicPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]logstore.TopicPartition, 0, len(s.where))
	for tp := range s.where {
		out = append(out, tp)
	}
	return out
}

// Open opens tp's log in the directory holding it, or creates it in the
// online directory with the fewest replicas. isNew says the metadata made
// tp a replica of this node since it started (see the file comment; a
// replay of the metadata log at start adds nothing new).
func (s *logDirs) Open(tp logstore.TopicPartition, topicID [16]byte, cfg logstore.Config, isNew bool) (*logstore.Log, error) {
	s.mu.Lock()
	ld := s.where[tp]
	if pref := s.preferred[tp]; ld == nil && pref != nil && pref.offline == nil && pref.dir != nil {
		ld = pref
		s.place(tp, ld)
	}
	delete(s.preferred, tp)
	if ld == nil {
		var offline []string
		for _, d := range s.dirs {
			if d.offline != nil || d.dir == nil {
				offline = append(offline, d.path)
				continue
			}
			if ld == nil || d.replicas < ld.replicas {
				ld = d
			}
		}
		if ld == nil || ((!isNew || !s.started.Load()) && len(offline) > 0) {
			if s.unplaced == nil {
				s.unplaced = make(map[logstore.TopicPartition]bool)
			}
			s.unplaced[tp] = true
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: cannot create the log of %s because log dirs %s are offline", logstore.ErrLogOffline, tp, strings.Join(offline, ","))
		}
		s.place(tp, ld)
	}
	delete(s.unplaced, tp)
	err := ld.offline
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	l, err := ld.dir.Open(tp, topicID, cfg)
	if err != nil && !errors.Is(err, logstore.ErrLogOffline) {
		if _, serr := os.Stat(filepath.Join(ld.path, tp.String())); serr != nil {
			s.mu.Lock()
			s.unplace(tp, ld)
			s.mu.Unlock()
		}
	}
	return l, err
}

// place records that ld holds tp (or is creating it). The caller holds
// s.mu.
func (s *logDirs) place(tp logstore.TopicPartition, ld *logDir) {
	if old := s.where[tp]; old != nil {
		old.replicas--
	}
	s.where[tp] = ld
	ld.replicas++
}

// unplace forgets that ld holds tp, if it is the directory recorded. The
// caller holds s.mu.
func (s *logDirs) unplace(tp logstore.TopicPartition, ld *logDir) {
	if s.where[tp] == ld {
		delete(s.where, tp)
		ld.replicas--
	}
}

// Offline returns why tp's replica is offline: its log failed to open or
// its directory is offline. nil otherwise.
func (s *logDirs) Offline(tp logstore.TopicPartition) error {
	s.mu.Lock()
	ld := s.where[tp]
	var err error
	if ld != nil {
		err = ld.offline
	}
	s.mu.Unlock()
	if ld == nil || err != nil {
		return err
	}
	return ld.dir.Offline(tp)
}

// Log returns tp's open log, or nil.
func (s *logDirs) Log(tp logstore.TopicPartition) *logstore.Log {
	ld := s.holder(tp)
	if ld == nil || ld.dir == nil {
		return nil
	}
	return ld.dir.Log(tp)
}

// CheckpointedHighWatermark returns tp's checkpointed high watermark.
func (s *logDirs) CheckpointedHighWatermark(tp logstore.TopicPartition) (int64, bool) {
	ld := s.holder(tp)
	if ld == nil || ld.dir == nil {
		return 0, false
	}
	return ld.dir.CheckpointedHighWatermark(tp)
}

// Remove deletes tp's log from the directory holding it. A replica in an
// offline directory is not touched (its ErrLogOffline error).
func (s *logDirs) Remove(tp logstore.TopicPartition) error {
	s.stopMove(tp)
	s.mu.Lock()
	ld := s.where[tp]
	if ld != nil && ld.offline != nil {
		err := ld.offline
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	if ld == nil {
		s.mu.Lock()
		delete(s.unplaced, tp)
		s.mu.Unlock()
		return nil
	}
	err := ld.dir.Remove(tp)
	if err == nil {
		s.mu.Lock()
		s.unplace(tp, ld)
		s.mu.Unlock()
	}
	return err
}

// each runs f on every online directory and joins the errors. A storage
// error takes the directory offline (log_dirs_fail.go).
func (s *logDirs) each(f func(*logstore.Dir) error) error {
	var errs []error
	for _, ld := range s.online() {
		if err := f(ld.dir); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ld.path, err))
			if errors.Is(err, logstore.ErrKafkaStorage) {
				s.failDir(ld, err)
			}
		}
	}
	return errors.Join(errs...)
}

// FlushDue runs logstore.Dir.FlushDue on every online directory.
func (s *logDirs) FlushDue(now time.Time) error {
	return s.each(func(d *logstore.Dir) error { return d.FlushDue(now) })
}

// Checkpoint writes every online directory's checkpoints.
func (s *logDirs) Checkpoint(hws map[logstore.TopicPartition]int64) error {
	return s.each(func(d *logstore.Dir) error { return d.Checkpoint(hws) })
}

// Maintain runs retention in every online directory.
func (s *logDirs) Maintain(now time.Time, hw func(logstore.TopicPartition) int64) error {
	return s.each(func(d *logstore.Dir) error { return d.Maintain(now, hw) })
}

// RemoveDueDeletes removes due *.deleted files in every online directory;
// next is the earliest next due time (zero: none pending).
func (s *logDirs) RemoveDueDeletes(now time.Time) (next time.Time, err error) {
	err = s.each(func(d *logstore.Dir) error {
		n, err := d.RemoveDueDeletes(now)
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
		return err
	})
	return next, err
}

// DeletesNoticed is signalled when any directory notes a deletion.
func (s *logDirs) DeletesNoticed() <-chan struct{} { return s.noticed }

// ChooseLogToClean returns the first directory's cleaning candidate.
func (s *logDirs) ChooseLogToClean(now time.Time, bound func(logstore.TopicPartition) int64) (logstore.CleanCandidate, bool, error) {
	for _, ld := range s.online() {
		c, ok, err := ld.dir.ChooseLogToClean(now, bound)
		if ok || err != nil {
			return c, ok, err
		}
	}
	return logstore.CleanCandidate{}, false, nil
}

// FinishCleaning ends the cleaning of tp in its directory.
func (s *logDirs) FinishCleaning(tp logstore.TopicPartition, passErr error) {
	if ld := s.holder(tp); ld != nil && ld.dir != nil {
		ld.dir.FinishCleaning(tp, passErr)
	}
}

// CleanNext runs one cleaning pass in the first directory, from the one
// after the last pass's, that has a log to clean.
func (s *logDirs) CleanNext(c *logstore.Cleaner, now time.Time, bound func(logstore.TopicPartition) int64, opts logstore.CleanOptions) (logstore.CleanResult, error) {
	dirs := s.online()
	if len(dirs) == 0 {
		return logstore.CleanResult{}, nil
	}
	s.mu.Lock()
	start := s.next
	s.mu.Unlock()
	for i := range dirs {
		ld := dirs[(start+i)%len(dirs)]
		r, err := ld.dir.CleanNext(c, now, bound, opts)
		if r.Chosen || err != nil {
			s.mu.Lock()
			s.next = (start + i + 1) % len(dirs)
			s.mu.Unlock()
			return r, err
		}
	}
	return logstore.CleanResult{}, nil
}

// Uncleanable merges every directory's uncleanable logs.
func (s *logDirs) Uncleanable() map[logstore.TopicPartition]error {
	out := map[logstore.TopicPartition]error{}
	for _, ld := range s.online() {
		for tp, err := range ld.dir.Uncleanable() {
			out[tp] = err
		}
	}
	return out
}

// Close closes every online directory cleanly.
func (s *logDirs) Close(hws map[logstore.TopicPartition]int64) error {
	close(s.stop)
	s.wg.Wait()
	var errs []error
	for _, ld := range s.dirs {
		if ld.dir == nil {
			continue
		}
		s.mu.Lock()
		off := ld.offline
		s.mu.Unlock()
		if off != nil {
			// A directory that failed while running: its files are
			// left as they are, no clean-shutdown marker.
			ld.dir.Abandon()
			continue
		}
		if err := ld.dir.Close(hws); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Abandon releases every directory as a killed process would.
func (s *logDirs) Abandon() {
	close(s.stop)
	s.wg.Wait()
	for _, ld := range s.dirs {
		if ld.dir != nil {
			ld.dir.Abandon()
		}
	}
}

// newReplica reports whether partition p of t became a replica of node
// self after prev (nil: the node's first image, where nothing is new).
func newReplica(prev *controller.Image, t *controller.Topic, p int32, self int32) bool {
	if prev == nil {
		return false
	}
	old := prev.Topics[t.Name]
	if old == nil || old.ID != t.ID || int(p) >= len(old.Partitions) {
		return true
	}
	return !slices.Contains(old.Partitions[p].Replicas, self)
}

// dirOffline returns why ld is offline, or nil.
func (s *logDirs) dirOffline(ld *logDir) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ld.offline
}

// dirReplica is a replica's log in a directory, current or future.
type dirReplica struct {
	tp           logstore.TopicPartition
	size, logEnd int64
	future       bool
}

// replicasIn lists the open logs held in ld, future ones included.
func (s *logDirs) replicasIn(ld *logDir) []dirReplica {
	s.mu.Lock()
	var tps []logstore.TopicPartition
	for tp, d := range s.where {
		if d == ld {
			tps = append(tps, tp)
		}
	}
	futures := s.futuresInLocked(ld)
	s.mu.Unlock()
	var out []dirReplica
	for _, tp := range tps {
		if l := ld.dir.Log(tp); l != nil {
			out = append(out, dirReplica{tp: tp, size: l.Size(), logEnd: l.LogEndOffset()})
		}
	}
	return append(out, futures...)
}
