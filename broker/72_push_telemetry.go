package broker

// PushTelemetry (api key 72), version 0 (KIP-714).
//
// A client sends the metrics its subscription asked for, compressed with
// one of the accepted types. Checked in Kafka's order
// (ClientMetricsManager.validatePushRequest): a reserved client instance id
// (zero, or the metadata topic's) is INVALID_REQUEST; so is any push after
// one with Terminating set; a push less than a push interval after the
// last accepted one is THROTTLING_QUOTA_EXCEEDED, unless a
// GetTelemetrySubscriptions came in between or the push is terminating; a
// subscription id that is not the instance's is UNKNOWN_SUBSCRIPTION_ID
// (the client then asks for its subscription again); a compression type
// Kafka does not know is UNSUPPORTED_COMPRESSION_TYPE; metrics longer than
// telemetry.max.bytes are TELEMETRY_TOO_LARGE. The request itself is
// bounded by socket.request.max.bytes before it is read.
//
// Accepted metrics are dropped, neither decompressed nor kept: they will
// go to the metrics endpoint (issue 21), the receiver a Kafka broker hands
// them to. Since no subscription asks for any metric yet (telemetry.go),
// clients push none unasked. No authorization is needed, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (t *clientTelemetry) handlePushTelemetry(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	if err := t.push(req.ClientInstanceID, req.SubscriptionID, req.Terminating, req.CompressionType, len(req.Metrics)); err != nil {
		resp.ErrorCode = err.Code
	}
	return resp, nil
}
