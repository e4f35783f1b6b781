package broker

// DescribeConfigs (api key 32), versions 1–4.
//
// Topic resources list every topic config with its effective value and
// where it comes from (set on the topic, a dynamic broker or cluster default,
// the static broker config, or Kafka's default), with synonyms when asked
// (KIP-226) and documentation and types (v3+, KIP-569), as
// kafka-configs.sh --describe --all prints them. Broker resources list the
// broker's configs; an empty broker name lists the cluster-wide dynamic
// defaults only. Broker-logger resources have no entries yet.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDescribeConfigs(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := b.metadata()
	perBroker, clusterDefault := b.dynamicBrokerConfigs(img)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []configEntry
		switch int8(rr.ResourceType) {
		case resourceBrokerLogger:
		default:
			res, err := b.configResource(img, int8(rr.ResourceType), rr.ResourceName)
			if err != nil {
				sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
				resp.Resources = append(resp.Resources, sr)
				continue
			}
			switch {
			case res.Type == resourceTopic:
				entries = toConfigEntries(b.cfg.DescribeTopic(img.Topics[res.Name].Configs, perBroker, clusterDefault))
			case res.Name == "":
				entries = clusterDefaultEntries(b.cfg.DescribeBroker(nil, clusterDefault))
			default:
				entries = toConfigEntries(b.cfg.DescribeBroker(perBroker, clusterDefault))
			}
		}
		sr.Configs = describeEntries(entries, rr.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation, req.Version)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
