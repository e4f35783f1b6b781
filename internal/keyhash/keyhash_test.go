package keyhash

import "testing"

func TestPartition(t *testing.T) {
	tests := []struct {
		name       string
		key        string
		partitions int32
		want       int32
	}{
		{"empty key", "", 50, 0},
		// "a".hashCode() == 97.
		{"one char", "a", 50, 47},
		// "polygenelubricants".hashCode() == math.MinInt32: Utils.abs gives 0.
		{"min int hash", "polygenelubricants", 50, 0},
		// "BB".hashCode() == 2112, negative hashes are made positive.
		{"two chars", "BB", 50, 12},
		{"no partitions", "x", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Partition(tt.key, tt.partitions); got != tt.want {
				t.Fatalf("Partition(%q, %d) = %d, want %d", tt.key, tt.partitions, got, tt.want)
			}
		})
	}
}
