package sluicetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// StartCluster returns a formed cluster: every node's own Metadata, asked
// at once, lists every node as a broker, so a test can address any node by
// id through any other (kgo's Broker(id) looks the id up in the metadata of
// whichever node it asks).
func TestStartClusterEveryNodeSeesEveryBroker(t *testing.T) {
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { everyNodeSeesEveryBroker(t) })
	}
}

func everyNodeSeesEveryBroker(t *testing.T) {
	{
		c := sluicetest.StartCluster(t, 3)
		for _, addr := range c.Addrs() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			cancel()
			cl.Close()
			if err != nil {
				t.Fatalf("metadata from %s: %v", addr, err)
			}
			if len(resp.Brokers) != 3 {
				var ids []int32
				for _, b := range resp.Brokers {
					ids = append(ids, b.NodeID)
				}
				t.Fatalf("%s lists brokers %v right after StartCluster, want 3", addr, ids)
			}
		}
	}
}
