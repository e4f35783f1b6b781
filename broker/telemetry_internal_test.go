package broker

// Unit tests of the KIP-714 client telemetry state (telemetry.go) on a
// stepped clock: the subscription id against Kafka's own, the push
// interval's throttle in both directions, and the bounds of the instance
// table. telemetry_test.go drives the same through a real node.

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// kafkaTestID is the client instance id Uuid(0x0123456789abcdef,
// 0x1122334455667788) whose values below Kafka 4.4.0's own code printed
// (ClientMetricsManager.computeSubscriptionId through reflection,
// Uuid.hashCode, run in jshell on the 4.4.0 jars).
var kafkaTestID = [16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}

func TestTelemetrySubscriptionIDIsKafkas(t *testing.T) {
	if got := javaUUIDHash(kafkaTestID); got != -858993596 {
		t.Errorf("Java hash code %d, Kafka's Uuid.hashCode is -858993596", got)
	}
	tests := []struct {
		name     string
		metrics  []string
		interval int32
		want     int32
	}{
		{"no metrics, default interval", nil, 300000, 403412890},
		{"one metric prefix, one minute", []string{"org.apache.kafka.producer."}, 60000, 254245284},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := telemetrySubscriptionID(tt.metrics, tt.interval, kafkaTestID); got != tt.want {
				t.Errorf("subscription id %d, Kafka 4.4 computes %d", got, tt.want)
			}
		})
	}
}

// stepClock is a clock a test moves by hand.
type stepClock struct{ t time.Time }

func newStepClock() *stepClock { return &stepClock{t: time.Unix(1_800_000_000, 0)} }

func (c *stepClock) now() time.Time { return c.t }

func (c *stepClock) step(d time.Duration) { c.t = c.t.Add(d) }

// wantErr fails the test when got is not the Kafka error want (nil: none).
func wantErr(t *testing.T, what string, got, want *kerr.Error) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %s, want %s", what, kerrName(got), kerrName(want))
	}
}

func kerrName(err *kerr.Error) string {
	if err == nil {
		return "no error"
	}
	return err.Message
}

func TestTelemetryThrottleFollowsPushInterval(t *testing.T) {
	c := newStepClock()
	tel := newClientTelemetry(100, c.now)
	in, err := tel.subscribe([16]byte{}, telemetryClientMeta{})
	wantErr(t, "first GetTelemetrySubscriptions", err, nil)
	id, sub := in.id, in.subscriptionID
	if id == ([16]byte{}) || reservedUUID(id) {
		t.Fatalf("new client instance id %x is reserved", id)
	}
	if sub != telemetrySubscriptionID(nil, telemetryPushIntervalMs, id) {
		t.Fatalf("subscription id %d is not Kafka's for %x", sub, id)
	}
	interval := time.Duration(telemetryPushIntervalMs) * time.Millisecond

	c.step(time.Second)
	_, err = tel.subscribe(id, telemetryClientMeta{})
	wantErr(t, "second GetTelemetrySubscriptions a second later", err, kerr.ThrottlingQuotaExceeded)

	// A push right after the subscription is accepted, however early.
	wantErr(t, "push after subscribing", pushErr(tel, id, sub, false, 4, 100), nil)
	c.step(interval / 2)
	wantErr(t, "push half an interval later", pushErr(tel, id, sub, false, 4, 10), kerr.ThrottlingQuotaExceeded)
	c.step(interval / 2)
	wantErr(t, "push an interval later", pushErr(tel, id, sub, false, 0, 10), nil)

	// A refused subscription id lets the client ask again at once, but
	// that early answer does not open a new push window.
	c.step(interval)
	wantErr(t, "push with a stale subscription id", pushErr(tel, id, sub+1, false, 4, 10), kerr.UnknownSubscriptionID)
	_, err = tel.subscribe(id, telemetryClientMeta{})
	wantErr(t, "GetTelemetrySubscriptions after UNKNOWN_SUBSCRIPTION_ID", err, nil)
	wantErr(t, "push right after that early answer", pushErr(tel, id, sub, false, 4, 10), kerr.ThrottlingQuotaExceeded)
	_, err = tel.subscribe(id, telemetryClientMeta{})
	wantErr(t, "GetTelemetrySubscriptions after a throttled push", err, kerr.ThrottlingQuotaExceeded)

	// A terminating push is taken inside the interval; nothing after it.
	wantErr(t, "terminating push", pushErr(tel, id, sub, true, 4, 10), nil)
	wantErr(t, "push after terminating", pushErr(tel, id, sub, true, 4, 10), kerr.InvalidRequest)
}

func TestTelemetryPushChecksInKafkasOrder(t *testing.T) {
	tests := []struct {
		name        string
		id          [16]byte
		subDelta    int32
		compression int8
		size        int
		want        *kerr.Error
	}{
		{"zero client instance id", [16]byte{}, 0, 4, 1, kerr.InvalidRequest},
		{"metadata topic id", [16]byte{15: 1}, 0, 4, 1, kerr.InvalidRequest},
		{"stale subscription and unknown compression", kafkaTestID, 1, 9, 1, kerr.UnknownSubscriptionID},
		{"unknown compression and too large", kafkaTestID, 0, 5, 101, kerr.UnsupportedCompressionType},
		{"negative compression", kafkaTestID, 0, -1, 1, kerr.UnsupportedCompressionType},
		{"one byte over telemetry.max.bytes", kafkaTestID, 0, 0, 101, kerr.TelemetryTooLarge},
		{"exactly telemetry.max.bytes", kafkaTestID, 0, 2, 100, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// An instance this node never saw, as after a push to another
			// node: its subscription id is recomputed, so it matches.
			tel := newClientTelemetry(100, newStepClock().now)
			sub := telemetrySubscriptionID(nil, telemetryPushIntervalMs, tt.id) + tt.subDelta
			wantErr(t, "push", pushErr(tel, tt.id, sub, false, tt.compression, tt.size), tt.want)
		})
	}
}

func TestTelemetryInstancesAreBounded(t *testing.T) {
	c := newStepClock()
	tel := newClientTelemetry(100, c.now)
	first, _ := tel.subscribe([16]byte{}, telemetryClientMeta{})
	for range telemetryMaxInstances - 1 {
		tel.subscribe([16]byte{}, telemetryClientMeta{})
	}
	if n := len(tel.instances); n != telemetryMaxInstances {
		t.Fatalf("%d instances, want %d", n, telemetryMaxInstances)
	}
	c.step(time.Second)
	tel.subscribe([16]byte{}, telemetryClientMeta{})
	if n := len(tel.instances); n != telemetryMaxInstances {
		t.Fatalf("%d instances after one more, want the bound %d", n, telemetryMaxInstances)
	}
	if _, ok := tel.instances[first.id]; ok {
		t.Fatal("the least recently seen instance was kept when the table was full")
	}

	c.step(3*time.Duration(telemetryPushIntervalMs)*time.Millisecond + time.Second)
	last, _ := tel.subscribe([16]byte{}, telemetryClientMeta{})
	if n := len(tel.instances); n != 1 {
		t.Fatalf("%d instances after three idle push intervals, want only the new one", n)
	}
	if _, ok := tel.instances[last.id]; !ok {
		t.Fatal("the new instance is missing")
	}
}

// pushErr is clientTelemetry.push's error, for a client of no particular
// identity.
func pushErr(tel *clientTelemetry, id [16]byte, sub int32, terminating bool, compression int8, size int) *kerr.Error {
	_, err := tel.push(id, telemetryClientMeta{}, sub, terminating, compression, size)
	return err
}
