package broker

// Several log directories per node (JBOD, KIP-858): the registration of
// AlterReplicaLogDirs (34), which moves a replica between this node's log
// directories. DescribeLogDirs (35) is registered with the other admin
// APIs in handlers.go.

// registerLogDirHandlers registers the log-directory APIs. None is served
// yet: a sluice node has one log directory (issue 20).
func (b *Broker) registerLogDirHandlers(r quotaRouter) {}
