package broker

import (
	"math"
	"strings"
	"testing"
)

func TestPartitionCapacity(t *testing.T) {
	tests := []struct {
		name       string
		configured int
		files      uint64
		known      bool
		wantMax    int
		wantReason string
	}{
		{"nothing known or set: no limit", math.MaxInt32, 0, false, 0, ""},
		{"configured, files unknown", 50, 0, false, 50, "max.broker.partitions=50"},
		{"issue 14: 20,000 files", math.MaxInt32, 20000, true, 15000, "open-file limit of 20000, less 5000"},
		{"256 files keep 64", math.MaxInt32, 256, true, 192, "open-file limit of 256, less 64"},
		{"tiny limit still limits", math.MaxInt32, 10, true, 1, "open-file limit of 10"},
		{"configured below files", 1000, 20000, true, 1000, "max.broker.partitions=1000"},
		{"files below configured", 100000, 20000, true, 15000, "max.broker.partitions=100000"},
		{"huge limit: no limit", math.MaxInt32, 1 << 40, true, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := computePartitionCapacity(tt.configured, tt.files, tt.known).limit()
			if l.Max != tt.wantMax || !strings.Contains(l.Reason, tt.wantReason) {
				t.Fatalf("got %d %q, want %d with %q", l.Max, l.Reason, tt.wantMax, tt.wantReason)
			}
		})
	}
}
