package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Source addresses. Every address of 127.0.0.0/8 reaches the broker's
// 127.0.0.1 listener on Linux, so the attacks, the well-behaved clients
// and the harness's own setup each come from an address of their own:
// max.connections.per.ip then limits the attacker, not the bystanders.
const (
	attackerIP = "127.0.0.1" // the "150 connections from 127.0.0.1"
	clientIP   = "127.0.0.2" // steady producer and normal-client probe
	setupIP    = "127.0.0.3" // topic creation, test data, verification
)

// wireConn is one raw connection to the broker. It frames requests itself,
// so a case can send a well-formed kmsg request or any bytes it likes, and
// counts what it writes in sent (the attacker's bytes), when sent is set.
type wireConn struct {
	c    net.Conn
	r    *bufio.Reader
	corr int32
	sent *atomic.Int64
}

// dialFrom connects to addr from the local address src.
func dialFrom(ctx context.Context, src, addr string, sent *atomic.Int64) (*wireConn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &wireConn{c: c, r: bufio.NewReaderSize(c, 64<<10), sent: sent}, nil
}

func (w *wireConn) Close() error { return w.c.Close() }

// write sends raw bytes, counting them.
func (w *wireConn) write(b []byte) error {
	n, err := w.c.Write(b)
	if w.sent != nil {
		w.sent.Add(int64(n))
	}
	return err
}

// requestHeader is a request header of version 1 (or 2, flexible): api
// key, version, correlation id, client id and, flexible, no tags.
func requestHeader(key, version int16, corr int32, flexible bool) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	const clientID = "sluice-attack"
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if flexible {
		b = append(b, 0)
	}
	return b
}

// encodeRequest returns the framed bytes of req with correlation id corr.
func encodeRequest(req kmsg.Request, corr int32) []byte {
	body := requestHeader(req.Key(), req.GetVersion(), corr, req.IsFlexible())
	body = req.AppendTo(body)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// send writes req with the next correlation id.
func (w *wireConn) send(req kmsg.Request) error {
	w.corr++
	return w.write(encodeRequest(req, w.corr))
}

// readFrame reads one response frame. It returns the size prefix as sent;
// a body over limit bytes (or a negative size) is not kept: its bytes are
// read and dropped where the size allows, and body is nil.
func (w *wireConn) readFrame(limit int) (size int32, body []byte, err error) {
	var prefix [4]byte
	if _, err := io.ReadFull(w.r, prefix[:]); err != nil {
		return 0, nil, err
	}
	size = int32(binary.BigEndian.Uint32(prefix[:]))
	if size < 0 {
		return size, nil, nil
	}
	if int(size) > limit {
		_, err := io.CopyN(io.Discard, w.r, int64(size))
		return size, nil, err
	}
	body = make([]byte, size)
	_, err = io.ReadFull(w.r, body)
	return size, body, err
}

// roundTrip sends req and decodes its answer, waiting at most timeout.
func (w *wireConn) roundTrip(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	w.c.SetDeadline(time.Now().Add(timeout))
	defer w.c.SetDeadline(time.Time{})
	if err := w.send(req); err != nil {
		return nil, err
	}
	_, body, err := w.readFrame(256 << 20)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return nil, errors.New("response frame over 256 MiB or negative")
	}
	return decodeResponse(req, body)
}

// decodeResponse parses a response body (correlation id first) to req.
func decodeResponse(req kmsg.Request, body []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if len(body) < 4 {
		return nil, errors.New("short response")
	}
	rest := body[4:]
	// ApiVersions answers with header v0 at every version (KIP-511).
	if resp.IsFlexible() && req.Key() != 18 {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("decode %T: %w", resp, err)
	}
	return resp, nil
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for range n {
		_, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errors.New("bad tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// errName names a Kafka error code for the table: NONE for 0.
func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	var ke *kerr.Error
	if err := kerr.ErrorForCode(code); errors.As(err, &ke) && ke.Code == code {
		return ke.Message
	}
	return fmt.Sprintf("error %d", code)
}

// describeErr says what a failed round trip looked like to the attacker:
// the broker closed the connection, or gave no answer in time.
func describeErr(err error) string {
	switch {
	case err == nil:
		return "answered"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection closed"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "no answer (timeout)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	default:
		return err.Error()
	}
}

// apiVersions asks the broker which versions of each api it serves.
func apiVersions(w *wireConn) (map[int16]int16, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "sluice-attack"
	req.ClientSoftwareVersion = "1"
	resp, err := w.roundTrip(req, 10*time.Second)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	if r.ErrorCode != 0 {
		return nil, fmt.Errorf("ApiVersions: %s", errName(r.ErrorCode))
	}
	out := map[int16]int16{}
	for _, k := range r.ApiKeys {
		out[k.ApiKey] = k.MaxVersion
	}
	return out, nil
}

// pickVersion is the highest version of req's api that the broker serves,
// kmsg encodes and is at most capAt; when the broker does not list the api
// at all it is the api's first version (1 for ControlledShutdown, whose v0
// has a header of its own): the case sends it anyway, to see what happens.
func pickVersion(versions map[int16]int16, req kmsg.Request, capAt int16) int16 {
	v := min(req.MaxVersion(), capAt)
	if max, ok := versions[req.Key()]; ok {
		v = min(v, max)
	} else if req.Key() == 7 {
		v = 1
	} else {
		v = 0
	}
	req.SetVersion(v)
	return v
}
