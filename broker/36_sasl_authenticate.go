package broker

// SaslAuthenticate (api key 36), versions 0-2.
//
// sluice has no SASL yet: every listener is PLAINTEXT, where a connection
// is authenticated (as ANONYMOUS) the moment it opens. This answers as
// Kafka does on a listener without SASL (KafkaApis and ControllerApis
// handleSaslAuthenticateRequest, Kafka 4.1): ILLEGAL_SASL_STATE with an
// error message, no auth bytes, the connection left open. Kafka lists the
// key in ApiVersions on every listener, and so does sluice. Real SASL, with
// a listener that authenticates, replaces this.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

// saslNotEnabled is the message of the SaslAuthenticate answer. Kafka's
// says the request came after successful authentication, which is how a
// PLAINTEXT connection stands; this one also says why.
const saslNotEnabled = "SaslAuthenticate on a listener without SASL: the connection is already authenticated (security protocol PLAINTEXT)"

func (b *Broker) handleSaslAuthenticate(_ context.Context, r *protocol.Request) (kmsg.Response, error) {
	resp := r.Body.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	resp.ErrorMessage = kmsg.StringPtr(saslNotEnabled)
	return resp, nil
}
