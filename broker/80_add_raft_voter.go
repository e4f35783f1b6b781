package broker

// AddRaftVoter (api key 80), versions 0–1 (KIP-853; v1 adds
// AckWhenCommitted, KIP-1186): `kafka-metadata-quorum.sh add-controller`,
// run with the new controller's configuration, adds it to the voters of
// the metadata quorum. sluice promotes a node that replicates the metadata
// log as a raft non-voter (every live broker does) to voter
// (controller/quorum.go says how, and how directory ids map); the answer
// always comes once the new configuration is committed.
//
// Checks, with Kafka's errors: a ClusterID that is not this cluster's is
// INCONSISTENT_CLUSTER_ID; a negative voter id or the zero directory id
// INVALID_REQUEST ("Add voter request didn't include a valid voter", as
// Kafka 4.4 answers), and so are listeners without one named in
// controller.listener.names ("Provided listeners ... do not contain a
// listener for ..."); a voter already in the set
// DUPLICATE_VOTER; a node that does not replicate the log, or has not
// caught up, REQUEST_TIMED_OUT. Forwarded to the active controller
// (quorum.go). Authorization: ALTER on the cluster.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleAddRaftVoter(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddRaftVoterRequest)
	answer := func(err error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp
	}
	if clientRequest(ctx) && !b.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return answer(kerr.ClusterAuthorizationFailed), nil
	}
	if err := b.checkAddRaftVoter(req); err != nil {
		return answer(err), nil
	}
	resp := b.onQuorumController(ctx, req,
		func(ctx context.Context) kmsg.Response { return answer(b.ctrl.AddVoter(ctx, req.VoterID)) },
		func(resp kmsg.Response) bool {
			return resp.(*kmsg.AddRaftVoterResponse).ErrorCode == kerr.NotController.Code
		},
		answer,
	)
	return resp, nil
}

// checkAddRaftVoter validates what needs no controller.
func (b *Broker) checkAddRaftVoter(req *kmsg.AddRaftVoterRequest) error {
	if req.ClusterID != nil && *req.ClusterID != b.ClusterID() {
		return fmt.Errorf("%w: cluster id %s is not this cluster's (%s)", kerr.InconsistentClusterID, *req.ClusterID, b.ClusterID())
	}
	if req.VoterID < 0 || req.VoterDirectoryID == ([16]byte{}) {
		return fmt.Errorf("%w: Add voter request didn't include a valid voter", kerr.InvalidRequest)
	}
	names := b.cfg.ControllerListenerNames()
	if !slices.ContainsFunc(req.Listeners, func(l kmsg.AddRaftVoterRequestListener) bool {
		return slices.Contains(names, strings.ToUpper(l.Name))
	}) {
		var given []string
		for _, l := range req.Listeners {
			given = append(given, fmt.Sprintf("%s://%s:%d", l.Name, l.Host, l.Port))
		}
		return fmt.Errorf("%w: Provided listeners %v do not contain a listener for %s", kerr.InvalidRequest, given, names[0])
	}
	return nil
}
