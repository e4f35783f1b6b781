// dev.go owns `sluice dev`: a local cluster of N nodes started by one
// command, for trying replication and failover on a laptop.
//
// The nodes run as child processes of the same binary, not as brokers in
// one process: a child can be kill -9'd on its own (the real crash, with
// its unflushed page cache and half-written segment, and its sockets
// closed by the kernel) while the others keep serving, which is what a
// failover test needs; brokers sharing one process would die together
// and could only be stopped politely. Each node gets its own Kafka,
// CONTROLLER (raft) and gossip (serf) ports, its own data directory and
// log file; all N are raft voters. sluice dev restarts nothing on its own:
// a child that dies stays dead and is reported, so what a client sees is
// the cluster minus that node. Run the same command over the same --data
// directory again to restart the same cluster.
//
// Ports, from --base-port B: node i (0-based) serves Kafka on B+i, raft on
// B+N+i, serf gossip (TCP and UDP) on B+2N+i, and metrics.listener
// (/metrics and the web console, package console) on B+3N+i; a console:
// line after the bootstrap one gives node 1's console URL. The layout is
// kept in DATA/sluice-dev.json so that a second run finds the same
// addresses.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// devLayout is what a second run over the same data directory must reuse.
type devLayout struct {
	Nodes    int `json:"nodes"`
	BasePort int `json:"base_port"`
}

// devLayoutFile names the layout file inside the data directory.
const devLayoutFile = "sluice-dev.json"

// devReadyTimeout bounds the wait for every node to be ready.
const devReadyTimeout = 2 * time.Minute

// devNode is one child process.
type devNode struct {
	id      int
	kafka   string
	cmd     *exec.Cmd
	logPath string
	ready   chan struct{} // closed when the child printed its ready line
	done    chan struct{} // closed when the child has exited
	err     error         // cmd.Wait's result, set before done is closed
}

