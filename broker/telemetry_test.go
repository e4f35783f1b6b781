package broker_test

// Client telemetry (KIP-714) on a real node: franz-go, which enables
// telemetry by default, gets its subscription and is asked for no
// metrics; GetTelemetrySubscriptions and PushTelemetry sent by a client
// answer as a Kafka 4.4 broker answers (telemetry.go).

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// logRecorder is a kgo.Logger that keeps every message it is given.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (l *logRecorder) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, level.String()+" "+msg)
}

// find returns the first message containing s.
func (l *logRecorder) find(s string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.IndexFunc(l.msgs, func(m string) bool { return strings.Contains(m, s) })
	if i < 0 {
		return "", false
	}
	return l.msgs[i], true
}

// franz-go asks a broker that lists GetTelemetrySubscriptions and
// PushTelemetry for its subscription once it has produced or fetched;
// sluice answers with no requested metrics, so the client only waits to
// ask again, and never logs that it could not get its subscription.
func TestTelemetryFranzGoGetsSubscription(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "telemetry-t", 1, nil)
	logs := &logRecorder{}
	cl := n.Client(kgo.WithLogger(logs), kgo.DefaultProduceTopic("telemetry-t"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		if m, ok := logs.find("unable to get telemetry subscriptions"); ok {
			t.Fatalf("franz-go logged %q", m)
		}
		if _, ok := logs.find("no metrics requested"); !ok {
			return errNotSubscribed
		}
		return nil
	})
}

var errNotSubscribed = errors.New("franz-go has not logged its (empty) telemetry subscription")

// A client's GetTelemetrySubscriptions and PushTelemetry requests, as a
// Kafka 4.4 broker with a telemetry receiver and no client-metrics
// subscription answers them: a new client instance id and Kafka's default
// subscription; pushes within the interval throttled; each refusal of
// validatePushRequest in its order; a push up to telemetry.max.bytes taken
// (and dropped), one byte more refused.
func TestTelemetryRequestsAnswerAsKafka(t *testing.T) {
	const maxBytes = 4096
	n := sluicetest.Start(t, "telemetry.max.bytes=4096")
	// The client's own telemetry is off, so only the test's requests
	// reach the broker's telemetry state.
	cl := n.Client(kgo.DisableClientMetrics())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	subscribe := func(id [16]byte) *kmsg.GetTelemetrySubscriptionsResponse {
		t.Helper()
		req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
		req.ClientInstanceID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("GetTelemetrySubscriptions: %v", err)
		}
		return resp
	}
	push := func(what string, id [16]byte, sub int32, terminating bool, compression int8, size int, want *kerr.Error) {
		t.Helper()
		req := kmsg.NewPtrPushTelemetryRequest()
		req.ClientInstanceID, req.SubscriptionID, req.Terminating = id, sub, terminating
		req.CompressionType, req.Metrics = compression, make([]byte, size)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: PushTelemetry: %v", what, err)
		}
		var wantCode int16
		if want != nil {
			wantCode = want.Code
		}
		if resp.ErrorCode != wantCode {
			t.Fatalf("%s: PushTelemetry answered %v, want %v", what, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(wantCode))
		}
	}
	// newInstance subscribes as a new client and returns its id and
	// subscription id.
	newInstance := func() ([16]byte, int32) {
		t.Helper()
		resp := subscribe([16]byte{})
		if resp.ErrorCode != 0 {
			t.Fatalf("GetTelemetrySubscriptions of a new client: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp.ClientInstanceID, resp.SubscriptionID
	}

	resp := subscribe([16]byte{})
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("GetTelemetrySubscriptions of a new client: %v", err)
	}
	if resp.ClientInstanceID == ([16]byte{}) {
		t.Fatal("a new client got the zero client instance id")
	}
	if len(resp.RequestedMetrics) != 0 || resp.PushIntervalMillis != 300000 || resp.TelemetryMaxBytes != maxBytes ||
		!resp.DeltaTemporality || !slices.Equal(resp.AcceptedCompressionTypes, []int8{4, 3, 1, 2}) {
		t.Fatalf("subscription %+v, want no metrics, 300000 ms, %d bytes, delta temporality, compression zstd lz4 gzip snappy", resp, maxBytes)
	}
	id, sub := resp.ClientInstanceID, resp.SubscriptionID
	if again := subscribe(id); again.ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("second GetTelemetrySubscriptions within the push interval: %v, want THROTTLING_QUOTA_EXCEEDED", kerr.ErrorForCode(again.ErrorCode))
	}
	push("first push after subscribing", id, sub, false, 4, maxBytes, nil)
	push("second push within the interval", id, sub, false, 4, 10, kerr.ThrottlingQuotaExceeded)
	push("terminating push within the interval", id, sub, true, 4, 10, nil)
	push("push after terminating", id, sub, true, 4, 10, kerr.InvalidRequest)

	push("zero client instance id", [16]byte{}, sub, false, 4, 10, kerr.InvalidRequest)
	id, sub = newInstance()
	push("stale subscription id", id, sub+1, false, 4, 10, kerr.UnknownSubscriptionID)
	if again := subscribe(id); again.ErrorCode != 0 || again.SubscriptionID != sub {
		t.Fatalf("GetTelemetrySubscriptions after UNKNOWN_SUBSCRIPTION_ID: error %v, subscription %d, want none and %d",
			kerr.ErrorForCode(again.ErrorCode), again.SubscriptionID, sub)
	}
	id, sub = newInstance()
	push("unknown compression type", id, sub, false, 7, 10, kerr.UnsupportedCompressionType)
	id, sub = newInstance()
	push("one byte over telemetry.max.bytes", id, sub, false, 1, maxBytes+1, kerr.TelemetryTooLarge)
}
