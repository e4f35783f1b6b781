package broker

// Group config resources (type 32, KIP-848's dynamic group configuration):
// DescribeConfigs, IncrementalAlterConfigs and AlterConfigs of a group id,
// and the settings a KIP-848 consumer group runs with.
//
// The configs live in the metadata log (controller.Image.GroupConfigs), so
// every broker describes the same values and they survive restarts. The key
// table, defaults and checks are config/group_keys.go; the active
// controller's broker validates a change against its own broker config
// (the group.consumer.min/max.* bounds), as Kafka's controller does. A
// group id needs no group to have configs, and DeleteGroups keeps them, as
// in Kafka 4.4.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/groups"
)

// describeGroupConfigs lists the group configs of group as Kafka describes
// them; an empty group id is INVALID_REQUEST, as in Kafka's ConfigHelper.
func (b *Broker) describeGroupConfigs(img *controller.Image, group string) ([]configEntry, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: Group name must not be empty", kerr.InvalidRequest)
	}
	perBroker, clusterDefault := b.dynamicBrokerConfigs(img)
	var set map[string]string
	if img != nil {
		set = img.GroupConfigs[group]
	}
	return b.cfg.DescribeGroup(set, perBroker, clusterDefault), nil
}

// alterGroupConfigs is Controller.AlterGroupConfigs on the active
// controller: here when this node is it, else forwarded to it as an
// (Incremental)AlterConfigs request, which its broker handles through this
// same function.
func (b *Broker) alterGroupConfigs(ctx context.Context, group string, ops []controller.ConfigOp, incremental, validateOnly bool) error {
	var result error
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			result = b.ctrl.AlterGroupConfigs(ctx, group, ops, incremental, validateOnly, b.validateGroupConfigs)
		} else {
			res := controller.ConfigResource{Type: resourceGroup, Name: group}
			result = b.forwardAlterConfigs(ctx, id, res, ops, incremental, validateOnly)
		}
		return isNotController(result)
	})
	return result
}

// validateGroupConfigs checks a group's configs after a change against
// this broker's config (config.Broker.ValidateGroup).
func (b *Broker) validateGroupConfigs(configs map[string]string) error {
	perBroker, clusterDefault := b.dynamicBrokerConfigs(b.metadata())
	return b.cfg.ValidateGroup(configs, perBroker, clusterDefault)
}

// consumerGroupSettings returns the session timeout and heartbeat interval
// KIP-848 consumer group runs with now: its group configs where set, else
// the broker's group.consumer.* values. The ConsumerGroupHeartbeat handler
// passes them with every heartbeat; it is also the function for
// groups.Config.ConsumerGroupSettings (members restored at load), which the
// coordinator's wiring in groups.go does not pass yet.
func (b *Broker) consumerGroupSettings(group string) groups.ConsumerGroupSettings {
	var set map[string]string
	if img := b.metadata(); img != nil {
		set = img.GroupConfigs[group]
	}
	t := b.cfg.ConsumerGroupTimeouts(set)
	return groups.ConsumerGroupSettings{
		SessionTimeout:    time.Duration(t.SessionTimeoutMs) * time.Millisecond,
		HeartbeatInterval: time.Duration(t.HeartbeatIntervalMs) * time.Millisecond,
	}
}
