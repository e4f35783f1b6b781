#!/usr/bin/env bash
# Kafka 4.1's bin/kafka-metadata-quorum.sh, run from the jars compat/kafkatools/fetch.sh fetched.
exec "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/kafka-run-class.sh" org.apache.kafka.tools.MetadataQuorumCommand "$@"
