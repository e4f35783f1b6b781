package broker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/sluicetest"
)

// franz-go's share consumer (kgo.ShareGroup: ShareGroupHeartbeat, ShareFetch
// v2, ShareAcknowledge v2) consuming a topic from one real node with two
// members, one of which leaves half way: every record is delivered and
// accepted, and what the leaver held goes to the other member.
func TestShareGroupKgoConsumers(t *testing.T) {
	broker.ForceShareGroups(t)
	n := sluicetest.Start(t)
	const topic, group, total = "sq-kgo", "sg-kgo", 600
	createTopic(t, n, topic, 3, nil)
	mustAlterGroupConfigs(t, n.Client(), group, "set:share.auto.offset.reset=earliest")

	producer := n.Client(kgo.DefaultProduceTopic(topic))
	t.Cleanup(producer.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for i := range total {
		rs = append(rs, kgo.StringRecord(fmt.Sprint(i)))
	}
	if err := producer.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// The leaver stops once a third of the records are in, the stayer
	// once all are: each polls with a context that is cancelled then.
	leaverCtx, leaverDone := context.WithCancel(ctx)
	allCtx, allDone := context.WithCancel(ctx)
	defer leaverDone()
	defer allDone()
	var mu sync.Mutex
	seen := map[string]int{}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	consume := func(ctx context.Context, cl *kgo.Client) {
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 50)
			for _, r := range fs.Records() {
				r.Ack(kgo.AckAccept)
				mu.Lock()
				seen[string(r.Value)]++
				n := len(seen)
				mu.Unlock()
				if n >= total/3 {
					leaverDone()
				}
				if n >= total {
					allDone()
				}
			}
		}
	}

	leaver := n.Client(kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	stayer := n.Client(kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	t.Cleanup(stayer.Close)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		consume(leaverCtx, leaver)
		leaver.Close()
	}()
	go func() {
		defer wg.Done()
		consume(allCtx, stayer)
	}()
	wg.Wait()
	if got := count(); got != total {
		t.Fatalf("%d of %d records delivered", got, total)
	}
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("%d records delivered, %d redeliveries", total, dups)
}
