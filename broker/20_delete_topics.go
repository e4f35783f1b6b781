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
//
// The partitions of the topics deleted are charged to the client's
// controller_mutation_rate (KIP-599, mutation_quota.go): strict from v5,
// permissive before.
//
// Deleting needs DELETE on the cluster or on each topic, checked on the
// broker the client is connected to (a peer's request was checked on its
// broker), as Kafka's ControllerApis.deleteTopics checks it: a topic named
// that the principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED before
// its existence is looked at; one it may describe but not delete is
// TOPIC_AUTHORIZATION_FAILED once it is known to exist; one given by id
// that it may not delete is TOPIC_AUTHORIZATION_FAILED, with its name only
// if the principal may describe it (authorize_requests.go).

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
	auth := b.deleteTopicsAuth(ctx, r)
	for i, t := range topics {
		switch {
		case !later[i] && !repeated[i] && !invalid(t) && auth.refuse(t.name, t.id, req.Version, &resp.Topics):
			// TOPIC_AUTHORIZATION_FAILED, answered by auth.refuse.
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
	ctx, mutations := startMutationQuota(ctx, r, &req.UnknownTags, deleteTopicsStrictVersion)
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
	finishMutationQuota(ctx, mutations, resp)
	return resp, nil
}

// deleteTopicsAuth is DeleteTopics' authorization of one request.
type deleteTopicsAuth struct {
	b                      *Broker
	skip                   bool // a peer's request, or DELETE on the cluster
	describable, deletable *topicAuth
}

func (b *Broker) deleteTopicsAuth(ctx context.Context, r *protocol.Request) *deleteTopicsAuth {
	return &deleteTopicsAuth{
		b:           b,
		skip:        !clientRequest(ctx) || b.authorizedCluster(r, kmsg.ACLOperationDelete),
		describable: b.topicAuth(r, kmsg.ACLOperationDescribe),
		deletable:   b.topicAuth(r, kmsg.ACLOperationDelete),
	}
}

// refuse appends the TOPIC_AUTHORIZATION_FAILED answer of a topic given
// by name or by id that the principal may not delete, and reports whether
// it did; a topic it may delete, or one whose absence the controller
// answers (an unknown id, a describable name that does not exist), is
// left to the controller.
func (a *deleteTopicsAuth) refuse(name *string, id [16]byte, version int16, out *[]kmsg.DeleteTopicsResponseTopic) bool {
	if a.skip {
		return false
	}
	st := kmsg.NewDeleteTopicsResponseTopic()
	st.ErrorCode = kerr.TopicAuthorizationFailed.Code
	img := a.b.metadata()
	if name != nil {
		switch {
		case !a.describable.allowed(*name):
		case lookupTopic(img, false, *name, [16]byte{}) == nil, a.deletable.allowed(*name):
			return false
		}
		st.Topic = name
	} else {
		t := lookupTopic(img, true, "", id)
		if t == nil || a.deletable.allowed(t.Name) {
			return false
		}
		st.TopicID = id
		if a.describable.allowed(t.Name) {
			topicName := t.Name
			st.Topic = &topicName
		}
	}
	if version >= 5 {
		st.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Description)
	}
	*out = append(*out, st)
	return true
}
