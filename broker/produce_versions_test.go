package broker_test

// Produce versions and message formats as Kafka 4 answers them (issue 15):
// ApiVersions lists Produce from v0, because librdkafka before 2.11.1 reads
// a higher minimum as "no gzip, snappy or lz4" and sends those batches
// uncompressed (KAFKA-18659), but a Produce v0–2 request has its connection
// closed, as Kafka's socket server does for a version it does not enable;
// and a magic v0 or v1 message set in a v3+ Produce is INVALID_RECORD for
// its partition (ProduceRequest.validateRecords), not CORRUPT_MESSAGE.
// Kafka 4.1.1 answered exactly this to the same requests.

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestApiVersionsListsProduceFromV0: the ApiVersions answer lists Produce
// 0–13, as Kafka 4 does, so that librdkafka compresses.
func TestApiVersionsListsProduceFromV0(t *testing.T) {
	n := internalNode(t)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(context.Background(), n.Client())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 0 {
			if k.MinVersion != 0 || k.MaxVersion != 13 {
				t.Fatalf("ApiVersions lists Produce %d..%d, want 0..13 (Kafka 4's, KAFKA-18659)", k.MinVersion, k.MaxVersion)
			}
			return
		}
	}
	t.Fatal("ApiVersions does not list Produce")
}

// TestProduceV0ToV2ClosesTheConnection: a Produce at v0, v1 or v2 (with the
// message format of its version, acks=1) gets no answer: the broker closes
// the connection, as Kafka 4 does, and appends nothing.
func TestProduceV0ToV2ClosesTheConnection(t *testing.T) {
	n := internalNode(t)
	createTopic(t, n, "old-produce", 1, nil)
	for _, c := range []struct {
		version int16
		magic   byte
	}{{0, 0}, {1, 0}, {2, 1}} {
		req := produceRequest("old-produce", [16]byte{}, 0, 5000, legacyMessageSet(c.magic, 3, 10))
		req.Acks, req.Version = 1, c.version
		if err := expectClosed(n.Addr(), req); err != nil {
			t.Errorf("Produce v%d: %v", c.version, err)
		}
	}
	if end := endOffset(t, n, "old-produce"); end != 0 {
		t.Errorf("end offset %d after the refused requests, want 0", end)
	}
}

// TestProduceOfLegacyMessageSetIsInvalidRecord: a v3+ Produce whose records
// are a magic v0 or v1 message set, of small or larger messages, is
// INVALID_RECORD for the partition and appends nothing; the connection
// stays open, and a magic v2 batch on it is appended.
func TestProduceOfLegacyMessageSetIsInvalidRecord(t *testing.T) {
	n := internalNode(t)
	createTopic(t, n, "legacy-magic", 1, nil)
	id := topicID(t, n, "legacy-magic")
	c := dialRawConn(t, n.Addr())
	for _, version := range []int16{3, 7, 9, 13} {
		for _, magic := range []byte{0, 1} {
			for _, valueLen := range []int{1, 100} {
				req := produceRequest("legacy-magic", id, 0, 5000, legacyMessageSet(magic, 3, valueLen))
				req.Version = version
				_, resp := c.do(req)
				sp := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
				if sp.ErrorCode != kerr.InvalidRecord.Code {
					t.Errorf("Produce v%d of a magic v%d message set (values of %d bytes): %v, want INVALID_RECORD",
						version, magic, valueLen, kerr.ErrorForCode(sp.ErrorCode))
				}
			}
		}
	}
	// A v2 batch followed by a legacy message is more than one batch.
	req := produceRequest("legacy-magic", id, 0, 5000, append(keyedBatch(keyedRecord{[]byte("k"), []byte("v")}), legacyMessageSet(1, 1, 10)...))
	req.Version = 9
	_, resp := c.do(req)
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidRecord.Code {
		t.Errorf("Produce of a v2 batch and a magic v1 message: %v, want INVALID_RECORD", kerr.ErrorForCode(code))
	}
	if end := endOffset(t, n, "legacy-magic"); end != 0 {
		t.Errorf("end offset %d after the refused message sets, want 0", end)
	}
	req = produceRequest("legacy-magic", id, 0, 5000, keyedBatch(keyedRecord{[]byte("k"), []byte("v")}))
	req.Version = 9
	_, resp = c.do(req)
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Errorf("Produce of a v2 batch on the same connection: %v", kerr.ErrorForCode(code))
	}
}

// legacyMessageSet is n uncompressed messages of the given magic (0 or 1),
// each with a null key and a value of valueLen zero bytes, as a pre-0.11
// producer writes them: offset, size, CRC-32 (IEEE), magic, attributes,
// the timestamp (magic 1 only), key and value.
func legacyMessageSet(magic byte, n, valueLen int) []byte {
	var out []byte
	for i := range n {
		m := []byte{magic, 0}
		if magic == 1 {
			m = binary.BigEndian.AppendUint64(m, uint64(time.Now().UnixMilli()))
		}
		m = binary.BigEndian.AppendUint32(m, 0xffffffff)
		m = binary.BigEndian.AppendUint32(m, uint32(valueLen))
		m = append(m, make([]byte, valueLen)...)
		out = binary.BigEndian.AppendUint64(out, uint64(i))
		out = binary.BigEndian.AppendUint32(out, uint32(4+len(m)))
		out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(m))
		out = append(out, m...)
	}
	return out
}

// expectClosed sends req on a fresh connection to addr and returns nil if
// the broker closes the connection without answering.
func expectClosed(addr string, req kmsg.Request) error {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(60 * time.Second)); err != nil {
		return err
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("old-produce"))
	if _, err := conn.Write(f.AppendRequest(nil, req, 1)); err != nil {
		return err
	}
	var size [4]byte
	_, err = io.ReadFull(conn, size[:])
	var ne net.Error
	switch {
	case err == nil:
		return errors.New("the broker answered; want the connection closed")
	case errors.As(err, &ne) && ne.Timeout():
		return errors.New("no answer and the connection still open after 60s; want it closed")
	}
	return nil
}
