//go:build linux

package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The network: one bridge in the root namespace, one namespace per node.
//
//	root namespace (the test process, the client)
//	  bridge chb<run>  10.77.<k>.254/24
//	    ├── veth chv<run><n>  ⇄  namespace chaos-<run>-<n>: eth0 10.77.<k>.<n>/24, lo
//	    └── ...
//
// <run> is the test process's pid and a letter counting the networks it
// made, so names are unique per run; a network whose pid no longer runs is
// a leftover of a killed run, and removeStale deletes it before a new one is
// made. Interface names are limited to 15 bytes, which is why the prefixes
// are short. <k> is the first 10.77.<k>.0/24 no interface of this machine
// uses, so two test processes at once do not share a subnet.
//
// Every node listens on the same ports at its own address, so a fault can
// name a port class (Kafka, raft, gossip) without a table of ports.

const (
	nsPrefix     = "chaos-"
	bridgePrefix = "chb"
	vethPrefix   = "chv"
	peerPrefix   = "chp"

	kafkaPort  = 9092
	raftPort   = 9093
	gossipPort = 7946

	// cmdTimeout bounds one ip or iptables command; they take milliseconds,
	// so hitting it means the kernel or the tool is stuck.
	cmdTimeout = 20 * time.Second
)

// netSeq counts the networks this process made, for unique names.
var netSeq atomic.Int32

// network is a bridge and one namespace per node. Its methods are safe to
// call from one goroutine at a time; the scenario driver is that goroutine.
type network struct {
	run      string // pid and letter
	bridge   string
	subnet   string // "10.77.<k>", without the host part
	iptables string // the iptables binary that works in a namespace
	nodes    []netNode
	// forwardRule is set when newNetwork added an ACCEPT rule for the
	// bridge to the root namespace's FORWARD chain, for remove to delete.
	forwardRule []string
}

// netNode is one node's namespace and address.
type netNode struct {
	ns   string
	ip   string
	veth string
}

