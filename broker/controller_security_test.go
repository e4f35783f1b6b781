package broker

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/sluicetest/certs"
)

// The controller listener's protocol decides its security: PLAINTEXT
// none, SSL and SASL_SSL mutual TLS whatever ssl.client.auth says,
// SASL_PLAINTEXT refused.
func TestControllerSecurityByProtocol(t *testing.T) {
	set := certs.New(t)
	stores := append(set.Server.KeystorePEM("listener.name.controller."), set.TruststorePEMLines("listener.name.controller.")...)
	for _, tc := range []struct {
		proto   string
		lines   []string
		secured bool
		err     string
	}{
		{"PLAINTEXT", nil, false, ""},
		{"SSL", stores, true, ""},
		// ssl.client.auth=none is overridden: peers always show a certificate.
		{"SSL", append([]string{"ssl.client.auth=none"}, stores...), true, ""},
		{"SASL_SSL", stores, true, ""},
		{"SASL_PLAINTEXT", nil, false, "SASL_PLAINTEXT is not supported on the controller listener"},
		{"SSL", nil, false, "needs a keystore"},
	} {
		ovr := append([]string{"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:" + tc.proto}, tc.lines...)
		cfg, err := config.Load("", ovr)
		if err != nil {
			t.Fatalf("%s: %v", tc.proto, err)
		}
		s, err := newControllerSecurity(cfg, slog.New(slog.DiscardHandler))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %v: %v, want an error with %q", tc.proto, tc.lines, err, tc.err)
			}
			continue
		}
		if err != nil || (s != nil) != tc.secured {
			t.Errorf("%s %v: secured %v, %v; want secured %v", tc.proto, tc.lines, s != nil, err, tc.secured)
			continue
		}
		if s != nil {
			if got := s.server.Config().ClientAuth; got.String() != "RequireAndVerifyClientCert" {
				t.Errorf("%s: client auth %v", tc.proto, got)
			}
			c, err := s.clientConfig("127.0.0.1:9093")
			if err != nil || len(c.Certificates) != 1 || c.ServerName != "127.0.0.1" {
				t.Errorf("%s: client config %v", tc.proto, err)
			}
		}
	}
}
