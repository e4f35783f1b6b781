package broker

// ListGroups (api key 16), versions 0–5.
//
// Every group this node coordinates (a client asks each broker). v4+
// filters by state (KIP-518), v5 by type (KIP-848): "classic", or
// "consumer" for groups of the consumer group protocol. While a
// __consumer_offsets partition is still loading the answer is
// COORDINATOR_LOAD_IN_PROGRESS alone, as Kafka's GroupCoordinatorService
// answers, and the client asks again. A principal with DESCRIBE on the
// cluster sees every group, any other only the groups it may DESCRIBE, as
// KafkaApis.handleListGroupsRequest filters them (authorize_requests.go).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleListGroups(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	resp := b.groups.List(r.Body.(*kmsg.ListGroupsRequest))
	if !b.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return !b.authorizedGroup(r, kmsg.ACLOperationDescribe, g.Group)
		})
	}
	return resp, nil
}
