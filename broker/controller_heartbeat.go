package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

// The broker's heartbeat connection to the active controller (the sending
// side of 63_broker_heartbeat.go): controller.HeartbeatTransport over one
// TCP connection to the controller channel of the active controller
// (control_listener.go), the Kafka side of its controller listener, as a
// KRaft broker heartbeats to the controller listener. The connection is
// dialled through Options.RaftDial, like raft's: whatever cuts raft
// between two nodes cuts heartbeats too. The address the controller
// passes (the controller's client listener) is not used; the controller's
// listener is looked up in controller.quorum.voters (controllerAddr),
// since the active controller is always a voter, or, for a voter that
// AddRaftVoter added, is the raft leader's address that the heartbeat
// carries (Heartbeat.ControllerAddr).
//
// The connection stays open between heartbeats: the controller watches it
// and fences this broker as soon as it closes, which is what a killed
// process does. So the client never closes it over a slow answer: a
// heartbeat that times out leaves the connection open, and its late answer
// is skipped by correlation id when it arrives. The connection is closed
// and dialled again only when it broke (a read or write failed), when the
// active controller moved, or when nothing at all was answered on it for a
// whole session (a peer that vanished without closing, e.g. a restarted
// controller behind a network cut). A broken connection is redialled at
// once, within the same heartbeat, so the controller sees the new one well
// inside its grace for a closed connection.

// heartbeatVersion is the BrokerHeartbeat version sent: v1, as Kafka 3.7+
// brokers send.
const heartbeatVersion = 1

// heartbeatClient implements controller.HeartbeatTransport.
type heartbeatClient struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// resolve is a controller's controller listener, "" if unknown.
	resolve     func(controllerID int32) string
	clientID    string
	session     time.Duration // drop a connection that answered nothing this long
	maxResponse int32

	mu   sync.Mutex // one heartbeat at a time; guards the fields below
	conn *heartbeatConn
	corr int32

	// peerClosed is the latest connection whose controller end closed.
	peerClosed atomic.Pointer[peerClose]
}

// peerClose is a heartbeat connection that the controller's side closed.
type peerClose struct {
	controller int32
	at         time.Time
}

// heartbeatConn is one connection and the goroutine that reads its
// answers; the client owns both.
type heartbeatConn struct {
	nc         net.Conn
	controller int32
	addr       string
	answers    chan []byte   // response frames, newest kept
	done       chan struct{} // closed when the reader ends
	err        error         // why the reader ended; set before done closes
	lastAnswer time.Time
}

// newHeartbeatClient returns the heartbeat transport of node nodeID:
// dial opens a controller-channel connection to a controller listener
// (Broker.dialController), resolve names a controller's listener
// (Broker.controllerAddr).
func newHeartbeatClient(dial func(ctx context.Context, network, addr string) (net.Conn, error), resolve func(int32) string, nodeID int32, session time.Duration) *heartbeatClient {
	return &heartbeatClient{
		dial:        dial,
		resolve:     resolve,
		clientID:    peerClientIDPrefix + strconv.Itoa(int(nodeID)),
		session:     session,
		maxResponse: 1 << 20,
	}
}

// Heartbeat sends hb to controllerID's controller channel and waits for
// its answer; addr, the controller's client listener, is not used.
func (h *heartbeatClient) Heartbeat(ctx context.Context, controllerID int32, hb controller.Heartbeat) (controller.HeartbeatReply, error) {
	addr := h.resolve(controllerID)
	if addr == "" {
		addr = hb.ControllerAddr // a voter added by AddRaftVoter
	}
	if addr == "" {
		return controller.HeartbeatReply{}, errNoControllerAddr(controllerID)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.conn; c != nil && (c.controller != controllerID || c.addr != addr || time.Since(c.lastAnswer) > h.session) {
		h.closeLocked()
	}
	reply, err := h.roundTripLocked(ctx, controllerID, addr, hb)
	if err != nil && ctx.Err() == nil && h.conn == nil {
		// The connection broke: dial again at once, so the controller
		// sees this broker back within its grace.
		reply, err = h.roundTripLocked(ctx, controllerID, addr, hb)
	}
	return reply, err
}

// roundTripLocked sends one heartbeat on the current connection (dialling
// one if needed) and reads its answer. A failed write or read closes the
// connection; running out of time does not.
func (h *heartbeatClient) roundTripLocked(ctx context.Context, controllerID int32, addr string, hb controller.Heartbeat) (controller.HeartbeatReply, error) {
	if h.conn == nil {
		nc, err := h.dial(ctx, "tcp", addr)
		if err != nil {
			return controller.HeartbeatReply{}, fmt.Errorf("broker: dial controller %d at %s: %w", controllerID, addr, err)
		}
		c := &heartbeatConn{nc: nc, controller: controllerID, addr: addr, answers: make(chan []byte, 4),
			done: make(chan struct{}), lastAnswer: time.Now()}
		go c.read(h.maxResponse, h.notePeerClose)
		h.conn = c
	}
	c := h.conn
	h.corr++
	corr := h.corr
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = heartbeatVersion
	req.BrokerID, req.BrokerEpoch = hb.BrokerID, hb.BrokerEpoch
	req.CurrentMetadataOffset = hb.MetadataOffset
	req.UnknownTags.Set(incarnationTag, hb.Incarnation[:])
	setOfflineReport(req, hb.Offline)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(h.clientID)).AppendRequest(nil, req, corr)
	if d, ok := ctx.Deadline(); ok {
		c.nc.SetWriteDeadline(d)
	}
	if _, err := c.nc.Write(frame); err != nil {
		h.closeLocked()
		return controller.HeartbeatReply{}, fmt.Errorf("broker: send heartbeat to controller %d: %w", controllerID, err)
	}
	for {
		select {
		case f := <-c.answers:
			c.lastAnswer = time.Now()
			got, resp, err := decodeHeartbeatResponse(f)
			if err != nil {
				h.closeLocked()
				return controller.HeartbeatReply{}, err
			}
			if got != corr {
				continue // the late answer to a heartbeat that timed out
			}
			if err := remoteError(resp.ErrorCode, nil); err != nil {
				return controller.HeartbeatReply{}, err
			}
			return controller.HeartbeatReply{Fenced: resp.IsFenced}, nil
		case <-c.done:
			h.closeLocked()
			return controller.HeartbeatReply{}, fmt.Errorf("broker: heartbeat connection to controller %d: %w", controllerID, c.err)
		case <-ctx.Done():
			return controller.HeartbeatReply{}, fmt.Errorf("%w: heartbeat to controller %d: %v", kerr.RequestTimedOut, controllerID, ctx.Err())
		}
	}
}

