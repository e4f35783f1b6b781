package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestTopicFlushPolicy: a topic created with flush.messages is fsynced by
// the produce that reaches it, and flush.ms set on a topic with
// IncrementalAlterConfigs (kadm) is accepted and fsyncs the log once that
// long has passed; with the defaults (never) the recovery point stays
// where it was. The broker's log.flush.interval.messages, altered as the
// cluster default, applies to a topic without its own. The recovery point is what an fsync moves.
func TestTopicFlushPolicy(t *testing.T) {
	n := sluicetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recoveryPoint := func(topic string) int64 {
		rp, ok := n.Broker.RecoveryPoint(topic, 0)
		if !ok {
			t.Fatalf("no replica of %s-0", topic)
		}
		return rp
	}

	createTopic(t, n, "flush-messages", 1, map[string]*string{"flush.messages": ptr("3")})
	createTopic(t, n, "flush-default", 1, nil)
	cl := n.Client()
	defer cl.Close()
	produceKeyed(t, cl, "flush-messages", 0, 3)
	produceKeyed(t, cl, "flush-default", 0, 2)
	if got := recoveryPoint("flush-messages"); got != 3 {
		t.Fatalf("flush.messages=3, 3 records produced: recovery point %d, want 3", got)
	}
	if got := recoveryPoint("flush-default"); got != 0 {
		t.Fatalf("default flush policy: recovery point %d after a produce, want 0", got)
	}

	adm := n.Admin()
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "flush.ms", Value: ptr("100")}}, "flush-default")
	if err == nil {
		_, err = resps.On("flush-default", nil)
	}
	if err == nil {
		err = resps[0].Err
	}
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs flush.ms=100: %v (%s)", err, resps[0].ErrMessage)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if got := recoveryPoint("flush-default"); got != 2 {
			return fmt.Errorf("flush.ms=100: recovery point %d, want 2", got)
		}
		return nil
	})

	// The broker synonym, altered as the cluster default, applies to a
	// topic that sets nothing.
	createTopic(t, n, "flush-broker", 1, nil)
	bresps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.flush.interval.messages", Value: ptr("1")}})
	if err == nil {
		err = bresps[0].Err
	}
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs log.flush.interval.messages=1: %v", err)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		produceKeyed(t, cl, "flush-broker", 0, 1)
		if end, _, _ := n.Broker.ReplicaOffsets("flush-broker", 0); recoveryPoint("flush-broker") != end {
			return fmt.Errorf("log.flush.interval.messages=1: recovery point %d, log end %d", recoveryPoint("flush-broker"), end)
		}
		return nil
	})
}
