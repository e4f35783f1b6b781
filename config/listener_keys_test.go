package config

import (
	"errors"
	"testing"
)

// TestConnectionCreationRates: max.connection.creation.rate resolves
// per broker, cluster default, static; the listener-prefixed key wins
// for its listener and falls back to the broker-wide value.
func TestConnectionCreationRates(t *testing.T) {
	b := Default()
	if br, lr := b.ConnectionCreationRates("PLAINTEXT", nil, nil); br != 2147483647 || lr != 2147483647 {
		t.Fatalf("defaults: %d %d", br, lr)
	}
	if err := b.Set("max.connection.creation.rate", "0"); err != nil {
		t.Fatalf("a static 0: %v", err)
	}
	if err := b.Set("max.connection.creation.rate", "100"); err != nil {
		t.Fatal(err)
	}
	if br, lr := b.ConnectionCreationRates("PLAINTEXT", nil, nil); br != 100 || lr != 100 {
		t.Fatalf("static: %d %d", br, lr)
	}
	if err := b.Set("listener.name.plaintext.max.connection.creation.rate", "30"); err != nil {
		t.Fatal(err)
	}
	if br, lr := b.ConnectionCreationRates("PLAINTEXT", nil, nil); br != 100 || lr != 30 {
		t.Fatalf("static listener: %d %d", br, lr)
	}
	if br, lr := b.ConnectionCreationRates("OTHER", nil, nil); br != 100 || lr != 100 {
		t.Fatalf("other listener: %d %d", br, lr)
	}
	br, lr := b.ConnectionCreationRates("PLAINTEXT",
		map[string]string{"max.connection.creation.rate": "7"},
		map[string]string{"max.connection.creation.rate": "9", "listener.name.plaintext.max.connection.creation.rate": "3"})
	if br != 7 || lr != 3 {
		t.Fatalf("dynamic: %d %d", br, lr)
	}
}

// TestListenerKeyValidation: a listener-prefixed key is checked as its
// unprefixed key, is cluster-wide dynamic like it, and only the keys
// Kafka lets a listener override are known.
func TestListenerKeyValidation(t *testing.T) {
	for _, tt := range []struct {
		key, value string
		want       error
	}{
		{"listener.name.plaintext.max.connection.creation.rate", "10", nil},
		{"listener.name.plaintext.max.connection.creation.rate", "-1", ErrInvalidValue},
		{"listener.name.plaintext.max.connection.creation.rate", "x", ErrInvalidValue},
		{"listener.name..max.connection.creation.rate", "10", ErrUnknownKey},
		{"listener.name.plaintext.no.such.key", "10", ErrUnknownKey},
		{"max.connection.creation.rate", "-1", ErrInvalidValue},
		{"max.connection.creation.rate", "1", nil},
		// Kafka refuses a dynamic 0 (ListenerConnectionQuota's
		// validateReconfiguration); a static 0 loads.
		{"max.connection.creation.rate", "0", ErrInvalidValue},
		{"listener.name.plaintext.max.connection.creation.rate", "0", ErrInvalidValue},
	} {
		for name, validate := range map[string]func(string, string) error{"broker": ValidateBrokerDynamic, "cluster": ValidateClusterDefault} {
			err := validate(tt.key, tt.value)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("%s %s=%s: %v, want %v", name, tt.key, tt.value, err, tt.want)
			}
		}
	}
}

// TestDescribeListenerKeys: a listener-prefixed key that is set is
// described with its source and its synonyms; one not set is not listed.
func TestDescribeListenerKeys(t *testing.T) {
	b := Default()
	if err := b.Set("listener.name.plaintext.max.connection.creation.rate", "30"); err != nil {
		t.Fatal(err)
	}
	find := func(es []Entry, name string) *Entry {
		for i := range es {
			if es[i].Name == name {
				return &es[i]
			}
		}
		return nil
	}
	es := b.DescribeBroker(map[string]string{"listener.name.plaintext.max.connection.creation.rate": "7"}, nil)
	e := find(es, "listener.name.plaintext.max.connection.creation.rate")
	if e == nil || e.Value == nil || *e.Value != "7" || e.Source != SourceDynamicBroker || len(e.Synonyms) != 2 ||
		e.Synonyms[1].Source != SourceStaticBroker || *e.Synonyms[1].Value != "30" || e.Type != TypeInt || e.ReadOnly {
		t.Fatalf("described %+v", e)
	}
	if find(Default().DescribeBroker(nil, nil), "listener.name.plaintext.max.connection.creation.rate") != nil {
		t.Fatal("an unset listener key is described")
	}
}
