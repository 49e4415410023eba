# The local image build both images share (sourced by build_sandbox_image.sh and
# build_server_image.sh): a Debian root made by debootstrap from Debian packages and cached by
# its package list, Python wheels fetched on the host and installed offline into a virtualenv
# in that root, and the root imported as one layer. No registry is needed. Needs root.

DEBIAN_SUITE=bookworm
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# The container engine, as these machines run it (root, runc, cgroupfs); docker elsewhere.
engine() {
  if [ "${ENGINE:-podman}" = podman ]; then podman --runtime runc --cgroup-manager cgroupfs "$@"; else "$ENGINE" "$@"; fi
}

# debian_root ROOT PACKAGES CACHE_DIR: ROOT becomes a minimal Debian with PACKAGES (comma-
# separated), from CACHE_DIR/base-<hash>.tar when an earlier build made that same root.
debian_root() {
  local root=$1 packages=$2 cache_dir=$3
  local cache
  cache="$cache_dir/base-$(echo "$DEBIAN_SUITE $packages" | sha256sum | cut -c1-12).tar"
  mkdir -p "$root" "$cache_dir"
  if [ -f "$cache" ]; then
    echo "  Debian root from $cache"
    tar -C "$root" -xf "$cache"
    return
  fi
  command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install debootstrap" >&2; return 1; }
  echo "  debootstrap $DEBIAN_SUITE"
  debootstrap --variant=minbase --include="$packages" "$DEBIAN_SUITE" "$root" "$DEBIAN_MIRROR" >"$root.debootstrap.log" 2>&1 \
    || { tail -20 "$root.debootstrap.log" >&2; return 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb
  tar -C "$root" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
}

# python_venv ROOT REQUIREMENTS VENV [PYTHON_VERSION]: a virtualenv at VENV inside ROOT with
# REQUIREMENTS installed. Wheels are fetched on the host, whose pip knows this machine's proxy
# and certificates, then installed offline in the root (the same Python 3.11 ABI as
# bookworm's). PYTHON_VERSION (bookworm's exact 3.11.2) ignores Requires-Python: a few
# pure-Python wheels pinned on a later 3.11 ask for >= 3.11.5 (soupsieve) and use nothing
# 3.11.2 lacks. (pip still judges environment markers by the host's Python: a dependency only
# an older 3.11 needs is named in REQUIREMENTS.)
python_venv() {
  local root=$1 requirements=$2 venv=$3 python_version=${4:-3.11}
  local ignore=()
  [ "$python_version" = 3.11 ] || ignore=(--ignore-requires-python)
  local host_python
  host_python=$( [ -x .venv/bin/python ] && echo .venv/bin/python || command -v python3 )
  "$host_python" -m pip download -q --disable-pip-version-check --only-binary=:all: "${ignore[@]}" \
    --python-version "$python_version" --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    --implementation cp -d "$root/tmp/wheels" -r "$requirements" pip 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  cp "$requirements" "$root/tmp/requirements.txt"
  mount -t proc proc "$root/proc"
  chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin /usr/bin/python3 -m venv --without-pip "$venv"
  local pip_wheel
  pip_wheel=$(cd "$root/tmp/wheels" && ls pip-*.whl | head -1)
  chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin "$venv/bin/python" "/tmp/wheels/$pip_wheel/pip" install -q \
    --no-index --find-links /tmp/wheels --disable-pip-version-check "${ignore[@]}" -r /tmp/requirements.txt
  rm -rf "$root/tmp/wheels" "$root/tmp/requirements.txt"
  umount "$root/proc"
}

# slim_root ROOT: what an image needs none of.
slim_root() {
  local root=$1
  rm -f "$root/etc/resolv.conf"
  rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/cache/apt/* \
    "$root"/var/lib/apt/lists/* "$root"/var/log/*
}

# image_cached TAG IMAGE: when TAG is already built, tag it IMAGE:latest, say so and stop:
# an unchanged build is a no-op.
image_cached() {
  engine image inspect "$1" >/dev/null 2>&1 || return 0
  engine tag "$1" "$2:latest"
  echo "$1 (cached)"
  exit 0
}

# The recipe of a root, for a content hash: the functions that make it, as bash holds them
# (edits elsewhere in this file do not change it).
root_recipe() {
  declare -f debian_root python_venv slim_root
}

# scratch_root NAME: $work, a scratch folder under /var/tmp removed when the script exits, and
# $root, the image's root inside it.
scratch_root() {
  work=$(mktemp -d "/var/tmp/$1.XXXXXX")
  root="$work/rootfs"
  trap 'umount "$root/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
}
