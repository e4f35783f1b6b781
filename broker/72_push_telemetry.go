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
// An accepted push's metrics are decompressed and decoded (an OTLP
// ExportMetricsServiceRequest, telemetry_receive.go) and handed to the
// metrics endpoint, which exposes them on /metrics labelled with the
// client instance (metrics.ClientTelemetry); metrics that do not
// decompress or decode are INVALID_RECORD, Kafka's answer when its
// receiver fails. Without metrics.listener they are dropped. No
// authorization is needed, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (t *clientTelemetry) handlePushTelemetry(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	in, err := t.push(req.ClientInstanceID, telemetryMeta(r), req.SubscriptionID, req.Terminating, req.CompressionType, len(req.Metrics))
	if err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if len(req.Metrics) > 0 && t.receiver != nil {
		if err := t.receive(&in, req.CompressionType, req.Metrics); err != nil {
			t.failedExport(in.id)
			resp.ErrorCode = kerr.InvalidRecord.Code
		}
	}
	return resp, nil
}
