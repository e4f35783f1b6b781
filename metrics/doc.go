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
// # Request families
//
// broker/metrics_requests*.go count on the request path, fed by
// protocol.Router.Observe once a request is answered (nothing is measured
// while metrics.listener is empty: Observe stays nil):
//
//   - The request label is Kafka's request name (ApiKeys: InitProducerId,
//     DescribeAcls, SaslHandshake ..., where kmsg spells some otherwise),
//     and a Fetch is FetchConsumer or FetchFollower (a replica id), as
//     Kafka's RequestMetrics name it; requests_total uses the same label.
//   - Latency: Kafka's RequestMetrics histograms TotalTimeMs,
//     RequestQueueTimeMs, LocalTimeMs, RemoteTimeMs, ThrottleTimeMs,
//     ResponseQueueTimeMs and ResponseSendTimeMs, in milliseconds. The JMX
//     exporter shows a Kafka histogram as a gauge per percentile,
//     kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"}
//     (quantile 0.50, 0.75, 0.95, 0.98, 0.99, 0.999, spelled as its rules
//     spell them) and a counter _count; the common dashboards query those.
//     A gauge cannot be aggregated across nodes or windows, so each family
//     is also a classic histogram: cumulative _bucket{le} counters (bounds
//     0.1 ms to 30 s, then +Inf) and _sum, so
//     histogram_quantile(0.99, sum by (le) (rate(kafka_network_requestmetrics_totaltimems_bucket{request="Produce"}[1m])))
//     is the cluster's p99 produce latency. Both shapes share the name:
//     the quantile series are typed gauge, _bucket, _count and _sum
//     counter (a Prometheus summary or histogram type could not carry
//     both). The quantiles are estimated at scrape time from the bucket
//     counts of about the last five minutes (Kafka's histograms are
//     biased to the last five minutes), interpolated within a bucket as
//     histogram_quantile does; 0 when no request came in that window.
//     The phases of a request on its connection (protocol/observe.go):
//     queue is from its last byte read to its handler's start (the
//     request-memory wait and the decode: there is no request queue, each
//     connection serves its own requests), local the handler's time less
//     remote, remote the time the handler was parked (a Fetch's max wait,
//     acks=all, a change waiting on the controller, a rebalance), throttle
//     the throttle time the answer imposed, response queue the answer's
//     encoding, send its write to the socket.
//   - Errors: kafka_network_requestmetrics_errors_total{request,error}
//     counts every error code an answer carries (top level and per
//     partition, NONE included) under Kafka's error names, as
//     ErrorsPerSec does.
//   - Per topic: kafka_server_brokertopicmetrics_bytesout_total (record
//     batch bytes sent to consumers in Fetch answers; an answer a quota
//     replaced with an empty one sends none), totalfetchrequests_total and
//     totalproducerequests_total (partitions asked for), and
//     failedfetchrequests_total / failedproducerequests_total (partitions
//     answered with an error other than those Kafka's ReplicaManager
//     expects in normal operation: leadership, unknown partition, offset
//     out of range, record too large ...). A name no topic has makes no
//     series. Followers' fetches count in the broker-wide
//     kafka_server_brokertopicmetrics_replicationbytesout_total and the
//     follower's appends in _replicationbytesin_total, which have no topic
//     label, as in Kafka.
//   - Connections, per Kafka listener, under the names the Strimzi rules
//     give socket-server-metrics: kafka_server_socket_server_metrics_connection_count,
//     _connection_creation_total and _connection_close_total (Kafka's
//     networkProcessor label is absent: a goroutine serves each
//     connection). kafka_network_socketserver_memorypoolused is the
//     queued.max.request.bytes memory held by requests. Kafka's
//     RequestQueueSize and NetworkProcessorAvgIdlePercent have no
//     counterpart and are not exposed.
//
// Cost: an answered request costs one more time.Now, a bucket add and a
// sum add per phase, and a walk of its answer's error codes (by hand for
// Produce and Fetch, by a per-type plan of its ErrorCode fields for the
// rest); BenchmarkRequestMetricsObserve in broker measures it.
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
//   - The log cleaner, while log.cleaner.enable is true:
//     kafka_log_logcleaner_max_buffer_utilization_percent,
//     _cleaner_recopy_percent, _max_clean_time_secs,
//     _max_compaction_delay_secs, _deadthreadcount, and
//     kafka_log_logcleanermanager_uncleanable_partitions_count,
//     _uncleanable_bytes, _max_dirty_percent, _time_since_last_run_ms.
//     Kafka's LogCleanerManager gauges have a logDirectory label; sluice's
//     are one figure over all log dirs.
//   - Client quotas (broker/metrics_quota.go), from the quota sensors at
//     scrape time. Kafka's MBeans are
//     kafka.server:type=Produce|Fetch|Request,user=U,client-id=C, and the
//     common rules (kafka-2_0_0.yml, Strimzi's) have quota rules of their
//     own, so the names are not kafka_server_<type>_<attribute>:
//     kafka_server_quota_<attribute>{resource="<Type>",user,clientId}
//     (the clientId label spelled as the rules spell it). sluice exposes
//     kafka_server_quota_byte_rate (resource Produce: producer_byte_rate;
//     Fetch: consumer_byte_rate), kafka_server_quota_request_time
//     (resource Request: request_percentage, in percent of a thread) and
//     kafka_server_quota_throttle_time for each, one series per sensor:
//     per set of clients sharing a quota, recorded to within the last hour
//     (a client with no quota has none). user and clientId are the names
//     the sensor is shared under, "" for a part the quota's entity does
//     not have (Kafka's MBean then lacks the key; in PromQL an empty label
//     is an absent one). The rate is the windowed rate over
//     quota.window.num windows, as Kafka's; throttle_time is the throttle
//     time in milliseconds the last request over the quota called for, 0
//     once the window has passed without one (Kafka's is the average of
//     the throttle times in the window). Not exposed: ControllerMutation's
//     mutation-rate (controller_mutation_rate is a token bucket in sluice,
//     quotas/mutation.go) and the quota values themselves, which Kafka's
//     MBeans do not carry either (DescribeClientQuotas gives them).
//
// # Client metrics
//
// The metrics Kafka clients push to a node (KIP-714's PushTelemetry, the
// Java client's org.apache.kafka.* metrics) are families of their own,
// named after the pushed metric and labelled with the client instance
// that pushed them: client_telemetry.go gives the names, labels and
// bounds.
//
// # Endpoints
//
// /metrics is Prometheus' text (or protobuf, when asked) exposition of the
// node's registry. /healthz answers 200 while the process serves HTTP at
// all (a liveness probe). /readyz answers 200 once the node's Ready
// function says it has joined the cluster, else 503 with the reason, so a
// Kubernetes readiness probe keeps traffic away from a node still starting.
package metrics
