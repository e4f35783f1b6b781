package broker_test

// BenchmarkIdleFollowerFetch: what one round of an idle follower's
// incremental fetch costs its leader (issue 22's "an idle follower costs
// next to nothing"). Node 1 of a two-node cluster leads every partition of
// a topic (replicas [1, 2], SLUICE_IDLE_FETCH_PARTITIONS of them, 10,000
// by default); the benchmark fetches them as replica 2 would, through a
// fetch session opened with one full fetch, then times incremental fetches
// naming nothing, with nothing new anywhere (MaxWaitMillis 0, so no long
// poll: the figure is the per-round work, not the wait). The real node 2
// fetches its own session meanwhile, once per replica.fetch.wait.max.ms;
// allocs/op counts the whole process, so its rounds are in the figure.
//
//	go test ./broker -run '^$' -bench BenchmarkIdleFollowerFetch -benchmem -count 3 -cpuprofile /tmp/idle.prof

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

func BenchmarkIdleFollowerFetch(b *testing.B) {
	partitions := 10000
	if n, _ := strconv.Atoi(os.Getenv("SLUICE_IDLE_FETCH_PARTITIONS")); n > 0 {
		partitions = n
	}
	c := sluicetest.StartCluster(b, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const topic = "idle-fetch"
	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 240000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	for p := range partitions {
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(p), Replicas: []int32{1, 2}})
	}
	create.Topics = append(create.Topics, ct)
	if _, err := create.RequestWith(ctx, c.Client()); err != nil {
		b.Fatal(err)
	}
	var td struct {
		id     [16]byte
		epochs map[int32]int32
	}
	sluicetest.WaitFor(b, 4*time.Minute, func() error {
		md, err := c.Admin().Metadata(ctx, topic)
		if err != nil {
			return err
		}
		t := md.Topics[topic]
		full := 0
		td.id, td.epochs = t.ID, map[int32]int32{}
		for _, p := range t.Partitions {
			if p.Leader == 1 && len(p.ISR) == 2 {
				full++
				td.epochs[p.Partition] = p.LeaderEpoch
			}
		}
		if full != partitions {
			return fmt.Errorf("%d of %d partitions led by node 1 with a full ISR", full, partitions)
		}
		return nil
	})
	conn := dialRawConn(b, c.Node(1).Addr())
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes, req.SessionEpoch = 16, 10<<20, 0
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = -1, 2, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = td.id
	for p := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = int32(p), td.epochs[int32(p)], -1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	_, r := conn.do(req)
	full := r.(*kmsg.FetchResponse)
	if full.ErrorCode != 0 || full.SessionID == 0 {
		b.Fatalf("full fetch: error %d, session %d", full.ErrorCode, full.SessionID)
	}
	incr := kmsg.NewPtrFetchRequest()
	incr.Version, incr.MaxBytes, incr.SessionID = 16, 10<<20, full.SessionID
	incr.ReplicaID, incr.ReplicaState.ID, incr.ReplicaState.Epoch = -1, 2, -1
	// The cluster may still be settling (a high watermark or ISR moving
	// after the full fetch): fetch until an answer carries nothing.
	epoch := int32(0)
	fetch := func() *kmsg.FetchResponse {
		epoch++
		incr.SessionEpoch = epoch
		_, r := conn.do(incr)
		resp := r.(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			b.Fatalf("incremental fetch %d: error %d", epoch, resp.ErrorCode)
		}
		return resp
	}
	for i := 0; len(fetch().Topics) != 0; i++ {
		if i == 100 {
			b.Fatal("100 incremental fetches, none empty")
		}
	}
	busy := 0 // answers that carried a partition: not idle rounds
	b.ResetTimer()
	for range b.N {
		if len(fetch().Topics) != 0 {
			busy++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(partitions), "ns/partition")
	b.ReportMetric(float64(busy)/float64(b.N), "busy/op")
}
