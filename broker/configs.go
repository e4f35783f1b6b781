package broker

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
)

// Config resource types of DescribeConfigs / AlterConfigs.
const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
	resourceGroup        = 32
)

// configResource checks a config resource named in a request and turns it
// into the controller's form. A topic name that cannot be a topic is
// INVALID_TOPIC_EXCEPTION with Kafka's message (Topic.validate), before the
// topic is looked up. A broker resource must name this broker or be empty
// (the cluster-wide default), as in Kafka, because admin clients send a
// broker's config requests to that broker.
func (b *Broker) configResource(img *controller.Image, typ int8, name string) (controller.ConfigResource, error) {
	switch typ {
	case resourceTopic:
		if err := controller.ValidateTopicName(name); err != nil {
			return controller.ConfigResource{}, err
		}
		if img.Topics[name] == nil {
			return controller.ConfigResource{}, fmt.Errorf("%w: topic %s does not exist", kerr.UnknownTopicOrPartition, name)
		}
		return controller.ConfigResource{Type: typ, Name: name}, nil
	case resourceBroker:
		if name != "" {
			id, err := brokerResourceID(name)
			if err != nil {
				return controller.ConfigResource{}, err
			}
			if id != b.cfg.NodeID {
				return controller.ConfigResource{}, fmt.Errorf("%w: Unexpected broker id, expected %d or empty string, but received %s", kerr.InvalidRequest, b.cfg.NodeID, name)
			}
		}
		return controller.ConfigResource{Type: typ, Name: name}, nil
	}
	return controller.ConfigResource{}, fmt.Errorf("%w: unsupported resource type %d", kerr.InvalidRequest, typ)
}

// brokerResourceID parses the broker id that names a broker or
// broker-logger config resource, with the message of Kafka's ConfigHelper.
func brokerResourceID(name string) (int32, error) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: Broker id must be an integer, but it is: %s", kerr.InvalidRequest, name)
	}
	return int32(id), nil
}

// checkBrokerLoggerResource checks that a broker-logger resource names this
// broker, as Kafka's ConfigHelper does: it may not be empty.
func (b *Broker) checkBrokerLoggerResource(name string) error {
	if name == "" {
		return fmt.Errorf("%w: Broker id must not be empty", kerr.InvalidRequest)
	}
	id, err := brokerResourceID(name)
	if err != nil {
		return err
	}
	if id != b.cfg.NodeID {
		return fmt.Errorf("%w: Unexpected broker id, expected %d but received %s", kerr.InvalidRequest, b.cfg.NodeID, name)
	}
	return nil
}

// describeEntries turns config entries into DescribeConfigs' form.
// want lists the config names asked for; nil asks for every config.
func describeEntries(entries []configEntry, want map[string]bool, synonyms, docs bool, version int16) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, e := range entries {
		if want != nil && !want[e.Name] {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = e.Name
		c.Value = e.Value
		c.ReadOnly = e.ReadOnly
		c.Source = kmsg.ConfigSource(e.Source)
		c.IsDefault = e.Source == int8(kmsg.ConfigSourceDefaultConfig)
		c.IsSensitive = e.Sensitive
		if e.Sensitive {
			c.Value = nil
		}
		c.ConfigType = kmsg.ConfigType(e.Type)
		if docs && e.Doc != "" {
			doc := e.Doc
			c.Documentation = &doc
		}
		if synonyms && version >= 1 {
			for _, s := range e.Synonyms {
				c.ConfigSynonyms = append(c.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{
					Name: s.Name, Value: s.Value, Source: kmsg.ConfigSource(s.Source),
				})
			}
		}
		out = append(out, c)
	}
	return out
}

// configEntry is one described config as the config package reports it.
type configEntry = config.Entry

func toConfigEntries(entries []config.Entry) []configEntry { return entries }

// clusterDefaultEntries keeps only the cluster-wide dynamic defaults, which
// is what Kafka describes for a broker resource with an empty name.
func clusterDefaultEntries(entries []config.Entry) []configEntry {
	var out []configEntry
	for _, e := range entries {
		if e.Source == int8(kmsg.ConfigSourceDynamicDefaultBrokerConfig) {
			out = append(out, e)
		}
	}
	return out
}

