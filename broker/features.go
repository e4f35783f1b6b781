package broker

// Feature levels (KIP-584): the finalized levels of metadata.version,
// kraft.version, transaction.version, group.version, share.version,
// streams.version and eligible.leader.replicas.version, kept in the
// metadata image (controller.Image.Features, controller/features.go) and
// advertised in ApiVersions v3+ with the levels this binary supports.
//
// Which levels sluice supports, and the defaults of a new cluster, are
// decided in one table, controller/features.go's supportedFeatures;
// handlers that gate a protocol on a feature read featureLevel, so a
// client sees the protocol that the level it was told about promises.
// UpdateFeatures (57_update_features.go) changes the levels.

import (
	"maps"
	"slices"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

// featureLevel returns the finalized level of the named feature, 0 when it
// is not finalized. Handlers gate protocol versions on it as Kafka's do
// (e.g. transactions v2 at transaction.version >= 2).
func (b *Broker) featureLevel(name string) int16 {
	return controller.FinalizedLevel(b.ctrl.Image(), name)
}

// consumerGroupsEnabled reports whether KIP-848 consumer groups may be
// used: group.version 1 or more, as Kafka's isConsumerGroupProtocolEnabled
// requires (with group.coordinator.rebalance.protocols naming consumer,
// which decides whether ConsumerGroupHeartbeat is registered at all).
// ConsumerGroupHeartbeat and ConsumerGroupDescribe answer
// UNSUPPORTED_VERSION otherwise.
func (b *Broker) consumerGroupsEnabled() bool {
	return b.featureLevel(controller.FeatureGroupVersion) >= 1
}

// registerFeatureHandlers registers UpdateFeatures (57) and gives the
// client router the feature levels ApiVersions reports.
func (b *Broker) registerFeatureHandlers(r quotaRouter) {
	r.Register(57, 0, 2, b.handleUpdateFeatures)
	b.router.SetFeatures(b.apiVersionsFeatures)
}

// apiVersionsFeatures is what ApiVersions reports: this binary's
// supported ranges and the finalized levels of this node's image, whose
// epoch is the image's raft index (Kafka reports its image's offset).
func (b *Broker) apiVersionsFeatures() protocol.Features {
	var f protocol.Features
	for _, s := range controller.SupportedFeatures() {
		f.Supported = append(f.Supported, protocol.SupportedFeature{Name: s.Name, Min: s.Min, Max: s.Max})
	}
	levels, epoch := controller.FinalizedFeatures(b.ctrl.Image())
	f.FinalizedEpoch = epoch
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		f.Finalized = append(f.Finalized, protocol.FinalizedFeature{Name: name, Level: levels[name]})
	}
	return f
}
