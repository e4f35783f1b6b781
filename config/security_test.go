package config

import (
	"errors"
	"strings"
	"testing"
)

// TestValidateSecurity: the start-up checks of listeners' protocols, the
// inter-broker listener and TLS and SASL settings, each named case with
// the overrides it loads and the error it must give ("" for none).
func TestValidateSecurity(t *testing.T) {
	dir := t.TempDir()
	base := []string{"log.dirs=" + dir}
	twoListeners := "listeners=INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0"
	protoMap := "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL"
	tls := []string{"ssl.keystore.type=PEM", "ssl.keystore.location=/k.pem"}
	plain := `listener.name.external.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b" user_a="b";`
	for _, tt := range []struct {
		name      string
		overrides []string
		want      string
	}{
		{"plaintext default", nil, ""},
		{"two plaintext listeners", []string{twoListeners, "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT", "inter.broker.listener.name=INTERNAL"}, ""},
		{"SASL_SSL listener", append([]string{twoListeners, protoMap, "inter.broker.listener.name=INTERNAL", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512", plain}, tls...), ""},
		{"both inter-broker keys", []string{twoListeners, "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT", "inter.broker.listener.name=INTERNAL", "security.inter.broker.protocol=PLAINTEXT"},
			"only one of inter.broker.listener.name and security.inter.broker.protocol may be set"},
		{"inter-broker protocol names no listener", []string{twoListeners, "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT", "security.inter.broker.protocol=SSL"},
			"security.inter.broker.protocol: no listener is named SSL"},
		{"inter-broker listener by protocol", append([]string{"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "security.inter.broker.protocol=SSL"}, tls...), ""},
		{"inter-broker listener not advertised", []string{twoListeners, "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT", "advertised.listeners=EXTERNAL://h:1", "inter.broker.listener.name=INTERNAL"},
			"INTERNAL must be a listener in advertised.listeners"},
		{"TLS without keystore", []string{twoListeners, "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SSL", "inter.broker.listener.name=INTERNAL"},
			"listener EXTERNAL speaks TLS and needs a keystore"},
		{"listener keystore", []string{twoListeners, "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SSL", "inter.broker.listener.name=INTERNAL", "listener.name.external.ssl.keystore.location=/k.p12", "listener.name.external.ssl.keystore.type=PKCS12"}, ""},
		{"GSSAPI default", append([]string{twoListeners, protoMap, "inter.broker.listener.name=INTERNAL"}, tls...),
			"GSSAPI (Kerberos, Kafka's default) is not supported"},
		{"PLAIN without users", append([]string{twoListeners, protoMap, "inter.broker.listener.name=INTERNAL", "sasl.enabled.mechanisms=PLAIN"}, tls...),
			"listener.name.external.plain.sasl.jaas.config: must be set"},
		{"unprefixed JAAS", []string{"sasl.jaas.config=x"}, "set listener.name.<listener>.<mechanism>.sasl.jaas.config"},
		{"SASL between brokers, GSSAPI", append([]string{twoListeners, protoMap, "inter.broker.listener.name=EXTERNAL", "sasl.enabled.mechanisms=PLAIN", plain}, tls...),
			"sasl.mechanism.inter.broker.protocol: GSSAPI (Kerberos) is not supported"},
		{"SASL between brokers, mechanism not enabled", append([]string{twoListeners, protoMap, "inter.broker.listener.name=EXTERNAL", "sasl.enabled.mechanisms=PLAIN", plain, "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512"}, tls...),
			"SCRAM-SHA-512 is not among the inter-broker listener EXTERNAL's sasl.enabled.mechanisms"},
		{"SASL between brokers, no credentials", append([]string{twoListeners, protoMap, "inter.broker.listener.name=EXTERNAL", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512", plain, "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512"}, tls...),
			"listener.name.external.scram-sha-512.sasl.jaas.config: must be set"},
		{"SASL between brokers", append([]string{twoListeners, protoMap, "inter.broker.listener.name=EXTERNAL", "sasl.enabled.mechanisms=PLAIN", plain, "sasl.mechanism.inter.broker.protocol=PLAIN"}, tls...), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load("", append(append([]string{}, base...), tt.overrides...))
			if err == nil {
				err = b.Validate()
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("accepted, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q does not say %q", err, tt.want)
			case err != nil && !errors.Is(err, ErrInvalidValue):
				t.Fatalf("error %v does not wrap ErrInvalidValue", err)
			}
		})
	}
}

// TestInterBrokerListener: inter.broker.listener.name wins; else the
// listener named after security.inter.broker.protocol; else PLAINTEXT,
// else the first Kafka listener.
func TestInterBrokerListener(t *testing.T) {
	for _, tt := range []struct {
		overrides []string
		want      string
	}{
		{nil, "PLAINTEXT"},
		{[]string{"listeners=CLIENT://:0,REPL://:0,CONTROLLER://:0", "listener.security.protocol.map=CLIENT:PLAINTEXT,REPL:PLAINTEXT"}, "CLIENT"},
		{[]string{"listeners=CLIENT://:0,PLAINTEXT://:0"}, "PLAINTEXT"},
		{[]string{"listeners=CONTROLLER://:0,CLIENT://:0", "listener.security.protocol.map=CLIENT:PLAINTEXT"}, "CLIENT"},
		{[]string{"listeners=CLIENT://:0,REPL://:0", "listener.security.protocol.map=CLIENT:PLAINTEXT,REPL:PLAINTEXT", "inter.broker.listener.name=repl"}, "REPL"},
		{[]string{"listeners=PLAINTEXT://:0,SSL://:0", "security.inter.broker.protocol=SSL"}, "SSL"},
	} {
		b, err := Load("", tt.overrides)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.InterBrokerListener(); got != tt.want {
			t.Errorf("%v: %s, want %s", tt.overrides, got, tt.want)
		}
	}
}

// TestListenerSecurityKeys: ssl.* and SASL keys take a listener prefix,
// JAAS configs and OAUTHBEARER keys a listener and mechanism prefix; the
// most specific wins; passwords and JAAS texts are described as null.
func TestListenerSecurityKeys(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="secret";`
	b, err := Load("", []string{
		"ssl.keystore.location=/all.p12",
		"listener.name.external.ssl.keystore.location=/external.p12",
		"listener.name.external.ssl.keystore.password=hush",
		"listener.name.external.plain.sasl.jaas.config=" + jaas,
		"sasl.oauthbearer.expected.issuer=https://broker-wide",
		"listener.name.external.oauthbearer.sasl.oauthbearer.expected.issuer=https://external",
		"listener.name.external.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ listener, mech, key, want string }{
		{"EXTERNAL", "", "ssl.keystore.location", "/external.p12"},
		{"INTERNAL", "", "ssl.keystore.location", "/all.p12"},
		{"EXTERNAL", "PLAIN", "sasl.jaas.config", jaas},
		{"EXTERNAL", "OAUTHBEARER", "sasl.oauthbearer.expected.issuer", "https://external"},
		{"INTERNAL", "OAUTHBEARER", "sasl.oauthbearer.expected.issuer", "https://broker-wide"},
	} {
		var got string
		if tt.mech == "" {
			got, _ = b.ListenerValue(tt.listener, tt.key)
		} else {
			got, _ = b.MechanismValue(tt.listener, tt.mech, tt.key)
		}
		if got != tt.want {
			t.Errorf("%s %s %s = %q, want %q", tt.listener, tt.mech, tt.key, got, tt.want)
		}
	}
	if _, ok := b.MechanismValue("INTERNAL", "PLAIN", "sasl.jaas.config"); ok {
		t.Error("INTERNAL has a PLAIN JAAS config")
	}
	for _, bad := range []string{
		"listener.name.external.plain.sasl.oauthbearer.expected.issuer=x", // oauthbearer keys only for oauthbearer
		"listener.name.external.kerberos.sasl.jaas.config=x",
		"listener.name.external.ssl.engine.factory.class=x",
	} {
		if _, err := Load("", []string{bad}); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("%s: %v, want an unknown key", bad, err)
		}
	}
	entries := b.DescribeBroker(nil, nil)
	for _, name := range []string{"listener.name.external.ssl.keystore.password", "listener.name.external.plain.sasl.jaas.config"} {
		e := entryByName(t, entries, name)
		if e.Value != nil || !e.Sensitive || e.Source != SourceStaticBroker {
			t.Errorf("%s described as %v (sensitive %v, source %d), want null, sensitive, static", name, deref(e.Value), e.Sensitive, e.Source)
		}
		for _, s := range e.Synonyms {
			if s.Value != nil {
				t.Errorf("%s synonym %s has a value", name, s.Name)
			}
		}
	}
	if e := entryByName(t, entries, "listener.name.external.ssl.keystore.location"); deref(e.Value) != "/external.p12" {
		t.Errorf("keystore location described as %s", deref(e.Value))
	}
}

// TestSecretKeys: the keys set with a sensitive value, listener-prefixed
// ones included; nothing else.
func TestSecretKeys(t *testing.T) {
	b, err := Load("", []string{
		"ssl.keystore.location=/k.p12", "ssl.keystore.password=x",
		"listener.name.external.plain.sasl.jaas.config=y", "num.partitions=3",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(b.SecretKeys(), " ")
	if want := "listener.name.external.plain.sasl.jaas.config ssl.keystore.password"; got != want {
		t.Errorf("SecretKeys = %s, want %s", got, want)
	}
	if got := Default().SecretKeys(); len(got) != 0 {
		t.Errorf("defaults: SecretKeys = %v", got)
	}
}
