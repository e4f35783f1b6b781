#!/usr/bin/env bash
# Kafka 4.1's bin/kafka-server-start.sh, run from the jars
# compat/kafkatools/fetch.sh fetched: a real Kafka broker (KRaft; format its
# log dirs first with kafka-storage.sh), for comparing sluice with Kafka.
# Unlike the tools it gets Kafka's server JVM settings and INFO logs on stdout.
if [ $# -lt 1 ]; then
	echo "usage: $0 server.properties [--override property=value]*" >&2
	exit 1
fi
bin=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
export KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}
export KAFKA_JVM_PERFORMANCE_OPTS=${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true}
export KAFKA_LOG4J_OPTS=${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$bin/../kafkatools/log4j2-server.properties}
exec "$bin/kafka-run-class.sh" kafka.Kafka "$@"
