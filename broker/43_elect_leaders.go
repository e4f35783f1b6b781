package broker

// ElectLeaders (api key 43), versions 0–2.
//
// An operator's leader election (kafka-leader-election.sh, KIP-183):
// PREFERRED moves leadership back to each partition's preferred replica
// (the first assigned) when it is live and in the ISR; UNCLEAN (KIP-460,
// v1+) elects a leader for a partition that has none, taking an
// out-of-sync replica if no in-sync one is live. Topics null means every
// partition of every topic. The active controller decides and commits the
// elections (controller.ElectLeaders); any broker accepts the request and
// forwards it there, answering once its own image shows the result.
//
// Per partition: no error when a leader was elected; ELECTION_NOT_NEEDED,
// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
// UNKNOWN_TOPIC_OR_PARTITION or INVALID_TOPIC_EXCEPTION otherwise. With
// topics null, partitions that needed no election are left out, as KRaft
// does. v0 has no election type (always PREFERRED) and no top-level error
// code: an error of the whole request (an unknown election type is
// INVALID_REQUEST, no reachable controller NOT_CONTROLLER) is then only in
// each listed partition's code; v1+ carries it at the top level as well.
// v2 is the flexible version.
//
// ALTER on the cluster is needed, checked on the broker the client is
// connected to before forwarding: without it the request and each listed
// partition are CLUSTER_AUTHORIZATION_FAILED (authorize_requests.go).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleElectLeaders(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if clientRequest(ctx) && !b.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return electLeadersRefused(req, kerr.ClusterAuthorizationFailed.Code), nil
	}
	typ := controller.ElectPreferred
	if req.Version >= 1 {
		typ = controller.ElectionType(req.ElectionType)
	}
	var topics []controller.ElectTopic
	if req.Topics != nil {
		topics = make([]controller.ElectTopic, 0, len(req.Topics))
		for _, rt := range req.Topics {
			topics = append(topics, controller.ElectTopic{Topic: rt.Topic, Partitions: rt.Partitions})
		}
	}
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}

	results, err := b.electLeaders(ctx, typ, topics)
	if err != nil {
		// The whole request failed: every listed partition gets the error.
		resp.ErrorCode = errorCode(err)
		results = nil
		for _, t := range topics {
			tr := controller.ElectLeadersTopicResult{Topic: t.Topic}
			for _, p := range t.Partitions {
				tr.Partitions = append(tr.Partitions, controller.ElectLeadersPartitionResult{Partition: p, Err: err})
			}
			results = append(results, tr)
		}
	}
	for _, tr := range results {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = tr.Topic
		for _, pr := range tr.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = pr.Partition
			sp.ErrorCode = errorCode(pr.Err)
			sp.ErrorMessage = errorMessage(pr.Err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// electLeaders is Controller.ElectLeaders on the active controller.
func (b *Broker) electLeaders(ctx context.Context, typ controller.ElectionType, topics []controller.ElectTopic) ([]controller.ElectLeadersTopicResult, error) {
	var (
		results []controller.ElectLeadersTopicResult
		err     error
	)
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			results, err = b.ctrl.ElectLeaders(ctx, typ, topics)
		} else {
			results, err = b.forwardElectLeaders(ctx, id, typ, topics)
		}
		return isNotController(err)
	})
	return results, err
}

// forwardElectLeaders sends the elections to broker id, the active
// controller, and turns its answer back into the controller's results.
func (b *Broker) forwardElectLeaders(ctx context.Context, id int32, typ controller.ElectionType, topics []controller.ElectTopic) ([]controller.ElectLeadersTopicResult, error) {
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = int8(typ)
	req.TimeoutMillis = timeoutMillis(ctx)
	if topics != nil {
		req.Topics = make([]kmsg.ElectLeadersRequestTopic, 0, len(topics))
		for _, t := range topics {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = t.Topic, t.Partitions
			req.Topics = append(req.Topics, rt)
		}
	}
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		return nil, transportError(err)
	}
	resp := kresp.(*kmsg.ElectLeadersResponse)
	if err := remoteError(resp.ErrorCode, nil); err != nil {
		return nil, err
	}
	results := make([]controller.ElectLeadersTopicResult, 0, len(resp.Topics))
	for _, st := range resp.Topics {
		tr := controller.ElectLeadersTopicResult{Topic: st.Topic}
		for _, sp := range st.Partitions {
			tr.Partitions = append(tr.Partitions, controller.ElectLeadersPartitionResult{Partition: sp.Partition, Err: remoteError(sp.ErrorCode, sp.ErrorMessage)})
		}
		results = append(results, tr)
	}
	return results, nil
}
