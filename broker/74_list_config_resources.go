package broker

// ListConfigResources (api key 74), versions 0–1 (KIP-1000, KIP-1142).
//
// v0 was ListClientMetricsResources: the client-metrics resources, the
// client metrics subscriptions set with kafka-client-metrics.sh
// (controller.Image.ClientMetricsConfigs, telemetry_subscriptions.go), by
// name. v1 lists the config resources of the asked types, or of every type
// when none is asked: those subscriptions, every topic (internal ones included),
// every registered broker as a broker and as a broker-logger resource, and
// every group id with group configs set (controller.Image.GroupConfigs),
// whether or not the group exists, as a Kafka 4.4 broker lists them. Any
// other type is UNSUPPORTED_VERSION, Kafka's answer.
//
// kafka-configs.sh --entity-type groups --describe asks for it when the
// group it describes is not among ListGroups' groups: it is how a group id
// that only has configs is found.
//
// DESCRIBE_CONFIGS on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED,
// authorize_requests.go).

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleListConfigResources(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if !b.authorizedCluster(r, kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	types := req.ResourceTypes
	if req.Version == 0 {
		types = []int8{resourceClientMetrics}
	}
	if len(types) == 0 {
		types = []int8{resourceGroup, resourceClientMetrics, resourceBrokerLogger, resourceBroker, resourceTopic}
	}
	img := b.metadata()
	add := func(typ int8, names []string) {
		for _, name := range names {
			cr := kmsg.NewListConfigResourcesResponseConfigResource()
			cr.Type, cr.Name = typ, name
			resp.ConfigResources = append(resp.ConfigResources, cr)
		}
	}
	for _, typ := range types {
		switch typ {
		case resourceGroup, resourceBroker, resourceBrokerLogger, resourceTopic, resourceClientMetrics:
			if img == nil {
				continue
			}
			var names []string
			switch typ {
			case resourceGroup:
				names = slices.Sorted(maps.Keys(img.GroupConfigs))
			case resourceClientMetrics:
				names = slices.Sorted(maps.Keys(img.ClientMetricsConfigs))
			case resourceTopic:
				names = slices.Sorted(maps.Keys(img.Topics))
			default:
				for _, id := range slices.Sorted(maps.Keys(img.Brokers)) {
					names = append(names, strconv.Itoa(int(id)))
				}
			}
			add(typ, names)
		default:
			resp.ConfigResources = nil
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
	}
	return resp, nil
}
