package broker

// ConsumerGroupDescribe (api key 69), versions 0–1 (KIP-848).
//
// Each named consumer group's state, group epoch, target assignment epoch
// and assignor, and per member its epoch, subscription (topic names and
// regular expression), current and target assignment; v1 adds the member
// type (always "consumer" here). A classic group or an unknown one is
// GROUP_ID_NOT_FOUND. Authorized operations (KIP-430) are filled when
// IncludeAuthorizedOperations asks for them, for each group answered
// without error, as KafkaApis.handleConsumerGroupDescribe does
// (authorized_ops.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleConsumerGroupDescribe(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, g := range req.Groups {
		dg := b.groups.ConsumerDescribe(g)
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = groupAuthorizedOps(dg.Group)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
