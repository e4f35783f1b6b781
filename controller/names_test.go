package controller

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestValidateTopicName(t *testing.T) {
	tests := []struct {
		name  string
		topic string
		ok    bool
	}{
		{"simple", "orders", true},
		{"all legal characters", "a-Z_0.9", true},
		{"max length", strings.Repeat("x", 249), true},
		{"empty", "", false},
		{"dot", ".", false},
		{"dot dot", "..", false},
		{"too long", strings.Repeat("x", 250), false},
		{"space", "a b", false},
		{"slash", "a/b", false},
		{"non-ascii", "café", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateTopicName(tt.topic)
			if tt.ok {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			wantKafkaErr(t, err, kerr.InvalidTopicException)
		})
	}
}

func TestCollidingTopic(t *testing.T) {
	img := emptyImage()
	img.Topics["a_b.c"] = &Topic{Name: "a_b.c"}
	for name, want := range map[string]string{
		"a.b.c": "a_b.c",
		"a_b_c": "a_b.c",
		"a_b.c": "", // same name: TOPIC_ALREADY_EXISTS, not a collision
		"abc":   "",
	} {
		if got := collidingTopic(img, name); got != want {
			t.Errorf("collidingTopic(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestNewUUID(t *testing.T) {
	seen := map[[16]byte]bool{}
	for range 1000 {
		id := newUUID()
		s := uuidString(id)
		if len(s) != 22 || strings.HasPrefix(s, "-") || id == ([16]byte{}) || seen[id] {
			t.Fatalf("bad id %v (%s)", id, s)
		}
		if id[6]>>4 != 4 || id[8]>>6 != 2 {
			t.Fatalf("id %s is not a version-4 UUID", s)
		}
		seen[id] = true
	}
	if len(NewClusterID()) != 22 {
		t.Fatal("cluster id is not 22 characters")
	}
}
