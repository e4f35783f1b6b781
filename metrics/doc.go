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
// # Endpoints
//
// /metrics is Prometheus' text (or protobuf, when asked) exposition of the
// node's registry. /healthz answers 200 while the process serves HTTP at
// all (a liveness probe). /readyz answers 200 once the node's Ready
// function says it has joined the cluster, else 503 with the reason, so a
// Kubernetes readiness probe keeps traffic away from a node still starting.
package metrics
