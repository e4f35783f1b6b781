package broker_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

func ptr(s string) *string { return &s }

func TestRestartKeepsTopicsConfigsAndData(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "keep", 3, map[string]*string{"retention.ms": ptr("86400000"), "cleanup.policy": ptr("delete")})
	produced := produceKeyed(t, n.Client(), "keep", 0, 500)

	ctx := context.Background()
	before, err := n.Admin().ListTopics(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	n.Restart()
	if got := n.Broker.RecoveryStats().SegmentsScanned; got != 0 {
		t.Fatalf("clean restart scanned %d segments, want 0", got)
	}
	adm := n.Admin()
	after, err := adm.ListTopics(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	if before["keep"].ID != after["keep"].ID || len(after["keep"].Partitions) != 3 {
		t.Fatalf("topic changed across restart: %+v -> %+v", before["keep"], after["keep"])
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On("keep", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cfg.Configs {
		if c.Key == "retention.ms" {
			found = true
			if c.MaybeValue() != "86400000" || c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
				t.Fatalf("retention.ms after restart = %q from %s", c.MaybeValue(), c.Source)
			}
		}
	}
	if !found {
		t.Fatal("retention.ms not described after restart")
	}
	checkSame(t, produced, consumeAll(t, n.Addr(), "keep", len(produced)))

	// Producing continues at the next offsets.
	more := produceKeyed(t, n.Client(), "keep", 500, 100)
	checkSame(t, append(produced, more...), consumeAll(t, n.Addr(), "keep", 600))
}

func TestCrashRecoveryKeepsAcknowledgedRecords(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "crash", 2, nil)
	produced := produceKeyed(t, n.Client(kgo.RequiredAcks(kgo.AllISRAcks())), "crash", 0, 1000)
	n.CrashRestart()
	if got := n.Broker.RecoveryStats().SegmentsScanned; got == 0 {
		t.Fatal("restart after a crash scanned no segments")
	}
	checkSame(t, produced, consumeAll(t, n.Addr(), "crash", len(produced)))
	more := produceKeyed(t, n.Client(), "crash", 1000, 10)
	checkSame(t, append(produced, more...), consumeAll(t, n.Addr(), "crash", 1010))
}

func TestDeleteRecordsSurvivesRestart(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "trim", 1, nil)
	produceKeyed(t, n.Client(), "trim", 0, 100)
	ctx := context.Background()
	adm := n.Admin()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 40})
	res, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("trim", 0); r.Err != nil || r.LowWatermark != 40 {
		t.Fatalf("delete records: %+v", r)
	}
	n.CrashRestart()
	starts, err := n.Admin().ListStartOffsets(ctx, "trim")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("trim", 0); o.Offset != 40 {
		t.Fatalf("log start offset after restart = %d, want 40", o.Offset)
	}
	got := consumeAll(t, n.Addr(), "trim", 60)
	if got[0].Offset != 40 {
		t.Fatalf("first consumed offset %d, want 40", got[0].Offset)
	}
}

func TestRetentionMovesLogStartAndSurvivesRestart(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "ret", 1, map[string]*string{"segment.bytes": ptr("1048576"), "retention.bytes": ptr("1048576")})
	cl := n.Client(kgo.ProducerBatchMaxBytes(64 << 10))
	big := make([]byte, 50<<10)
	rand.Read(big) // incompressible, so segments fill as sized
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 100; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ret", Value: big}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	n.Broker.RunRetention()
	adm := n.Admin()
	starts, err := adm.ListStartOffsets(ctx, "ret")
	if err != nil {
		t.Fatal(err)
	}
	start, _ := starts.Lookup("ret", 0)
	if start.Offset <= 0 {
		t.Fatalf("retention.bytes did not move the log start offset (%d)", start.Offset)
	}
	n.Restart()
	after, err := n.Admin().ListStartOffsets(ctx, "ret")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := after.Lookup("ret", 0); o.Offset != start.Offset {
		t.Fatalf("log start offset after restart %d, want %d", o.Offset, start.Offset)
	}
}
