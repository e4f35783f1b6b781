package config

// Listeners and their security (issue 19): which listeners serve Kafka
// clients, which one brokers use between themselves, and the start-up
// checks of their TLS and SASL settings that no single key can make.

import (
	"fmt"
	"slices"
	"strings"
)

// KafkaListeners returns the listeners that serve Kafka clients: every
// listener not named in controller.listener.names, in listeners' order.
func (b *Broker) KafkaListeners() []Listener {
	controllers := b.ControllerListenerNames()
	var out []Listener
	for _, l := range b.Listeners {
		if !slices.Contains(controllers, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// InterBrokerListener returns the name of the listener brokers connect to
// each other on, as Kafka resolves it: inter.broker.listener.name when
// set, else the listener named after security.inter.broker.protocol. When
// neither key is set and no Kafka listener is named PLAINTEXT (Kafka's
// default), sluice takes the first Kafka listener, so listeners =
// "CLIENT://…" keeps working without naming it twice. It returns "" only
// for a configuration Validate refuses.
func (b *Broker) InterBrokerListener() string {
	static := b.staticValues()
	if n := strings.ToUpper(strings.TrimSpace(b.InterBrokerListenerName)); n != "" {
		return n
	}
	kafka := b.KafkaListeners()
	proto, set := static["security.inter.broker.protocol"]
	if !set {
		proto = "PLAINTEXT"
	}
	for _, l := range kafka {
		if l.Name == proto {
			return l.Name
		}
	}
	if !set && len(kafka) > 0 {
		return kafka[0].Name
	}
	return ""
}

// SASLMechanisms returns the SASL mechanisms listener offers
// (listener.name.<l>.sasl.enabled.mechanisms, else sasl.enabled.mechanisms),
// upper case.
func (b *Broker) SASLMechanisms(listener string) []string {
	s, _ := b.ListenerValue(listener, "sasl.enabled.mechanisms")
	var out []string
	for _, m := range splitList(s) {
		out = append(out, strings.ToUpper(m))
	}
	return out
}

// validateSecurity checks the listeners' protocols, the inter-broker
// listener and the TLS and SASL settings each listener needs, as Kafka's
// KafkaConfig and channel builders check them at start, and refuses what
// sluice cannot do (GSSAPI, OAUTHBEARER between brokers) with what to do
// instead.
func (b *Broker) validateSecurity(static map[string]string, protocols map[string]string) error {
	invalid := func(key, format string, args ...any) error {
		return &KeyError{Key: key, Detail: fmt.Sprintf(format, args...), Kind: ErrInvalidValue}
	}
	if _, set := static["sasl.jaas.config"]; set {
		return invalid("sasl.jaas.config", "a broker reads its JAAS configuration per listener and mechanism: set listener.name.<listener>.<mechanism>.sasl.jaas.config (e.g. listener.name.sasl_ssl.plain.sasl.jaas.config); Kafka's brokers ignore the unprefixed key")
	}
	_, ibnSet := static["inter.broker.listener.name"]
	_, sibpSet := static["security.inter.broker.protocol"]
	if ibnSet && sibpSet {
		return invalid("inter.broker.listener.name", "only one of inter.broker.listener.name and security.inter.broker.protocol may be set")
	}
	ib := b.InterBrokerListener()
	advertised := func(name string) bool {
		return slices.ContainsFunc(b.AdvertisedListeners, func(l Listener) bool { return l.Name == name })
	}
	switch {
	case ib == "" && sibpSet:
		return invalid("security.inter.broker.protocol", "no listener is named %s: name the inter-broker listener with inter.broker.listener.name", static["security.inter.broker.protocol"])
	case ib == "":
		return invalid("listeners", "has no Kafka listener (every one is in controller.listener.names)")
	case slices.Contains(b.ControllerListenerNames(), ib):
		return invalid("inter.broker.listener.name", "%s is a controller listener (controller.listener.names); brokers need a Kafka listener", ib)
	case !advertised(ib):
		return invalid("inter.broker.listener.name", "%s must be a listener in advertised.listeners", ib)
	}
	for _, l := range b.KafkaListeners() {
		proto := protocols[l.Name]
		if proto == "SSL" || proto == "SASL_SSL" {
			if err := b.checkStores(l.Name, true); err != nil {
				return err
			}
		}
		if proto == "SASL_PLAINTEXT" || proto == "SASL_SSL" {
			if err := b.checkSASLListener(l.Name); err != nil {
				return err
			}
		}
	}
	switch protocols[ib] {
	case "SSL", "SASL_SSL":
		// The client side of inter-broker connections: the truststore
		// that checks the peers, and the keystore when they ask for one.
		if err := b.checkStores(ib, false); err != nil {
			return err
		}
	}
	switch protocols[ib] {
	case "SASL_PLAINTEXT", "SASL_SSL":
		mech, _ := staticOrDefault(static, "sasl.mechanism.inter.broker.protocol")
		switch {
		case mech == "GSSAPI":
			return invalid("sasl.mechanism.inter.broker.protocol", "GSSAPI (Kerberos) is not supported; the inter-broker listener %s speaks SASL: set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", ib)
		case mech == "OAUTHBEARER":
			return invalid("sasl.mechanism.inter.broker.protocol", "OAUTHBEARER between brokers is not supported yet (%s; issue 19): use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", whyOAuthLogin)
		case !slices.Contains(b.SASLMechanisms(ib), mech):
			return invalid("sasl.mechanism.inter.broker.protocol", "%s is not among the inter-broker listener %s's sasl.enabled.mechanisms (%s)", mech, ib, strings.Join(b.SASLMechanisms(ib), ","))
		}
		if _, ok := b.MechanismValue(ib, mech, "sasl.jaas.config"); !ok {
			return invalid(ListenerKey(ib, strings.ToLower(mech)+".sasl.jaas.config"), "must be set: it holds the username and password this broker logs in to its peers with over %s", mech)
		}
	}
	return nil
}

// checkStores checks listener's keystore settings: a server needs a
// keystore. What the stores hold (a JKS file is refused with how to
// convert it; Java reads a PKCS12 file under Kafka's default type JKS,
// and so does sluice) is security.NewServerTLS's to check when it loads
// them.
func (b *Broker) checkStores(listener string, server bool) error {
	if !server {
		return nil
	}
	_, loc := b.ListenerValue(listener, "ssl.keystore.location")
	_, key := b.ListenerValue(listener, "ssl.keystore.key")
	if !loc && !key {
		return &KeyError{Key: "ssl.keystore.location", Kind: ErrInvalidValue,
			Detail: fmt.Sprintf("listener %s speaks TLS and needs a keystore: set ssl.keystore.location (or %s), or ssl.keystore.type=PEM with ssl.keystore.key and ssl.keystore.certificate.chain", listener, ListenerKey(listener, "ssl.keystore.location"))}
	}
	return nil
}

// listenerSet reports whether listener.name.<listener>.<key> is set.
func (b *Broker) listenerSet(listener, key string) bool {
	_, ok := b.staticValues()[ListenerKey(listener, key)]
	return ok
}

// checkSASLListener checks a SASL listener's mechanisms: at least one,
// none sluice lacks, and PLAIN's users.
func (b *Broker) checkSASLListener(listener string) error {
	mechs := b.SASLMechanisms(listener)
	key := "sasl.enabled.mechanisms"
	if b.listenerSet(listener, key) {
		key = ListenerKey(listener, key)
	}
	if len(mechs) == 0 {
		return &KeyError{Key: key, Kind: ErrInvalidValue, Detail: fmt.Sprintf("listener %s speaks SASL but offers no mechanism", listener)}
	}
	if slices.Contains(mechs, "GSSAPI") {
		return &KeyError{Key: key, Kind: ErrInvalidValue, Detail: fmt.Sprintf("GSSAPI (Kerberos, Kafka's default) is not supported; listener %s speaks SASL: set %s to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and/or OAUTHBEARER", listener, key)}
	}
	if slices.Contains(mechs, "PLAIN") {
		if _, ok := b.MechanismValue(listener, "PLAIN", "sasl.jaas.config"); !ok {
			return &KeyError{Key: ListenerKey(listener, "plain.sasl.jaas.config"), Kind: ErrInvalidValue,
				Detail: fmt.Sprintf(`must be set: listener %s offers PLAIN, whose users are the JAAS config's user_<name>="<password>" options`, listener)}
		}
	}
	return nil
}

// SecretKeys are the keys set (in the file, by an override or by Set)
// whose values are secret: passwords, JAAS texts, PEM keys (Kafka's
// PASSWORD type, which DescribeConfigs answers as null), sorted.
func (b *Broker) SecretKeys() []string {
	var out []string
	for key := range b.staticValues() {
		if k, ok := lookupBrokerKey(key); ok && k.sensitive {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}
