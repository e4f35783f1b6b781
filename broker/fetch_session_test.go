package broker_test

// Incremental fetch sessions (KIP-227), as a client sees them: a full fetch
// at epoch 0 opens a session, incremental fetches carry only partitions with
// something new, the session's epoch and id are checked, ForgottenTopics
// leave it, the cache is bounded by max.incremental.fetch.session.cache.slots
// with Kafka's evictions, and a full fetch without a session still answers
// every partition.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// sessionFetch builds a v12 Fetch (topics by name) with the given session
// id and epoch, naming partitions of topic at the offsets given, without a
// long poll.
func sessionFetch(id, epoch int32, topic string, offsets map[int32]int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.SessionID, req.SessionEpoch = id, epoch
	if len(offsets) == 0 {
		return req
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	parts := make([]int32, 0, len(offsets))
	for p := range offsets {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = p, offsets[p], -1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// answered lists a response's partitions as "p:records" (records the
// number of record batches), in order.
func answered(t *testing.T, resp *kmsg.FetchResponse) string {
	t.Helper()
	var out []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			s := fmt.Sprintf("%d:%d", rp.Partition, batchCount(t, rp.RecordBatches))
			if rp.ErrorCode != 0 {
				s += "!" + kerr.ErrorForCode(rp.ErrorCode).Error()
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

func doFetch(t *testing.T, c *rawConn, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	_, r := c.do(req)
	if r == nil {
		t.Fatal("no Fetch response")
	}
	return r.(*kmsg.FetchResponse)
}

func TestFetchSessionIncremental(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic = "fetch-session"
	createTopic(t, n, topic, 3, nil)
	produceBatches(t, cl, topic, []int32{0}, 1, 10)
	c := dialRawConn(t, n.Addr())

	// A full fetch at epoch 0 opens a session and answers every partition.
	resp := doFetch(t, c, sessionFetch(0, 0, topic, map[int32]int64{0: 0, 1: 0, 2: 0}))
	if resp.ErrorCode != 0 || resp.SessionID == 0 {
		t.Fatalf("full fetch at epoch 0: error %d, session %d", resp.ErrorCode, resp.SessionID)
	}
	if got := answered(t, resp); got != "0:1 1:0 2:0" {
		t.Fatalf("full fetch answered %q", got)
	}
	id := resp.SessionID

	// Incremental, the consumer at partition 0's end: nothing new.
	resp = doFetch(t, c, sessionFetch(id, 1, topic, map[int32]int64{0: 1}))
	if resp.ErrorCode != 0 || resp.SessionID != id {
		t.Fatalf("incremental epoch 1: error %d, session %d (want %d)", resp.ErrorCode, resp.SessionID, id)
	}
	if got := answered(t, resp); got != "" {
		t.Fatalf("incremental fetch with nothing new answered %q", got)
	}

	// New data on partition 1: only partition 1.
	produceBatches(t, cl, topic, []int32{1}, 1, 10)
	resp = doFetch(t, c, sessionFetch(id, 2, topic, nil))
	if got := answered(t, resp); got != "1:1" {
		t.Fatalf("after a produce to partition 1, incremental answered %q", got)
	}

	// The epoch just used again, and one ahead, are refused.
	for _, epoch := range []int32{2, 4} {
		resp = doFetch(t, c, sessionFetch(id, epoch, topic, nil))
		if resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || len(resp.Topics) != 0 {
			t.Fatalf("epoch %d (want 3): error %d, %d topics", epoch, resp.ErrorCode, len(resp.Topics))
		}
	}
	// An unknown session id.
	resp = doFetch(t, c, sessionFetch(id+1, 1, topic, nil))
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || resp.SessionID != 0 {
		t.Fatalf("unknown session: error %d, session %d", resp.ErrorCode, resp.SessionID)
	}

	// Forget partition 1 (moved past its record); data on 1 and 2 then
	// shows only on 2.
	req := sessionFetch(id, 3, topic, map[int32]int64{1: 1})
	req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: topic, Partitions: []int32{1}}}
	resp = doFetch(t, c, req)
	if got := answered(t, resp); resp.ErrorCode != 0 || got != "" {
		t.Fatalf("forgetting partition 1: error %d, answered %q", resp.ErrorCode, got)
	}
	produceBatches(t, cl, topic, []int32{1, 2}, 1, 10)
	resp = doFetch(t, c, sessionFetch(id, 4, topic, nil))
	if got := answered(t, resp); got != "2:1" {
		t.Fatalf("after forgetting partition 1 and producing to 1 and 2, answered %q", got)
	}

	// A partition added back is answered.
	resp = doFetch(t, c, sessionFetch(id, 5, topic, map[int32]int64{1: 1, 2: 1}))
	if got := answered(t, resp); got != "1:1" {
		t.Fatalf("partition 1 added back: answered %q", got)
	}

	// A sessionless full fetch naming the session closes it, and answers
	// every partition it names.
	resp = doFetch(t, c, sessionFetch(id, -1, topic, map[int32]int64{0: 0, 1: 0, 2: 0}))
	if got := answered(t, resp); resp.ErrorCode != 0 || resp.SessionID != 0 || got != "0:1 1:2 2:1" {
		t.Fatalf("sessionless fetch: error %d, session %d, answered %q", resp.ErrorCode, resp.SessionID, got)
	}
	resp = doFetch(t, c, sessionFetch(id, 6, topic, nil))
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: error %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode)
	}
}

// TestFetchSessionEmptiedCloses checks that an incremental fetch
// forgetting the session's last partition closes the session, answered as
// a fetch without one.
func TestFetchSessionEmptiedCloses(t *testing.T) {
	n := sluicetest.Start(t)
	const topic = "fetch-session-empty"
	createTopic(t, n, topic, 1, nil)
	c := dialRawConn(t, n.Addr())
	resp := doFetch(t, c, sessionFetch(0, 0, topic, map[int32]int64{0: 0}))
	id := resp.SessionID
	req := sessionFetch(id, 1, topic, nil)
	req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: topic, Partitions: []int32{0}}}
	resp = doFetch(t, c, req)
	if resp.ErrorCode != 0 || resp.SessionID != 0 {
		t.Fatalf("forgetting the last partition: error %d, session %d (want 0)", resp.ErrorCode, resp.SessionID)
	}
	resp = doFetch(t, c, sessionFetch(id, 2, topic, nil))
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("emptied session: error %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode)
	}
}

