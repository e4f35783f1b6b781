package compat

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The kafka-streams row (issue 17, acceptance 3): a Kafka Streams 4.1.1
// application (compat/streams/, built by compat/streams/build.sh into a
// cache outside the repository) with processing.guarantee=exactly_once_v2
// sums long values per key into a state store whose changelog Streams
// creates compacted, against a three-node cluster with replication factor
// 3. The row checks every key's sum and the exact number of output records
// (exactly once: one output record per input record, the record cache being
// off), that the changelog is cleanup.policy=compact, then deletes the app's
// state directory, restarts it and measures the restore (time and records
// restored) and the changelog's record count, and checks the sums again
// after more input.
//
// The changelog is created with a small segment.ms (a "topic." config of
// Streams), so that its first segment rolls during the row and a log
// cleaner can compact it: the row waits for every changelog partition to
// shrink before the restore (up to compactWait; the cleaner looks for work
// every log.cleaner.backoff.ms, 15 s by default, on sluice as on Kafka)
// and, against sluice, fails when one did not.
//
// The same run against Apache Kafka 4.1.1 (three KRaft nodes, compat's jars),
// for the side-by-side figures, not in CI:
//
//	SLUICE_STREAMS_KAFKA=1 go test ./compat -run '^TestStreamsKafka$' -count=1 -v

const (
	streamsKeys       = 200 // distinct keys of the input
	streamsRound1     = 50  // records per key before the first check (SLUICE_STREAMS_PER_KEY)
	streamsRound2     = 10  // records per key after the restore
	streamsPartitions = 3
	// streamsSegmentMs is the changelog's segment.ms: after the first
	// round the row waits this long, then writes one record per key so
	// that the changelog's first segment rolls and becomes cleanable.
	streamsSegmentMs = 2000
	// streamsCatchUp bounds each wait for the app to consume its input
	// (or restore), more for a larger SLUICE_STREAMS_PER_KEY.
	streamsCatchUp = 90 * time.Second
)

// streamsRound1PerKey is how many records per key the first round writes:
// streamsRound1, or SLUICE_STREAMS_PER_KEY for a larger changelog (a
// longer restore) in a run by hand.
func streamsRound1PerKey() int {
	if n, err := strconv.Atoi(os.Getenv("SLUICE_STREAMS_PER_KEY")); err == nil && n > 0 {
		return n
	}
	return streamsRound1
}

func kafkaStreamsRow() row {
	return row{
		name:    "kafka-streams",
		tools:   []string{"java", "mvn"},
		timeout: 5 * time.Minute,
		nodes:   3,
		run: func(ctx context.Context, env *rowEnv) error {
			s := &streamsRun{
				bootstrap:   env.bootstrap,
				rf:          3,
				root:        env.root,
				dir:         env.dir,
				logf:        env.t.Logf,
				compactWait: 60 * time.Second,
				mustCompact: true,
			}
			f, err := s.run(ctx)
			if f != nil {
				fmt.Printf("kafka-streams against sluice (3 nodes): %s\n", f)
			}
			return err
		},
	}
}

