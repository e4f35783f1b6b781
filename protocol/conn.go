package protocol

import (
	"bufio"
	"container/list"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one client connection, owned by the goroutine running serve: only
// it reads, writes and closes nc (Shutdown's forced close, and a peer's
// eviction at max.connections, aside).
type conn struct {
	srv *Server
	nc  net.Conn
	// closed ends info.Context once nc is closed.
	closed context.CancelFunc
	info   ConnInfo
	ip     string // what max.connections.per.ip counts it under
	log    *slog.Logger
	// wire is what requests are read from: nc, or the TLS connection
	// over it (tls.go), whose buffered writer out then takes responses.
	// sasl is the SASL state of a connection to a SASL listener
	// (sasl.go). All three are the serving goroutine's.
	wire net.Conn
	tls  *tls.Conn
	out  *bufio.Writer
	sasl *saslSession

	// state is connAdmitted, connProbation or connRefused, and
	// probationElem its place on the probation list while on probation;
	// both guarded by connCounts.mu (connlimit.go).
	state         int
	probationElem *list.Element
	// peer is set once a request shows the connection is one of the
	// broker's own peers; such a connection is never evicted.
	peer atomic.Bool
	// lastActive is when the last request arrived (unix nanoseconds):
	// the least recently active client connection is the one evicted.
	lastActive atomic.Int64

	// frame is the pooled buffer of the request in hand, nil if its
	// frame was allocated (readBody, framepool.go).
	frame *pooledBuf

	mu      sync.Mutex
	reading bool // waiting for or reading a request frame
	stopped bool // ctx is done: finish the request in hand, read no more
}

// interrupt is called when the connection's context ends. A connection
// waiting for a request is woken by an expired read deadline; one serving a
// request is left to finish it and notices stopped before its next read.
func (c *conn) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.reading {
		c.nc.SetReadDeadline(time.Now())
	}
}

// beginRead marks the connection as reading and arms deadline (zero: none),
// or reports false if the connection should stop. Doing both under mu is
// what keeps interrupt's deadline from being overwritten.
func (c *conn) beginRead(deadline time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	c.reading = true
	c.nc.SetReadDeadline(deadline)
	return true
}

// setDeadline moves the read deadline of a connection that is reading,
// unless interrupt has already stopped it.
func (c *conn) setDeadline(deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.nc.SetReadDeadline(deadline)
	}
}

func (c *conn) endRead() {
	c.mu.Lock()
	c.reading = false
	c.mu.Unlock()
}

// idleDeadline is connections.max.idle.ms from now, or none.
func (c *conn) idleDeadline() time.Time {
	if d := c.srv.IdleTimeout; d > 0 {
		return time.Now().Add(d)
	}
	return time.Time{}
}

// errSlowFrame wraps the deadline error of a frame that started to arrive
// but did not finish within connections.max.idle.ms.
var errSlowFrame = errors.New("protocol: request frame not received within connections.max.idle.ms of its first byte")

// errStopped: the connection's context ended before a read began.
var errStopped = errors.New("protocol: connection stopping")

