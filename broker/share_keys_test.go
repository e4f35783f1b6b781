package broker_test

// The broker keys of share groups (KIP-932) observed by clients: the
// group.share.* share-partition defaults a group without its own share.*
// configs runs with, the group.share.min/max.* bounds a group's configs
// must lie within, group.share.max.share.sessions, and
// share.coordinator.state.topic.compression.codec.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/sluicetest"
)

// TestShareGroupBrokerPartitionDefaults: a share group that sets none of
// share.record.lock.duration.ms, share.delivery.count.limit and
// share.partition.max.record.locks runs with the broker's
// group.share.record.lock.duration.ms (the AcquisitionLockTimeoutMillis of
// its ShareFetch answers), group.share.partition.max.record.locks (a
// fetch acquires at most twice that from one large batch) and
// group.share.delivery.count.limit (a record released that many times is
// archived, not delivered again); DescribeConfigs shows them as the
// group's STATIC_BROKER_CONFIG values. The old code refused the keys.
func TestShareGroupBrokerPartitionDefaults(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic = "sq-broker-defaults"
	n := sluicetest.Start(t,
		"group.share.record.lock.duration.ms=20000",
		"group.share.delivery.count.limit=2",
		"group.share.partition.max.record.locks=100",
		"group.share.max.partition.max.record.locks=150")
	createTopic(t, n, topic, 1, nil)
	id := topicID(t, n, topic)
	producer := n.Client()
	t.Cleanup(producer.Close)

	m := newShareFetcher(t, n, "g-broker-defaults", "m", id)
	oneSharePartition(t, m.fetch(m.fetchReq(0)))
	produceShareRecords(t, producer, topic, 1000) // one batch, offsets 0-999
	resp := m.fetch(m.fetchReq(5000))
	if resp.AcquisitionLockTimeoutMillis != 20000 {
		t.Errorf("AcquisitionLockTimeoutMillis %d, want group.share.record.lock.duration.ms 20000", resp.AcquisitionLockTimeoutMillis)
	}
	if got := acquiredString(oneSharePartition(t, resp)); got != "0-199/1 " {
		t.Fatalf("acquired %q, want 0-199 (twice group.share.partition.max.record.locks 100)", got)
	}
	release := shareAckRange{0, 199, []int8{2}}
	if got := acquiredString(oneSharePartition(t, m.fetch(m.fetchReq(5000, release)))); got != "0-199/2 " {
		t.Fatalf("after a release acquired %q, want 0-199 delivered twice", got)
	}
	// The second release reaches group.share.delivery.count.limit 2: 0-199
	// are archived and the window moves on.
	if got := acquiredString(oneSharePartition(t, m.fetch(m.fetchReq(5000, release)))); got != "200-399/1 " {
		t.Fatalf("after the second release acquired %q, want 200-399 (0-199 archived at delivery count 2)", got)
	}

	res := describeGroupConfigs(t, n.Client(), "g-broker-defaults")
	for name, want := range map[string]string{
		"share.record.lock.duration.ms":    "20000",
		"share.delivery.count.limit":       "2",
		"share.partition.max.record.locks": "100",
	} {
		c := groupConfig(t, res, name)
		if str(c.Value) != want || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
			t.Errorf("%s = %s (%v), want %s STATIC_BROKER_CONFIG", name, str(c.Value), c.Source, want)
		}
	}
}

// TestShareGroupConfigBoundsFromBroker: a share group's
// share.partition.max.record.locks, share.delivery.count.limit and
// share.record.lock.duration.ms must lie within the broker's
// group.share.min/max.* keys, not Kafka's default bounds: the old code
// checked 100..4000, 2..10 and 15000..60000 whatever the broker said.
func TestShareGroupConfigBoundsFromBroker(t *testing.T) {
	n := sluicetest.Start(t,
		"group.share.max.partition.max.record.locks=150",
		"group.share.min.delivery.count.limit=3",
		"group.share.max.record.lock.duration.ms=120000")
	cl := n.Client()
	for _, c := range []struct {
		entry, want string
	}{
		{"set:share.partition.max.record.locks=150", ""},
		{"set:share.partition.max.record.locks=151", "share.partition.max.record.locks must be in the range 100 to 150 inclusive."},
		{"set:share.delivery.count.limit=3", ""},
		{"set:share.delivery.count.limit=2", "share.delivery.count.limit must be in the range 3 to 10 inclusive."},
		{"set:share.record.lock.duration.ms=120000", ""},
		{"set:share.record.lock.duration.ms=120001", "share.record.lock.duration.ms must be in the range 15000 to 120000 inclusive."},
	} {
		code, msg := alterGroupConfigs(t, cl, "g-bounds", false, c.entry)
		switch {
		case c.want == "" && code != 0:
			t.Errorf("%s: %v (%s)", c.entry, kerr.ErrorForCode(code), msg)
		case c.want != "" && (code != kerr.InvalidConfig.Code || !strings.Contains(msg, c.want)):
			t.Errorf("%s: %v (%s), want INVALID_CONFIG %q", c.entry, kerr.ErrorForCode(code), msg, c.want)
		}
	}
}