// TestFetchSessionTopicIDs drives a session at v16, where partitions and
// forgotten topics are named by topic id, and checks that the session
// refuses a request naming topics by name (FETCH_SESSION_TOPIC_ID_ERROR).
func TestFetchSessionTopicIDs(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic = "fetch-session-ids"
	createTopic(t, n, topic, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := n.Admin().ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	topicID := td[topic].ID
	byID := func(id, epoch int32, offsets map[int32]int64) *kmsg.FetchRequest {
		req := sessionFetch(id, epoch, topic, offsets)
		req.Version = 16
		for i := range req.Topics {
			req.Topics[i].Topic, req.Topics[i].TopicID = "", topicID
		}
		return req
	}
	c := dialRawConn(t, n.Addr())
	resp := doFetch(t, c, byID(0, 0, map[int32]int64{0: 0, 1: 0}))
	if resp.SessionID == 0 || answered(t, resp) != "0:0 1:0" {
		t.Fatalf("full fetch by id: session %d, answered %q", resp.SessionID, answered(t, resp))
	}
	id := resp.SessionID
	req := byID(id, 1, nil)
	req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{TopicID: topicID, Partitions: []int32{0}}}
	if resp = doFetch(t, c, req); resp.ErrorCode != 0 || answered(t, resp) != "" {
		t.Fatalf("forgetting partition 0 by id: error %d, answered %q", resp.ErrorCode, answered(t, resp))
	}
	produceBatches(t, cl, topic, []int32{0, 1}, 1, 10)
	resp = doFetch(t, c, byID(id, 2, nil))
	if got := answered(t, resp); got != "1:1" || resp.Topics[0].TopicID != topicID {
		t.Fatalf("after producing to both: answered %q", got)
	}
	if resp = doFetch(t, c, sessionFetch(id, 3, topic, nil)); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("a v12 request in a v16 session: error %d, want FETCH_SESSION_TOPIC_ID_ERROR", resp.ErrorCode)
	}
}

