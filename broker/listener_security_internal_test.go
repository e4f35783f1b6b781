package broker

import (
	"testing"
	"time"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/protocol"
)

// TestSecureServerReadsListenerKeys: a SASL listener's session limits
// come from its listener.name.<l>. keys, else the broker-wide ones, and
// its mechanisms from its own sasl.enabled.mechanisms.
func TestSecureServerReadsListenerKeys(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`
	cfg, err := config.Load("", []string{
		"listeners=ONE://127.0.0.1:0,TWO://127.0.0.1:0",
		"listener.security.protocol.map=ONE:SASL_PLAINTEXT,TWO:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.two.sasl.enabled.mechanisms=SCRAM-SHA-256",
		"listener.name.one.plain.sasl.jaas.config=" + jaas,
		"connections.max.reauth.ms=1000",
		"listener.name.two.connections.max.reauth.ms=5000",
		"connection.failed.authentication.delay.ms=250",
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{cfg: cfg}
	for _, tt := range []struct {
		listener string
		reauth   time.Duration
		mechs    []string
	}{
		{"ONE", time.Second, []string{"PLAIN"}},
		{"TWO", 5 * time.Second, []string{"SCRAM-SHA-256"}},
	} {
		s := &protocol.Server{}
		if err := b.secureServer(s, &kafkaListener{cfg: config.Listener{Name: tt.listener}, protocol: protocol.ProtocolSASLPlaintext}); err != nil {
			t.Fatalf("%s: %v", tt.listener, err)
		}
		if s.ReauthMax != tt.reauth || s.FailedAuthDelay != 250*time.Millisecond || s.TLS != nil {
			t.Errorf("%s: reauth %v, failed-login delay %v, TLS %v", tt.listener, s.ReauthMax, s.FailedAuthDelay, s.TLS != nil)
		}
		if got := s.SASL.Mechanisms(); len(got) != 1 || got[0] != tt.mechs[0] {
			t.Errorf("%s: mechanisms %v, want %v", tt.listener, got, tt.mechs)
		}
	}
}
