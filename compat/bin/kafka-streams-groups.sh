#!/usr/bin/env bash
# Kafka's bin/kafka-streams-groups.sh (StreamsGroupCommand, KIP-1071; Kafka 4.1+, so run it with
# SLUICE_KAFKA_LIBS naming the jars of `compat/kafkatools/fetch.sh 4.4.0`).
exec "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/kafka-run-class.sh" org.apache.kafka.tools.streams.StreamsGroupCommand "$@"
