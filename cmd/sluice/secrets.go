package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/sluicedev/sluice/config"
)

// worldReadableSecrets returns the secret keys (passwords, JAAS texts,
// PEM keys) the config file at path holds when every user of the machine
// may read it, nil otherwise: Kafka's operators keep such files at mode
// 600, and a password any local user can read is no secret.
func worldReadableSecrets(path string) []string {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o004 == 0 {
		return nil
	}
	fromFile, err := config.Load(path, nil)
	if err != nil {
		return nil
	}
	return fromFile.SecretKeys()
}

// warnWorldReadableSecrets logs worldReadableSecrets' finding, naming the
// keys but never their values.
func warnWorldReadableSecrets(logger *slog.Logger, path string) {
	if keys := worldReadableSecrets(path); len(keys) > 0 {
		logger.Warn("the config file holds passwords and every user can read it; chmod 600 it",
			"file", path, "keys", strings.Join(keys, ","))
	}
}
