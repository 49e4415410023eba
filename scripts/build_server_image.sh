#!/usr/bin/env bash
# Build the server image: one image for the web servers, the Celery worker and beat, the
# channels worker, and (for deploy/compose.yaml on machines without a registry) PostgreSQL,
# Redis and HAProxy from Debian's packages. Different commands, one image (deploy/image/).
#
# Two steps, each cached by a content hash, built the way the sandbox image is
# (scripts/image_lib.sh): no registry is needed.
#   deerflow-server-base:<hash>  Debian root (debootstrap) + requirements.txt in /opt/deerflow/venv;
#                                hash of the package list, requirements.txt and these scripts
#   deerflow-server:<hash>       the base plus the source tree (git's tracked and unignored files,
#                                precompiled) in /opt/deerflow/app; hash of the base tag and those files
# An unchanged build is a no-op that only tags `latest`; a code change rebuilds the thin top layer.
#
# Usage: scripts/build_server_image.sh [--print-tag]
#   SERVER_ENGINE   podman (default) or docker
#   SERVER_IMAGE    image name (default deerflow-server); tagged :<hash> and :latest
#   DEBIAN_MIRROR   default http://deb.debian.org/debian
# Needs root (debootstrap and chroot) for the base; the top layer only needs the engine.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/image_lib.sh

ENGINE="${SERVER_ENGINE:-podman}"
IMAGE="${SERVER_IMAGE:-deerflow-server}"
# Python for the app; PostgreSQL, Redis and HAProxy for the compose stack; procps for `ps` in
# a shell; git for the skills installer.
PACKAGES=python3,python3-venv,ca-certificates,procps,git,postgresql-15,redis-server,haproxy
UID_GID=10001
TEST_ONLY="playwright|helm-python-sdk|kubernetes-validate|podman-compose"

# The base's inputs: the recipe between the "base" markers below, the shared root recipe, the
# requirements and the packages.
base_hash=$( { sed -n '/^# -- base/,/^# -- end of base/p' scripts/build_server_image.sh; root_recipe; cat requirements.txt
               echo "$PACKAGES $TEST_ONLY $UID_GID"; } | sha256sum | cut -c1-12)
base_tag="$IMAGE-base:$base_hash"
files() { git ls-files -z --cached --others --exclude-standard | grep -zv '^\(benchmarks\|tests\|docs/screenshots\)/' | sort -z; }
app_hash=$( { echo "$base_tag"; files | xargs -0 sha256sum 2>/dev/null; cat deploy/image/Containerfile; } | sha256sum | cut -c1-12)
tag="$IMAGE:$app_hash"
if [ "${1:-}" = "--print-tag" ]; then
  echo "$tag"
  exit 0
fi
image_cached "$tag" "$IMAGE"

scratch_root deerflow-server-image

# -- base
if ! engine image inspect "$base_tag" >/dev/null 2>&1; then
  [ "$(id -u)" -eq 0 ] || { echo "build_server_image.sh needs root for the base image (debootstrap, chroot)" >&2; exit 1; }
  echo "Building $base_tag"
  debian_root "$root" "$PACKAGES" "${SERVER_CACHE:-/var/cache/deerflow-server}"
  echo "  requirements.txt"
  # Less what only the tests use: browsers' driver, the chart renderer and validator, compose.
  grep -v -i -E "^($TEST_ONLY)==" requirements.txt >"$work/requirements.txt"
  # redis imports async_timeout on Pythons before 3.11.3, as bookworm's 3.11.2 is; the host's
  # pip judges that marker by its own Python, so it is asked for here.
  echo "async-timeout==5.0.1" >>"$work/requirements.txt"
  python_venv "$root" "$work/requirements.txt" /opt/deerflow/venv 3.11.2
  echo "deerflow:x:$UID_GID:$UID_GID:deerflow:/data:/bin/sh" >>"$root/etc/passwd"
  echo "deerflow:x:$UID_GID:" >>"$root/etc/group"
  # The volumes' mount points, owned by whoever writes them (a new volume takes the owner).
  mkdir -p "$root/data" "$root/var/lib/postgresql/data" "$root/var/lib/redis" "$root/run/postgresql"
  chown "$UID_GID:$UID_GID" "$root/data"
  chroot "$root" chown postgres:postgres /var/lib/postgresql/data /run/postgresql
  chroot "$root" chown redis:redis /var/lib/redis
  # The cluster Debian's package made at install is not the one the stack uses.
  rm -rf "$root/var/lib/postgresql/15" "$root/etc/postgresql/15"
  slim_root "$root"
  echo "  import"
  tar -C "$root" -c . | engine import --change "LABEL deerflow.server.base=$base_hash" - "$base_tag" >/dev/null
  rm -rf "$root"
fi
# -- end of base

echo "Building $tag"
context="$work/context"
mkdir -p "$context/app"
files | (cd . && xargs -0 cp --parents -t "$context/app")
# Bytecode made here: the app directory is read-only to the server's user, and every process
# would otherwise compile the sources again at each start.
python3 -m compileall -q -j 0 "$context/app" >/dev/null || true
cp deploy/image/Containerfile "$context/Containerfile"
engine build --pull=never --quiet --build-arg "BASE=$base_tag" --label "deerflow.server.inputs=$app_hash" \
  -t "$tag" -f "$context/Containerfile" "$context" >/dev/null
engine tag "$tag" "$IMAGE:latest"
echo "$tag"
