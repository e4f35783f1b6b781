package config

import (
	"errors"
	"testing"
)

// The share-partition group keys (share.record.lock.duration.ms,
// share.delivery.count.limit, share.partition.max.record.locks,
// share.auto.offset.reset, share.isolation.level) can be set on a group,
// within Kafka's default broker bounds.
func TestValidateGroupSharePartitionKeys(t *testing.T) {
	b, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		configs map[string]string
		want    string
	}{
		{"lock duration", map[string]string{"share.record.lock.duration.ms": "15000"}, ""},
		{"lock duration below min", map[string]string{"share.record.lock.duration.ms": "14999"}, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"lock duration above max", map[string]string{"share.record.lock.duration.ms": "60001"}, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"delivery count limit", map[string]string{"share.delivery.count.limit": "10"}, ""},
		{"delivery count limit above max", map[string]string{"share.delivery.count.limit": "11"}, "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{"record locks", map[string]string{"share.partition.max.record.locks": "100"}, ""},
		{"record locks above max", map[string]string{"share.partition.max.record.locks": "4001"}, "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
		{"earliest", map[string]string{"share.auto.offset.reset": "earliest"}, ""},
		{"by duration", map[string]string{"share.auto.offset.reset": "by_duration:PT1H"}, ""},
		{"read committed", map[string]string{"share.isolation.level": "read_committed"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := b.ValidateGroup(c.configs, nil, nil)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || err.Error() != c.want || !errors.Is(err, ErrInvalidGroupConfig)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
