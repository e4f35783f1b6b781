package controller

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestClusterFormsAndReplicatesMetadata(t *testing.T) {
	start := time.Now()
	tc := newTestCluster(t, 3, nil)
	t.Logf("3 voters opened in %v", time.Since(start))
	leaderID := tc.leader(5 * time.Second)

	tc.waitAllImages(5*time.Second, "three unfenced brokers", func(img *Image) bool {
		return len(img.UnfencedBrokers()) == 3
	})
	clusterID := tc.node(leaderID).ClusterID()
	for id, c := range tc.running() {
		if c.ClusterID() != clusterID {
			t.Fatalf("node %d cluster id %s, leader has %s", id, c.ClusterID(), clusterID)
		}
		if c.GossipAddr() == "" {
			t.Fatalf("node %d has no gossip address", id)
		}
	}

	// Admin calls on a follower answer NOT_CONTROLLER; the broker forwards
	// them to ActiveControllerID's broker.
	for id, c := range tc.running() {
		if id == leaderID {
			continue
		}
		res := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "t", NumPartitions: 3, ReplicationFactor: 3}}, false)
		wantKafkaErr(t, res[0].Err, kerr.NotController)
	}
	res := tc.node(leaderID).CreateTopics(testCtx(t), []CreateTopic{{Name: "t", NumPartitions: 3, ReplicationFactor: 3}}, false)
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	tc.waitAllImages(5*time.Second, "topic t", func(img *Image) bool {
		topic := img.Topics["t"]
		return topic != nil && topic.ID == res[0].TopicID && len(topic.Partitions) == 3
	})
	leaders := map[int32]bool{}
	for _, p := range tc.node(leaderID).Image().Topics["t"].Partitions {
		if len(p.Replicas) != 3 || len(p.ISR) != 3 {
			t.Fatalf("partition %+v, want 3 replicas all in sync", *p)
		}
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("3 partitions led by %v, want 3 different brokers", leaders)
	}
}

// TestClusterControllerCrashFailover crashes the active controller and
// checks that another voter takes over, fences the dead broker and moves
// the leadership of its partitions with new epochs.
func TestClusterControllerCrashFailover(t *testing.T) {
	for _, crash := range []bool{true, false} {
		name := map[bool]string{true: "crash", false: "graceful close"}[crash]
		t.Run(name, func(t *testing.T) {
			tc := newTestCluster(t, 3, nil)
			old := tc.leader(5 * time.Second)
			topic := mustCreateRF(t, tc.node(old), "t", 6, 3)
			tc.waitAllImages(5*time.Second, "topic t", func(img *Image) bool { return img.Topics["t"] != nil })
			before := tc.node(old).Image().Topics["t"]

			start := time.Now()
			tc.stop(old, crash)
			next := tc.leader(5 * time.Second)
			elected := time.Since(start)
			if next == old {
				t.Fatalf("stopped node %d still controller", old)
			}
			tc.waitAllImages(5*time.Second, "dead broker fenced and partitions moved", func(img *Image) bool {
				if b := img.Brokers[old]; b == nil || !b.Fenced {
					return false
				}
				for _, p := range img.Topics["t"].Partitions {
					if p.Leader == old || contains(p.ISR, old) {
						return false
					}
				}
				return true
			})
			t.Logf("%s of controller %d: controller %d elected after %v, broker fenced and leadership moved after %v",
				name, old, next, elected, time.Since(start))

			after := tc.node(next).Image().Topics["t"]
			if after.ID != topic {
				t.Fatal("topic id changed")
			}
			for i, p := range after.Partitions {
				b := before.Partitions[i]
				if b.Leader == old {
					if p.LeaderEpoch != b.LeaderEpoch+1 || p.PartitionEpoch != b.PartitionEpoch+1 || p.Leader == -1 {
						t.Fatalf("partition %d led by %d: %+v -> %+v, want a new leader with both epochs +1", i, old, *b, *p)
					}
					if want := firstOther(b.Replicas, old); p.Leader != want {
						t.Fatalf("partition %d: leader %d, want first other replica %d of %v", i, p.Leader, want, b.Replicas)
					}
				} else if p.Leader != b.Leader || p.LeaderEpoch != b.LeaderEpoch || p.PartitionEpoch != b.PartitionEpoch+1 {
					t.Fatalf("partition %d: %+v -> %+v, want same leader and epoch, partition epoch +1", i, *b, *p)
				}
			}
			// The new controller decides.
			mustCreateRF(t, tc.node(next), "after-failover", 1, 2)
		})
	}
}

func mustCreateRF(t *testing.T, c *Controller, name string, partitions int32, rf int16) [16]byte {
	t.Helper()
	res := c.CreateTopics(testCtx(t), []CreateTopic{{Name: name, NumPartitions: partitions, ReplicationFactor: rf}}, false)
	if res[0].Err != nil {
		t.Fatalf("create %s: %v", name, res[0].Err)
	}
	return res[0].TopicID
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func firstOther(replicas []int32, not int32) int32 {
	for _, r := range replicas {
		if r != not {
			return r
		}
	}
	return -1
}
