package broker

// How many partition replicas this node can hold (issue 14, problem 7).
//
// A partition replica keeps one file open per segment: its .log; the
// indexes and checkpoints are opened only while read or written
// (logstore/segment.go, logstore/indexfile.go). A new replica has one
// segment, so creating N partition replicas on a broker costs it N file
// descriptors (measured: TestPartitionReplicaDescriptors in cmd/sluice, and
// 10,050 open files for 10,000 replicas in bench workload 8). A broker given
// more replicas than its open-file limit allows fails to open their logs
// and then cannot accept connections ("accept4: too many open files"), so
// the active controller refuses to place more than the limit computed here
// (controller/partition_limits.go).
//
// The limit is the smaller of max.broker.partitions (KIP-578's name; not a
// Kafka key, default unlimited) and what the open-file limit leaves after a
// reserve: a quarter of the limit, at least minReservedFiles, for client
// and inter-broker connections, the metadata log, serf and raft, and the
// files opened briefly (index writes, checkpoints, rolled segments). Every
// broker is held to the active controller's figure, as KIP-578 holds every
// broker to one cluster-wide value; a broker with a lower open-file limit
// than the controller's is not protected by it (see the report of issue 14:
// carrying each broker's own figure in its registration is the next step).

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
)

const (
	// descriptorsPerReplica is what a new partition replica keeps open.
	descriptorsPerReplica = 1
	// minReservedFiles is the least part of the open-file limit kept for
	// everything but partition logs; an idle node holds about a dozen.
	minReservedFiles = 64
	// lowCapacityWarning: a node that can hold fewer partition replicas
	// than one CreateTopics may ask for says so at warn level.
	lowCapacityWarning = controller.MaxPartitionsPerRequest
)

// partitionCapacity is the outcome of the start-up computation.
type partitionCapacity struct {
	configured    int    // max.broker.partitions, math.MaxInt32 when unset
	openFileLimit uint64 // 0 when unknown
	reservedFiles uint64
	fromFiles     int // replicas the open-file limit allows; MaxInt32 when unknown
}

// computePartitionCapacity works out the capacity from max.broker.partitions
// and an open-file limit (ok false: unknown, no limit from files).
func computePartitionCapacity(configured int, limit uint64, ok bool) partitionCapacity {
	c := partitionCapacity{configured: configured, fromFiles: math.MaxInt32}
	if !ok || limit == 0 {
		return c
	}
	c.openFileLimit = limit
	c.reservedFiles = max(minReservedFiles, limit/4)
	free := uint64(0)
	if limit > c.reservedFiles {
		free = limit - c.reservedFiles
	}
	// At least one, so that a node at a tiny limit is limited, not unlimited.
	c.fromFiles = int(max(1, min(free/descriptorsPerReplica, math.MaxInt32)))
	return c
}

// limit is the figure the controller enforces, with the reason it gives.
func (c partitionCapacity) limit() controller.BrokerPartitionLimit {
	if c.configured <= c.fromFiles {
		if c.configured == math.MaxInt32 {
			return controller.BrokerPartitionLimit{} // no limit at all
		}
		return controller.BrokerPartitionLimit{Max: c.configured, Reason: fmt.Sprintf("max.broker.partitions=%d", c.configured)}
	}
	configured := "max.broker.partitions is not set"
	if c.configured != math.MaxInt32 {
		configured = fmt.Sprintf("max.broker.partitions=%d", c.configured)
	}
	return controller.BrokerPartitionLimit{Max: c.fromFiles, Reason: fmt.Sprintf(
		"the open-file limit of %d, less %d kept for connections and the node's own files, at %d per partition replica; %s",
		c.openFileLimit, c.reservedFiles, descriptorsPerReplica, configured)}
}

// brokerPartitionLimit reads max.broker.partitions and the open-file limit,
// says at start-up how many partition replicas this node can hold, and
// returns the limit for the controller.
func brokerPartitionLimit(cfg *config.Broker, logger *slog.Logger) controller.BrokerPartitionLimit {
	configured := math.MaxInt32
	if s, ok := cfg.Get("max.broker.partitions"); ok {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			configured = n
		}
	}
	limit, ok := openFileLimit()
	c := computePartitionCapacity(configured, limit, ok)
	l := c.limit()
	capacity := l.Max
	if capacity <= 0 {
		capacity = math.MaxInt32
	}
	level := slog.LevelInfo
	msg := "partition replica capacity"
	if capacity < lowCapacityWarning {
		level = slog.LevelWarn
	}
	logger.Log(context.Background(), level, msg,
		"max_partition_replicas", capacity,
		"open_file_limit", c.openFileLimit,
		"reserved_files", c.reservedFiles,
		"descriptors_per_replica", descriptorsPerReplica,
		"max.broker.partitions", configured,
		"why", capacityWhy(c, capacity))
	return l
}

// capacityWhy is the start-up line's plain statement of the figure.
func capacityWhy(c partitionCapacity, capacity int) string {
	if c.openFileLimit == 0 {
		return "open-file limit unknown; the controller refuses topics that would give a broker more partition replicas than max.broker.partitions"
	}
	s := fmt.Sprintf("this node can hold %d partition replicas: the controller refuses topics and partitions beyond that", capacity)
	if c.fromFiles < c.configured && capacity < lowCapacityWarning {
		s += fmt.Sprintf("; raise the open-file limit (ulimit -n, now %d) to hold more", c.openFileLimit)
	}
	return s
}
