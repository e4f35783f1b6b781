package broker

// Moving a replica between this node's log directories
// (AlterReplicaLogDirs, 34_alter_replica_log_dirs.go).

// futuresInLocked lists the future logs held in ld. Lock should be held
// (logDirs.mu).
func (s *logDirs) futuresInLocked(ld *logDir) []dirReplica { return nil }
