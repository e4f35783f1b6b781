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
# It is idempotent (compat/lib/maven_app.sh, shared with
# compat/share/build.sh): when the directory was built from the current
# pom.xml, sources, build scripts and VERSION (a stamp file holds their
# checksum) it returns at once without starting Maven. Maven's build
# directory is a temporary one next to the cache, and the result is moved
# into place only when complete, so nothing is written into the repository
# and an interrupted build never leaves a half-filled cache. Prints the
# libs directory on its last line.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/maven_app.sh
. "$here/../lib/maven_app.sh"
version=${1:-}
libs=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/streams-app/libs
versionFlag=()
if [ -n "$version" ] && [ "$version" != 4.1.1 ]; then
	libs=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/streams-app-$version/libs
	versionFlag=(-Dkafka.version="$version")
fi
maven_app_build "$here" "$libs" "the Streams app" streams-sum.jar kafka-streams \
	"$(dirname "$libs")/build${version:+-$version}.log" "$version" ${versionFlag[@]+"${versionFlag[@]}"}
