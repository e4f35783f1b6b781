package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ConfigResource names what AlterConfigs changes.
type ConfigResource struct {
	// Type is ResourceTopic (2), ResourceBroker (4) or ResourceGroup (32).
	Type int8
	// Name is the topic name, or for a broker its id in decimal, or "" for
	// the cluster-wide dynamic broker default, or the group id.
	Name string
}

// Incremental config operations, IncrementalAlterConfigs' op codes (KIP-339).
const (
	OpSet      int8 = 0
	OpDelete   int8 = 1
	OpAppend   int8 = 2
	OpSubtract int8 = 3
)

// ConfigOp is one config change. For non-incremental AlterConfigs Op is
// ignored and every op is a SET.
type ConfigOp struct {
	Key   string
	Value *string
	Op    int8
}

// AlterConfigs changes one resource's explicitly set configs.
//
// Incremental (IncrementalAlterConfigs): each op sets, deletes, or appends
// to / subtracts from a comma-separated list value; keys not named keep their
// values. Non-incremental (the legacy AlterConfigs): the given keys become
// the resource's whole config set and every other explicitly set key is
// removed, which is why Kafka deprecated it.
//
// APPEND and SUBTRACT work on the explicitly set value only; a config that
// is unset is treated as an empty list rather than as its default, because
// the controller does not know defaults (the broker's config package does).
func (c *Controller) AlterConfigs(ctx context.Context, res ConfigResource, ops []ConfigOp, incremental, validateOnly bool) error {
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return err
	}
	img := c.Image()

	var (
		current  map[string]string
		validate func(key, value string) error
	)
	switch res.Type {
	case ResourceTopic:
		t, ok := img.Topics[res.Name]
		if !ok {
			return fmt.Errorf("%w: Topic %s does not exist.", kerr.UnknownTopicOrPartition, res.Name)
		}
		current, validate = t.Configs, c.cfg.ValidateTopicConfig
	case ResourceBroker:
		if res.Name != "" {
			id, err := strconv.ParseInt(res.Name, 10, 32)
			if err != nil || id < 0 {
				return fmt.Errorf("%w: Invalid broker name %q: it must be a node id or empty for the cluster default.", kerr.InvalidRequest, res.Name)
			}
		}
		current, validate = img.BrokerConfigs[res.Name], c.cfg.ValidateBrokerConfig
	default:
		return fmt.Errorf("%w: Unsupported config resource type %d.", kerr.InvalidRequest, res.Type)
	}

	changes, err := c.resolveConfigChanges(res.Type, current, ops, incremental)
	if err != nil {
		return err
	}
	for key, v := range changes {
		if v == nil {
			continue
		}
		if err := validateConfig(validate, key, *v); err != nil {
			return err
		}
	}
	if validateOnly || len(changes) == 0 {
		return nil
	}
	if err := c.apply(ctx, alterConfigsCmd{ResourceType: res.Type, ResourceName: res.Name, Changes: changes}); err != nil {
		return err
	}
	if _, ok := changes[minInsyncKey]; ok {
		// An ELR decided under the old min ISR may lack records
		// committed under the new one (elr.go).
		if err := c.clearELRs(ctx, res); err != nil {
			c.log.Warn("clearing eligible leader replicas after a min.insync.replicas change failed", "resource", res.Name, "err", err)
		}
	}
	// unclean.leader.election.enable may have changed: offline partitions
	// may elect now.
	c.pokeReconcile()
	return nil
}

// resolveConfigChanges turns the ops of one resource into per-key changes
// of its explicitly set configs current (a nil value deletes the key): the
// duplicate-key and null-value checks, whole-set replacement for the legacy
// AlterConfigs, and APPEND / SUBTRACT resolved against the set value.
func (c *Controller) resolveConfigChanges(resourceType int8, current map[string]string, ops []ConfigOp, incremental bool) (map[string]*string, error) {
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Key] {
			return nil, fmt.Errorf("%w: Error due to duplicate config keys: %s", kerr.InvalidRequest, op.Key)
		}
		seen[op.Key] = true
	}

	changes := map[string]*string{}
	if !incremental {
		for key := range current {
			if !seen[key] {
				changes[key] = nil
			}
		}
	}
	for _, op := range ops {
		kind := op.Op
		if !incremental {
			kind = OpSet
		}
		if kind != OpDelete && op.Value == nil {
			return nil, fmt.Errorf("%w: Null value not supported for : %s", kerr.InvalidRequest, op.Key)
		}
		switch kind {
		case OpSet:
			changes[op.Key] = op.Value
		case OpDelete:
			if _, ok := current[op.Key]; ok {
				changes[op.Key] = nil
			}
		case OpAppend, OpSubtract:
			if c.cfg.IsListConfig != nil && !c.cfg.IsListConfig(resourceType, op.Key) {
				// Kafka's messages: its controller's for a topic or
				// a group, its brokers' ConfigAdminManager's for a
				// broker.
				verb := "append"
				if kind == OpSubtract {
					verb = "subtract"
				}
				if resourceType == ResourceTopic || resourceType == ResourceGroup || resourceType == ResourceClientMetrics {
					return nil, fmt.Errorf("%w: Can't %s to key %s because its type is not LIST.", kerr.InvalidConfig, strings.ToUpper(verb), op.Key)
				}
				return nil, fmt.Errorf("%w: Config value %s is not allowed for config key: %s", kerr.InvalidConfig, verb, op.Key)
			}
			v := alterList(current[op.Key], *op.Value, kind == OpAppend)
			if v == "" && kind == OpSubtract {
				changes[op.Key] = nil
			} else {
				changes[op.Key] = &v
			}
		default:
			return nil, fmt.Errorf("%w: Unknown config operation %d for key %s.", kerr.InvalidRequest, op.Op, op.Key)
		}
	}
	return changes, nil
}

// alterList appends the comma-separated items of value to the list current
// (skipping items already present), or removes them from it.
func alterList(current, value string, add bool) string {
	list := splitList(current)
	for _, item := range splitList(value) {
		i := slices.Index(list, item)
		switch {
		case add && i < 0:
			list = append(list, item)
		case !add && i >= 0:
			list = slices.Delete(list, i, i+1)
		}
	}
	return strings.Join(list, ",")
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
