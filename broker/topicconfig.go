package broker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// dynamicBrokerConfigs returns the dynamic broker configs stored in metadata
// for this node and for the whole cluster.
func (b *Broker) dynamicBrokerConfigs(img *controller.Image) (perBroker, clusterDefault map[string]string) {
	if img == nil {
		return nil, nil
	}
	return img.BrokerConfigs[strconv.Itoa(int(b.cfg.NodeID))], img.BrokerConfigs[""]
}

// effectiveTopicConfig is every topic config key with the value in force for
// topic t: set on the topic, else the dynamic or static broker default.
func (b *Broker) effectiveTopicConfig(img *controller.Image, t *controller.Topic) map[string]string {
	perBroker, clusterDefault := b.dynamicBrokerConfigs(img)
	return b.cfg.EffectiveTopicConfig(t.Configs, perBroker, clusterDefault)
}

// logConfig builds the log's settings from the topic's effective config.
func (b *Broker) logConfig(img *controller.Image, t *controller.Topic) (logstore.Config, error) {
	eff := b.effectiveTopicConfig(img, t)
	cfg := logstore.DefaultConfig()
	var errs []error
	i64 := func(key string, dst *int64) {
		if v, ok := eff[key]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				return
			}
			*dst = n
		}
	}
	i32 := func(key string, dst *int32) {
		var n int64 = int64(*dst)
		i64(key, &n)
		*dst = int32(n)
	}
	i64("segment.bytes", &cfg.SegmentBytes)
	i64("segment.ms", &cfg.SegmentMs)
	i64("retention.ms", &cfg.RetentionMs)
	i64("retention.bytes", &cfg.RetentionBytes)
	i32("index.interval.bytes", &cfg.IndexIntervalBytes)
	i32("segment.index.bytes", &cfg.SegmentIndexBytes)
	i64("file.delete.delay.ms", &cfg.FileDeleteDelayMs)
	i32("max.message.bytes", &cfg.MaxMessageBytes)
	cfg.LogAppendTime = eff["message.timestamp.type"] == "LogAppendTime"
	cfg.CleanupDelete = cleanupDeletes(eff["cleanup.policy"])
	cfg.Compact = cleanupCompacts(eff["cleanup.policy"])
	i64("message.timestamp.before.max.ms", &cfg.TimestampBeforeMaxMs)
	i64("message.timestamp.after.max.ms", &cfg.TimestampAfterMaxMs)
	i64("flush.messages", &cfg.FlushMessages)
	i64("flush.ms", &cfg.FlushMs)
	if v, ok := eff["compression.type"]; ok {
		c, err := logstore.ParseCompression(v)
		if err != nil {
			errs = append(errs, err)
		}
		cfg.Compression = c
	}
	level := func(key string, dst *int) {
		n := int64(*dst)
		i64(key, &n)
		*dst = int(n)
	}
	level("compression.gzip.level", &cfg.GzipLevel)
	level("compression.lz4.level", &cfg.LZ4Level)
	level("compression.zstd.level", &cfg.ZstdLevel)
	// Compaction (cleaner.go): the tombstone horizon, the dirty ratio that
	// makes a log cleanable and the compaction lags.
	i64("delete.retention.ms", &cfg.DeleteRetentionMs)
	i64("min.compaction.lag.ms", &cfg.MinCompactionLagMs)
	i64("max.compaction.lag.ms", &cfg.MaxCompactionLagMs)
	if v, ok := eff["min.cleanable.dirty.ratio"]; ok {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("min.cleanable.dirty.ratio: %w", err))
		}
		cfg.MinCleanableDirtyRatio = r
	}
	return cfg, errors.Join(errs...)
}

// cleanupCompacts reports whether a cleanup.policy list includes compact:
// the log then refuses records without a key, as Kafka does.
func cleanupCompacts(policy string) bool {
	for _, p := range strings.Split(policy, ",") {
		if strings.TrimSpace(p) == "compact" {
			return true
		}
	}
	return false
}

// cleanupDeletes reports whether a cleanup.policy list ("delete",
// "compact", "compact,delete") includes delete, the policy under which
// Kafka applies retention.ms and retention.bytes. The effective config
// always holds the key (the topic's value, else log.cleanup.policy), so an
// empty list means neither, and nothing is trimmed by age or size.
func cleanupDeletes(policy string) bool {
	for _, p := range strings.Split(policy, ",") {
		if strings.TrimSpace(p) == "delete" {
			return true
		}
	}
	return false
}

// minInsyncReplicas is the topic's min.insync.replicas.
func (b *Broker) minInsyncReplicas(img *controller.Image, t *controller.Topic) int {
	eff := b.effectiveTopicConfig(img, t)
	n, err := strconv.Atoi(eff["min.insync.replicas"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}
