package broker_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// storedCodecs is the compression codec of every batch this node stores
// for topic-0, read from its log as bytes.
func storedCodecs(t *testing.T, n *sluicetest.Node, topic string) []int16 {
	t.Helper()
	raw, err := n.Broker.ReplicaRead(topic, 0, 0)
	if err != nil {
		t.Fatalf("read %s-0: %v", topic, err)
	}
	var codecs []int16
	for len(raw) > 0 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			t.Fatalf("stored batch of %s: %v", topic, err)
		}
		codecs = append(codecs, b.Attributes&0x07)
		raw = raw[12+int(b.Length):]
	}
	return codecs
}

// produceSnappy produces 50 keyed records to topic-0 with franz-go's
// snappy codec and returns them.
func produceSnappy(t *testing.T, n *sluicetest.Node, topic string) []*kgo.Record {
	t.Helper()
	cl := n.Client(kgo.ProducerBatchCompression(kgo.SnappyCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range 50 {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("key-" + strconv.Itoa(i%7)),
			Value:   bytes.Repeat([]byte("value "+strconv.Itoa(i)+" "), 20),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	return recs
}

// TestTopicCompressionType: franz-go produces snappy batches; a topic
// created with compression.type gzip, lz4, zstd or uncompressed stores
// them in that codec, one of producer or snappy as sent, and a franz-go
// consumer reads the records back unchanged, key, value and header.
func TestTopicCompressionType(t *testing.T) {
	n := sluicetest.Start(t)
	for _, c := range []struct {
		compression string
		codec       int16
	}{
		{"producer", 2}, {"snappy", 2}, {"gzip", 1}, {"lz4", 3}, {"zstd", 4}, {"uncompressed", 0},
	} {
		t.Run(c.compression, func(t *testing.T) {
			topic := "compressed-" + c.compression
			createTopic(t, n, topic, 1, map[string]*string{"compression.type": ptr(c.compression)})
			sent := produceSnappy(t, n, topic)
			codecs := storedCodecs(t, n, topic)
			if len(codecs) == 0 {
				t.Fatal("no batch stored")
			}
			for i, got := range codecs {
				if got != c.codec {
					t.Fatalf("batch %d of %d stored with codec %d, want %d", i, len(codecs), got, c.codec)
				}
			}
			got := consumeAll(t, n.Addr(), topic, len(sent))
			for i, r := range got {
				s := sent[i]
				if r.Offset != int64(i) || !bytes.Equal(r.Key, s.Key) || !bytes.Equal(r.Value, s.Value) ||
					len(r.Headers) != 1 || string(r.Headers[0].Value) != string(s.Headers[0].Value) {
					t.Fatalf("record %d read back as offset %d key %q value %q headers %v", i, r.Offset, r.Key, r.Value, r.Headers)
				}
			}
		})
	}
}

// TestBrokerCompressionType: the broker's compression.type (with its
// level) is the default of a topic that sets none.
func TestBrokerCompressionType(t *testing.T) {
	n := sluicetest.Start(t, "compression.type=zstd", "compression.zstd.level=9")
	createTopic(t, n, "broker-default", 1, nil)
	produceSnappy(t, n, "broker-default")
	for i, got := range storedCodecs(t, n, "broker-default") {
		if got != 4 {
			t.Fatalf("batch %d stored with codec %d, want zstd (4)", i, got)
		}
	}
}
