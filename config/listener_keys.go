package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Listener-prefixed keys: Kafka lets some broker keys be set for one
// listener as listener.name.<listener, lower case>.<key>, the listener's
// value winning over the broker-wide one, and the SASL keys of one
// mechanism as listener.name.<listener>.<mechanism, lower case>.<key>
// (Kafka's ListenerName.saslMechanismConfigPrefix), which wins over both.
// sluice supports the prefixes for the keys in listenerKeys and
// mechanismKeys, with the unprefixed key's type, validation and update
// mode. They are not in KEYS.md's table (their names depend on the
// listeners); DescribeConfigs lists the ones that are set, as Kafka does,
// with null for a sensitive one.

// listenerKeys are the keys that may be set per listener: the connection
// rate, every ssl.* key sluice supports (Kafka's channel builders read
// their ssl.* configs with the listener's prefix), the SASL mechanisms
// and the OAUTHBEARER validation keys.
var listenerKeys = map[string]bool{
	"max.connection.creation.rate": true,
	"sasl.enabled.mechanisms":      true,
	"connections.max.reauth.ms":    true,
}

// mechanismKeys are the keys that may be set per listener and SASL
// mechanism; the sasl.oauthbearer.* ones only for oauthbearer.
var mechanismKeys = map[string]bool{
	"sasl.jaas.config":                   true,
	"sasl.server.callback.handler.class": true,
}

// saslMechanisms are the mechanism names a mechanism prefix may take,
// lower case, as Kafka writes them in the prefix.
var saslMechanisms = map[string]bool{
	"plain": true, "scram-sha-256": true, "scram-sha-512": true, "oauthbearer": true, "gssapi": true,
}

func init() {
	// Package-level variables are set before any init runs, but
	// topic_keys.go's init may not have appended kafkaOnlyKeys yet.
	for _, k := range slices.Concat(brokerKeyList, kafkaOnlyKeys) {
		if k.status != Supported {
			continue
		}
		switch {
		case strings.HasPrefix(k.name, "ssl."):
			listenerKeys[k.name] = true
		case strings.HasPrefix(k.name, "sasl.oauthbearer."):
			listenerKeys[k.name] = true
			mechanismKeys[k.name] = true
		}
	}
}

// listenerPrefix is how a per-listener key starts.
const listenerPrefix = "listener.name."

// lookupBrokerKey finds the definition of a broker key, or of a
// listener-prefixed one (named with its full name).
func lookupBrokerKey(key string) (keyDef, bool) {
	if i, ok := brokerKeyIndex[key]; ok {
		return brokerKeyList[i], true
	}
	_, _, base, ok := splitListenerKey(key)
	if !ok {
		return keyDef{}, false
	}
	k := brokerKeyList[brokerKeyIndex[base]]
	k.name = key
	return k, true
}

// splitListenerKey parses listener.name.<listener>.[<mechanism>.]<base>
// for a base key that may take that prefix; mechanism is "" for a
// listener-wide key.
func splitListenerKey(key string) (listener, mechanism, base string, ok bool) {
	rest, ok := strings.CutPrefix(key, listenerPrefix)
	if !ok {
		return "", "", "", false
	}
	listener, rest, ok = strings.Cut(rest, ".")
	if !ok || listener == "" {
		return "", "", "", false
	}
	if listenerKeys[rest] {
		return listener, "", rest, true
	}
	mechanism, base, ok = strings.Cut(rest, ".")
	if !ok || !saslMechanisms[mechanism] || !mechanismKeys[base] {
		return "", "", "", false
	}
	if strings.HasPrefix(base, "sasl.oauthbearer.") && mechanism != "oauthbearer" {
		return "", "", "", false
	}
	return listener, mechanism, base, true
}

// ListenerValue returns the static value of key for listener:
// listener.name.<listener>.<key> when set, else key's own value, else its
// default; ok is false when none of them is. Only read-only keys (every
// ssl.* and sasl.* key sluice supports) are resolved this way: they have
// no dynamic layer.
func (b *Broker) ListenerValue(listener, key string) (string, bool) {
	static := b.staticValues()
	if v, ok := static[ListenerKey(listener, key)]; ok {
		return v, true
	}
	return staticOrDefault(static, key)
}

