package protocol

// Authentication (issue 19): who a connection is. Every connection has a
// principal, Kafka's KafkaPrincipal: on a PLAINTEXT listener it is
// User:ANONYMOUS from the start, on an SSL listener the client
// certificate's subject (mapped by ssl.principal.mapping.rules) or
// User:ANONYMOUS without one, on a SASL listener the user the SASL
// exchange authenticated. Until a SASL connection has authenticated it is
// served ApiVersions, SaslHandshake and SaslAuthenticate only; anything
// else closes it, as Kafka's SaslServerAuthenticator does.
//
// The mechanisms themselves (PLAIN, SCRAM, OAUTHBEARER) are not this
// package's: a Server is handed a SASLServer that starts exchanges, and
// runs them with Kafka's framing (SaslHandshake v0's raw tokens, or
// SaslAuthenticate requests after SaslHandshake v1, KIP-152), its
// re-authentication (KIP-368) and its delay on a failed login.

import (
	"context"
	"time"
)

// Principal is who a connection authenticated as: Kafka's KafkaPrincipal,
// a type (always "User" for what sluice builds) and a name.
type Principal struct {
	Type, Name string
}

// String is the principal as ACLs and logs write it, e.g. User:alice.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// Anonymous is the principal of a connection that did not authenticate:
// every PLAINTEXT connection, and an SSL one without a client certificate.
var Anonymous = Principal{Type: "User", Name: "ANONYMOUS"}

// Security protocols, listener.security.protocol.map's values.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// SASLServer starts the server side of SASL exchanges for a listener.
type SASLServer interface {
	// Mechanisms are the enabled mechanism names, in the order
	// SaslHandshake lists them (sasl.enabled.mechanisms).
	Mechanisms() []string
	// Start begins an exchange of mechanism for conn; ok is false when
	// the mechanism is not enabled.
	Start(mechanism string, conn *ConnInfo) (x SASLExchange, ok bool)
}

// SASLExchange is one SASL authentication in progress.
type SASLExchange interface {
	// Step takes the client's next token and returns the server's
	// answer; done is true when the exchange has succeeded. An
	// *AuthFailedError fails the login (SASL_AUTHENTICATION_FAILED with
	// its message, after connection.failed.authentication.delay.ms, then
	// the connection is closed); any other error closes the connection.
	Step(ctx context.Context, in []byte) (out []byte, done bool, err error)
	// Principal is who authenticated; valid once Step reported done.
	Principal() Principal
	// Expiry is when the credential stops being valid (an OAUTHBEARER
	// token's exp), zero for never; the session then ends no later than
	// it, connections.max.reauth.ms or not (KIP-368). Valid once Step
	// reported done.
	Expiry() time.Time
}

// AuthFailedError is a failed login: the client gets
// SASL_AUTHENTICATION_FAILED with Msg.
type AuthFailedError struct {
	Msg string
}

func (e *AuthFailedError) Error() string { return e.Msg }
