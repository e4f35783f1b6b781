package security

// SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the server
// side through github.com/xdg-go/scram, with Kafka's ScramSaslServer
// rules around it:
//
//   - the client-first message must have no channel binding ("n,");
//     Kafka's extensions after the nonce are accepted and ignored, except
//     tokenauth=true (a delegation token login, KIP-48), which fails: sluice
//     issues no delegation tokens, so no token id names a credential;
//   - a user without a credential for the mechanism fails exactly as a
//     wrong proof does, with the generic message, so a client cannot tell
//     which users exist;
//   - an authorization id other than the user fails with Kafka's message
//     "Client requested an authorization id that is different from
//     username" (only for a user that exists, as in Kafka);
//   - a stored credential of fewer than 4096 iterations (Kafka's
//     minimum for both mechanisms) is not used.
//
// The exchange is two client messages: client-first (answered with
// server-first: nonce, salt, iterations) and client-final (answered, when
// its proof is right, with server-final: the server's signature).

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/xdg-go/scram"

	"github.com/sluicedev/sluice/protocol"
)

// ScramMinIterations and ScramMaxIterations bound a credential's
// iteration count: Kafka's ScramMechanism.minIterations (4096 for both
// SHA-256 and SHA-512) and ScramControlManager.MAX_ITERATIONS.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

type scramExchange struct {
	mechanism string
	reauth    bool
	conv      *scram.ServerConversation
	state     int // 0 client-first expected, 1 client-final expected, 2 over
	principal protocol.Principal
}

func newScramExchange(mechanism string, lookup func(user, mechanism string) (ScramCredential, bool), reauth bool) *scramExchange {
	hash := scram.SHA256
	if mechanism == MechanismScramSHA512 {
		hash = scram.SHA512
	}
	creds := func(name string) (scram.StoredCredentials, error) {
		if lookup == nil {
			return scram.StoredCredentials{}, errNoCredential
		}
		c, ok := lookup(name, mechanism)
		if !ok || c.Iterations < ScramMinIterations {
			return scram.StoredCredentials{}, errNoCredential
		}
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
			StoredKey:  c.StoredKey,
			ServerKey:  c.ServerKey,
		}, nil
	}
	srv, _ := hash.NewServer(creds) // never fails
	return &scramExchange{mechanism: mechanism, reauth: reauth, conv: srv.NewConversation()}
}

var errNoCredential = errors.New("no such credential")

func (x *scramExchange) Step(_ context.Context, in []byte) ([]byte, bool, error) {
	switch x.state {
	case 0:
		x.state = 2
		msg := string(in)
		if !strings.HasPrefix(msg, "n,") {
			// Kafka's client-first pattern allows no channel binding.
			return nil, false, x.failed()
		}
		fields := strings.Split(msg, ",")
		if len(fields) < 4 {
			return nil, false, x.failed()
		}
		for _, ext := range fields[4:] {
			k, v, _ := strings.Cut(ext, "=")
			if k == "tokenauth" && strings.EqualFold(v, "true") {
				return nil, false, x.failed()
			}
		}
		out, err := x.conv.Step(msg)
		if err != nil {
			return nil, false, x.failed()
		}
		if a := x.conv.AuthzID(); a != "" && a != x.conv.Username() {
			return nil, false, &protocol.AuthFailedError{Msg: "Authentication failed: Client requested an authorization id that is different from username"}
		}
		x.state = 1
		return []byte(out), false, nil
	case 1:
		x.state = 2
		out, err := x.conv.Step(string(in))
		if err != nil || !x.conv.Valid() {
			return nil, false, x.failed()
		}
		x.principal = user(x.conv.Username())
		return []byte(out), true, nil
	}
	return nil, false, errExchangeOver
}

func (x *scramExchange) failed() error { return invalidCredentials(x.mechanism, x.reauth) }

func (x *scramExchange) Principal() protocol.Principal { return x.principal }
func (x *scramExchange) Expiry() time.Time             { return time.Time{} }
