package broker_test

// The broker applies each metadata command by looking only at what it
// changed (reconcile.go). These tests check, through what a producer sees,
// that a change that does not touch a partition's own state still reaches
// it: a topic config, and a dynamic broker default every topic inherits.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// produceAllAcks writes one record to topic with acks=all and no retries
// of NOT_ENOUGH_REPLICAS beyond the first.
func produceAllAcks(n *sluicetest.Node, topic string) error {
	cl := n.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(1), kgo.MetadataMinAge(50*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

func TestReconcileConfigChangesReachPartitions(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "own", 4, nil)
	createTopic(t, n, "inherits", 4, nil)
	for _, topic := range []string{"own", "inherits"} {
		if err := produceAllAcks(n, topic); err != nil {
			t.Fatalf("%s: acks=all with min.insync.replicas 1: %v", topic, err)
		}
	}
	adm := n.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A topic config: only that topic's partitions need two replicas.
	two := "2"
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: &two}}, "own")
	if err == nil {
		_, err = resp.On("own", nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if err := produceAllAcks(n, "own"); !errors.Is(err, kerr.NotEnoughReplicas) {
			return errors.New("acks=all to a one-replica topic with min.insync.replicas 2 not refused")
		}
		return nil
	})
	if err := produceAllAcks(n, "inherits"); err != nil {
		t.Fatalf("the other topic's partitions changed too: %v", err)
	}

	// The cluster-wide dynamic default: every topic without its own
	// setting inherits it.
	bresp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: &two}})
	if err == nil {
		for _, r := range bresp {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if err := produceAllAcks(n, "inherits"); !errors.Is(err, kerr.NotEnoughReplicas) {
			return errors.New("acks=all under a cluster default min.insync.replicas 2 not refused")
		}
		return nil
	})
}
