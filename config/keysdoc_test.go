package config

import (
	"flag"
	"os"
	"testing"
)

var updateKeysDoc = flag.Bool("update", false, "rewrite KEYS.md from the key table")

// TestKeysDocUpToDate checks that KEYS.md is what KeysMarkdown renders from
// the key table; `go generate ./config` (go test -run TestKeysDocUpToDate
// -args -update) rewrites it.
func TestKeysDocUpToDate(t *testing.T) {
	want := KeysMarkdown()
	if *updateKeysDoc {
		if err := os.WriteFile("KEYS.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("KEYS.md")
	if err != nil {
		t.Fatalf("%v: run go generate ./config", err)
	}
	if string(got) != want {
		t.Fatal("config/KEYS.md is stale: run go generate ./config")
	}
}
