package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// spliceFetchHandler answers a Fetch with three partitions whose record
// bytes come from file: [0,n1) and [n1,n1+n2) spliced, the middle one in
// memory, and a fourth spliced with zero bytes.
func spliceFetchHandler(file io.ReaderAt, n1, n2 int64, mem []byte) Handler {
	return func(_ context.Context, req *Request) (kmsg.Response, error) {
		resp := req.Body.ResponseKind().(*kmsg.FetchResponse)
		sr := Splice(resp)
		st := kmsg.NewFetchResponseTopic()
		st.Topic = "t"
		for i, set := range []func(*kmsg.FetchResponseTopicPartition){
			func(p *kmsg.FetchResponseTopicPartition) { p.RecordBatches = sr.Bytes(file, 0, n1) },
			func(p *kmsg.FetchResponseTopicPartition) { p.RecordBatches = mem },
			func(p *kmsg.FetchResponseTopicPartition) { p.RecordBatches = sr.Bytes(file, n1, n2) },
			func(p *kmsg.FetchResponseTopicPartition) { p.RecordBatches = sr.Bytes(file, 0, 0) },
		} {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(i)
			p.HighWatermark = int64(100 + i)
			set(&p)
			st.Partitions = append(st.Partitions, p)
		}
		resp.Topics = append(resp.Topics, st)
		return sr, nil
	}
}

// TestSplicedFetchOverTCP checks a Fetch response carrying file ranges
// reaches a client over TCP byte for byte, in the non-flexible (int32
// lengths) and flexible (uvarint lengths) encodings, and that on Linux the
// file ranges of an *os.File leave through sendfile(2): the count of bytes
// the system call reported sent grows by at least their size.
func TestSplicedFetchOverTCP(t *testing.T) {
	content := make([]byte, 300<<10)
	for i := range content {
		content[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const n1, n2 = 200 << 10, 100 << 10
	mem := []byte("in memory")

	for _, src := range []struct {
		name     string
		file     io.ReaderAt
		sendfile bool
	}{
		{"os.File", f, runtime.GOOS == "linux"},
		{"ReaderAt", bytes.NewReader(content), false},
	} {
		r := testRouter(t)
		r.Register(1, 4, 13, spliceFetchHandler(src.file, n1, n2, mem))
		_, addr := startServer(t, r, nil)
		c := dialRaw(t, addr)
		for _, v := range []int16{11, 12, 13} {
			t.Run(fmt.Sprintf("%s/v%d", src.name, v), func(t *testing.T) {
				before := SendfileBytes()
				fetch := kmsg.NewPtrFetchRequest()
				fetch.Version = v
				c.write(withSize(requestFrame(fetch, int32(v), nil)))
				_, resp := decodeResponse(t, c.readFrame(), 1, v, v)
				parts := resp.(*kmsg.FetchResponse).Topics[0].Partitions
				want := [][]byte{content[:n1], mem, content[n1 : n1+n2], {}}
				for i, p := range parts {
					if !bytes.Equal(p.RecordBatches, want[i]) {
						t.Fatalf("partition %d: %d bytes, want %d (equal prefix %v)", i, len(p.RecordBatches), len(want[i]),
							bytes.HasPrefix(want[i], p.RecordBatches[:min(len(p.RecordBatches), 16)]))
					}
					if p.HighWatermark != int64(100+i) {
						t.Fatalf("partition %d: high watermark %d: the fields after a splice are off", i, p.HighWatermark)
					}
				}
				sent := SendfileBytes() - before
				if src.sendfile && sent < n1+n2 {
					t.Fatalf("sendfile(2) sent %d bytes, want at least %d", sent, n1+n2)
				}
			})
		}
	}
}

// TestSplicedResponseThroughServe checks Router.Serve, which returns the
// frame as one slice, reads the file ranges into it.
func TestSplicedResponseThroughServe(t *testing.T) {
	content := []byte("0123456789abcdefghij")
	r := testRouter(t)
	r.Register(1, 4, 13, spliceFetchHandler(bytes.NewReader(content), 10, 10, nil))
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12
	out, err := r.Serve(context.Background(), nil, requestFrame(fetch, 5, nil))
	if err != nil {
		t.Fatal(err)
	}
	_, resp := decodeResponse(t, out, 1, 12, 12)
	parts := resp.(*kmsg.FetchResponse).Topics[0].Partitions
	if got := string(parts[0].RecordBatches) + "|" + string(parts[2].RecordBatches); got != "0123456789|abcdefghij" {
		t.Fatalf("spliced bytes %q", got)
	}
}

// TestSplicedShortFileClosesConnection checks a file range that is no
// longer there when the response is written (a segment truncated under a
// reader) closes the connection instead of sending a frame whose size
// prefix lies.
func TestSplicedShortFileClosesConnection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "short.log")
	if err := os.WriteFile(path, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := testRouter(t)
	r.Register(1, 4, 13, spliceFetchHandler(f, 500, 5000, nil))
	_, addr := startServer(t, r, nil)
	c := dialRaw(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12
	c.write(withSize(requestFrame(fetch, 1, nil)))
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c.nc)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("connection still open after 5s")
	}
	if len(got) < 4 {
		t.Fatalf("closed after %d bytes, before the size prefix", len(got))
	}
	if claimed := int(binary.BigEndian.Uint32(got)); len(got)-4 >= claimed {
		t.Fatalf("a whole frame of %d bytes arrived although its file range was short", claimed)
	}
}