// TestShareSessionLimit: a broker holds at most
// group.share.max.share.sessions share sessions; a ShareFetch opening one
// more is answered SHARE_SESSION_LIMIT_REACHED, while the holder may
// reopen its own. As in Kafka's ShareSessionCache, a session leaves the
// cache when its member closes it (epoch -1) or its connection closes,
// and then another member may open one. The old code refused the key and
// always held up to 2000.
func TestShareSessionLimit(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic = "sq-session-limit"
	n := sluicetest.Start(t, "group.share.max.share.sessions=1", "group.share.max.size=1")
	createTopic(t, n, topic, 1, nil)
	id := topicID(t, n, topic)

	m1 := newShareFetcher(t, n, "g-limit", "m1", id)
	oneSharePartition(t, m1.fetch(m1.fetchReq(0)))
	m2 := newShareFetcher(t, n, "g-limit", "m2", id)
	if resp := m2.fetch(m2.fetchReq(0)); resp.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("a second session: %v, want SHARE_SESSION_LIMIT_REACHED", kerr.ErrorForCode(resp.ErrorCode))
	}
	// A member of another group is refused too: the limit is the broker's.
	other := newShareFetcher(t, n, "g-limit-other", "m", id)
	if resp := other.fetch(other.fetchReq(0)); resp.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("a session of another group: %v, want SHARE_SESSION_LIMIT_REACHED", kerr.ErrorForCode(resp.ErrorCode))
	}
	// m1 reopening its own session is not a new one.
	m1.epoch = 0
	oneSharePartition(t, m1.fetch(m1.fetchReq(0)))

	// m1 closes its session: m2 gets one.
	if resp := m1.acknowledge(-1); resp.ErrorCode != 0 {
		t.Fatalf("closing m1's session: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	oneSharePartition(t, m2.fetch(m2.fetchReq(0)))

	// m2's connection closes: its session goes, and m1 opens one again.
	m2.cl.Close()
	m1.epoch = 0
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp := m1.fetch(m1.fetchReq(0))
		if resp.ErrorCode == 0 {
			break
		}
		if resp.ErrorCode != kerr.ShareSessionLimitReached.Code || time.Now().After(deadline) {
			t.Fatalf("opening a session after m2's connection closed: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestShareGroupAssignorByClass: a node whose group.share.assignors names
// Kafka's SimpleAssignor by class serves share groups with it: a member
// gets the partitions and ShareGroupDescribe names the assignor simple,
// as Kafka's does; DescribeConfigs shows the key as set.
func TestShareGroupAssignorByClass(t *testing.T) {
	broker.ForceShareGroups(t)
	n := shareNode(t, "group.share.assignors=org.apache.kafka.coordinator.group.assignor.SimpleAssignor")
	const topic, group = "sq-assignor", "g-assignor"
	createTopic(t, n, topic, 2, nil)
	cl := n.Client()
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := &shareMember{id: "m-assignor"}
	m.joinAssigned(ctx, t, cl, group, []string{topic})
	if d := shareDescribe(ctx, t, cl, group); d.Assignor != "simple" {
		t.Errorf("ShareGroupDescribe assignor %q, want simple", d.Assignor)
	}
	adm := n.Admin()
	rc, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On("1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Configs {
		if e.Key == "group.share.assignors" && (e.MaybeValue() != "org.apache.kafka.coordinator.group.assignor.SimpleAssignor" || e.Source != kmsg.ConfigSourceStaticBrokerConfig) {
			t.Errorf("group.share.assignors = %q (%v), want the class STATIC_BROKER_CONFIG", e.MaybeValue(), e.Source)
		}
	}
}

// TestShareStateTopicCompressionCodec: with
// share.coordinator.state.topic.compression.codec=3 the share
// coordinator's batches in __share_group_state are lz4 batches (as a kgo
// consumer of the topic sees them), and the share-partition state they
// hold is read back after a restart: accepted records are not delivered
// again and released ones come with their delivery count. The old code refused the key and wrote only uncompressed batches.
func TestShareStateTopicCompressionCodec(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic, group = "sq-state-codec", "g-state-codec"
	n := sluicetest.Start(t, "share.coordinator.state.topic.compression.codec=3", "share.coordinator.state.topic.num.partitions=1")
	createTopic(t, n, topic, 1, nil)
	id := topicID(t, n, topic)
	producer := n.Client()
	t.Cleanup(producer.Close)

	m := newShareFetcher(t, n, group, "m", id)
	oneSharePartition(t, m.fetch(m.fetchReq(0)))
	produceShareRecords(t, producer, topic, 5)
	if got := acquiredString(oneSharePartition(t, m.fetch(m.fetchReq(5000)))); got != "0-4/1 " {
		t.Fatalf("acquired %q, want 0-4", got)
	}
	// Accept 0-2, release 3-4.
	if resp := m.acknowledge(m.epoch, shareAckRange{0, 2, []int8{1}}, shareAckRange{3, 4, []int8{2}}); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledging 0-4: %v / %v", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}

	state := consumeAll(t, n.Addr(), "__share_group_state", 2)
	for _, r := range state {
		if c := r.Attrs.CompressionType(); c != 3 {
			t.Errorf("__share_group_state record at offset %d has codec %d, want 3 (lz4)", r.Offset, c)
		}
	}

	n.Restart()
	m2 := newShareFetcher(t, n, group, "m2", id)
	var got string
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		if m2.epoch == 0 {
			// The opening fetch, until the node takes it.
			if resp := m2.fetch(m2.fetchReq(0)); resp.ErrorCode != 0 {
				return kerr.ErrorForCode(resp.ErrorCode)
			} else if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
				got += acquiredString(resp.Topics[0].Partitions[0])
			}
		}
		if got != "" {
			return nil
		}
		resp := m2.fetch(m2.fetchReq(1000))
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode)
		}
		if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				return kerr.ErrorForCode(p.ErrorCode)
			}
			got += acquiredString(p)
		}
		if got == "" {
			return errors.New("nothing acquired yet")
		}
		return nil
	})
	if got != "3-4/2 " {
		t.Fatalf("after a restart acquired %q, want 3-4 delivered a second time (0-2 were accepted, 3-4 released once)", got)
	}
}