// TestStreamsKafka runs the kafka-streams row's scenario against three
// Apache Kafka 4.1.1 nodes (startKafkaNodes, librdkafka_suite_kafka_test.go;
// replication factor 3) for the comparison.
func TestStreamsKafka(t *testing.T) {
	if os.Getenv("SLUICE_STREAMS_KAFKA") != "1" {
		t.Skip("set SLUICE_STREAMS_KAFKA=1 to run the kafka-streams scenario against Apache Kafka 4.1.1 (side by side, not CI)")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("SLUICE_COMPAT_LOGDIR"); d != "" {
		// A fresh directory: kafka-storage.sh formats only empty ones.
		dir = filepath.Join(d, "kafka-streams-kafka")
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	nodes, err := startKafkaNodes(ctx, root, dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer stopKafkaNodes(nodes)
	t.Logf("Kafka %s: 3 nodes up in %.1fs", kafkaVersion, time.Since(start).Seconds())
	s := &streamsRun{
		bootstrap: kafkaAddrs(nodes),
		rf:        3,
		root:      root,
		dir:       dir,
		logf:      t.Logf,
		// Kafka's cleaner looks for work every log.cleaner.backoff.ms
		// (15 s by default).
		compactWait: 60 * time.Second,
	}
	f, err := s.run(ctx)
	if f != nil {
		fmt.Printf("kafka-streams against Apache Kafka %s (3 nodes): %s\n", kafkaVersion, f)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// streamsRun is one run of the scenario against a cluster.
type streamsRun struct {
	bootstrap   []string
	rf          int16
	root, dir   string
	logf        func(string, ...any)
	compactWait time.Duration // how long to wait for the changelog to shrink
	mustCompact bool          // fail unless every changelog partition shrank
	// version is the Kafka Streams release the app is built against
	// (compat/streams/build.sh VERSION); "" for the pom's 4.1.1.
	version string
	// config are the app's extra Streams configs (key=value); nil for
	// the classic protocol's short session (see startApp).
	config []string

	libs     string
	adm      *kadm.Client
	producer *kgo.Client
	want     map[string]int64 // each key's sum over everything produced
	produced int              // input records produced
	inputs   map[int32]int    // input records produced, by partition
	next     int              // sequence number of the next input record
}

const (
	streamsAppID  = "compat-streams-sum"
	streamsInput  = "compat-streams-input"
	streamsOutput = "compat-streams-output"
	// streamsChangelog is the changelog Streams names after the
	// application id and the store ("sums", SumApp.java).
	streamsChangelog = streamsAppID + "-sums-changelog"
)

// streamsFigures is what a run measured.
type streamsFigures struct {
	build          time.Duration
	written        int  // changelog records the app wrote before the restore
	changelog      int  // changelog records readable before the restore
	compacted      bool // changelog < written
	compactedParts int  // changelog partitions shorter than their input
	changelogAfter int  // changelog records readable after the restore
	restored       int64
	restoreTime    time.Duration // first restore-start to last restore-end
	runningAfter   time.Duration // start of the app to REBALANCING→RUNNING
	keys, produced int
}

func (f *streamsFigures) String() string {
	return fmt.Sprintf("results correct for %d keys over %d input records; changelog %d records (%d written, compacted: %v, %d of %d partitions); "+
		"after deleting the state directory: %d records restored (changelog then %d) in %dms, RUNNING %dms after start (app build %.1fs)",
		f.keys, f.produced, f.changelog, f.written, f.compacted, f.compactedParts, streamsPartitions, f.restored, f.changelogAfter, f.restoreTime.Milliseconds(),
		f.runningAfter.Milliseconds(), f.build.Seconds())
}

func (s *streamsRun) run(ctx context.Context) (*streamsFigures, error) {
	f := &streamsFigures{keys: streamsKeys}
	start := time.Now()
	out, err := s.build(ctx)
	if err != nil {
		return nil, err
	}
	f.build = time.Since(start)
	s.libs = out
	s.logf("Streams app in %s (%.1fs)", s.libs, f.build.Seconds())

	cl, err := kgo.NewClient(kgo.SeedBrokers(s.bootstrap...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	s.adm = kadm.NewClient(cl)
	for _, topic := range []string{streamsInput, streamsOutput} {
		resp, err := s.adm.CreateTopic(ctx, streamsPartitions, s.rf, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return nil, fmt.Errorf("franz-go CreateTopic %s: %w", topic, err)
		}
	}
	if s.producer, err = kgo.NewClient(kgo.SeedBrokers(s.bootstrap...), kgo.RequiredAcks(kgo.AllISRAcks())); err != nil {
		return nil, err
	}
	defer s.producer.Close()
	s.want = map[string]int64{}
	s.inputs = map[int32]int{}

	// Round 1, then one record per key after segment.ms so that the
	// changelog's first segment rolls.
	if err := s.produce(ctx, streamsRound1PerKey()); err != nil {
		return nil, err
	}
	stateDir := filepath.Join(s.dir, "streams-state")
	app, err := s.startApp(ctx, "app-1", stateDir)
	if err != nil {
		return nil, err
	}
	defer app.kill()
	if err := s.waitCaughtUp(ctx, app); err != nil {
		return nil, err
	}
	time.Sleep(streamsSegmentMs*time.Millisecond + 500*time.Millisecond)
	if err := s.produce(ctx, 1); err != nil {
		return nil, err
	}
	if err := s.waitCaughtUp(ctx, app); err != nil {
		return nil, err
	}
	if err := app.stop(ctx); err != nil {
		return nil, err
	}
	if err := s.checkOutput(ctx); err != nil {
		return nil, fmt.Errorf("before the restore: %w", err)
	}
	if err := s.checkChangelogConfig(ctx); err != nil {
		return nil, err
	}

	// No cache: one changelog record per input record, each in the
	// changelog partition of its input partition. A cleaner compacts one
	// partition after another (Kafka's each on its own leader); the count
	// is taken once every partition has shrunk, or at compactWait.
	f.written = s.produced
	waitUntil := time.Now().Add(s.compactWait)
	for {
		counts, err := s.countCommitted(ctx, streamsChangelog)
		if err != nil {
			return nil, err
		}
		f.changelog, f.compactedParts = 0, 0
		for p, n := range counts {
			f.changelog += n
			if n < s.inputs[p] {
				f.compactedParts++
			}
		}
		if f.compactedParts == streamsPartitions || time.Now().After(waitUntil) {
			break
		}
		time.Sleep(time.Second)
	}
	f.compacted = f.changelog < f.written
	if s.mustCompact && f.compactedParts < streamsPartitions {
		return f, fmt.Errorf("changelog %s not compacted within %s: %d of %d partitions shorter than their input (%d records, %d written)",
			streamsChangelog, s.compactWait, f.compactedParts, streamsPartitions, f.changelog, f.written)
	}
	if f.changelog > f.written || f.changelog < streamsKeys {
		return nil, fmt.Errorf("changelog %s holds %d records; the app wrote %d for %d keys", streamsChangelog, f.changelog, f.written, streamsKeys)
	}

	// Streams does not leave its group on close: the first instance's
	// member stays until its session times out. The second starts once
	// the group is empty, so that its time to RUNNING is a join and a
	// restore, not that wait.
	if err := waitEmptyGroup(ctx, s.adm, streamsAppID); err != nil {
		return nil, fmt.Errorf("after app-1 closed: %w", err)
	}
	// The state directory goes; the app restores its store from the
	// changelog.
	if err := os.RemoveAll(stateDir); err != nil {
		return nil, err
	}
	app2, err := s.startApp(ctx, "app-2", stateDir)
	if err != nil {
		return nil, err
	}
	defer app2.kill()
	if err := s.measureRestore(ctx, app2, f); err != nil {
		return nil, err
	}
	// The app writes nothing to the changelog without input; a cleaner
	// may have gone on since the count above.
	counts, err := s.countCommitted(ctx, streamsChangelog)
	if err != nil {
		return nil, err
	}
	for _, n := range counts {
		f.changelogAfter += n
	}
	if err := s.produce(ctx, streamsRound2); err != nil {
		return nil, err
	}
	if err := s.waitCaughtUp(ctx, app2); err != nil {
		return nil, err
	}
	if err := app2.stop(ctx); err != nil {
		return nil, err
	}
	if err := s.checkOutput(ctx); err != nil {
		return f, fmt.Errorf("after the restore: %w", err)
	}
	f.produced = s.produced
	return f, nil
}

// build builds the app (compat/streams/build.sh) for s.version and returns
// its libs directory.
func (s *streamsRun) build(ctx context.Context) (string, error) {
	args := []string{}
	if s.version != "" {
		args = append(args, s.version)
	}
	return runBuildScript(ctx, s.root, "compat/streams/build.sh", args...)
}

// produce writes perKey records for every key, keys interleaved, with
// values that depend on the record's sequence number, and adds them to the
// expected sums.
func (s *streamsRun) produce(ctx context.Context, perKey int) error {
	var recs []*kgo.Record
	for range perKey {
		for k := range streamsKeys {
			key := fmt.Sprintf("key-%03d", k)
			v := int64(s.next%1000 + 1)
			s.next++
			s.want[key] += v
			recs = append(recs, &kgo.Record{Topic: streamsInput, Key: []byte(key), Value: binary.BigEndian.AppendUint64(nil, uint64(v))})
		}
	}
	res := s.producer.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		return fmt.Errorf("franz-go produce to %s: %w", streamsInput, err)
	}
	for _, r := range res {
		s.inputs[r.Record.Partition]++
	}
	s.produced += len(recs)
	return nil
}

// waitCaughtUp waits until the app's group has committed the input's end
// offsets: Streams commits them in the transaction that writes the output
// and changelog records of the input before them.
func (s *streamsRun) waitCaughtUp(ctx context.Context, app *streamsApp) error {
	ends, err := s.adm.ListEndOffsets(ctx, streamsInput)
	if err != nil {
		return fmt.Errorf("franz-go ListEndOffsets %s: %w", streamsInput, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	limit := streamsCatchUp * time.Duration(max(1, streamsRound1PerKey()/streamsRound1/4))
	err = app.pollUntil(ctx, limit, func() error {
		got, err := committedOffsets(ctx, s.adm, streamsAppID, streamsInput)
		if err != nil {
			return err
		}
		for p, end := range want {
			if got[p] != end {
				return fmt.Errorf("the app's group committed %v of %s, the end offsets are %v", got, streamsInput, want)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s did not catch up within %s: %w", app.name, limit, err)
	}
	return nil
}

// checkOutput reads the output topic with read_committed: each key's last
// sum must be the expected one, and there must be exactly one output record
// per input record.
func (s *streamsRun) checkOutput(ctx context.Context) error {
	last := map[string]int64{}
	n := 0
	err := s.readCommitted(ctx, streamsOutput, func(r *kgo.Record) error {
		if len(r.Value) != 8 {
			return fmt.Errorf("output record at %s-%d@%d has a %d-byte value, want a long", r.Topic, r.Partition, r.Offset, len(r.Value))
		}
		last[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
		n++
		return nil
	})
	if err != nil {
		return err
	}
	if len(last) != len(s.want) {
		return fmt.Errorf("output has sums for %d keys, want %d", len(last), len(s.want))
	}
	for k, v := range s.want {
		if last[k] != v {
			return fmt.Errorf("output's last sum for %s is %d, want %d", k, last[k], v)
		}
	}
	if n != s.produced {
		return fmt.Errorf("output holds %d committed records for %d input records, want one each (exactly once)", n, s.produced)
	}
	return nil
}

// checkChangelogConfig checks that Streams created the changelog with the
// input's partition count, the replication factor it was given, and
// cleanup.policy=compact.
func (s *streamsRun) checkChangelogConfig(ctx context.Context) error {
	topics, err := s.adm.ListTopics(ctx, streamsChangelog)
	if err != nil {
		return fmt.Errorf("franz-go Metadata %s: %w", streamsChangelog, err)
	}
	d, ok := topics[streamsChangelog]
	if !ok || d.Err != nil {
		return fmt.Errorf("the changelog %s does not exist (Metadata: %v)", streamsChangelog, d.Err)
	}
	if len(d.Partitions) != streamsPartitions || d.Partitions.NumReplicas() != int(s.rf) {
		return fmt.Errorf("changelog %s: %d partitions of %d replicas, want %d of %d",
			streamsChangelog, len(d.Partitions), d.Partitions.NumReplicas(), streamsPartitions, s.rf)
	}
	cfgs, err := s.adm.DescribeTopicConfigs(ctx, streamsChangelog)
	if err != nil {
		return fmt.Errorf("franz-go DescribeConfigs %s: %w", streamsChangelog, err)
	}
	c, err := cfgs.On(streamsChangelog, nil)
	if err == nil {
		err = c.Err
	}
	if err != nil {
		return fmt.Errorf("franz-go DescribeConfigs %s: %w", streamsChangelog, err)
	}
	want := map[string]string{"cleanup.policy": "compact", "segment.ms": strconv.Itoa(streamsSegmentMs)}
	for _, e := range c.Configs {
		if v, ok := want[e.Key]; ok {
			if e.MaybeValue() != v {
				return fmt.Errorf("changelog %s: %s is %q, want %q", streamsChangelog, e.Key, e.MaybeValue(), v)
			}
			delete(want, e.Key)
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("changelog %s: DescribeConfigs lists none of %v", streamsChangelog, want)
	}
	return nil
}

// countCommitted counts, by partition, the data records of topic that a
// read_committed consumer reads from the start.
func (s *streamsRun) countCommitted(ctx context.Context, topic string) (map[int32]int, error) {
	n := map[int32]int{}
	err := s.readCommitted(ctx, topic, func(r *kgo.Record) error { n[r.Partition]++; return nil })
	return n, err
}

// readCommitted reads every partition of topic from its start to its high
// watermark at the time of the call with read_committed, calling each for
// every data record. Control records are kept so that the read knows when
// it reached the end (a transactional partition ends with a marker), and
// are not passed to each. Call it when no transaction is open on topic.
func (s *streamsRun) readCommitted(ctx context.Context, topic string, each func(*kgo.Record) error) error {
	ends, err := s.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("franz-go ListEndOffsets %s: %w", topic, err)
	}
	starts, err := s.adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("franz-go ListStartOffsets %s: %w", topic, err)
	}
	remaining := map[int32]int64{} // partition -> offset still to reach
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		offsets[o.Partition] = kgo.NewOffset().AtStart()
		if st, ok := starts.Lookup(topic, o.Partition); ok && st.Offset < o.Offset {
			remaining[o.Partition] = o.Offset - 1
		}
	})
	if len(remaining) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.bootstrap...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for len(remaining) > 0 {
		fetches := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return fmt.Errorf("franz-go read_committed %s: partitions %v not read up to the offsets given within 60s", topic, remaining)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return fmt.Errorf("franz-go fetch %s-%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		for _, r := range fetches.Records() {
			if last, ok := remaining[r.Partition]; ok && r.Offset >= last {
				delete(remaining, r.Partition)
			}
			if r.Attrs.IsControl() {
				continue
			}
			if err := each(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// measureRestore waits until the restarted app has restored its store on
// every changelog partition and is RUNNING, and records the figures.
func (s *streamsRun) measureRestore(ctx context.Context, app *streamsApp, f *streamsFigures) error {
	var ev streamsEvents
	err := app.pollUntil(ctx, streamsCatchUp, func() error {
		ev = app.events()
		if len(ev.restoreEnd) < streamsPartitions || ev.running.IsZero() {
			return fmt.Errorf("%d of %d changelog partitions restored, RUNNING: %v", len(ev.restoreEnd), streamsPartitions, !ev.running.IsZero())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s after its state directory was deleted: %w", app.name, err)
	}
	var first, lastEnd time.Time
	for _, t := range ev.restoreStart {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	f.restored = 0
	for _, e := range ev.restoreEnd {
		f.restored += e.records
		if e.at.After(lastEnd) {
			lastEnd = e.at
		}
	}
	f.restoreTime = lastEnd.Sub(first)
	f.runningAfter = ev.running.Sub(ev.started)
	if f.restored < streamsKeys || f.restored > int64(f.written) {
		return fmt.Errorf("%s restored %d records from the changelog; it holds %d and the app wrote %d", app.name, f.restored, f.changelog, f.written)
	}
	s.logf("restore: %d records in %dms; RUNNING %dms after start", f.restored, f.restoreTime.Milliseconds(), f.runningAfter.Milliseconds())
	return nil
}

// streamsApp is a running SumApp.
type streamsApp struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *os.File
	exited  chan struct{}
	waitErr error

	mu    sync.Mutex
	lines []string
}

// startApp starts SumApp with its state in stateDir; its stdout and
// stderr are kept in the row's directory as <name>.out and <name>.err.
func (s *streamsRun) startApp(ctx context.Context, name, stateDir string) (*streamsApp, error) {
	log4j := filepath.Join(s.root, "compat", "kafkatools", "log4j2.properties")
	args := []string{
		"-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile=" + log4j,
		"-cp", filepath.Join(s.libs, "*"),
		"dev.sluice.compat.streams.SumApp",
		"--bootstrap", strings.Join(s.bootstrap, ","),
		"--app-id", streamsAppID,
		"--input", streamsInput, "--output", streamsOutput,
		"--state-dir", stateDir,
		"--replication", strconv.Itoa(int(s.rf)),
		// Internal topics: a changelog whose first segment rolls soon,
		// and is then all dirty, above the default
		// min.cleanable.dirty.ratio (0.5).
		"--config", "topic.segment.ms=" + strconv.Itoa(streamsSegmentMs),
	}
	if s.config == nil {
		// Streams closes without leaving its group; the shortest session
		// Kafka allows by default (group.min.session.timeout.ms) lets
		// the restarted app join soon.
		args = append(args, "--config", "main.consumer.session.timeout.ms=6000")
	}
	for _, c := range s.config {
		args = append(args, "--config", c)
	}
	app := &streamsApp{name: name, exited: make(chan struct{})}
	app.cmd = exec.Command("java", args...)
	var err error
	if app.stdin, err = app.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := app.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if app.stderr, err = os.Create(filepath.Join(s.dir, name+".err")); err != nil {
		return nil, err
	}
	app.cmd.Stderr = app.stderr
	bindToParent(app.cmd)
	if err := app.cmd.Start(); err != nil {
		app.stderr.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	outFile, _ := os.Create(filepath.Join(s.dir, name+".out"))
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if outFile != nil {
				fmt.Fprintln(outFile, line)
			}
			app.mu.Lock()
			app.lines = append(app.lines, line)
			app.mu.Unlock()
		}
	}()
	go func() {
		<-copied
		app.waitErr = app.cmd.Wait()
		if outFile != nil {
			outFile.Close()
		}
		app.stderr.Close()
		close(app.exited)
	}()
	s.logf("started %s (state in %s)", name, stateDir)
	return app, nil
}

// running returns an error if the app has exited or reported an error.
func (a *streamsApp) running() error {
	select {
	case <-a.exited:
		return fmt.Errorf("%s exited early: %v: %s", a.name, a.waitErr, toolProblem(tail(a.stderr.Name(), 40)))
	default:
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range a.lines {
		if strings.HasPrefix(l, "error ") {
			msg := strings.TrimPrefix(l, "error ")
			if i := strings.LastIndexByte(msg, ' '); i > 0 {
				msg = msg[:i] // the clock
			}
			return fmt.Errorf("%s: Streams failed: %s (%s)", a.name, msg, toolProblem(tail(a.stderr.Name(), 40)))
		}
	}
	return nil
}

// pollUntil is pollUntil (java_admin_test.go) that gives up at once when
// the app has exited or reported an error.
func (a *streamsApp) pollUntil(ctx context.Context, limit time.Duration, check func() error) error {
	var dead error
	err := pollUntil(ctx, limit, func() error {
		if dead = a.running(); dead != nil {
			return nil
		}
		return check()
	})
	if dead != nil {
		return dead
	}
	return err
}

// stop closes the app's stdin, on which it closes Streams and exits, and
// waits for a clean exit.
func (a *streamsApp) stop(ctx context.Context) error {
	if err := a.running(); err != nil {
		return err
	}
	a.stdin.Close()
	select {
	case <-a.exited:
	case <-time.After(90 * time.Second):
		a.kill()
		return fmt.Errorf("%s did not exit within 90s of being asked to close", a.name)
	case <-ctx.Done():
		a.kill()
		return ctx.Err()
	}
	if a.waitErr != nil {
		return fmt.Errorf("%s closed with %v: %s", a.name, a.waitErr, toolProblem(tail(a.stderr.Name(), 40)))
	}
	return nil
}

// kill ends the app if it still runs.
func (a *streamsApp) kill() {
	select {
	case <-a.exited:
	default:
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
}

// streamsEvents is what SumApp reported so far.
type streamsEvents struct {
	started, running time.Time
	restoreStart     map[int32]time.Time
	restoreEnd       map[int32]restoreEnd
}

type restoreEnd struct {
	at      time.Time
	records int64
}

// events parses the app's stdout (SumApp.java documents the lines).
func (a *streamsApp) events() streamsEvents {
	ev := streamsEvents{restoreStart: map[int32]time.Time{}, restoreEnd: map[int32]restoreEnd{}}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range a.lines {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		ms, err := strconv.ParseInt(f[len(f)-1], 10, 64)
		if err != nil {
			continue
		}
		at := time.UnixMilli(ms)
		switch {
		case f[0] == "started":
			ev.started = at
		case f[0] == "state" && len(f) == 4 && f[1] == "REBALANCING" && f[2] == "RUNNING" && ev.running.IsZero():
			ev.running = at
		case f[0] == "restore-start" && len(f) == 7 && f[1] == streamsChangelog:
			if p, err := strconv.Atoi(f[2]); err == nil {
				ev.restoreStart[int32(p)] = at
			}
		case f[0] == "restore-end" && len(f) == 6 && f[1] == streamsChangelog:
			p, err1 := strconv.Atoi(f[2])
			n, err2 := strconv.ParseInt(f[4], 10, 64)
			if err1 == nil && err2 == nil {
				ev.restoreEnd[int32(p)] = restoreEnd{at: at, records: n}
			}
		}
	}
	return ev
}
