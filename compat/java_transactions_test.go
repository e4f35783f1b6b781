package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Transactions as Kafka's Java tools see them: kafka-transactions.sh
// listing and describing a running transaction and the producers of a
// partition, and TransactionalMessageCopier (the consume–transform–produce
// loop of Kafka's system tests) copying a topic with its offsets committed
// in each transaction through sendOffsetsToTransaction.

// javaTransactionsRow runs kafka-transactions.sh list, describe and
// describe-producers while one transaction is committed and another open.
func javaTransactionsRow() row {
	return javaRow("kafka-transactions", 3*time.Minute, runJavaTransactions)
}

// javaTxnCopierRow runs TransactionalMessageCopier in group mode with
// random aborts.
func javaTxnCopierRow() row {
	return javaRow("kafka-txn-copier", 3*time.Minute, runJavaTxnCopier)
}

// txnTable is a table kafka-transactions.sh prints: a header line, then
// one line per row, each column padded with spaces and ended by a tab (an
// empty value is all spaces).
type txnTable []map[string]string

// parseTxnTable reads the table that is out: its first non-empty line is
// the header.
func parseTxnTable(out string) (txnTable, error) {
	var header []string
	var rows txnTable
	for n, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(strings.TrimSuffix(line, "\t"), "\t")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		switch {
		case header == nil:
			header = fields
		default:
			if len(fields) != len(header) {
				return nil, fmt.Errorf("line %d has %d columns under a header of %d (%s): %q",
					n+1, len(fields), len(header), strings.Join(header, " "), line)
			}
			r := map[string]string{}
			for i, h := range header {
				r[h] = fields[i]
			}
			rows = append(rows, r)
		}
	}
	if header == nil {
		return nil, fmt.Errorf("no table in %q", out)
	}
	return rows, nil
}

// find returns the row whose column col is value.
func (t txnTable) find(col, value string) (map[string]string, bool) {
	for _, r := range t {
		if r[col] == value {
			return r, true
		}
	}
	return nil, false
}

// expectColumns fails unless r has each column at its wanted value.
func expectColumns(what string, r map[string]string, want map[string]string) error {
	for col, v := range want {
		if r[col] != v {
			return fmt.Errorf("%s: %s is %q, want %q (row %v)", what, col, r[col], v, r)
		}
	}
	return nil
}

