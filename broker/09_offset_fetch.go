package broker

// OffsetFetch (api key 9), versions 1–10 (Kafka 4.0 removed v0, KIP-896).
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
//
// DESCRIBE on each group is needed (GROUP_AUTHORIZATION_FAILED), and on
// each topic: one the principal may not DESCRIBE is left out of an answer
// for every topic and refused TOPIC_AUTHORIZATION_FAILED when named
// (authorize_requests.go).

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleOffsetFetch(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := uniqueOffsetFetch(r.Body.(*kmsg.OffsetFetchRequest))
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	if req.Version < 8 {
		if !b.authorizedGroup(r, kmsg.ACLOperationDescribe, req.Group) {
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			if req.Version < 2 { // no top-level error: each partition's
				for _, t := range req.Topics {
					st := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
					for _, p := range t.Partitions {
						st.Partitions = append(st.Partitions, kmsg.OffsetFetchResponseTopicPartition{
							Partition: p, Offset: -1, LeaderEpoch: -1, Metadata: kmsg.StringPtr(""), ErrorCode: resp.ErrorCode,
						})
					}
					resp.Topics = append(resp.Topics, st)
				}
			}
			return resp, nil
		}
		resp := b.groups.FetchOffsets(req)
		if resp.ErrorCode == 0 {
			resp.Topics = describableOffsets(resp.Topics, req.Topics == nil, describable,
				func(t *kmsg.OffsetFetchResponseTopic) (string, []kmsg.OffsetFetchResponseTopicPartition) {
					return t.Topic, t.Partitions
				},
				func(p *kmsg.OffsetFetchResponseTopicPartition) {
					*p = kmsg.OffsetFetchResponseTopicPartition{Partition: p.Partition, Offset: -1, LeaderEpoch: -1, ErrorCode: kerr.TopicAuthorizationFailed.Code}
				})
		}
		return resp, nil
	}
	// v8+: each group on its own; one the principal may not DESCRIBE is
	// GROUP_AUTHORIZATION_FAILED without asking the coordinator.
	denied := make([]bool, len(req.Groups))
	sub := *req
	sub.Groups = make([]kmsg.OffsetFetchRequestGroup, 0, len(req.Groups))
	for i, g := range req.Groups {
		if denied[i] = !b.authorizedGroup(r, kmsg.ACLOperationDescribe, g.Group); !denied[i] {
			sub.Groups = append(sub.Groups, g)
		}
	}
	fetched := b.groups.FetchOffsets(&sub)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	img := b.metadata()
	byID := req.Version >= 10
	k := 0
	for i, g := range req.Groups {
		if denied[i] {
			resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: g.Group, ErrorCode: kerr.GroupAuthorizationFailed.Code})
			continue
		}
		if k >= len(fetched.Groups) {
			break
		}
		rg := fetched.Groups[k]
		k++
		if rg.ErrorCode == 0 {
			rg.Topics = describableOffsets(rg.Topics, g.Topics == nil, describable,
				func(t *kmsg.OffsetFetchResponseGroupTopic) (string, []kmsg.OffsetFetchResponseGroupTopicPartition) {
					if !byID {
						return t.Topic, t.Partitions
					}
					if mt := lookupTopic(img, true, "", t.TopicID); mt != nil {
						return mt.Name, t.Partitions
					}
					return "", nil // an unknown id, answered UNKNOWN_TOPIC_ID
				},
				func(p *kmsg.OffsetFetchResponseGroupTopicPartition) {
					*p = kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p.Partition, Offset: -1, LeaderEpoch: -1, ErrorCode: kerr.TopicAuthorizationFailed.Code}
				})
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// describableOffsets keeps the offsets of one group's answer that the
// principal may see: a topic it may not DESCRIBE is left out of an answer
// for every topic (all), and its partitions are refused
// TOPIC_AUTHORIZATION_FAILED in an answer for named topics, as Kafka's
// fetchAllOffsetsForGroup and fetchOffsetsForGroup answer. topicOf names a
// topic and returns its partitions (nil: leave the topic as it is).
func describableOffsets[T, P any](topics []T, all bool, describable *topicAuth, topicOf func(*T) (string, []P), refuse func(*P)) []T {
	out := topics[:0]
	for i := range topics {
		name, parts := topicOf(&topics[i])
		if parts == nil || describable.allowed(name) {
			out = append(out, topics[i])
			continue
		}
		if all {
			continue
		}
		for j := range parts {
			refuse(&parts[j])
		}
		out = append(out, topics[i])
	}
	return out
}

