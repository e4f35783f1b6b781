package broker

// OffsetForLeaderEpoch (api key 23), versions 2–4.
//
// For each partition, the largest leader epoch not above the requested one
// and the offset where it ended (the log end offset for the current epoch),
// read from the log's leader-epoch cache (KIP-101, KIP-279). Consumers use it
// to detect log truncation after an unclean leader change (KIP-320),
// followers to truncate before fetching. CurrentLeaderEpoch is checked as in
// Fetch. As in Kafka's LeaderEpochFileCache.endOffsetFor, epoch -1, an
// epoch above every known one, or an empty history answers -1 / -1, and an
// epoch older than every known one answers itself with the start offset of
// the oldest known epoch.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleOffsetForLeaderEpoch(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	img := b.metadata()
	// A follower's CLUSTER_ACTION on the cluster covers every topic; a
	// consumer needs DESCRIBE on each (authorize_requests.go).
	clusterAction := b.authorizedCluster(r, kmsg.ACLOperationClusterAction)
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		topic := lookupTopic(img, false, rt.Topic, [16]byte{})
		denied := !clusterAction && !describable.allowed(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			err := func() error {
				p, _, err := b.leaderReplica(topic, rp.Partition, rp.CurrentLeaderEpoch)
				if err != nil {
					return err
				}
				sp.LeaderEpoch, sp.EndOffset = p.log.EndOffsetForEpoch(rp.LeaderEpoch)
				return nil
			}()
			sp.ErrorCode = errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
