package broker_test

// Replication of many partitions at once, as a client sees it: a follower
// that dies and comes back leaves and rejoins the ISR of every partition it
// holds, with the leaders' ISR proposals batched into a few AlterPartition
// requests (replica_isr.go), and its logs end up identical to the leaders'.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// isrCounts asks Metadata for topic and returns how many partitions have
// a leader and a full ISR of want replicas, and how many list id in their
// ISR.
func isrCounts(cl *kgo.Client, topic string, want int, id int32) (full, with int, err error) {
	mt, err := topicMetadata(cl, topic)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range mt.Partitions {
		if p.Leader >= 0 && len(p.ISR) == want {
			full++
		}
		if slices.Contains(p.ISR, id) {
			with++
		}
	}
	return full, with, nil
}

// produceToEach writes one record to every partition of topic.
func produceToEach(cl *kgo.Client, topic string, partitions int, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, partitions)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i), Value: []byte(value)}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

func TestReplicationRestartedFollowerRejoinsManyISRs(t *testing.T) {
	const (
		topic      = "many"
		partitions = 200
	)
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	minISR := "2"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	cancel()
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	waitISRs := func(what string, ok func(full, with int) bool) {
		t.Helper()
		sluicetest.WaitFor(t, 30*time.Second, func() error {
			full, with, err := isrCounts(cl, topic, 3, 3)
			if err != nil {
				return err
			}
			if !ok(full, with) {
				return fmt.Errorf("%s: %d of %d partitions with a full ISR, node 3 in %d ISRs", what, full, partitions, with)
			}
			return nil
		})
	}
	waitISRs("created", func(full, _ int) bool { return full == partitions })
	if err := produceToEach(cl, topic, partitions, "a"); err != nil {
		t.Fatal(err)
	}

	// A crash, not a controlled shutdown: the leaders shrink the ISRs
	// themselves once node 3 stops fetching.
	c.Kill(3)
	waitISRs("node 3 dropped", func(_, with int) bool { return with == 0 })
	if err := produceToEach(cl, topic, partitions, "b"); err != nil {
		t.Fatalf("acks=all with ISR 2 >= min.insync.replicas 2: %v", err)
	}

	c.Restart(3)
	waitISRs("node 3 back", func(full, _ int) bool { return full == partitions })
	// Every replica holds both records, below its high watermark.
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		for p := range int32(partitions) {
			for id := 1; id <= 3; id++ {
				leo, hw, ok := c.Node(id).Broker.ReplicaOffsets(topic, p)
				if !ok || leo != 2 || hw != 2 {
					return fmt.Errorf("node %d partition %d: log end %d, high watermark %d (replica %v), want 2 and 2", id, p, leo, hw, ok)
				}
			}
		}
		return nil
	})
	// The rejoined ISRs are usable: acks=all writes to every partition
	// succeed and are committed (the end offsets clients list are 3).
	if err := produceToEach(cl, topic, partitions, "c"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range int32(partitions) {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shards := cl.RequestSharded(ctx, req)
		n := 0
		for _, sh := range shards {
			if sh.Err != nil {
				return sh.Err
			}
			for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode != 0 || p.Offset != 3 {
						return fmt.Errorf("partition %d: end offset %d, error %d", p.Partition, p.Offset, p.ErrorCode)
					}
					n++
				}
			}
		}
		if n != partitions {
			return fmt.Errorf("%d of %d partitions answered", n, partitions)
		}
		return nil
	})
}