// run runs a command and returns its error with its output, so a failing
// ip or iptables call says why.
func run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// output runs a command and returns its standard output.
func output(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// skipUnlessCapable skips the test, with the reason, when this machine
// cannot run the suite: not root, no ip(8), no iptables that works inside a
// network namespace. It returns the iptables binary to use.
func skipUnlessCapable(t *testing.T) string {
	t.Helper()
	if os.Getenv("SLUICE_CHAOS") == "skip" {
		t.Skip("SLUICE_CHAOS=skip (scripts/test-all.sh runs the suite as its own step)")
	}
	if os.Geteuid() != 0 {
		t.Skip("chaos: needs root for network namespaces and iptables")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("chaos: ip (iproute2) not installed")
	}
	probe := fmt.Sprintf("%sprobe-%d", nsPrefix, os.Getpid())
	_ = run("ip", "netns", "del", probe)
	if err := run("ip", "netns", "add", probe); err != nil {
		t.Skipf("chaos: cannot make a network namespace: %v", err)
	}
	defer run("ip", "netns", "del", probe)
	for _, bin := range []string{"iptables", "iptables-legacy"} {
		if _, err := exec.LookPath(bin); err != nil {
			continue
		}
		rule := []string{"-d", "192.0.2.1", "-p", "tcp", "--dport", "9", "-j", "DROP"}
		add := append([]string{"netns", "exec", probe, bin, "-w", "-A", "OUTPUT"}, rule...)
		if err := run("ip", add...); err != nil {
			t.Logf("chaos: %s does not work in a namespace: %v", bin, err)
			continue
		}
		return bin
	}
	t.Skip("chaos: no iptables that works in a network namespace (apt-get install -y iptables)")
	return ""
}

// removeStale deletes namespaces and links with the chaos prefixes whose
// owning process no longer runs: leftovers of a run that was killed before
// its cleanup. Those of a live process (another test run) are left alone.
func removeStale(t *testing.T) {
	t.Helper()
	if out, err := output("ip", "netns", "list"); err == nil {
		for line := range strings.Lines(out) {
			name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			if !strings.HasPrefix(name, nsPrefix) || ownerAlive(strings.TrimPrefix(name, nsPrefix)) {
				continue
			}
			killNamespace(name)
			if err := run("ip", "netns", "del", name); err != nil {
				t.Logf("chaos: remove stale namespace: %v", err)
			} else {
				t.Logf("chaos: removed stale namespace %s", name)
			}
		}
	}
	out, err := output("ip", "-o", "link", "show")
	if err != nil {
		return
	}
	for line := range strings.Lines(out) {
		// "12: chb1234a: <BROADCAST,...>" or "13: chv1234a1@if2: ..."
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
		var rest string
		switch {
		case strings.HasPrefix(name, bridgePrefix):
			rest = strings.TrimPrefix(name, bridgePrefix)
		case strings.HasPrefix(name, vethPrefix):
			rest = strings.TrimPrefix(name, vethPrefix)
		default:
			continue
		}
		if ownerAlive(rest) {
			continue
		}
		if err := run("ip", "link", "del", name); err == nil {
			t.Logf("chaos: removed stale link %s", name)
		}
	}
}

// ownerAlive reports whether the pid that a name's run part starts with is
// a running process. A name it cannot parse is treated as alive, so that
// nothing this suite did not make is deleted.
func ownerAlive(run string) bool {
	digits := run
	if i := strings.IndexFunc(run, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = run[:i]
	}
	pid, err := strconv.Atoi(digits)
	if err != nil || pid <= 0 {
		return true
	}
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// killNamespace kills every process still running in namespace ns.
func killNamespace(ns string) {
	out, err := output("ip", "netns", "pids", ns)
	if err != nil {
		return
	}
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// newNetwork makes the bridge and n namespaces, each with its veth and
// address, and registers their removal with t.Cleanup before anything is
// made, so a failure half-way leaves nothing behind.
func newNetwork(t *testing.T, iptables string, n int) *network {
	t.Helper()
	seq := netSeq.Add(1) - 1
	nw := &network{run: fmt.Sprintf("%d%c", os.Getpid(), 'a'+seq%26), iptables: iptables}
	nw.bridge = bridgePrefix + nw.run
	t.Cleanup(nw.remove)

	k, err := freeSubnet()
	if err != nil {
		t.Fatalf("chaos: %v", err)
	}
	nw.subnet = fmt.Sprintf("10.77.%d", k)
	must := func(name string, args ...string) {
		t.Helper()
		if err := run(name, args...); err != nil {
			t.Fatalf("chaos: make the network: %v", err)
		}
	}
	must("ip", "link", "add", nw.bridge, "type", "bridge")
	must("ip", "addr", "add", nw.subnet+".254/24", "dev", nw.bridge)
	must("ip", "link", "set", nw.bridge, "up")
	// With br_netfilter loaded, frames crossing a bridge go through the
	// root namespace's FORWARD chain, whose policy Docker hosts set to
	// DROP: the nodes would not reach each other. Accept what stays on
	// this bridge, and only then.
	if forwardDrops(iptables) {
		nw.forwardRule = []string{"FORWARD", "-i", nw.bridge, "-o", nw.bridge, "-j", "ACCEPT"}
		must(iptables, append([]string{"-w", "-I"}, nw.forwardRule...)...)
	}
	for i := 1; i <= n; i++ {
		nn := netNode{
			ns:   fmt.Sprintf("%s%s-%d", nsPrefix, nw.run, i),
			ip:   fmt.Sprintf("%s.%d", nw.subnet, i),
			veth: fmt.Sprintf("%s%s%d", vethPrefix, nw.run, i),
		}
		nw.nodes = append(nw.nodes, nn)
		peer := fmt.Sprintf("%s%s%d", peerPrefix, nw.run, i)
		must("ip", "netns", "add", nn.ns)
		must("ip", "link", "add", nn.veth, "type", "veth", "peer", "name", peer, "netns", nn.ns)
		must("ip", "link", "set", nn.veth, "master", nw.bridge)
		must("ip", "link", "set", nn.veth, "up")
		must("ip", "-n", nn.ns, "link", "set", "lo", "up")
		must("ip", "-n", nn.ns, "link", "set", peer, "name", "eth0")
		must("ip", "-n", nn.ns, "addr", "add", nn.ip+"/24", "dev", "eth0")
		must("ip", "-n", nn.ns, "link", "set", "eth0", "up")
	}
	return nw
}

// forwardDrops reports whether bridged traffic passes through iptables and
// the root namespace's FORWARD policy drops it.
func forwardDrops(iptables string) bool {
	b, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables")
	if err != nil || strings.TrimSpace(string(b)) != "1" {
		return false
	}
	out, err := output(iptables, "-w", "-S", "FORWARD")
	return err == nil && strings.Contains(out, "-P FORWARD DROP")
}

// freeSubnet returns the first k such that no address of this machine is
// in 10.77.k.0/24.
func freeSubnet() (int, error) {
	out, err := output("ip", "-o", "-4", "addr", "show")
	if err != nil {
		return 0, err
	}
	for k := range 255 {
		if !strings.Contains(out, fmt.Sprintf(" 10.77.%d.", k)) {
			return k, nil
		}
	}
	return 0, errors.New("every 10.77.k.0/24 is in use")
}

// remove deletes the namespaces (which deletes their veths) and the bridge,
// killing whatever still runs inside. Errors are ignored: it removes what
// exists.
func (nw *network) remove() {
	for i := 1; i <= 26; i++ {
		// Namespaces are named by index, so a half-made network is removed
		// as well as a whole one; a name that does not exist fails quietly.
		ns := fmt.Sprintf("%s%s-%d", nsPrefix, nw.run, i)
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			continue
		}
		killNamespace(ns)
		run("ip", "netns", "del", ns)
	}
	for i := 1; i <= 26; i++ {
		run("ip", "link", "del", fmt.Sprintf("%s%s%d", vethPrefix, nw.run, i))
	}
	run("ip", "link", "del", nw.bridge)
	if nw.forwardRule != nil {
		run(nw.iptables, append([]string{"-w", "-D"}, nw.forwardRule...)...)
	}
}

// ipt runs iptables in node i's namespace (0-based).
func (nw *network) ipt(i int, args ...string) error {
	return run("ip", append([]string{"netns", "exec", nw.nodes[i].ns, nw.iptables, "-w"}, args...)...)
}

// flush removes every rule in every node's namespace: the heal of every
// network fault at once.
func (nw *network) flush() error {
	var errs []error
	for i := range nw.nodes {
		errs = append(errs, nw.ipt(i, "-F"))
	}
	return errors.Join(errs...)
}