func runJavaTransactions(ctx context.Context, env *rowEnv) error {
	const topic = "compat-txn"
	admCl, adm, err := newAdmin(env)
	if err != nil {
		return err
	}
	defer admCl.Close()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		return fmt.Errorf("franz-go create %s: %w", topic, err)
	}

	// One transaction commits 4 records to partition 0 (offsets 0–3, its
	// marker at 4); a second writes 3 records to partition 0 (from
	// offset 5) and 2 to partition 1 and stays open.
	newTxnClient := func(id string) (*kgo.Client, error) {
		// Transactions v1 (see txnV1MaxVersions): describe-producers then
		// shows the committed producer's last sequence, which a v2 end's
		// epoch bump resets.
		return kgo.NewClient(kgo.SeedBrokers(env.broker.addr), kgo.TransactionalID(id),
			kgo.TransactionTimeout(time.Minute), manualPartitions(), txnV1MaxVersions())
	}
	done, err := newTxnClient("compat-txn-done")
	if err != nil {
		return err
	}
	defer done.Close()
	if err := done.BeginTransaction(); err != nil {
		return err
	}
	if err := produceTo(ctx, done, topic, 0, 4, "done", time.Now()); err != nil {
		return err
	}
	if err := done.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("franz-go commit: %w", err)
	}
	donePID, doneEpoch, err := done.ProducerID(ctx)
	if err != nil {
		return err
	}
	open, err := newTxnClient("compat-txn-open")
	if err != nil {
		return err
	}
	defer open.Close()
	if err := open.BeginTransaction(); err != nil {
		return err
	}
	start := time.Now()
	if err := produceTo(ctx, open, topic, 0, 3, "open", start); err != nil {
		return err
	}
	if err := produceTo(ctx, open, topic, 1, 2, "open", start); err != nil {
		return err
	}
	openPID, openEpoch, err := open.ProducerID(ctx)
	if err != nil {
		return err
	}
	// The committed transaction is CompleteCommit once its markers are
	// written, which follows EndTxn's answer.
	if err := waitTxnState(ctx, adm, "compat-txn-done", "CompleteCommit"); err != nil {
		return err
	}
	bootstrap := []string{"--bootstrap-server", env.broker.addr}

	out, err := kafkaTool(ctx, env, nil, "kafka-transactions.sh", append(bootstrap, "list")...)
	if err != nil {
		return err
	}
	listed, err := parseTxnTable(out)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	for _, want := range []map[string]string{
		{"TransactionalId": "compat-txn-open", "Coordinator": javaNodeID, "ProducerId": fmt.Sprint(openPID), "TransactionState": "Ongoing"},
		{"TransactionalId": "compat-txn-done", "Coordinator": javaNodeID, "ProducerId": fmt.Sprint(donePID), "TransactionState": "CompleteCommit"},
	} {
		r, ok := listed.find("TransactionalId", want["TransactionalId"])
		if !ok {
			return fmt.Errorf("list: %s not listed in %v", want["TransactionalId"], listed)
		}
		if err := expectColumns("list", r, want); err != nil {
			return err
		}
	}

	out, err = kafkaTool(ctx, env, nil, "kafka-transactions.sh", append(bootstrap, "describe", "--transactional-id", "compat-txn-open")...)
	if err != nil {
		return err
	}
	described, err := parseTxnTable(out)
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	if len(described) != 1 {
		return fmt.Errorf("describe: %d rows, want 1: %v", len(described), described)
	}
	d := described[0]
	if err := expectColumns("describe", d, map[string]string{
		"CoordinatorId": javaNodeID, "TransactionalId": "compat-txn-open",
		"ProducerId": fmt.Sprint(openPID), "ProducerEpoch": fmt.Sprint(openEpoch),
		"TransactionState": "Ongoing", "TransactionTimeoutMs": "60000",
	}); err != nil {
		return err
	}
	parts := strings.Split(d["TopicPartitions"], ",")
	slices.Sort(parts)
	if !slices.Equal(parts, []string{topic + "-0", topic + "-1"}) {
		return fmt.Errorf("describe: TopicPartitions %q, want %s-0 and %s-1", d["TopicPartitions"], topic, topic)
	}
	startMs, err := strconv.ParseInt(d["CurrentTransactionStartTimeMs"], 10, 64)
	if err != nil || startMs < start.Add(-time.Minute).UnixMilli() || startMs > time.Now().UnixMilli() {
		return fmt.Errorf("describe: CurrentTransactionStartTimeMs %q is not the transaction's start (about %d)", d["CurrentTransactionStartTimeMs"], start.UnixMilli())
	}
	if ms, err := strconv.ParseInt(d["TransactionDurationMs"], 10, 64); err != nil || ms < 0 {
		return fmt.Errorf("describe: TransactionDurationMs %q", d["TransactionDurationMs"])
	}

	out, err = kafkaTool(ctx, env, nil, "kafka-transactions.sh", append(bootstrap, "describe-producers", "--topic", topic, "--partition", "0")...)
	if err != nil {
		return err
	}
	producers, err := parseTxnTable(out)
	if err != nil {
		return fmt.Errorf("describe-producers: %w", err)
	}
	if len(producers) != 2 {
		return fmt.Errorf("describe-producers: %d producers, want 2: %v", len(producers), producers)
	}
	for _, want := range []map[string]string{
		{"ProducerId": fmt.Sprint(donePID), "ProducerEpoch": fmt.Sprint(doneEpoch), "LastSequence": "3", "CurrentTransactionStartOffset": "None"},
		{"ProducerId": fmt.Sprint(openPID), "ProducerEpoch": fmt.Sprint(openEpoch), "LastSequence": "2", "CurrentTransactionStartOffset": "5"},
	} {
		r, ok := producers.find("ProducerId", want["ProducerId"])
		if !ok {
			return fmt.Errorf("describe-producers: producer %s not listed in %v", want["ProducerId"], producers)
		}
		if err := expectColumns("describe-producers", r, want); err != nil {
			return err
		}
	}

	// The open transaction ends as an abort, which describe then shows.
	if err := open.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("franz-go abort: %w", err)
	}
	if err := waitTxnState(ctx, adm, "compat-txn-open", "CompleteAbort"); err != nil {
		return err
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-transactions.sh", append(bootstrap, "describe", "--transactional-id", "compat-txn-open")...)
	if err != nil {
		return err
	}
	if described, err = parseTxnTable(out); err != nil {
		return fmt.Errorf("describe after abort: %w", err)
	}
	if len(described) != 1 {
		return fmt.Errorf("describe after abort: %d rows, want 1", len(described))
	}
	return expectColumns("describe after abort", described[0], map[string]string{
		"ProducerId": fmt.Sprint(openPID), "TransactionState": "CompleteAbort", "TopicPartitions": "",
	})
}

