package broker

// The BrokerTopicMetrics of the Fetch and Produce paths besides bytes and
// messages in (metrics.go): bytes out per topic, the fetch and produce
// partition counts and their failures per topic, and the broker-wide
// replication bytes. Each is an atomic add on a handle cached with the
// topic's (metrics.go's topicCounters), once per partition of a request.

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topicFamilies are the per-topic counter families of this file.
type topicFamilies struct {
	bytesOut, totalFetch, failedFetch, totalProduce, failedProduce *prometheus.CounterVec
	// replBytesIn and replBytesOut are broker-wide, as Kafka has them
	// only without a topic.
	replBytesIn, replBytesOut prometheus.Counter
}

// topicFetchCounters are one topic's handles of topicFamilies.
type topicFetchCounters struct {
	bytesOut, totalFetch, failedFetch, totalProduce, failedProduce prometheus.Counter
}

func newTopicFamilies() topicFamilies {
	vec := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"topic"})
	}
	return topicFamilies{
		bytesOut: vec("kafka_server_brokertopicmetrics_bytesout_total",
			"Bytes of record batches sent to consumers in Fetch answers from the topic's partitions (Kafka's BytesOutPerSec; followers' fetches are replicationbytesout)."),
		totalFetch: vec("kafka_server_brokertopicmetrics_totalfetchrequests_total",
			"Partitions of the topic asked for in Fetch answers, consumers' and followers' (Kafka's TotalFetchRequestsPerSec)."),
		failedFetch: vec("kafka_server_brokertopicmetrics_failedfetchrequests_total",
			"Partitions of the topic a Fetch answered with an error other than the routine ones (leadership, unknown partition, offset out of range) (Kafka's FailedFetchRequestsPerSec)."),
		totalProduce: vec("kafka_server_brokertopicmetrics_totalproducerequests_total",
			"Partitions of the topic written to by Produce requests (Kafka's TotalProduceRequestsPerSec)."),
		failedProduce: vec("kafka_server_brokertopicmetrics_failedproducerequests_total",
			"Partitions of the topic a Produce answered with an error other than the routine ones (leadership, unknown partition, record too large, corrupt) (Kafka's FailedProduceRequestsPerSec)."),
		replBytesIn: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_replicationbytesin_total",
			Help: "Bytes of record batches this node appended as a follower, fetched from leaders (Kafka's ReplicationBytesInPerSec)."}),
		replBytesOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_replicationbytesout_total",
			Help: "Bytes of record batches sent to followers in Fetch answers (Kafka's ReplicationBytesOutPerSec)."}),
	}
}

func (f *topicFamilies) collectors() []prometheus.Collector {
	return []prometheus.Collector{f.bytesOut, f.totalFetch, f.failedFetch, f.totalProduce, f.failedProduce, f.replBytesIn, f.replBytesOut}
}

func (f *topicFamilies) handles(topic string) topicFetchCounters {
	return topicFetchCounters{
		bytesOut: f.bytesOut.WithLabelValues(topic), totalFetch: f.totalFetch.WithLabelValues(topic),
		failedFetch: f.failedFetch.WithLabelValues(topic), totalProduce: f.totalProduce.WithLabelValues(topic),
		failedProduce: f.failedProduce.WithLabelValues(topic),
	}
}

func (f *topicFamilies) forget(topic string) {
	for _, v := range []*prometheus.CounterVec{f.bytesOut, f.totalFetch, f.failedFetch, f.totalProduce, f.failedProduce} {
		v.DeleteLabelValues(topic)
	}
}

// fetchTally is what one round of a Fetch read, partition by partition
// of the topics that exist (a name no topic has makes no series), for
// fetched to count once the answer is chosen.
type fetchTally struct {
	parts []fetchTallied
}

type fetchTallied struct {
	topic string
	bytes int
	code  int16
}

func (t *fetchTally) add(topic string, bytes int, code int16) {
	if t != nil {
		t.parts = append(t.parts, fetchTallied{topic, bytes, code})
	}
}

// newFetchTally returns a tally when metrics are on, else nil (add does
// nothing on nil).
func (m *brokerMetrics) newFetchTally() *fetchTally {
	if m == nil {
		return nil
	}
	return &fetchTally{}
}

// fetched counts a Fetch's answer: every partition asked for, those that
// failed, and, when sent (sent is false for an answer a quota replaced
// with an empty one), its record bytes: to the topic's bytes out for a
// consumer, to the replication bytes out for a follower.
func (m *brokerMetrics) fetched(t *fetchTally, follower, sent bool) {
	if m == nil || t == nil {
		return
	}
	repl := 0
	for _, p := range t.parts {
		h := m.topic(p.topic)
		h.totalFetch.Inc()
		if fetchFailed(p.code) {
			h.failedFetch.Inc()
		}
		if !sent || p.bytes == 0 {
			continue
		}
		if follower {
			repl += p.bytes
		} else {
			h.bytesOut.Add(float64(p.bytes))
		}
	}
	if repl > 0 {
		m.replBytesOut.Add(float64(repl))
	}
}

// fetchFailed reports whether a partition's fetch error is a failure
// Kafka's FailedFetchRequestsPerSec counts: not one of the errors its
// ReplicaManager.readFromLog expects in normal operation.
func fetchFailed(code int16) bool {
	switch code {
	case 0, kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.UnknownLeaderEpoch.Code,
		kerr.FencedLeaderEpoch.Code, kerr.ReplicaNotAvailable.Code, kerr.KafkaStorageError.Code,
		kerr.OffsetOutOfRange.Code, kerr.InconsistentTopicID.Code, kerr.UnknownTopicID.Code:
		return false
	}
	return true
}

// producedPartition counts a Produce's partition of an existing topic
// answered with code.
func (m *brokerMetrics) producedPartition(topic string, code int16) {
	if m == nil {
		return
	}
	h := m.topic(topic)
	h.totalProduce.Inc()
	if produceFailed(code) {
		h.failedProduce.Inc()
	}
}

// produceFailed reports whether a partition's produce error is a failure
// Kafka's FailedProduceRequestsPerSec counts: not one of the errors its
// ReplicaManager.appendToLocalLog expects in normal operation.
func produceFailed(code int16) bool {
	switch code {
	case 0, kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.MessageTooLarge.Code,
		kerr.RecordListTooLarge.Code, kerr.CorruptMessage.Code, kerr.KafkaStorageError.Code, kerr.UnknownTopicID.Code:
		return false
	}
	return true
}

// replicated counts bytes of record batches appended as a follower.
func (m *brokerMetrics) replicated(bytes int) {
	if m != nil && bytes > 0 {
		m.replBytesIn.Add(float64(bytes))
	}
}
