package broker

// AlterReplicaLogDirs (api key 34), versions 1–2 (KIP-113; v2 flexible),
// the range Kafka 4.4 advertises.
//
// Moves replicas of this node to another of its log directories
// (log_dirs_move.go): the answer comes once the move has started, and
// DescribeLogDirs shows the future replica, its size and offset lag, until
// it is swapped in. kafka-reassign-partitions.sh sends it for the
// "log_dirs" of its JSON, and keeps sending it for a replica this node
// does not hold yet until the reassignment has created it.
//
// Per partition, as Kafka's ReplicaManager.alterReplicaLogDirs answers:
// LOG_DIR_NOT_FOUND for a path that is not one of log.dirs (an absolute
// path, compared as Kafka compares File.getAbsolutePath);
// KAFKA_STORAGE_ERROR when the directory is offline, the replica is
// offline, or another directory is offline (no future log is made while
// one is, so a replica never has copies in two directories it cannot see);
// REPLICA_NOT_AVAILABLE when this node holds no replica of the partition
// (the directory is remembered: the replica is created there if it is
// assigned here later); NONE when the replica is there already or its
// move has started. A second request for another directory stops the
// running move and starts the new one.
//
// ALTER on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED per
// partition otherwise), as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleAlterReplicaLogDirs(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	allowed := b.authorizedCluster(r, kmsg.ACLOperationAlter)
	byTopic := map[string]int{}
	answer := func(topic string, p int32, code int16) {
		i, ok := byTopic[topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[topic] = i
			t := kmsg.NewAlterReplicaLogDirsResponseTopic()
			t.Topic = topic
			resp.Topics = append(resp.Topics, t)
		}
		sp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		sp.Partition, sp.ErrorCode = p, code
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
	}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				code := kerr.ClusterAuthorizationFailed.Code
				if allowed {
					code = b.alterReplicaLogDir(logstore.TopicPartition{Topic: t.Topic, Partition: p}, d.Dir)
				}
				answer(t.Topic, p, code)
			}
		}
	}
	return resp, nil
}

// alterReplicaLogDir starts moving tp's replica to the directory path and
// returns the partition's error code (see the file comment).
func (b *Broker) alterReplicaLogDir(tp logstore.TopicPartition, path string) int16 {
	dirs := b.dir
	ld := dirs.dirByPath(path)
	if ld == nil {
		return kerr.LogDirNotFound.Code
	}
	if dirs.dirOffline(ld) != nil || dirs.Offline(tp) != nil {
		return kerr.KafkaStorageError.Code
	}
	b.waitReplicaOpen(tp) // a replica whose log is being opened is about to be served
	p := b.partition(tp)
	if p == nil {
		dirs.setPreferred(tp, ld)
		return kerr.ReplicaNotAvailable.Code
	}
	if dirs.holder(tp) == ld {
		dirs.stopMove(tp) // back where it is: a move elsewhere ends
		return 0
	}
	if dirs.anyOffline() {
		return kerr.KafkaStorageError.Code
	}
	if err := dirs.startMove(tp, ld); err != nil {
		return kerr.ReplicaNotAvailable.Code
	}
	return 0
}
