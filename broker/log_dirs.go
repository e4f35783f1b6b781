package broker

// Several log directories per node (JBOD, KIP-858, log_dirs_set.go): the
// registration of AlterReplicaLogDirs (34, 34_alter_replica_log_dirs.go),
// which moves a replica between this node's log directories
// (log_dirs_move.go). DescribeLogDirs (35) is registered with the other admin
// APIs in handlers.go.

// registerLogDirHandlers registers the log-directory APIs.
func (b *Broker) registerLogDirHandlers(r quotaRouter) {
	r.Register(34, 1, 2, b.handleAlterReplicaLogDirs)
}
