package broker

// How many partition replicas this node can hold (issue 14, problem 7;
// issue 22).
//
// Issue 14 capped a node at what its open-file limit allowed, a quarter
// kept in reserve, because every partition replica then held its segment's
// .log open: a node given more replicas than descriptors failed to open
// their logs and then could not accept a connection ("accept4: too many
// open files"). Since the file-descriptor budget (9054592,
// logstore/filecache.go) that is no longer so, and the open-file limit no
// longer caps replicas:
//
//   - a segment's .log is opened through the process's logstore FileCache,
//     which keeps at most its budget of them open (half the soft
//     RLIMIT_NOFILE; every Dir this broker opens uses it, none is given
//     another) and closes the least recently used idle ones; a read,
//     append or sendfile reopens the file by its path;
//   - the .index, .timeindex and .txnindex files, the checkpoints, the
//     leader-epoch checkpoint, partition.metadata and producer snapshots
//     are opened only while read or written, and no directory handle is
//     kept (logstore/doc.go, indexfile.go, fs.go).
//
// So a replica at rest holds no descriptor, and the segment files of all
// replicas together hold at most the budget, whatever their number: the
// other half of the limit stays for connections, the metadata log, raft,
// serf and the files opened for a moment. Measured at an open-file limit
// of 256 (a budget of 128; go test ./cmd/sluice -run
// 'TestPartitionFlood|TestPartitionReplicaDescriptors' -v): a node given
// 2,000 partition replicas with a record each holds 142 descriptors (12
// before them), 128 of them segment files; one given 3 × 400 partitions in
// one CreateTopics creates them all, goes on accepting connections, takes
// a record on every partition and serves each back, and holds 148 (158 at
// most, sampled every 20 ms). The budget can be passed only by files in
// use at once (reads, appends and sendfiles in flight, each acquiring the
// descriptor for its call: they grow with requests, not with partitions)
// and by segments renamed *.deleted, whose descriptors stay pinned until
// they are removed file.delete.delay.ms later (logstore/segment.go,
// delete_schedule.go): if retention, DeleteRecords, truncation or the
// cleaner drops segments of more partitions than the budget within one
// file.delete.delay.ms (a minute by default), those descriptors add up,
// and that is the one way partition count can still press on the
// open-file limit.
//
// What still caps replicas is max.broker.partitions (KIP-578's name; not a
// Kafka key, default unlimited): the active controller refuses, with
// POLICY_VIOLATION, topics and partitions that would give a broker more
// (controller/partition_limits.go). Every broker is held to the active
// controller's figure, as KIP-578 holds every broker to one cluster-wide
// value. The start-up line "partition replica capacity" gives the figure,
// the open-file limit, the file cache's budget and why.

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// minReservedFiles is the least part of the open-file limit the file
// cache's budget should leave for everything but segment files (an idle
// node holds about a dozen); a node left less says so at warn level.
const minReservedFiles = 64

// partitionCapacity is the outcome of the start-up computation.
type partitionCapacity struct {
	configured    int    // max.broker.partitions, math.MaxInt32 when unset
	openFileLimit uint64 // 0 when unknown
	fileBudget    int    // segment files the file cache keeps open at most
}

// computePartitionCapacity works out the capacity from max.broker.partitions,
// the open-file limit (ok false: unknown) and the file cache's budget.
func computePartitionCapacity(configured int, limit uint64, ok bool, fileBudget int) partitionCapacity {
	c := partitionCapacity{configured: configured, fileBudget: fileBudget}
	if ok {
		c.openFileLimit = limit
	}
	return c
}

// reservedFiles is what the open-file limit leaves beside the file cache's
// budget (0 when the limit is unknown).
func (c partitionCapacity) reservedFiles() uint64 {
	if c.openFileLimit <= uint64(c.fileBudget) {
		return 0
	}
	return c.openFileLimit - uint64(c.fileBudget)
}

// limit is the figure the controller enforces, with the reason it gives.
func (c partitionCapacity) limit() controller.BrokerPartitionLimit {
	if c.configured == math.MaxInt32 {
		return controller.BrokerPartitionLimit{} // no limit at all
	}
	return controller.BrokerPartitionLimit{Max: c.configured, Reason: fmt.Sprintf("max.broker.partitions=%d", c.configured)}
}

// brokerPartitionLimit reads max.broker.partitions, the open-file limit and
// the file cache's budget, says at start-up how many partition replicas
// this node can hold and why, and returns the limit for the controller.
func brokerPartitionLimit(cfg *config.Broker, logger *slog.Logger) controller.BrokerPartitionLimit {
	configured := math.MaxInt32
	if s, ok := cfg.Get("max.broker.partitions"); ok {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			configured = n
		}
	}
	limit, ok := openFileLimit()
	c := computePartitionCapacity(configured, limit, ok, logstore.DefaultFileCache().Stats().Budget)
	level := slog.LevelInfo
	if c.openFileLimit != 0 && c.reservedFiles() < minReservedFiles {
		level = slog.LevelWarn
	}
	logger.Log(context.Background(), level, "partition replica capacity",
		"max_partition_replicas", c.configured,
		"open_file_limit", c.openFileLimit,
		"file_cache_budget", c.fileBudget,
		"reserved_files", c.reservedFiles(),
		"max.broker.partitions", c.configured,
		"why", c.why())
	return c.limit()
}

// why is the start-up line's plain statement of the figure.
func (c partitionCapacity) why() string {
	s := "max.broker.partitions is not set: no limit on partition replicas"
	if c.configured != math.MaxInt32 {
		s = fmt.Sprintf("max.broker.partitions=%d: the controller refuses topics and partitions beyond it", c.configured)
	}
	s += fmt.Sprintf("; the open-file limit does not cap replicas: segment files are opened through a file cache keeping at most %d open, "+
		"indexes and checkpoints only while read or written", c.fileBudget)
	switch {
	case c.openFileLimit == 0:
		s += " (open-file limit unknown)"
	case c.reservedFiles() < minReservedFiles:
		s += fmt.Sprintf("; only %d of the open-file limit of %d are left for connections: raise it (ulimit -n)", c.reservedFiles(), c.openFileLimit)
	default:
		s += fmt.Sprintf(", leaving %d of the open-file limit of %d for connections and the node's own files", c.reservedFiles(), c.openFileLimit)
	}
	return s
}
