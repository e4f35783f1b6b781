package protocol

import (
	"context"
	"math"
	"net"
	"time"

	"github.com/sluicedev/sluice/quotas"
)

// Connection creation quotas (KIP-612), with Kafka's semantics
// (SocketServer's ConnectionQuotas):
//
//   - max.connection.creation.rate, broker-wide, and the same key per
//     listener (listener.name.<l>.max.connection.creation.rate, which
//     falls back to the broker-wide value): each accepted connection is
//     recorded in the broker's and the listener's rate sensors; when
//     either is over its limit the acceptor waits, before accepting the
//     next connection, until the rate is back under it (the longer of the
//     two delays, at most quota.window.size.seconds). The connection just
//     accepted is then served; the attempts behind it wait in the kernel's
//     backlog. So excess connects are delayed, never refused. Kafka exempts
//     its inter-broker listener from the broker-wide rate when it has other
//     listeners; sluice serves clients and peers on one listener, which
//     Kafka does not exempt either.
//   - connection_creation_rate per IP address, a client quota on the ip
//     entity or the <default> ip entity (Server.IPConnectionRate): a
//     connection from an address over its rate is accepted but neither
//     read nor counted; it is taken back from every rate it was recorded
//     in, held open for the throttle time (at most
//     quota.window.size.seconds) and then closed. The client sees its
//     connection closed without an answer and backs off as after any
//     disconnect.
//
// Rates are measured as Kafka's sensors measure them
// (quotas.ConnectionRate), over quota.window.num samples of
// quota.window.size.seconds; a first burst of up to
// rate×(quota.window.num-1)×quota.window.size.seconds connections is
// therefore accepted at once, as in Kafka. A rate of 0 makes every
// connection wait (or be held) the longest throttle,
// quota.window.size.seconds, as Kafka's unbounded throttle time capped at
// the window does. Limits are read from ConnCreationRates and
// IPConnectionRate for every connection, so a change applies to the next
// one.
//
// Memory stays bounded under a flood: per-IP sensors exist only for
// addresses with a quota, one is dropped once all its samples have
// expired (it then measures nothing, so dropping it changes no answer;
// Kafka keeps idle ones for an hour), and at most maxIPSensors are kept.
// At most maxDelayedClose throttled connections are held open at once; a
// throttled connection beyond that is closed at once.

const (
	maxIPSensors    = 1 << 16
	maxDelayedClose = 1024
)

// connRates is a Server's connection rate sensors and its throttled
// connections waiting to be closed. Guarded by Server.rateMu.
type connRates struct {
	broker       quotas.ConnectionRate
	ip           map[string]*quotas.ConnectionRate
	sweepAt      int
	delayedClose map[net.Conn]*time.Timer
	stats        ConnQuotaStats
}

// ConnQuotaStats are counters of the connection creation quotas, for
// tests and metrics.
type ConnQuotaStats struct {
	// IPThrottled counts connections closed after a throttle delay
	// because their address was over its connection_creation_rate
	// (Kafka's ip-connection-accept-throttle-time events).
	IPThrottled uint64
	// AcceptDelays counts the times the acceptor waited for
	// max.connection.creation.rate, and AcceptBlocked the total wait
	// (Kafka's AcceptorBlockedPercent).
	AcceptDelays  uint64
	AcceptBlocked time.Duration
	// DelayedClose is the throttled connections held open now, IPSensors
	// the per-IP rate sensors kept now.
	DelayedClose int
	IPSensors    int
}

// ConnQuotaStats returns the connection quota counters.
func (s *Server) ConnQuotaStats() ConnQuotaStats {
	s.rateMu.Lock()
	defer s.rateMu.Unlock()
	r := s.ratesLocked()
	st := r.stats
	st.DelayedClose, st.IPSensors = len(r.delayedClose), len(r.ip)
	return st
}

func (s *Server) ratesLocked() *connRates {
	if s.rates == nil {
		s.rates = &connRates{ip: map[string]*quotas.ConnectionRate{}, sweepAt: 1024, delayedClose: map[net.Conn]*time.Timer{}}
	}
	return s.rates
}

// rateWindow is the sensors' window: quota.window.num samples of
// quota.window.size.seconds (Kafka's 11 and 1 s when unset).
func (s *Server) rateWindow() quotas.WindowConfig {
	w := quotas.WindowConfig{Samples: s.QuotaWindowNum, Window: s.QuotaWindowSize}
	if w.Samples <= 0 || w.Window <= 0 {
		return quotas.DefaultWindow
	}
	return w
}