// runDev is `sluice dev [--nodes N] [--data DIR] [--base-port P]`.
func runDev(start time.Time, args []string) error {
	fs := flag.NewFlagSet("sluice dev", flag.ContinueOnError)
	nodes := fs.Int("nodes", 3, "number of nodes, each a child process and a raft voter")
	data := fs.String("data", "sluice-dev", "directory holding each node's data and log file; run again over it to restart the same cluster")
	basePort := fs.Int("base-port", 9092, "first Kafka port: node i serves Kafka on base+i, raft on base+N+i, gossip on base+2N+i, metrics and the web console on base+3N+i")
	logLevel := fs.String("log-level", "info", "log level of the nodes: debug, info, warn, error")
	var ovr overrides
	fs.Var(&ovr, "override", "set a broker property on every node, key=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("dev: unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *nodes < 1 {
		return fmt.Errorf("dev: --nodes %d: a cluster needs at least 1 node", *nodes)
	}

	dir, err := filepath.Abs(*data)
	if err != nil {
		return fmt.Errorf("dev: --data: %w", err)
	}
	layout := devLayout{Nodes: *nodes, BasePort: *basePort}
	if b, err := os.ReadFile(filepath.Join(dir, devLayoutFile)); err == nil {
		var old devLayout
		if err := json.Unmarshal(b, &old); err != nil {
			return fmt.Errorf("dev: %s: %w", filepath.Join(dir, devLayoutFile), err)
		}
		if set["nodes"] && old.Nodes != layout.Nodes {
			return fmt.Errorf("dev: %s holds a cluster of %d nodes, not %d: drop --nodes to restart it, or use another --data", dir, old.Nodes, layout.Nodes)
		}
		if set["base-port"] && old.BasePort != layout.BasePort {
			return fmt.Errorf("dev: %s holds a cluster on base port %d, not %d: drop --base-port to restart it, or use another --data", dir, old.BasePort, layout.BasePort)
		}
		layout = old
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("dev: %w", err)
	}
	n := layout.Nodes
	if layout.BasePort < 1 || layout.BasePort+4*n-1 > 65535 {
		return fmt.Errorf("dev: --base-port %d: the %d ports from it (4 per node) must lie in 1..65535", layout.BasePort, 4*n)
	}
	kafka, raft, gossip, web := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	var voters []string
	for i := range n {
		kafka[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(layout.BasePort+i))
		raft[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(layout.BasePort+n+i))
		gossip[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(layout.BasePort+2*n+i))
		web[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(layout.BasePort+3*n+i))
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, raft[i]))
	}
	for i := range n {
		for _, p := range []struct{ what, addr string }{{"Kafka", kafka[i]}, {"raft", raft[i]}, {"gossip", gossip[i]}, {"metrics/console", web[i]}} {
			if err := portFree(p.addr, p.what == "gossip"); err != nil {
				return fmt.Errorf("dev: %s port %s of node %d is in use (%v): stop what holds it or choose another --base-port", p.what, p.addr, i+1, err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	lb, _ := json.Marshal(layout)
	if err := os.WriteFile(filepath.Join(dir, devLayoutFile), append(lb, '\n'), 0o644); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("dev: cannot find this binary to start the nodes: %w", err)
	}

	// Replication defaults that make a dev cluster of n nodes usable:
	// Kafka's defaults of 3 (internal topics) and 2 (their min ISR), capped
	// by n; min.insync.replicas stays at Kafka's default of 1.
	rf := strconv.Itoa(min(3, n))
	minISR := strconv.Itoa(min(2, n))
	defaults := []string{
		"default.replication.factor=" + rf,
		"offsets.topic.replication.factor=" + rf,
		"transaction.state.log.replication.factor=" + rf,
		"transaction.state.log.min.isr=" + minISR,
		"share.coordinator.state.topic.replication.factor=" + rf,
		"share.coordinator.state.topic.min.isr=" + minISR,
	}

	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigc)

	var ns []*devNode
	for i := range n {
		nodeDir := filepath.Join(dir, "node-"+strconv.Itoa(i+1))
		if err := os.MkdirAll(filepath.Join(nodeDir, "data"), 0o755); err != nil {
			stopDevNodes(ns, syscall.SIGTERM)
			return fmt.Errorf("dev: %w", err)
		}
		nargs := []string{"--log-level", *logLevel,
			"--override", "node.id=" + strconv.Itoa(i+1),
			"--override", "listeners=PLAINTEXT://" + kafka[i] + ",CONTROLLER://" + raft[i],
			"--override", "controller.quorum.voters=" + strings.Join(voters, ","),
			"--override", "gossip.listener=" + gossip[i],
			"--override", "gossip.join=" + strings.Join(gossip, ","),
			"--override", "log.dirs=" + filepath.Join(nodeDir, "data"),
			// /metrics and the web console; an --override wins.
			"--override", "metrics.listener=" + web[i],
		}
		for _, d := range defaults {
			nargs = append(nargs, "--override", d)
		}
		for _, o := range ovr {
			nargs = append(nargs, "--override", o)
		}
		node, err := startDevNode(i+1, kafka[i], self, filepath.Join(nodeDir, "sluice.log"), nargs)
		if err != nil {
			stopDevNodes(ns, syscall.SIGTERM)
			return fmt.Errorf("dev: node %d: %w", i+1, err)
		}
		ns = append(ns, node)
		fmt.Printf("node %d: pid %d, kafka %s, log %s\n", node.id, node.cmd.Process.Pid, node.kafka, node.logPath)
	}

	// Wait for every node's ready line, then for the cluster to show a
	// controller and all n brokers registered.
	deadline := time.After(devReadyTimeout)
	for _, node := range ns {
		select {
		case <-node.ready:
		case <-node.done:
			stopDevNodes(ns, syscall.SIGTERM)
			return fmt.Errorf("dev: node %d exited before it was ready (%v); see %s", node.id, node.err, node.logPath)
		case s := <-sigc:
			stopDevNodes(ns, s)
			return fmt.Errorf("dev: %v before the cluster was ready", s)
		case <-deadline:
			stopDevNodes(ns, syscall.SIGTERM)
			return fmt.Errorf("dev: node %d not ready after %s; see %s", node.id, devReadyTimeout, node.logPath)
		}
	}
	controller, err := waitDevCluster(kafka, n, sigc)
	if err != nil {
		stopDevNodes(ns, syscall.SIGTERM)
		return fmt.Errorf("dev: %w", err)
	}
	fmt.Printf("bootstrap: %s\n", strings.Join(kafka, ","))
	fmt.Printf("console: http://%s/ (any node's: %s; /metrics on each)\n", web[0], strings.Join(web, ", "))
	fmt.Printf("sluice dev ready: %d nodes, controller %d, data in %s, ready in %s\n",
		n, controller, dir, time.Since(start).Round(time.Millisecond))

	return superviseDevNodes(ns, sigc)
}

// portFree reports whether addr can be bound now, over TCP and, for
// serf's gossip port, over UDP too.
func portFree(addr string, udp bool) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ln.Close()
	if udp {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return err
		}
		pc.Close()
	}
	return nil
}

