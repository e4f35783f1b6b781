package broker_test

// Issue 17, internal topics: __consumer_offsets and __transaction_state are
// compacted, and a coordinator loading a cleaned partition (offsets with
// gaps, superseded records gone, tombstones of deleted groups and offsets
// gone after delete.retention.ms, transaction markers of emptied
// transactions gone) restores the same groups, offsets and transactions
// as before the cleaning.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// cleanAll runs cleaning passes on every running node until none has a
// log left to clean.
func cleanAll(t *testing.T, c *sluicetest.Cluster, skip int) int {
	t.Helper()
	passes := 0
	for id := 1; id <= c.Size(); id++ {
		if id == skip {
			continue
		}
		for c.Node(id).Broker.RunCleaner() {
			if passes++; passes > 500 {
				t.Fatal("the cleaner never runs out of work")
			}
		}
	}
	return passes
}

// internalRecords reads partition 0 of an internal topic from its start to
// its end through a consumer, as any client may.
func internalRecords(ctx context.Context, t *testing.T, seeds []string, topic string) (recs []*kgo.Record, end int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := ends.Lookup(topic, 0)
	for len(recs) == 0 || recs[len(recs)-1].Offset < e.Offset-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d records of %s up to %d", len(recs), topic, e.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
	}
	return recs, e.Offset
}

// keyGroup is the group (or transactional id) an internal topic's key
// names: after the int16 key version, an int16-length string.
func keyGroup(key []byte) string {
	if len(key) < 4 {
		return ""
	}
	n := int(binary.BigEndian.Uint16(key[2:]))
	if len(key) < 4+n {
		return ""
	}
	return string(key[4 : 4+n])
}

// groupsState is what clients see of every group: its name, state and
// protocol type, and its committed offsets (stable ones, so a pending
// transactional commit does not pass unseen), one line each, sorted.
func groupsState(ctx context.Context, seeds []string) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, g := range listed.Sorted() {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 7
		req.Group = g.Group
		req.RequireStable = true
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return "", err
		}
		if resp.ErrorCode != 0 {
			return "", fmt.Errorf("group %s: %w", g.Group, kerr.ErrorForCode(resp.ErrorCode))
		}
		var offs []string
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 {
					return "", fmt.Errorf("group %s %s-%d: %w", g.Group, tp.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
				offs = append(offs, fmt.Sprintf("%s-%d=%d", tp.Topic, p.Partition, p.Offset))
			}
		}
		slices.Sort(offs)
		epochs := ""
		if g.Group == "kip848" {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{g.Group}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return "", err
			}
			d := resp.Groups[0]
			if d.ErrorCode != 0 {
				return "", fmt.Errorf("group %s: %w", g.Group, kerr.ErrorForCode(d.ErrorCode))
			}
			epochs = fmt.Sprintf(" epoch=%d assignment=%d members=%d", d.Epoch, d.AssignmentEpoch, len(d.Members))
		}
		lines = append(lines, fmt.Sprintf("%s %s %s%s: %s", g.Group, g.State, g.ProtocolType, epochs, strings.Join(offs, " ")))
	}
	return strings.Join(lines, "\n"), nil
}

