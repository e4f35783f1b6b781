package broker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// groupNode starts a node whose new groups do not wait for more members.
func groupNode(t *testing.T) *sluicetest.Node {
	return sluicetest.Start(t, "group.initial.rebalance.delay.ms=0")
}

// seen records how often each (partition, offset) was consumed.
type seen struct {
	mu sync.Mutex
	n  map[[2]int64]int
}

func (s *seen) add(r *kgo.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[[2]int64{int64(r.Partition), r.Offset}]++
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.n)
}

func (s *seen) dups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, c := range s.n {
		if c > 1 {
			out = append(out, fmt.Sprintf("p%d@%d x%d", k[0], k[1], c))
		}
	}
	return out
}

// groupMember is one consumer of a group that commits what it polled
// before it lets a rebalance happen, so nothing is consumed twice.
type groupMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startMember(t *testing.T, n *sluicetest.Node, group, topic string, s *seen, opts ...kgo.Opt) *groupMember {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(n.Addr()),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			recs := fs.Records()
			for _, r := range recs {
				s.add(r)
			}
			if len(recs) > 0 {
				if err := cl.CommitRecords(context.Background(), recs...); err != nil {
					t.Errorf("commit: %v", err)
				}
			}
			cl.AllowRebalance()
		}
	}()
	return m
}

// stop stops polling and leaves the group.
func (m *groupMember) stop() {
	m.cancel()
	<-m.done
	m.cl.AllowRebalance()
	m.cl.Close()
}

func waitSeen(t *testing.T, s *seen, want int) {
	t.Helper()
	sluicetest.WaitFor(t, 60*time.Second, func() error {
		if got := s.count(); got < want {
			return fmt.Errorf("consumed %d distinct records of %d", got, want)
		}
		return nil
	})
}

// TestConsumerGroupRebalanceExactlyOnce runs three members of a group on a
// six-partition topic: every record is consumed exactly once across a
// member leaving, and a new member resumes from the committed offsets.
func TestConsumerGroupRebalanceExactlyOnce(t *testing.T) {
	n := groupNode(t)
	const topic, group = "orders", "billing"
	createTopic(t, n, topic, 6, nil)
	prod := n.Client(kgo.DefaultProduceTopic(topic))

	s := &seen{n: map[[2]int64]int{}}
	members := []*groupMember{}
	for range 3 {
		members = append(members, startMember(t, n, group, topic, s))
	}
	produceKeyed(t, prod, topic, 0, 300)
	waitSeen(t, s, 300)

	members[2].stop()
	produceKeyed(t, prod, topic, 300, 300)
	waitSeen(t, s, 600)
	members[0].stop()
	members[1].stop()
	if d := s.dups(); len(d) > 0 {
		t.Fatalf("consumed more than once: %v", d)
	}

	// Everything is committed: a new member only sees new records.
	produceKeyed(t, prod, topic, 600, 60)
	s2 := &seen{n: map[[2]int64]int{}}
	m := startMember(t, n, group, topic, s2)
	defer m.stop()
	waitSeen(t, s2, 60)
	time.Sleep(300 * time.Millisecond) // give an old record a chance to show up
	if got := s2.count(); got != 60 {
		t.Fatalf("new member consumed %d records, want only the 60 new ones", got)
	}
	if s.count() != 600 {
		t.Fatalf("first members consumed %d, want 600", s.count())
	}
}

// TestGroupOffsetsSurviveRestart commits offsets through a consumer group
// and as a simple consumer and reads them back after a clean restart and
// after a crash.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	n := groupNode(t)
	const topic = "events"
	createTopic(t, n, topic, 3, nil)
	produceKeyed(t, n.Client(kgo.DefaultProduceTopic(topic)), topic, 0, 90)

	s := &seen{n: map[[2]int64]int{}}
	m := startMember(t, n, "readers", topic, s)
	waitSeen(t, s, 90)
	m.stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := n.Admin()
	var manual kadm.Offsets
	manual.Add(kadm.Offset{Topic: topic, Partition: 0, At: 7, LeaderEpoch: 0, Metadata: "seven"})
	manual.Add(kadm.Offset{Topic: topic, Partition: 2, At: 11, LeaderEpoch: -1, Metadata: ""})
	if err := adm.CommitAllOffsets(ctx, "manual", manual); err != nil {
		t.Fatalf("commit: %v", err)
	}
	before := fetchAll(t, adm, "readers", "manual")

	n.Restart()
	if got := fetchAll(t, n.Admin(), "readers", "manual"); got != before {
		t.Fatalf("after restart:\n%s\nbefore:\n%s", got, before)
	}
	n.CrashRestart()
	if got := fetchAll(t, n.Admin(), "readers", "manual"); got != before {
		t.Fatalf("after crash:\n%s\nbefore:\n%s", got, before)
	}
	// The group resumes where it was: nothing is consumed again.
	produceKeyed(t, n.Client(kgo.DefaultProduceTopic(topic)), topic, 90, 9)
	s2 := &seen{n: map[[2]int64]int{}}
	m2 := startMember(t, n, "readers", topic, s2)
	defer m2.stop()
	waitSeen(t, s2, 9)
	time.Sleep(300 * time.Millisecond)
	if got := s2.count(); got != 9 {
		t.Fatalf("after restart the group consumed %d records, want 9", got)
	}
}

// fetchAll renders the committed offsets of groups, retrying while the
// coordinator loads.
func fetchAll(t *testing.T, adm *kadm.Client, groups ...string) string {
	t.Helper()
	var out string
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		out = ""
		for _, g := range groups {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			offs, err := adm.FetchOffsets(ctx, g)
			cancel()
			if err != nil {
				return err
			}
			for _, o := range offs.Sorted() {
				out += fmt.Sprintf("%s %s/%d at=%d epoch=%d md=%q err=%v\n", g, o.Topic, o.Partition, o.At, o.LeaderEpoch, o.Metadata, o.Err)
			}
		}
		if out == "" {
			return fmt.Errorf("no offsets yet")
		}
		return nil
	})
	return out
}
