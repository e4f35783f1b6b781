package broker

// SaslHandshake (api key 17), versions 0-1.
//
// sluice has no SASL yet: every listener is PLAINTEXT. This answers as
// Kafka does on a listener without SASL (KafkaApis and ControllerApis
// handleSaslHandshakeRequest, Kafka 4.1): ILLEGAL_SASL_STATE with no
// mechanisms, the connection left open. A client configured for
// SASL_PLAINTEXT against sluice then reports Kafka's error ("Illegal SASL
// state") instead of a dropped connection it retries forever. Kafka lists
// the key in ApiVersions on every listener, and so does sluice. Real SASL,
// with a listener that authenticates, replaces this.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleSaslHandshake(_ context.Context, r *protocol.Request) (kmsg.Response, error) {
	resp := r.Body.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}
