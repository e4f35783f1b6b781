package broker

// AlterUserScramCredentials (api key 51), version 0 (KIP-554; flexible).
//
// Creates, changes and deletes users' SCRAM-SHA-256 / SCRAM-SHA-512
// credentials (kafka-configs.sh --alter --entity-type users
// --add-config 'SCRAM-SHA-512=[iterations=8192,password=…]' or
// --delete-config SCRAM-SHA-512). The client salts the password itself
// and sends the salt, the iterations and the salted password; the
// controller keeps StoredKey and ServerKey, never the salted password
// (controller/scram.go). As in Kafka 4 (KafkaApis forwards the request,
// its controller's ScramControlManager decides), the active controller
// validates the request and writes every accepted change in one command;
// a non-controller broker forwards it over the controller channel and
// answers once its own image has the change, so the credential works on
// this broker when the client has its answer.
//
// The principal needs ALTER on the cluster, checked on the broker the
// client is connected to; without it every user named (sorted, once each)
// gets CLUSTER_AUTHORIZATION_FAILED, Kafka's
// AlterUserScramCredentialsRequest.getErrorResponse.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleAlterUserScramCredentials(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	dels := make([]controller.ScramDeletion, 0, len(req.Deletions))
	for _, d := range req.Deletions {
		dels = append(dels, controller.ScramDeletion{User: d.Name, Mechanism: d.Mechanism})
	}
	ups := make([]controller.ScramUpsertion, 0, len(req.Upsertions))
	for _, u := range req.Upsertions {
		ups = append(ups, controller.ScramUpsertion{User: u.Name, Mechanism: u.Mechanism, Iterations: u.Iterations, Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	var results []controller.ScramResult
	if !fromPeer(ctx) && !b.authorized(r, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, "kafka-cluster") {
		results = controller.ScramFailure(dels, ups, kerr.ClusterAuthorizationFailed)
	} else {
		results = b.alterUserScramCredentials(ctx, dels, ups)
	}
	resp.Results = []kmsg.AlterUserSCRAMCredentialsResponseResult{}
	for _, res := range results {
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User = res.User
		rr.ErrorCode, rr.ErrorMessage = errorCode(res.Err), errorMessage(res.Err)
		resp.Results = append(resp.Results, rr)
	}
	return resp, nil
}

// alterUserScramCredentials is Controller.AlterUserScramCredentials on the
// active controller (forward.go).
func (b *Broker) alterUserScramCredentials(ctx context.Context, dels []controller.ScramDeletion, ups []controller.ScramUpsertion) []controller.ScramResult {
	var results []controller.ScramResult
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			results = b.ctrl.AlterUserScramCredentials(ctx, dels, ups)
		} else {
			results = b.forwardAlterUserScramCredentials(ctx, id, dels, ups)
		}
		for _, r := range results {
			if isNotController(r.Err) {
				return true
			}
		}
		return false
	})
	return results
}

func (b *Broker) forwardAlterUserScramCredentials(ctx context.Context, id int32, dels []controller.ScramDeletion, ups []controller.ScramUpsertion) []controller.ScramResult {
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, d := range dels {
		rd := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		rd.Name, rd.Mechanism = d.User, d.Mechanism
		req.Deletions = append(req.Deletions, rd)
	}
	for _, u := range ups {
		ru := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		ru.Name, ru.Mechanism, ru.Iterations, ru.Salt, ru.SaltedPassword = u.User, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword
		req.Upsertions = append(req.Upsertions, ru)
	}
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		return controller.ScramFailure(dels, ups, transportError(err))
	}
	resp, ok := kresp.(*kmsg.AlterUserSCRAMCredentialsResponse)
	if !ok {
		return controller.ScramFailure(dels, ups, fmt.Errorf("%w: the controller answered %T", kerr.UnknownServerError, kresp))
	}
	results := make([]controller.ScramResult, 0, len(resp.Results))
	for _, r := range resp.Results {
		results = append(results, controller.ScramResult{User: r.User, Err: remoteError(r.ErrorCode, r.ErrorMessage)})
	}
	return results
}