// offsetsLeader is the node leading partition 0 of topic.
func offsetsLeader(t *testing.T, cl *kgo.Client, topic string) int {
	t.Helper()
	md, err := topicMetadata(cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	return int(md.Partitions[0].Leader)
}

// Groups committing plain and transactional offsets, a group deleted, an
// offset deleted, a classic and a KIP-848 consumer group whose members
// joined and left, and enough
// commits that __consumer_offsets (one partition, 8 KiB segments) is
// cleaned twice with delete.retention.ms=0, so the deleted group's and
// offset's tombstones are gone from the log too. Each of two coordinator
// failovers loads a cleaned replica and must show exactly what clients saw
// before the cleaning: the same groups in the same states with the same
// offsets, the deleted group and offset still absent.
func TestGroupCoordinatorLoadsCleanedOffsets(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, "offsets.topic.num.partitions=1", "offsets.topic.segment.bytes=8192",
		"log.cleaner.delete.retention.ms=0")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seeds := c.Addrs()
	fast := kgo.MetadataMinAge(50 * time.Millisecond)
	adm := kadm.NewClient(c.Client(fast))
	for _, topic := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctx, 4, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
		c.WaitForTopic(topic)
	}
	commit := func(group string, round int, parts ...int32) {
		t.Helper()
		os := kadm.Offsets{}
		for _, p := range parts {
			os.Add(kadm.Offset{Topic: "in", Partition: p, At: int64(round*10) + int64(p), LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctx, group, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %s round %d: %v", group, round, err)
		}
	}
	all := []int32{0, 1, 2, 3}
	filler := func(rounds int) {
		for r := range rounds {
			commit("filler", r, all...)
		}
	}

	for r := range 40 {
		commit("live", r, all...)
		commit("gone", r, all...)
		commit("partial", r, all...)
	}
	filler(50)

	// A consumer group that joined, consumed, committed and left: its
	// group metadata records (each generation's) are compacted too.
	prod := c.Client(fast, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(4) {
		for i := range 5 {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "in", Partition: p, Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for gen := range 3 {
		cons := c.Client(fast, kgo.ConsumerGroup("consumers"), kgo.ConsumeTopics("in"), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		readAndCommit(ctx, t, cons, 3, fmt.Sprintf("consumer generation %d", gen))
	}

	// A KIP-848 consumer group, two members one after the other, each
	// joining, committing and leaving: its member, target and current
	// assignment records end in tombstones, which the cleaning removes.
	for m := range 2 {
		cons := c.Client(fast, kgo.ConsumerGroup("kip848"), kgo.ConsumeTopics("in"), kgo.DisableAutoCommit(),
			kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.FetchMaxWait(100*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		readAndCommit(ctx, t, cons, 2, fmt.Sprintf("KIP-848 member %d", m))
	}

	// Transactional offset commits: ten committed, then one aborted.
	txp := txnProducer(t, seeds, "offsets-tx")
	for k := 1; k <= 11; k++ {
		at := int64(k)
		if k == 11 {
			at = 999
		}
		beginTxnOffsetCommit(ctx, t, txp, "offsets-tx", "txn-group", "out", "in", fmt.Appendf(nil, "%d", k), at)
		if err := txp.EndTransaction(ctx, kgo.TransactionEndTry(k <= 10)); err != nil {
			t.Fatal(err)
		}
	}

	// A group deleted, and one offset of another.
	if resp, err := adm.DeleteGroups(ctx, "gone"); err != nil || resp.Error() != nil {
		t.Fatalf("DeleteGroups: %v %v", err, resp.Error())
	}
	dr, err := adm.DeleteOffsets(ctx, "partial", kadm.TopicsSet{"in": {1: {}}})
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("DeleteOffsets: %v", err)
	}
	filler(50)

	before, err := groupsState(ctx, seeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("groups before cleaning:\n%s", before)
	lines := map[string]string{}
	for _, l := range strings.Split(before, "\n") {
		name, _, _ := strings.Cut(l, " ")
		lines[name] = l
	}
	for name, want := range map[string]string{
		"live":      "live Empty : in-0=390 in-1=391 in-2=392 in-3=393",
		"partial":   "partial Empty : in-0=390 in-2=392 in-3=393",
		"txn-group": "txn-group Empty : in-0=10",
	} {
		if lines[name] != want {
			t.Fatalf("before cleaning, group %s is %q, want %q", name, lines[name], want)
		}
	}
	if _, ok := lines["gone"]; ok || !strings.HasPrefix(lines["consumers"], "consumers Empty consumer: ") ||
		!strings.HasPrefix(lines["kip848"], "kip848 Empty consumer epoch=") {
		t.Fatalf("before cleaning, the deleted group is listed or the consumer group is not:\n%s", before)
	}

	// Clean every replica; more commits, and clean again: the second
	// pass is past the tombstones' delete horizon.
	_, produced := internalRecords(ctx, t, seeds, "__consumer_offsets")
	passes := cleanAll(t, c, 0)
	filler(60)
	commit("filler", 49, all...) // as before the cleaning
	passes += cleanAll(t, c, 0)
	recs, end := internalRecords(ctx, t, seeds, "__consumer_offsets")
	t.Logf("%d cleaning passes; __consumer_offsets-0: %d offsets written, %d records left", passes, end, len(recs))
	if len(recs) > int(produced)/4 {
		t.Fatalf("%d of %d records left: not cleaned", len(recs), produced)
	}
	for i, r := range recs {
		if i > 0 && r.Offset <= recs[i-1].Offset {
			t.Fatalf("offset %d after %d", r.Offset, recs[i-1].Offset)
		}
		if keyGroup(r.Key) == "gone" {
			t.Fatalf("a record of the deleted group is left at offset %d (value %d bytes): the tombstones were not removed", r.Offset, len(r.Value))
		}
	}

	check := func(what string, live []string) {
		t.Helper()
		var after string
		sluicetest.WaitFor(t, 30*time.Second, func() error {
			var err error
			if after, err = groupsState(ctx, live); err != nil {
				return err
			}
			if after != before {
				return fmt.Errorf("groups:\n%s\nwant:\n%s", after, before)
			}
			return nil
		})
		t.Logf("after %s the groups are as before cleaning", what)
	}
	liveSeeds := func(dead int) []string {
		var out []string
		for i, a := range seeds {
			if i+1 != dead {
				out = append(out, a)
			}
		}
		return out
	}

	// Two failovers, each new coordinator loading its own cleaned copy.
	first := offsetsLeader(t, c.Client(fast), "__consumer_offsets")
	c.WaitForISR("__consumer_offsets", 0, 3)
	c.Kill(first)
	check(fmt.Sprintf("node %d, the coordinator, was killed", first), liveSeeds(first))
	c.Restart(first)
	c.WaitForISR("__consumer_offsets", 0, 3)
	var second int
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
		if err != nil {
			return err
		}
		defer cl.Close()
		md, err := topicMetadata(cl, "__consumer_offsets")
		if err != nil {
			return err
		}
		if second = int(md.Partitions[0].Leader); second == first || second < 1 {
			return fmt.Errorf("leader %d", second)
		}
		return nil
	})
	c.Kill(second)
	check(fmt.Sprintf("node %d, the next coordinator, was killed", second), liveSeeds(second))

	// The deleted group has no offsets.
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(second)...))
		if err != nil {
			return err
		}
		defer cl.Close()
		gone, err := kadm.NewClient(cl).FetchOffsets(ctx, "gone")
		if err == nil {
			err = gone.Error()
		}
		if err != nil {
			return err
		}
		if len(gone) != 0 {
			t.Fatalf("the deleted group has offsets %v", gone)
		}
		return nil
	})
}

// txnsState is what DescribeTransactions shows of ids, one line each:
// state, producer id and epoch, timeout, start time and partitions.
func txnsState(ctx context.Context, seeds []string, ids ...string) (string, error) {
	var lines []string
	for _, id := range ids {
		d, err := describeTxn(ctx, seeds, id)
		if err != nil {
			return "", fmt.Errorf("%s: %w", id, err)
		}
		lines = append(lines, fmt.Sprintf("%s %s pid=%d epoch=%d timeout=%d start=%d %v",
			id, d.State, d.ProducerID, d.ProducerEpoch, d.TimeoutMillis, d.StartTimestamp, d.Topics.Sorted()))
	}
	return strings.Join(lines, "\n"), nil
}

// Transactional producers that committed many transactions, one whose
// last transaction aborted, one fenced by a second instance of its id,
// and one whose transaction is still open, on a __transaction_state of
// one partition with 8 KiB segments, cleaned twice with
// delete.retention.ms=0. The coordinator that takes over loads a cleaned
// replica and must describe every id as before; the open transaction
// commits through it, a new producer of an id gets the next epoch of the
// same producer id and fences the old one, the fenced instance stays
// fenced, and a read_committed consumer sees exactly the committed
// records.
func TestTxnCoordinatorLoadsCleanedState(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, "transaction.state.log.num.partitions=1", "transaction.state.log.segment.bytes=8192",
		"log.cleaner.delete.retention.ms=0")
	needMarkers(t, c.Addrs()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seeds := c.Addrs()
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, nil, "tx-out"); err != nil {
		t.Fatal(err)
	}
	c.WaitForISR("tx-out", 0, 3)
	committed := map[string]bool{} // values of records in committed transactions
	run := func(cl *kgo.Client, id string, k int, commit bool) error {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		v := fmt.Sprintf("%s-%d", id, k)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tx-out", Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
			return err
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			return err
		}
		if commit {
			committed[v] = true
		}
		return nil
	}
	runN := func(cl *kgo.Client, id string, from, n int) {
		t.Helper()
		for k := from; k < from+n; k++ {
			if err := run(cl, id, k, true); err != nil {
				t.Fatalf("%s transaction %d: %v", id, k, err)
			}
		}
	}
	filler := txnProducer(t, seeds, "tx-filler")
	runN(filler, "tx-filler", 0, 40)

	a := txnProducer(t, seeds, "tx-a")
	runN(a, "tx-a", 0, 30)
	b := txnProducer(t, seeds, "tx-b")
	runN(b, "tx-b", 0, 20)
	if err := run(b, "tx-b", 20, false); err != nil {
		t.Fatal(err)
	}
	oldC := txnProducer(t, seeds, "tx-c")
	runN(oldC, "tx-c", 0, 5)
	newC := txnProducer(t, seeds, "tx-c")
	runN(newC, "tx-c", 5, 2)
	open := txnProducer(t, seeds, "tx-open", kgo.TransactionTimeout(2*time.Minute))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Topic: "tx-out", Partition: 0, Value: []byte("tx-open-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	runN(filler, "tx-filler", 40, 40)

	ids := []string{"tx-a", "tx-b", "tx-c", "tx-open"}
	before, err := txnsState(ctx, seeds, ids...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("transactions before cleaning:\n%s", before)

	_, written := internalRecords(ctx, t, seeds, "__transaction_state")
	passes := cleanAll(t, c, 0)
	runN(filler, "tx-filler", 80, 40)
	passes += cleanAll(t, c, 0)
	recs, end := internalRecords(ctx, t, seeds, "__transaction_state")
	perID := map[string]int{}
	for _, r := range recs {
		perID[keyGroup(r.Key)]++
	}
	t.Logf("%d cleaning passes; __transaction_state-0: %d offsets written (%d before the second pass), %d records left: %v",
		passes, end, written, len(recs), perID)
	for _, id := range ids {
		if perID[id] != 1 {
			t.Fatalf("%d records of %s left after cleaning, want its latest one", perID[id], id)
		}
	}

	leader := offsetsLeader(t, c.Client(), "__transaction_state")
	c.WaitForISR("__transaction_state", 0, 3)
	c.Kill(leader)
	var live []string
	for i, addr := range seeds {
		if i+1 != leader {
			live = append(live, addr)
		}
	}
	var after string
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		var err error
		if after, err = txnsState(ctx, live, ids...); err != nil {
			return err
		}
		if after != before {
			return fmt.Errorf("transactions:\n%s\nwant:\n%s", after, before)
		}
		return nil
	})
	t.Logf("node %d, the coordinator, killed: the next coordinator describes every id as before", leader)

	// The open transaction commits through the new coordinator.
	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit the open transaction after the failover: %v", err)
	}
	committed["tx-open-0"] = true

	// A new producer of tx-a: the same producer id, the next epoch; the
	// old one is fenced.
	da, err := describeTxn(ctx, live, "tx-a")
	if err != nil {
		t.Fatal(err)
	}
	newA := txnProducer(t, live, "tx-a")
	runN(newA, "tx-a", 30, 1)
	pid, epoch, err := newA.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pid != da.ProducerID || epoch <= da.ProducerEpoch {
		t.Fatalf("the new tx-a producer has %d/%d, the loaded state %d/%d", pid, epoch, da.ProducerID, da.ProducerEpoch)
	}
	for name, cl := range map[string]*kgo.Client{"tx-a's first producer": a, "tx-c's first producer": oldC} {
		err := run(cl, name, 99, true)
		if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
			t.Fatalf("%s after the failover: %v, want fenced", name, err)
		}
	}
	runN(newC, "tx-c", 7, 1)
	runN(b, "tx-b", 21, 1)

	// A read_committed consumer sees exactly the committed records.
	end0 := c.Client()
	if err := end0.ProduceSync(ctx, &kgo.Record{Topic: "tx-out", Partition: 0, Value: []byte("end")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cons := c.Client(kgo.ConsumeTopics("tx-out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]bool{}
	for !got["end"] {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d committed records, no end: %v", len(got), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if v != "end" && !committed[v] {
				t.Errorf("read_committed consumer read %q, not committed", v)
			}
			got[v] = true
		})
	}
	if len(got) != len(committed)+1 {
		t.Fatalf("read %d committed records, want %d", len(got)-1, len(committed))
	}
}

