// env.go owns sluice's container mode (--env): reading broker properties
// from KAFKA_* environment variables the way the apache/kafka image does, so
// that the testcontainers Kafka modules (and docker-compose files written for
// apache/kafka) can start sluice unchanged, and printing the log lines those
// modules wait for once the broker serves.
//
// Names map as in apache/kafka's KafkaDockerWrapper: drop the KAFKA_ prefix,
// lower-case, then "_" becomes ".", "___" becomes "-" and "__" becomes "_"
// (KAFKA_LOG_RETENTION_MS → log.retention.ms, KAFKA_ABC___DEF → abc-def,
// KAFKA_ABC__DEF → abc_def). Kafka's wrapper removes every "KAFKA_" in the
// name, not only the prefix; sluice removes only the prefix, which differs
// only for a property whose name contains "kafka." (none of Kafka 4.4's).
//
// The JVM and log4j variables the apache/kafka image reads itself
// (KAFKA_HEAP_OPTS, KAFKA_OPTS, KAFKA_LOG4J_LOGGERS, …) are skipped as that
// image skips them. A few keys are skipped with one log line each because a
// container set up for Kafka passes them and sluice has no use for them:
// process.roles (every sluice node is broker and raft voter),
// controller.quorum.voters (a container is a one-node cluster; the
// testcontainers modules name the node itself), zookeeper.* (ZooKeeper mode,
// gone in Kafka 4) and rest.* (Confluent's REST proxy in confluent-local).
// CLUSTER_ID is logged and skipped: sluice makes its cluster id when the
// data directory is new. Every other KAFKA_* variable becomes a property and
// is checked like any other: an unknown or invalid one stops the start with
// an error naming the variable. Environment settings lose to --override.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/sluicedev/sluice/config"
)

// imageOnlyEnv are the KAFKA_* variables the apache/kafka image reads for
// the JVM and log4j and never turns into properties.
var imageOnlyEnv = map[string]bool{
	"KAFKA_VERSION": true, "KAFKA_HEAP_OPTS": true, "KAFKA_LOG4J_OPTS": true,
	"KAFKA_OPTS": true, "KAFKA_JMX_OPTS": true, "KAFKA_JVM_PERFORMANCE_OPTS": true,
	"KAFKA_GC_LOG_OPTS": true, "KAFKA_LOG4J_ROOT_LOGLEVEL": true, "KAFKA_LOG4J_LOGGERS": true,
	"KAFKA_TOOLS_LOG4J_LOGLEVEL": true, "KAFKA_JMX_HOSTNAME": true, "KAFKA_JMX_PORT": true,
}

// envIgnoredKey says why a property set through the environment is skipped,
// or "" when it is passed to the configuration.
func envIgnoredKey(key string) string {
	switch {
	case key == "process.roles":
		return "every sluice node is both broker and raft voter"
	case key == "controller.quorum.voters":
		return "a container is a one-node cluster; sluice forms its own raft quorum"
	case strings.HasPrefix(key, "zookeeper."):
		return "ZooKeeper mode is gone in Kafka 4; sluice has no ZooKeeper"
	case strings.HasPrefix(key, "rest."):
		return "Confluent REST proxy setting (confluent-local image), not a broker property"
	}
	return ""
}

// envKeyName turns KAFKA_FOO_BAR into foo.bar with apache/kafka's escapes.
func envKeyName(name string) string {
	k := strings.ToLower(strings.TrimPrefix(name, "KAFKA_"))
	k = strings.ReplaceAll(k, "_", ".")
	k = strings.ReplaceAll(k, "...", "-")
	return strings.ReplaceAll(k, "..", "_")
}

// envSettings returns the key=value settings the KAFKA_* variables of
// environ (os.Environ's form) make, sorted by key, and for each key the
// variable it came from. It logs one line for each variable it skips.
func envSettings(environ []string, logger *slog.Logger) ([]string, map[string]string) {
	vars := map[string]string{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if name == "CLUSTER_ID" {
			logger.Info("environment: CLUSTER_ID ignored; sluice makes its cluster id when the data directory is new", "value", value)
			continue
		}
		if !strings.HasPrefix(name, "KAFKA_") || name == "KAFKA_" {
			continue
		}
		if imageOnlyEnv[name] {
			logger.Info("environment: ignored, a JVM or log4j setting of the apache/kafka image", "var", name)
			continue
		}
		vars[name] = value
	}
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	from := map[string]string{}
	for _, n := range names {
		key := envKeyName(n)
		if why := envIgnoredKey(key); why != "" {
			logger.Info("environment: ignored: "+why, "var", n, "key", key)
			continue
		}
		out = append(out, key+"="+vars[n])
		from[key] = n
	}
	return out, from
}

// envLoadError names the variable behind a configuration error about a key
// that came from the environment (and not from an --override of its own).
func envLoadError(err error, from map[string]string, ovr []string) error {
	var ke *config.KeyError
	if !errors.As(err, &ke) || ke.Where != "--override" {
		return err
	}
	name, ok := from[ke.Key]
	if !ok {
		return err
	}
	for _, o := range ovr {
		if k, _, _ := strings.Cut(o, "="); strings.TrimSpace(k) == ke.Key {
			return err
		}
	}
	ke.Where = "environment variable " + name
	return err
}

// printContainerReady prints, once the broker serves, the lines the
// testcontainers Kafka modules wait for: "Transitioning from RECOVERY to
// RUNNING" (Java's org.testcontainers.kafka.KafkaContainer and
// testcontainers-go), "Kafka Server started" (testcontainers-python in KRaft
// mode) and "[KafkaServer id=N] started" (testcontainers-python's default).
// Each names Kafka's logger it imitates.
func printContainerReady(w io.Writer, nodeID int32) {
	fmt.Fprintf(w, "[BrokerLifecycleManager id=%d] sluice is serving. Transitioning from RECOVERY to RUNNING. (kafka.server.BrokerLifecycleManager)\n", nodeID)
	fmt.Fprintf(w, "[KafkaRaftServer nodeId=%d] Kafka Server started (kafka.server.KafkaRaftServer)\n", nodeID)
	fmt.Fprintf(w, "[KafkaServer id=%d] started (kafka.server.KafkaServer)\n", nodeID)
}
