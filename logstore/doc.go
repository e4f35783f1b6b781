// Package logstore keeps a partition's log on disk in Apache Kafka's
// on-disk format, so Kafka's own tools (kafka-dump-log.sh) read sluice's
// files and the other way round.
//
// # Layout
//
//	<log dir>/
//	  .lock                              flock held while a Dir is open
//	  .kafka_cleanshutdown               present only after Dir.Close
//	  meta.properties                    node.id, cluster.id, directory.id
//	                                     (written by the broker, as Kafka)
//	  recovery-point-offset-checkpoint   offsets below which data was fsynced
//	  replication-offset-checkpoint      high watermarks
//	  log-start-offset-checkpoint        log start offsets (DeleteRecords)
//	  cleaner-offset-checkpoint          first dirty offsets (cleaner_checkpoint.go)
//	  __cluster_metadata-0/              the controller's; ignored here
//	  orders-3/                          one directory per partition
//	    00000000000000000000.log         record batches
//	    00000000000000000000.index       sparse offset index
//	    00000000000000000000.timeindex   time index
//	    00000000000000000000.txnindex    aborted transactions (only if any)
//	    00000000000000004711.log         next segment, named by its base offset
//	    00000000000000004711.snapshot    producer state as of offset 4711
//	    ...
//	    leader-epoch-checkpoint
//	    partition.metadata
//	  orders-4.<32 hex>-delete/          a partition being removed
//	  orders-5.<32 hex>-future/          a partition being copied in from
//	                                     another log dir (dirs_move.go)
//
// Files of deleted segments are renamed *.deleted and removed
// file.delete.delay.ms later (or at the next open). A cleaning pass writes
// its new segment as *.cleaned files and renames them *.swap before
// replacing the old segments; the next open deletes *.cleaned files and
// completes a swap (cleaner_swap.go, cleaner_recovery.go).
//
// # Record batch (magic v2), as stored in .log files
//
// Big-endian. Stored byte for byte as the producer sent it, except that the
// leader sets baseOffset and partitionLeaderEpoch (neither is covered by
// the CRC) and, for LogAppendTime topics, the timestamp-type bit of
// attributes and maxTimestamp (then the CRC is recomputed). A topic whose
// compression.type names a codec rewrites, on the leader, every batch that
// arrives in another codec (recompress.go): same records, producer fields
// and timestamps, the topic's codec, a new length and CRC.
//
//	 0                   8          12                   16  17         21
//	+-------------------+----------+--------------------+---+----------+
//	| baseOffset int64  | length   | partitionLeader-   |mag| crc      |
//	|                   | int32    | Epoch int32        | 2 | uint32   |
//	+-------------------+----------+--------------------+---+----------+
//	 21      23                27                 35                 43
//	+-------+-----------------+------------------+------------------+
//	| attrs | lastOffsetDelta | baseTimestamp    | maxTimestamp     |
//	| int16 | int32           | int64            | int64            |
//	+-------+-----------------+------------------+------------------+
//	 43                 51      53              57           61
//	+------------------+-------+---------------+------------+-------...
//	| producerId int64 | epoch | baseSequence  | recordCount| records
//	|                  | int16 | int32         | int32      | (maybe compressed)
//	+------------------+-------+---------------+------------+-------...
//
//	length = bytes after the length field (total size - 12)
//	crc    = CRC-32C (Castagnoli) of bytes 21..end
//	attrs  = bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
//	         bit 3 timestamp type (1 = LogAppendTime), bit 4 transactional,
//	         bit 5 control batch, bit 6 delete horizon set (KIP-534: set
//	         by the cleaner, baseTimestamp is then the horizon)
//
// # Offset index (.index)
//
// Sparse: one entry when more than index.interval.bytes were appended since
// the previous one. The offset is the last offset of the batch starting at
// the position. Entries are appended; the file is never preallocated.
// Lookups read a copy of the entries in memory, and the file is written
// when the segment is flushed, rolled, truncated or closed (see Durability).
//
//	+----------------------------+-------------------------+
//	| relativeOffset int32       | position int32          |  x N
//	| (lastOffset - baseOffset)  | (byte offset in .log)   |
//	+----------------------------+-------------------------+
//
// # Time index (.timeindex)
//
// An entry whenever an offset-index entry is written and the segment's max
// timestamp has grown since the last time-index entry, plus a final entry
// when the segment is rolled or closed.
//
//	+---------------------------+-----------------------------+
//	| timestamp int64           | relativeOffset int32        |  x N
//	| (max timestamp so far)    | (last offset of the batch   |
//	|                           |  that reached it)           |
//	+---------------------------+-----------------------------+
//
// # Aborted transaction index (.txnindex)
//
// One entry per transaction aborted by a marker in the segment, in marker
// order (a segment written by the cleaner always has the file, possibly
// empty, holding the aborted transactions whose data it still has),
// appended by the broker when it applies an ABORT marker
// (Log.AppendAbortedTxn), truncated with the log, deleted with the
// segment, and after a crash rebuilt by the broker replaying the markers of
// the recovered segments. AbortedTxns answers read_committed fetches.
//
//	+---------------+------------------+-------------------+
//	| version int16 | producerId int64 | firstOffset int64 |
//	| (0)           |                  |                   |
//	+---------------+------------------+-------------------+  x N
//	| lastOffset int64 (the marker)  | lastStableOffset int64 |
//	+--------------------------------+------------------------+
//
// # Producer snapshots (.snapshot)
//
// Opaque to logstore: bytes the broker's producer state (package txn)
// encodes in Kafka's snapshot format, named by the offset they describe.
// See snapshot.go for when they are written and deleted.
//
// # Text files
//
//	offset checkpoints      leader-epoch-checkpoint   partition.metadata
//	0                       0                         version: 0
//	<count>                 <count>                   topic_id: <22 chars>
//	<topic> <part> <offset> <epoch> <startOffset>
//	...                     ...
//
// The topic id is URL-safe base64 without padding, as Kafka prints a Uuid;
// partition.metadata has no trailing newline, as Kafka writes it. Every
// text file is written to <name>.tmp, fsynced and renamed over <name>.
//
// # Durability
//
// Appends write to the OS page cache and do not fsync, as in Kafka:
// acknowledged data survives a crash of the process, and replication
// covers the loss of a machine. Log.Flush and Dir.Checkpoint fsync and
// advance the recovery point; a topic's flush.messages fsyncs after that
// many records have been appended since the last flush, and flush.ms
// through Dir.FlushDue, which the broker calls periodically. After a crash (no clean-shutdown marker),
// Dir.Open reads every batch from the segment holding the recovery point
// on, checks it, cuts the log at the first torn or corrupt batch and
// rebuilds the indexes and the leader-epoch cache.
//
// A log that fails to open for any other reason (an I/O error, "too many
// open files", a file that cannot be read) is offline until the next
// OpenDir: Dir.Open returns ErrLogOffline for it without touching its
// files again, Dir.Remove refuses it, and a Dir with an offline log that
// was never recovered writes no clean-shutdown marker. Data that could not
// be read is never deleted or recreated empty; Kafka takes the log dir
// offline for the same reason.
//
// A broker may open several Dirs (Kafka's JBOD): Options.OnStorageError
// tells it when a write in one fails, so it can take that directory
// offline, and Dir.MoveLog moves an open log to another Dir while it
// serves, by copying its files into a -future directory and swapping them
// in under the append lock (dirs_move.go).
//
// Retention (retention.go) trims by age and size only logs whose
// cleanup.policy includes delete (Config.CleanupDelete); DeleteRecords
// moves the log start offset of every log.
//
// A segment needs one file open, its .log, and only while it is used: the
// .log files are opened through a FileCache (filecache.go) that keeps at
// most its budget of them open across the Dirs sharing it (by default half
// the process's RLIMIT_NOFILE), closing the least recently used idle ones
// and reopening them transparently by path when read or written again. A
// descriptor in use (a read, an append, a sendfile) is never closed under
// its user, and a segment renamed for deletion keeps its descriptor until
// it is closed. A reopen short of descriptors fails the one operation
// (KAFKA_STORAGE_ERROR) without making the log read-only or calling
// OnStorageError; a reopen that finds the file gone or replaced is a
// storage error like any other, and nothing is ever recreated. Its .index
// and .timeindex entries are kept in memory as they are added and written to the files,
// through a descriptor opened for the write, when the segment is rolled or
// truncated, and written and fsynced when it is flushed (before the
// recovery point passes it) and at Close (before the clean-shutdown marker
// is written). So the index files of every segment a restart trusts are
// complete, and the entries a crash loses belong to segments that recovery
// rebuilds. A .txnindex entry is written when it is added and fsynced at
// the next flush. Checkpoint, leader-epoch, partition.metadata and producer
// snapshot files are opened only while they are read or written.
//
// # Concurrency
//
// A Log serializes writers and lets readers run alongside them; see the
// lock order at the top of log.go. Reads resolve to a (file, position,
// size) range before copying, so a sendfile path can be added without
// changing the locking.
//
// # Validation
//
// A leader's append checks every record of every batch before anything
// is written (validate.go, Kafka's LogValidator for magic v2), with
// streaming, capped decompression (decompress.go). Followers and recovery
// check headers and CRCs only, as Kafka's do, so every read that decodes
// records (records.go) treats header counts as claims, never as sizes.
//
// # Compaction
//
// Cleaner.Clean (cleaner.go) runs one pass of Kafka's log compaction over
// a log; Dir.CleanLog runs it from the cleaner-offset-checkpoint and
// advances it; Dir.ChooseLogToClean and Dir.CleanOnce (cleaner_manager.go)
// pick the dirtiest compacted log by min.cleanable.dirty.ratio and the
// compaction lags, for the broker's cleaner goroutine. Offsets never
// change: a cleaned log has gaps, and a read from an offset in a gap
// returns the next batch.
//
// # Not implemented yet
//
// Parallel recovery of partitions and segment.jitter.ms.
package logstore
