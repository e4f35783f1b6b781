package console

// The consumer groups API: list with total lag, one group's members,
// assignments and lag per partition, and an offset reset on an Empty
// group.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

type groupSummary struct {
	Name         string `json:"name"`
	State        string `json:"state"`
	ProtocolType string `json:"protocolType"`
	Protocol     string `json:"protocol"`
	Coordinator  int32  `json:"coordinator"`
	Members      int    `json:"members"`
	// Lag is the sum of the partitions' lags; -1 when one is unknown.
	Lag   int64  `json:"lag"`
	Error string `json:"error,omitempty"`
}

type memberView struct {
	MemberID    string             `json:"memberId"`
	InstanceID  string             `json:"instanceId,omitempty"`
	ClientID    string             `json:"clientId"`
	ClientHost  string             `json:"clientHost"`
	Assignments map[string][]int32 `json:"assignments"`
}

type groupPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member,omitempty"`
	Error     string `json:"error,omitempty"`
}

type groupView struct {
	groupSummary
	MemberList []memberView     `json:"memberList"`
	Partitions []groupPartition `json:"partitions"`
}

func summarizeGroup(l kadm.DescribedGroupLag) groupSummary {
	s := groupSummary{Name: l.Group, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol,
		Coordinator: l.Coordinator.NodeID, Members: len(l.Members)}
	if err := l.Error(); err != nil {
		s.Error = err.Error()
	}
	for _, ml := range l.Lag.Sorted() {
		if ml.Lag < 0 || s.Lag < 0 {
			s.Lag = -1
			continue
		}
		s.Lag += ml.Lag
	}
	return s
}

func (c *Console) groups(ctx context.Context, _ *http.Request) (any, error) {
	_, adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	out := []groupSummary{}
	if len(listed) == 0 {
		return out, nil
	}
	lags, err := adm.Lag(ctx, listed.Groups()...)
	if err != nil {
		return nil, err
	}
	for _, l := range lags.Sorted() {
		out = append(out, summarizeGroup(l))
	}
	return out, nil
}

func (c *Console) group(ctx context.Context, r *http.Request) (any, error) {
	_, adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("group")
	lags, err := adm.Lag(ctx, name)
	if err != nil {
		return nil, err
	}
	l, ok := lags[name]
	if !ok {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("group %q not found", name)}
	}
	v := groupView{groupSummary: summarizeGroup(l), MemberList: []memberView{}, Partitions: []groupPartition{}}
	for _, m := range l.Members {
		mv := memberView{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assignments: map[string][]int32{}}
		if m.InstanceID != nil {
			mv.InstanceID = *m.InstanceID
		}
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				mv.Assignments[t.Topic] = append(mv.Assignments[t.Topic], t.Partitions...)
				slices.Sort(mv.Assignments[t.Topic])
			}
		}
		v.MemberList = append(v.MemberList, mv)
	}
	for _, ml := range l.Lag.Sorted() {
		gp := groupPartition{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag}
		if ml.Member != nil {
			gp.Member = ml.Member.MemberID
		}
		if ml.Err != nil {
			gp.Error = ml.Err.Error()
		}
		v.Partitions = append(v.Partitions, gp)
	}
	return v, nil
}

// resetRequest is POST /api/groups/{group}/reset's body: To is earliest,
// latest, offset (Offset) or timestamp (Timestamp, ms); Topic limits the
// reset to one topic (every partition of it), else every partition the
// group has committed.
type resetRequest struct {
	To        string `json:"to"`
	Topic     string `json:"topic"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
}

func (c *Console) resetGroup(ctx context.Context, r *http.Request) (any, error) {
	var req resetRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	_, adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("group")
	described, err := adm.DescribeGroups(ctx, name)
	if err != nil {
		return nil, err
	}
	d, ok := described[name]
	if !ok || d.Err != nil {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("group %q: %v", name, d.Err)}
	}
	// As kafka-consumer-groups.sh --reset-offsets: only a group without
	// members, whose offsets no consumer would overwrite.
	if d.State != "Empty" && d.State != "Dead" {
		return nil, &httpError{http.StatusConflict, fmt.Sprintf("group %q is %s with %d members: offsets can only be reset while it is Empty (stop its consumers first)", name, d.State, len(d.Members))}
	}
	// The partitions to reset.
	var topics []string
	if req.Topic != "" {
		topics = []string{req.Topic}
	} else {
		committed, err := adm.FetchOffsets(ctx, name)
		if err != nil {
			return nil, err
		}
		for t := range committed {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return nil, badRequest("group %q has no committed offsets; name a topic to reset", name)
	}
	var listed kadm.ListedOffsets
	switch strings.ToLower(req.To) {
	case "earliest":
		listed, err = adm.ListStartOffsets(ctx, topics...)
	case "latest":
		listed, err = adm.ListEndOffsets(ctx, topics...)
	case "timestamp":
		listed, err = adm.ListOffsetsAfterMilli(ctx, req.Timestamp, topics...)
	case "offset":
		if req.Offset < 0 {
			return nil, badRequest("offset must be a number from 0")
		}
		listed, err = adm.ListEndOffsets(ctx, topics...) // to know the partitions and clamp
	default:
		return nil, badRequest("to must be earliest, latest, offset or timestamp, not %q", req.To)
	}
	if err != nil {
		return nil, err
	}
	if err := listed.Error(); err != nil {
		return nil, kafkaRefusal(err, "")
	}
	offsets := kadm.Offsets{}
	listed.Each(func(o kadm.ListedOffset) {
		at := o.Offset
		if strings.EqualFold(req.To, "offset") {
			at = min(req.Offset, o.Offset)
		}
		offsets.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: at, LeaderEpoch: -1})
	})
	resp, err := adm.CommitOffsets(ctx, name, offsets)
	if err != nil {
		return nil, err
	}
	if err := resp.Error(); err != nil {
		return nil, kafkaRefusal(err, "")
	}
	n := 0
	resp.Each(func(kadm.OffsetResponse) { n++ })
	return map[string]any{"group": name, "partitions": n}, nil
}
