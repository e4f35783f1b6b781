package broker

// DescribeConfigs (api key 32), versions 1–4.
//
// Topic resources list every topic config with its effective value and
// where it comes from (set on the topic, a dynamic broker or cluster default,
// the static broker config, or Kafka's default), with synonyms when asked
// (KIP-226) and documentation and types (v3+, KIP-569), as
// kafka-configs.sh --describe --all prints them. Broker resources list the
// broker's configs; an empty broker name lists the cluster-wide dynamic
// defaults only. Group resources (32, KIP-848's dynamic group
// configuration) list every group config Kafka describes, set on the group
// (GROUP_CONFIG) or supplied by its broker synonym, for any non-empty
// group id whether or not the group exists, as Kafka does
// (group_configs.go). Client-metrics resources (16, KIP-714's client
// metrics subscriptions) list the keys set on the subscription, as Kafka
// does (telemetry_subscriptions.go). Broker-logger resources have no
// entries yet; one must
// name this broker (INVALID_REQUEST otherwise, as Kafka's ConfigHelper
// answers). A topic name that cannot be a topic is INVALID_TOPIC_EXCEPTION.
//
// A resource named more than once is answered once, where it first
// appears, with the union of the config names its copies ask for (all of
// them if any copy asks for all). Kafka answers every copy, but one
// resource's answer with documentation is some 3 KB for a request entry of
// a few bytes, so copies would let a small request make a huge answer;
// clients match answers to resources by type and name, and get every
// resource they asked for. An unknown topic is answered without an error
// message, as in Kafka, and error messages stop after the first
// describeMessageBudget bytes of them, so a request of many distinct bad
// names cannot make an answer much larger than itself either.
//
// A resource needs DESCRIBE_CONFIGS on the topic, on the group, or on the
// cluster for broker and broker-logger resources, or it is
// TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED or
// CLUSTER_AUTHORIZATION_FAILED, before anything else about it is looked
// at (ConfigHelper.handleDescribeConfigsRequest, authorize_requests.go).

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDescribeConfigs(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := b.metadata()
	perBroker, clusterDefault := b.dynamicBrokerConfigs(img)
	messages := messageBudget(describeMessageBudget)
	firsts, next := repeatedKeys(len(req.Resources), func(i, j int) int {
		a, b := &req.Resources[i], &req.Resources[j]
		if a.ResourceType != b.ResourceType {
			return int(a.ResourceType) - int(b.ResourceType)
		}
		return strings.Compare(a.ResourceName, b.ResourceName)
	})
	for i := range firstEntries(len(req.Resources), firsts) {
		rr := &req.Resources[i]
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if denied := b.configResourceDenied(r, kmsg.ACLOperationDescribeConfigs, int8(rr.ResourceType), rr.ResourceName); denied != nil {
			sr.ErrorCode, sr.ErrorMessage = denied.Code, messages.take(&denied.Description)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		var entries []configEntry
		switch int8(rr.ResourceType) {
		case resourceBrokerLogger:
			if err := b.checkBrokerLoggerResource(rr.ResourceName); err != nil {
				sr.ErrorCode = errorCode(err)
				sr.ErrorMessage = messages.take(errorMessage(err))
				resp.Resources = append(resp.Resources, sr)
				continue
			}
		case resourceClientMetrics:
			configs, err := describeClientMetricsConfigs(img, rr.ResourceName, rr.ConfigNames) // telemetry_subscriptions.go
			if err != nil {
				sr.ErrorCode = errorCode(err)
				sr.ErrorMessage = messages.take(errorMessage(err))
			}
			sr.Configs = configs
			resp.Resources = append(resp.Resources, sr)
			continue
		case resourceGroup:
			var err error
			if entries, err = b.describeGroupConfigs(img, rr.ResourceName); err != nil {
				sr.ErrorCode = errorCode(err)
				sr.ErrorMessage = messages.take(errorMessage(err))
				resp.Resources = append(resp.Resources, sr)
				continue
			}
		default:
			res, err := b.configResource(img, int8(rr.ResourceType), rr.ResourceName)
			if err != nil {
				sr.ErrorCode = errorCode(err)
				if sr.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					sr.ErrorMessage = messages.take(errorMessage(err))
				}
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
		sr.Configs = describeEntries(entries, wantedConfigs(req.Resources, i, next, entries), req.IncludeSynonyms, req.IncludeDocumentation, req.Version)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// describeMessageBudget is how many bytes of error messages one
// DescribeConfigs answer carries; later errors come without a message.
const describeMessageBudget = 64 << 10

// wantedConfigs returns the config names asked for by resource i of
// resources and its copies (linked by next, nil when nothing repeats), kept
// only where entries has a config of that name, or nil when any copy asks
// for every config. The set is as small as the resource's configs, however
// many names the request repeats.
func wantedConfigs(resources []kmsg.DescribeConfigsRequestResource, i int, next []int32, entries []configEntry) map[string]bool {
	var known, want map[string]bool
	for k := int32(i); k >= 0; {
		names := resources[k].ConfigNames
		if len(names) == 0 {
			return nil
		}
		if want == nil {
			known = make(map[string]bool, len(entries))
			for _, e := range entries {
				known[e.Name] = true
			}
			want = make(map[string]bool)
		}
		for _, name := range names {
			if known[name] {
				want[name] = true
			}
		}
		if next == nil {
			break
		}
		k = next[k]
	}
	return want
}