// uniqueOffsetFetch returns a copy of req that names each group, topic and
// partition once, in the order they first appear. req is not changed.
func uniqueOffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchRequest {
	out := *req
	if req.Topics != nil {
		out.Topics = uniqueTopicPartitions(req.Topics,
			func(a, b *kmsg.OffsetFetchRequestTopic) int { return strings.Compare(a.Topic, b.Topic) },
			func(t *kmsg.OffsetFetchRequestTopic) *[]int32 { return &t.Partitions })
	}
	if req.Groups == nil {
		return &out
	}
	firsts, next := repeatedKeys(len(req.Groups), func(i, j int) int {
		return strings.Compare(req.Groups[i].Group, req.Groups[j].Group)
	})
	own := firsts != nil // out.Groups is not req's
	if own {
		out.Groups = make([]kmsg.OffsetFetchRequestGroup, 0, len(firsts))
		for _, i := range firsts {
			g := req.Groups[i]
			for k := next[i]; k >= 0; k = next[k] {
				if g.Topics == nil || req.Groups[k].Topics == nil {
					g.Topics = nil // every topic
					break
				}
				g.Topics = append(slices.Clip(g.Topics), req.Groups[k].Topics...)
			}
			out.Groups = append(out.Groups, g)
		}
	}
	for i := range out.Groups {
		topics := out.Groups[i].Topics
		if topics == nil {
			continue
		}
		merged := uniqueTopicPartitions(topics,
			func(a, b *kmsg.OffsetFetchRequestGroupTopic) int {
				if c := strings.Compare(a.Topic, b.Topic); c != 0 {
					return c
				}
				return bytes.Compare(a.TopicID[:], b.TopicID[:])
			},
			func(t *kmsg.OffsetFetchRequestGroupTopic) *[]int32 { return &t.Partitions })
		if sameSlice(merged, topics) {
			continue
		}
		if !own {
			out.Groups = slices.Clone(req.Groups)
			own = true
		}
		out.Groups[i].Topics = merged
	}
	return &out
}

// sameSlice reports whether a and b are the same slice.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// uniqueTopicPartitions merges the entries of topics that compare equal
// and drops repeated partitions, keeping the order in which topics and
// partitions first appear. It returns topics itself when nothing repeats,
// and new slices otherwise; topics is not changed.
func uniqueTopicPartitions[T any](topics []T, compare func(a, b *T) int, partitions func(*T) *[]int32) []T {
	firsts, next := repeatedKeys(len(topics), func(i, j int) int { return compare(&topics[i], &topics[j]) })
	out := topics
	copied := false
	if firsts != nil {
		out = make([]T, 0, len(firsts))
		for _, i := range firsts {
			t := topics[i]
			p := partitions(&t)
			for k := next[i]; k >= 0; k = next[k] {
				*p = append(slices.Clip(*p), *partitions(&topics[k])...)
			}
			out = append(out, t)
		}
		copied = true
	}
	for i := range out {
		p := partitions(&out[i])
		unique := uniquePartitions(*p)
		if sameSlice(unique, *p) {
			continue
		}
		if !copied {
			out = slices.Clone(topics)
			copied = true
		}
		*partitions(&out[i]) = unique
	}
	return out
}

// uniquePartitions returns ps without repeats, in the order they first
// appear: ps itself when nothing repeats.
func uniquePartitions(ps []int32) []int32 {
	firsts, _ := repeatedKeys(len(ps), func(i, j int) int { return cmp.Compare(ps[i], ps[j]) })
	if firsts == nil {
		return ps
	}
	out := make([]int32, 0, len(firsts))
	for _, i := range firsts {
		out = append(out, ps[i])
	}
	return out
}
