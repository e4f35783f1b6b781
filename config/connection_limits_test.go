package config

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestConnectionKeysValidate: the checks Kafka's KafkaConfig makes on the
// request budget and the per-IP limit, and the overrides' format.
func TestConnectionKeysValidate(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name      string
		overrides []string
		want      string // "" for success
	}{
		{"defaults", nil, ""},
		{"budget below the largest frame", []string{"queued.max.request.bytes=1048576"},
			"config: queued.max.request.bytes: 1048576 must be at least socket.request.max.bytes 104857600 (or -1 for unbounded)"},
		{"budget equal to the largest frame", []string{"queued.max.request.bytes=1048576", "socket.request.max.bytes=1048576"}, ""},
		{"budget unbounded", []string{"queued.max.request.bytes=-1"}, ""},
		{"per-ip zero without overrides", []string{"max.connections.per.ip=0"},
			"config: max.connections.per.ip: can be 0 only if max.connections.per.ip.overrides is set"},
		{"per-ip zero with overrides", []string{"max.connections.per.ip=0", "max.connections.per.ip.overrides=127.0.0.1:10"}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load("", append([]string{"log.dirs=" + filepath.Join(dir, string(rune('a'+i)))}, tt.overrides...))
			if err != nil {
				t.Fatal(err)
			}
			err = b.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("Validate error\n got: %v\nwant: %s", err, tt.want)
			}
		})
	}
	for _, bad := range []string{"host", "host:x", "host:-1", "::1:5", ":5"} {
		if err := ValidateBrokerDynamic("max.connections.per.ip.overrides", bad); err == nil {
			t.Errorf("overrides %q accepted", bad)
		}
	}
	for _, good := range []string{"", "host:1", "127.0.0.1:200, example.com:0", "[::1]:5"} {
		if err := ValidateBrokerDynamic("max.connections.per.ip.overrides", good); err != nil {
			t.Errorf("overrides %q: %v", good, err)
		}
	}
}

// TestConnectionLimitsResolve: a per-broker dynamic value wins over the
// cluster default, which wins over the static value.
func TestConnectionLimitsResolve(t *testing.T) {
	b := Default()
	if err := b.Set("max.connections", "100"); err != nil {
		t.Fatal(err)
	}
	m, perIP, o := b.ConnectionLimits(nil, nil)
	if m != 100 || perIP != 2147483647 || o != "" {
		t.Fatalf("static: %d %d %q", m, perIP, o)
	}
	m, perIP, o = b.ConnectionLimits(
		map[string]string{"max.connections": "7"},
		map[string]string{"max.connections": "9", "max.connections.per.ip": "3", "max.connections.per.ip.overrides": "h:1"})
	if m != 7 || perIP != 3 || o != "h:1" {
		t.Fatalf("dynamic: %d %d %q", m, perIP, o)
	}
}
