package broker

// DescribeQuorum (api key 55), versions 0–2 (KIP-595; v1 adds each
// replica's last fetch and last caught-up timestamps, v2 the directory ids,
// the error messages and the nodes with their listeners, KIP-853).
//
// The one partition is __cluster_metadata-0; any other topic or partition
// is UNKNOWN_TOPIC_OR_PARTITION at the partition level, as Kafka's raft
// client answers. The answer is the active controller's
// (controller.DescribeQuorum, which says how raft's state maps onto
// Kafka's fields and what is approximated): a broker forwards the request
// there (quorum.go). Nodes (v2) lists each voter with its controller
// listener (sluice's raft address, under the first name of
// controller.listener.names), as Kafka lists the voters' endpoints;
// observers have no endpoint there.
//
// Authorization: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

// quorumTopic and quorumPartition name the metadata log as KRaft does.
const (
	quorumTopic     = "__cluster_metadata"
	quorumPartition = 0
)

func (b *Broker) handleDescribeQuorum(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeQuorumRequest)
	if clientRequest(ctx) && !b.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		return describeQuorumError(req, kerr.ClusterAuthorizationFailed), nil
	}
	resp := b.onQuorumController(ctx, req,
		func(context.Context) kmsg.Response { return b.describeQuorumLocal(req) },
		func(resp kmsg.Response) bool {
			return resp.(*kmsg.DescribeQuorumResponse).ErrorCode == kerr.NotController.Code
		},
		func(err error) kmsg.Response { return describeQuorumError(req, err) },
	)
	return resp, nil
}

// describeQuorumError answers the whole request with err's code.
func describeQuorumError(req *kmsg.DescribeQuorumRequest, err error) *kmsg.DescribeQuorumResponse {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
	return resp
}

// describeQuorumLocal answers from this node's controller.
func (b *Broker) describeQuorumLocal(req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	info, err := b.ctrl.DescribeQuorum()
	if err != nil {
		return describeQuorumError(req, err)
	}
	ctrlListener := "CONTROLLER"
	if names := b.cfg.ControllerListenerNames(); len(names) > 0 {
		ctrlListener = names[0]
	}
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeQuorumResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDescribeQuorumResponseTopicPartition()
			sp.Partition = rp.Partition
			if rt.Topic != quorumTopic || rp.Partition != quorumPartition {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				sp.LeaderID, sp.LeaderEpoch, sp.HighWatermark = -1, -1, -1
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.LeaderID, sp.LeaderEpoch, sp.HighWatermark = info.LeaderID, info.LeaderEpoch, info.HighWatermark
			sp.CurrentVoters = quorumReplicaStates(info.Voters)
			sp.Observers = quorumReplicaStates(info.Observers)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	for _, v := range info.Voters {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = v.ID
		if host, port, ok := controller.SplitHostPort(v.Addr); ok {
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = ctrlListener, host, port
			n.Listeners = append(n.Listeners, l)
		}
		resp.Nodes = append(resp.Nodes, n)
	}
	return resp
}

func quorumReplicaStates(rs []controller.QuorumReplica) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	out := make([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState, 0, len(rs))
	for _, r := range rs {
		s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		s.ReplicaID, s.ReplicaDirectoryID, s.LogEndOffset = r.ID, r.DirectoryID, r.LogEndOffset
		s.LastFetchTimestamp, s.LastCaughtUpTimestamp = r.LastFetchTimestamp, r.LastCaughtUpTimestamp
		out = append(out, s)
	}
	return out
}
