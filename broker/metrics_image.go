package broker

// The gauges of the metadata image, computed at scrape time (metrics.go
// has the counters): Kafka's ReplicaManager gauges for this node and the
// active controller's KafkaController gauges.

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	descUnderReplicated = prometheus.NewDesc("kafka_server_replicamanager_underreplicatedpartitions",
		"Partitions this node leads whose ISR is smaller than their replica set (Kafka's UnderReplicatedPartitions).", nil, nil)
	descUnderMinISR = prometheus.NewDesc("kafka_server_replicamanager_underminisrpartitioncount",
		"Partitions this node leads whose ISR is smaller than their topic's min.insync.replicas (Kafka's UnderMinIsrPartitionCount).", nil, nil)
	descLeaderCount = prometheus.NewDesc("kafka_server_replicamanager_leadercount",
		"Partitions this node leads (Kafka's LeaderCount).", nil, nil)
	descPartitionCount = prometheus.NewDesc("kafka_server_replicamanager_partitioncount",
		"Partitions with a replica assigned to this node (Kafka's PartitionCount).", nil, nil)
	descActiveController = prometheus.NewDesc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 on the active controller (the raft leader), else 0 (Kafka's ActiveControllerCount).", nil, nil)
	descOffline = prometheus.NewDesc("kafka_controller_kafkacontroller_offlinepartitionscount",
		"On the active controller: partitions without a leader; 0 elsewhere (Kafka's OfflinePartitionsCount).", nil, nil)
	descGlobalTopics = prometheus.NewDesc("kafka_controller_kafkacontroller_globaltopiccount",
		"On the active controller: topics in the cluster; 0 elsewhere (Kafka's GlobalTopicCount).", nil, nil)
	descGlobalPartitions = prometheus.NewDesc("kafka_controller_kafkacontroller_globalpartitioncount",
		"On the active controller: partitions in the cluster; 0 elsewhere (Kafka's GlobalPartitionCount).", nil, nil)
)

// imageCollector computes the gauges from the broker's newest image.
type imageCollector struct {
	b *Broker
	m *brokerMetrics
}

// Describe sends every gauge's description.
func (c imageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUnderReplicated, descUnderMinISR, descLeaderCount, descPartitionCount,
		descActiveController, descOffline, descGlobalTopics, descGlobalPartitions} {
		ch <- d
	}
}

// Collect walks the image once. Kafka reports the controller gauges on the
// active controller only (0 on the others), so a dashboard's sum() over
// the cluster counts each partition once; sluice does the same.
func (c imageCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	ctrl := c.m.ctrl.Load()
	if ctrl == nil {
		return // New has not opened the metadata yet: no figure is real
	}
	img := b.metadata()
	self := b.cfg.NodeID
	active := ctrl.ActiveControllerID() == self
	var urp, underMin, leaders, hosted, offline, topics, parts int
	if img != nil {
		for _, t := range img.Topics {
			topics++
			minISR := 0 // resolved once per topic, for the first partition led here
			for _, p := range t.Partitions {
				if p == nil {
					continue
				}
				parts++
				if p.Leader < 0 {
					offline++
				}
				for _, r := range p.Replicas {
					if r == self {
						hosted++
						break
					}
				}
				if p.Leader != self {
					continue
				}
				leaders++
				if minISR == 0 {
					minISR = b.minInsyncReplicas(img, t)
				}
				if len(p.ISR) < minISR {
					underMin++
				}
				// During a reassignment Replicas holds the target and the
				// replicas leaving; Kafka counts against the replicas
				// before it (the ones not being added).
				if len(p.ISR) < len(p.Replicas)-len(p.AddingReplicas) {
					urp++
				}
			}
		}
	}
	if img != nil {
		c.m.forgetDeleted(img)
	}
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	gauge(descUnderReplicated, urp)
	gauge(descUnderMinISR, underMin)
	gauge(descLeaderCount, leaders)
	gauge(descPartitionCount, hosted)
	activeCount, off, gt, gp := 0, 0, 0, 0
	if active {
		activeCount, off, gt, gp = 1, offline, topics, parts
	}
	gauge(descActiveController, activeCount)
	gauge(descOffline, off)
	gauge(descGlobalTopics, gt)
	gauge(descGlobalPartitions, gp)
}
