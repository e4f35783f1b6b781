package config

import (
	"slices"
	"strings"
)

// Synonym is one source of a config's value, as DescribeConfigs reports
// synonyms (highest precedence first).
type Synonym struct {
	Name   string
	Value  *string
	Source int8 // SourceDynamicTopic, ...
}

// Entry is one config as DescribeConfigs reports it.
type Entry struct {
	Name      string
	Value     *string // nil: no value (null), or a sensitive value
	Source    int8    // SourceDynamicTopic, ...
	ReadOnly  bool
	Sensitive bool
	Type      int8 // TypeBoolean, ...
	Doc       string
	Synonyms  []Synonym
}

// BrokerKey describes one broker key, for documentation and tools.
type BrokerKey struct {
	Name      string
	Type      int8
	Default   *string // nil: no default
	Mode      UpdateMode
	Sensitive bool
	Doc       string
	// Status is what sluice does with the key; Issue (NotYet; 0 when none
	// is filed) and Why (Inert, NotYet) say more.
	Status Status
	Issue  int
	Why    string
	// Extra is non-empty for a key Kafka 4.4 does not list: why sluice
	// has it.
	Extra string
}

// BrokerKeys returns every broker key sluice accepts, sorted by name.
func BrokerKeys() []BrokerKey {
	out := make([]BrokerKey, 0, len(brokerKeyList))
	for _, k := range brokerKeyList {
		out = append(out, BrokerKey{Name: k.name, Type: k.typ, Default: k.def, Mode: k.mode, Sensitive: k.sensitive, Doc: k.doc,
			Status: k.status, Issue: k.issue, Why: k.why, Extra: k.extra})
	}
	slices.SortFunc(out, func(a, b BrokerKey) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// statusDoc is a key's documentation as DescribeConfigs returns it: its
// doc string, then what sluice does with it when that is not "supported",
// and why sluice has it when Kafka 4.4 does not.
func statusDoc(doc string, st Status, issue int, why, extra string) string {
	switch st {
	case Inert:
		doc += " No effect in sluice: " + why + "."
	case NotYet:
		doc += " Not supported yet in sluice (" + notYetWhat(issue, why) + "): only the default is accepted."
	}
	if extra != "" {
		doc += " Not a Kafka 4.4 key: " + extra + "."
	}
	return doc
}

// layer is one source of broker values, in precedence order.
type layer struct {
	values map[string]string
	source int8
}

func layers(perBroker, clusterDefault, static map[string]string) []layer {
	return []layer{
		{perBroker, SourceDynamicBroker},
		{clusterDefault, SourceDynamicDefaultBroker},
		{static, SourceStaticBroker},
	}
}

// resolveBroker returns the topic config's default from the broker: the first
// synonym set in the first layer that sets any, else the first synonym's
// default, converted to the topic's unit. Keys with no synonym fall back to
// the topic default.
func (k *TopicKey) resolveBroker(perBroker, clusterDefault, static map[string]string) (string, int8, string) {
	for _, l := range layers(perBroker, clusterDefault, static) {
		for _, s := range k.synonyms {
			if val, ok := l.values[s.name]; ok {
				return k.convert(s, val), l.source, s.name
			}
		}
	}
	for _, s := range k.synonyms {
		if d := brokerKeyList[brokerKeyIndex[s.name]].def; d != nil {
			return k.convert(s, *d), SourceDefault, s.name
		}
	}
	return k.Default, SourceDefault, ""
}

// synonymsOf lists every source of every name, in Kafka's order: all names
// in the per-broker layer, then the cluster default, then static, then
// defaults.
func synonymsOf(names []string, ls []layer) []Synonym {
	var out []Synonym
	for _, l := range ls {
		for _, n := range names {
			if val, ok := l.values[n]; ok {
				out = append(out, Synonym{Name: n, Value: v(val), Source: l.source})
			}
		}
	}
	for _, n := range names {
		if d := brokerKeyList[brokerKeyIndex[n]].def; d != nil {
			out = append(out, Synonym{Name: n, Value: v(*d), Source: SourceDefault})
		}
	}
	return out
}

// synonymGroup returns the broker keys that stand for the same setting as
// key (log.retention.ms, .minutes, .hours), or just key.
func synonymGroup(key string) []string {
	for _, t := range topicKeyList {
		if slices.Contains(t.Synonyms, key) {
			return t.Synonyms
		}
	}
	return []string{key}
}

// DescribeBroker lists every broker key, sorted by name, with its value and
// source given the dynamic per-broker and cluster-default configs stored in
// metadata, and its synonyms. Sensitive values are reported as nil.
func (b *Broker) DescribeBroker(perBroker, clusterDefault map[string]string) []Entry {
	static := b.staticValues()
	ls := layers(perBroker, clusterDefault, static)
	out := make([]Entry, 0, len(brokerKeyList))
	for _, k := range brokerKeyList {
		e := Entry{Name: k.name, Source: SourceDefault, Value: k.def, ReadOnly: k.mode == ReadOnly,
			Sensitive: k.sensitive, Type: k.typ, Doc: statusDoc(k.doc, k.status, k.issue, k.why, k.extra)}
		for _, l := range ls {
			if val, ok := l.values[k.name]; ok {
				e.Value, e.Source = v(val), l.source
				break
			}
		}
		e.Synonyms = synonymsOf(synonymGroup(k.name), ls)
		if k.sensitive {
			e.Value = nil
			for i := range e.Synonyms {
				e.Synonyms[i].Value = nil
			}
		}
		out = append(out, e)
	}
	out = append(out, describeListenerKeys(ls)...)
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// DescribeTopic lists every topic config, sorted by name, with its effective
// value and source: DYNAMIC_TOPIC_CONFIG when set on the topic, else the
// source of the broker synonym that supplies it, else DEFAULT_CONFIG. The
// synonyms are those kafka-configs.sh --describe --all shows.
func (b *Broker) DescribeTopic(topicConfigs, perBroker, clusterDefault map[string]string) []Entry {
	static := b.staticValues()
	ls := layers(perBroker, clusterDefault, static)
	out := make([]Entry, 0, len(topicKeyList))
	for i := range topicKeyList {
		k := &topicKeyList[i]
		e := Entry{Name: k.Name, Type: k.Type, Doc: statusDoc(k.Doc, k.Status, k.Issue, k.Why, k.Extra)}
		if val, ok := topicConfigs[k.Name]; ok {
			e.Value, e.Source = v(val), SourceDynamicTopic
			e.Synonyms = append(e.Synonyms, Synonym{Name: k.Name, Value: v(val), Source: SourceDynamicTopic})
		} else {
			val, src, _ := k.resolveBroker(perBroker, clusterDefault, static)
			e.Value, e.Source = v(val), src
		}
		e.Synonyms = append(e.Synonyms, synonymsOf(k.Synonyms, ls)...)
		out = append(out, e)
	}
	return out
}

// EffectiveTopicConfig returns every topic config's effective value, for
// building a partition's log config.
func (b *Broker) EffectiveTopicConfig(topicConfigs, perBroker, clusterDefault map[string]string) map[string]string {
	static := b.staticValues()
	out := make(map[string]string, len(topicKeyList))
	for i := range topicKeyList {
		k := &topicKeyList[i]
		if val, ok := topicConfigs[k.Name]; ok {
			out[k.Name] = val
			continue
		}
		out[k.Name], _, _ = k.resolveBroker(perBroker, clusterDefault, static)
	}
	return out
}

// ValidateBrokerDynamic checks one key of an AlterConfigs (or
// IncrementalAlterConfigs) on a single broker's resource. The error wraps
// ErrUnknownKey, ErrNotDynamic or ErrInvalidValue; Kafka answers all of them
// with INVALID_REQUEST for broker resources.
func ValidateBrokerDynamic(key, value string) error {
	k, ok := lookupBrokerKey(key)
	if !ok {
		return &KeyError{Key: key, Kind: ErrUnknownKey}
	}
	if k.mode == ReadOnly {
		return &KeyError{Key: key, Detail: "cannot be updated dynamically (read-only; set it in the file and restart)", Kind: ErrNotDynamic}
	}
	if k.atStart {
		return &KeyError{Key: key, Detail: "cannot be updated dynamically in sluice: " + k.why + "; set it in the file and restart", Kind: ErrNotDynamic}
	}
	norm, err := checkBrokerValue(key, value)
	if err != nil {
		return err
	}
	if bad := checkListenerReconfiguration(key, norm); bad != "" {
		return &KeyError{Key: key, Detail: bad, Kind: ErrInvalidValue}
	}
	return nil
}

// ValidateClusterDefault is ValidateBrokerDynamic for the cluster-default
// broker resource (empty resource name), which also rejects per-broker keys
// such as listeners with ErrPerBrokerOnly.
func ValidateClusterDefault(key, value string) error {
	if err := ValidateBrokerDynamic(key, value); err != nil {
		return err
	}
	if k, _ := lookupBrokerKey(key); k.mode == PerBroker {
		return &KeyError{Key: key, Detail: "can only be set for one broker, not as the cluster default", Kind: ErrPerBrokerOnly}
	}
	return nil
}
