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
	fail := func(code int16) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	switch {
	case !b.streamsGroupsEnabled():
		return fail(kerr.UnsupportedVersion.Code)
	case !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group):
		return fail(kerr.GroupAuthorizationFailed.Code)
	}
	return b.groups.StreamsTopologyDescriptionUpdate(req), nil
}
