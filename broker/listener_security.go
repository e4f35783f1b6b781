package broker

// The security of Kafka listeners (issue 19): the TLS and SASL each
// listener's protocol.Server runs, built from the ssl.* and sasl.* keys
// with the listener's listener.name.<l>. overrides (config.ListenerValue,
// config.MechanismValue), and the client side of inter-broker connections
// over the inter-broker listener: TLS with the same keys, SASL with
// sasl.mechanism.inter.broker.protocol and the username and password of
// that listener's JAAS config, as a Kafka broker logs in to its peers.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/security"
)

// usesTLS and usesSASL say what a security protocol runs.
func usesTLS(proto string) bool {
	return proto == protocol.ProtocolSSL || proto == protocol.ProtocolSASLSSL
}

func usesSASL(proto string) bool {
	return proto == protocol.ProtocolSASLPlaintext || proto == protocol.ProtocolSASLSSL
}

// tlsConfigFor is listener's ssl.* keys. A store type is passed only when
// configured, so that security reads an unset one from the file.
func tlsConfigFor(cfg *config.Broker, listener string) security.TLSConfig {
	get := func(key string) string {
		v, _ := cfg.ListenerValue(listener, key)
		return v
	}
	set := func(key string) string {
		if _, ok := cfg.Get(config.ListenerKey(listener, key)); ok {
			return get(key)
		}
		if _, ok := cfg.Get(key); ok {
			return get(key)
		}
		return ""
	}
	list := func(key string) []string {
		var out []string
		for _, s := range strings.Split(get(key), ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return security.TLSConfig{
		KeystoreType:             set("ssl.keystore.type"),
		KeystoreLocation:         get("ssl.keystore.location"),
		KeystorePassword:         get("ssl.keystore.password"),
		KeyPassword:              get("ssl.key.password"),
		KeystoreCertificateChain: get("ssl.keystore.certificate.chain"),
		KeystoreKey:              get("ssl.keystore.key"),
		TruststoreType:           set("ssl.truststore.type"),
		TruststoreLocation:       get("ssl.truststore.location"),
		TruststorePassword:       get("ssl.truststore.password"),
		TruststoreCertificates:   get("ssl.truststore.certificates"),
		ClientAuth:               get("ssl.client.auth"),
		EnabledProtocols:         list("ssl.enabled.protocols"),
		Protocol:                 set("ssl.protocol"),
		CipherSuites:             list("ssl.cipher.suites"),
		PrincipalMappingRules:    get("ssl.principal.mapping.rules"),
		EndpointIdentification:   strings.ToLower(get("ssl.endpoint.identification.algorithm")),
	}
}

// secureServer sets s's TLS and SASL from listener l's protocol and keys.
func (b *Broker) secureServer(s *protocol.Server, l *kafkaListener) error {
	name := l.cfg.Name
	if usesTLS(l.protocol) {
		st, err := security.NewServerTLS(tlsConfigFor(b.cfg, name), b.logger.With("listener", name))
		if err != nil {
			return fmt.Errorf("broker: listener %s: %w", name, err)
		}
		s.TLS, s.CertPrincipal = st.Config, st.Principal
	}
	if usesSASL(l.protocol) {
		sc, err := b.saslConfigFor(name)
		if err != nil {
			return fmt.Errorf("broker: listener %s: %w", name, err)
		}
		srv, err := security.NewSASL(sc)
		if err != nil {
			return fmt.Errorf("broker: listener %s: %w", name, err)
		}
		s.SASL = srv
		// connections.max.reauth.ms, or the listener's own.
		reauth, _ := b.cfg.ListenerValue(name, "connections.max.reauth.ms")
		var reauthMs int64
		fmt.Sscan(reauth, &reauthMs)
		s.ReauthMax = time.Duration(reauthMs) * time.Millisecond
		s.FailedAuthDelay = time.Duration(b.cfg.ConnectionFailedAuthDelayMs) * time.Millisecond
	}
	return nil
}

// saslConfigFor is listener's SASL: its mechanisms, PLAIN's users from
// its plain.sasl.jaas.config, SCRAM credentials from the metadata image,
// and OAUTHBEARER's validation (the sasl.oauthbearer.* keys, JWKS only
// with OAuthBearerValidatorCallbackHandler as the mechanism's server
// callback handler, as in Kafka, and the unsecured validator's JAAS
// options).
func (b *Broker) saslConfigFor(listener string) (security.SASLConfig, error) {
	cfg := b.cfg
	sc := security.SASLConfig{Mechanisms: cfg.SASLMechanisms(listener), Scram: b.scramCredential}
	for _, m := range sc.Mechanisms {
		jaas, hasJAAS := cfg.MechanismValue(listener, m, "sasl.jaas.config")
		switch m {
		case security.MechanismPlain:
			_, _, users, err := security.ParsePlainJAAS(jaas)
			if err != nil {
				return sc, fmt.Errorf("%s: %w", config.ListenerKey(listener, "plain.sasl.jaas.config"), err)
			}
			sc.PlainUsers = users
		case security.MechanismOAuthBearer:
			get := func(key string) string {
				v, _ := cfg.MechanismValue(listener, m, key)
				return v
			}
			o := security.OAuthConfig{
				ExpectedIssuer: get("sasl.oauthbearer.expected.issuer"),
				SubClaimName:   get("sasl.oauthbearer.sub.claim.name"),
				ScopeClaimName: get("sasl.oauthbearer.scope.claim.name"),
			}
			for _, a := range strings.Split(get("sasl.oauthbearer.expected.audience"), ",") {
				if a = strings.TrimSpace(a); a != "" {
					o.ExpectedAudience = append(o.ExpectedAudience, a)
				}
			}
			fmt.Sscan(get("sasl.oauthbearer.clock.skew.seconds"), &o.ClockSkewSeconds)
			var refreshMs int64
			fmt.Sscan(get("sasl.oauthbearer.jwks.endpoint.refresh.ms"), &refreshMs)
			o.JWKSRefresh = time.Duration(refreshMs) * time.Millisecond
			if handler, _ := cfg.MechanismValue(listener, m, "sasl.server.callback.handler.class"); handler != "" {
				o.JWKSURL = get("sasl.oauthbearer.jwks.endpoint.url")
				if o.JWKSURL == "" {
					return sc, fmt.Errorf("%s is set but sasl.oauthbearer.jwks.endpoint.url is not: the validator needs the keys that sign the tokens", config.ListenerKey(listener, "oauthbearer.sasl.server.callback.handler.class"))
				}
			}
			if hasJAAS {
				if err := security.OAuthJAASOptions(jaas, &o); err != nil {
					return sc, fmt.Errorf("%s: %w", config.ListenerKey(listener, "oauthbearer.sasl.jaas.config"), err)
				}
			}
			sc.OAuth = o
		}
	}
	return sc, nil
}

// peerSecurity is the client side of connections to other brokers'
// inter-broker listener: its TLS configuration (nil for a plaintext
// listener) and SASL mechanism (nil for none), made once at start.
type peerSecurity struct {
	tls  *security.TLSConfig
	sasl sasl.Mechanism
}

// newPeerSecurity builds the client side of the inter-broker listener l.
func newPeerSecurity(cfg *config.Broker, l *kafkaListener) (peerSecurity, error) {
	var ps peerSecurity
	if usesTLS(l.protocol) {
		tc := tlsConfigFor(cfg, l.cfg.Name)
		// Check the client side loads now, not at the first dial.
		if _, err := security.ClientTLS(tc, "localhost"); err != nil {
			return ps, fmt.Errorf("broker: inter-broker listener %s: %w", l.cfg.Name, err)
		}
		ps.tls = &tc
	}
	if usesSASL(l.protocol) {
		mech, _ := cfg.Get("sasl.mechanism.inter.broker.protocol")
		jaas, _ := cfg.MechanismValue(l.cfg.Name, mech, "sasl.jaas.config")
		jaasKey := config.ListenerKey(l.cfg.Name, strings.ToLower(mech)+".sasl.jaas.config")
		var user, pass string
		var err error
		switch mech {
		case security.MechanismPlain:
			user, pass, _, err = security.ParsePlainJAAS(jaas)
		case security.MechanismScramSHA256, security.MechanismScramSHA512:
			user, pass, err = security.ParseScramJAAS(jaas)
		default:
			err = fmt.Errorf("sasl.mechanism.inter.broker.protocol %s is not one sluice logs in with", mech)
		}
		if err == nil && (user == "" || pass == "") {
			err = fmt.Errorf("needs the username and password this broker logs in to its peers with")
		}
		if err != nil {
			return ps, fmt.Errorf("broker: %s: %w", jaasKey, err)
		}
		switch mech {
		case security.MechanismPlain:
			ps.sasl = plain.Auth{User: user, Pass: pass}.AsMechanism()
		case security.MechanismScramSHA256:
			ps.sasl = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		default:
			ps.sasl = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		}
	}
	return ps, nil
}

// peerDialOpts are the kgo options of a client of other brokers'
// inter-broker listener: dialled through Options.Dial, with the
// listener's TLS and SASL.
func (b *Broker) peerDialOpts() []kgo.Opt {
	var opts []kgo.Opt
	dial := b.dial
	if tc := b.peerSec.tls; tc != nil {
		inner := dial
		if inner == nil {
			d := &net.Dialer{}
			inner = d.DialContext
		}
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			conf, err := security.ClientTLS(*tc, host)
			if err != nil {
				return nil, err
			}
			nc, err := inner(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			conn := tls.Client(nc, conf)
			if err := conn.HandshakeContext(ctx); err != nil {
				nc.Close()
				return nil, err
			}
			return conn, nil
		}
	}
	if dial != nil {
		opts = append(opts, kgo.Dialer(dial))
	}
	if b.peerSec.sasl != nil {
		opts = append(opts, kgo.SASL(b.peerSec.sasl))
	}
	return opts
}
