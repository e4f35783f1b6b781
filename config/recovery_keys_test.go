package config

import (
	"errors"
	"strings"
	"testing"
)

// num.recovery.threads.per.data.dir loads from the file (Kafka's default
// 2, at least 1) and is described as Kafka's cluster-wide key, but a
// dynamic update is refused: sluice reads it only when the log dirs open.
func TestRecoveryThreadsKey(t *testing.T) {
	dir := t.TempDir()
	b, err := Load("", []string{"log.dirs=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	if b.NumRecoveryThreadsPerDataDir != 2 {
		t.Fatalf("default: %d, want 2", b.NumRecoveryThreadsPerDataDir)
	}
	if b, err = Load("", []string{"log.dirs=" + dir, "num.recovery.threads.per.data.dir=4"}); err != nil {
		t.Fatalf("4 refused: %v", err)
	}
	if b.NumRecoveryThreadsPerDataDir != 4 {
		t.Fatalf("static: %d, want 4", b.NumRecoveryThreadsPerDataDir)
	}
	if _, err := Load("", []string{"log.dirs=" + dir, "num.recovery.threads.per.data.dir=0"}); err == nil {
		t.Fatal("0 accepted")
	}
	for name, validate := range map[string]func(string, string) error{"broker": ValidateBrokerDynamic, "cluster": ValidateClusterDefault} {
		err := validate("num.recovery.threads.per.data.dir", "4")
		if !errors.Is(err, ErrNotDynamic) || !strings.Contains(err.Error(), "not supported yet") {
			t.Fatalf("%s: dynamic update: %v, want ErrNotDynamic saying not supported yet", name, err)
		}
	}
	k, ok := lookupBrokerKey("num.recovery.threads.per.data.dir")
	if !ok || k.mode != ClusterWide || k.status != Supported {
		t.Fatalf("key: mode %v status %v, want cluster-wide and supported", k.mode, k.status)
	}
}