// serve runs the connection: read a frame, route it, write the answer, in
// order, until the client goes away, a request demands the connection be
// closed, or ctx ends.
func (c *conn) serve(ctx context.Context) {
	c.log = c.srv.logger().With("conn", c.info.ID, "remote", addrString(c.info.Remote))
	log := c.log
	defer c.srv.removeConn(c)
	defer c.closed()
	defer c.closeWire()
	// A panic here is a bug, most likely in a handler, possibly reached
	// through client bytes; it must cost this connection, not the process.
	var frame []byte // the request being served, for the panic log
	var held int64   // budget held by the request in hand
	defer func() {
		c.srv.budget.release(held)
		if p := recover(); p != nil {
			attrs := []any{"panic", p, "stack", string(debug.Stack())}
			if h, _, err := parseHeaderPrefix(frame); err == nil {
				attrs = append(attrs, "api_key", h.APIKey, "api_version", h.APIVersion, "client_id", h.clientID())
			}
			log.Error("protocol: panic serving connection, closing it", attrs...)
		}
	}()
	defer context.AfterFunc(ctx, c.interrupt)()
	log.Debug("protocol: connection opened")

	c.wire = c.nc
	if c.srv.TLS != nil && !c.startTLS(ctx) {
		return
	}
	br := bufio.NewReaderSize(c.wire, 16<<10)
	if c.onProbation() && !c.settleProbation(br) {
		return
	}
	if c.srv.SASL != nil {
		c.sasl = &saslSession{}
		if !c.authenticate(ctx, br) {
			return
		}
	}
	first := true
	for {
		var err error
		frame, held, err = c.readRequest(ctx, br)
		if err != nil {
			c.logReadError(ctx, err)
			return
		}
		received := time.Now() // Router.Observe's Received (observe.go)
		c.lastActive.Store(received.UnixNano())
		if first {
			first = false
			if h, _, err := parseHeaderPrefix(frame); err == nil && c.srv.isPeer(h.clientID()) {
				c.peer.Store(true)
			}
		}
		if c.sasl != nil {
			if handled, ok := c.checkSession(ctx, br, frame); !ok {
				return
			} else if handled {
				c.srv.budget.release(held)
				held, frame, c.frame = 0, nil, nil
				continue
			}
		}
		if !c.chargeDecode(ctx, frame, &held) {
			return
		}
		var sv servedReq
		resp, th, err := c.srv.Router.serve(ctx, &c.info, frame, &sv)
		if err != nil {
			return // Router.serve logged why
		}
		// A client over a quota is throttled (throttle.go): its
		// response held back, or the connection muted after it.
		// A shutdown cuts a delay short but still sends the response.
		now := time.Now()
		muteUntil := now.Add(th.d)
		if th.d > 0 && !th.afterResponse && !c.waitThrottle(ctx, muteUntil) && ctx.Err() == nil {
			return // held longer than connections.max.idle.ms
		}
		var heldBack time.Duration
		sendStart := now
		if th.d > 0 && !th.afterResponse {
			sendStart = time.Now()
			heldBack = sendStart.Sub(now)
		}
		if resp != nil {
			if err := c.writeResponse(resp); err != nil {
				log.Debug("protocol: write failed, closing connection", "err", err)
				return
			}
			putResponseBuf(resp.pooled)
		}
		c.observe(&sv, received, sendStart, th, heldBack)
		c.srv.budget.release(held)
		held, frame = 0, nil
		c.releaseFrame() // nothing refers to the request's bytes any more
		if th.d > 0 && th.afterResponse && !c.waitThrottle(ctx, muteUntil) {
			return
		}
	}
}

// readRequest reads one request frame. The wait for its first byte is
// bounded by connections.max.idle.ms, and so is the rest of the frame from
// that first byte on. The frame's buffer is reserved from the memory
// budget as it grows; held is what was reserved, to be released by the
// caller once the request has been answered.
func (c *conn) readRequest(ctx context.Context, br *bufio.Reader) (frame []byte, held int64, err error) {
	if !c.beginRead(c.idleDeadline()) {
		return nil, 0, errStopped
	}
	defer c.endRead()
	if _, err := br.Peek(1); err != nil {
		return nil, 0, err
	}
	c.setDeadline(c.idleDeadline())
	var prefix [4]byte
	if _, err := io.ReadFull(br, prefix[:]); err != nil {
		return nil, 0, slowFrame(err)
	}
	size := int32(binary.BigEndian.Uint32(prefix[:]))
	if err := checkFrameSize(size, c.maxRequestSize()); err != nil {
		return nil, 0, err
	}
	// The api key and version are the first bytes of the body: a request
	// whose charge can be known from them and its size alone (all but the
	// walked ones, decodeWalkers) and that can never fit is refused before
	// its body is read.
	if limit := c.srv.budget.limit; limit > 0 {
		keyVersion, err := br.Peek(4)
		if err != nil {
			return nil, 0, slowFrame(err)
		}
		key := int16(binary.BigEndian.Uint16(keyVersion))
		if _, walked := decodeWalkers[key]; !walked {
			if charge := tableCharge(key, int64(size)); charge > limit {
				return nil, 0, &chargeError{key: key, version: int16(binary.BigEndian.Uint16(keyVersion[2:])), frameSize: int(size), charge: charge, limit: limit}
			}
		}
	}
	return c.readBody(ctx, br, int(size))
}

// chargeError is a request refused because what it would be charged
// exceeds the whole budget.
type chargeError struct {
	key, version  int16
	clientID      string
	frameSize     int
	charge, limit int64
}

func (e *chargeError) Error() string {
	return fmt.Sprintf("protocol: api key %d: a %d-byte request is charged %d bytes, more than queued.max.request.bytes %d", e.key, e.frameSize, e.charge, e.limit)
}