// decodeHeartbeatResponse parses a response frame: correlation id, the
// flexible response header's tagged fields, then the body.
func decodeHeartbeatResponse(f []byte) (int32, *kmsg.BrokerHeartbeatResponse, error) {
	if len(f) < 5 {
		return 0, nil, errors.New("broker: short heartbeat response")
	}
	corr := int32(binary.BigEndian.Uint32(f))
	rest, err := skipHeaderTags(f[4:])
	if err != nil {
		return 0, nil, err
	}
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	resp.Version = heartbeatVersion
	if err := resp.ReadFrom(rest); err != nil {
		return 0, nil, fmt.Errorf("broker: decode heartbeat response: %w", err)
	}
	return corr, resp, nil
}

// skipHeaderTags skips the tagged fields of a flexible response header
// (KIP-482: a count, then tag, size and bytes for each).
func skipHeaderTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, errors.New("broker: bad heartbeat response header")
	}
	b = b[l:]
	for range n {
		_, l := binary.Uvarint(b)
		if l <= 0 {
			return nil, errors.New("broker: bad heartbeat response header tag")
		}
		b = b[l:]
		size, l := binary.Uvarint(b)
		if l <= 0 || uint64(len(b)-l) < size {
			return nil, errors.New("broker: bad heartbeat response header tag")
		}
		b = b[l+int(size):]
	}
	return b, nil
}

// read delivers response frames until the connection fails; a frame the
// heartbeat no longer waits for is dropped when the buffer is full. If the
// controller's end closed the connection, peerClosed hears of it at once.
func (c *heartbeatConn) read(max int32, peerClosed func(*heartbeatConn, time.Time)) {
	defer close(c.done)
	for {
		f, err := protocol.ReadFrame(c.nc, max)
		if err != nil {
			c.err = err
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
				peerClosed(c, time.Now())
			}
			return
		}
		select {
		case c.answers <- f:
		default:
		}
	}
}

func (h *heartbeatClient) notePeerClose(c *heartbeatConn, at time.Time) {
	h.peerClosed.Store(&peerClose{controller: c.controller, at: at})
}

// ClosedByPeer reports the controller that most recently closed its end of
// a heartbeat connection, and when.
func (h *heartbeatClient) ClosedByPeer() (int32, time.Time, bool) {
	pc := h.peerClosed.Load()
	if pc == nil {
		return -1, time.Time{}, false
	}
	return pc.controller, pc.at, true
}

// Broken returns the current connection's done channel, closed once its
// reader ended; nil without a connection.
func (h *heartbeatClient) Broken() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil {
		return nil
	}
	return h.conn.done
}

// closeLocked closes the connection and waits for its reader.
func (h *heartbeatClient) closeLocked() {
	if h.conn == nil {
		return
	}
	h.conn.nc.Close()
	<-h.conn.done
	h.conn = nil
}

// Close closes the connection; the controller sees this broker go.
func (h *heartbeatClient) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked()
	return nil
}

// leadsForAcksAll reports whether this broker may acknowledge acks=all
// writes as a partition leader: not once the active controller has failed
// to answer its heartbeats for longer than its session, by which time the
// controller has fenced it or is about to, and elected other leaders
// whose logs would not hold what this broker acknowledged.
func (b *Broker) leadsForAcksAll() bool { return !b.ctrl.ControllerSessionLapsed() }

// errControllerSessionLapsed is the produce error of a leader that lost its
// controller session.
var errControllerSessionLapsed = fmt.Errorf("%w: this broker has not reached the active controller within broker.session.timeout.ms and may have been replaced as leader", kerr.NotLeaderForPartition)
