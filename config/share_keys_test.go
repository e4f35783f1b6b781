package config

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestValidateShareGroupKeys: the share-partition defaults must lie within
// their group.share.min/max.* keys, checked at start-up with Kafka's
// ShareGroupConfig messages; each key's own range is Kafka's ConfigDef's.
func TestValidateShareGroupKeys(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct {
		name      string
		overrides []string
		want      string // Validate's error; "" for success
		loadWant  string // Load's error; "" when it loads
	}{
		{"defaults", nil, "", ""},
		{"lock below its min", []string{"group.share.record.lock.duration.ms=14000"},
			"config: group.share.record.lock.duration.ms: group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms", ""},
		{"lock above its max", []string{"group.share.record.lock.duration.ms=70000"},
			"config: group.share.max.record.lock.duration.ms: group.share.max.record.lock.duration.ms must be greater than or equal to group.share.record.lock.duration.ms", ""},
		{"lock with raised max", []string{"group.share.record.lock.duration.ms=70000", "group.share.max.record.lock.duration.ms=70000"}, "", ""},
		{"delivery count above its max", []string{"group.share.delivery.count.limit=8", "group.share.max.delivery.count.limit=6"},
			"config: group.share.max.delivery.count.limit: group.share.max.delivery.count.limit must be greater than or equal to group.share.delivery.count.limit", ""},
		{"delivery count below its min", []string{"group.share.delivery.count.limit=3", "group.share.min.delivery.count.limit=4"},
			"config: group.share.delivery.count.limit: group.share.delivery.count.limit must be greater than or equal to group.share.min.delivery.count.limit", ""},
		{"record locks above their max", []string{"group.share.partition.max.record.locks=5000"},
			"config: group.share.max.partition.max.record.locks: group.share.max.partition.max.record.locks must be greater than or equal to group.share.partition.max.record.locks", ""},
		{"record locks below their min", []string{"group.share.min.partition.max.record.locks=3000"},
			"config: group.share.partition.max.record.locks: group.share.partition.max.record.locks must be greater than or equal to group.share.min.partition.max.record.locks", ""},
		{"share sessions below the group size", []string{"group.share.max.share.sessions=100"},
			"config: group.share.max.share.sessions: group.share.max.share.sessions must be greater than or equal to group.share.max.size", ""},
		{"share sessions with a small group", []string{"group.share.max.share.sessions=1", "group.share.max.size=1"}, "", ""},
		{"no share sessions", []string{"group.share.max.share.sessions=0"}, "", "group.share.max.share.sessions"},
		{"assignment interval bounds cross", []string{"group.share.min.assignment.interval.ms=2000", "group.share.max.assignment.interval.ms=1000"},
			"config: group.share.max.assignment.interval.ms: group.share.max.assignment.interval.ms must be greater than or equal to group.share.min.assignment.interval.ms", ""},
		{"assignment interval below its min", []string{"group.share.min.assignment.interval.ms=2000"},
			"config: group.share.assignment.interval.ms: group.share.assignment.interval.ms must be greater than or equal to group.share.min.assignment.interval.ms", ""},
		{"assignment interval above its max", []string{"group.share.assignment.interval.ms=20000"},
			"config: group.share.assignment.interval.ms: group.share.assignment.interval.ms must be less than or equal to group.share.max.assignment.interval.ms", ""},
		{"assignment interval 0", []string{"group.share.assignment.interval.ms=0"}, "", ""},
		{"delivery count out of range", []string{"group.share.delivery.count.limit=11"}, "", "group.share.delivery.count.limit"},
		{"min lock out of range", []string{"group.share.min.record.lock.duration.ms=999"}, "", "group.share.min.record.lock.duration.ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := Load("", append([]string{"log.dirs=" + filepath.Join(dir, string(rune('a'+i)))}, c.overrides...))
			if c.loadWant != "" {
				if err == nil || !errors.Is(err, ErrInvalidValue) {
					t.Fatalf("Load: %v, want an invalid value of %s", err, c.loadWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			err = b.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case c.want != "" && (err == nil || err.Error() != c.want || !errors.Is(err, ErrInvalidValue)):
				t.Fatalf("Validate: %v\nwant: %s", err, c.want)
			}
		})
	}
}

// TestValidateGroupShareBoundsFromBroker: the share-partition keys a group
// sets are bounded by the broker's group.share.min/max.* values.
func TestValidateGroupShareBoundsFromBroker(t *testing.T) {
	b, err := Load("", []string{"group.share.max.partition.max.record.locks=150", "group.share.min.delivery.count.limit=3", "group.share.min.record.lock.duration.ms=20000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		configs map[string]string
		want    string
	}{
		{map[string]string{"share.partition.max.record.locks": "150"}, ""},
		{map[string]string{"share.partition.max.record.locks": "151"}, "share.partition.max.record.locks must be in the range 100 to 150 inclusive."},
		{map[string]string{"share.delivery.count.limit": "2"}, "share.delivery.count.limit must be in the range 3 to 10 inclusive."},
		{map[string]string{"share.record.lock.duration.ms": "19999"}, "share.record.lock.duration.ms must be in the range 20000 to 60000 inclusive."},
	} {
		err := b.ValidateGroup(c.configs, nil, nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v refused: %v", c.configs, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%v: %v, want %q", c.configs, err, c.want)
		}
	}
}

// TestShareGroupAssignors: group.share.assignors takes exactly one entry,
// Kafka's simple assignor by name or class; a custom assignor class, which
// sluice cannot load, another name, an empty or repeated list are refused
// at start with a message saying why.
func TestShareGroupAssignors(t *testing.T) {
	for i, tt := range []struct {
		name, value, want string
	}{
		{"simple by name", "simple", ""},
		{"simple by class", SimpleAssignorClass, ""},
		{"custom class", "com.example.MyShareAssignor",
			`config: group.share.assignors: "com.example.MyShareAssignor" is not a share group assignor sluice has: only Kafka's simple assignor (simple or ` + SimpleAssignorClass + `) is built in, and sluice cannot load an assignor class (in --override)`},
		{"two entries", "simple," + SimpleAssignorClass, `config: group.share.assignors: group.share.assignors must contain exactly one assignor, but found 2 (in --override)`},
		{"empty", "", `config: group.share.assignors: must not be empty (in --override)`},
		{"duplicate", "simple,simple", `config: group.share.assignors: simple is listed twice (in --override)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load("", []string{"log.dirs=" + filepath.Join(t.TempDir(), string(rune('a'+i))), "group.share.assignors=" + tt.value})
			if err == nil {
				err = b.Validate()
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("error: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalidValue)):
				t.Fatalf("error\n got: %v\nwant: %s", err, tt.want)
			}
		})
	}
}

// TestShareStateCompressionCodecKey: the codec of __share_group_state's
// batches is one of Kafka's compression type ids, 0 to 4; any other is
// refused at start with Kafka's CompressionType.forId message.
func TestShareStateCompressionCodecKey(t *testing.T) {
	for _, v := range []string{"0", "1", "2", "3", "4"} {
		b, err := Load("", []string{"share.coordinator.state.topic.compression.codec=" + v})
		if err != nil {
			t.Fatalf("codec %s: %v", v, err)
		}
		if got := b.ShareCoordinatorStateTopicCompressionCodec; strconv.Itoa(int(got)) != v {
			t.Fatalf("codec %s loaded as %d", v, got)
		}
	}
	for _, v := range []string{"5", "-1"} {
		_, err := Load("", []string{"share.coordinator.state.topic.compression.codec=" + v})
		if want := "config: share.coordinator.state.topic.compression.codec: Unknown compression type id: " + v + " (in --override)"; err == nil || err.Error() != want || !errors.Is(err, ErrInvalidValue) {
			t.Fatalf("codec %s: %v, want %s", v, err, want)
		}
	}
}

// TestShareGroupAssignmentIntervalCapped: a group's assignment interval
// (its own, or the broker's dynamic value) is capped to the broker's
// group.share.min/max.assignment.interval.ms.
func TestShareGroupAssignmentIntervalCapped(t *testing.T) {
	b, err := Load("", []string{"group.share.min.assignment.interval.ms=100", "group.share.max.assignment.interval.ms=5000", "group.share.assignment.interval.ms=300"})
	if err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]time.Duration{"": 300 * time.Millisecond, "0": 100 * time.Millisecond, "2000": 2 * time.Second, "9000": 5 * time.Second} {
		if got := b.ShareGroupAssignmentInterval(value); got != want {
			t.Errorf("interval %q: %v, want %v", value, got, want)
		}
	}
}