// MechanismValue is ListenerValue for a key of one SASL mechanism:
// listener.name.<listener>.<mechanism>.<key> wins over the listener's and
// the broker-wide value. sasl.jaas.config is read only with the
// mechanism prefix, as Kafka's brokers read it.
func (b *Broker) MechanismValue(listener, mechanism, key string) (string, bool) {
	static := b.staticValues()
	if v, ok := static[ListenerKey(listener, strings.ToLower(mechanism)+"."+key)]; ok {
		return v, true
	}
	if key == "sasl.jaas.config" {
		return "", false
	}
	if v, ok := static[ListenerKey(listener, key)]; ok {
		return v, true
	}
	return staticOrDefault(static, key)
}

// checkListenerReconfiguration is Kafka's check of a dynamic change to
// a listener's connection quota (ListenerConnectionQuota's
// validateReconfiguration): a rate of 0 is a valid static value (every
// connection then waits quota.window.size.seconds) but is refused as an
// update, whether set for a listener or broker-wide, which every listener
// without its own value follows.
func checkListenerReconfiguration(key, norm string) string {
	base := key
	if rest, ok := strings.CutPrefix(key, listenerPrefix); ok {
		_, base, _ = strings.Cut(rest, ".")
	}
	if base == "max.connection.creation.rate" {
		if n, err := strconv.ParseInt(norm, 10, 32); err == nil && n <= 0 {
			return fmt.Sprintf("Invalid max.connection.creation.rate %d: a dynamic update must be at least 1", n)
		}
	}
	return ""
}

// ListenerKey is the name of key set for listener:
// listener.name.<listener in lower case>.<key>, as Kafka's
// ListenerName.configPrefix writes it.
func ListenerKey(listener, key string) string {
	return listenerPrefix + strings.ToLower(listener) + "." + key
}

// ConnectionCreationRates returns max.connection.creation.rate in force
// broker-wide and for listener
// (listener.name.<listener>.max.connection.creation.rate, else the
// broker-wide value), given the dynamic broker configs stored in metadata
// for this broker and for the cluster: the per-broker value, else the
// cluster default, else the static one, else the default. Both keys are
// cluster-wide dynamic, as in Kafka.
func (b *Broker) ConnectionCreationRates(listener string, perBroker, clusterDefault map[string]string) (brokerRate, listenerRate int32) {
	// Called for every new connection, so it reads no more than it must:
	// the static broker-wide value is the typed field, a static
	// listener value is in b.static.
	dynamic := func(key string) (int32, bool) {
		for _, layer := range []map[string]string{perBroker, clusterDefault} {
			if v, ok := layer[key]; ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil && n >= 0 {
					return int32(n), true
				}
			}
		}
		return 0, false
	}
	brokerRate = b.MaxConnectionCreationRate
	if n, ok := dynamic("max.connection.creation.rate"); ok {
		brokerRate = n
	}
	key := ListenerKey(listener, "max.connection.creation.rate")
	listenerRate = brokerRate
	if n, ok := dynamic(key); ok {
		listenerRate = n
	} else if v, ok := b.static[key]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			listenerRate = int32(n)
		}
	}
	return brokerRate, listenerRate
}

// describeListenerKeys lists the listener-prefixed keys set in any layer,
// each with its value and source from the first layer that sets it and
// the layers that set it as synonyms.
func describeListenerKeys(ls []layer) []Entry {
	var out []Entry
	seen := map[string]bool{}
	for _, l := range ls {
		for name := range l.values {
			if seen[name] || !strings.HasPrefix(name, listenerPrefix) {
				continue
			}
			k, ok := lookupBrokerKey(name)
			if !ok {
				continue
			}
			seen[name] = true
			e := Entry{Name: name, ReadOnly: k.mode == ReadOnly, Sensitive: k.sensitive, Type: k.typ, Doc: statusDoc(k.doc, k.status, k.issue, k.why, k.extra)}
			for _, l := range ls {
				if val, ok := l.values[name]; ok {
					if e.Source == 0 {
						e.Value, e.Source = v(val), l.source
					}
					e.Synonyms = append(e.Synonyms, Synonym{Name: name, Value: v(val), Source: l.source})
				}
			}
			// A password or JAAS text is never answered, as Kafka's
			// DescribeConfigs answers null for a sensitive config.
			if k.sensitive {
				e.Value = nil
				for i := range e.Synonyms {
					e.Synonyms[i].Value = nil
				}
			}
			out = append(out, e)
		}
	}
	return out
}
