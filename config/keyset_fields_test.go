package config

import "testing"

// sluiceDefaults are the keys whose default differs from Kafka 4.4's on
// purpose; the package doc and the key's doc string say why.
var sluiceDefaults = map[string]bool{
	"node.id": true, "process.roles": true, "listeners": true, "log.dir": true,
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": true,
	"broker.heartbeat.interval.ms":                                true, "broker.session.timeout.ms": true,
	"replica.fetch.backoff.ms": true, "queued.max.request.bytes": true,
	"group.consumer.assignors": true, // Kafka lists the assignors' class names
	// No streams groups yet (issue 20).
	"group.coordinator.rebalance.protocols": true,
	// Kafka's own DescribeConfigs default is null: a synonym supplies it.
	"log.roll.ms": true, "log.roll.jitter.ms": true, "log.retention.ms": true, "log.flush.interval.ms": true,
	// Kafka's defaults name settings sluice does not use (the controller
	// listener, JVM-sized pools).
	"controller.listener.names": true, "listener.security.protocol.map": true,
}

// sluiceModes are the keys whose update mode differs from Kafka 4.4's:
// sluice reads them only at start, so it refuses to alter them dynamically
// rather than store a value that would change nothing.
var sluiceModes = map[string]bool{
	"listeners": true, "listener.security.protocol.map": true, "producer.id.expiration.ms": true,
	// TLS and SASL settings are read when the listeners start (issue 19);
	// the files they name are reloaded when they change.
	"ssl.cipher.suites": true, "ssl.client.auth": true, "ssl.enabled.protocols": true,
	"ssl.endpoint.identification.algorithm": true, "ssl.key.password": true, "ssl.protocol": true,
	"ssl.keystore.certificate.chain": true, "ssl.keystore.key": true, "ssl.keystore.location": true,
	"ssl.keystore.password": true, "ssl.keystore.type": true, "ssl.truststore.certificates": true,
	"ssl.truststore.location": true, "ssl.truststore.password": true, "ssl.truststore.type": true,
	"sasl.enabled.mechanisms": true, "sasl.jaas.config": true, "sasl.mechanism.inter.broker.protocol": true,
}

var typeByName = map[string]int8{
	"boolean": TypeBoolean, "string": TypeString, "int": TypeInt, "short": TypeShort, "long": TypeLong,
	"double": TypeDouble, "list": TypeList, "class": TypeClass, "password": TypePassword,
}

// TestBrokerKeysAreKafka44s checks the broker key table against Kafka
// 4.4.0's: a key Kafka does not list is a documented sluice extra, and
// types, update modes (read-only, per-broker, cluster-wide) and defaults
// are Kafka's (sluice's own defaults
// aside). Every inert or refused key says why.
func TestBrokerKeysAreKafka44s(t *testing.T) {
	kafka := readKafkaKeys(t)["broker"]
	ours := map[string]keyDef{}
	for _, k := range brokerKeyList {
		ours[k.name] = k
	}
	for _, k := range brokerKeyList {
		kk, ok := kafka[k.name]
		if !ok {
			if k.extra == "" {
				t.Errorf("%s: not a Kafka 4.4 broker key, and not documented as a sluice extra", k.name)
			}
			continue
		}
		if k.extra != "" {
			t.Errorf("%s: marked sluice-only (%s) but Kafka 4.4 lists it", k.name, k.extra)
		}
		if typeByName[kk.typ] != k.typ {
			t.Errorf("%s: type %s, Kafka 4.4's is %s", k.name, typeNames[k.typ], kk.typ)
		}
		if modeNames[k.mode] != kk.update && !sluiceModes[k.name] {
			t.Errorf("%s: update mode %s, Kafka 4.4's %s", k.name, modeNames[k.mode], kk.update)
		}
		def := "null"
		if k.def != nil {
			def = *k.def
		}
		if def != kk.def && !sluiceDefaults[k.name] {
			t.Errorf("%s: default %q, Kafka 4.4's %q", k.name, def, kk.def)
		}
		if k.status == NotYet && k.why == "" || k.status == Inert && k.why == "" {
			t.Errorf("%s: %s without a reason", k.name, k.status)
		}
	}
}

// TestTopicKeysAreKafka44s is TestBrokerKeysAreKafka44s for topic configs.
func TestTopicKeysAreKafka44s(t *testing.T) {
	kafka := readKafkaKeys(t)["topic"]
	ours := map[string]TopicKey{}
	for _, k := range TopicKeys() {
		ours[k.Name] = k
	}
	for _, k := range TopicKeys() {
		kk, ok := kafka[k.Name]
		if !ok {
			if k.Extra == "" {
				t.Errorf("%s: not a Kafka 4.4 topic config, and not documented as a sluice extra", k.Name)
			}
			continue
		}
		if typeByName[kk.typ] != k.Type {
			t.Errorf("%s: type %s, Kafka 4.4's is %s", k.Name, typeNames[k.Type], kk.typ)
		}
		if k.Default != kk.def {
			t.Errorf("%s: default %q, Kafka 4.4's %q", k.Name, k.Default, kk.def)
		}
		if err := ValidateTopicConfig(k.Name, k.Default); err != nil {
			t.Errorf("%s: Kafka's default is refused: %v", k.Name, err)
		}
	}
}
