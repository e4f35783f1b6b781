//go:build linux

package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Faults. Network faults are iptables rules in the nodes' namespaces, all
// DROP, so that a cut connection sees silence and never a reset: a peer
// learns of a cut only by timing out, as on a real network. Rules name a
// peer by its address and a service by its port, both the same on every
// node (netns_test.go). A rule in a's OUTPUT chain stops what a sends, one
// in a's INPUT chain what a receives; TCP needs both directions, so a
// one-way rule on a TCP port cuts the connection both ways, while on UDP
// (serf's probes and gossip) it really is one-way.
//
// heal removes every rule of every node at once, continues a paused
// process and restarts a killed one. Faults are not healed one by one:
// every scenario ends in a full heal, as a real network's repair does.

// portClass is a service every node runs on the same port.
type portClass struct {
	name   string
	port   int
	protos []string
}

var (
	kafkaClass  = portClass{"kafka", kafkaPort, []string{"tcp"}}
	raftClass   = portClass{"raft", raftPort, []string{"tcp"}}
	gossipClass = portClass{"gossip", gossipPort, []string{"tcp", "udp"}}
)

// idx is the namespace index of node id.
func idx(id int32) int { return int(id - 1) }

// cutPort stops a from reaching b's port of class pc: a's packets to it
// are dropped on the way out of a and again on the way into b. Connections
// b opens to a are not affected (for TCP classes, except that a's answers
// on them still flow).
func (c *cluster) cutPort(a, b int32, pc portClass) error { return c.cutPortOp("-A", a, b, pc) }

// restorePort deletes the rules of cutPort(a, b, pc) only, for a scenario
// that heals one cut while others stay.
func (c *cluster) restorePort(a, b int32, pc portClass) error { return c.cutPortOp("-D", a, b, pc) }

func (c *cluster) cutPortOp(op string, a, b int32, pc portClass) error {
	ipA, ipB := c.node(a).ip, c.node(b).ip
	port := strconv.Itoa(pc.port)
	var errs []error
	for _, proto := range pc.protos {
		errs = append(errs,
			c.net.ipt(idx(a), op, "OUTPUT", "-d", ipB, "-p", proto, "--dport", port, "-j", "DROP"),
			c.net.ipt(idx(b), op, "INPUT", "-s", ipA, "-p", proto, "--dport", port, "-j", "DROP"))
	}
	return errors.Join(errs...)
}

// cutPortBetween cuts class pc between a and b in both directions.
func (c *cluster) cutPortBetween(a, b int32, pc portClass) error {
	return errors.Join(c.cutPort(a, b, pc), c.cutPort(b, a, pc))
}

// dropAnswers drops, in a's namespace, every packet coming from b's port of
// class pc: a's requests to b arrive, b's answers never reach a.
func (c *cluster) dropAnswers(a, b int32, pc portClass) error {
	var errs []error
	for _, proto := range pc.protos {
		errs = append(errs, c.net.ipt(idx(a), "-A", "INPUT", "-s", c.node(b).ip, "-p", proto, "--sport", strconv.Itoa(pc.port), "-j", "DROP"))
	}
	return errors.Join(errs...)
}

// raftHeartbeatMaxLen is above the largest packet of a hashicorp/raft
// heartbeat between two nodes (measured: about 180 bytes with IP and TCP
// headers) and below any AppendEntries that carries a log entry (430
// bytes and more).
const raftHeartbeatMaxLen = 230

// stallRaft drops, in a's namespace, the packets from k to a's raft port
// that are longer than a heartbeat: a keeps hearing k's heartbeats, so it
// still follows k as raft leader (and as the active controller), but the
// TCP stream that carries new log entries to a stalls at the first one, so
// a learns nothing k commits from then on.
func (c *cluster) stallRaft(a, k int32) error {
	return c.net.ipt(idx(a), "-A", "INPUT", "-s", c.node(k).ip, "-p", "tcp", "--dport", strconv.Itoa(raftPort),
		"-m", "length", "--length", fmt.Sprintf("%d:65535", raftHeartbeatMaxLen), "-j", "DROP")
}

// oneWay drops everything a sends to b.
func (c *cluster) oneWay(a, b int32) error {
	return c.net.ipt(idx(a), "-A", "OUTPUT", "-d", c.node(b).ip, "-j", "DROP")
}

// cutBetween drops everything between a and b, both ways.
func (c *cluster) cutBetween(a, b int32) error {
	return errors.Join(c.oneWay(a, b), c.oneWay(b, a))
}

// isolate drops everything a sends or receives except on its loopback:
// peers and clients alike lose it.
func (c *cluster) isolate(a int32) error {
	return errors.Join(
		c.net.ipt(idx(a), "-A", "INPUT", "!", "-i", "lo", "-j", "DROP"),
		c.net.ipt(idx(a), "-A", "OUTPUT", "!", "-o", "lo", "-j", "DROP"))
}

