package broker

// DescribeUserScramCredentials (api key 50), version 0 (KIP-554; flexible).
//
// Answers from this broker's metadata image, as Kafka's KafkaApis answers
// from its metadata cache (ScramImage.describe), each user with the
// mechanisms and iteration counts of its credentials (never salts or
// keys):
//
//   - no user named: every user with a credential;
//   - a named user without credentials: RESOURCE_NOT_FOUND "Attempt to
//     describe a user credential that does not exist: <user>";
//   - a user named more than once: one result, DUPLICATE_RESOURCE "Cannot
//     describe SCRAM credentials for the same user twice in a single
//     request: <user>".
//
// Results come in the order Kafka's answer has them (the iteration order
// of the java.util.HashMap it collects the users in), SCRAM-SHA-256
// before SCRAM-SHA-512 within a user. The principal needs DESCRIBE on the
// cluster; without it the answer is Kafka's
// DescribeUserScramCredentialsRequest.getErrorResponse:
// CLUSTER_AUTHORIZATION_FAILED at the top and in one nameless result per
// user named.
//
// kafka-configs.sh --describe --entity-type users lists these after the
// users' quotas.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDescribeUserScramCredentials(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	resp.Results = []kmsg.DescribeUserSCRAMCredentialsResponseResult{}
	if !b.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, "kafka-cluster") {
		err := kerr.ClusterAuthorizationFailed
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		for range req.Users {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	creds := b.metadata().Scram
	repeated := map[string]bool{}
	var named []string
	if len(req.Users) == 0 {
		named = creds.Users()
	}
	for _, u := range req.Users {
		if _, seen := repeated[u.Name]; seen {
			repeated[u.Name] = true
			continue
		}
		repeated[u.Name] = false
		named = append(named, u.Name)
	}
	for _, user := range controller.JavaHashMapOrder(named) {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		var err error
		infos := creds.Infos(user)
		switch {
		case repeated[user]:
			err = fmt.Errorf("%w: Cannot describe SCRAM credentials for the same user twice in a single request: %s", kerr.DuplicateResource, user)
		case len(infos) == 0:
			err = fmt.Errorf("%w: Attempt to describe a user credential that does not exist: %s", kerr.ResourceNotFound, user)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		}
		for _, in := range infos {
			if err != nil {
				break
			}
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = in.Mechanism, in.Iterations
			res.CredentialInfos = append(res.CredentialInfos, ci)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