// Transactional ids expired after transactional.id.expiration.ms are
// tombstoned in __transaction_state; the cleaning (delete.retention.ms=0)
// removes every record of them, tombstones included. The coordinator
// that takes over after a failover does not know them: ListTransactions
// lists none, DescribeTransactions finds none, and a producer using one
// of the ids again starts afresh with a new producer id.
func TestTxnCoordinatorLoadsCleanedExpiredIDs(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, "transaction.state.log.num.partitions=1", "transaction.state.log.segment.bytes=8192",
		"log.cleaner.delete.retention.ms=0", "transactional.id.expiration.ms=1000",
		"transaction.remove.expired.transaction.cleanup.interval.ms=100")
	needMarkers(t, c.Addrs()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seeds := c.Addrs()
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, nil, "tx-out"); err != nil {
		t.Fatal(err)
	}
	pids := map[string]int64{}
	// wave runs two transactions on each of n new ids, closes their
	// producers and waits until every one of them has expired.
	wave := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			id := fmt.Sprintf("%s-%d", prefix, i)
			cl := txnProducer(t, seeds, id)
			for range 2 {
				if err := produceTxn(ctx, cl, "tx-out", 1, true); err != nil {
					t.Fatalf("%s: %v", id, err)
				}
			}
			pid, _, err := cl.ProducerID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pids[id] = pid
			cl.Close()
		}
		sluicetest.WaitFor(t, 60*time.Second, func() error {
			listed, err := freshAdmin(t, c).ListTransactions(ctx, nil, nil)
			if err != nil {
				return err
			}
			if ids := listed.TransactionalIDs(); len(ids) > 0 {
				return fmt.Errorf("%d ids not expired yet", len(ids))
			}
			return nil
		})
	}
	wave("gone", 40)
	wave("roll", 40)
	passes := cleanAll(t, c, 0)
	wave("more", 40)
	passes += cleanAll(t, c, 0)
	recs, end := internalRecords(ctx, t, seeds, "__transaction_state")
	left := map[string]int{}
	for _, r := range recs {
		left[strings.SplitN(keyGroup(r.Key), "-", 2)[0]]++
	}
	t.Logf("%d cleaning passes; __transaction_state-0: %d offsets written, %d records left %v", passes, end, len(recs), left)
	if left["gone"] != 0 || left["roll"] != 0 {
		t.Fatalf("records of expired ids left after cleaning: %v", left)
	}

	leader := offsetsLeader(t, c.Client(), "__transaction_state")
	c.WaitForISR("__transaction_state", 0, 3)
	c.Kill(leader)
	var live []string
	for i, addr := range seeds {
		if i+1 != leader {
			live = append(live, addr)
		}
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		_, err := describeTxn(ctx, live, "gone-0")
		if !errors.Is(err, kerr.TransactionalIDNotFound) {
			return fmt.Errorf("describe gone-0: %v, want TRANSACTIONAL_ID_NOT_FOUND", err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(live...))
		if err != nil {
			return err
		}
		defer cl.Close()
		listed, err := kadm.NewClient(cl).ListTransactions(ctx, nil, nil)
		if err != nil {
			return err
		}
		if ids := listed.TransactionalIDs(); len(ids) > 0 {
			return fmt.Errorf("the new coordinator lists %v", ids)
		}
		return nil
	})
	again := txnProducer(t, live, "gone-0")
	if err := produceTxn(ctx, again, "tx-out", 1, true); err != nil {
		t.Fatal(err)
	}
	pid, epoch, err := again.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pid == pids["gone-0"] {
		t.Fatalf("gone-0 used again got its expired producer id %d (epoch %d)", pid, epoch)
	}
	t.Logf("node %d killed; the next coordinator knows no expired id, and gone-0 starts afresh as producer %d", leader, pid)
}

