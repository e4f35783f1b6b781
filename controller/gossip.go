package controller

import (
	"bytes"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"
)

// Membership and failure detection (serf over memberlist's SWIM gossip).
//
// memberlist's LAN defaults take about five seconds to declare a killed
// node dead (1 s probes, suspicion of 4 x log10(n) probe intervals). sluice
// wants a dead broker fenced and its partitions led elsewhere in well under
// a second on a LAN or loopback, so:
//
//   - a member is probed every 100 ms and must answer within 50 ms; a
//     missed probe is retried through IndirectChecks=3 other members and a
//     TCP ping, so one lost UDP packet does not mark a node suspect;
//   - a suspect is declared dead after SuspicionMult x probe interval =
//     200 ms (times log10(n) above ten nodes), and SuspicionMaxTimeoutMult=1
//     stops memberlist from starting at a longer timeout that only shrinks
//     as other members confirm the suspicion;
//   - gossip goes out every 20 ms, so the verdict reaches every node within
//     tens of milliseconds.
//
// A killed node is thus failed everywhere about 200-400 ms after it stops
// answering. The cost is a UDP probe per node per 100 ms, negligible for
// the tens of nodes a sluice cluster has. A graceful leave propagates for
// 100 ms before the node shuts serf down.
const (
	gossipProbeInterval       = 100 * time.Millisecond
	gossipProbeTimeout        = 50 * time.Millisecond
	gossipInterval            = 20 * time.Millisecond
	gossipSuspicionMult       = 2
	gossipSuspicionMaxTimeout = 1
	gossipIndirectChecks      = 3
	gossipPushPullInterval    = 5 * time.Second
	gossipTCPTimeout          = time.Second
	gossipLeavePropagateDelay = 100 * time.Millisecond
	gossipBroadcastTimeout    = time.Second
	gossipReconnectInterval   = 2 * time.Second
	// gossipDeadNodeReclaimTime lets a restarted node take its name back
	// from a different address (an ephemeral gossip port) once the old one
	// has been dead this long; memberlist's default never allows it.
	gossipDeadNodeReclaimTime = 500 * time.Millisecond
	// gossipJoinRetry is how often a node that knows no other member
	// retries its seeds: in a cluster started all at once, the first node
	// up finds nobody yet.
	gossipJoinRetry = 200 * time.Millisecond
)

// Encryption (Config.GossipKeys, gossip.encryption.key): memberlist's
// keyring encrypts and authenticates every packet and stream with AES-GCM
// under the primary key and accepts those any key of the ring opens;
// GossipVerifyIncoming and GossipVerifyOutgoing stay on, so plaintext
// gossip is refused both ways. A node with another key (or none) cannot
// join: its push-pull is refused, its probes are dropped, and it never
// becomes a member, so the active controller never registers it or adds
// it to raft. Refusals are counted (Controller.RefusedPeers) and logged at
// most every refusedLogEvery, since such a node retries its join all the
// time.

// gossip is one node's serf agent. Its event handler only forwards
// membership events to the leadership loop, which reads the full member
// list when it reconciles (Consul's pattern): events may be coalesced or
// dropped without losing anything.
type gossip struct {
	serf    *serf.Serf
	events  chan serf.Event
	started time.Time
	log     *slog.Logger

	// logw turns serf's and memberlist's log lines into slog's, and
	// counts gossip refused for its key.
	logw *levelFilterWriter

	stop chan struct{}
	wg   sync.WaitGroup
}

// serfNodeName is a node's unique serf name.
func serfNodeName(id int32) string { return "sluice-" + strconv.FormatInt(int64(id), 10) }