// startDevNode starts one child with its stdout and stderr appended to
// logPath (straight to the file, no pipe through this process, so a node
// outlives a dead dev process long enough to stop cleanly); the child's
// ready line in the log closes node.ready.
func startDevNode(id int, kafka, self, logPath string, args []string) (*devNode, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	fi, err := logf.Stat()
	if err != nil {
		return nil, err
	}
	from := fi.Size() // a restart appends; only lines after this count
	node := &devNode{id: id, kafka: kafka, logPath: logPath, ready: make(chan struct{}), done: make(chan struct{})}
	node.cmd = exec.Command(self, args...)
	node.cmd.Stdout, node.cmd.Stderr = logf, logf
	setOwnProcessGroup(node.cmd)
	if err := node.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		node.err = node.cmd.Wait()
		close(node.done)
	}()
	go func() {
		for {
			if logHasReadyLine(logPath, from) {
				close(node.ready)
				return
			}
			select {
			case <-node.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return node, nil
}

// logHasReadyLine reports whether the log at path holds a "sluice ready:"
// line after offset from.
func logHasReadyLine(path string, from int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "sluice ready:") {
			return true
		}
	}
	return false
}

// waitDevCluster asks the nodes until one reports a controller and n
// registered brokers, and returns the controller's id.
func waitDevCluster(kafka []string, n int, sigc <-chan os.Signal) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka...))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	deadline := time.Now().Add(devReadyTimeout)
	var last error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
		cancel()
		switch {
		case err != nil:
			last = err
		case resp.ErrorCode != 0:
			last = fmt.Errorf("DescribeCluster error code %d", resp.ErrorCode)
		case resp.ControllerID < 0:
			last = errors.New("no controller yet")
		case len(resp.Brokers) < n:
			last = fmt.Errorf("%d of %d brokers registered", len(resp.Brokers), n)
		default:
			return resp.ControllerID, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("cluster not formed after %s: %v", devReadyTimeout, last)
		}
		select {
		case s := <-sigc:
			return -1, fmt.Errorf("%v before the cluster was ready", s)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// superviseDevNodes reports each child that exits (restarting none),
// forwards SIGINT and SIGTERM to the live children and returns once every
// child has exited. A second signal kills the children that are left.
func superviseDevNodes(ns []*devNode, sigc <-chan os.Signal) error {
	signals := 0
	live := len(ns)
	exited := make(chan *devNode, len(ns))
	for _, node := range ns {
		go func() { <-node.done; exited <- node }()
	}
	for live > 0 {
		select {
		case node := <-exited:
			live--
			state := "exited cleanly"
			if node.err != nil {
				state = "exited: " + node.err.Error()
			}
			if signals == 0 {
				fmt.Printf("node %d (pid %d) %s; not restarted, %d of %d nodes left\n", node.id, node.cmd.Process.Pid, state, live, len(ns))
			} else {
				fmt.Printf("node %d (pid %d) %s\n", node.id, node.cmd.Process.Pid, state)
			}
		case s := <-sigc:
			signals++
			if signals == 1 {
				fmt.Printf("%v: stopping %d nodes\n", s, live)
				forwardDevSignal(ns, s)
			} else {
				fmt.Printf("%v again: killing the nodes left\n", s)
				forwardDevSignal(ns, syscall.SIGKILL)
			}
		}
	}
	if signals == 0 {
		return errors.New("dev: every node has exited")
	}
	return nil
}

// forwardDevSignal sends s to every child still running.
func forwardDevSignal(ns []*devNode, s os.Signal) {
	for _, node := range ns {
		select {
		case <-node.done:
		default:
			node.cmd.Process.Signal(s)
		}
	}
}

// stopDevNodes sends s to the children and waits for them to exit.
func stopDevNodes(ns []*devNode, s os.Signal) {
	forwardDevSignal(ns, s)
	for _, node := range ns {
		<-node.done
	}
}
