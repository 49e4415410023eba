#!/usr/bin/env bash
# Build the container sandbox's image (docs/sandbox.md, "The container provider").
#
# A Debian root made by debootstrap from Debian packages, the toolbox virtualenv installed
# from skills/toolbox-requirements.txt at /opt/deerflow-toolbox, imported as one layer
# (scripts/image_lib.sh, shared with the server image). No registry is needed. The tag is a
# content hash of these scripts and the toolbox requirements, so an unchanged build is a
# no-op: the second run only tags `latest`.
#
# Usage: scripts/build_sandbox_image.sh [--print-tag]
#   SANDBOX_ENGINE   podman (default) or docker
#   SANDBOX_IMAGE    image name (default deerflow-sandbox); tagged :<hash> and :latest
#   DEBIAN_MIRROR    default http://deb.debian.org/debian
# Needs root (debootstrap and chroot).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/image_lib.sh

ENGINE="${SANDBOX_ENGINE:-podman}"
IMAGE="${SANDBOX_IMAGE:-deerflow-sandbox}"
# What commands in the sandbox expect beyond the toolbox: a shell, Python, the usual tools.
PACKAGES=python3,python3-venv,ca-certificates,procps,zip,unzip,file,less,xz-utils,bzip2
REQUIREMENTS=skills/toolbox-requirements.txt

hash=$( { cat "$0" "$REQUIREMENTS"; root_recipe; } | sha256sum | cut -c1-12)
tag="$IMAGE:$hash"
if [ "${1:-}" = "--print-tag" ]; then
  echo "$tag"
  exit 0
fi
image_cached "$tag" "$IMAGE"

[ "$(id -u)" -eq 0 ] || { echo "build_sandbox_image.sh needs root (debootstrap, chroot)" >&2; exit 1; }

scratch_root deerflow-sandbox-image

echo "Building $tag"
# The Debian root is cached by its package list, so a toolbox change skips debootstrap.
debian_root "$root" "$PACKAGES" "${SANDBOX_CACHE:-/var/cache/deerflow-sandbox}"
echo "  the toolbox ($REQUIREMENTS)"
python_venv "$root" "$REQUIREMENTS" /opt/deerflow-toolbox

# The same user and layout as the bubblewrap sandbox: uid 1000, /mnt/user-data, /mnt/skills.
echo "sandbox:x:1000:1000:sandbox:/tmp:/bin/bash" >>"$root/etc/passwd"
echo "sandbox:x:1000:" >>"$root/etc/group"
mkdir -p "$root/mnt/user-data/workspace" "$root/mnt/user-data/uploads" "$root/mnt/user-data/outputs" "$root/mnt/skills"
echo sandbox >"$root/etc/hostname"
printf '127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
slim_root "$root"

echo "  import"
tar -C "$root" -c . | engine import \
  --change "LABEL deerflow.sandbox.inputs=$hash" \
  --change "ENV PATH=/opt/deerflow-toolbox/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change "WORKDIR /mnt/user-data/workspace" \
  - "$tag" >/dev/null
engine tag "$tag" "$IMAGE:latest"
echo "$tag"
