package broker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestKafka44BrokerKeys checks, as an admin client sees it, the broker
// keys Kafka 4.4 defines beyond those sluice enforces (issue 16, problem
// 4): a Kerberos key, which cannot act in sluice, is accepted by
// AlterConfigs and IncrementalAlterConfigs and described; a TLS key, read
// at start only, is refused as read-only; a topic config whose
// feature sluice lacks is refused by CreateTopics; and DescribeConfigs of
// the broker and of a topic lists Kafka 4.4's keys.
func TestKafka44BrokerKeys(t *testing.T) {
	n := sluicetest.Start(t)
	ctx := context.Background()
	adm := n.Admin()
	const kerberos = "sasl.kerberos.min.time.before.relogin"

	// IncrementalAlterConfigs, then the legacy AlterConfigs.
	for i, alter := range []func([]kadm.AlterConfig) (kadm.AlterConfigsResponses, error){
		func(c []kadm.AlterConfig) (kadm.AlterConfigsResponses, error) {
			return adm.AlterBrokerConfigs(ctx, c, 1)
		},
		func(c []kadm.AlterConfig) (kadm.AlterConfigsResponses, error) {
			return adm.AlterBrokerConfigsState(ctx, c, 1)
		},
	} {
		value := []string{"3600000", "7200000"}[i]
		rs, err := alter([]kadm.AlterConfig{{Name: kerberos, Value: &value}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Err != nil {
				t.Fatalf("alter %s=%s (request %d): %v %s", kerberos, value, i, r.Err, r.ErrMessage)
			}
		}
		rc, err := adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		r, err := rc.On("1", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got *kadm.Config
		for j := range r.Configs {
			if r.Configs[j].Key == kerberos {
				got = &r.Configs[j]
			}
		}
		if got == nil || got.MaybeValue() != value || got.Source != kmsg.ConfigSourceDynamicBrokerConfig {
			t.Fatalf("described %s = %+v, want %s from DYNAMIC_BROKER_CONFIG", kerberos, got, value)
		}
		if i == 0 && len(r.Configs) < 350 {
			t.Errorf("broker describe lists %d keys, want Kafka 4.4's 350 and sluice's extras", len(r.Configs))
		}
	}

	// A TLS key is read at start only: altering it is refused as
	// read-only.
	loc := "/etc/kafka/broker.p12"
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "ssl.keystore.location", Value: &loc}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err == nil || !strings.Contains(r.ErrMessage, "cannot be updated dynamically") {
			t.Errorf("alter ssl.keystore.location: %v %q, want an error saying it cannot be updated dynamically", r.Err, r.ErrMessage)
		}
	}

	// A topic config of tiered storage is refused by CreateTopics.
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"remote.storage.enable": ptr("true")}, "tiered")
	if err == nil {
		err = resp.Err
	}
	if err != kerr.InvalidConfig || !strings.Contains(resp.ErrMessage, "not supported yet (tiered storage (KIP-405); no issue filed yet)") {
		t.Errorf("create with remote.storage.enable=true: %v %q, want INVALID_CONFIG not supported yet (tiered storage (KIP-405); no issue filed yet)", err, resp.ErrMessage)
	}

	// The topic describe lists Kafka 4.4's topic configs.
	createTopic(t, n, "keys44", 1, nil)
	tc, err := adm.DescribeTopicConfigs(ctx, "keys44")
	if err != nil {
		t.Fatal(err)
	}
	r, err := tc.On("keys44", nil)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, c := range r.Configs {
		have[c.Key] = c.MaybeValue()
	}
	for k, want := range map[string]string{"remote.storage.enable": "false", "local.retention.ms": "-2", "max.decompressed.message.bytes": "2147483639", "errors.deadletterqueue.group.enable": "false"} {
		if have[k] != want {
			t.Errorf("topic describe %s = %q, want %q", k, have[k], want)
		}
	}
}
