package broker

// registerShareHandlers registers the share-group APIs (KIP-932):
// ShareGroupHeartbeat (76), ShareGroupDescribe (77), ShareFetch (78),
// ShareAcknowledge (79), the share coordinator's state APIs (83-87) and
// the share-group offset admin APIs (90-92).
func (b *Broker) registerShareHandlers(r quotaRouter) {}