func slowFrame(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errors.Join(errSlowFrame, err)
	}
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readBody is ReadFrame's readBody with every growth of the buffer
// reserved from the memory budget first. Nothing is allocated before the
// first byte of the body has arrived.
//
// The buffers of a request whose api key the router reuses frames for
// (Router.ReuseFrames) come from the frame pools (framepool.go), and so do
// those of any frame it outgrows; c.frame is then the frame's buffer, to
// be given back once the request has been answered (releaseFrame). The
// budget is charged what the frame needs, as before; a pooled buffer's
// capacity is at most a quarter more.
func (c *conn) readBody(ctx context.Context, br *bufio.Reader, size int) ([]byte, int64, error) {
	if _, err := br.Peek(1); err != nil {
		return nil, 0, slowFrame(err)
	}
	kv, err := br.Peek(2)
	if err != nil {
		return nil, 0, slowFrame(err)
	}
	pooled := c.srv.Router.reusesFrame(int16(binary.BigEndian.Uint16(kv)))
	var buf []byte
	var box *pooledBuf // buf's pooled buffer, nil if it was allocated
	var held int64
	fail := func(err error) ([]byte, int64, error) {
		c.srv.budget.release(held)
		putFrameBuf(box)
		return nil, 0, err
	}
	for len(buf) < size {
		if int64(len(buf)) == held {
			newCap := min(size, max(frameChunk, 2*len(buf)))
			need := int64(newCap) - held
			if err := c.reserve(ctx, need, held, size); err != nil {
				return fail(err)
			}
			held += need
			var grown []byte
			var grownBox *pooledBuf
			if pooled {
				grownBox = getFrameBuf(newCap)
			}
			if grownBox != nil {
				grown = grownBox.b[:len(buf)]
			} else {
				grown = make([]byte, len(buf), newCap)
			}
			copy(grown, buf)
			putFrameBuf(box)
			buf, box = grown, grownBox
		}
		n, err := io.ReadFull(br, buf[len(buf):held])
		buf = buf[:len(buf)+n]
		if err != nil {
			return fail(slowFrame(err))
		}
	}
	c.frame = box
	return buf, held, nil
}

// releaseFrame gives the buffer of the request just answered back to its
// pool, if it came from one.
func (c *conn) releaseFrame() {
	putFrameBuf(c.frame)
	c.frame = nil
}

// reserve takes n more bytes of the budget for a request holding held,
// muting the connection (reading nothing) while the budget is exhausted.
// Time spent muted is not the client's: the read deadline starts again
// afterwards.
func (c *conn) reserve(ctx context.Context, n, held int64, frameSize int) error {
	waited, err := c.srv.budget.acquire(ctx, n, held, func() {
		c.log.Debug("protocol: request memory exhausted (queued.max.request.bytes), connection muted until memory is released",
			"queued_max_request_bytes", c.srv.budget.limit, "needed", n, "frame_size", frameSize)
	})
	if err != nil {
		return errStopped
	}
	if waited {
		c.setDeadline(c.idleDeadline())
	}
	return nil
}

// chargeDecode reserves what decoding frame may cost (decodecost.go) on
// top of the frame itself, updating *held. A request whose charge exceeds
// the whole budget can never be served: it is refused, closing the
// connection, and chargeDecode returns false.
func (c *conn) chargeDecode(ctx context.Context, frame []byte, held *int64) bool {
	b := c.srv.budget
	if b.limit <= 0 {
		return true
	}
	charge := requestCharge(frame)
	if charge > b.limit {
		e := &chargeError{frameSize: len(frame), charge: charge, limit: b.limit}
		if h, _, err := parseHeaderPrefix(frame); err == nil {
			e.key, e.version, e.clientID = h.APIKey, h.APIVersion, h.clientID()
		}
		c.logReadError(ctx, e)
		return false
	}
	if need := charge - *held; need > 0 {
		if err := c.reserve(ctx, need, *held, len(frame)); err != nil {
			return false
		}
		*held = charge
	}
	return true
}

// logReadError logs why reading a frame ended the connection: a refused
// size prefix is worth a warning (a misconfigured or hostile client), a
// frame that trickled in too slowly or an idle connection is worth an
// info line, the rest is ordinary connection churn.
func (c *conn) logReadError(ctx context.Context, err error) {
	log := c.log
	var sizeErr *FrameSizeError
	var chargeErr *chargeError
	switch {
	case errors.As(err, &chargeErr):
		log.Warn("protocol: request would cost more memory to decode and serve than queued.max.request.bytes allows, closing connection",
			"api_key", chargeErr.key, "api_version", chargeErr.version, "client_id", chargeErr.clientID,
			"frame_size", chargeErr.frameSize, "charge", chargeErr.charge, "queued_max_request_bytes", chargeErr.limit)
	case errors.As(err, &sizeErr):
		log.Warn("protocol: refusing request frame, closing connection", "claimed_size", sizeErr.Size, "max_size", sizeErr.Max, "err", err)
	case errors.Is(err, errStopped):
		log.Debug("protocol: closing connection for shutdown")
	case errors.Is(err, io.EOF):
		log.Debug("protocol: connection closed by client")
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		log.Debug("protocol: closing connection for shutdown")
	case errors.Is(err, errSlowFrame):
		log.Info("protocol: request frame not received within connections.max.idle.ms of its first byte, closing connection", "connections_max_idle", c.srv.IdleTimeout)
	case errors.Is(err, os.ErrDeadlineExceeded):
		log.Info("protocol: closing idle connection", "idle_timeout", c.srv.IdleTimeout)
	default:
		log.Debug("protocol: read failed, closing connection", "err", err)
	}
}
