package protocol

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client quota throttling, as Kafka applies it (KIP-219). A handler that
// finds its client over a quota (issue 18: producer_byte_rate,
// consumer_byte_rate, request_percentage, controller_mutation_rate) says
// so in the response's throttle_time_ms, or, sending no response, in
// Request.ThrottleMillis; the connection does the rest, whatever the api:
//
//   - at a version from KIP-219 on (kmsg's Throttle reports it; Kafka's
//     AbstractResponse.shouldClientThrottle), the response is sent at once
//     and the connection is then muted: nothing more is read from it until
//     the throttle time, counted from when the handler answered, has
//     passed. Requests the client pipelines meanwhile wait in the socket;
//     the connection is not closed, and the client, told the throttle
//     time, holds back by itself;
//   - at an older version the client would not hold back, so the response
//     itself is held for the throttle time, the connection muted as it
//     waits, as Kafka throttled before KIP-219.
//
// The time muted is not the client's idle time: connections.max.idle.ms
// counts from the end of the mute. A mute longer than
// connections.max.idle.ms closes the connection once that much has
// passed, as Kafka's idle expiry closes a muted channel that has been
// silent that long: a tiny quota can give a throttle of days, and a
// client gone meanwhile must not hold its connection that long. A server
// shutting down ends a mute at once.

// throttle is what a handler's answer asks of the connection.
type throttle struct {
	d time.Duration
	// afterResponse: mute after sending the response (KIP-219), rather
	// than hold the response back.
	afterResponse bool
}

// responseThrottle reads the throttle of a response, unwrapping a
// SplicedResponse (whose embedded interface hides Throttle).
func responseThrottle(resp kmsg.Response) throttle {
	if sr, ok := resp.(*SplicedResponse); ok {
		resp = sr.Response
	}
	tr, ok := resp.(kmsg.ThrottleResponse)
	if !ok {
		return throttle{}
	}
	ms, after := tr.Throttle()
	if ms <= 0 {
		return throttle{}
	}
	return throttle{d: time.Duration(ms) * time.Millisecond, afterResponse: after}
}

// noResponseThrottle is the throttle of a request answered with nothing:
// there is no response to hold back, so the connection is muted.
func noResponseThrottle(req *Request) throttle {
	if req.ThrottleMillis <= 0 {
		return throttle{}
	}
	return throttle{d: time.Duration(req.ThrottleMillis) * time.Millisecond, afterResponse: true}
}

// waitThrottle mutes the connection until until: it reads nothing and
// sends nothing. It reports false if ctx ended first, or if the mute
// outlasted connections.max.idle.ms, after which the connection is to be
// closed.
func (c *conn) waitThrottle(ctx context.Context, until time.Time) bool {
	d := time.Until(until)
	if d <= 0 {
		return true
	}
	expired := false
	if idle := c.srv.IdleTimeout; idle > 0 && d > idle {
		d, expired = idle, true
	}
	c.log.Debug("protocol: client over its quota, connection muted", "throttle", time.Until(until))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		if expired {
			c.log.Info("protocol: connection muted for longer than connections.max.idle.ms, closing it", "connections_max_idle", c.srv.IdleTimeout)
		}
		return !expired
	case <-ctx.Done():
		return false
	}
}
