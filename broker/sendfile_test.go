package broker_test

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/sluicetest"
)

// TestFetchSendsSegmentBytesWithSendfile checks what a consumer reads from
// a partition leaves the broker through sendfile(2) from the segment file,
// not through a copy in the broker's memory: after a franz-go consumer has
// read 2 MiB of uncompressed records from the beginning (in fetches of up to 1 MiB per
// partition), the bytes the sendfile system call reported sent have grown
// by at least the size of the records, and every record arrived intact.
// (cmd/sluice's TestFetchSendfileSyscall watches the system call itself
// with strace.)
func TestFetchSendsSegmentBytesWithSendfile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sendfile(2) with an explicit offset is used on Linux only")
	}
	n := sluicetest.Start(t)
	createTopic(t, n, "sf", 1, nil)
	const records = 2048
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1000) }
	var recs []*kgo.Record
	for i := range records {
		recs = append(recs, &kgo.Record{Topic: "sf", Key: []byte(strconv.Itoa(i)), Value: value(i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression())).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	before := protocol.SendfileBytes()
	cl := n.Client(kgo.ConsumeTopics("sf"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < records {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", got, records)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) != strconv.Itoa(got) || !bytes.Equal(r.Value, value(got)) || r.Offset != int64(got) {
				t.Fatalf("record %d: offset %d key %q, value intact %v", got, r.Offset, r.Key, bytes.Equal(r.Value, value(got)))
			}
			got++
		})
	}
	if sent := protocol.SendfileBytes() - before; sent < records*1000 {
		t.Fatalf("consumer read %d records of 1000-byte values, but sendfile(2) sent only %d bytes", records, sent)
	}
}
