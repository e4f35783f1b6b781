package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// UnregisterBroker's command removes a fenced registration decided at its
// epoch and nothing else; anything else changes nothing and says why.
func TestApplyUnregisterBroker(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(initClusterCmd{ClusterID: "c"})
	tf.mustApply(registerBrokerCmd{ID: 1, Host: "h", Port: 1})
	tf.mustApply(registerBrokerCmd{ID: 2, Host: "h", Port: 2})
	epoch := tf.image().Brokers[2].Epoch

	wantKafkaErr(t, tf.apply(unregisterBrokerCmd{ID: 9, Epoch: 1}), kerr.BrokerIDNotRegistered)
	wantKafkaErr(t, tf.apply(unregisterBrokerCmd{ID: 2, Epoch: epoch}), kerr.InvalidRequest) // not fenced
	tf.mustApply(fenceBrokerCmd{ID: 2, Epoch: epoch})
	wantKafkaErr(t, tf.apply(unregisterBrokerCmd{ID: 2, Epoch: epoch + 1}), kerr.StaleBrokerEpoch)
	if tf.image().Brokers[2] == nil {
		t.Fatal("a rejected unregister removed broker 2")
	}
	tf.mustApply(unregisterBrokerCmd{ID: 2, Epoch: epoch})
	img := tf.image()
	if img.Brokers[2] != nil || img.Brokers[1] == nil {
		t.Fatalf("brokers after unregistering 2: %v", img.Brokers)
	}
	// A restarted broker 2 registers afresh.
	tf.mustApply(registerBrokerCmd{ID: 2, Host: "h", Port: 2})
	if b := tf.image().Brokers[2]; b == nil || b.Fenced {
		t.Fatalf("broker 2 after registering again: %+v", b)
	}
}

// DirectoryID is stable for a node and differs between nodes, is a
// version 4 UUID and never starts with '-' in Kafka's text form.
func TestDirectoryIDStable(t *testing.T) {
	c := &Controller{fsm: newFSM(nil)}
	seen := map[[16]byte]bool{}
	for id := int32(0); id < 2000; id++ {
		d := c.DirectoryID(id)
		if d != c.DirectoryID(id) || seen[d] {
			t.Fatalf("node %d: directory id %x not stable or not unique", id, d)
		}
		seen[d] = true
		if d[6]>>4 != 4 || uuidString(d)[0] == '-' {
			t.Fatalf("node %d: directory id %s", id, uuidString(d))
		}
	}
}
