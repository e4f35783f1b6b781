package broker

// OffsetFetch (api key 9), versions 0–10.
//
// Returns a group's committed offsets: offset, leader epoch (v5+) and
// metadata, or offset -1 for partitions (and groups) without a commit. A
// null topic list (v2+) asks for every committed offset. Group-level errors
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) are top-level from v2 and
// per partition before. With v7's RequireStable (KIP-447) a partition for
// which a running transaction holds a pending offset (TxnOffsetCommit) is
// UNSTABLE_OFFSET_COMMIT, and the client retries until the transaction
// ends; without it the last committed offset is returned. v8+ asks for
// several groups at once (KIP-709); v9's member id and epoch concern
// KIP-848 groups and are ignored for classic groups; v10 names topics by
// id.
//
// A group, topic or partition named more than once is answered once, where
// it first appears; a group's copies ask for the union of their topics (all
// of them if any copy asks for all). Kafka answers every copy, but each
// answer carries the commit's metadata, up to offset.metadata.max.bytes
// for a request entry of four bytes; clients match answers by group, topic
// and partition.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleOffsetFetch(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	return b.groups.FetchOffsets(uniqueOffsetFetch(r.Body.(*kmsg.OffsetFetchRequest))), nil
}

// uniqueOffsetFetch returns a copy of req that names each group, topic and
// partition once, in the order they first appear. req is not changed.
func uniqueOffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchRequest {
	out := *req
	if req.Topics != nil {
		out.Topics = uniqueTopicPartitions(req.Topics,
			func(t kmsg.OffsetFetchRequestTopic) string { return t.Topic },
			func(t *kmsg.OffsetFetchRequestTopic) *[]int32 { return &t.Partitions })
	}
	if req.Groups == nil {
		return &out
	}
	at := make(map[string]int, len(req.Groups))
	out.Groups = make([]kmsg.OffsetFetchRequestGroup, 0, len(req.Groups))
	for _, g := range req.Groups {
		i, seen := at[g.Group]
		if !seen {
			at[g.Group] = len(out.Groups)
			out.Groups = append(out.Groups, g)
			continue
		}
		o := &out.Groups[i]
		if o.Topics == nil || g.Topics == nil {
			o.Topics = nil // every topic
			continue
		}
		o.Topics = append(slices.Clip(o.Topics), g.Topics...)
	}
	type topicKey struct {
		name string
		id   [16]byte
	}
	for i := range out.Groups {
		if out.Groups[i].Topics != nil {
			out.Groups[i].Topics = uniqueTopicPartitions(out.Groups[i].Topics,
				func(t kmsg.OffsetFetchRequestGroupTopic) topicKey { return topicKey{t.Topic, t.TopicID} },
				func(t *kmsg.OffsetFetchRequestGroupTopic) *[]int32 { return &t.Partitions })
		}
	}
	return &out
}

// uniqueTopicPartitions merges the entries of topics with the same key
// and drops repeated partitions, keeping the order in which topics and
// partitions first appear. It returns new slices; topics is not changed.
func uniqueTopicPartitions[T any, K comparable](topics []T, key func(T) K, partitions func(*T) *[]int32) []T {
	at := make(map[K]int, len(topics))
	out := make([]T, 0, len(topics))
	for _, t := range topics {
		k := key(t)
		i, seen := at[k]
		if !seen {
			at[k] = len(out)
			out = append(out, t)
			continue
		}
		p := partitions(&out[i])
		*p = append(slices.Clip(*p), *partitions(&t)...)
	}
	for i := range out {
		p := partitions(&out[i])
		if *p == nil {
			continue
		}
		seen := make(map[int32]bool, len(*p))
		unique := make([]int32, 0, len(*p))
		for _, partition := range *p {
			if !seen[partition] {
				seen[partition] = true
				unique = append(unique, partition)
			}
		}
		*p = unique
	}
	return out
}
