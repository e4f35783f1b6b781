package protocol

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// conn is one client connection, owned by the goroutine running serve: only
// it reads, writes and closes nc (Shutdown's forced close aside).
type conn struct {
	srv *Server
	nc  net.Conn
	// closed ends info.Context once nc is closed.
	closed context.CancelFunc
	info   ConnInfo

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

// beginRead marks the connection as reading and arms the idle deadline, or
// reports false if the connection should stop. Doing both under mu is what
// keeps interrupt's deadline from being overwritten by the idle one.
func (c *conn) beginRead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	c.reading = true
	var deadline time.Time
	if d := c.srv.IdleTimeout; d > 0 {
		deadline = time.Now().Add(d)
	}
	c.nc.SetReadDeadline(deadline)
	return true
}

func (c *conn) endRead() {
	c.mu.Lock()
	c.reading = false
	c.mu.Unlock()
}

// serve runs the connection: read a frame, route it, write the answer, in
// order, until the client goes away, a request demands the connection be
// closed, or ctx ends.
func (c *conn) serve(ctx context.Context) {
	log := c.srv.logger().With("conn", c.info.ID, "remote", addrString(c.info.Remote))
	defer c.srv.removeConn(c)
	defer c.closed()
	defer c.nc.Close()
	// A panic here is a bug, most likely in a handler, possibly reached
	// through client bytes; it must cost this connection, not the process.
	var frame []byte // the request being served, for the panic log
	defer func() {
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

	br := bufio.NewReaderSize(c.nc, 16<<10)
	max := c.srv.maxRequestSize()
	for {
		if !c.beginRead() {
			log.Debug("protocol: closing connection for shutdown")
			return
		}
		var err error
		frame, err = ReadFrame(br, max)
		c.endRead()
		if err != nil {
			c.logReadError(ctx, log, err)
			return
		}
		resp, err := c.srv.Router.serve(ctx, &c.info, frame)
		if err != nil {
			return // Router.serve logged why
		}
		if resp == nil {
			continue
		}
		if err := resp.writeTo(c.nc); err != nil {
			log.Debug("protocol: write failed, closing connection", "err", err)
			return
		}
	}
}

// logReadError logs why reading a frame ended the connection: a refused
// size prefix is worth a warning (a misconfigured or hostile client), the
// rest is ordinary connection churn.
func (c *conn) logReadError(ctx context.Context, log *slog.Logger, err error) {
	var sizeErr *FrameSizeError
	switch {
	case errors.As(err, &sizeErr):
		log.Warn("protocol: refusing request frame, closing connection", "claimed_size", sizeErr.Size, "max_size", sizeErr.Max, "err", err)
	case errors.Is(err, io.EOF):
		log.Debug("protocol: connection closed by client")
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		log.Debug("protocol: closing connection for shutdown")
	case errors.Is(err, os.ErrDeadlineExceeded):
		log.Info("protocol: closing idle connection", "idle_timeout", c.srv.IdleTimeout)
	default:
		log.Debug("protocol: read failed, closing connection", "err", err)
	}
}
