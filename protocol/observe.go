package protocol

// What Router.Observe is told about each answered request: when it went
// through each phase on its connection, the phases of Kafka's
// RequestMetrics. A connection serves one request at a time (server.go),
// so the phases are those of one goroutine:
//
//	Received  the whole frame has been read
//	Start     its handler is called: after the request-memory budget
//	          granted what decoding it costs (budget.go) and the decode
//	Done      the handler returned; of Start..Done, Request.RemoteTime
//	          was spent parked waiting on others
//	SendStart the answer starts going out: after it is encoded and, for a
//	          client over a quota at a version before KIP-219, held back
//	          for the throttle time
//	SendEnd   the answer has been written to the socket
//
// A request answered with nothing (Produce with acks=0) has SendStart and
// SendEnd equal to when the router finished with it.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestTimes are the phases of one request (see the file comment).
type RequestTimes struct {
	Received, Start, Done, SendStart, SendEnd time.Time
	// Remote is Request.RemoteTime: the part of Start..Done the request
	// was parked.
	Remote time.Duration
	// Throttle is the throttle time the answer imposed on the
	// connection (throttle.go), whether the answer was held back for it
	// or the connection muted after it; Held is the part spent holding
	// the answer back, between Done and SendStart.
	Throttle, Held time.Duration
}

// servedReq is what Router.serve hands the connection for Observe.
type servedReq struct {
	req         *Request
	resp        kmsg.Response
	start, done time.Time
	// frame is the encoded answer when it was encoded into a pooled
	// buffer (Router.serve returns a pointer to it).
	frame responseFrame
}

// observe calls the router's Observe for a request served as sv says.
func (c *conn) observe(sv *servedReq, received, sendStart time.Time, th throttle, held time.Duration) {
	obs := c.srv.Router.Observe
	if obs == nil || sv.req == nil {
		return
	}
	t := RequestTimes{
		Received: received, Start: sv.start, Done: sv.done,
		SendStart: sendStart, SendEnd: time.Now(),
		Remote: sv.req.RemoteTime, Throttle: th.d, Held: held,
	}
	obs(sv.req, sv.resp, &t)
}
