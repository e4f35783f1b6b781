package broker

// GetTelemetrySubscriptions (api key 71), version 0 (KIP-714).
//
// A client asks which metrics the broker wants from it. A client that
// sends the zero client instance id is new and gets an id of its own;
// one that sends its id gets its subscription again. Every client gets
// the subscription a Kafka 4.4 broker with a telemetry receiver and no
// client-metrics subscription hands out (telemetry.go): no requested
// metrics, a push interval of five minutes, the compression types zstd,
// lz4, gzip and snappy, telemetry.max.bytes, delta temporality, and
// Kafka's subscription id. A client that asks again less than a push
// interval after its last request is THROTTLING_QUOTA_EXCEEDED, as in
// Kafka. No authorization is needed, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (t *clientTelemetry) handleGetTelemetrySubscriptions(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	in, err := t.subscribe(req.ClientInstanceID)
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
	resp.RequestedMetrics = []string{}
	return resp, nil
}
