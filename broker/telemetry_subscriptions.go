package broker

// Client metrics subscriptions (KIP-714): the CLIENT_METRICS config
// resources (type 16) that kafka-client-metrics.sh creates, describes,
// lists and deletes, and how a client instance is matched against them.
//
// A subscription is a name and up to three configs, Kafka's
// ClientMetricsConfigs: metrics (a list of metric name prefixes; "*" asks
// for every metric), interval.ms (the push interval, 100 to 3600000,
// default 300000) and match (a list of name=regex pairs over
// client_instance_id, client_id, client_software_name,
// client_software_version, client_source_address and client_source_port;
// none matches every client). They live in the metadata log
// (controller.Image.ClientMetricsConfigs, changed through the active
// controller like group configs), so every node hands out the same
// subscriptions. A change is checked as Kafka checks it, with its codes
// and messages: an empty name or an unknown key is INVALID_REQUEST, so is
// an interval out of range; an interval that is not an int or a match
// entry that is not name=regex over a known name is INVALID_CONFIG.
// DescribeConfigs lists only the keys set, with source
// CLIENT_METRICS_CONFIG, as Kafka does; a subscription that does not exist
// describes as empty. Deleting every key deletes the subscription
// (kafka-client-metrics.sh --delete).
//
// A client instance matches a subscription when every one of its match
// patterns matches the whole of the instance's value (Java's
// Matcher.matches). Where sluice differs: patterns are Go regular
// expressions (RE2), so Java-only constructs such as back-references and
// look-arounds are refused as an illegal pattern.

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
)

// resourceClientMetrics is the client-metrics config resource type
// (KIP-714's CLIENT_METRICS).
const resourceClientMetrics = controller.ResourceClientMetrics

// The client-metrics config keys and their bounds (ClientMetricsConfigs).
const (
	clientMetricsMetrics  = "metrics"
	clientMetricsInterval = "interval.ms"
	clientMetricsMatch    = "match"

	clientMetricsMinIntervalMs = 100
	clientMetricsMaxIntervalMs = 3600000
	// clientMetricsAllMetrics in a subscription's metrics asks for every
	// metric.
	clientMetricsAllMetrics = "*"
)

// clientMatchParams are the client instance attributes a match pattern may
// name.
var clientMatchParams = []string{"client_instance_id", "client_id", "client_software_name", "client_software_version", "client_source_address", "client_source_port"}

// telemetrySubscription is one parsed subscription.
type telemetrySubscription struct {
	name       string
	metrics    []string
	intervalMs int32
	match      map[string]*regexp.Regexp
}

// validateClientMetricsConfigs checks a subscription's configs as they
// would be after a change, in the order and with the messages of Kafka's
// ClientMetricsConfigs.validate.
func validateClientMetricsConfigs(configs map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		if k != clientMetricsMetrics && k != clientMetricsInterval && k != clientMetricsMatch {
			return fmt.Errorf("%w: Unknown client metrics configuration: %s", kerr.InvalidRequest, k)
		}
	}
	if v, ok := configs[clientMetricsInterval]; ok {
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Errorf("%w: Invalid value %s for configuration %s: Not a number of type INT", kerr.InvalidConfig, v, clientMetricsInterval)
		}
		if ms < clientMetricsMinIntervalMs || ms > clientMetricsMaxIntervalMs {
			return fmt.Errorf("%w: Invalid value %d for %s, interval must be between 100 and 3600000 (1 hour)", kerr.InvalidRequest, ms, clientMetricsInterval)
		}
	}
	if v, ok := configs[clientMetricsMatch]; ok {
		if _, err := parseClientMatch(v); err != nil {
			return err
		}
	}
	return nil
}

// configList splits a LIST config value as Kafka's ConfigDef does: on
// commas, each item trimmed; an empty value is the empty list.
func configList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// parseClientMatch parses a match value: each item a name=regex pair
// whose name is one of clientMatchParams. An item split on '=' must give
// exactly two parts once trailing empty parts are dropped (Java's
// String.split), so "a=" and "a=b=c" are illegal.
func parseClientMatch(v string) (map[string]*regexp.Regexp, error) {
	out := map[string]*regexp.Regexp{}
	for _, item := range configList(v) {
		parts := strings.Split(item, "=")
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		illegal := fmt.Errorf("%w: Illegal client matching pattern: %s", kerr.InvalidConfig, item)
		if len(parts) != 2 {
			return nil, illegal
		}
		param := strings.TrimSpace(parts[0])
		if !slices.Contains(clientMatchParams, param) {
			return nil, illegal
		}
		re, err := regexp.Compile(`^(?:` + strings.TrimSpace(parts[1]) + `)$`)
		if err != nil {
			return nil, illegal
		}
		out[param] = re
	}
	return out, nil
}

