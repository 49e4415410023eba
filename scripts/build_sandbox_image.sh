#!/usr/bin/env bash
# Build the container sandbox's image (docs/sandbox.md, "The container provider").
#
# A Debian root made by debootstrap from Debian packages, the toolbox virtualenv installed
# from skills/toolbox-requirements.txt at /opt/deerflow-toolbox, imported as one layer.
# No registry is needed. The tag is a content hash of this script and the toolbox
# requirements, so an unchanged build is a no-op: the second run only tags `latest`.
#
# Usage: scripts/build_sandbox_image.sh [--print-tag]
#   SANDBOX_ENGINE   podman (default) or docker
#   SANDBOX_IMAGE    image name (default deerflow-sandbox); tagged :<hash> and :latest
#   DEBIAN_MIRROR    default http://deb.debian.org/debian
# Needs root (debootstrap and chroot).
set -euo pipefail
cd "$(dirname "$0")/.."

ENGINE="${SANDBOX_ENGINE:-podman}"
IMAGE="${SANDBOX_IMAGE:-deerflow-sandbox}"
SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What commands in the sandbox expect beyond the toolbox: a shell, Python, the usual tools.
PACKAGES=python3,python3-venv,ca-certificates,procps,zip,unzip,file,less,xz-utils,bzip2
REQUIREMENTS=skills/toolbox-requirements.txt

hash=$(cat "$0" "$REQUIREMENTS" | sha256sum | cut -c1-12)
tag="$IMAGE:$hash"
if [ "${1:-}" = "--print-tag" ]; then
  echo "$tag"
  exit 0
fi

engine() {
  if [ "$ENGINE" = podman ]; then podman --runtime runc --cgroup-manager cgroupfs "$@"; else "$ENGINE" "$@"; fi
}

if engine image inspect "$tag" >/dev/null 2>&1; then
  engine tag "$tag" "$IMAGE:latest"
  echo "$tag (cached)"
  exit 0
fi

[ "$(id -u)" -eq 0 ] || { echo "build_sandbox_image.sh needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }

work=$(mktemp -d /var/tmp/deerflow-sandbox-image.XXXXXX)
root="$work/rootfs"
cleanup() {
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The Debian root is cached by its package list, so a toolbox change skips debootstrap.
base_cache="${SANDBOX_CACHE:-/var/cache/deerflow-sandbox}/base-$(echo "$SUITE $PACKAGES" | sha256sum | cut -c1-12).tar"
mkdir -p "$root" "$(dirname "$base_cache")"
if [ -f "$base_cache" ]; then
  echo "Building $tag: Debian root from $base_cache"
  tar -C "$root" -xf "$base_cache"
else
  echo "Building $tag: debootstrap $SUITE"
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb
  tar -C "$root" -cf "$base_cache.tmp" . && mv "$base_cache.tmp" "$base_cache"
fi

echo "Building $tag: the toolbox ($REQUIREMENTS)"
# Wheels are fetched on the host, whose pip knows this machine's proxy and certificates,
# then installed offline in the new root (same Python 3.11 ABI as bookworm's).
host_python=$( [ -x .venv/bin/python ] && echo .venv/bin/python || command -v python3 )
"$host_python" -m pip download -q --disable-pip-version-check --only-binary=:all: \
  --python-version 3.11 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  --implementation cp -d "$root/tmp/wheels" -r "$REQUIREMENTS" pip
cp "$REQUIREMENTS" "$root/tmp/requirements.txt"
mount -t proc proc "$root/proc"
chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin /usr/bin/python3 -m venv --without-pip /opt/deerflow-toolbox
pip_wheel=$(cd "$root/tmp/wheels" && ls pip-*.whl | head -1)
chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin /opt/deerflow-toolbox/bin/python "/tmp/wheels/$pip_wheel/pip" install -q \
  --no-index --find-links /tmp/wheels --disable-pip-version-check -r /tmp/requirements.txt
rm -rf "$root/tmp/wheels"
umount "$root/proc"

# The same user and layout as the bubblewrap sandbox: uid 1000, /mnt/user-data, /mnt/skills.
echo "sandbox:x:1000:1000:sandbox:/tmp:/bin/bash" >>"$root/etc/passwd"
echo "sandbox:x:1000:" >>"$root/etc/group"
mkdir -p "$root/mnt/user-data/workspace" "$root/mnt/user-data/uploads" "$root/mnt/user-data/outputs" "$root/mnt/skills"
echo sandbox >"$root/etc/hostname"
printf '127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
rm -f "$root/etc/resolv.conf" "$root/tmp/requirements.txt"
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/cache/apt/* \
  "$root"/var/lib/apt/lists/* "$root"/var/log/*

echo "Building $tag: import"
tar -C "$root" -c . | engine import \
  --change "LABEL deerflow.sandbox.inputs=$hash" \
  --change "ENV PATH=/opt/deerflow-toolbox/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change "WORKDIR /mnt/user-data/workspace" \
  - "$tag" >/dev/null
engine tag "$tag" "$IMAGE:latest"
echo "$tag"
