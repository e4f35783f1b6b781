package broker

// Quiet rounds: an idle follower's fetch costs it next to nothing (issue
// 22; the leader's side is fetch_session_idle.go).
//
// A follower of thousands of idle partitions sends, every
// replica.fetch.wait.max.ms, an incremental fetch naming nothing, and the
// leader answers it naming nothing. Building that request the long way
// visits every partition: its log end offset and latest epoch, its
// throttle, a map entry, a comparison with what the session holds — a
// third of three idle nodes' CPU at 10,000 partitions.
//
// A round is quiet when it was an incremental fetch holding nothing back
// (no partition backing off or throttled) and its answer named no
// partition and had no error. What the next request would say of each
// partition can then only have changed if the partitions were replaced
// (fetcher.set, counted by fetcher.gen): a follower's log end offset and
// latest epoch move only by what this fetcher applies from an answer, a
// partition pauses or backs off only on an answer's error, and a change of
// leader, epoch or assignment reaches the fetcher through set. So the next
// round sends the session's id and epoch naming and forgetting nothing,
// with the same batch to apply the answer to, until an answer names a
// partition or fails, or set replaces the partitions; then the round is
// built again.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/logstore"
)

// fetchBuild describes a request buildRequest made: the partitions'
// generation it read, whether it held a partition back (backing off or
// throttled), and whether some partition is under a follower throttle.
type fetchBuild struct {
	gen                uint64
	delayed, throttled bool
}

// quietRound is the round to repeat: its batch and the generation of the
// partitions it was built from.
type quietRound struct {
	batch map[logstore.TopicPartition]*followed
	gen   uint64
}

// quietBatch returns the quiet round to repeat, nil when the next round
// must be built: none was quiet, the session was dropped since, or the
// partitions were replaced.
func (f *fetcher) quietBatch() *quietRound {
	q := f.quiet
	if q == nil || f.session.id == 0 {
		return nil
	}
	f.mu.Lock()
	same := f.gen == q.gen
	f.mu.Unlock()
	if !same {
		f.quiet = nil
		return nil
	}
	return q
}

// quietRequest is a quiet round's request: the session's next incremental
// fetch, naming and forgetting nothing.
func (f *fetcher) quietRequest() (*kmsg.FetchRequest, *sessionRequest) {
	req := f.newFetchRequest()
	req.SessionID, req.SessionEpoch = f.session.id, f.session.epoch
	return req, &sessionRequest{named: map[logstore.TopicPartition]sessionParams{}}
}

// noteRound decides, once a round's answer was applied, whether the next
// round is quiet.
func (f *fetcher) noteRound(sr *sessionRequest, resp *kmsg.FetchResponse, batch map[logstore.TopicPartition]*followed, built fetchBuild, clean bool) {
	f.quiet = nil
	if sr.full || built.delayed || built.throttled || !clean || resp.ErrorCode != 0 || f.session.id == 0 {
		return
	}
	for _, rt := range resp.Topics {
		if len(rt.Partitions) > 0 {
			return
		}
	}
	f.quiet = &quietRound{batch: batch, gen: built.gen}
}
