package config

// gossip.encryption.key: the shared key that encrypts and authenticates
// serf's membership gossip (sluice's own key, as gossip.listener is).

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// ParseGossipKeys reads gossip.encryption.key: base64 keys of 16, 24 or 32
// bytes (AES-128, -192 or -256), comma separated. The first encrypts what
// this node sends; every one decrypts what it receives, so a key is
// rotated by rolling restarts: add the new key second, then make it first,
// then drop the old one. Empty means gossip in plaintext.
func ParseGossipKeys(v string) ([][]byte, error) {
	var keys [][]byte
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("a key is not base64 (make one with: openssl rand -base64 32)")
		}
		switch len(k) {
		case 16, 24, 32:
		default:
			return nil, fmt.Errorf("a key is %d bytes; it must be 16, 24 or 32 (openssl rand -base64 32)", len(k))
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func validGossipKeys(v string) string {
	if _, err := ParseGossipKeys(v); err != nil {
		return err.Error() // never the value: it is a secret
	}
	return ""
}
