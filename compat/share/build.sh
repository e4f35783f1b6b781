#!/usr/bin/env bash
# compat/share/build.sh: build the share-group consumer of the
# kafka-share-consumer compat row (compat/share/, run by
# compat/java_share_consumer_test.go) into a cache outside the repository:
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/share-app/libs
#
# holding share-consumer.jar and its runtime dependencies (kafka-clients
# 4.4.0, log4j, from Maven Central or whatever mirror ~/.m2/settings.xml
# names). Run it with
# `java -cp 'DIR/*' dev.sluice.compat.share.ShareConsumerApp`.
#
# It is idempotent, as compat/streams/build.sh: when the directory was
# built from the current pom.xml, sources and this script (a stamp file
# holds their checksum) it returns at once without starting Maven. Maven's
# build directory is a temporary one next to the cache, and the result is
# moved into place only when complete, so nothing is written into the
# repository and an interrupted build never leaves a half-filled cache.
# Prints the libs directory on its last line.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
libs=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/share-app/libs
stamp=$libs/.complete
want=$(cd "$here" && find pom.xml build.sh src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	echo "$libs"
	exit 0
fi

for tool in mvn java; do
	if ! command -v $tool >/dev/null; then
		echo "build.sh: $tool is not on PATH (the share consumer needs Maven and Java 17 or newer)" >&2
		exit 1
	fi
done

parent=$(dirname "$libs")
mkdir -p "$parent"
tmp=$(mktemp -d "$parent/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "building the share consumer into $libs" >&2
start=$SECONDS
log=$parent/build.log
if ! mvn -B -q -Dstyle.color=never -f "$here/pom.xml" -Dsluice.build.dir="$tmp/target" \
	package dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >"$log" 2>&1; then
	echo "build.sh: mvn package failed; last lines of $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
fi
if [ ! -f "$tmp/target/share-consumer.jar" ] || ! compgen -G "$tmp/libs/kafka-clients-*.jar" >/dev/null; then
	echo "build.sh: Maven finished but share-consumer.jar or kafka-clients is missing under $tmp" >&2
	exit 1
fi
mv "$tmp/target/share-consumer.jar" "$tmp/libs/"
echo "$want" >"$tmp/libs/.complete"
rm -rf "$libs"
mv "$tmp/libs" "$libs"
echo "built the share consumer ($(ls "$libs" | wc -l) jars) in $((SECONDS - start))s" >&2
echo "$libs"