// TestShareGroupAssignmentInterval: KIP-1263's batching of share group
// assignments. A member joining within the group's assignment interval of
// the last computation moves the group epoch at once, but gets no
// partitions until the target is computed again: ShareGroupDescribe shows
// the assignment epoch behind the group epoch. The interval is the group's
// share.assignment.interval.ms, else group.share.assignment.interval.ms as
// altered dynamically for the cluster; setting it to 0 lets the next
// heartbeat compute the target, and the new member gets its partitions.
// The old code refused the key and any group value but the default, and
// computed the target at every change.
func TestShareGroupAssignmentInterval(t *testing.T) {
	broker.ForceShareGroups(t)
	n := shareNode(t) // group.share.assignment.interval.ms=0
	const topic = "sq-interval"
	createTopic(t, n, topic, 1, nil)
	cl := n.Client()
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topics := []string{topic}

	// lagging joins b to group after a while it must wait, and checks the
	// target is not computed for it; release makes the interval 0 and
	// checks that b's next heartbeat gets it its partition.
	check := func(group string, wait, release func()) {
		t.Helper()
		a := &shareMember{id: group + "-a"}
		a.joinAssigned(ctx, t, cl, group, topics)
		wait()
		b := &shareMember{id: group + "-b"}
		b.join(ctx, t, cl, group, topics)
		if len(b.assigned) != 0 {
			t.Fatalf("%s: b was assigned %v at once; want nothing within the assignment interval", group, b.assigned)
		}
		if d := shareDescribe(ctx, t, cl, group); d.AssignmentEpoch >= d.GroupEpoch {
			t.Fatalf("%s: assignment epoch %d, group epoch %d; want the assignment behind", group, d.AssignmentEpoch, d.GroupEpoch)
		}
		release()
		sluicetest.WaitFor(t, 30*time.Second, func() error {
			if err := b.beat(ctx, t, cl, group, nil); err != nil {
				return err
			}
			if len(b.assigned) == 0 {
				return errors.New("b has no partition yet")
			}
			return nil
		})
		if d := shareDescribe(ctx, t, cl, group); d.AssignmentEpoch != d.GroupEpoch {
			t.Fatalf("%s: assignment epoch %d, group epoch %d after the computation", group, d.AssignmentEpoch, d.GroupEpoch)
		}
	}

	// The group's own share.assignment.interval.ms.
	check("g-interval-group", func() {
		mustAlterGroupConfigs(t, cl, "g-interval-group", "set:share.assignment.interval.ms=15000")
	}, func() {
		mustAlterGroupConfigs(t, cl, "g-interval-group", "set:share.assignment.interval.ms=0")
	})
	// group.share.assignment.interval.ms altered for the cluster.
	check("g-interval-broker", func() {
		if err := alterClusterDefault(t, n, "group.share.assignment.interval.ms", "15000"); err != nil {
			t.Fatal(err)
		}
		sluicetest.WaitFor(t, 10*time.Second, func() error {
			c := groupConfig(t, describeGroupConfigs(t, cl, "g-interval-broker"), "share.assignment.interval.ms")
			if str(c.Value) != "15000" {
				return errors.New("the dynamic value is not in force yet")
			}
			return nil
		})
	}, func() {
		if err := alterClusterDefault(t, n, "group.share.assignment.interval.ms", "0"); err != nil {
			t.Fatal(err)
		}
	})

	// A group value outside the broker's bounds is refused.
	if code, msg := alterGroupConfigs(t, cl, "g-interval-group", false, "set:share.assignment.interval.ms=15001"); code != kerr.InvalidConfig.Code ||
		!strings.Contains(msg, "share.assignment.interval.ms must be in the range 0 to 15000 inclusive.") {
		t.Errorf("share.assignment.interval.ms=15001: %v (%s), want INVALID_CONFIG", kerr.ErrorForCode(code), msg)
	}
}
