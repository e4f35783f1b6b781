package broker

import (
	"testing"
	"time"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/logstore"
)

// TestReplicaFetchRequestFollowsConfig: the fetch a follower sends carries
// replica.fetch.wait.max.ms, min.bytes, response.max.bytes and max.bytes
// (per partition) as configured; they were accepted and ignored before.
func TestReplicaFetchRequestFollowsConfig(t *testing.T) {
	cfg, err := config.Load("", []string{
		"replica.fetch.wait.max.ms=321", "replica.fetch.min.bytes=4096",
		"replica.fetch.response.max.bytes=2000000", "replica.fetch.max.bytes=300000",
		"replica.fetch.backoff.ms=250",
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{cfg: cfg}
	f := &fetcher{rm: &replicaManager{b: b}, parts: map[logstore.TopicPartition]*followed{}}
	p := leaderPartition(t, []int32{1, 2, 3}, time.Unix(1000, 0))
	f.parts[p.tp] = &followed{p: p, leaderEpoch: 1, fetchFrom: -1}

	req, batch, _ := f.buildRequest()
	if len(batch) != 1 || len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch request of %d partitions, want 1", len(batch))
	}
	if req.MaxWaitMillis != 321 || req.MinBytes != 4096 || req.MaxBytes != 2000000 {
		t.Errorf("fetch max wait %d ms, min bytes %d, max bytes %d; want 321, 4096, 2000000", req.MaxWaitMillis, req.MinBytes, req.MaxBytes)
	}
	if got := req.Topics[0].Partitions[0].PartitionMaxBytes; got != 300000 {
		t.Errorf("partition max bytes %d, want 300000", got)
	}
	if got := f.errorBackoff().Milliseconds(); got != 250 {
		t.Errorf("error backoff %d ms, want 250", got)
	}
}
