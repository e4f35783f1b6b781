package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestReplicationProducerStateFailover checks that followers keep the
// producer table: after the leader dies, the new leader still recognises a
// retried idempotent batch and still holds read_committed consumers before
// an open transaction until its marker arrives.
func TestReplicationProducerStateFailover(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, noTxnVerification)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	createAssigned(t, cl, "pstate", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	before := waitState(t, cl, "pstate", "full ISR", isrLen(3))
	leader := pinnedV1(t, c, int(before.leader))
	id := knownTopic(t, leader, "pstate").TopicID

	// The leader answers NOT_LEADER_OR_FOLLOWER until its log opener has
	// installed the replica (reconcile_open.go), as a client would find:
	// the batch is sent again until the replica is there.
	var off int64
	var code int16
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		off, code = rawProduce(t, leader, "pstate", id, recordBatch(9300, 0, 0, true, "t1", "t2"))
		if code == kerr.NotLeaderForPartition.Code {
			return kerr.NotLeaderForPartition
		}
		return nil
	})
	if code != 0 || off != 0 {
		t.Fatalf("transactional batch: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	idem := recordBatch(9400, 0, 0, false, "i1", "i2", "i3")
	if off, code := rawProduce(t, leader, "pstate", id, idem); code != 0 || off != 2 {
		t.Fatalf("idempotent batch: offset %d, %v", off, kerr.ErrorForCode(code))
	}

	c.Kill(int(before.leader))
	after := waitState(t, cl, "pstate", "new leader", func(st partitionState) bool {
		return st.leader >= 0 && st.leader != before.leader && st.epoch > before.epoch
	})
	newLeader := pinnedV1(t, c, int(after.leader))
	if off, code := rawProduce(t, newLeader, "pstate", id, idem); code != 0 || off != 2 {
		t.Fatalf("retry on the new leader: offset %d, %v; want the original offset 2", off, kerr.ErrorForCode(code))
	}
	if got := listLatest(t, newLeader, "pstate", 1); got != 0 {
		t.Fatalf("read_committed latest %d on the new leader, want 0 (transaction open at 0)", got)
	}
	if code := writeMarker(t, newLeader, "pstate", 9300, 0, true, 1); code != 0 {
		t.Fatalf("commit marker on the new leader: %v", kerr.ErrorForCode(code))
	}
	if got := listLatest(t, newLeader, "pstate", 1); got != 6 {
		t.Fatalf("read_committed latest %d after the commit, want 6", got)
	}
}

// pinnedV1 is pinned with Produce capped at v11: a v12+ transactional
// Produce has the leader add its partition to the producer's transaction
// (KIP-890 part 2) whatever transaction.partition.verification.enable
// says, and the raw batches here belong to no coordinator's transaction.
func pinnedV1(t *testing.T, c *sluicetest.Cluster, id int) kmsg.Requestor {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(id).Addr()), kgo.RequestRetries(0), txnV1Versions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl.SeedBrokers()[0]
}
