package broker_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn sends hand-built requests on one connection and reports what a
// client sees: the response frame's size prefix and the decoded body. It
// is for requests a real client would not send (duplicate entries, limits
// that do not match the broker's), where kgo's sharding and merging would
// hide what the broker answered.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	fmt  *kmsg.RequestFormatter
	corr int32
}

func dialRawConn(t testing.TB, addr string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{t: t, conn: conn, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("rawconn"))}
}

// maxDecodedResponse is the largest response rawConn decodes; a larger one
// is read and dropped, so a test of an oversized answer stays cheap.
const maxDecodedResponse = 16 << 20

// do sends req and returns the response frame's size (its int32 prefix)
// and the decoded response, nil when the frame was over
// maxDecodedResponse or its size prefix negative.
func (c *rawConn) do(req kmsg.Request) (int64, kmsg.Response) {
	c.t.Helper()
	c.corr++
	if err := c.conn.SetDeadline(time.Now().Add(60 * time.Second)); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.conn.Write(c.fmt.AppendRequest(nil, req, c.corr)); err != nil {
		c.t.Fatalf("write %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	var sizeBuf [4]byte
	if _, err := io.ReadFull(c.conn, sizeBuf[:]); err != nil {
		c.t.Fatalf("read %s response size: %v", kmsg.NameForKey(req.Key()), err)
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 0 {
		return int64(size), nil
	}
	if size > maxDecodedResponse {
		if _, err := io.CopyN(io.Discard, c.conn, int64(size)); err != nil {
			c.t.Fatalf("read %s response of %d bytes: %v", kmsg.NameForKey(req.Key()), size, err)
		}
		return int64(size), nil
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c.conn, body); err != nil {
		c.t.Fatalf("read %s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	if err := c.decode(req, body); err != nil {
		c.t.Fatalf("decode %s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body[c.headerLen(req, body):]); err != nil {
		c.t.Fatalf("decode %s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	return int64(size), resp
}

// decode checks the response header's correlation id.
func (c *rawConn) decode(req kmsg.Request, body []byte) error {
	if len(body) < 4 {
		return fmt.Errorf("response of %d bytes has no header", len(body))
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		return fmt.Errorf("correlation id %d, want %d", corr, c.corr)
	}
	return nil
}

// headerLen is the length of the response header: the correlation id, and
// for flexible versions (except ApiVersions) its tagged fields.
func (c *rawConn) headerLen(req kmsg.Request, body []byte) int {
	if !req.IsFlexible() || req.Key() == 18 {
		return 4
	}
	r := kbin.Reader{Src: body[4:]}
	for n := r.Uvarint(); n > 0; n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
	return len(body) - len(r.Src)
}
