package broker

// DeleteTopics (api key 20), versions 1–6.
//
// Topics are named (v0–v5) or, from v6 (KIP-516), given by name or by id.
// The controller removes each topic from the metadata log; every broker then
// drops its replicas' logs as it applies the change. Unknown names are
// UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; with
// delete.topic.enable=false every topic gets TOPIC_DELETION_DISABLED
// (INVALID_REQUEST before v3, as in Kafka).
//
// As in Kafka's controller, a name or an id given more than once is
// answered once, with INVALID_REQUEST ("Duplicate topic name." / "Duplicate
// topic id."), and that topic is not deleted; from v6 an entry with both a
// name and an id, or with neither, is INVALID_REQUEST too.

import (
	"bytes"
	"cmp"
	"context"
	"strings"

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
		// Kafka's ControllerApis.deleteTopics: v0–v2 have no
		// TOPIC_DELETION_DISABLED and get INVALID_REQUEST.
		code, msg := kerr.TopicDeletionDisabled.Code, (*string)(nil)
		if req.Version < 3 {
			code, msg = kerr.InvalidRequest.Code, kmsg.StringPtr("Topic deletion is disabled.")
		}
		for _, t := range topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID = t.name, t.id
			st.ErrorCode, st.ErrorMessage = code, msg
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}

	// Entries Kafka refuses before deleting anything: a name or id given
	// more than once (answered once, with INVALID_REQUEST, and not
	// deleted), and from v6 an entry with both a name and an id, or
	// neither.
	invalid := func(t asked) bool {
		return req.Version >= 6 && (t.name == nil) == (t.id == [16]byte{})
	}
	// class orders entries: by name, then by id, then the invalid ones,
	// which never repeat one another.
	class := func(t asked) int {
		switch {
		case invalid(t):
			return 2
		case t.name != nil:
			return 0
		}
		return 1
	}
	// repeated marks the entries of a name or id given more than once;
	// later, the copies after each one's first entry.
	repeated := make([]bool, len(topics))
	later := make([]bool, len(topics))
	sortedGroups(len(topics), func(i, j int) int {
		a, b := topics[i], topics[j]
		if ca, cb := class(a), class(b); ca != cb || ca == 2 {
			return cmp.Compare(ca, cb)*2 + cmp.Compare(i, j)
		}
		if a.name != nil {
			return strings.Compare(*a.name, *b.name)
		}
		return bytes.Compare(a.id[:], b.id[:])
	}, func(group []int32) {
		if len(group) == 1 {
			return
		}
		for k, i := range group {
			repeated[i] = true
			later[i] = k > 0
		}
	})
	refuse := func(t asked, msg string) {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = t.name, t.id
		st.ErrorCode = kerr.InvalidRequest.Code
		if req.Version >= 5 {
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Topics = append(resp.Topics, st)
	}
	var names []string
	var ids [][16]byte
	deleting := topics[:0:0]
	for i, t := range topics {
		switch {
		case invalid(t) && t.name == nil:
			refuse(t, "Neither topic name nor id were specified.")
		case invalid(t):
			refuse(t, "You may not specify both topic name and topic id.")
		case later[i]: // answered at the name's or id's first entry
		case repeated[i] && t.name != nil:
			refuse(asked{name: t.name}, "Duplicate topic name.")
		case repeated[i]:
			refuse(asked{id: t.id}, "Duplicate topic id.")
		case t.name != nil:
			names = append(names, *t.name)
			deleting = append(deleting, t)
		default:
			ids = append(ids, t.id)
			deleting = append(deleting, t)
		}
	}
	if len(deleting) == 0 {
		return resp, nil
	}
	results := b.deleteTopics(ctx, names, ids)
	// Results come back names first, then ids, in request order.
	ni, ii := 0, len(names)
	for _, t := range deleting {
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
