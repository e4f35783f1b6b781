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

// TestMetricsQuota: a producer over its producer_byte_rate shows on the
// metrics listener as kafka_server_quota_byte_rate and _throttle_time of
// resource Produce under its client id; a client with no quota has no
// series.
func TestMetricsQuota(t *testing.T) {
	node := sluicetest.Start(t, "metrics.listener=127.0.0.1:0", "quota.window.num=2", "quota.window.size.seconds=1")
	setQuota(t, node.Admin(), quotas.ProducerByteRate, 4096, "client-id", "metered")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := node.Admin().CreateTopic(ctx, 1, 1, nil, "quota-figures"); err != nil {
		t.Fatal(err)
	}
	hook := &throttles{}
	metered := node.Client(kgo.ClientID("metered"), kgo.WithHooks(hook), kgo.DefaultProduceTopic("quota-figures"), kgo.ProducerLinger(0))
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
