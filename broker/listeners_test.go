package broker_test

// Named listeners (issue 19) as clients see them: a client connected to
// one listener is told every broker's endpoint of that listener in
// Metadata, FindCoordinator and DescribeCluster, and brokers replicate
// over the inter-broker listener.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// twoListeners are the overrides of a node with an INTERNAL and an
// EXTERNAL PLAINTEXT listener, brokers talking over INTERNAL.
var twoListeners = []string{
	"listeners=INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
	"listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
	"inter.broker.listener.name=INTERNAL",
}

// endpointsSeen asks a client of one listener for the brokers it is told
// of in Metadata and DescribeCluster, and where the group coordinator of
// group is, each as node id → host:port.
func endpointsSeen(t *testing.T, cl *kgo.Client, group string) (metadata, cluster map[int32]string, coordinator string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr := func(host string, port int32) string { return net.JoinHostPort(host, strconv.Itoa(int(port))) }
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	metadata = map[int32]string{}
	for _, b := range meta.Brokers {
		metadata[b.NodeID] = addr(b.Host, b.Port)
	}
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("describe cluster: %v", err)
	}
	cluster = map[int32]string{}
	for _, b := range dc.Brokers {
		cluster[b.NodeID] = addr(b.Host, b.Port)
	}
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{group}
		resp, err := fc.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		c := resp.Coordinators[0]
		if c.ErrorCode != 0 {
			return fmt.Errorf("coordinator of %s: error %d", group, c.ErrorCode)
		}
		coordinator = addr(c.Host, c.Port)
		return nil
	})
	return metadata, cluster, coordinator
}

// produceConsume produces n records to topic with acks=all through cl
// and reads them back through a new client made with opts.
func produceConsume(t *testing.T, cl *kgo.Client, topic string, n int, consumer func(...kgo.Opt) *kgo.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cons := consumer(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got += fs.NumRecords()
	}
}

// TestNamedListenersAdvertiseTheirOwnEndpoints: a node with two PLAINTEXT
// listeners tells each listener's clients that listener's endpoint, the
// advertised one where advertised.listeners names a host, and serves
// both.
func TestNamedListenersAdvertiseTheirOwnEndpoints(t *testing.T) {
	n := sluicetest.Start(t, append(twoListeners,
		// Port 0 advertises the bound port; EXTERNAL's host is a name.
		"advertised.listeners=INTERNAL://127.0.0.1:0,EXTERNAL://localhost:0")...)
	internal, external := n.ListenerAddr("INTERNAL"), n.ListenerAddr("EXTERNAL")
	if internal == external || internal == "" || external == "" {
		t.Fatalf("listeners bound at %q and %q", internal, external)
	}
	_, externalPort, _ := net.SplitHostPort(external)
	wantExternal := net.JoinHostPort("localhost", externalPort)
	for _, tt := range []struct {
		listener, want string
	}{
		{"INTERNAL", internal},
		{"EXTERNAL", wantExternal},
	} {
		cl := n.ClientOn(tt.listener)
		meta, cluster, coord := endpointsSeen(t, cl, "g-"+tt.listener)
		if meta[1] != tt.want || len(meta) != 1 {
			t.Errorf("%s: Metadata brokers %v, want node 1 at %s", tt.listener, meta, tt.want)
		}
		if cluster[1] != tt.want || len(cluster) != 1 {
			t.Errorf("%s: DescribeCluster brokers %v, want node 1 at %s", tt.listener, cluster, tt.want)
		}
		if coord != tt.want {
			t.Errorf("%s: group coordinator at %s, want %s", tt.listener, coord, tt.want)
		}
		topic := "t-" + tt.listener
		if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		produceConsume(t, cl, topic, 10, func(opts ...kgo.Opt) *kgo.Client { return n.ClientOn(tt.listener, opts...) })
	}

	// A restart binds both listeners again on their ports.
	n.Restart()
	if n.ListenerAddr("INTERNAL") != internal || n.ListenerAddr("EXTERNAL") != external {
		t.Fatalf("after a restart: listeners at %s and %s, were %s and %s", n.ListenerAddr("INTERNAL"), n.ListenerAddr("EXTERNAL"), internal, external)
	}
	meta, _, _ := endpointsSeen(t, n.ClientOn("EXTERNAL"), "g-again")
	if meta[1] != wantExternal {
		t.Errorf("after a restart: EXTERNAL Metadata brokers %v, want node 1 at %s", meta, wantExternal)
	}
}

// TestNamedListenersCluster: in a cluster whose nodes have INTERNAL and
// EXTERNAL listeners, each listener's clients are told every node's
// endpoint of that listener, and a topic of three replicas written through
// EXTERNAL is replicated over INTERNAL to every replica.
func TestNamedListenersCluster(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, twoListeners...)
	for _, listener := range []string{"INTERNAL", "EXTERNAL"} {
		want := map[int32]string{}
		for id := 1; id <= 3; id++ {
			want[int32(id)] = c.Node(id).ListenerAddr(listener)
		}
		cl := c.Node(2).ClientOn(listener)
		// Node 2's image may not show every node unfenced yet.
		sluicetest.WaitFor(t, 20*time.Second, func() error {
			meta, cluster, coord := endpointsSeen(t, cl, "g-"+listener)
			if !mapsEqual(meta, want) || !mapsEqual(cluster, want) {
				return fmt.Errorf("%s: Metadata brokers %v, DescribeCluster brokers %v, want %v", listener, meta, cluster, want)
			}
			if !slices.Contains(slices.Collect(mapValues(want)), coord) {
				return fmt.Errorf("%s: group coordinator at %s, not one of %v", listener, coord, want)
			}
			return nil
		})
	}

	cl := c.Node(1).ClientOn("EXTERNAL", kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": ptrTo("3")}, "replicated"); err != nil {
		t.Fatal(err)
	}
	produceConsume(t, cl, "replicated", 20, func(opts ...kgo.Opt) *kgo.Client { return c.Node(3).ClientOn("EXTERNAL", opts...) })
	// Every replica has every record: the high watermark of an acks=all
	// topic with min.insync.replicas=3 moved, and the ISR is whole.
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		mt, err := topicMetadata(cl, "replicated")
		if err != nil {
			return err
		}
		if isr := mt.Partitions[0].ISR; len(isr) != 3 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	})
}

func mapsEqual(a, b map[int32]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func mapValues(m map[int32]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

func ptrTo(s string) *string { return &s }
