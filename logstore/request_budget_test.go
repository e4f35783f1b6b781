package logstore

import (
	"errors"
	"strings"
	"testing"
)

// TestRequestDecompressBudget: the appends of one request are charged
// what their compressed batches decompress to, uncompressed batches cost
// nothing, the request's cap is never below a batch's own cap (a lone
// batch under the per-batch cap always passes), and a batch past what is
// left is ErrMessageTooLarge with nothing appended.
func TestRequestDecompressBudget(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	request := &RequestDecompressBudget{limit: 1 << 20}

	plain := hostileBatch(t, 0, 10, recs(10))
	if _, err := l.AppendAsLeaderWithin(plain, 0, request); err != nil {
		t.Fatalf("uncompressed append: %v", err)
	}
	if request.used != 0 {
		t.Errorf("an uncompressed batch was charged %d bytes", request.used)
	}

	zeros := ZerosRecord(40 << 20)
	big := hostileBatch(t, 4, 1, zeros)
	if _, err := l.AppendAsLeaderWithin(big, 0, request); err != nil {
		t.Fatalf("a lone 40 MiB batch under the per-batch cap, request cap 1 MiB: %v", err)
	}
	if request.used != int64(len(zeros)) {
		t.Errorf("charged %d bytes, want the %d the batch decompressed to", request.used, len(zeros))
	}

	end := l.LogEndOffset()
	_, err := l.AppendAsLeaderWithin(hostileBatch(t, 4, 1, ZerosRecord(40<<20)), 0, request)
	if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(err.Error(), "Produce request") {
		t.Fatalf("a second 40 MiB batch past the request's cap (64 MiB, the per-batch cap): %v, want ErrMessageTooLarge for the request", err)
	}
	if l.LogEndOffset() != end {
		t.Errorf("log end offset %d after a refused append, want %d", l.LogEndOffset(), end)
	}
	if _, err := l.AppendAsLeaderWithin(hostileBatch(t, 0, 10, recs(10)), 0, request); err != nil {
		t.Errorf("uncompressed append after the budget ran out: %v", err)
	}
	if _, err := l.AppendAsLeader(hostileBatch(t, 4, 1, ZerosRecord(40<<20)), 0); err != nil {
		t.Errorf("the same batch outside any request budget: %v", err)
	}
}
