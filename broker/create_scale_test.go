package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestCreateScale measures, on a three-node in-process cluster, creating
// SLUICE_CREATE_SCALE topics of 1,000 partitions at RF 3 one CreateTopics
// each (as the harness's scale workload does), and the time until every
// partition takes a record (acks=1): the time to create, then to serve;
// and how long a topic config change sent during each creation waits.
// A measurement, not an assertion; skipped unless the variable is set.
//
//	SLUICE_CREATE_SCALE=5 go test ./broker -run TestCreateScale -count=1 -v
func TestCreateScale(t *testing.T) {
	topics, _ := strconv.Atoi(os.Getenv("SLUICE_CREATE_SCALE"))
	if topics <= 0 {
		t.Skip("set SLUICE_CREATE_SCALE to a number of topics of 1,000 partitions")
	}
	const partitions = 1000
	c := sluicetest.StartCluster(t, 3)
	c.WaitForBrokers(3)
	adm := c.Admin()
	adm.SetTimeoutMillis(120_000)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// A small topic whose config changes while each big topic is being
	// created: how long a metadata change waits behind a creation.
	if resp, err := adm.CreateTopic(ctx, 1, 3, nil, "side"); err != nil || resp.Err != nil {
		t.Fatalf("create side: %v %v", err, resp.Err)
	}
	var alterWait time.Duration
	start := time.Now()
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%d", i)
		altered := make(chan time.Duration, 1)
		go func() {
			time.Sleep(500 * time.Millisecond)
			v := strconv.Itoa(i + 2)
			began := time.Now()
			_, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: &v}}, "side")
			if err != nil {
				t.Errorf("alter side: %v", err)
			}
			altered <- time.Since(began)
		}()
		resp, err := adm.CreateTopic(ctx, partitions, 3, nil, names[i])
		alterWait = max(alterWait, <-altered)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			err = nil // created by an earlier try of the same request
		}
		if err != nil {
			t.Fatalf("create %s: %v", names[i], err)
		}
	}
	created := time.Since(start)
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(1<<30), kgo.RetryTimeout(30*time.Minute),
		kgo.MaxBufferedRecords(topics*partitions+1))
	defer cl.Close()
	var recs []*kgo.Record
	for _, name := range names {
		for p := range int32(partitions) {
			recs = append(recs, &kgo.Record{Topic: name, Partition: p, Value: []byte("v")})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to every partition: %v", err)
	}
	served := time.Since(start)
	t.Logf("%d topics x %d partitions at RF 3 on 3 nodes: CreateTopics answered after %.1f s, every partition took a record after %.1f s; an AlterConfigs sent 0.5 s into each creation took at most %.2f s",
		topics, partitions, created.Seconds(), served.Seconds(), alterWait.Seconds())
}
