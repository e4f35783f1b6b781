package controller

// Group configs: KIP-848's dynamic group configuration, Kafka's GROUP
// config resource (type 32). They live in the metadata log like topic and
// broker configs (alterConfigsCmd with ResourceGroup), so every broker
// sees them and they survive restarts. A group id needs no group to have
// configs, and DeleteGroups leaves them in place, as Kafka 4.4 does (its
// group coordinator deletes the group's offsets and records, not the
// ConfigRecords the controller holds).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// GroupConfig returns the configs explicitly set on group; nil if none.
func (img *Image) GroupConfig(group string) map[string]string {
	return img.GroupConfigs[group]
}

// AlterGroupConfigs changes the configs set on group, incrementally
// (IncrementalAlterConfigs) or as a whole set (the legacy AlterConfigs),
// as AlterConfigs does for topics and brokers.
//
// validate checks the group's whole set of explicitly set configs as it
// would be after the change, as Kafka's controller validates a group
// resource (its defaults come from the broker config, which only the
// caller knows); its error's text becomes the INVALID_CONFIG message. It
// runs under the decision lock, so two concurrent changes cannot both pass
// it against the same configs.
func (c *Controller) AlterGroupConfigs(ctx context.Context, group string, ops []ConfigOp, incremental, validateOnly bool, validate func(configs map[string]string) error) error {
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return err
	}
	if group == "" {
		return fmt.Errorf("%w: Default group resources are not allowed.", kerr.InvalidRequest)
	}
	current := c.Image().GroupConfigs[group]
	changes, err := c.resolveConfigChanges(ResourceGroup, current, ops, incremental)
	if err != nil {
		return err
	}
	if validate != nil {
		if err := validate(applyConfigChanges(current, changes)); err != nil {
			return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
		}
	}
	if validateOnly || len(changes) == 0 {
		return nil
	}
	return c.apply(ctx, alterConfigsCmd{ResourceType: ResourceGroup, ResourceName: group, Changes: changes})
}
