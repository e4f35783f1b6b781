package broker

// GetTelemetrySubscriptions (api key 71), version 0 (KIP-714).
//
// A client asks which metrics the broker wants from it. A client that
// sends the zero client instance id is new and gets an id of its own;
// one that sends its id gets its subscription again: the metrics and push
// interval of the client metrics subscriptions it matches
// (telemetry_subscriptions.go), or none and five minutes when it matches
// none, the compression types zstd, lz4, gzip and snappy,
// telemetry.max.bytes, delta temporality, and Kafka's subscription id
// (telemetry.go). A client that asks again less than a push interval after
// its last request is THROTTLING_QUOTA_EXCEEDED, as in Kafka. No
// authorization is needed, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (t *clientTelemetry) handleGetTelemetrySubscriptions(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	in, err := t.subscribe(req.ClientInstanceID, telemetryMeta(r))
	if err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	resp.ClientInstanceID = in.id
	resp.SubscriptionID = in.subscriptionID
	resp.AcceptedCompressionTypes = telemetryCompressionTypes
	resp.PushIntervalMillis = in.pushIntervalMs
	resp.TelemetryMaxBytes = t.maxBytes
	resp.DeltaTemporality = true
	resp.RequestedMetrics = append([]string{}, in.metrics...)
	return resp, nil
}
