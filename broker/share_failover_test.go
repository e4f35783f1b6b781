package broker_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/sluicetest"
)

// Share-partitions and partition leadership on three nodes: a follower
// answers ShareFetch with NOT_LEADER_OR_FOLLOWER naming the leader and its
// endpoint; when the leader dies, the new leader serves the group again,
// redelivers what was not acknowledged (at least once) and, reading the
// state the old leader wrote to the share coordinator (share/doc.go),
// never what was.
func TestShareFetchLeaderFailover(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic, group = "sq-failover", "g-failover"
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	createAssigned(t, cl, topic, []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	before := waitState(t, cl, topic, "full ISR", isrLen(3))
	mustAlterGroupConfigs(t, cl, group, "set:share.auto.offset.reset=earliest")
	if err := produce(cl, topic, valuesN("a", 10)...); err != nil {
		t.Fatal(err)
	}
	leader := int(before.leader)
	follower := leader%3 + 1
	id := topicID(t, c.Node(leader), topic)

	fm := newShareFetcher(t, c.Node(follower), group, "m-f", id)
	resp := fm.fetch(fm.fetchReq(0))
	p := oneSharePartition(t, resp)
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != before.leader || p.CurrentLeader.LeaderEpoch != before.epoch {
		t.Fatalf("follower answered %v, leader %d epoch %d; want NOT_LEADER_OR_FOLLOWER naming %d epoch %d",
			kerr.ErrorForCode(p.ErrorCode), p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, before.leader, before.epoch)
	}
	if len(resp.NodeEndpoints) != 1 || resp.NodeEndpoints[0].NodeID != before.leader {
		t.Fatalf("NodeEndpoints %+v, want the leader %d", resp.NodeEndpoints, before.leader)
	}

	lm := newShareFetcher(t, c.Node(leader), group, "m1", id)
	p = oneSharePartition(t, lm.fetch(lm.fetchReq(5000))) // earliest: the opening fetch delivers
	if got := acquiredString(p); got != "0-9/1 " {
		t.Fatalf("leader delivered %q, want 0-9", got)
	}
	if r := lm.acknowledge(lm.epoch, shareAckRange{0, 4, []int8{1}}); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %+v", r)
	}

	c.Kill(leader)
	after := waitState(t, cl, topic, "new leader", func(st partitionState) bool {
		return st.leader >= 0 && st.leader != before.leader && st.epoch > before.epoch
	})
	nm := newShareFetcher(t, c.Node(int(after.leader)), group, "m1", id)
	delivered := map[int64]bool{}
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		resp := nm.fetch(nm.fetchReq(500))
		if resp.ErrorCode != 0 {
			return fmt.Errorf("new leader %d: %v", after.leader, kerr.ErrorForCode(resp.ErrorCode))
		}
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 {
					return fmt.Errorf("new leader %d: %v", after.leader, kerr.ErrorForCode(p.ErrorCode))
				}
				for _, a := range p.AcquiredRecords {
					for o := a.FirstOffset; o <= a.LastOffset; o++ {
						if o <= 4 {
							t.Fatalf("offset %d, acknowledged before the failover, delivered again", o)
						}
						delivered[o] = true
					}
				}
			}
		}
		for o := int64(5); o <= 9; o++ {
			if !delivered[o] {
				return errors.New("unacknowledged records not redelivered yet")
			}
		}
		return nil
	})
}
