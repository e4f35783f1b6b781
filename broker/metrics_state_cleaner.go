package broker

// The log cleaner's gauges (Kafka's LogCleaner and LogCleanerManager
// MBeans, named as the JMX exporter's rules name them), computed at scrape
// time from Broker.CleanerStats; absent while log.cleaner.enable is false,
// as Kafka then has no LogCleaner. Kafka's LogCleanerManager gauges carry
// a logDirectory key; sluice reports one figure over all its log dirs,
// without the label.

import (
	"github.com/prometheus/client_golang/prometheus"
)

var cleanerGauges = []struct {
	desc  *prometheus.Desc
	value func(CleanerStats) float64
}{
	{prometheus.NewDesc("kafka_log_logcleaner_max_buffer_utilization_percent",
		"Largest share of the offset map a cleaner thread's last pass filled (Kafka's max-buffer-utilization-percent).", nil, nil),
		func(s CleanerStats) float64 { return float64(s.MaxBufferUtilizationPercent) }},
	{prometheus.NewDesc("kafka_log_logcleaner_cleaner_recopy_percent",
		"Bytes written over bytes read by the cleaner threads' last passes (Kafka's cleaner-recopy-percent).", nil, nil),
		func(s CleanerStats) float64 { return float64(s.RecopyPercent) }},
	{prometheus.NewDesc("kafka_log_logcleaner_max_clean_time_secs",
		"Longest of the cleaner threads' last passes, in seconds (Kafka's max-clean-time-secs).", nil, nil),
		func(s CleanerStats) float64 { return float64(s.MaxCleanTimeSecs) }},
	{prometheus.NewDesc("kafka_log_logcleaner_max_compaction_delay_secs",
		"Longest delay past max.compaction.lag.ms of a log the cleaner took up, in seconds (Kafka's max-compaction-delay-secs).", nil, nil),
		func(s CleanerStats) float64 { return float64(s.MaxCompactionDelaySecs) }},
	{prometheus.NewDesc("kafka_log_logcleaner_deadthreadcount",
		"Cleaner threads that stopped on an error (Kafka's DeadThreadCount).", nil, nil),
		func(s CleanerStats) float64 { return float64(s.DeadThreads) }},
	{prometheus.NewDesc("kafka_log_logcleanermanager_uncleanable_partitions_count",
		"Partitions the cleaner gave up on until restart (Kafka's uncleanable-partitions-count).", nil, nil),
		func(s CleanerStats) float64 { return float64(s.UncleanablePartitions) }},
	{prometheus.NewDesc("kafka_log_logcleanermanager_uncleanable_bytes",
		"Bytes of the partitions the cleaner gave up on (Kafka's uncleanable-bytes).", nil, nil),
		func(s CleanerStats) float64 { return float64(s.UncleanableBytes) }},
	{prometheus.NewDesc("kafka_log_logcleanermanager_max_dirty_percent",
		"Dirty share of the dirtiest compacted log at the cleaner's last look (Kafka's max-dirty-percent).", nil, nil),
		func(s CleanerStats) float64 { return float64(s.MaxDirtyPercent) }},
	{prometheus.NewDesc("kafka_log_logcleanermanager_time_since_last_run_ms",
		"Milliseconds since the cleaner last looked for a log to clean (Kafka's time-since-last-run-ms).", nil, nil),
		func(s CleanerStats) float64 { return float64(s.TimeSinceLastRun.Milliseconds()) }},
}

// cleanerCollector computes the cleaner gauges.
type cleanerCollector struct {
	b *Broker
	m *brokerMetrics
}

// Describe sends every gauge's description.
func (c cleanerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range cleanerGauges {
		ch <- g.desc
	}
}

// Collect reads the cleaner's stats once.
func (c cleanerCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.b.cfg.LogCleanerEnable || c.m.ctrl.Load() == nil {
		return // off, or New has not opened the logs yet
	}
	s := c.b.CleanerStats()
	for _, g := range cleanerGauges {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(s))
	}
}
