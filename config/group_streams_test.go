package config

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestStreamsGroupBrokerKeys loads and validates the group.streams.* keys
// of streams group assignment as a node does at start: Kafka's names of
// the sticky assignor are accepted, anything else is refused with a
// message saying why.
func TestStreamsGroupBrokerKeys(t *testing.T) {
	tests := []struct {
		name      string
		overrides []string
		want      string // the exact error text; "" for success
	}{
		{"defaults", nil, ""},
		{"sticky by name", []string{"group.streams.assignors=sticky"}, ""},
		{"sticky by class", []string{"group.streams.assignors=" + StickyTaskAssignorClass}, ""},
		{"custom assignor class", []string{"group.streams.assignors=com.example.MyAssignor"},
			`config: group.streams.assignors: "com.example.MyAssignor" is not a task assignor sluice has: only Kafka's sticky assignor (sticky or ` + StickyTaskAssignorClass + `) is built in, and sluice cannot load an assignor class (in --override)`},
		{"unknown name", []string{"group.streams.assignors=sticky,balanced"},
			`config: group.streams.assignors: "balanced" is not a task assignor sluice has: only Kafka's sticky assignor (sticky or ` + StickyTaskAssignorClass + `) is built in, and sluice cannot load an assignor class (in --override)`},
		{"empty", []string{"group.streams.assignors="}, `config: group.streams.assignors: must not be empty (in --override)`},
		{"duplicate", []string{"group.streams.assignors=sticky,sticky"}, `config: group.streams.assignors: sticky is listed twice (in --override)`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load("", append([]string{"log.dirs=" + filepath.Join(t.TempDir(), string(rune('a'+i)))}, tt.overrides...))
			if err == nil {
				err = b.Validate()
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error\n got: %v\nwant: %s", err, tt.want)
			}
			if !errors.Is(err, ErrInvalidValue) {
				t.Errorf("error does not wrap ErrInvalidValue")
			}
		})
	}
}
