package broker

import (
	"testing"
	"time"

	"github.com/sluicedev/sluice/logstore"
)

func TestParseISODuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"PT1H", time.Hour, true},
		{"P1DT2H3M4.5S", 26*time.Hour + 3*time.Minute + 4500*time.Millisecond, true},
		{"PT0.001S", time.Millisecond, true},
		{"P2D", 48 * time.Hour, true},
		{"1H", 0, false},
		{"PT-1H", 0, false},
	} {
		got, ok := parseISODuration(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("parseISODuration(%q) = %v %v, want %v %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestTrimShareBatches(t *testing.T) {
	// Three batches of 20 bytes each (12 bytes of offset and length,
	// then Length), offsets 0-4, 5-9 and 10-14.
	headers := []logstore.BatchHeader{
		{BaseOffset: 0, LastOffsetDelta: 4, Length: 8},
		{BaseOffset: 5, LastOffsetDelta: 4, Length: 8},
		{BaseOffset: 10, LastOffsetDelta: 4, Length: 8},
	}
	data := make([]byte, 60)
	for i := range data {
		data[i] = byte(i / 20)
	}
	got := trimShareBatches(data, headers, 6, 9)
	if len(got) != 20 || got[0] != 1 {
		t.Fatalf("trim to 6-9 kept %d bytes from batch %d, want the second batch only", len(got), got[0])
	}
	if got := trimShareBatches(data, headers, 3, 11); len(got) != 60 {
		t.Fatalf("trim to 3-11 kept %d bytes, want all three batches", len(got))
	}
	if got := trimShareBatches(data, headers, 20, 30); len(got) != 0 {
		t.Fatalf("trim past the data kept %d bytes", len(got))
	}
}
