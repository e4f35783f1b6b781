package controller

// Client-metrics config resources: KIP-714's client metrics subscriptions,
// Kafka's CLIENT_METRICS config resource (type 16), which
// kafka-client-metrics.sh creates, lists and deletes. A subscription is a
// name with the keys metrics, interval.ms and match; it lives in the
// metadata log like topic, broker and group configs (alterConfigsCmd with
// ResourceClientMetrics), so every broker hands out the same subscriptions
// and they survive restarts. A subscription whose every key is deleted is
// gone, as in Kafka.

import (
	"context"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ResourceClientMetrics is a client metrics subscription (KIP-714, Kafka's
// ConfigResource.Type.CLIENT_METRICS).
const ResourceClientMetrics int8 = 16

// AlterClientMetricsConfigs changes the configs of the client metrics
// subscription name, incrementally (IncrementalAlterConfigs) or as a whole
// set (the legacy AlterConfigs), as AlterGroupConfigs does for groups.
//
// validate checks the subscription's whole set of configs as it would be
// after the change (Kafka's ClientMetricsConfigs.validate); its error is
// returned as it is, since Kafka answers some mistakes with
// INVALID_REQUEST and others with INVALID_CONFIG. It runs under the
// decision lock.
func (c *Controller) AlterClientMetricsConfigs(ctx context.Context, name string, ops []ConfigOp, incremental, validateOnly bool, validate func(configs map[string]string) error) error {
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("%w: Subscription name can't be empty", kerr.InvalidRequest)
	}
	current := c.Image().ClientMetricsConfigs[name]
	changes, err := c.resolveConfigChanges(ResourceClientMetrics, current, ops, incremental)
	if err != nil {
		return err
	}
	if validate != nil {
		if err := validate(applyConfigChanges(current, changes)); err != nil {
			return err
		}
	}
	if validateOnly || len(changes) == 0 {
		return nil
	}
	return c.apply(ctx, alterConfigsCmd{ResourceType: ResourceClientMetrics, ResourceName: name, Changes: changes})
}

// setClientMetricsConfig replaces one subscription's config set; an empty
// set removes the subscription. A command changes one resource, so the map
// is copied on every call: subscriptions are few and rarely changed.
func (b *imageBuilder) setClientMetricsConfig(name string, configs map[string]string) {
	next := maps.Clone(b.base.ClientMetricsConfigs)
	if next == nil {
		next = map[string]map[string]string{}
	}
	if len(configs) == 0 {
		delete(next, name)
	} else {
		next[name] = configs
	}
	if len(next) == 0 {
		next = nil // as a snapshot restores it
	}
	b.next.ClientMetricsConfigs = next
}
