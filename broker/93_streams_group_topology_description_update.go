package broker

// StreamsGroupTopologyDescriptionUpdate (api key 93), version 0
// (KIP-1071's topology descriptions, Kafka 4.4).
//
// A member of a streams group hands in the description of the group's
// topology (its nodes, stores and global stores), which
// StreamsGroupDescribe v1 returns when asked. sluice holds it in the
// coordinator's memory (Kafka stores it through
// group.streams.topology.description.plugin.class, a plugin sluice does
// not take), so a coordinator change forgets it, and sluice never asks a
// member for it (TopologyDescriptionRequired stays false). READ on the
// group is needed; below streams.version 1 the answer is
// UNSUPPORTED_VERSION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleStreamsGroupTopologyDescriptionUpdate(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	switch {
	case !b.streamsGroupsEnabled():
		resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	case !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group):
		resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return b.groups.StreamsTopologyDescriptionUpdate(req), nil
}
