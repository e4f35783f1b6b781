package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// This file resolves the log cleaner's cluster-wide dynamic keys and checks
// a change of them the way Kafka's LogCleaner and KafkaConfig do.

// CleanerSettings are the log cleaner's settings in force on this broker.
type CleanerSettings struct {
	Threads           int32   // log.cleaner.threads
	BackoffMs         int64   // log.cleaner.backoff.ms
	DedupeBufferSize  int64   // log.cleaner.dedupe.buffer.size, across all threads
	IOBufferSize      int32   // log.cleaner.io.buffer.size, across all threads
	LoadFactor        float64 // log.cleaner.io.buffer.load.factor
	MaxBytesPerSecond float64 // log.cleaner.io.max.bytes.per.second, all threads together
}

// maxCleanerMapBytes is the largest key map one thread gets: Kafka's
// SkimpyOffsetMap takes an int-sized buffer, so it caps each thread's
// share of log.cleaner.dedupe.buffer.size at Int.MaxValue.
const maxCleanerMapBytes = math.MaxInt32

// MapBytesPerThread is each thread's key map memory: the total divided by
// the threads, capped as Kafka caps it.
func (s CleanerSettings) MapBytesPerThread() int64 {
	if s.Threads < 1 {
		return 0
	}
	return min(s.DedupeBufferSize/int64(s.Threads), maxCleanerMapBytes)
}

// WriteBufferPerThread is each thread's write buffer: Kafka gives a
// thread log.cleaner.io.buffer.size / threads / 2 for each of its read and
// write buffers.
func (s CleanerSettings) WriteBufferPerThread() int {
	if s.Threads < 1 {
		return 0
	}
	return int(s.IOBufferSize / s.Threads / 2)
}

func (b *Broker) cleanerSettingsStatic() CleanerSettings {
	return CleanerSettings{Threads: b.LogCleanerThreads, BackoffMs: b.LogCleanerBackoffMs,
		DedupeBufferSize: b.LogCleanerDedupeBufferSize, IOBufferSize: b.LogCleanerIOBufferSize,
		LoadFactor: b.LogCleanerIOBufferLoadFactor, MaxBytesPerSecond: b.LogCleanerIOMaxBytesPerSecond}
}

// check is Kafka's KafkaConfig requirement on the cleaner's memory:
// more than 1 MiB of key map per thread.
func (s CleanerSettings) check() error {
	if s.Threads < 1 {
		return &KeyError{Key: "log.cleaner.threads", Detail: "Log cleaner threads should be at least 1", Kind: ErrInvalidValue}
	}
	if s.DedupeBufferSize/int64(s.Threads) <= 1<<20 {
		return &KeyError{Key: "log.cleaner.dedupe.buffer.size", Detail: "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.", Kind: ErrInvalidValue}
	}
	return nil
}

// cleanerKeys are the keys CleanerSettings resolves.
var cleanerKeys = []string{"log.cleaner.threads", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size",
	"log.cleaner.io.buffer.size", "log.cleaner.io.buffer.load.factor", "log.cleaner.io.max.bytes.per.second"}

// IsCleanerKey reports whether key is one of the cleaner's dynamic keys.
func IsCleanerKey(key string) bool {
	for _, k := range cleanerKeys {
		if k == key {
			return true
		}
	}
	return false
}

// CleanerSettings returns the cleaner's settings in force given the
// dynamic broker configs stored in metadata for this broker and for the
// cluster: the per-broker value, else the cluster default, else the
// static one. A level whose values fail a check (metadata written by
// another version) is ignored for the next in line.
func (b *Broker) CleanerSettings(perBroker, clusterDefault map[string]string) CleanerSettings {
	s := b.cleanerSettingsStatic()
	for _, m := range []map[string]string{clusterDefault, perBroker} {
		if next := overlayCleaner(s, m); next.check() == nil {
			s = next
		}
	}
	return s
}

// CleanerSettingsAfter is CleanerSettings for a proposed change: every
// level applies unchecked, so ValidateCleanerChange sees the values asked
// for.
func (b *Broker) CleanerSettingsAfter(perBroker, clusterDefault map[string]string) CleanerSettings {
	return overlayCleaner(overlayCleaner(b.cleanerSettingsStatic(), clusterDefault), perBroker)
}

// overlayCleaner sets in s the cleaner keys m holds that parse and pass
// their key's own check.
func overlayCleaner(s CleanerSettings, m map[string]string) CleanerSettings {
	for _, key := range cleanerKeys {
		v, ok := m[key]
		if !ok {
			continue
		}
		if _, err := checkBrokerValue(key, v); err != nil {
			continue
		}
		v = strings.TrimSpace(v)
		switch key {
		case "log.cleaner.threads":
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				s.Threads = int32(n)
			}
		case "log.cleaner.backoff.ms":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				s.BackoffMs = n
			}
		case "log.cleaner.dedupe.buffer.size":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				s.DedupeBufferSize = n
			}
		case "log.cleaner.io.buffer.size":
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				s.IOBufferSize = int32(n)
			}
		case "log.cleaner.io.buffer.load.factor":
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				s.LoadFactor = f
			}
		case "log.cleaner.io.max.bytes.per.second":
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				s.MaxBytesPerSecond = f
			}
		}
	}
	return s
}

// ValidateCleanerChange checks a change of the cleaner's settings from cur
// (in force) to next as Kafka's LogCleaner.validateReconfiguration and
// KafkaConfig do: at least one thread, at most double and at least half
// the current count, and more than 1 MiB of key map per thread. Kafka
// answers a failed check with INVALID_REQUEST and this message.
func ValidateCleanerChange(cur, next CleanerSettings) error {
	if next.Threads < 1 {
		return &KeyError{Key: "log.cleaner.threads", Detail: "Log cleaner threads should be at least 1", Kind: ErrInvalidValue}
	}
	if next.Threads < cur.Threads/2 {
		return &KeyError{Key: "log.cleaner.threads", Detail: fmt.Sprintf("Log cleaner threads cannot be reduced to less than half the current value %d", cur.Threads), Kind: ErrInvalidValue}
	}
	if next.Threads > cur.Threads*2 {
		return &KeyError{Key: "log.cleaner.threads", Detail: fmt.Sprintf("Log cleaner threads cannot be increased to more than double the current value %d", cur.Threads), Kind: ErrInvalidValue}
	}
	return next.check()
}
