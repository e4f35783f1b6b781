package broker

// DeleteGroups (api key 42), versions 0–3.
//
// Deletes groups without members: their committed offsets and metadata are
// tombstoned in __consumer_offsets. A group with members is NON_EMPTY_GROUP,
// an unknown one GROUP_ID_NOT_FOUND. v3 adds an error message per group. A
// group named more than once is deleted and answered once, as Kafka's
// KafkaApis takes the distinct group names.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDeleteGroups(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, g := range uniqueStrings(req.Groups) {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = g
		rg.ErrorCode = b.groups.Delete(ctx, g)
		if rg.ErrorCode != 0 && req.Version >= 3 {
			rg.ErrorMessage = errorMessage(kerr.ErrorForCode(rg.ErrorCode))
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// uniqueStrings returns ss without repeats, in the order they first appear.
func uniqueStrings(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
