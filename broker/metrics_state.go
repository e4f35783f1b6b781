package broker

// The node's state families (metrics.listener; metrics/doc.go gives the
// names and where sluice differs from Kafka): the metadata log's raft
// state, serf's members, the leader elections of the active controller,
// the ISR shrinks and expands of the partitions this node leads, each
// local replica's log size, segments and offsets, the lag of the
// consumer groups this node coordinates, and the log cleaner's gauges
// (metrics_state_cleaner.go). Everything but the ISR counters
// is computed at scrape time from state the node keeps anyway; the ISR
// counters are bumped once per committed AlterPartition proposal, off the
// request path (replica_isr.go).

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// stateMetrics are the state families of one node.
type stateMetrics struct {
	isrShrinks, isrExpands prometheus.Counter
}

// newStateMetrics registers the state families on m's registry.
func newStateMetrics(b *Broker, m *brokerMetrics) *stateMetrics {
	s := &stateMetrics{
		isrShrinks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kafka_server_replicamanager_isrshrinks_total",
			Help: "ISR changes this node proposed as a partition's leader that removed a replica and were committed (Kafka's IsrShrinksPerSec).",
		}),
		isrExpands: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kafka_server_replicamanager_isrexpands_total",
			Help: "ISR changes this node proposed as a partition's leader that added a replica and were committed (Kafka's IsrExpandsPerSec).",
		}),
	}
	m.reg.MustRegister(s.isrShrinks, s.isrExpands, stateCollector{b, m}, cleanerCollector{b, m})
	return s
}

// isrChanged counts a committed ISR change from from to to of a partition
// this node leads: a shrink if it removed a replica, an expand if it added
// one (both, in the rare proposal that does both).
func (m *brokerMetrics) isrChanged(from, to []int32) {
	if m == nil || m.state == nil {
		return
	}
	removed, added := false, false
	for _, r := range from {
		if !containsID(to, r) {
			removed = true
		}
	}
	for _, r := range to {
		if !containsID(from, r) {
			added = true
		}
	}
	if removed {
		m.state.isrShrinks.Inc()
	}
	if added {
		m.state.isrExpands.Inc()
	}
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

var (
	descRaftLeader = prometheus.NewDesc("kafka_server_raftmetrics_current_leader",
		"Node id of the metadata log's raft leader (the active controller), -1 when none is known (KRaft's current-leader).", nil, nil)
	descRaftEpoch = prometheus.NewDesc("kafka_server_raftmetrics_current_epoch",
		"The metadata log's raft term as this node knows it (KRaft's current-epoch).", nil, nil)
	descRaftState = prometheus.NewDesc("kafka_server_raftmetrics_current_state",
		"1 for this node's raft role: leader, candidate, follower (a voter), observer (a non-voter), shutdown (KRaft's current-state).", []string{"current_state"}, nil)
	descRaftHW = prometheus.NewDesc("kafka_server_raftmetrics_high_watermark",
		"The highest metadata log index this node knows committed: raft's commit index (KRaft's high-watermark).", nil, nil)
	descRaftLEO = prometheus.NewDesc("kafka_server_raftmetrics_log_end_offset",
		"The last index in this node's metadata log: raft's last index, not Kafka's next offset (KRaft's log-end-offset).", nil, nil)
	descRaftApplied = prometheus.NewDesc("kafka_server_brokermetadatametrics_last_applied_record_offset",
		"The last metadata log index this node applied to its metadata image: raft's applied index (Kafka's broker-metadata-metrics last-applied-record-offset).", nil, nil)
	descRaftApplyLag = prometheus.NewDesc("sluice_raft_apply_lag_entries",
		"Metadata log entries committed but not yet applied on this node (raft's commit index minus its applied index).", nil, nil)
	descRaftVoters = prometheus.NewDesc("sluice_raft_voters",
		"Voters in the latest raft configuration this node knows.", nil, nil)
	descRaftNonVoters = prometheus.NewDesc("sluice_raft_nonvoters",
		"Non-voters (KRaft's observers) in the latest raft configuration this node knows.", nil, nil)
	descSerfMembers = prometheus.NewDesc("sluice_serf_members",
		"Cluster members serf (gossip) knows on this node, by serf status: alive, leaving, left, failed.", []string{"state"}, nil)
	descElections = prometheus.NewDesc("kafka_controller_controllerstats_leaderelectionrateandtimems_count",
		"Leader elections (a partition's leader moving to a live replica) applied while this node was the active controller (the Count of Kafka's LeaderElectionRateAndTimeMs).", nil, nil)
	descUnclean = prometheus.NewDesc("kafka_controller_controllerstats_uncleanleaderelectionspersec_total",
		"Unclean leader elections (a leader from outside the ISR and the eligible leader replicas) applied while this node was the active controller (Kafka's UncleanLeaderElectionsPerSec).", nil, nil)
	descLogSize = prometheus.NewDesc("kafka_log_log_size",
		"Bytes of this node's replica of the partition: the sum of its .log segment files (Kafka's Log Size).", []string{"topic", "partition"}, nil)
	descLogSegments = prometheus.NewDesc("kafka_log_log_numlogsegments",
		"Segments of this node's replica of the partition (Kafka's Log NumLogSegments).", []string{"topic", "partition"}, nil)
	descLogStart = prometheus.NewDesc("kafka_log_log_logstartoffset",
		"Log start offset of this node's replica of the partition (Kafka's Log LogStartOffset).", []string{"topic", "partition"}, nil)
	descLogEnd = prometheus.NewDesc("kafka_log_log_logendoffset",
		"Log end offset (the next offset) of this node's replica of the partition (Kafka's Log LogEndOffset).", []string{"topic", "partition"}, nil)
	descGroupOffset = prometheus.NewDesc("kafka_consumergroup_current_offset",
		"Committed offset of a group this node coordinates, per partition (kafka_exporter's name).", []string{"consumergroup", "topic", "partition"}, nil)
	descGroupLag = prometheus.NewDesc("kafka_consumergroup_lag",
		"Records of the partition a group this node coordinates has not committed: the high watermark of this node's replica minus the committed offset, for partitions with a replica here (kafka_exporter's name).", []string{"consumergroup", "topic", "partition"}, nil)
)

// stateCollector computes the scrape-time state families.
type stateCollector struct {
	b *Broker
	m *brokerMetrics
}

// Describe sends every family's description.
func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRaftLeader, descRaftEpoch, descRaftState, descRaftHW, descRaftLEO,
		descRaftApplied, descRaftApplyLag, descRaftVoters, descRaftNonVoters, descSerfMembers, descElections, descUnclean,
		descLogSize, descLogSegments, descLogStart, descLogEnd, descGroupOffset, descGroupLag} {
		ch <- d
	}
}

