package config

import (
	"strings"
	"testing"
)

func TestGossipEncryptionKey(t *testing.T) {
	k16 := "AAAAAAAAAAAAAAAAAAAAAA=="                     // 16 zero bytes
	k32 := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	for _, tc := range []struct {
		value string
		keys  int
		bad   string
	}{
		{"", 0, ""},
		{k32, 1, ""},
		{k32 + ", " + k16, 2, ""},
		{"not base64!", 0, "not base64"},
		{"c2hvcnQ=", 0, "is 5 bytes"},
	} {
		keys, err := ParseGossipKeys(tc.value)
		switch {
		case tc.bad == "" && (err != nil || len(keys) != tc.keys):
			t.Errorf("%q: %d keys, %v", tc.value, len(keys), err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%q: %v, want an error with %q", tc.value, err, tc.bad)
		}
	}
	// Loading refuses a bad key without echoing it, and describes the key
	// as sensitive (DescribeConfigs answers null).
	if _, err := Load("", []string{"gossip.encryption.key=c2VjcmV0LWJ1dC1zaG9ydCE="}); err == nil || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Errorf("a 17-byte key: %v", err)
	}
	b, err := Load("", []string{"gossip.encryption.key=" + k32})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := b.Get("gossip.encryption.key"); v != k32 {
		t.Errorf("Get = %q", v)
	}
	for _, k := range BrokerKeys() {
		if k.Name == "gossip.encryption.key" && !k.Sensitive {
			t.Error("gossip.encryption.key is not sensitive")
		}
	}
}