// parseSubscriptions parses the image's subscriptions, sorted by name. A
// stored subscription passed validation when it was set; a value that
// does not parse (only possible through a log written by another version)
// falls back to the key's default.
func parseSubscriptions(configs map[string]map[string]string) []telemetrySubscription {
	var subs []telemetrySubscription
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		c := configs[name]
		s := telemetrySubscription{name: name, metrics: configList(c[clientMetricsMetrics]), intervalMs: telemetryPushIntervalMs}
		if ms, err := strconv.ParseInt(strings.TrimSpace(c[clientMetricsInterval]), 10, 32); err == nil && ms >= clientMetricsMinIntervalMs && ms <= clientMetricsMaxIntervalMs {
			s.intervalMs = int32(ms)
		}
		s.match, _ = parseClientMatch(c[clientMetricsMatch])
		subs = append(subs, s)
	}
	return subs
}

// telemetryClientMeta is what a client instance is matched on, taken from
// the request that made the node create it (Kafka's
// ClientMetricsInstanceMetadata).
type telemetryClientMeta struct {
	clientID, softwareName, softwareVersion, sourceAddress, sourcePort string
}

// attr is the meta's value of a match parameter for the instance id.
func (m *telemetryClientMeta) attr(param string, id [16]byte) string {
	switch param {
	case "client_instance_id":
		return uuidString(id)
	case "client_id":
		return m.clientID
	case "client_software_name":
		return m.softwareName
	case "client_software_version":
		return m.softwareVersion
	case "client_source_address":
		return m.sourceAddress
	case "client_source_port":
		return m.sourcePort
	}
	return ""
}

// matches reports whether every pattern of s matches the instance.
func (s *telemetrySubscription) matches(m *telemetryClientMeta, id [16]byte) bool {
	for param, re := range s.match {
		if !re.MatchString(m.attr(param, id)) {
			return false
		}
	}
	return true
}

// subscriptionFor is what Kafka's createClientInstance computes for an
// instance: the union of the metrics of every subscription it matches
// (just "*" when one asks for every metric), sorted, and the shortest of
// their intervals, or the default interval when none matches.
func subscriptionFor(subs []telemetrySubscription, m *telemetryClientMeta, id [16]byte) (metrics []string, intervalMs int32) {
	intervalMs = telemetryPushIntervalMs
	set := map[string]bool{}
	for i := range subs {
		s := &subs[i]
		if !s.matches(m, id) {
			continue
		}
		for _, name := range s.metrics {
			set[name] = true
		}
		intervalMs = min(intervalMs, s.intervalMs)
	}
	if set[clientMetricsAllMetrics] {
		return []string{clientMetricsAllMetrics}, intervalMs
	}
	return slices.Sorted(maps.Keys(set)), intervalMs
}

// describeClientMetricsConfigs lists the configs set on a subscription as
// Kafka describes them: only those set, source CLIENT_METRICS_CONFIG.
func describeClientMetricsConfigs(img *controller.Image, name string, want []string) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: Client metrics subscription name must not be empty", kerr.InvalidRequest)
	}
	var set map[string]string
	if img != nil {
		set = img.ClientMetricsConfigs[name]
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if len(want) > 0 && !slices.Contains(want, k) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(set[k])
		c.Source = kmsg.ConfigSourceClientMetricsConfig
		out = append(out, c)
	}
	return out, nil
}

// alterClientMetricsConfigs is Controller.AlterClientMetricsConfigs on
// the active controller: here when this node is it, else forwarded to it.
func (b *Broker) alterClientMetricsConfigs(ctx context.Context, name string, ops []controller.ConfigOp, incremental, validateOnly bool) error {
	var result error
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			result = b.ctrl.AlterClientMetricsConfigs(ctx, name, ops, incremental, validateOnly, validateClientMetricsConfigs)
		} else {
			res := controller.ConfigResource{Type: resourceClientMetrics, Name: name}
			result = b.forwardAlterConfigs(ctx, id, res, ops, incremental, validateOnly)
		}
		return isNotController(result)
	})
	return result
}