// isListConfig reports whether a config is list-valued, which
// IncrementalAlterConfigs' APPEND and SUBTRACT require.
func isListConfig(resourceType int8, key string) bool {
	switch resourceType {
	case resourceTopic:
		for _, k := range config.TopicKeys() {
			if k.Name == key {
				return k.Type == config.TypeList
			}
		}
	case resourceBroker:
		for _, k := range config.BrokerKeys() {
			if k.Name == key {
				return k.Type == config.TypeList
			}
		}
	case resourceGroup:
		k, ok := config.LookupGroupKey(key)
		return ok && k.Type == config.TypeList
	case resourceClientMetrics:
		return key == clientMetricsMetrics || key == clientMetricsMatch
	}
	return false
}

// checkClusterDefault rejects cluster-wide default changes of keys that can
// only be set per broker; Kafka answers those with INVALID_REQUEST.
func checkClusterDefault(res controller.ConfigResource, ops []controller.ConfigOp) error {
	if res.Type != resourceBroker || res.Name != "" {
		return nil
	}
	for _, op := range ops {
		value := ""
		if op.Value != nil {
			value = *op.Value
		}
		if op.Op == controller.OpDelete {
			continue
		}
		if err := config.ValidateClusterDefault(op.Key, value); err != nil {
			return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
		}
	}
	return nil
}

// messageBudget is what is left of the bytes of error messages one answer
// may carry, so that an answer to many bad entries stays about the size
// of the request: past it, errors go without their message.
type messageBudget int

// take returns msg if it fits in what is left of the budget, and nil
// otherwise.
func (m *messageBudget) take(msg *string) *string {
	if msg == nil || len(*msg) > int(*m) {
		return nil
	}
	*m -= messageBudget(len(*msg))
	return msg
}

// repeatedResources marks the config resources named more than once among
// a request's n resources, each given by key as its type and name.
// AlterConfigs and IncrementalAlterConfigs refuse every copy of such a
// resource with INVALID_REQUEST, as Kafka's ConfigAdminManager does.
func repeatedResources(n int, key func(i int) (int8, string)) []bool {
	repeated := make([]bool, n)
	sortedGroups(n, func(i, j int) int {
		ti, ni := key(i)
		tj, nj := key(j)
		if ti != tj {
			return int(ti) - int(tj)
		}
		return strings.Compare(ni, nj)
	}, func(group []int32) {
		if len(group) > 1 {
			for _, i := range group {
				repeated[i] = true
			}
		}
	})
	return repeated
}

// errRepeatedResource is Kafka's answer to a resource named twice in one
// AlterConfigs or IncrementalAlterConfigs request.
var errRepeatedResource = fmt.Errorf("%w: Each resource must appear at most once.", kerr.InvalidRequest)

// alterMessageBudget is how many bytes of error messages one AlterConfigs
// or IncrementalAlterConfigs answer carries; later errors come without a
// message, so an answer to many refused resources stays about the size of
// the request.
const alterMessageBudget = 64 << 10

// alterResourceConfigs applies one AlterConfigs or IncrementalAlterConfigs
// resource: a group's configs through the controller's group config
// validation, a topic's or broker's after the resource is checked (and a
// cluster-wide default refused for per-broker keys).
func (b *Broker) alterResourceConfigs(ctx context.Context, img *controller.Image, typ int8, name string, ops []controller.ConfigOp, incremental, validateOnly bool) error {
	if typ == resourceGroup {
		return b.alterGroupConfigs(ctx, name, ops, incremental, validateOnly)
	}
	if typ == resourceClientMetrics {
		return b.alterClientMetricsConfigs(ctx, name, ops, incremental, validateOnly) // telemetry_subscriptions.go
	}
	res, err := b.configResourceFor(ctx, img, typ, name)
	if err == nil {
		err = checkClusterDefault(res, ops)
	}
	if err == nil {
		err = b.checkCleanerChange(img, res, ops, incremental)
	}
	if err == nil {
		err = b.alterConfigs(ctx, res, ops, incremental, validateOnly)
	}
	return err
}