// Collect reads the controller, the local logs and the group coordinator.
func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctrl := c.m.ctrl.Load()
	if ctrl == nil {
		return // New has not opened the metadata yet: no figure is real
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	c.collectRaft(ctrl, gauge)
	for state, n := range ctrl.GossipMembers() {
		gauge(descSerfMembers, float64(n), state)
	}
	all, unclean := ctrl.Elections()
	counter(descElections, float64(all))
	counter(descUnclean, float64(unclean))
	c.collectLogs(gauge)
	c.collectLag(gauge)
}

// collectRaft reports this node's view of the metadata log.
func (c stateCollector) collectRaft(ctrl *controller.Controller, gauge func(*prometheus.Desc, float64, ...string)) {
	st := ctrl.RaftStatus()
	gauge(descRaftLeader, float64(st.LeaderID))
	gauge(descRaftEpoch, float64(st.Term))
	role := st.State
	if role == "follower" && !st.Voter {
		role = "observer"
	}
	gauge(descRaftState, 1, role)
	gauge(descRaftHW, float64(st.CommitIndex))
	gauge(descRaftLEO, float64(st.LastIndex))
	gauge(descRaftApplied, float64(st.AppliedIndex))
	lag := 0.0
	if st.CommitIndex > st.AppliedIndex {
		lag = float64(st.CommitIndex - st.AppliedIndex)
	}
	gauge(descRaftApplyLag, lag)
	gauge(descRaftVoters, float64(st.Voters))
	gauge(descRaftNonVoters, float64(st.NonVoters))
}

// collectLogs reports every local replica's log, leader or follower, as
// Kafka's Log MBeans exist for every log a broker holds.
func (c stateCollector) collectLogs(gauge func(*prometheus.Desc, float64, ...string)) {
	b := c.b
	b.mu.RLock()
	parts := make([]*partition, 0, len(b.partitions))
	for _, p := range b.partitions {
		parts = append(parts, p)
	}
	b.mu.RUnlock()
	for _, p := range parts {
		topic, part := p.tp.Topic, strconv.Itoa(int(p.tp.Partition))
		gauge(descLogSize, float64(p.log.Size()), topic, part)
		gauge(descLogSegments, float64(len(p.log.Segments())), topic, part)
		gauge(descLogStart, float64(p.log.LogStartOffset()), topic, part)
		gauge(descLogEnd, float64(p.log.LogEndOffset()), topic, part)
	}
}

// collectLag reports the committed offsets of the groups this node
// coordinates and their lag behind the high watermark of the partitions
// with a replica on this node (with replication factor 1 on another node
// the partition's end is not known here without a request, so it has an
// offset series and no lag series). A group on a __consumer_offsets
// partition still loading reports nothing this scrape.
func (c stateCollector) collectLag(gauge func(*prometheus.Desc, float64, ...string)) {
	b := c.b
	if b.groups == nil {
		return
	}
	for _, o := range b.groups.CommittedOffsets() {
		if o.Offset < 0 {
			continue
		}
		part := strconv.Itoa(int(o.Partition))
		gauge(descGroupOffset, float64(o.Offset), o.Group, o.Topic, part)
		lp := b.partition(logstore.TopicPartition{Topic: o.Topic, Partition: o.Partition})
		if lp == nil {
			continue
		}
		lag := lp.highWatermark() - o.Offset
		if lag < 0 {
			lag = 0 // a follower's high watermark may trail the leader's
		}
		gauge(descGroupLag, float64(lag), o.Group, o.Topic, part)
	}
}
