package broker_test

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// countFullISRs asks the node cl reaches for the metadata of topics with a
// Metadata request of its own (kadm answers from kgo's metadata cache,
// up to MetadataMinAge old) and counts the partitions with ISRs of
// replicas members among all it lists.
func countFullISRs(ctx context.Context, cl *kgo.Client, topics []string, replicas int) (full, all int, err error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	md, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, 0, err
	}
	for _, td := range md.Topics {
		if err := kerr.ErrorForCode(td.ErrorCode); err != nil {
			return 0, 0, err
		}
		for _, p := range td.Partitions {
			all++
			if p.ErrorCode == 0 && len(p.ISR) == replicas {
				full++
			}
		}
	}
	return full, all, nil
}
