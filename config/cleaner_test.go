package config

import (
	"errors"
	"strings"
	"testing"
)

// The cleaner's keys load, resolve per broker > cluster default > static,
// and are checked as Kafka checks them, at start and on a change.
func TestCleanerSettings(t *testing.T) {
	dir := t.TempDir()
	b, err := Load("", []string{"log.dirs=" + dir, "log.cleaner.threads=2", "log.cleaner.io.max.bytes.per.second=1e6"})
	if err != nil {
		t.Fatal(err)
	}
	s := b.CleanerSettings(nil, nil)
	if s.Threads != 2 || s.DedupeBufferSize != 128<<20 || s.LoadFactor != 0.9 || s.MaxBytesPerSecond != 1e6 ||
		s.BackoffMs != 15000 || s.IOBufferSize != 512<<10 {
		t.Fatalf("static: %+v", s)
	}
	if s.MapBytesPerThread() != 64<<20 || s.WriteBufferPerThread() != 128<<10 {
		t.Fatalf("per thread: map %d, write buffer %d", s.MapBytesPerThread(), s.WriteBufferPerThread())
	}
	s = b.CleanerSettings(map[string]string{"log.cleaner.threads": "3"}, map[string]string{"log.cleaner.threads": "4", "log.cleaner.backoff.ms": "10"})
	if s.Threads != 3 || s.BackoffMs != 10 {
		t.Fatalf("dynamic: %+v", s)
	}
	// A stored level that fails the per-thread check is ignored.
	if s := b.CleanerSettings(nil, map[string]string{"log.cleaner.dedupe.buffer.size": "2000000"}); s.DedupeBufferSize != 128<<20 {
		t.Fatalf("invalid stored default applied: %+v", s)
	}
	if s := (CleanerSettings{Threads: 1, DedupeBufferSize: 8 << 30}); s.MapBytesPerThread() != 1<<31-1 {
		t.Fatalf("map capped at %d", s.MapBytesPerThread())
	}

	cur := CleanerSettings{Threads: 2, DedupeBufferSize: 128 << 20}
	for _, tt := range []struct {
		next CleanerSettings
		want string
	}{
		{CleanerSettings{Threads: 4, DedupeBufferSize: 128 << 20}, ""},
		{CleanerSettings{Threads: 1, DedupeBufferSize: 128 << 20}, ""},
		{CleanerSettings{Threads: 5, DedupeBufferSize: 128 << 20}, "cannot be increased to more than double the current value 2"},
		{CleanerSettings{Threads: 0, DedupeBufferSize: 128 << 20}, "should be at least 1"},
		{CleanerSettings{Threads: 2, DedupeBufferSize: 2 << 20}, "must be at least 1MB per cleaner thread"},
	} {
		err := ValidateCleanerChange(cur, tt.next)
		if (tt.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalidValue))) {
			t.Errorf("ValidateCleanerChange(%+v) = %v, want %q", tt.next, err, tt.want)
		}
	}
	if s := (CleanerSettings{Threads: 8}); ValidateCleanerChange(s, CleanerSettings{Threads: 3, DedupeBufferSize: 128 << 20}) == nil {
		t.Error("8 -> 3 threads accepted: less than half")
	}

	// At start (Validate, as the binary runs it): 1 MiB or less per thread
	// is refused, as Kafka's KafkaConfig does.
	small, err := Load("", []string{"log.dirs=" + dir, "log.cleaner.threads=4", "log.cleaner.dedupe.buffer.size=4194304"})
	if err != nil {
		t.Fatal(err)
	}
	if err := small.Validate(); err == nil || !strings.Contains(err.Error(), "at least 1MB per cleaner thread") {
		t.Fatalf("4 MiB over 4 threads: %v", err)
	}
	if _, err := Load("", []string{"log.dirs=" + dir, "log.cleaner.threads=0"}); err == nil {
		t.Fatal("0 threads accepted")
	}
}