// waitTxnState polls DescribeTransactions until id is in state.
func waitTxnState(ctx context.Context, adm *kadm.Client, id, state string) error {
	var last string
	for {
		described, err := adm.DescribeTransactions(ctx, id)
		if err == nil {
			if d, ok := described[id]; ok && d.Err == nil {
				if d.State == state {
					return nil
				}
				last = d.State
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("franz-go: transaction %s is %q, not %s: %w", id, last, state, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// copierStatus is one JSON line TransactionalMessageCopier prints.
type copierStatus struct {
	Stage          string `json:"stage"`
	TotalProcessed int64  `json:"totalProcessed"`
	Remaining      int64  `json:"remaining"`
}

func runJavaTxnCopier(ctx context.Context, env *rowEnv) error {
	const (
		in, out = "compat-copy-in", "compat-copy-out"
		group   = "compat-copy-group"
		records = 5000
	)
	admCl, adm, err := newAdmin(env, manualPartitions())
	if err != nil {
		return err
	}
	defer admCl.Close()
	for _, topic := range []string{in, out} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			return fmt.Errorf("franz-go create %s: %w", topic, err)
		}
	}
	// Timestamps a second apart, ending now: starting now would put the
	// last ones more than message.timestamp.after.max.ms (one hour) in
	// the future, which the broker refuses with INVALID_TIMESTAMP.
	if err := produceTo(ctx, admCl, in, 0, records, "copy", time.Now().Add(-records*time.Second)); err != nil {
		return err
	}

	// Group mode subscribes (a classic group) and commits with the
	// consumer's group metadata (KIP-447: TxnOffsetCommit v3 with
	// member id and generation); a third of the transactions abort.
	stdout, err := kafkaTool(ctx, env, nil, "kafka-run-class.sh", "org.apache.kafka.tools.TransactionalMessageCopier",
		"--broker-list", env.broker.addr, "--input-topic", in, "--input-partition", "0", "--output-topic", out,
		"--consumer-group", group, "--transactional-id", "compat-copier", "--transaction-size", "100",
		"--group-mode", "--use-group-metadata", "--enable-random-aborts")
	if err != nil {
		return err
	}
	var last copierStatus
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "{") {
			if err := json.Unmarshal([]byte(line), &last); err != nil {
				return fmt.Errorf("copier output %q: %w", line, err)
			}
		}
	}
	if last.Stage != "ShutdownComplete" || last.TotalProcessed != records || last.Remaining != 0 {
		return fmt.Errorf("copier's last status %+v, want ShutdownComplete with %d processed, 0 remaining", last, records)
	}

	committed, err := readTopic(ctx, env, out, kgo.ReadCommitted(), records)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for _, r := range committed {
		seen[string(r.Key)+"="+string(r.Value)]++
	}
	for i := range records {
		k := fmt.Sprintf("copy-key-%d=copy-value-%d", i, i)
		if seen[k] != 1 {
			return fmt.Errorf("read_committed: record %d (%s) copied %d times, want once (%d records read)", i, k, seen[k], len(committed))
		}
	}
	if len(committed) != records {
		return fmt.Errorf("read_committed: %d records, want %d", len(committed), records)
	}
	// The aborted transactions' copies are in the log, invisible above.
	all, err := readTopic(ctx, env, out, kgo.ReadUncommitted(), records)
	if err != nil {
		return err
	}
	if len(all) <= records {
		return fmt.Errorf("read_uncommitted: %d records: no transaction was aborted (random aborts abort a third of them)", len(all))
	}

	offsets, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("franz-go OffsetFetch %s: %w", group, err)
	}
	if o, ok := offsets.Lookup(in, 0); !ok || o.At != records {
		return fmt.Errorf("group %s committed %+v for %s-0, want %d", group, o, in, records)
	}
	env.t.Logf("copier: %d records copied exactly once, %d aborted copies in the log", records, len(all)-records)
	return nil
}

// readTopic reads topic from the start with the isolation level until at
// least want records arrived and a poll brings nothing more.
func readTopic(ctx context.Context, env *rowEnv, topic string, isolation kgo.IsolationLevel, want int) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.broker.addr), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(isolation), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return recs, fmt.Errorf("franz-go read %d of %d records of %s: %w", len(recs), want, topic, ctx.Err())
		}
		if errs := fetches.Errors(); len(errs) > 0 && errs[0].Err != context.DeadlineExceeded {
			return recs, fmt.Errorf("franz-go fetch %s-%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		n := fetches.NumRecords()
		recs = append(recs, fetches.Records()...)
		if n == 0 && len(recs) >= want {
			return recs, nil
		}
	}
}

func TestParseTxnTable(t *testing.T) {
	out := "CoordinatorId\tTransactionalId\tTopicPartitions          \t\n" +
		"1            \ttx-a\tt-1,t-0                  \t\n" +
		"1            \ttx-b\t               \t\n\n"
	table, err := parseTxnTable(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(table) != 2 {
		t.Fatalf("%d rows: %v", len(table), table)
	}
	if r, ok := table.find("TransactionalId", "tx-a"); !ok || r["CoordinatorId"] != "1" || r["TopicPartitions"] != "t-1,t-0" {
		t.Fatalf("tx-a: %v", r)
	}
	if r, ok := table.find("TransactionalId", "tx-b"); !ok || r["TopicPartitions"] != "" {
		t.Fatalf("tx-b: %v", r)
	}
	if _, err := parseTxnTable("A\tB\t\nonly-one\t\n"); err == nil {
		t.Fatal("a short row parsed")
	}
}
