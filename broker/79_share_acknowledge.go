package broker

// ShareAcknowledge (api key 79), versions 1–2 (KIP-932; version 0 was Kafka
// 4.0's early access; v2 adds IsRenewAck for RENEW acknowledgements,
// KIP-1222, and AcquisitionLockTimeoutMillis).
//
// A share group member acknowledges records it acquired through ShareFetch
// without fetching more: ACCEPT, RELEASE, REJECT, GAP per offset or per
// batch (share/partition.go; all or nothing per partition). It belongs to
// the member's share session on this broker: ShareSessionEpoch 0 is
// INVALID_SHARE_SESSION_EPOCH (a session is opened by ShareFetch only), -1
// acknowledges and closes the session, releasing what the member still
// holds there, any other epoch must match the session's
// (INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without a session)
// and bumps it.
//
// Errors: GROUP_AUTHORIZATION_FAILED without READ on the group;
// per partition TOPIC_AUTHORIZATION_FAILED without READ on its topic,
// UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER
// with the current leader (and its endpoint in NodeEndpoints),
// INVALID_RECORD_STATE for offsets the member does not hold, INVALID_REQUEST
// for malformed batches (and RENEW without IsRenewAck).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
)

func (b *Broker) handleShareAcknowledge(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	if !b.shareGroupsEnabled() {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	if req.GroupID == nil || *req.GroupID == "" || req.MemberID == nil || *req.MemberID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	group, member := *req.GroupID, *req.MemberID
	if !b.authorizedGroup(r, kmsg.ACLOperationRead, group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	s := b.shareState()
	img := b.metadata()
	gs := b.sharePartitionSettings(img, group)
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = gs.lockMillis()
	}
	key := share.SessionKey{Group: group, Member: member}
	var session share.SessionView
	var err error
	switch req.ShareSessionEpoch {
	case 0:
		err = share.ErrInvalidSessionEpoch
	case -1:
		session, err = s.sessions.Close(key)
	default:
		session, err = s.sessions.Update(key, req.ShareSessionEpoch, nil, nil)
	}
	if err != nil {
		resp.ErrorCode = shareErrorCode(err)
		return resp, nil
	}

	now := b.now()
	renew := req.Version >= 2 && req.IsRenewAck && gs.renew
	readable := b.topicAuth(r, kmsg.ACLOperationRead)
	answers := newShareAnswers()
	for i := range req.Topics {
		rt := &req.Topics[i]
		topic := lookupTopic(img, true, "", rt.TopicID)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			a := answers.add(share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition})
			a.hasAck = true
			switch {
			case topic == nil:
				a.ackCode = kerr.UnknownTopicID.Code
			case !readable.allowed(topic.Name):
				a.ackCode = kerr.TopicAuthorizationFailed.Code
			case topicPartition(topic, rp.Partition) == nil:
				a.ackCode = kerr.UnknownTopicOrPartition.Code
			}
			if a.ackCode != 0 {
				continue
			}
			batches := make([]share.AckBatch, len(rp.AcknowledgementBatches))
			for k, ab := range rp.AcknowledgementBatches {
				batches[k] = shareAckBatch(ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes)
			}
			b.shareAcknowledge(ctx, group, member, topic, a, batches, renew, gs, now)
		}
	}
	if req.ShareSessionEpoch == -1 {
		s.mgr.ReleaseMember(group, member, session.Partitions, now)
	}

	endpoints := map[int32]bool{}
	topicAt := map[[16]byte]int{}
	for _, a := range answers.list {
		i, ok := topicAt[a.tp.TopicID]
		if !ok {
			i = len(resp.Topics)
			topicAt[a.tp.TopicID] = i
			resp.Topics = append(resp.Topics, kmsg.ShareAcknowledgeResponseTopic{TopicID: a.tp.TopicID})
		}
		sp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		sp.Partition = a.tp.Partition
		sp.ErrorCode = a.ackCode
		if a.ackErr != nil && a.ackCode != 0 {
			sp.ErrorMessage = errorMessage(a.ackErr)
		}
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
		if a.ackCode == kerr.NotLeaderForPartition.Code {
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = a.leaderID, a.leadEp
			if a.leaderID >= 0 {
				endpoints[a.leaderID] = true
			}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
	}
	listener := ""
	if r.Conn != nil {
		listener = r.Conn.Listener
	}
	for id := range endpoints {
		if host, port, rack, ok := shareNodeEndpoint(img, id, listener); ok {
			resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareAcknowledgeResponseNodeEndpoint{NodeID: id, Host: host, Port: port, Rack: rack})
		}
	}
	return resp, nil
}
