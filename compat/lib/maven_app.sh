# compat/lib/maven_app.sh: the build steps shared by the Java apps of the
# compat rows (compat/streams/build.sh, compat/share/build.sh), sourced by
# them. maven_app_build builds one Maven project into a libs directory of a
# cache outside the repository, idempotently: when the directory was built
# from the current pom.xml, sources, the app's build.sh and this file (a
# stamp file holds their checksum, with STAMP_EXTRA) it returns at once
# without starting Maven. Maven's build directory is a temporary one next
# to the cache, and the result is moved into place only when complete, so
# nothing is written into the repository and an interrupted build never
# leaves a half-filled cache. Prints the libs directory on its last line.

# maven_app_build HERE LIBS WHAT JAR DEP LOG STAMP_EXTRA [MAVEN_FLAG...]
#   HERE         the app's directory (pom.xml, build.sh, src/)
#   LIBS         the libs directory to fill
#   WHAT         the app's name in messages ("the Streams app")
#   JAR          the jar the pom builds into its build directory
#   DEP          the prefix of a dependency jar that must be among the libs
#   LOG          where Maven's output goes
#   STAMP_EXTRA  text hashed into the stamp besides the files ("" for none)
#   MAVEN_FLAG   extra flags for mvn (-Dkafka.version=...)
maven_app_build() {
	local here=$1 libs=$2 what=$3 jar=$4 dep=$5 log=$6 extra=$7
	shift 7
	local lib stamp want
	lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/maven_app.sh
	stamp=$libs/.complete
	want=$( (cd "$here" && find pom.xml build.sh src -type f | LC_ALL=C sort | xargs sha256sum; sha256sum <"$lib"; [ -z "$extra" ] || echo "$extra") | sha256sum | cut -d' ' -f1)

	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
		echo "$libs"
		return 0
	fi

	local tool
	for tool in mvn java; do
		if ! command -v $tool >/dev/null; then
			echo "build.sh: $tool is not on PATH ($what needs Maven and Java 17 or newer)" >&2
			return 1
		fi
	done

	local parent tmp start
	parent=$(dirname "$libs")
	mkdir -p "$parent"
	tmp=$(mktemp -d "$parent/.build.XXXXXX")
	# The trap outlives this function: the sourcing build.sh exits right after.
	trap 'rm -rf "'"$tmp"'"' EXIT

	echo "building $what into $libs" >&2
	start=$SECONDS
	if ! mvn -B -q -Dstyle.color=never -f "$here/pom.xml" "$@" -Dsluice.build.dir="$tmp/target" \
		package dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >"$log" 2>&1; then
		echo "build.sh: mvn package failed; last lines of $log:" >&2
		tail -n 20 "$log" >&2
		return 1
	fi
	if [ ! -f "$tmp/target/$jar" ] || ! compgen -G "$tmp/libs/$dep-*.jar" >/dev/null; then
		echo "build.sh: Maven finished but $jar or $dep is missing under $tmp" >&2
		return 1
	fi
	mv "$tmp/target/$jar" "$tmp/libs/"
	echo "$want" >"$tmp/libs/.complete"
	rm -rf "$libs"
	mv "$tmp/libs" "$libs"
	echo "built $what ($(ls "$libs" | wc -l) jars) in $((SECONDS - start))s" >&2
	echo "$libs"
}