// TestFetchSessionCacheSlots checks max.incremental.fetch.session.cache.slots:
// with two slots taken by new client sessions, a third client gets no
// session, while a follower's full fetch evicts the client session with
// the fewest partitions (Kafka's privileged eviction).
func TestFetchSessionCacheSlots(t *testing.T) {
	n := sluicetest.Start(t, "max.incremental.fetch.session.cache.slots=2")
	const topic = "fetch-session-slots"
	createTopic(t, n, topic, 3, nil)
	c := dialRawConn(t, n.Addr())
	small := doFetch(t, c, sessionFetch(0, 0, topic, map[int32]int64{0: 0})).SessionID
	large := doFetch(t, c, sessionFetch(0, 0, topic, map[int32]int64{0: 0, 1: 0})).SessionID
	if small == 0 || large == 0 {
		t.Fatalf("sessions %d and %d: want two sessions in two slots", small, large)
	}
	if id := doFetch(t, c, sessionFetch(0, 0, topic, map[int32]int64{0: 0, 1: 0, 2: 0})).SessionID; id != 0 {
		t.Fatalf("a third client session got id %d with both slots taken by recent sessions", id)
	}

	follower := sessionFetch(0, 0, topic, map[int32]int64{0: 0})
	follower.ReplicaID = 7 // not a replica: its partitions error, the session opens all the same
	if id := doFetch(t, c, follower).SessionID; id == 0 {
		t.Fatal("a follower's session was not opened over client sessions")
	}
	if resp := doFetch(t, c, sessionFetch(small, 1, topic, nil)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("the smaller client session: error %d, want FETCH_SESSION_ID_NOT_FOUND (evicted)", resp.ErrorCode)
	}
	if resp := doFetch(t, c, sessionFetch(large, 1, topic, nil)); resp.ErrorCode != 0 || resp.SessionID != large {
		t.Fatalf("the larger client session: error %d, session %d", resp.ErrorCode, resp.SessionID)
	}
}

// TestFetchSessionSlotsZero checks that with no slots no session opens.
func TestFetchSessionSlotsZero(t *testing.T) {
	n := sluicetest.Start(t, "max.incremental.fetch.session.cache.slots=0")
	const topic = "fetch-session-none"
	createTopic(t, n, topic, 1, nil)
	resp := doFetch(t, dialRawConn(t, n.Addr()), sessionFetch(0, 0, topic, map[int32]int64{0: 0}))
	if resp.ErrorCode != 0 || resp.SessionID != 0 || answered(t, resp) != "0:0" {
		t.Fatalf("full fetch with no slots: error %d, session %d, answered %q", resp.ErrorCode, resp.SessionID, answered(t, resp))
	}
}

// TestFetchSessionConsumer consumes with kgo, whose fetches use sessions,
// across idle periods and produces to some partitions at a time, and
// checks that the consumer holds a session of its eight partitions.
func TestFetchSessionConsumer(t *testing.T) {
	n := sluicetest.Start(t)
	const topic = "fetch-session-kgo"
	createTopic(t, n, topic, 8, nil)
	prod := n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cons := n.Client(kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	want := map[string]bool{}
	next := 0
	for round := 0; round < 5; round++ {
		for _, p := range []int32{int32(round % 8), int32((round * 3) % 8)} {
			for i := 0; i < 20; i++ {
				v := fmt.Sprintf("r%d-p%d-%d", round, p, next)
				next++
				want[v] = true
				if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Consume all so far before the next round, leaving the session
		// idle over a few long polls in between.
		for len(want) > 0 {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("round %d: %d records not consumed", round, len(want))
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s/%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				if !want[string(r.Value)] {
					t.Fatalf("record %q consumed twice or never produced", r.Value)
				}
				delete(want, string(r.Value))
			})
		}
	}
	if sessions, _, partitions := n.Broker.FetchSessions(); sessions != 1 || partitions != 8 {
		t.Fatalf("the broker holds %d fetch sessions caching %d partitions, want the consumer's one of 8", sessions, partitions)
	}
}
