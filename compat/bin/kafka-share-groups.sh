#!/usr/bin/env bash
# Kafka's bin/kafka-share-groups.sh (ShareGroupCommand, KIP-932), run from the jars compat/kafkatools/fetch.sh fetched.
exec "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/kafka-run-class.sh" org.apache.kafka.tools.consumer.group.ShareGroupCommand "$@"
