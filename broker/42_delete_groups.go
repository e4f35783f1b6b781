package broker

// DeleteGroups (api key 42), versions 0–3.
//
// Deletes groups without members: their committed offsets and metadata are
// tombstoned in __consumer_offsets. A group with members is NON_EMPTY_GROUP,
// an unknown one GROUP_ID_NOT_FOUND. The share-partition state of a share
// group is deleted first (DeleteShareGroupState for each partition it
// initialized, as Kafka does; deleteGroupShareState in
// 92_delete_share_group_offsets.go). v3 adds an error message per group. A
// group named more than once is deleted and answered once, as Kafka's
// KafkaApis takes the distinct group names. A group the principal may not
// DELETE is GROUP_AUTHORIZATION_FAILED and left as it is
// (authorize_requests.go).

import (
	"context"
	"iter"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDeleteGroups(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for g := range uniqueStrings(req.Groups) {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = g
		if b.authorizedGroup(r, kmsg.ACLOperationDelete, g) {
			// A share group's share-partition state goes first (92_*.go).
			if rg.ErrorCode = b.deleteGroupShareState(ctx, g); rg.ErrorCode == 0 {
				rg.ErrorCode = b.groups.Delete(ctx, g)
			}
		} else {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		}
		if rg.ErrorCode != 0 && req.Version >= 3 {
			rg.ErrorMessage = errorMessage(kerr.ErrorForCode(rg.ErrorCode))
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// uniqueStrings yields the strings of ss without repeats, in the order
// they first appear.
func uniqueStrings(ss []string) iter.Seq[string] {
	firsts, _ := repeatedKeys(len(ss), func(i, j int) int { return strings.Compare(ss[i], ss[j]) })
	return func(yield func(string) bool) {
		for i := range firstEntries(len(ss), firsts) {
			if !yield(ss[i]) {
				return
			}
		}
	}
}
