package broker

// OffsetCommit (api key 8), versions 0–10.
//
// Offsets are stored as OffsetCommitKey / OffsetCommitValue records in the
// group's partition of __consumer_offsets and the commit is answered once
// they are committed there (acks=-1). A member must be of the group's
// current generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// REBALANCE_IN_PROGRESS while assignments are handed out, checked in that
// order as Kafka's ClassicGroup.validateOffsetCommit does); a simple consumer
// (generation -1) may commit while the group has no members. A member's
// commit to a group that does not exist is ILLEGAL_GENERATION, and from v9
// GROUP_ID_NOT_FOUND (Kafka's OffsetMetadataManager). The empty group id is
// accepted like any other, as Kafka accepts it "for backwards
// compatibility". A failed write to __consumer_offsets is
// COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR, never a produce error. v1 retention
// fields are ignored (offsets.retention.minutes applies). v6+ keeps the
// leader epoch (KIP-320), v7+ checks group.instance.id (KIP-345), v10 names
// topics by id (KIP-848's topic ids). In a KIP-848 consumer group the
// generation is the member epoch (v9+): STALE_MEMBER_EPOCH when it is not
// the member's, except for partitions the member held since that epoch
// (KIP-1251). Unknown topics or partitions are
// UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID at v10); metadata longer than
// offset.metadata.max.bytes is OFFSET_METADATA_TOO_LARGE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleOffsetCommit(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	return b.groups.CommitOffsets(ctx, r.Body.(*kmsg.OffsetCommitRequest)), nil
}