// admitRate applies the connection creation quotas to nc, just accepted
// on the listener whose rate sensor is listener: it waits while the
// broker's or the listener's rate is over its limit, then checks the
// rate of nc's address. It returns false if nc was taken over (held for
// a throttled close, or closed because ctx ended during the wait).
func (s *Server) admitRate(ctx context.Context, nc net.Conn, listener *quotas.ConnectionRate) bool {
	w := s.rateWindow()
	maxWait := w.Window // quota.window.size.seconds bounds every throttle
	brokerRate, listenerRate := math.MaxInt32, math.MaxInt32
	if s.ConnCreationRates != nil {
		brokerRate, listenerRate = s.ConnCreationRates()
	}

	s.rateMu.Lock()
	r := s.ratesLocked()
	now := time.Now()
	wait := r.broker.RecordAndThrottle(w, float64(brokerRate), maxWait, now)
	wait = max(wait, listener.RecordAndThrottle(w, float64(listenerRate), maxWait, now))
	s.rateMu.Unlock()

	if wait > 0 {
		s.logger().Debug("protocol: connection creation rate over max.connection.creation.rate, delaying the next accept",
			"delay", wait, "max_connection_creation_rate", brokerRate, "listener_rate", listenerRate)
		start := time.Now()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			nc.Close()
			return false
		}
		s.rateMu.Lock()
		r.stats.AcceptDelays++
		r.stats.AcceptBlocked += time.Since(start)
		s.rateMu.Unlock()
	}

	if s.IPConnectionRate == nil {
		return true
	}
	ip := remoteIP(nc.RemoteAddr())
	quota, ok := s.IPConnectionRate(ip)
	if !ok || quota >= math.MaxInt32 {
		return true
	}
	s.rateMu.Lock()
	now = time.Now()
	sensor := s.ipSensorLocked(r, ip, w, now)
	throttle := sensor.RecordAndThrottle(w, quota, maxWait, now)
	if throttle == 0 {
		s.rateMu.Unlock()
		return true
	}
	// Not accepted: take it back from every rate it was recorded in.
	sensor.Record(w, -1, now)
	r.broker.Record(w, -1, now)
	listener.Record(w, -1, now)
	r.stats.IPThrottled++
	held := s.delayCloseLocked(r, nc, throttle)
	s.rateMu.Unlock()
	s.logger().Debug("protocol: address over its connection_creation_rate, closing the connection after the throttle time",
		"remote", addrString(nc.RemoteAddr()), "throttle", throttle, "connection_creation_rate", quota, "held", held)
	return false
}

// ipSensorLocked returns ip's rate sensor, creating it. s.rateMu must be
// held.
func (s *Server) ipSensorLocked(r *connRates, ip string, w quotas.WindowConfig, now time.Time) *quotas.ConnectionRate {
	if sensor, ok := r.ip[ip]; ok {
		return sensor
	}
	if len(r.ip) >= r.sweepAt {
		for k, x := range r.ip {
			if x.Idle(w, now) {
				delete(r.ip, k)
			}
		}
		r.sweepAt = max(2*len(r.ip), 1024)
	}
	if len(r.ip) >= maxIPSensors {
		for k := range r.ip { // any one: every sensor is in use
			delete(r.ip, k)
			break
		}
	}
	sensor := &quotas.ConnectionRate{}
	r.ip[ip] = sensor
	return sensor
}

// delayCloseLocked holds nc open for d, unread, then closes it; if
// maxDelayedClose connections are already held it closes nc at once. It
// reports whether nc is held. s.rateMu must be held.
func (s *Server) delayCloseLocked(r *connRates, nc net.Conn, d time.Duration) bool {
	if len(r.delayedClose) >= maxDelayedClose || s.shutdownCtx.Err() != nil {
		nc.Close()
		return false
	}
	r.delayedClose[nc] = time.AfterFunc(d, func() {
		s.rateMu.Lock()
		delete(r.delayedClose, nc)
		s.rateMu.Unlock()
		nc.Close()
	})
	return true
}

// closeThrottled closes every connection held for a throttled close, at
// Shutdown.
func (s *Server) closeThrottled() {
	s.rateMu.Lock()
	defer s.rateMu.Unlock()
	r := s.ratesLocked()
	for nc, t := range r.delayedClose {
		t.Stop()
		nc.Close()
		delete(r.delayedClose, nc)
	}
}
