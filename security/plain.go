package security

// SASL/PLAIN (RFC 4616), as Kafka's PlainSaslServer checks it: the one
// client message is [authzid] NUL authcid NUL passwd; the user and
// password must be one of the listener's user_<name> options; an
// authorization id, if given, must be the user itself.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"time"

	"github.com/sluicedev/sluice/protocol"
)

type plainExchange struct {
	users     map[string]string
	reauth    bool
	done      bool
	principal protocol.Principal
}

func (x *plainExchange) Step(_ context.Context, in []byte) ([]byte, bool, error) {
	if x.done {
		return nil, false, errExchangeOver
	}
	x.done = true
	// Kafka splits into three tokens, the last one taking the rest
	// (a password may hold NUL); a missing token is empty.
	var tokens [3][]byte
	rest := in
	for i := range tokens {
		if i == len(tokens)-1 {
			tokens[i] = rest
			break
		}
		j := bytes.IndexByte(rest, 0)
		if j < 0 {
			tokens[i] = rest
			rest = nil
			break
		}
		tokens[i], rest = rest[:j], rest[j+1:]
	}
	authzid, username, password := string(tokens[0]), string(tokens[1]), tokens[2]
	if username == "" || len(password) == 0 {
		// Kafka's "username not specified" / "password not specified"
		// are SaslExceptions: the client gets the generic message.
		return nil, false, invalidCredentials(MechanismPlain, x.reauth)
	}
	want, known := x.users[username]
	// Compare digests so that neither the length of the stored password
	// nor whether the user exists shows in the time taken.
	got, exp := sha256.Sum256(password), sha256.Sum256([]byte(want))
	ok := subtle.ConstantTimeCompare(got[:], exp[:]) == 1
	if !known || !ok {
		return nil, false, &protocol.AuthFailedError{Msg: "Authentication failed: Invalid username or password"}
	}
	if authzid != "" && authzid != username {
		return nil, false, &protocol.AuthFailedError{Msg: "Authentication failed: Client requested an authorization id that is different from username"}
	}
	x.principal = user(username)
	return []byte{}, true, nil
}

func (x *plainExchange) Principal() protocol.Principal { return x.principal }
func (x *plainExchange) Expiry() time.Time             { return time.Time{} }
