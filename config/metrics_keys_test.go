package config

import (
	"errors"
	"strings"
	"testing"
)

// TestMetricsListenerValue: metrics.listener is off by default, takes
// host:port, and a bad value stops the start with a message naming the key.
func TestMetricsListenerValue(t *testing.T) {
	b, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.MetricsListener != "" {
		t.Fatalf("metrics.listener defaults to %q, want off (empty)", b.MetricsListener)
	}
	for _, ok := range []string{"127.0.0.1:9404", ":9404", "[::1]:0", "localhost:65535"} {
		b, err := Load("", []string{"metrics.listener=" + ok})
		if err != nil || b.MetricsListener != ok {
			t.Errorf("metrics.listener=%s: %v (field %q)", ok, err, b.MetricsListener)
		}
	}
	for _, bad := range []string{"9404", "127.0.0.1", "127.0.0.1:http", "127.0.0.1:70000", "http://127.0.0.1:9404"} {
		_, err := Load("", []string{"metrics.listener=" + bad})
		if err == nil || !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "metrics.listener") {
			t.Errorf("metrics.listener=%s: got %v, want an invalid-value error naming the key", bad, err)
			continue
		}
		t.Logf("metrics.listener=%s: %v", bad, err)
	}
}
