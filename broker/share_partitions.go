package broker

// The partition-leader side of share groups (KIP-932) shared by ShareFetch
// (78_share_fetch.go) and ShareAcknowledge (79_share_acknowledge.go): the
// share-partitions and share sessions of this broker (package share), the
// gate on the share.version feature, the settings a group's
// share-partitions run with, where a new share-partition starts, the long
// poll's wait, and the mapping of package share's errors to Kafka's codes.
//
// Share groups answer only while the finalized share.version is at least 1,
// as Kafka's KafkaApis does (isShareGroupProtocolEnabled; the gate is
// shareGroupsEnabled, share.go): below that, ShareFetch and
// ShareAcknowledge are answered UNSUPPORTED_VERSION at the top level.
//
// State is kept by the share coordinators in __share_group_state, through
// sharePersister (share_coordinator_persister.go): a partition's next
// leader, or this broker after a restart, reads it from there
// (share/doc.go says what survives).
//
// Lock order: share.Partition.mu, share.Manager.mu, share.SessionCache.mu
// are each taken alone by these handlers; partition.mu (the long poll's
// registration) never under any of them.

import (
	"cmp"
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/share"
)

// shareLeader is this broker's share-partition state, made at first use.
type shareLeader struct {
	once     sync.Once
	mgr      *share.Manager
	sessions *share.SessionCache

	// coord is the share coordinator (share_coordinator.go).
	coordOnce sync.Once
	coord     *share.Coordinator
}

// shareState returns the broker's share-partitions and sessions.
func (b *Broker) shareState() *shareLeader {
	s := &b.shares
	s.once.Do(func() {
		s.mgr = share.NewManager(sharePersister{b})
		s.sessions = share.NewSessionCache(int(b.cfg.ShareGroupMaxShareSessions))
	})
	return s
}

// sharePartitionSettings is what a share group's share-partitions run with.
type sharePartitionSettings struct {
	partition     share.Settings
	autoReset     string // share.auto.offset.reset
	readCommitted bool   // share.isolation.level=read_committed
	renew         bool   // share.renew.acknowledge.enable
}

// sharePartitionSettings reads the group's share.* configs (their values set
// on the group, else the broker's group.share.* synonyms, else Kafka's
// defaults), as config.Broker.DescribeGroup resolves them.
func (b *Broker) sharePartitionSettings(img *controller.Image, group string) sharePartitionSettings {
	var set map[string]string
	if img != nil {
		set = img.GroupConfigs[group]
	}
	perBroker, clusterDefault := b.dynamicBrokerConfigs(img)
	gs := sharePartitionSettings{partition: share.DefaultSettings, autoReset: "latest", renew: true}
	dlqTopic, dlqCopy := "", false
	for _, e := range b.cfg.DescribeGroup(set, perBroker, clusterDefault) {
		if e.Value == nil {
			continue
		}
		v := strings.TrimSpace(*e.Value)
		n, nerr := strconv.Atoi(v)
		switch e.Name {
		case "share.record.lock.duration.ms":
			if nerr == nil && n > 0 {
				gs.partition.LockDuration = time.Duration(n) * time.Millisecond
			}
		case "share.delivery.count.limit":
			if nerr == nil && n > 0 {
				gs.partition.DeliveryCountLimit = n
			}
		case "share.partition.max.record.locks":
			if nerr == nil && n > 0 {
				gs.partition.MaxRecordLocks = min(n, 10000)
			}
		case "share.auto.offset.reset":
			gs.autoReset = v
		case "share.isolation.level":
			gs.readCommitted = v == "read_committed"
		case "share.renew.acknowledge.enable":
			gs.renew = v != "false"
		case "errors.deadletterqueue.topic.name":
			dlqTopic = v
		case "errors.deadletterqueue.copy.record.enable":
			dlqCopy = v == "true"
		}
	}
	gs.partition.DeadLetters = b.shareDeadLetters(group, dlqTopic, dlqCopy) // share_dlq.go
	return gs
}

