package broker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// consumerGroupNode starts a node whose KIP-848 members heartbeat often, so
// assignments move quickly.
func consumerGroupNode(t *testing.T) *sluicetest.Node {
	return sluicetest.Start(t,
		"group.consumer.min.heartbeat.interval.ms=50",
		"group.consumer.heartbeat.interval.ms=100",
	)
}

// ownership tracks which client holds which partition according to the
// clients' own assign and revoke callbacks, and remembers any partition a
// client was given while another still held it.
type ownership struct {
	mu      sync.Mutex
	owner   map[int32]int
	overlap []string
}

func (o *ownership) assigned(client int, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if prev, ok := o.owner[p]; ok && prev != client {
			o.overlap = append(o.overlap, fmt.Sprintf("p%d given to %d while %d held it", p, client, prev))
		}
		o.owner[p] = client
	}
}

func (o *ownership) released(client int, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if o.owner[p] == client {
			delete(o.owner, p)
		}
	}
}

// byClient lists each client's partitions, sorted.
func (o *ownership) byClient() map[int][]int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[int][]int32)
	for p, c := range o.owner {
		out[c] = append(out[c], p)
	}
	for c := range out {
		slices.Sort(out[c])
	}
	return out
}

// startConsumer848 starts a KIP-848 member (the server-side range
// assignor) that polls until closed.
func startConsumer848(t *testing.T, n *sluicetest.Node, id int, group, topic string, o *ownership) (*kgo.Client, context.CancelFunc) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(n.Addr()),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.RangeBalancer()), // asks for the server's "range"
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { o.assigned(id, m[topic]) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { o.released(id, m[topic]) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { o.released(id, m[topic]) }),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	stop := func() {
		cancel()
		<-done
		cl.Close()
	}
	t.Cleanup(stop)
	return cl, sync.OnceFunc(stop)
}

// waitForShares waits until the clients hold want(), which is computed
// anew each time (member ids are known only once the clients joined).
func waitForShares(t *testing.T, o *ownership, want func() map[int][]int32) {
	t.Helper()
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		if got, want := o.byClient(), want(); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("assignments %v, want %v", got, want)
		}
		return nil
	})
}

// TestConsumerGroup848Range runs three KIP-848 members with the server-side
// range assignor on a ten-partition topic: they get contiguous blocks of
// 4, 3 and 3 partitions in member id order. When one leaves and a new one
// joins, no partition is ever held by two members at once.
func TestConsumerGroup848Range(t *testing.T) {
	n := consumerGroupNode(t)
	const topic, group = "clicks", "counter"
	createTopic(t, n, topic, 10, nil)
	o := &ownership{owner: map[int32]int{}}

	var clients []*kgo.Client
	var stops []func()
	for i := range 3 {
		cl, stop := startConsumer848(t, n, i, group, topic, o)
		clients = append(clients, cl)
		stops = append(stops, stop)
	}

	// The blocks follow the member ids the clients chose.
	admin := n.Client()
	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(context.Background(), admin)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0]
	}
	var want map[int][]int32
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		d := describe()
		if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 3 {
			return fmt.Errorf("group %s with %d members (error %d)", d.State, len(d.Members), d.ErrorCode)
		}
		if d.AssignorName != "range" {
			t.Fatalf("assignor %q, want range", d.AssignorName)
		}
		want = map[int][]int32{}
		for i, cl := range clients {
			id, _ := cl.GroupMetadata()
			rank := 0
			for _, m := range d.Members {
				if m.MemberID < id {
					rank++
				}
			}
			start := []int32{0, 4, 7}[rank]
			for p := start; p < start+[]int32{4, 3, 3}[rank]; p++ {
				want[i] = append(want[i], p)
			}
		}
		return nil
	})
	waitForShares(t, o, func() map[int][]int32 { return want })

	// One leaves: the two left split the topic 5/5.
	stops[2]()
	waitForShares(t, o, func() map[int][]int32 { return rangeShares(t, clients[:2]) })

	// A new one joins: partitions move only once released.
	cl, _ := startConsumer848(t, n, 3, group, topic, o)
	waitForShares(t, o, func() map[int][]int32 {
		return rangeShares(t, []*kgo.Client{clients[0], clients[1], cl}, 0, 1, 3)
	})
	if len(o.overlap) > 0 {
		t.Fatalf("partitions held twice: %v", o.overlap)
	}
}

// rangeShares is the range assignment of ten partitions over clients
// (ordered by their member ids), keyed by the clients' ids in the test.
func rangeShares(t *testing.T, clients []*kgo.Client, ids ...int) map[int][]int32 {
	t.Helper()
	if ids == nil {
		for i := range clients {
			ids = append(ids, i)
		}
	}
	type member struct {
		id   string
		test int
	}
	var ms []member
	for i, cl := range clients {
		id, _ := cl.GroupMetadata()
		ms = append(ms, member{id, ids[i]})
	}
	slices.SortFunc(ms, func(a, b member) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	out := map[int][]int32{}
	n := int32(len(ms))
	start := int32(0)
	for i, m := range ms {
		size := 10 / n
		if int32(i) < 10%n {
			size++
		}
		for p := start; p < start+size; p++ {
			out[m.test] = append(out[m.test], p)
		}
		start += size
	}
	return out
}
