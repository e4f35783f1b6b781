package broker

import (
	"testing"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
)

// The log opener resolves a topic's settings once per burst of logs
// (topicSettingsCache); what it hands out must still be the topic's
// settings in the image being installed against: a topic whose configs
// changed is a new *controller.Topic, and new dynamic broker configs or
// feature levels change every topic.
func TestTopicSettingsCacheFollowsImage(t *testing.T) {
	b := &Broker{cfg: config.Default()}
	b.cfg.NodeID = 1
	topic := &controller.Topic{Name: "t"}
	img := &controller.Image{Topics: map[string]*controller.Topic{"t": topic}}
	var c topicSettingsCache
	def := c.of(b, img, topic)
	if def.err != nil || def.minInsync != 1 {
		t.Fatalf("defaults: min.insync.replicas %d, err %v", def.minInsync, def.err)
	}
	if again := c.of(b, img, topic); again != def {
		t.Fatalf("the same topic in the same image resolved twice")
	}

	// A cluster-default broker config in a later image.
	img2 := &controller.Image{Topics: img.Topics, BrokerConfigs: map[string]map[string]string{"": {"log.retention.ms": "5000", "min.insync.replicas": "2"}}}
	if got := c.of(b, img2, topic); got.logCfg.RetentionMs != 5000 || got.minInsync != 2 {
		t.Fatalf("after a cluster default: retention.ms %d, min.insync.replicas %d; want 5000, 2", got.logCfg.RetentionMs, got.minInsync)
	}

	// The topic's own config, set later: a new Topic in a new image.
	topic3 := &controller.Topic{Name: "t", Configs: map[string]string{"retention.ms": "7"}}
	img3 := &controller.Image{Topics: map[string]*controller.Topic{"t": topic3}, BrokerConfigs: img2.BrokerConfigs}
	if got := c.of(b, img3, topic3); got.logCfg.RetentionMs != 7 || got.minInsync != 2 {
		t.Fatalf("after a topic config: retention.ms %d, min.insync.replicas %d; want 7, 2", got.logCfg.RetentionMs, got.minInsync)
	}

	// Eligible leader replicas turned on: the high watermark's strict
	// minimum ISR follows min.insync.replicas.
	img4 := &controller.Image{Topics: img3.Topics, BrokerConfigs: img2.BrokerConfigs, Features: map[string]int16{elrFeature: 1}}
	if got := c.of(b, img4, topic3); got.hwMinISR != 2 {
		t.Fatalf("with ELR: strict min ISR %d, want 2", got.hwMinISR)
	}
}
