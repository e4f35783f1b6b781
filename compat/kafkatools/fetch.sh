#!/usr/bin/env bash
# compat/kafkatools/fetch.sh [VERSION]: put Apache Kafka's tool jars in a
# cache outside the repository, for the launchers in compat/bin/.
#
# Without VERSION (or with 4.1.1) it runs `mvn dependency:copy-dependencies`
# on compat/kafkatools/pom.xml (Kafka 4.1.1's kafka_2.13 and kafka-tools with
# their runtime dependencies, from Maven Central or whatever mirror
# ~/.m2/settings.xml names) into
#
#   $SLUICE_KAFKA_LIBS, default ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/kafka-4.1.1/libs
#
# With another VERSION (4.4.0: bench/harness's Kafka baseline and the compat
# rows that compare with Kafka 4.4, such as kafka-configs-keyset) it uses
# compat/kafkatools/pom-VERSION.xml and always its own directory,
# ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/kafka-VERSION/libs, so that
# SLUICE_KAFKA_LIBS keeps naming the 4.1.1 jars every other row runs. Point
# compat/bin/ at that directory with SLUICE_KAFKA_LIBS for one command.
#
# It is idempotent: when the directory is complete for the current pom.xml
# (a stamp file holds the pom's checksum) it returns at once without starting
# Maven. The jars are copied to a temporary directory first and moved into
# place, so an interrupted fetch never leaves a half-filled cache behind.
# Prints the libs directory on its last line.
set -euo pipefail

DEFAULT_VERSION=4.1.1
KAFKA_VERSION=${1:-$DEFAULT_VERSION}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/kafka-$KAFKA_VERSION/libs
if [ "$KAFKA_VERSION" = "$DEFAULT_VERSION" ]; then
	pom=$here/pom.xml
	libs=${SLUICE_KAFKA_LIBS:-$cache}
else
	pom=$here/pom-$KAFKA_VERSION.xml
	libs=$cache
	if [ ! -f "$pom" ]; then
		echo "fetch.sh: no $pom; the versions it knows: $DEFAULT_VERSION $(cd "$here" && ls pom-*.xml 2>/dev/null | sed 's/^pom-//; s/\.xml$//' | tr '\n' ' ')" >&2
		exit 2
	fi
fi
stamp=$libs/.complete
want=$(sha256sum "$pom" | cut -d' ' -f1)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	echo "$libs"
	exit 0
fi

if ! command -v mvn >/dev/null; then
	echo "fetch.sh: mvn is not on PATH (install Maven, e.g. apt-get install maven)" >&2
	exit 1
fi
if ! command -v java >/dev/null; then
	echo "fetch.sh: java is not on PATH (Kafka $KAFKA_VERSION's tools need Java 17 or newer)" >&2
	exit 1
fi

parent=$(dirname "$libs")
mkdir -p "$parent"
tmp=$(mktemp -d "$parent/.libs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "fetching Kafka $KAFKA_VERSION tool jars into $libs" >&2
start=$SECONDS
log=$parent/fetch.log
if ! mvn -B -q -Dstyle.color=never -f "$pom" \
	dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$log" 2>&1; then
	echo "fetch.sh: mvn dependency:copy-dependencies failed; last lines of $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
fi
if ! compgen -G "$tmp/kafka-tools-$KAFKA_VERSION.jar" >/dev/null ||
	! compgen -G "$tmp/kafka_2.13-$KAFKA_VERSION.jar" >/dev/null; then
	echo "fetch.sh: Maven finished but the Kafka jars are missing from $tmp" >&2
	exit 1
fi
echo "$want" >"$tmp/.complete"
rm -rf "$libs"
mv "$tmp" "$libs"
trap - EXIT
echo "fetched $(ls "$libs" | wc -l) jars in $((SECONDS - start))s" >&2
echo "$libs"
