package broker

// DescribeLogDirs (api key 35), versions 1–5.
//
// Lists every log directory of this broker (log.dirs, log_dirs_set.go) in
// the configured order: an offline one with KAFKA_STORAGE_ERROR and no
// replicas, an online one with the replicas it holds (all, or the topics
// and partitions asked for), each with its log's size, its offset lag and
// whether it is the future replica of a move between directories
// (AlterReplicaLogDirs, 34_alter_replica_log_dirs.go), and from v4 the file
// system's total and usable bytes (KIP-827). The offset lag is Kafka's: a
// future replica's distance behind the current one, a current replica's
// log end behind its high watermark (0 when it is not behind).
//
// DESCRIBE on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED with no
// directories, authorize_requests.go).

import (
	"context"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDescribeLogDirs(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !b.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}

	want := func(tp logstore.TopicPartition) bool { return true }
	if req.Topics != nil {
		asked := make(map[logstore.TopicPartition]bool)
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				asked[logstore.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
		want = func(tp logstore.TopicPartition) bool { return asked[tp] }
	}

	for _, ld := range b.dir.dirs {
		resp.Dirs = append(resp.Dirs, b.describeLogDir(ld, want))
	}
	return resp, nil
}

// describeLogDir describes one directory: KAFKA_STORAGE_ERROR if it is
// offline, else its file system's sizes and the replicas (current and
// future) it holds that want selects.
func (b *Broker) describeLogDir(ld *logDir, want func(logstore.TopicPartition) bool) kmsg.DescribeLogDirsResponseDir {
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = ld.path
	dir.TotalBytes, dir.UsableBytes = -1, -1
	if b.dir.dirOffline(ld) != nil {
		dir.ErrorCode = kerr.KafkaStorageError.Code
		return dir
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(ld.path, &st); err == nil {
		dir.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
		dir.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
	}
	byTopic := make(map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition)
	for _, r := range b.dir.replicasIn(ld) {
		if !want(r.tp) {
			continue
		}
		sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		sp.Partition = r.tp.Partition
		sp.Size = r.size
		sp.IsFuture = r.future
		// Kafka's getLogEndOffsetLag: a future replica's lag behind the
		// current one, a current replica's behind its high watermark.
		if cur := b.partition(r.tp); cur != nil {
			if r.future {
				sp.OffsetLag = max(cur.log.LogEndOffset()-r.logEnd, 0)
			} else {
				sp.OffsetLag = max(cur.highWatermark()-r.logEnd, 0)
			}
		} else {
			sp.OffsetLag = -1
		}
		byTopic[r.tp.Topic] = append(byTopic[r.tp.Topic], sp)
	}

	names := make([]string, 0, len(byTopic))
	for name := range byTopic {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		parts := byTopic[name]
		slices.SortFunc(parts, func(x, y kmsg.DescribeLogDirsResponseDirTopicPartition) int {
			if x.Partition != y.Partition {
				return int(x.Partition - y.Partition)
			}
			if x.IsFuture == y.IsFuture {
				return 0
			}
			if x.IsFuture {
				return 1
			}
			return -1
		})
		t := kmsg.NewDescribeLogDirsResponseDirTopic()
		t.Topic = name
		t.Partitions = parts
		dir.Topics = append(dir.Topics, t)
	}
	return dir
}
