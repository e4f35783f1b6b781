//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// raftStallPause is how long TestRaftLeaderStallKeepsControllership keeps
// the raft leader's process stopped each time. It lies between the raft
// lease of a cluster before issue 13 and now (controller/raft.go: 200 ms
// then, 300 ms now). A stopped leader hears from no follower, so when it
// runs again its last contact with each is at least the pause old, plus
// the age of the last answer before the stop (followers answer an
// AppendEntries every 10-20 ms, CommitTimeout, while idle; at most 21 ms
// in 108 contacts the leader logged as lost after a stall, on a two-CPU
// machine at a load of 12-15). Over 200 ms that exceeds the old
// lease, and the leader steps down ("failed to contact quorum of nodes,
// stepping down") as soon as it runs, unless an answer that arrived while
// it was stopped is read before its lease check (one to three stalls in ten);
// below 300 ms less that age the current lease holds. Measured with
// SLUICE_RAFT_STALL_PAUSE: at 300 ms timeouts 270 ms stalls deposed no
// leader and 310 ms stalls 8 of 10; at 200 ms timeouts 205 ms stalls
// deposed 9 of 10 and even 190 ms stalls 2 of 10. The followers' election
// timeouts count from the same last contact, so at 300 ms they do not
// fire either.
//
// What no raft timeout survives is the whole machine not running the
// processes for longer than the lease: a busy machine whose every process
// stalls for 300 ms or more (seen while other tests drove processes into
// the out-of-memory killer) can depose the leader at 300 ms too.
//
// SLUICE_RAFT_STALL_PAUSE (a Go duration) and SLUICE_RAFT_STALLS (a count)
// override the pause and the number of stalls, to look for the edges.
const (
	raftStallPause = 220 * time.Millisecond
	raftStalls     = 10
	// raftStallGap is the time between two stalls: long enough for the
	// leader to hear from every follower again, and for a new leader to be
	// elected if one stepped down.
	raftStallGap = time.Second
)

// raftStallSettings returns the pause and the number of stalls, from the
// environment or the defaults.
func raftStallSettings(t *testing.T) (pause time.Duration, stalls int) {
	pause, stalls = raftStallPause, raftStalls
	if s := os.Getenv("SLUICE_RAFT_STALL_PAUSE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SLUICE_RAFT_STALL_PAUSE=%q: want a positive Go duration", s)
		}
		pause = d
	}
	if s := os.Getenv("SLUICE_RAFT_STALLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SLUICE_RAFT_STALLS=%q: want a positive number", s)
		}
		stalls = n
	}
	return pause, stalls
}

// stall stops the process with SIGSTOP, as a machine that does not
// schedule it would, and continues it with SIGCONT after pause. It returns
// when the process was stopped and for how long as this process measured
// it: at least pause, more if this process was late to wake up as well.
//
// On a busy machine this process must not be late by much, so the stall
// runs on a thread of its own, at a raised priority where that is allowed
// (as root; the thread exits with the goroutine, which never unlocks it),
// and sleeps and sends SIGCONT with raw system calls: a Go system call
// hands the thread's P back to the scheduler, and the goroutine would wait
// for one after the sleep among everything else this process runs (under
// a load of 15 on two CPUs that wait was seen to exceed a second).
func (p *sluiceProc) stall(pause time.Duration) (time.Time, time.Duration) {
	p.t.Helper()
	pid := p.pid()
	type result struct {
		start   time.Time
		stopped time.Duration
		err     error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), -10) // EPERM: stay at the default
		const clockMonotonic, timerAbstime = 1, 1
		if _, _, e := syscall.RawSyscall(syscall.SYS_KILL, uintptr(pid), uintptr(syscall.SIGSTOP), 0); e != 0 {
			done <- result{err: fmt.Errorf("SIGSTOP %d: %w", pid, e)}
			return
		}
		start := time.Now()
		var wake syscall.Timespec
		syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&wake)), 0)
		wake = syscall.NsecToTimespec(syscall.TimespecToNsec(wake) + pause.Nanoseconds())
		for {
			// The runtime's preemption signals interrupt the sleep.
			_, _, e := syscall.RawSyscall6(syscall.SYS_CLOCK_NANOSLEEP, clockMonotonic, timerAbstime, uintptr(unsafe.Pointer(&wake)), 0, 0, 0)
			if e != syscall.EINTR {
				break
			}
		}
		_, _, e := syscall.RawSyscall(syscall.SYS_KILL, uintptr(pid), uintptr(syscall.SIGCONT), 0)
		stopped := time.Since(start)
		var err error
		if e != 0 {
			err = fmt.Errorf("SIGCONT %d: %w", pid, e)
		}
		done <- result{start, stopped, err}
	}()
	r := <-done
	if r.err != nil {
		p.t.Fatal(r.err)
	}
	return r.start, r.stopped
}

