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
# It is idempotent, as compat/streams/build.sh, and builds the same way
# (compat/lib/maven_app.sh): when the directory was built from the current
# pom.xml, sources and build scripts (a stamp file holds their checksum) it
# returns at once without starting Maven. Maven's build directory is a
# temporary one next to the cache, and the result is moved into place only
# when complete, so nothing is written into the repository and an
# interrupted build never leaves a half-filled cache. Prints the libs
# directory on its last line.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/maven_app.sh
. "$here/../lib/maven_app.sh"
libs=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/share-app/libs
maven_app_build "$here" "$libs" "the share consumer" share-consumer.jar kafka-clients \
	"$(dirname "$libs")/build.log" ""
