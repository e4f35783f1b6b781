#!/usr/bin/env bash
# Builds the sluice container image without a container daemon and without
# pulling a base image: what deploy/Containerfile's last stage holds (a
# FROM scratch image: the static binary, one static busybox with the
# applets the testcontainers start scripts use, deploy/image/'s scripts,
# uid 65532, the volume /var/lib/sluice, CMD /etc/kafka/docker/run), put
# together from the host's Go toolchain and Debian's busybox-static, and
# committed with buildah into the local containers storage, where podman
# runs it (podman run localhost/sluice:dev). Use it where docker build
# cannot run (no daemon, no registry to pull golang and busybox from).
#
#   deploy/build-image.sh [TAG]          # default sluice:dev
#   deploy/build-image.sh sluice:dev /tmp/sluice-image.tar
#                                        # also writes an OCI archive
#                                        # (docker load / podman load)
#
# Needs: root (it sets the files' owners), go, buildah and a static busybox
# (apt-get install buildah busybox-static). Exits 2 when one is missing,
# so callers can skip. deploy/image_test.go (SLUICE_IMAGE=1)
# builds it, runs it with podman and drives it with a Kafka client.
set -euo pipefail

tag=${1:-sluice:dev}
archive=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)

if [ "$(id -u)" != 0 ]; then
	echo "build-image: run as root (the image's files have owners of their own)" >&2
	exit 2
fi
for tool in go buildah; do
	if ! command -v "$tool" >/dev/null; then
		echo "build-image: $tool not found" >&2
		exit 2
	fi
done
busybox=${BUSYBOX:-}
if [ -z "$busybox" ]; then
	for b in /bin/busybox /usr/bin/busybox; do
		# Debian's busybox-static and busybox (1.35+) are both static
		# on amd64 builds; check rather than trust.
		if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then
			busybox=$b
			break
		fi
	done
fi
if [ -z "$busybox" ]; then
	echo "build-image: no static busybox (apt-get install busybox-static, or BUSYBOX=path)" >&2
	exit 2
fi

work=$(mktemp -d)
ctr=
cleanup() {
	if [ -n "$ctr" ]; then
		buildah umount "$ctr" >/dev/null 2>&1 || true
		buildah rm "$ctr" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# The rootfs, as the Containerfile's rootfs stage lays it out (/usr/sbin
# empty: testcontainers-go copies its start script there).
fs=$work/rootfs
mkdir -p "$fs/bin" "$fs/usr/sbin" "$fs/usr/local/bin" "$fs/etc/kafka/docker" "$fs/etc/confluent/docker" "$fs/var/lib/sluice" "$fs/tmp"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$fs/usr/local/bin/sluice" ./cmd/sluice)
cp "$busybox" "$fs/bin/busybox"
for a in sh [ test sleep sed hostname id cat echo env ls; do
	ln -s busybox "$fs/bin/$a"
done
cp "$root/deploy/image/bash" "$fs/bin/bash"
cp "$root/deploy/image/kafka/run" "$fs/etc/kafka/docker/run"
cp "$root"/deploy/image/confluent/* "$fs/etc/confluent/docker/"
chmod 755 "$fs/bin/bash" "$fs/etc/kafka/docker/run" "$fs"/etc/confluent/docker/* "$fs/usr/local/bin/sluice"
chmod 1777 "$fs/tmp"
printf 'root:x:0:0:root:/:/bin/sh\nsluice:x:65532:65532:sluice:/var/lib/sluice:/bin/sh\n' >"$fs/etc/passwd"
printf 'root:x:0:\nsluice:x:65532:\n' >"$fs/etc/group"

# One layer from the rootfs, as a tar so that ownership is kept (buildah
# add of a directory makes every file root's, and --chown on a directory
# leaves the destination directory itself to root): root owns all but what
# the Containerfile gives the sluice user, its data directory and the
# confluent scripts the start scripts edit with sed -i.
chown -R 0:0 "$fs"
chown -R 65532:65532 "$fs/var/lib/sluice" "$fs/etc/confluent/docker"
tar --numeric-owner -C "$fs" -cf "$work/layer.tar" .
ctr=$(buildah from scratch)
buildah add --quiet "$ctr" "$work/layer.tar" / >/dev/null
buildah config \
	--env PATH=/usr/local/bin:/bin \
	--env KAFKA_LISTENERS=PLAINTEXT://:9092 \
	--env KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092 \
	--env KAFKA_LOG_DIRS=/var/lib/sluice \
	--user 65532:65532 \
	--workingdir /var/lib/sluice \
	--volume /var/lib/sluice \
	--port 9092 \
	--cmd /etc/kafka/docker/run \
	--label org.opencontainers.image.title=sluice \
	--label org.opencontainers.image.source=deploy/build-image.sh \
	"$ctr"
buildah commit --quiet --rm "$ctr" "$tag"
ctr=
if [ -n "$archive" ]; then
	rm -f "$archive"
	buildah push --quiet "$tag" "oci-archive:$archive:$tag"
fi
buildah images --format '{{.Name}}:{{.Tag}} {{.ID}} {{.Size}}' "$tag"
