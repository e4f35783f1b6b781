package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWorldReadableSecrets: a config file holding a password is reported
// when every user may read it, and not at mode 600 or without a password.
func TestWorldReadableSecrets(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	secret := "\"ssl.keystore.password\" = \"hush\"\n\"listener.name.sasl_ssl.plain.sasl.jaas.config\" = \"x\"\n"
	for _, tt := range []struct {
		name, text string
		mode       os.FileMode
		want       []string
	}{
		{"open.toml", secret, 0o644, []string{"listener.name.sasl_ssl.plain.sasl.jaas.config", "ssl.keystore.password"}},
		{"closed.toml", secret, 0o600, nil},
		{"group.toml", secret, 0o640, nil},
		{"plain.toml", "num.partitions = 3\n", 0o644, nil},
	} {
		if got := worldReadableSecrets(write(tt.name, tt.text, tt.mode)); !slices.Equal(got, tt.want) {
			t.Errorf("%s (%o): %v, want %v", tt.name, tt.mode, got, tt.want)
		}
	}
	if got := worldReadableSecrets(""); got != nil {
		t.Errorf("no file: %v", got)
	}
}
