package controller

// Offline log directories (JBOD, KIP-858). A broker whose log directory
// fails keeps running; the replicas in that directory are offline on it.
// It reports them in every BrokerHeartbeat (OfflineLogDirs, the failed
// directories' ids as Kafka sends them, and the offline replicas, which
// sluice adds because its image does not record which directory holds
// each replica: Kafka's AssignReplicasToDirs and partition records'
// directories are not built). The active controller then writes a
// ReplicasOffline command (type 18): the broker's image record lists its
// offline directories and replicas, and each such partition changes as if
// that one replica's broker were fenced (removeReplica): it leaves the
// ISR, and a partition it led elects another in-sync replica (or goes
// offline, leader -1, when none is left and unclean election is off).
// While the record lists a replica, no election picks it, clean, unclean
// or from the ELR (electionPolicy.replicaOffline). A broker's new process
// registers afresh, which clears the lists: its directories are checked
// again at start.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// cmdReplicasOffline is the command type of replicasOfflineCmd.
const cmdReplicasOffline commandType = 18

// ReplicaRef names one partition by topic id.
type ReplicaRef struct {
	TopicID   [16]byte `json:"topicId"`
	Partition int32    `json:"partition"`
}

// OfflineReport is what a broker reports of its failed log directories:
// their ids and the replicas offline with them.
type OfflineReport struct {
	Dirs     [][16]byte
	Replicas []ReplicaRef
}

// replicasOfflineCmd records broker ID's offline directories and replicas
// (the whole lists, replacing the old ones) and applies the partition
// changes decided with them, if the broker still has Epoch.
type replicasOfflineCmd struct {
	ID       int32             `json:"id"`
	Epoch    int64             `json:"epoch"`
	Dirs     [][16]byte        `json:"dirs,omitempty"`
	Replicas []ReplicaRef      `json:"replicas,omitempty"`
	Changes  []partitionChange `json:"changes,omitempty"`
}

func (replicasOfflineCmd) commandType() commandType { return cmdReplicasOffline }

func applyReplicasOffline(b *imageBuilder, index uint64, payload []byte) error {
	var c replicasOfflineCmd
	decodePayload(cmdReplicasOffline, index, payload, &c)
	old, ok := b.base.Brokers[c.ID]
	if !ok {
		return fmt.Errorf("%w: broker %d is not registered", kerr.BrokerNotAvailable, c.ID)
	}
	if old.Epoch != c.Epoch {
		return fmt.Errorf("%w: broker %d has epoch %d, command was decided at %d", kerr.StaleBrokerEpoch, c.ID, old.Epoch, c.Epoch)
	}
	if err := checkPartitionChanges(b.base, c.Changes); err != nil {
		return err
	}
	nb := *old
	nb.OfflineLogDirs, nb.OfflineReplicas = c.Dirs, c.Replicas
	b.brokers()[c.ID] = &nb
	applyPartitionChanges(b, c.Changes)
	return nil
}

// offlineReplicaSet returns whether broker id's replica of partition p of
// topic topicID is offline in img, or nil when no broker has one.
func offlineReplicaSet(img *Image) func(topicID [16]byte, p, id int32) bool {
	type key struct {
		t  [16]byte
		p  int32
		id int32
	}
	var set map[key]bool
	for id, b := range img.Brokers {
		for _, r := range b.OfflineReplicas {
			if set == nil {
				set = map[key]bool{}
			}
			set[key{r.TopicID, r.Partition, id}] = true
		}
	}
	if set == nil {
		return nil
	}
	return func(topicID [16]byte, p, id int32) bool { return set[key{topicID, p, id}] }
}

// noteOfflineReport keeps the latest report of broker id and wakes the
// reconcile loop if it differs from what the image holds.
func (c *Controller) noteOfflineReport(id int32, r OfflineReport) {
	b := c.Image().Brokers[id]
	if b == nil || (sameRefs(b.OfflineReplicas, r.Replicas) && sameDirs(b.OfflineLogDirs, r.Dirs)) {
		return
	}
	c.offlineMu.Lock()
	if c.offlineReports == nil {
		c.offlineReports = map[int32]OfflineReport{}
	}
	c.offlineReports[id] = r
	c.offlineMu.Unlock()
	c.pokeReconcile()
}

// reconcileOfflineReplicas writes a ReplicasOffline command for every
// live broker whose report is not in the image yet. Decide must be held.
func (c *Controller) reconcileOfflineReplicas(ctx context.Context, down map[int32]bool) error {
	c.offlineMu.Lock()
	reports := c.offlineReports
	c.offlineReports = nil
	c.offlineMu.Unlock()
	var errs []error
	for id, r := range reports {
		img := c.Image()
		b := img.Brokers[id]
		if b == nil || b.Fenced || down[id] || (sameRefs(b.OfflineReplicas, r.Replicas) && sameDirs(b.OfflineLogDirs, r.Dirs)) {
			continue
		}
		changes := planReplicasOffline(img, id, r.Replicas, liveness(img, down), c.unclean(img), c.minISR(img))
		err := c.apply(ctx, replicasOfflineCmd{ID: id, Epoch: b.Epoch, Dirs: r.Dirs, Replicas: r.Replicas, Changes: changes})
		if err != nil {
			errs = append(errs, err)
			c.offlineMu.Lock()
			if c.offlineReports == nil {
				c.offlineReports = map[int32]OfflineReport{}
			}
			if _, newer := c.offlineReports[id]; !newer {
				c.offlineReports[id] = r // retried at the next pass
			}
			c.offlineMu.Unlock()
			continue
		}
		c.log.Info("broker reported offline log dirs", "broker", id, "dirs", len(r.Dirs), "replicas", len(r.Replicas), "partitions_changed", len(changes))
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// planReplicasOffline decides the changes of the partitions whose replica
// on broker id is offline: each as if id alone were fenced for it.
func planReplicasOffline(img *Image, id int32, refs []ReplicaRef, live liveFunc, unclean func(*Topic) bool, minISR func(*Topic) int) []partitionChange {
	policy := topicPolicy(img, live, unclean, minISR)
	var changes []partitionChange
	for _, r := range refs {
		t := img.TopicsByID[r.TopicID]
		if t == nil || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
			continue
		}
		pol := policy(t)
		base := pol.live
		pol.live = func(b int32) bool { return b != id && base(b) }
		if ch, ok := removeReplica(t.ID, t.Partitions[r.Partition], id, pol); ok {
			changes = append(changes, ch)
		}
	}
	return changes
}

func sameRefs(a, b []ReplicaRef) bool { return slices.Equal(a, b) }

func sameDirs(a, b [][16]byte) bool { return slices.Equal(a, b) }
