package broker

// DeleteTopics (api key 20), versions 1–6.
//
// Topics are named (v0–v5) or, from v6 (KIP-516), given by name or by id.
// The controller removes each topic from the metadata log; every broker then
// drops its replicas' logs as it applies the change. Unknown names are
// UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; with
// delete.topic.enable=false every topic gets TOPIC_DELETION_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDeleteTopics(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)

	type asked struct {
		name *string
		id   [16]byte
	}
	var topics []asked
	if req.Version < 6 {
		for i := range req.TopicNames {
			topics = append(topics, asked{name: &req.TopicNames[i]})
		}
	} else {
		for _, t := range req.Topics {
			topics = append(topics, asked{name: t.Topic, id: t.TopicID})
		}
	}

	if !b.cfg.DeleteTopicEnable {
		for _, t := range topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID = t.name, t.id
			st.ErrorCode = kerr.TopicDeletionDisabled.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}

	var names []string
	var ids [][16]byte
	for _, t := range topics {
		if t.name != nil {
			names = append(names, *t.name)
		} else {
			ids = append(ids, t.id)
		}
	}
	results := b.deleteTopics(ctx, names, ids)
	// Results come back names first, then ids, in request order.
	ni, ii := 0, len(names)
	for _, t := range topics {
		var k int
		if t.name != nil {
			k, ni = ni, ni+1
		} else {
			k, ii = ii, ii+1
		}
		res := results[k]
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = t.name, t.id
		if res.Name != "" && st.Topic == nil {
			name := res.Name
			st.Topic = &name
		}
		if st.TopicID == ([16]byte{}) {
			st.TopicID = res.TopicID
		}
		st.ErrorCode = errorCode(res.Err)
		if req.Version >= 5 {
			st.ErrorMessage = errorMessage(res.Err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
