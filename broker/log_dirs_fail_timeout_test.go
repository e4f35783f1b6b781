package broker_test

// log.dir.failure.timeout.ms: a node whose failed log dir the controller
// does not acknowledge in time shuts itself down (broker/log_dirs_fail.go).

import (
	"errors"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestLogDirFailureUnacknowledgedShutsDown: a node loses a log dir while
// it reaches the controller, which acknowledges it (the node leaves the
// ISRs of that dir's replicas), and the node is still up past
// log.dir.failure.timeout.ms; cut from the raft quorum (so from the
// controller) it loses its other dir, the controller cannot learn it, and
// once the timeout has passed the node shuts itself down, as Kafka's
// broker does: its Kafka listener refuses connections.
func TestLogDirFailureUnacknowledgedShutsDown(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, jbodDirs, "log.flush.offset.checkpoint.interval.ms=200", "log.dir.failure.timeout.ms=2000")
	c.WaitForBrokers(3)
	victim := 1
	if c.Controller() == victim {
		victim = 2
	}
	var others []int32
	for id := 1; id <= 3; id++ {
		if id != victim {
			others = append(others, int32(id))
		}
	}
	cl := c.Client()
	const topic = "failing-alone"
	replicas := make([][]int32, 4)
	for i := range replicas {
		replicas[i] = append([]int32{int32(victim)}, others...)
	}
	createPlaced(t, cl, topic, replicas, nil)
	for p := int32(0); p < 4; p++ {
		c.WaitForISR(topic, p, 3)
	}
	n := c.Node(victim)
	d1, d2 := jbodDirsOf(n)
	addr := n.Addr()
	fail := func(d string) {
		t.Helper()
		if err := os.Rename(d, d+".gone"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d, []byte("not a directory"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	alive := func() error {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	}

	// Acknowledged: d1 fails while the node reaches the controller, which
	// takes the node out of the ISRs of d1's replicas; the node is still
	// up well past the timeout.
	fail(d1)
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		md, err := topicMetadata(cl, topic)
		if err != nil {
			return err
		}
		for _, p := range md.Partitions {
			if !slices.Contains(p.ISR, int32(victim)) {
				return nil
			}
		}
		return errors.New("the victim is still in every ISR")
	})
	time.Sleep(3 * time.Second)
	if err := alive(); err != nil {
		t.Fatalf("node %d stopped after an acknowledged log dir failure: %v", victim, err)
	}

	// Not acknowledged: cut from the controller, d2 fails too.
	for _, o := range others {
		c.CutRaft(victim, int(o))
	}
	fail(d2)
	sluicetest.WaitFor(t, 60*time.Second, func() error {
		if alive() != nil {
			return nil
		}
		return errors.New("the node still accepts connections")
	})
}