// A transactional offset commit still open while __consumer_offsets is
// cleaned on every replica: the cleaning stops at the partition's last
// stable offset, so the group's committed offset, which the open
// transaction's record would supersede, stays. The transaction then
// aborts and the coordinator fails over: the new one loads its cleaned
// copy and the group still has its committed offset, not the aborted one
// and not none.
func TestGroupCoordinatorLoadsOffsetsCleanedAroundOpenTxn(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, "offsets.topic.num.partitions=1", "offsets.topic.segment.bytes=8192",
		"log.cleaner.delete.retention.ms=0")
	needMarkers(t, c.Addrs()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seeds := c.Addrs()
	adm := kadm.NewClient(c.Client())
	for _, topic := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(group string, at int64) { t.Helper(); commitIn(ctx, t, adm, group, at) }
	filler := func(n int) {
		for i := range n {
			commit("filler", int64(i+1))
		}
	}
	for at := int64(1); at <= 5; at++ {
		commit("held", at)
	}
	filler(100)

	txp := txnProducer(t, seeds, "held-tx", kgo.TransactionTimeout(2*time.Minute))
	beginTxnOffsetCommit(ctx, t, txp, "held-tx", "held", "out", "in", []byte("x"), 77)
	filler(100)
	c.WaitForISR("__consumer_offsets", 0, 3)
	passes := cleanAll(t, c, 0)
	if passes == 0 {
		t.Fatal("no cleaning pass below the open transaction")
	}
	if err := txp.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	filler(100)
	passes += cleanAll(t, c, 0)
	recs, end := internalRecords(ctx, t, seeds, "__consumer_offsets")
	t.Logf("%d cleaning passes; __consumer_offsets-0: %d offsets written, %d records left", passes, end, len(recs))

	expect := func(seeds []string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
		if err != nil {
			return err
		}
		defer cl.Close()
		off, code, err := stableOffset(ctx, cl, "held", "in")
		if err != nil {
			return err
		}
		if code != 0 || off != 5 {
			return fmt.Errorf("offset %d, error %d; want 5", off, code)
		}
		return nil
	}
	sluicetest.WaitFor(t, 20*time.Second, func() error { return expect(seeds) })
	for kill := 0; kill < 2; kill++ {
		leader := offsetsLeader(t, c.Client(), "__consumer_offsets")
		c.WaitForISR("__consumer_offsets", 0, 3)
		c.Kill(leader)
		var live []string
		for i, addr := range seeds {
			if i+1 != leader {
				live = append(live, addr)
			}
		}
		sluicetest.WaitFor(t, 30*time.Second, func() error { return expect(live) })
		t.Logf("node %d, the coordinator, killed: the next one has the group at 5", leader)
		c.Restart(leader)
	}
}

