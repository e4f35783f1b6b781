package logstore

import (
	"os"
	"testing"
)

// TestWriteSampleForKafkaTools writes a log directory for checking with
// Kafka's own tools, e.g.
//
//	LOGSTORE_SAMPLE_DIR=/tmp/sample go test -run SampleForKafkaTools ./logstore/
//	kafka-dump-log.sh --deep-iteration --files /tmp/sample/orders-3/00000000000000000000.log,...
//
// It is skipped unless LOGSTORE_SAMPLE_DIR is set.
func TestWriteSampleForKafkaTools(t *testing.T) {
	path := os.Getenv("LOGSTORE_SAMPLE_DIR")
	if path == "" {
		t.Skip("LOGSTORE_SAMPLE_DIR not set")
	}
	d, err := OpenDir(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4000
	cfg.IndexIntervalBytes = 300
	l, err := d.Open(testTP, testTopicID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		recs := make([]testRecord, 1+i%5)
		for j := range recs {
			recs[j] = testRecord{Timestamp: 1_700_000_000_000 + int64(i*10+j), Key: []byte("k"), Value: []byte("value")}
		}
		mustAppend(t, l, makeBatch(t, batchSpec{Codec: int8(i % 5), Records: recs}), int32(i/20))
	}
	cfg.LogAppendTime = true
	la, err := d.Open(TopicPartition{Topic: "appendtime", Partition: 0}, [16]byte{7}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		mustAppend(t, la, makeBatch(t, batchSpec{Codec: int8(i % 5), Records: []testRecord{{Timestamp: 5, Value: []byte("v")}, {Timestamp: 6}}}), 0)
	}
	if err := d.Close(map[TopicPartition]int64{testTP: l.LogEndOffset()}); err != nil {
		t.Fatal(err)
	}
}