// lockMillis is the AcquisitionLockTimeoutMillis of the group's answers.
func (gs sharePartitionSettings) lockMillis() int32 {
	return int32(gs.partition.LockDuration / time.Millisecond)
}

// shareFetchLimit is the offset a share fetch reads up to: the high
// watermark, or the last stable offset under read_committed.
func shareFetchLimit(p *partition, readCommitted bool) int64 {
	hw := p.highWatermark()
	if readCommitted {
		return min(p.lastStableOffset(), hw)
	}
	return hw
}

// shareInitialOffset returns where a share-partition with nothing
// persisted starts (share.auto.offset.reset): the log start offset for
// earliest, the first offset at or after now minus the duration for
// by_duration (the fetch limit when there is none), the fetch limit (the
// high watermark, as Kafka's latest) otherwise.
func (b *Broker) shareInitialOffset(p *partition, gs sharePartitionSettings) func() (int64, error) {
	return func() (int64, error) {
		limit := shareFetchLimit(p, gs.readCommitted)
		switch {
		case gs.autoReset == "earliest":
			return p.log.LogStartOffset(), nil
		case strings.HasPrefix(gs.autoReset, "by_duration:"):
			d, ok := parseISODuration(strings.TrimPrefix(gs.autoReset, "by_duration:"))
			if !ok {
				return limit, nil
			}
			ts := b.now().Add(-d).UnixMilli()
			if off, _, found := p.log.OffsetForTimestamp(ts); found {
				return min(max(off, p.log.LogStartOffset()), limit), nil
			}
			return limit, nil
		}
		return limit, nil
	}
}

var isoDurationParts = regexp.MustCompile(`(?i)^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:[.,](\d{0,9}))?S)?)?$`)

// parseISODuration parses the PnDTnHnMn.nS durations of
// share.auto.offset.reset's by_duration (config checks the form first).
func parseISODuration(s string) (time.Duration, bool) {
	m := isoDurationParts.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil {
			return 0, false
		}
		d += time.Duration(n) * unit
	}
	if frac := m[5]; frac != "" {
		n, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		d += time.Duration(n)
	}
	return d, true
}

// shareErrorCode maps package share's errors to Kafka's codes; others go
// through errorCode.
func shareErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, share.ErrInvalidRecordState):
		return kerr.InvalidRecordState.Code
	case errors.Is(err, share.ErrInvalidAcknowledgement):
		return kerr.InvalidRequest.Code
	case errors.Is(err, share.ErrSessionNotFound):
		return kerr.ShareSessionNotFound.Code
	case errors.Is(err, share.ErrInvalidSessionEpoch):
		return kerr.InvalidShareSessionEpoch.Code
	case errors.Is(err, share.ErrSessionLimit):
		return kerr.ShareSessionLimitReached.Code
	case errors.Is(err, share.ErrFencedLeaderEpoch):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, share.ErrFencedStateEpoch):
		return kerr.FencedStateEpoch.Code
	case errors.Is(err, errShareStateUnknown):
		// The state write may or may not have been made: the
		// acknowledgement is not applied here and the state is read
		// again (share.ErrStateStale); the client may retry.
		return kerr.RequestTimedOut.Code
	}
	return errorCode(err)
}

// sharePartitionFor returns the share-partition of group for topic
// partition tp, which this broker must lead, loading it on first use, and
// the replica. A partition this broker does not lead drops whatever
// share-partitions it had of it.
func (b *Broker) sharePartitionFor(ctx context.Context, group string, topic *controller.Topic, tp share.TopicPartition, gs sharePartitionSettings) (*share.Partition, *partition, error) {
	p, epoch, err := b.leaderReplica(topic, tp.Partition, -1)
	if err != nil {
		if errors.Is(err, kerr.NotLeaderForPartition) {
			b.shareState().mgr.DropTopicPartition(tp.TopicID, tp.Partition)
		}
		return nil, nil, err
	}
	key := share.Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
	sp, err := b.shareState().mgr.Partition(ctx, key, epoch, gs.partition, b.shareInitialOffset(p, gs))
	if err != nil {
		return nil, nil, err
	}
	sp.MoveStartTo(p.log.LogStartOffset())
	return sp, p, nil
}

