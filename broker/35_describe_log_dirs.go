package broker

// DescribeLogDirs (api key 35), versions 1–5.
//
// Lists this broker's log directory with the size of each partition's log
// (all partitions, or the topics and partitions asked for), and from v4 the
// file system's total and usable bytes (KIP-827). OffsetLag is 0: sluice has
// no future (moving) replicas inside a broker.
//
// DESCRIBE on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED with no
// directories, authorize_requests.go).

import (
	"context"
	"path/filepath"
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

	dir := kmsg.NewDescribeLogDirsResponseDir()
	path, err := filepath.Abs(b.dir.Path())
	if err != nil {
		path = b.dir.Path()
	}
	dir.Dir = path
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err == nil {
		dir.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
		dir.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
	} else {
		dir.TotalBytes, dir.UsableBytes = -1, -1
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

	b.mu.RLock()
	byTopic := make(map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition)
	for tp, p := range b.partitions {
		if !want(tp) {
			continue
		}
		sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		sp.Partition = tp.Partition
		sp.Size = p.log.Size()
		byTopic[tp.Topic] = append(byTopic[tp.Topic], sp)
	}
	b.mu.RUnlock()

	names := make([]string, 0, len(byTopic))
	for name := range byTopic {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		parts := byTopic[name]
		slices.SortFunc(parts, func(x, y kmsg.DescribeLogDirsResponseDirTopicPartition) int { return int(x.Partition - y.Partition) })
		t := kmsg.NewDescribeLogDirsResponseDirTopic()
		t.Topic = name
		t.Partitions = parts
		dir.Topics = append(dir.Topics, t)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}
