package broker_test

// KIP-966's acceptance scenario on three nodes: the ISR of a partition
// with min.insync.replicas=2 shrinks to its last member, which then loses
// its disk (killed, its data deleted, restarted). The controller must not
// elect the empty replica: the partition stays offline, with the replica
// that left the ISR below min ISR as its eligible leader replica, until
// that replica returns and leads with every acknowledged record.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// elrState is a partition as DescribeTopicPartitions shows it.
type elrState struct {
	leader              int32
	isr, elr, lastKnown []int32
}

// describeELR asks for partition 0 of topic with DescribeTopicPartitions.
func describeELR(cl *kgo.Client, topic string) (elrState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	req.ResponsePartitionLimit = 10
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return elrState{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) == 0 {
		return elrState{}, fmt.Errorf("no partition in %+v", resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	return elrState{p.LeaderID, p.ISR, p.EligibleLeaderReplicas, p.LastKnownELR}, nil
}

// waitELR waits until partition 0 of topic is in a state ok accepts.
func waitELR(t *testing.T, cl *kgo.Client, topic, what string, ok func(elrState) bool) elrState {
	t.Helper()
	var st elrState
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		var err error
		if st, err = describeELR(cl, topic); err != nil {
			return err
		}
		if !ok(st) {
			return fmt.Errorf("waiting for %s: leader %d ISR %v ELR %v last known ELR %v", what, st.leader, st.isr, st.elr, st.lastKnown)
		}
		return nil
	})
	return st
}

// elrFinalized reports whether the cluster finalized
// eligible.leader.replicas.version at 1 or more, as ApiVersions says.
func elrFinalized(t *testing.T, cl *kgo.Client) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "eligible.leader.replicas.version" {
			return f.MaxVersionLevel >= 1
		}
	}
	return false
}

func TestELRLastISRMemberLosesItsDisk(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	all := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	if !elrFinalized(t, all) {
		t.Skip("eligible.leader.replicas.version is not finalized at 1")
	}
	const topic = "elr"
	createAssigned(t, all, topic, []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, all, topic, "full ISR on leader 1", func(st partitionState) bool { return st.leader == 1 && len(st.isr) == 3 })
	acked := valuesN("a", 10)
	if err := produce(all, topic, acked...); err != nil {
		t.Fatal(err)
	}

	// 3 stops cleanly: the ISR [1 2] is still min ISR, no ELR.
	c.Stop(3)
	waitELR(t, all, topic, "ISR [1 2]", func(st elrState) bool {
		return slices.Equal(sorted(st.isr), []int32{1, 2}) && len(st.elr) == 0
	})
	acked = append(acked, valuesN("b", 10)...)
	if err := produce(all, topic, acked[10:]...); err != nil {
		t.Fatal(err)
	}

	// 2 stops cleanly: the ISR falls below min ISR and 2, which holds
	// every acknowledged record, becomes an eligible leader replica.
	c.Stop(2)
	waitELR(t, all, topic, "ISR [1], ELR [2]", func(st elrState) bool {
		return st.leader == 1 && slices.Equal(st.isr, []int32{1}) && slices.Equal(st.elr, []int32{2})
	})

	// 1, the last ISR member, is killed and loses its disk (everything
	// but the metadata log, so the node rejoins the controller quorum).
	c.Kill(1)
	dir := c.Node(1).Dir
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "__cluster_metadata-0" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}

	// 1 and 3 return together (with 2 down they are the controller
	// quorum). 1 restarted uncleanly and leaves the ELR; 3 is not
	// eligible: the partition stays offline, 2 its only eligible leader.
	restartTogether(c, 1, 3)
	waitELR(t, all, topic, "offline with ELR [2]", func(st elrState) bool {
		return st.leader == -1 && len(st.isr) == 0 && slices.Equal(st.elr, []int32{2})
	})
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := describeELR(all, topic); err == nil && st.leader != -1 {
			t.Fatalf("a replica without the acknowledged records was elected: leader %d ISR %v ELR %v", st.leader, st.isr, st.elr)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// 2 returns and is elected from the ELR; the others catch up from it
	// and the ELR empties once the ISR is back at min ISR.
	c.Restart(2)
	waitELR(t, all, topic, "leader 2 with a full ISR", func(st elrState) bool {
		return st.leader == 2 && len(st.isr) == 3 && len(st.elr) == 0 && len(st.lastKnown) == 0
	})
	got := consumePartition0(t, c, topic, len(acked))
	if !slices.Equal(got, acked) {
		t.Fatalf("consumed %v, want every acknowledged record %v", got, acked)
	}
}

// restartTogether restarts nodes at once, for nodes that form the
// controller quorum only together.
func restartTogether(c *sluicetest.Cluster, ids ...int) {
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Restart(id)
		}()
	}
	wg.Wait()
}

// sorted returns a sorted copy of ids.
func sorted(ids []int32) []int32 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}