// isolateFromPeers cuts a from every other node but not from clients.
func (c *cluster) isolateFromPeers(a int32) error {
	var errs []error
	for _, b := range c.others(a) {
		errs = append(errs, c.cutBetween(a, b))
	}
	return errors.Join(errs...)
}

// pause stops node a's process with SIGSTOP: its sockets stay open and its
// peers see silence, like a long GC pause or a frozen VM.
func (c *cluster) pause(a int32) error { return c.node(a).signal(syscall.SIGSTOP) }

// kill9 kills node a's process with SIGKILL; heal restarts it.
func (c *cluster) kill9(a int32) error {
	c.node(a).kill()
	return nil
}

// heal removes every rule, continues paused nodes, restarts killed ones and
// waits for restarted ones to be ready.
func (c *cluster) heal() error {
	errs := []error{c.net.flush()}
	for _, nd := range c.nodes {
		if !nd.running() {
			if err := nd.start(); err != nil {
				errs = append(errs, err)
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
			errs = append(errs, nd.waitReady(ctx))
			cancel()
			continue
		}
		nd.mu.Lock()
		paused := nd.paused
		nd.mu.Unlock()
		if paused {
			errs = append(errs, nd.signal(syscall.SIGCONT))
		}
	}
	return errors.Join(errs...)
}

// A nemesisFault is one random fault: a description for the log and the
// action that applies it. Every one is undone by heal.
type nemesisFault struct {
	what  string
	apply func() error
}

// randomFault picks one fault at random over the cluster's nodes: the
// kinds of the named scenarios, with random victims.
func (c *cluster) randomFault(rng *rand.Rand) nemesisFault {
	ids := c.others()
	pick := func() int32 { return ids[rng.IntN(len(ids))] }
	pair := func() (int32, int32) {
		a := pick()
		rest := c.others(a)
		return a, rest[rng.IntN(len(rest))]
	}
	classes := []portClass{kafkaClass, raftClass, gossipClass}
	switch rng.IntN(9) {
	case 0:
		a := pick()
		return nemesisFault{fmt.Sprintf("isolate %d", a), func() error { return c.isolate(a) }}
	case 1:
		a := pick()
		return nemesisFault{fmt.Sprintf("cut %d from its peers", a), func() error { return c.isolateFromPeers(a) }}
	case 2:
		a, b := pair()
		pc := classes[rng.IntN(len(classes))]
		return nemesisFault{fmt.Sprintf("cut %s port between %d and %d", pc.name, a, b), func() error { return c.cutPortBetween(a, b, pc) }}
	case 3:
		a, b := pair()
		pc := classes[rng.IntN(len(classes))]
		return nemesisFault{fmt.Sprintf("cut %d -> %d %s port", a, b, pc.name), func() error { return c.cutPort(a, b, pc) }}
	case 4:
		a, b := pair()
		return nemesisFault{fmt.Sprintf("one-way %d -> %d", a, b), func() error { return c.oneWay(a, b) }}
	case 5:
		a, b := pair()
		pc := classes[rng.IntN(2)] // TCP classes: answers are TCP segments
		return nemesisFault{fmt.Sprintf("drop %d's %s answers to %d", b, pc.name, a), func() error { return c.dropAnswers(a, b, pc) }}
	case 6:
		a, b := pair()
		rest := c.others(a, b)
		x := rest[0]
		return nemesisFault{fmt.Sprintf("ring: cut %d <-> %d, %d sees both", a, b, x), func() error { return c.cutBetween(a, b) }}
	case 7:
		a := pick()
		return nemesisFault{fmt.Sprintf("pause %d", a), func() error { return c.pause(a) }}
	default:
		a := pick()
		return nemesisFault{fmt.Sprintf("kill -9 %d", a), func() error { return c.kill9(a) }}
	}
}

// nemesis applies random faults from rng for total: each held for a random
// time between hold/2 and hold, then healed, then a quiet time of up to
// hold/2 so the cluster can recover. It returns the faults it applied.
func (c *cluster) nemesis(rng *rand.Rand, total, hold time.Duration, logf func(string, ...any)) ([]string, error) {
	var done []string
	end := time.Now().Add(total)
	for time.Now().Before(end) {
		f := c.randomFault(rng)
		d := hold/2 + time.Duration(rng.Int64N(int64(hold/2)+1))
		logf("nemesis: %s for %v", f.what, d.Round(time.Millisecond))
		if err := f.apply(); err != nil {
			c.heal()
			return done, fmt.Errorf("nemesis: %s: %w", f.what, err)
		}
		done = append(done, f.what)
		time.Sleep(d)
		if err := c.heal(); err != nil {
			return done, fmt.Errorf("nemesis: heal after %s: %w", f.what, err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(hold/2) + 1)))
	}
	logf("nemesis: %d faults: %s", len(done), strings.Join(done, "; "))
	return done, nil
}