// shareLogBatches turns the batch headers a share fetch read into what
// share.Partition.Acquire takes; under read_committed the batches of
// aborted transactions (and their abort markers) are flagged, found with
// the log's aborted-transaction index as a read_committed consumer finds
// them.
func shareLogBatches(p *partition, headers []logstore.BatchHeader, readCommitted bool) []share.LogBatch {
	out := make([]share.LogBatch, len(headers))
	for i, h := range headers {
		out[i] = share.LogBatch{First: h.BaseOffset, Last: h.LastOffset()}
	}
	if !readCommitted || len(headers) == 0 {
		return out
	}
	aborted := p.log.AbortedTxns(headers[0].BaseOffset, headers[len(headers)-1].LastOffset()+1)
	if len(aborted) == 0 {
		return out
	}
	slices.SortFunc(aborted, func(a, b logstore.AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	const (
		attrTransactional = 0x10 // record batch v2 attributes (logstore/batch.go)
		attrControl       = 0x20
	)
	open := make(map[int64]bool)
	next := 0
	for i, h := range headers {
		for next < len(aborted) && aborted[next].FirstOffset <= h.LastOffset() {
			open[aborted[next].ProducerID] = true
			next++
		}
		if h.Attributes&attrTransactional == 0 || !open[h.ProducerID] {
			continue
		}
		out[i].Aborted = true
		if h.Attributes&attrControl != 0 {
			delete(open, h.ProducerID) // the abort marker ends it
		}
	}
	return out
}

// waitShare blocks until one of the watched partitions' high watermark
// moves, one of the share-partitions has records released, the earliest
// acquisition lock among them runs out, the deadline passes or ctx ends.
// It reports whether something changed (false: the deadline or ctx).
func waitShare(ctx context.Context, deadline <-chan time.Time, watches []*partitionWatch, sps []*share.Partition) bool {
	w := &fetchWaiter{ch: make(chan struct{}, 1)}
	defer w.done.Store(true)
	for _, pw := range watches {
		if !pw.p.addFetchWaiter(w, pw) {
			return true
		}
	}
	var expiry time.Time
	for _, sp := range sps {
		cancel := sp.Wait(w.ch)
		defer cancel()
		if t, ok := sp.NextLockExpiry(); ok && (expiry.IsZero() || t.Before(expiry)) {
			expiry = t
		}
	}
	var lockTimer <-chan time.Time
	if !expiry.IsZero() {
		t := time.NewTimer(max(time.Until(expiry), time.Millisecond))
		defer t.Stop()
		lockTimer = t.C
	}
	select {
	case <-w.ch:
		return true
	case <-lockTimer:
		return true
	case <-deadline:
	case <-ctx.Done():
	}
	return false
}

// attachShareSession arranges for the member's share session to end, and
// its acquired records to be released, when the connection that opened it
// closes; it returns the function that cancels that.
func (b *Broker) attachShareSession(connCtx context.Context, key share.SessionKey, connID uint64) func() (detach func() bool) {
	return func() func() bool {
		return context.AfterFunc(connCtx, func() {
			s := b.shareState()
			if v, ok := s.sessions.Drop(key, connID); ok {
				s.mgr.ReleaseMember(key.Group, key.Member, v.Partitions, b.now())
			}
		})
	}
}

// shareNodeEndpoint is a leader's endpoint on listener, for the
// NodeEndpoints of answers with NOT_LEADER_OR_FOLLOWER.
func shareNodeEndpoint(img *controller.Image, id int32, listener string) (host string, port int32, rack *string, ok bool) {
	if img == nil {
		return "", 0, nil, false
	}
	br := img.Brokers[id]
	if br == nil {
		return "", 0, nil, false
	}
	host, port, ok = endpointOf(br, listener)
	return host, port, rackPtr(br.Rack), ok
}
