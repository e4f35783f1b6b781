#!/usr/bin/env bash
# Kafka 4.1's bin/kafka-configs.sh, run from the jars compat/kafkatools/fetch.sh fetched.
# Kafka 4.4 moved the tool from the Scala module (kafka.admin.ConfigCommand)
# to kafka-tools (org.apache.kafka.tools.ConfigCommand); the class is picked
# by the kafka-tools jar in the libs directory, so the launcher runs both.
bin=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
libs=${SLUICE_KAFKA_LIBS:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/kafka-4.1.1/libs}
class=kafka.admin.ConfigCommand
case $(ls "$libs" 2>/dev/null | grep -m1 '^kafka-tools-[0-9]') in
kafka-tools-4.[0-3].* | kafka-tools-[0-3].*) ;;
kafka-tools-*) class=org.apache.kafka.tools.ConfigCommand ;;
esac
exec "$bin/kafka-run-class.sh" "$class" "$@"
