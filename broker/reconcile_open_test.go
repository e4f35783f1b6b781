package broker_test

// A node opens the logs of its new replicas off the metadata apply path
// (reconcile_open.go) and serves a partition only once its log is open.
// These tests hold the opens back and check what a client observes: the
// partition leader answers NOT_LEADER_OR_FOLLOWER meanwhile, a producer's
// retries then land, and a topic deleted before its logs were opened
// leaves no directory behind.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// holdOpens makes n's log opener wait, before opening any log of topic,
// until the returned release is called.
func holdOpens(t *testing.T, n *sluicetest.Node, topic string) (release func()) {
	gate := make(chan struct{})
	n.Broker.SetBeforeLogOpen(func(tpc string, _ int32) {
		if tpc == topic {
			<-gate
		}
	})
	released := false
	release = func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(release)
	return release
}

// createTopicShortWait creates topic with partitions through a CreateTopics
// of a 300 ms timeout, which bounds how long the node waits for its logs.
func createTopicShortWait(t *testing.T, n *sluicetest.Node, topic string, partitions int32) [16]byte {
	t.Helper()
	cl := n.Client()
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 300
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	return resp.Topics[0].TopicID
}

func TestProduceRightAfterCreateWhileLogsOpen(t *testing.T) {
	n := sluicetest.Start(t)
	release := holdOpens(t, n, "slow")
	id := createTopicShortWait(t, n, "slow", 3)

	// The metadata names this node the leader; the log is not open yet.
	cl := n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if got := produceOneRecord(t, ctx, cl, "slow", id); !errors.Is(got, kerr.NotLeaderForPartition) {
		t.Fatalf("produce before the log is open: %v, want NOT_LEADER_OR_FOLLOWER", got)
	}

	// A producer sent now retries until the logs are open.
	done := make(chan error, 1)
	go func() {
		var errs []error
		for p := int32(0); p < 3; p++ {
			errs = append(errs, cl.ProduceSync(ctx, &kgo.Record{Topic: "slow", Partition: p, Value: []byte("v")}).FirstErr())
		}
		done <- errors.Join(errs...)
	}()
	time.Sleep(300 * time.Millisecond)
	release()
	if err := <-done; err != nil {
		t.Fatalf("produce after the logs opened: %v", err)
	}
}

func TestDeleteTopicWhileLogsOpen(t *testing.T) {
	n := sluicetest.Start(t)
	release := holdOpens(t, n, "doomed")
	createTopicShortWait(t, n, "doomed", 8)

	adm := n.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, "doomed")
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	release() // the opens that were held back now run, for a deleted topic

	sluicetest.WaitFor(t, 10*time.Second, func() error {
		entries, err := os.ReadDir(n.Dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "doomed-") {
				return fmt.Errorf("%s is still in the log dir", e.Name())
			}
		}
		return nil
	})
	// The name is free again, and the new topic is served.
	n.Broker.SetBeforeLogOpen(nil)
	createTopic(t, n, "doomed", 2, nil)
	pcl := n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer pcl.Close()
	if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: "doomed", Partition: 1, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce to the recreated topic: %v", err)
	}
}

// TestProduceRightAfterAutoCreate: a client that asks for a missing topic
// with auto-creation allowed, asks again once the first answer is in (as
// every client does, kafka-go's Conn.DialLeader among them), and produces
// at once to the partition this node leads must be served, not answered
// NOT_LEADER_OR_FOLLOWER because the new log was still being opened: the
// answer to the Metadata that created the topic waits for this node's new
// replicas, as CreateTopics does. The log's open is held back 300 ms.
func TestProduceRightAfterAutoCreate(t *testing.T) {
	n := sluicetest.Start(t)
	release := holdOpens(t, n, "auto")
	go func() {
		time.Sleep(300 * time.Millisecond)
		release()
	}()
	cl := n.Client()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var id [16]byte
	for attempt := 0; ; attempt++ {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("auto")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if mt := resp.Topics[0]; mt.ErrorCode == 0 && len(mt.Partitions) == 1 && mt.Partitions[0].ErrorCode == 0 {
			id = mt.TopicID
			break
		}
		if attempt == 1 {
			t.Fatalf("the topic is not in the second Metadata answer: %+v", resp.Topics[0])
		}
	}

	if err := produceOneRecord(t, ctx, cl, "auto", id); err != nil {
		t.Fatalf("produce right after the topic was auto-created: %v", err)
	}
}

// produceOneRecord sends one Produce request (acks=1) of one record to
// partition 0 of topic, named by name up to v12 and by id from v13, and
// returns the partition's error (nil when it was served). Unlike a kgo
// producer it does not retry, so the test sees the first answer.
func produceOneRecord(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, id [16]byte) error {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, keyedBatch(keyedRecord{key: []byte("k"), value: []byte("v")})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}
