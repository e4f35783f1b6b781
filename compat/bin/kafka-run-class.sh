#!/usr/bin/env bash
# compat/bin/kafka-run-class.sh CLASS [ARGS...]: run one of Apache Kafka's
# main classes from the jars compat/kafkatools/fetch.sh put in the cache,
# the way Kafka's own bin/kafka-run-class.sh does, minus its start-up cost.
#
# The class path is every jar of
#   $SLUICE_KAFKA_LIBS, default ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/kafka-4.1.1/libs
# Logging goes through compat/kafkatools/log4j2.properties (warnings to stderr)
# unless KAFKA_LOG4J_OPTS says otherwise. The JVM flags are tuned for short
# tool runs (a small heap, the serial collector, the C1 compiler only); set
# KAFKA_HEAP_OPTS / KAFKA_JVM_PERFORMANCE_OPTS to replace them and KAFKA_OPTS
# to add more, as with Kafka's script.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 CLASS [ARGS...]" >&2
	exit 2
fi
class=$1
shift

bin=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
libs=${SLUICE_KAFKA_LIBS:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/kafka-4.1.1/libs}
if [ ! -f "$libs/.complete" ]; then
	echo "$(basename "$0"): Kafka's jars are not in $libs; run compat/kafkatools/fetch.sh" >&2
	exit 127
fi
if ! command -v java >/dev/null; then
	echo "$(basename "$0"): java is not on PATH (Kafka 4.1's tools need Java 17 or newer)" >&2
	exit 127
fi

heap=${KAFKA_HEAP_OPTS:--Xmx256M}
perf=${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto -Djava.awt.headless=true}
log4j=${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$bin/../kafkatools/log4j2.properties}

# Word splitting of the option strings is intended, as in Kafka's script.
# shellcheck disable=SC2086
exec java $heap $perf $log4j ${KAFKA_OPTS:-} -cp "$libs/*" "$class" "$@"