// compressedBatches counts the batches of a partition's segment files
// (dir/topic-partition/*.log) stored with a compression codec.
func compressedBatches(t *testing.T, dir, partitionDir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, partitionDir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // removed by the cleaner meanwhile
		}
		for len(b) >= 61 {
			size := 12 + int(binary.BigEndian.Uint32(b[8:]))
			if size < 61 || size > len(b) {
				break
			}
			if binary.BigEndian.Uint16(b[21:])&0x07 != 0 {
				n++
			}
			b = b[size:]
		}
	}
	return n
}

// With compression.type=lz4 set on __consumer_offsets and
// __transaction_state (Kafka allows it; the leader then stores the
// coordinators' batches compressed), a coordinator loading the partitions,
// cleaned or not, restores the same groups, offsets and transactional ids.
// The loaders used to skip compressed batches, so after a restart every
// offset and transaction state written since the change was gone.
func TestCoordinatorsLoadCompressedInternalTopics(t *testing.T) {
	n := sluicetest.Start(t, "offsets.topic.num.partitions=1", "offsets.topic.segment.bytes=8192",
		"transaction.state.log.num.partitions=1", "transaction.state.log.segment.bytes=8192")
	needMarkers(t, n.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := []string{n.Addr()}
	adm := n.Admin()
	for _, topic := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(group string, at int64) { t.Helper(); commitIn(ctx, t, adm, group, at) }
	// Both topics exist once used; then they are set to lz4.
	commit("probe", 1)
	txp := txnProducer(t, seeds, "tx-z")
	if err := produceTxn(ctx, txp, "out", 1, true); err != nil {
		t.Fatal(err)
	}
	lz4 := "lz4"
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "compression.type", Value: &lz4}}, topic)
		if err == nil {
			err = res[0].Err
		}
		if err != nil {
			t.Fatalf("compression.type=lz4 on %s: %v", topic, err)
		}
	}
	at := int64(1)
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		at++
		commit("probe", at)
		if compressedBatches(t, n.Dir, "__consumer_offsets-0") == 0 {
			return fmt.Errorf("no compressed batch in __consumer_offsets yet")
		}
		if err := produceTxn(ctx, txp, "out", 1, true); err != nil {
			return err
		}
		if compressedBatches(t, n.Dir, "__transaction_state-0") == 0 {
			return fmt.Errorf("no compressed batch in __transaction_state yet")
		}
		return nil
	})

	for i := int64(1); i <= 150; i++ {
		commit("g", i)
	}
	commit("gone", 3)
	if resp, err := adm.DeleteGroups(ctx, "gone"); err != nil || resp.Error() != nil {
		t.Fatalf("DeleteGroups: %v %v", err, resp.Error())
	}
	for range 30 {
		if err := produceTxn(ctx, txp, "out", 1, true); err != nil {
			t.Fatal(err)
		}
	}
	groupsBefore, err := groupsState(ctx, seeds)
	if err != nil {
		t.Fatal(err)
	}
	txnsBefore, err := txnsState(ctx, seeds, "tx-z")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(groupsBefore, "g Empty : in-0=150") {
		t.Fatalf("groups before the restart:\n%s", groupsBefore)
	}

	check := func(what string) {
		t.Helper()
		sluicetest.WaitFor(t, 20*time.Second, func() error {
			g, err := groupsState(ctx, seeds)
			if err != nil {
				return err
			}
			if g != groupsBefore {
				return fmt.Errorf("groups:\n%s\nwant:\n%s", g, groupsBefore)
			}
			x, err := txnsState(ctx, seeds, "tx-z")
			if err != nil {
				return err
			}
			if x != txnsBefore {
				return fmt.Errorf("transactions:\n%s\nwant:\n%s", x, txnsBefore)
			}
			return nil
		})
		t.Logf("after %s: groups and transactions as before", what)
	}
	n.Restart()
	check("a restart")

	passes := 0
	for n.Broker.RunCleaner() {
		if passes++; passes > 100 {
			t.Fatal("the cleaner never runs out of work")
		}
	}
	if passes == 0 {
		t.Fatal("no cleaning pass")
	}
	co, ts := compressedBatches(t, n.Dir, "__consumer_offsets-0"), compressedBatches(t, n.Dir, "__transaction_state-0")
	if co == 0 || ts == 0 {
		t.Fatalf("compressed batches after cleaning: %d in __consumer_offsets, %d in __transaction_state", co, ts)
	}
	n.Restart()
	check(fmt.Sprintf("%d cleaning passes and a restart", passes))

	// The producer goes on with the epoch the loaded state holds.
	next := txnProducer(t, seeds, "tx-z")
	if err := produceTxn(ctx, next, "out", 1, true); err != nil {
		t.Fatal(err)
	}
	if err := produceTxn(ctx, txp, "out", 1, true); !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the first tx-z producer after the reload: %v, want fenced", err)
	}
}

