package broker

import (
	"math"
	"strings"
	"testing"
)

// TestPartitionCapacity: the open-file limit no longer caps partition
// replicas (the file cache budgets segment files); max.broker.partitions
// does, and the start-up statement says why.
func TestPartitionCapacity(t *testing.T) {
	tests := []struct {
		name       string
		configured int
		files      uint64
		known      bool
		budget     int
		wantMax    int
		wantReason string
		wantWhy    []string
	}{
		{"nothing known or set: no limit", math.MaxInt32, 0, false, 512, 0, "",
			[]string{"not set: no limit", "at most 512 open", "open-file limit unknown"}},
		{"issue 22: 20,000 files no longer cap at 15,000", math.MaxInt32, 20000, true, 10000, 0, "",
			[]string{"does not cap replicas", "at most 10000 open", "leaving 10000 of the open-file limit of 20000"}},
		{"256 files", math.MaxInt32, 256, true, 128, 0, "",
			[]string{"leaving 128 of the open-file limit of 256"}},
		{"configured, files unknown", 50, 0, false, 512, 50, "max.broker.partitions=50",
			[]string{"max.broker.partitions=50: the controller refuses"}},
		{"configured at 256 files", 150, 256, true, 128, 150, "max.broker.partitions=150",
			[]string{"max.broker.partitions=150", "at most 128 open"}},
		{"configured above what files once allowed", 100000, 20000, true, 10000, 100000, "max.broker.partitions=100000", nil},
		{"tiny limit: warns about connections, does not cap", math.MaxInt32, 20, true, 16, 0, "",
			[]string{"only 4 of the open-file limit of 20 are left for connections"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := computePartitionCapacity(tt.configured, tt.files, tt.known, tt.budget)
			l := c.limit()
			if l.Max != tt.wantMax || !strings.Contains(l.Reason, tt.wantReason) {
				t.Fatalf("got %d %q, want %d with %q", l.Max, l.Reason, tt.wantMax, tt.wantReason)
			}
			why := c.why()
			for _, w := range tt.wantWhy {
				if !strings.Contains(why, w) {
					t.Errorf("why %q does not say %q", why, w)
				}
			}
		})
	}
}
