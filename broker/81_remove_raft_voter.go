package broker

// RemoveRaftVoter (api key 81), version 0 (KIP-853): `kafka-metadata-quorum.sh
// remove-controller --controller-id N --controller-directory-id D` removes
// a voter from the metadata quorum, e.g. a dead one being replaced. The
// directory id must be the one DescribeQuorum reports
// (controller/quorum.go); another is VOTER_NOT_FOUND, as is an id that is
// no voter, and the zero id (or a negative voter id) INVALID_REQUEST
// ("Remove voter request didn't include a valid voter"), as Kafka 4.4
// answers. Removing the last voter is INVALID_REQUEST. A ClusterID that
// is not this cluster's is INCONSISTENT_CLUSTER_ID. Forwarded to the
// active controller (quorum.go); the answer comes once the new
// configuration is committed. Authorization: ALTER on the cluster.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleRemoveRaftVoter(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.RemoveRaftVoterRequest)
	answer := func(err error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp
	}
	if clientRequest(ctx) && !b.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return answer(kerr.ClusterAuthorizationFailed), nil
	}
	if req.ClusterID != nil && *req.ClusterID != b.ClusterID() {
		return answer(fmt.Errorf("%w: cluster id %s is not this cluster's (%s)", kerr.InconsistentClusterID, *req.ClusterID, b.ClusterID())), nil
	}
	if req.VoterID < 0 || req.VoterDirectoryID == ([16]byte{}) {
		return answer(fmt.Errorf("%w: Remove voter request didn't include a valid voter", kerr.InvalidRequest)), nil
	}
	resp := b.onQuorumController(ctx, req,
		func(ctx context.Context) kmsg.Response {
			return answer(b.ctrl.RemoveVoter(ctx, req.VoterID, req.VoterDirectoryID))
		},
		func(resp kmsg.Response) bool {
			return resp.(*kmsg.RemoveRaftVoterResponse).ErrorCode == kerr.NotController.Code
		},
		answer,
	)
	return resp, nil
}