// startGossip starts serf on bind (host:port, port 0 for any) with tags,
// poking notify on every membership event, and joins seeds in the
// background until some other member is known.
//
// allowed, if not nil, is asked before every outgoing packet or stream
// (Config.GossipAllowed, for tests that cut gossip links).
//
// keys, if not empty, is the keyring (Config.GossipKeys), the first key
// primary.
func startGossip(bind string, nodeID int32, tags map[string]string, seeds []string, notify func(), allowed func(to string) bool, keys [][]byte, logger *slog.Logger) (*gossip, error) {
	host, portText, err := net.SplitHostPort(bind)
	if err != nil {
		return nil, fmt.Errorf("controller: gossip address %q: %w", bind, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("controller: gossip address %q: bad port", bind)
	}
	logger = logger.With("component", "gossip")
	logw := &levelFilterWriter{log: logger}
	stdlog := log.New(logw, "", 0)

	ml := memberlist.DefaultLANConfig()
	ml.BindAddr, ml.BindPort = host, port
	ml.ProbeInterval = gossipProbeInterval
	ml.ProbeTimeout = gossipProbeTimeout
	ml.GossipInterval = gossipInterval
	ml.SuspicionMult = gossipSuspicionMult
	ml.SuspicionMaxTimeoutMult = gossipSuspicionMaxTimeout
	ml.IndirectChecks = gossipIndirectChecks
	ml.PushPullInterval = gossipPushPullInterval
	ml.TCPTimeout = gossipTCPTimeout
	ml.DeadNodeReclaimTime = gossipDeadNodeReclaimTime
	ml.Logger = stdlog
	if len(keys) > 0 {
		kr, err := memberlist.NewKeyring(keys, keys[0])
		if err != nil {
			return nil, fmt.Errorf("controller: gossip encryption key: %w", err)
		}
		ml.Keyring = kr
		ml.GossipVerifyIncoming, ml.GossipVerifyOutgoing = true, true
	}
	if allowed != nil {
		t, err := newFilteredGossipTransport(host, port, stdlog, allowed)
		if err != nil {
			return nil, err
		}
		ml.Transport = t
		if port == 0 {
			ml.BindPort, ml.AdvertisePort = t.GetAutoBindPort(), t.GetAutoBindPort()
		}
	}

	conf := serf.DefaultConfig()
	conf.NodeName = serfNodeName(nodeID)
	conf.Tags = tags
	g := &gossip{events: make(chan serf.Event, 64), log: logger, logw: logw, stop: make(chan struct{})}
	conf.EventCh = g.events
	conf.MemberlistConfig = ml
	conf.LeavePropagateDelay = gossipLeavePropagateDelay
	conf.BroadcastTimeout = gossipBroadcastTimeout
	conf.ReconnectInterval = gossipReconnectInterval
	conf.DisableCoordinates = true
	conf.Logger = stdlog

	s, err := serf.Create(conf)
	if err != nil {
		return nil, fmt.Errorf("controller: start gossip on %s: %w", bind, err)
	}
	g.serf, g.started = s, time.Now()

	g.wg.Add(2)
	go g.forward(notify)
	go g.join(seeds)
	return g, nil
}

// forward passes membership events on as pokes until serf shuts down.
func (g *gossip) forward(notify func()) {
	defer g.wg.Done()
	for {
		select {
		case e := <-g.events:
			if me, ok := e.(serf.MemberEvent); ok {
				for _, m := range me.Members {
					g.log.Info("member event", "event", me.Type.String(), "member", m.Name, "addr", m.Addr.String())
				}
				notify()
			}
		case <-g.stop:
			return
		}
	}
}

// join joins the seeds (skipping this node's own address) until serf
// knows another member, retrying every gossipJoinRetry.
func (g *gossip) join(seeds []string) {
	defer g.wg.Done()
	local := g.serf.Memberlist().LocalNode()
	self := net.JoinHostPort(local.Addr.String(), strconv.Itoa(int(local.Port)))
	var others []string
	for _, s := range seeds {
		if s != "" && s != self {
			others = append(others, s)
		}
	}
	if len(others) == 0 {
		return // the first node of a new cluster: others join it
	}
	t := time.NewTicker(gossipJoinRetry)
	defer t.Stop()
	for {
		if g.serf.NumNodes() > 1 {
			return
		}
		if _, err := g.serf.Join(others, true); err == nil {
			return
		}
		select {
		case <-t.C:
		case <-g.stop:
			return
		}
	}
}

// members returns every member serf knows that gossips sluice tags.
func (g *gossip) members() []member {
	var out []member
	for _, sm := range g.serf.Members() {
		m, ok := memberFromTags(sm.Tags)
		if !ok {
			continue
		}
		switch sm.Status {
		case serf.StatusAlive:
			m.Status = memberAlive
		case serf.StatusLeaving:
			m.Status = memberLeaving
		case serf.StatusLeft:
			m.Status = memberLeft
		case serf.StatusFailed:
			m.Status = memberFailed
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// addr is serf's own address, which other nodes can use as a seed.
func (g *gossip) addr() string {
	local := g.serf.Memberlist().LocalNode()
	return net.JoinHostPort(local.Addr.String(), strconv.Itoa(int(local.Port)))
}

// shutdown stops serf, announcing a leave first when graceful so other
// nodes see member-left at once instead of detecting a failure.
func (g *gossip) shutdown(graceful bool) {
	if graceful {
		if err := g.serf.Leave(); err != nil {
			g.log.Warn("gossip leave failed", "err", err)
		}
	}
	if err := g.serf.Shutdown(); err != nil {
		g.log.Warn("gossip shutdown failed", "err", err)
	}
	close(g.stop)
	g.wg.Wait()
}

// levelFilterWriter turns serf's and memberlist's "[LEVEL] text" log lines
// into slog records at warn and above, dropping the chattier levels. Lines
// about gossip no key decrypts (or plaintext on an encrypted cluster) are
// counted and logged at most every refusedLogEvery.
type levelFilterWriter struct {
	log     *slog.Logger
	refused atomic.Uint64
	lastLog atomic.Int64 // unix nanos of the last refusal logged
}

func (w *levelFilterWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	if isKeyRefusal(line) {
		w.refused.Add(1)
		now := time.Now().UnixNano()
		if last := w.lastLog.Load(); now-last >= int64(refusedLogEvery) && w.lastLog.CompareAndSwap(last, now) {
			w.log.Warn("refused gossip not encrypted with the cluster's gossip.encryption.key (further refusals logged at most every 10s)",
				"detail", string(line), "refused_total", w.refused.Load())
		}
		return len(p), nil
	}
	switch {
	case bytes.HasPrefix(line, []byte("[ERR]")):
		w.log.Error(string(bytes.TrimSpace(line[5:])))
	case bytes.HasPrefix(line, []byte("[WARN]")):
		w.log.Warn(string(bytes.TrimSpace(line[6:])))
	}
	return len(p), nil
}

// isKeyRefusal reports whether a memberlist line says it refused a packet
// or stream for its encryption: memberlist v0.7's texts, "no installed
// keys could decrypt the message", "Decrypt packet failed", "encryption
// is configured but remote state is not encrypted" and the reverse.
func isKeyRefusal(line []byte) bool {
	l := bytes.ToLower(line)
	return bytes.Contains(l, []byte("decrypt")) || bytes.Contains(l, []byte("not encrypted")) ||
		bytes.Contains(l, []byte("encryption is not configured"))
}
