// Package metrics owns sluice's metrics HTTP listener (metrics.listener):
// the Prometheus registry of one node, its /metrics, /healthz and /readyz
// endpoints, and the naming convention every family follows. The broker
// package defines the families themselves (broker/metrics*.go) and hands
// them to a Server; this package knows nothing of partitions.
//
// # Names
//
// Kafka users query Kafka's JMX MBeans through the Prometheus JMX exporter,
// and the widely used Grafana dashboards are written against the names its
// common Kafka rules produce (jmx_exporter's example_configs/kafka-2_0_0.yml,
// with lowercaseOutputName: true; Strimzi and the Confluent / Bitnami charts
// use the same rules). sluice exposes the same names, so those dashboards
// return data unchanged. The rules map an MBean
//
//	kafka.<domain>:type=<Type>,name=<Name>[,<key>=<value>...]
//
// as follows:
//
//   - a meter named <X>PerSec (its Count attribute) becomes the counter
//     kafka_<domain>_<type>_<x>_total with the MBean's keys as labels:
//     BytesInPerSec with topic=T is
//     kafka_server_brokertopicmetrics_bytesin_total{topic="T"};
//     RequestsPerSec with request=Produce,version=11 is
//     kafka_network_requestmetrics_requests_total{request="Produce",version="11"}.
//   - a gauge (its Value attribute) becomes kafka_<domain>_<type>_<name>:
//     UnderReplicatedPartitions is
//     kafka_server_replicamanager_underreplicatedpartitions.
//
// Everything is lower case, as the rules' lowercaseOutputName makes it.
// Where sluice deliberately differs: Kafka also has an all-topics meter
// (BrokerTopicMetrics without a topic key, so the same name with no topic
// label); sluice exposes only the per-topic series, whose sum() is that
// total. Counters are process-lifetime totals (they restart from 0 with the
// process, as a JMX meter's Count does), so rate() gives Kafka's per-second
// figures. Go runtime and process families (go_*, process_*) come from
// client_golang's collectors under their usual names.
//
// A family appears only when its value is real: no placeholder series.
//
// # State families
//
// broker/metrics_state.go computes these at scrape time (the ISR counters
// excepted, bumped once per committed ISR change):
//
//   - Replication: kafka_server_replicamanager_isrshrinks_total and
//     _isrexpands_total count the ISR changes this node proposed as a
//     partition's leader and the controller committed (Kafka's
//     IsrShrinksPerSec / IsrExpandsPerSec). A replica the controller
//     removes from every ISR when it fences a broker is not a leader's
//     shrink, as in Kafka.
//   - Elections: kafka_controller_controllerstats_leaderelectionrateandtimems_count
//     and kafka_controller_controllerstats_uncleanleaderelectionspersec_total
//     count the leader changes to a live replica that this node applied
//     while it was the active controller, so sum() over the cluster counts
//     each once. Unclean: the new leader was in neither the ISR nor the
//     eligible leader replicas. Kafka's timer also has the election times;
//     sluice exposes only the count (no _sum, no quantiles).
//   - The metadata log, named as the Strimzi / JMX-exporter rules name
//     KRaft's raft-metrics: kafka_server_raftmetrics_current_leader,
//     _current_epoch, _current_state{current_state}, _high_watermark,
//     _log_end_offset, and kafka_server_brokermetadatametrics_last_applied_record_offset.
//     sluice's metadata log is hashicorp/raft, not KRaft: the epoch is
//     raft's term; the high watermark is raft's commit index and the log
//     end offset its last index (indexes of entries, not Kafka's next
//     offset); the applied offset is raft's applied index. current_state
//     is leader, candidate, follower (a voter), observer (a non-voter) or
//     shutdown: raft has no unattached, voted, prospective or resigned
//     state. Figures KRaft does not have carry a sluice_ prefix:
//     sluice_raft_apply_lag_entries (committed minus applied entries;
//     Kafka's apply lag is in milliseconds), sluice_raft_voters and
//     sluice_raft_nonvoters (the raft configuration), and
//     sluice_serf_members{state} (gossip members by serf status: alive,
//     leaving, left, failed).
//   - Logs: for every replica on this node, leader or follower, as Kafka
//     registers a Log MBean per local log: kafka_log_log_size,
//     _numlogsegments, _logstartoffset and _logendoffset with topic and
//     partition labels.
//   - Consumer-group lag, computed by the broker for the groups it
//     coordinates (classic, consumer and streams groups; share groups
//     commit no offsets), under the names of kafka_exporter
//     (danielqsj/kafka_exporter), whose dashboards are the most common:
//     kafka_consumergroup_current_offset{consumergroup,topic,partition},
//     the committed offset, and kafka_consumergroup_lag{consumergroup,
//     topic,partition}, the high watermark minus it (0 at least). The high
//     watermark is this node's replica's, so the lag series exists only
//     for partitions with a replica on the coordinator (all of them at
//     replication factor = cluster size); a follower's high watermark may
//     trail the leader's by a fetch. kafka-lag-exporter's
//     kafka_consumergroup_group_lag is not exposed. kafka_exporter's
//     _lag_sum is sum by (consumergroup, topic) of _lag in PromQL.
//   - Not exposed yet: the log cleaner's and the quotas' figures.
//
// # Endpoints
//
// /metrics is Prometheus' text (or protobuf, when asked) exposition of the
// node's registry. /healthz answers 200 while the process serves HTTP at
// all (a liveness probe). /readyz answers 200 once the node's Ready
// function says it has joined the cluster, else 503 with the reason, so a
// Kubernetes readiness probe keeps traffic away from a node still starting.
package metrics
