#!/usr/bin/env bash
# Kafka's bin/kafka-client-metrics.sh, run from the jars compat/kafkatools/fetch.sh fetched
# (the kafka-client-metrics row runs it with Kafka 4.4.0's, SLUICE_KAFKA_LIBS).
exec "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/kafka-run-class.sh" org.apache.kafka.tools.ClientMetricsCommand "$@"
