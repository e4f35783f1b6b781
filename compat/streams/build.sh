#!/usr/bin/env bash
# compat/streams/build.sh [VERSION]: build the Kafka Streams application of
# the kafka-streams compat rows (compat/streams/, run by
# compat/streams_test.go and compat/streams_protocol_test.go) into a cache
# outside the repository:
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/streams-app/libs          (4.1.1, the pom's)
#   ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/streams-app-VERSION/libs  (another VERSION)
#
# holding streams-sum.jar and its runtime dependencies (kafka-streams
# VERSION, default the pom's 4.1.1, rocksdbjni, ..., from Maven Central or
# whatever mirror ~/.m2/settings.xml names). The same sources build against
# 4.4.0 (-Dkafka.version), the release whose group.protocol=streams
# (KIP-1071) the streams-protocol row runs. Run it with
# `java -cp 'DIR/*' dev.sluice.compat.streams.SumApp`.
#
# It is idempotent: when the directory was built from the current pom.xml,
# sources and this script (a stamp file holds their checksum) it returns at
# once without starting Maven. Maven's build directory is a temporary one
# next to the cache, and the result is moved into place only when complete,
# so nothing is written into the repository and an interrupted build never
# leaves a half-filled cache. Prints the libs directory on its last line.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=${1:-}
libs=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/streams-app/libs
versionFlag=()
if [ -n "$version" ] && [ "$version" != 4.1.1 ]; then
	libs=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/streams-app-$version/libs
	versionFlag=(-Dkafka.version="$version")
fi
stamp=$libs/.complete
want=$( (cd "$here" && find pom.xml build.sh src -type f | LC_ALL=C sort | xargs sha256sum; echo "$version") | sha256sum | cut -d' ' -f1)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	echo "$libs"
	exit 0
fi

for tool in mvn java; do
	if ! command -v $tool >/dev/null; then
		echo "build.sh: $tool is not on PATH (the Streams app needs Maven and Java 17 or newer)" >&2
		exit 1
	fi
done

parent=$(dirname "$libs")
mkdir -p "$parent"
tmp=$(mktemp -d "$parent/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "building the Streams app into $libs" >&2
start=$SECONDS
log=$parent/build${version:+-$version}.log
if ! mvn -B -q -Dstyle.color=never -f "$here/pom.xml" ${versionFlag[@]+"${versionFlag[@]}"} -Dsluice.build.dir="$tmp/target" \
	package dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >"$log" 2>&1; then
	echo "build.sh: mvn package failed; last lines of $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
fi
if [ ! -f "$tmp/target/streams-sum.jar" ] || ! compgen -G "$tmp/libs/kafka-streams-*.jar" >/dev/null; then
	echo "build.sh: Maven finished but streams-sum.jar or kafka-streams is missing under $tmp" >&2
	exit 1
fi
mv "$tmp/target/streams-sum.jar" "$tmp/libs/"
echo "$want" >"$tmp/libs/.complete"
rm -rf "$libs"
mv "$tmp/libs" "$libs"
echo "built the Streams app ($(ls "$libs" | wc -l) jars) in $((SECONDS - start))s" >&2
echo "$libs"
