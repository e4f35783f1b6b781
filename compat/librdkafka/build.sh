#!/usr/bin/env bash
# compat/librdkafka/build.sh: builds librdkafka's own integration test
# runner (its tests/test-runner) from source, for the librdkafka-suite
# compat rows (compat/librdkafka_suite_test.go), into a cache outside the
# repository, and prints the directory that holds test-runner.
#
# Where the source comes from: librdkafka's GitHub release tarballs are not
# reachable from CI, but Confluent's JavaScript client bundles librdkafka's
# complete source tree, tests/ included, in its npm package:
# @confluentinc/kafka-javascript@1.10.1 carries it under
# package/deps/librdkafka/ at librdkafka v2.15.1 (RD_KAFKA_VERSION
# 0x020f01ff in src/rdkafka.h). The tarball is fetched with `npm pack`
# and checked against the integrity hash pinned below (the registry's
# dist.integrity, `npm view @confluentinc/kafka-javascript@1.10.1
# dist.integrity`) before anything in it is used.
#
# What is built: the library with OpenSSL, zlib and zstd (and librdkafka's
# builtin lz4 and snappy), without SASL/GSSAPI or libcurl (configure_flags
# below), `make libs` (librdkafka and librdkafka++), then tests/test-runner
# (with RapidJSON).
# About 5 minutes on 2 cores.
#
# Cache: ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/librdkafka-2.15.1/ (or
# $SLUICE_LIBRDKAFKA_DIR). A .complete stamp holds the pinned hash, the
# configure flags and the header packages: when it matches, the script prints the directory and
# does nothing else, so a second run is instant. Nothing here is committed.
# Two runs at once take turns (flock on $cache.lock).
#
# Build tools and headers (a C and C++ compiler, make, npm, libssl-dev,
# zlib1g-dev, libzstd-dev, rapidjson-dev) are installed with apt-get when missing, as
# scripts/test-all.sh installs kcat.
#
# Output: the last line of stdout is the tests/ directory (test-runner, and
# ../src, ../src-cpp with the shared libraries it loads); progress goes to
# stderr.
set -euo pipefail

npm_pkg=@confluentinc/kafka-javascript
npm_version=1.10.1
npm_integrity='sha512-KVePUBn21EqCVP9mfxzEuM3SYJHHEF7X+iiC2e43QQgDSyEaksInmCGooT3w5q+cNAdkSCrK71j0ICfqoSqZLw=='
rdk_version=2.15.1
rdk_hexversion=0x020f01ff

# What the tests need: OpenSSL (the rows use no TLS listener, but tests
# such as 0064_interceptors set security.protocol=ssl on a client), zlib
# and zstd (0017_compression produces with every codec the build has), no
# SASL/GSSAPI and no libcurl (OIDC).
configure_flags=(--no-download --enable-ssl --enable-zlib --enable-zstd --disable-gssapi --disable-curl --disable-debug-symbols)
# Headers the build needs; RapidJSON (header-only) is found by configure
# on its own and lets the tests check librdkafka's statistics JSON
# (0053_stats, 0101_fetch_from_follower and 0110_batch_size skip
# themselves without it).
dev_packages=(libssl-dev zlib1g-dev libzstd-dev rapidjson-dev)

cache=${SLUICE_LIBRDKAFKA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/librdkafka-${rdk_version}}
stamp_want="${npm_pkg}@${npm_version} ${npm_integrity} ${configure_flags[*]} ${dev_packages[*]}"

complete() {
	[ -f "$cache/.complete" ] && [ "$(cat "$cache/.complete")" = "$stamp_want" ] &&
		[ -x "$cache/src/tests/test-runner" ]
}
if complete; then
	echo "$cache/src/tests"
	exit 0
fi

# One build at a time (two compat runs may start together); the second
# waits and then finds the cache complete.
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if complete; then
	echo "$cache/src/tests"
	exit 0
fi

log() { echo "librdkafka build: $*" >&2; }

as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		echo "need root to run: $*" >&2
		return 1
	fi
}

missing=()
command -v gcc >/dev/null || missing+=(gcc)
command -v g++ >/dev/null || missing+=(g++)
command -v make >/dev/null || missing+=(make)
command -v npm >/dev/null || missing+=(npm)
for dev in "${dev_packages[@]}"; do
	dpkg -s "$dev" >/dev/null 2>&1 || missing+=("$dev")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "missing ${missing[*]}: installing with apt-get"
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

start=$SECONDS
rm -rf "$cache"
mkdir -p "$cache/dl"

log "fetching ${npm_pkg}@${npm_version} with npm pack"
(cd "$cache/dl" && npm pack --silent "${npm_pkg}@${npm_version}" >/dev/null)
tgz=$(ls "$cache"/dl/*.tgz)
got=$(node -e 'const c = require("crypto"), fs = require("fs");
process.stdout.write("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$tgz")
if [ "$got" != "$npm_integrity" ]; then
	echo "librdkafka build: $tgz has integrity $got, want $npm_integrity" >&2
	exit 1
fi

mkdir -p "$cache/src"
tar -xzf "$tgz" -C "$cache/src" --strip-components=3 package/deps/librdkafka
rm -rf "$cache/dl"
if ! grep -q "define RD_KAFKA_VERSION *${rdk_hexversion}" "$cache/src/src/rdkafka.h"; then
	echo "librdkafka build: src/rdkafka.h is not librdkafka ${rdk_version} (${rdk_hexversion})" >&2
	exit 1
fi

cd "$cache/src"
log "configure"
./configure "${configure_flags[@]}" >"$cache/configure.log" 2>&1 ||
	{ tail -n 30 "$cache/configure.log" >&2; exit 1; }
log "make libs"
make -j2 libs >"$cache/make.log" 2>&1 || { tail -n 30 "$cache/make.log" >&2; exit 1; }
log "make test-runner"
make -j2 -C tests test-runner >>"$cache/make.log" 2>&1 || { tail -n 30 "$cache/make.log" >&2; exit 1; }

# A test-runner that starts and lists nothing proves the libraries load.
(cd tests && TESTS=none LD_LIBRARY_PATH=../src:../src-cpp ./test-runner -l -S >/dev/null 2>&1) ||
	{ echo "librdkafka build: the built test-runner does not start" >&2; exit 1; }

echo "$stamp_want" >"$cache/.complete"
log "built in $((SECONDS - start))s into $cache"
echo "$cache/src/tests"
