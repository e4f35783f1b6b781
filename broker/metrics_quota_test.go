package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/quotas"
	"github.com/sluicedev/sluice/sluicetest"
)

// quotaSeries is the value of family's series for resource and client id
// in a scrape, and whether there is one.
func quotaSeries(m map[string]float64, family, resource, clientID string) (float64, bool) {
	for k, v := range m {
		if strings.HasPrefix(k, family+"{") && strings.Contains(k, `resource="`+resource+`"`) &&
			strings.Contains(k, `clientId="`+clientID+`"`) {
			return v, true
		}
	}
	return 0, false
}

// throttledProducer starts a node with metrics.listener on and 1 s quota
// windows, creates topic, and returns a producer to it under clientID,
// whose producer_byte_rate is 4096, with a hook counting its throttles,
// and a context that ends with the test (30 s at most).
func throttledProducer(t *testing.T, clientID, topic string) (*sluicetest.Node, *kgo.Client, *throttles, context.Context) {
	t.Helper()
	node := sluicetest.Start(t, "metrics.listener=127.0.0.1:0", "quota.window.num=2", "quota.window.size.seconds=1")
	setQuota(t, node.Admin(), quotas.ProducerByteRate, 4096, "client-id", clientID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if _, err := node.Admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	hook := &throttles{}
	cl := node.Client(kgo.ClientID(clientID), kgo.WithHooks(hook), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	return node, cl, hook, ctx
}

// TestMetricsQuota: a producer over its producer_byte_rate shows on the
// metrics listener as kafka_server_quota_byte_rate and _throttle_time of
// resource Produce under its client id; a client with no quota has no
// series.
func TestMetricsQuota(t *testing.T) {
	node, metered, hook, ctx := throttledProducer(t, "metered", "quota-figures")
	free := node.Client(kgo.ClientID("free"), kgo.DefaultProduceTopic("quota-figures"), kgo.ProducerLinger(0))
	for range 4 {
		if err := metered.ProduceSync(ctx, &kgo.Record{Value: incompressible(3000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := free.ProduceSync(ctx, &kgo.Record{Value: incompressible(3000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if after, held := hook.count(); after+held == 0 {
		t.Fatal("the producer was never throttled")
	}
	m, err := scrape(node.Broker.MetricsAddr())
	if err != nil {
		t.Fatal(err)
	}
	rate, ok := quotaSeries(m, "kafka_server_quota_byte_rate", "Produce", "metered")
	if !ok || rate <= 0 {
		t.Fatalf("kafka_server_quota_byte_rate of Produce for client id metered: %v (present %v), want > 0", rate, ok)
	}
	throttle, ok := quotaSeries(m, "kafka_server_quota_throttle_time", "Produce", "metered")
	if !ok || throttle <= 0 {
		t.Fatalf("kafka_server_quota_throttle_time of Produce for client id metered: %v (present %v), want > 0", throttle, ok)
	}
	if v, ok := quotaSeries(m, "kafka_server_quota_byte_rate", "Produce", "free"); ok {
		t.Fatalf("client id free has no quota but a byte_rate series (%v)", v)
	}
	for k, v := range m {
		if strings.HasPrefix(k, "kafka_server_quota_") {
			t.Logf("%s %v", k, v)
		}
	}
}
