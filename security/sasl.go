package security

// SASL mechanisms, server side (issue 19): PLAIN (plain.go), SCRAM-SHA-256
// and SCRAM-SHA-512 (scram.go) and OAUTHBEARER (oauth.go), each an
// exchange protocol runs with Kafka's framing. They fail a login as
// Kafka's SaslServerAuthenticator does: a mechanism that has something
// safe to say (PLAIN's "Invalid username or password", an authorization id
// that is not the user) says it in an *protocol.AuthFailedError; anything
// else gets the one message that names only the phase and the mechanism
// ("Authentication failed during authentication due to invalid
// credentials with SASL mechanism SCRAM-SHA-256"), so that a client cannot
// tell an unknown user from a wrong password.

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluicedev/sluice/protocol"
)

// The mechanisms sluice serves, sasl.enabled.mechanisms' values.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
	MechanismOAuthBearer = "OAUTHBEARER"
)

// SASLConfig is what a listener's SASL needs.
type SASLConfig struct {
	// Mechanisms is sasl.enabled.mechanisms (upper case), in order.
	Mechanisms []string
	// PlainUsers are the PLAIN users and passwords, from the listener's
	// plain.sasl.jaas.config (user_<name>="<password>" options).
	PlainUsers map[string]string
	// Scram returns the stored credential of user for mechanism
	// (SCRAM-SHA-256 or SCRAM-SHA-512), from the metadata image.
	Scram func(user, mechanism string) (ScramCredential, bool)
	// OAuth configures OAUTHBEARER validation.
	OAuth OAuthConfig
}

// ScramCredential is a user's stored SCRAM credential (RFC 5802): never
// the password, only what the server needs to check a proof.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// OAuthConfig is the OAUTHBEARER validation settings (Kafka's
// sasl.oauthbearer.* keys). With JWKSURL empty, tokens are checked as
// Kafka's default unsecured validator does (alg none).
type OAuthConfig struct {
	JWKSURL          string   // sasl.oauthbearer.jwks.endpoint.url (https://… or file://…)
	ExpectedAudience []string // sasl.oauthbearer.expected.audience
	ExpectedIssuer   string   // sasl.oauthbearer.expected.issuer
	SubClaimName     string   // sasl.oauthbearer.sub.claim.name (default sub)
	ScopeClaimName   string   // sasl.oauthbearer.scope.claim.name (default scope)
	ClockSkewSeconds int      // sasl.oauthbearer.clock.skew.seconds (default 30)

	// JWKSRefresh is sasl.oauthbearer.jwks.endpoint.refresh.ms: how long
	// fetched keys are used before they are fetched again (default one
	// hour). A token signed with a key id the set lacks fetches it again
	// sooner, at most once per jwksMinRefresh.
	JWKSRefresh time.Duration
	// HTTPClient fetches an https:// JWKSURL; nil means a client with
	// the system's roots and a ten-second timeout.
	HTTPClient *http.Client

	// The unsecured validator's own options, the listener's
	// OAuthBearerLoginModule JAAS options (OAuthJAASOptions):
	// unsecuredValidatorRequiredScope (every element must be in the
	// token's scope) and unsecuredValidatorAllowableClockSkewMs (default
	// 0). unsecuredValidatorPrincipalClaimName and
	// unsecuredValidatorScopeClaimName are SubClaimName and
	// ScopeClaimName.
	RequiredScope      []string
	UnsecuredClockSkew time.Duration
}

// NewSASL returns the SASL server of a listener. Every mechanism in
// c.Mechanisms must be one sluice serves (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512, OAUTHBEARER); a JWKS file that cannot be read fails here,
// an https:// endpoint is fetched when the first token needs it.
func NewSASL(c SASLConfig) (protocol.SASLServer, error) {
	s := &saslServer{cfg: c}
	seen := map[string]bool{}
	for _, m := range c.Mechanisms {
		m = strings.ToUpper(strings.TrimSpace(m))
		if m == "" || seen[m] {
			continue
		}
		seen[m] = true
		switch m {
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		case MechanismOAuthBearer:
			v, err := newOAuthValidator(c.OAuth)
			if err != nil {
				return nil, err
			}
			s.oauth = v
		default:
			return nil, fmt.Errorf("security: SASL mechanism %s is not supported (sluice serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER)", m)
		}
		s.mechs = append(s.mechs, m)
	}
	return s, nil
}

type saslServer struct {
	cfg   SASLConfig
	mechs []string
	oauth *oauthValidator
}

func (s *saslServer) Mechanisms() []string { return append([]string(nil), s.mechs...) }

func (s *saslServer) Start(mechanism string, conn *protocol.ConnInfo) (protocol.SASLExchange, bool) {
	enabled := false
	for _, m := range s.mechs {
		if m == mechanism {
			enabled = true
		}
	}
	if !enabled {
		return nil, false
	}
	reauth := reauthenticating(conn)
	switch mechanism {
	case MechanismPlain:
		return &plainExchange{users: s.cfg.PlainUsers, reauth: reauth}, true
	case MechanismScramSHA256, MechanismScramSHA512:
		return newScramExchange(mechanism, s.cfg.Scram, reauth), true
	case MechanismOAuthBearer:
		return &oauthExchange{v: s.oauth, reauth: reauth}, true
	}
	return nil, false
}

// reauthenticating reports whether an exchange on conn is a
// re-authentication (KIP-368): the connection has already authenticated
// as someone. Kafka's messages name the phase.
func reauthenticating(conn *protocol.ConnInfo) bool {
	return conn != nil && conn.Principal() != protocol.Anonymous
}

// invalidCredentials is the failure Kafka's SaslServerAuthenticator
// answers for a mechanism's SaslException: it names the phase and the
// mechanism and nothing else (not whether the user exists).
func invalidCredentials(mechanism string, reauth bool) *protocol.AuthFailedError {
	phase := "authentication"
	if reauth {
		phase = "re-authentication"
	}
	return &protocol.AuthFailedError{Msg: fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", phase, mechanism)}
}

// errExchangeOver is a Step after the exchange ended, which protocol
// never makes; it closes the connection.
var errExchangeOver = fmt.Errorf("security: SASL exchange already ended")

func user(name string) protocol.Principal { return protocol.Principal{Type: "User", Name: name} }
