package console

// GET /api/cluster: brokers and their state, the controller, the raft
// voters, this node's readiness and the partitions' health.

import (
	"context"
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type clusterBroker struct {
	ID    int32  `json:"id"`
	Host  string `json:"host"`
	Port  int32  `json:"port"`
	Rack  string `json:"rack,omitempty"`
	State string `json:"state"` // "up", or "down" when fenced
	Self  bool   `json:"self"`
	Voter bool   `json:"voter"`
	// Controller is whether this broker is the active controller.
	Controller bool `json:"controller"`
}

type quorumVoter struct {
	ID           int32 `json:"id"`
	Leader       bool  `json:"leader"`
	LogEndOffset int64 `json:"logEndOffset"`
	// LagMs is how long ago the voter last fetched from the leader, -1
	// when unknown (the leader itself).
	LastFetchMs int64 `json:"lastFetchTimestamp"`
}

type clusterView struct {
	ClusterID    string          `json:"clusterId"`
	ControllerID int32           `json:"controllerId"`
	Brokers      []clusterBroker `json:"brokers"`
	Voters       []quorumVoter   `json:"voters"`
	Observers    []int32         `json:"observers"`
	QuorumLeader int32           `json:"quorumLeader"`
	QuorumEpoch  int32           `json:"quorumEpoch"`
	QuorumError  string          `json:"quorumError,omitempty"`
	// Ready is this node's readiness (/readyz); NotReady says why not.
	Ready    bool   `json:"ready"`
	NotReady string `json:"notReady,omitempty"`
	// Topics and Partitions count user and internal topics alike.
	Topics          int `json:"topics"`
	Partitions      int `json:"partitions"`
	UnderReplicated int `json:"underReplicated"`
	Offline         int `json:"offline"`
}

func (c *Console) cluster(ctx context.Context, _ *http.Request) (any, error) {
	cl, adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	var v clusterView
	v.Ready = true
	if c.opts.Ready != nil {
		if err := c.opts.Ready(); err != nil {
			v.Ready, v.NotReady = false, err.Error()
		}
	}
	// DescribeCluster v2 lists fenced brokers too (KIP-1073): a killed
	// broker stays registered, fenced, until it returns.
	dreq := kmsg.NewPtrDescribeClusterRequest()
	dreq.IncludeFencedBrokers = true
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(dresp.ErrorCode); err != nil {
		return nil, err
	}
	v.ClusterID, v.ControllerID = dresp.ClusterID, dresp.ControllerID
	for _, b := range dresp.Brokers {
		cb := clusterBroker{ID: b.NodeID, Host: b.Host, Port: b.Port, State: "up", Self: b.NodeID == c.opts.NodeID,
			Controller: b.NodeID == dresp.ControllerID}
		if b.Rack != nil {
			cb.Rack = *b.Rack
		}
		if b.IsFenced {
			cb.State = "down"
		}
		v.Brokers = append(v.Brokers, cb)
	}
	slices.SortFunc(v.Brokers, func(a, b clusterBroker) int { return int(a.ID - b.ID) })

	qreq := kmsg.NewPtrDescribeQuorumRequest()
	qt := kmsg.NewDescribeQuorumRequestTopic()
	qt.Topic = "__cluster_metadata"
	qp := kmsg.NewDescribeQuorumRequestTopicPartition()
	qt.Partitions = append(qt.Partitions, qp)
	qreq.Topics = append(qreq.Topics, qt)
	v.QuorumLeader = -1
	if qresp, err := qreq.RequestWith(ctx, cl); err != nil {
		v.QuorumError = err.Error()
	} else if err := kerr.ErrorForCode(qresp.ErrorCode); err != nil {
		v.QuorumError = err.Error()
	} else if len(qresp.Topics) == 1 && len(qresp.Topics[0].Partitions) == 1 {
		p := qresp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			v.QuorumError = err.Error()
		}
		v.QuorumLeader, v.QuorumEpoch = p.LeaderID, p.LeaderEpoch
		for _, r := range p.CurrentVoters {
			v.Voters = append(v.Voters, quorumVoter{ID: r.ReplicaID, Leader: r.ReplicaID == p.LeaderID,
				LogEndOffset: r.LogEndOffset, LastFetchMs: r.LastFetchTimestamp})
		}
		for _, r := range p.Observers {
			v.Observers = append(v.Observers, r.ReplicaID)
		}
		slices.SortFunc(v.Voters, func(a, b quorumVoter) int { return int(a.ID - b.ID) })
		slices.Sort(v.Observers)
	}
	for i := range v.Brokers {
		v.Brokers[i].Voter = slices.ContainsFunc(v.Voters, func(q quorumVoter) bool { return q.ID == v.Brokers[i].ID })
	}

	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range md.Topics {
		v.Topics++
		for _, p := range t.Partitions {
			v.Partitions++
			if p.Leader < 0 {
				v.Offline++
			}
			if len(p.ISR) < len(p.Replicas) {
				v.UnderReplicated++
			}
		}
	}
	return v, nil
}