// activeController asks the processes in turn which node is the active
// controller, until one names a node.
func activeController(ctx context.Context, t *testing.T, c *clusterProcs) int32 {
	t.Helper()
	var id int32
	waitFor(t, "an active controller", func() error {
		var errs []string
		for _, p := range c.procs {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := describeCluster(rctx, p)
			cancel()
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			if resp.ControllerID >= 1 && int(resp.ControllerID) <= len(c.procs) {
				id = resp.ControllerID
				return nil
			}
			errs = append(errs, fmt.Sprintf("%s: controller %d", p.addr, resp.ControllerID))
		}
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	})
	return id
}

// Issue 13, problem 6: a raft leader whose process is not scheduled for a
// few hundred milliseconds must stay the leader. Three processes, a topic
// with RF 3 and min.insync.replicas=2 and a steady idempotent acks=all
// producer; the active controller (the raft leader) is stopped with
// SIGSTOP for raftStallPause, then continued, ten times a second apart.
// Each stall is the mechanism of the step-downs seen on a loaded two-CPU
// machine (a process not scheduled for a few hundred milliseconds), made
// deterministic. With raft's cluster timeouts at 200 ms seven to ten of
// the ten stalls deposed the leader in every run; at 300 ms none may: the
// active controller is the same node throughout (DescribeCluster), no node
// logs a raft step-down or a change of controller leadership, and every
// acknowledged record is read back. It takes about 15 s.
func TestRaftLeaderStallKeepsControllership(t *testing.T) {
	pause, stalls := raftStallSettings(t)
	c := startClusterProcs(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	fast := kgo.MetadataMinAge(100 * time.Millisecond)
	adm := kadm.NewClient(c.client(fast))
	createInsyncTopic(ctx, t, adm, "stall")
	first := activeController(ctx, t, c)

	producer := c.client(fast,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("stall"),
		kgo.RecordDeliveryTimeout(time.Minute),
		kgo.MaxBufferedRecords(1000),
	)
	var (
		mu       sync.Mutex
		acked    []string
		failed   int
		firstErr error
	)
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := "r" + strconv.Itoa(i)
			producer.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
					return
				}
				acked = append(acked, v)
			})
			time.Sleep(2 * time.Millisecond)
		}
	}()

	var longest time.Duration
	controllers := []int32{first} // each controller seen, in order
	for i := 1; i <= stalls; i++ {
		time.Sleep(raftStallGap)
		leader := activeController(ctx, t, c)
		if leader != controllers[len(controllers)-1] {
			controllers = append(controllers, leader)
		}
		at, stopped := c.procs[leader-1].stall(pause)
		longest = max(longest, stopped)
		t.Logf("stall %d: node %d (the active controller) stopped at %s for %s", i, leader, at.UTC().Format("15:04:05.000"), stopped.Round(time.Millisecond))
	}
	time.Sleep(raftStallGap)
	close(stop)
	<-produced
	if err := producer.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if last := activeController(ctx, t, c); last != controllers[len(controllers)-1] {
		controllers = append(controllers, last)
	}

	// What the nodes logged: raft's step-down for want of a quorum, and
	// sluice's own record of controller leadership won and lost. Only the
	// first "became active controller" belongs to a healthy run.
	var stepDowns, lost, became int
	for i, p := range c.procs {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			switch {
			case strings.Contains(line, "failed to contact quorum of nodes, stepping down"):
				stepDowns++
				t.Logf("node %d: %s", i+1, line)
			case strings.Contains(line, `msg="lost controller leadership"`):
				lost++
				t.Logf("node %d: %s", i+1, line)
			case strings.Contains(line, `msg="became active controller"`):
				became++
			case strings.Contains(line, "failed to contact"):
				t.Logf("node %d: %s", i+1, line)
			}
		}
	}

	// Every acknowledged record is read back.
	ends := c.procs[0].endOffsets("stall")
	read := make(map[string]bool)
	for _, rs := range c.procs[0].consumeAll("stall", ends) {
		for _, r := range rs {
			read[string(r.Value)] = true
		}
	}
	mu.Lock()
	defer mu.Unlock()
	missing := 0
	for _, v := range acked {
		if !read[v] {
			if missing == 0 {
				t.Errorf("acknowledged record %q not read back", v)
			}
			missing++
		}
	}

	fmt.Printf("raft leader stalls: %d of %s (longest %s); active controllers %v; raft step-downs %d, controller leadership lost %d, won %d; %d records acknowledged, %d failed, %d missing\n",
		stalls, pause, longest.Round(time.Millisecond), controllers, stepDowns, lost, became, len(acked), failed, missing)
	if stepDowns > 0 || lost > 0 || became != 1 || len(controllers) != 1 {
		t.Errorf("the raft leader was deposed by stalls of %s (the longest lasted %s): %d raft step-downs, controller leadership lost %d times and won %d times, active controllers %v",
			pause, longest.Round(time.Millisecond), stepDowns, lost, became, controllers)
	}
	if failed > 0 {
		t.Errorf("%d records failed, the first with %v", failed, firstErr)
	}
	if len(acked) == 0 {
		t.Error("nothing was acknowledged")
	}
}