// A KIP-848 consumer group that became a classic group (a classic member
// joined it once empty) and was then deleted stays deleted at every load:
// the conversion tombstones the consumer group's records, as Kafka does,
// so neither the classic group's tombstone nor, once the cleaner removed
// that, the consumer group's old records bring it back. The group
// converted the same way but not deleted loads as the classic group it
// is. The conversion used to leave the consumer group's records live and
// the load to restore them when no classic record followed: the deleted
// group came back as an empty consumer group at the first restart.
func TestConvertedGroupStaysDeletedAfterCleaning(t *testing.T) {
	n := sluicetest.Start(t, "offsets.topic.num.partitions=1", "offsets.topic.segment.bytes=8192",
		"log.cleaner.delete.retention.ms=0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := []string{n.Addr()}
	adm := n.Admin()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	if err := n.Client().ProduceSync(ctx, &kgo.Record{Topic: "in", Value: []byte("a")}, &kgo.Record{Topic: "in", Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Each group is a KIP-848 consumer group first, then a classic one;
	// each member reads a record and commits.
	for _, group := range []string{"mig", "kept"} {
		for _, protocol := range [][]kgo.Opt{{kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())}, nil} {
			cl := n.Client(append([]kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics("in"), kgo.DisableAutoCommit(),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}, protocol...)...)
			for read := 0; read < 1; {
				read += cl.PollRecords(ctx, 1).NumRecords()
				if ctx.Err() != nil {
					t.Fatalf("group %s read nothing", group)
				}
			}
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatal(err)
			}
			cl.Close()
		}
	}
	if resp, err := adm.DeleteGroups(ctx, "mig"); err != nil || resp.Error() != nil {
		t.Fatalf("DeleteGroups: %v %v", err, resp.Error())
	}
	before, err := groupsState(ctx, seeds)
	if err != nil {
		t.Fatal(err)
	}
	if before != "kept Empty consumer: in-0=2" {
		t.Fatalf("groups before the restart:\n%s", before)
	}
	check := func(what string) {
		t.Helper()
		var after string
		sluicetest.WaitFor(t, 20*time.Second, func() error {
			var err error
			after, err = groupsState(ctx, seeds)
			return err
		})
		if after != before {
			t.Fatalf("after %s the groups are:\n%s\nwant:\n%s", what, after, before)
		}
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g := listed["kept"]; g.GroupType != "" && g.GroupType != "classic" {
			t.Fatalf("after %s kept is a %s group, want classic", what, g.GroupType)
		}
	}
	n.Restart()
	adm = n.Admin()
	check("a restart")

	// Commits of another group roll segments; two cleanings, the second
	// past the tombstones' delete horizon, leave nothing of mig.
	commit := func(at int64) {
		t.Helper()
		resp, err := adm.CommitOffsets(ctx, "filler", kadm.OffsetsFromRecords(kgo.Record{Topic: "in", Partition: 0, Offset: at - 1}))
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	clean := func() {
		for passes := 0; n.Broker.RunCleaner(); passes++ {
			if passes > 100 {
				t.Fatal("the cleaner never runs out of work")
			}
		}
	}
	for i := range int64(100) {
		commit(i + 1)
	}
	clean()
	for i := range int64(100) {
		commit(i + 1)
	}
	clean()
	recs, _ := internalRecords(ctx, t, seeds, "__consumer_offsets")
	for _, r := range recs {
		if keyGroup(r.Key) == "mig" {
			t.Fatalf("a record of the deleted group is left at offset %d after cleaning (value of %d bytes)", r.Offset, len(r.Value))
		}
	}
	before = "filler Empty : in-0=100\n" + before
	n.Restart()
	adm = n.Admin()
	check("cleaning and a restart")
}

// readAndCommit polls cons one record at a time, committing after each
// poll, until it has read n records, then closes it.
func readAndCommit(ctx context.Context, t *testing.T, cons *kgo.Client, n int, who string) {
	t.Helper()
	read := 0
	for read < n {
		fs := cons.PollRecords(ctx, 1)
		if ctx.Err() != nil {
			t.Fatalf("%s read %d", who, read)
		}
		read += fs.NumRecords()
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cons.Close()
}

// commitIn commits group's offset of "in" partition 0 as at.
func commitIn(ctx context.Context, t *testing.T, adm *kadm.Client, group string, at int64) {
	t.Helper()
	resp, err := adm.CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: "in", Partition: 0, Offset: at - 1}))
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s at %d: %v", group, at, err)
	}
}
