package broker_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluicedev/sluice/quotas"
	"github.com/sluicedev/sluice/sluicetest"
)

// TestProduceQuotaPerAuthenticatedUser: a producer_byte_rate quota on the
// user entity alice holds the connections that logged in as alice, and
// only those (issue 18's promise that user quotas work once SASL lands):
// alice and bob, same client id, same listener, same broker; alice is
// throttled, bob is not, and every record of both is appended.
func TestProduceQuotaPerAuthenticatedUser(t *testing.T) {
	node := sluicetest.Start(t,
		"quota.window.num=2", "quota.window.size.seconds=1",
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="+plainModule+` user_alice="alice-secret" user_bob="bob-secret";`,
	)
	setQuota(t, node.Admin(), quotas.ProducerByteRate, 4096, "user", "alice")
	ctx := context.Background()
	if _, err := node.Admin().CreateTopic(ctx, 1, 1, nil, "quota-user"); err != nil {
		t.Fatal(err)
	}
	aliceHook, bobHook := &throttles{}, &throttles{}
	client := func(user, pass string, hook *throttles) *kgo.Client {
		return node.ClientOn("SASL_PLAINTEXT", kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()),
			kgo.ClientID("shared"), kgo.WithHooks(hook), kgo.DefaultProduceTopic("quota-user"), kgo.ProducerLinger(0))
	}
	alice, bob := client("alice", "alice-secret", aliceHook), client("bob", "bob-secret", bobHook)
	value := incompressible(3000)
	const n = 6
	for range n {
		if err := alice.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := bob.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if after, held := aliceHook.count(); after == 0 || held != 0 {
		t.Fatalf("alice throttled %d times after the response, %d before; want some, all after", after, held)
	}
	if after, held := bobHook.count(); after+held != 0 {
		t.Fatalf("bob, with no quota of his own, throttled %d times", after+held)
	}
	offsets, err := node.Admin().ListEndOffsets(ctx, "quota-user")
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := offsets.Lookup("quota-user", 0); end.Offset != 2*n {
		t.Fatalf("end offset %d, want %d", end.Offset, 2*n)
	}
}
