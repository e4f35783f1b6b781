// Package console owns sluice's built-in web console: the HTML, CSS and
// JavaScript of its pages (embedded with embed, written by hand, no build
// step) and the JSON API under /api/ they call. The broker mounts it on
// the metrics listener (metrics.listener) next to /metrics, /healthz and
// /readyz when console.enable is true.
//
// The API is a Kafka client of the cluster, not a view of one node's
// memory: a kadm client to the node's own Kafka listener answers every
// cluster, topic, record and group question, so the console of any node
// shows the whole cluster and keeps working while other nodes are down.
// The node's Prometheus registry (read in process, no HTTP scrape) feeds
// the live charts; their figures are this node's own counters.
//
// Pages (one hash route each, all in static/app.js):
//
//   - #/cluster: every registered broker with its state (up, or down when
//     the controller has fenced it: DescribeCluster v2 with fenced brokers,
//     KIP-1073), the active controller, the raft voters (DescribeQuorum),
//     this node's readiness, partitions under-replicated or offline, and
//     the build version.
//   - #/topics and #/topic/NAME: partitions with leader, replicas, ISR,
//     offsets and size on disk (DescribeLogDirs), the topic's configs;
//     create, and delete after typing the topic's name.
//   - #/messages: the records of one partition from an offset or a
//     timestamp, with key, value and headers shown as text, JSON or hex.
//   - #/groups and #/group/NAME: members, assignments, committed offsets
//     and lag per partition; offsets reset (earliest, latest, an offset or
//     a timestamp) on an Empty group, as kafka-consumer-groups.sh
//     --reset-offsets requires.
//   - #/charts: bytes and records in, requests and request latency of this
//     node, polled every second from /api/metrics.
//
// console.read.only refuses every change (403) and hides its buttons.
// Changes are POST or DELETE with a JSON body, and a request whose Origin
// is not the console's own host is refused, so another web page a browser
// has open cannot create or delete topics through a console on localhost.
// The console has no login: bind metrics.listener to an address only
// operators reach, or set console.enable=false.
package console
