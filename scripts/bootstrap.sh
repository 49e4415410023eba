#!/usr/bin/env bash
# Make the checkout ready to run: system packages, the virtualenv and its packages.
# Idempotent and quiet when nothing changed. Usage: scripts/bootstrap.sh [runtime|test]
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${1:-runtime}"
VENV="${VENV:-.venv}"

# Debian packages the product or its tests use. Installed only when missing and only
# where we can (root or passwordless sudo with apt-get); otherwise say what is missing.
declare -A wanted=([bwrap]=bubblewrap)
if [ "$profile" = test ]; then
  wanted+=([redis-server]=redis-server [chromium]=chromium)
  # The terminal console's test drives `deerflow` in a tmux pane at 80x24.
  wanted+=([tmux]=tmux)
  # The container sandbox's tests: rootful Podman with runc, debootstrap for its image, and
  # mkfs.ext4 for the threads' disk images.
  wanted+=([podman]=podman [runc]=runc [debootstrap]=debootstrap [mkfs.ext4]=e2fsprogs)
  command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || wanted+=([initdb]=postgresql)
fi
missing=()
for cmd in "${!wanted[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${wanted[$cmd]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null && sudo="sudo -n"; }
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || [ -n "$sudo" ]; }; then
    echo "Installing system packages: ${missing[*]}"
    $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "note: could not install ${missing[*]} (needs apt-get as root); features that use them are skipped." >&2
  fi
fi

# The virtualenv, rebuilt only when requirements.txt changes.
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "Creating virtualenv in $VENV"
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.requirements.sha256"
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "Installing Python packages (requirements.txt)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
fi

# `deerflow`, the terminal console (deerflow_cli/), on the virtualenv's PATH. It runs the package
# from the checkout the virtualenv sits in (or, for a virtualenv elsewhere, the one that
# installed it), from any working directory, so `/upload ./file` means the caller's file.
deerflow_cli="$VENV/bin/deerflow"
deerflow_cli_text="#!/bin/sh
# Written by scripts/bootstrap.sh: the DeerFlow terminal console (docs/terminal.md).
root=\$(cd \"\$(dirname \"\$0\")/../..\" && pwd)
[ -d \"\$root/deerflow_cli\" ] || root='$(pwd)'
PYTHONPATH=\"\$root\${PYTHONPATH:+:\$PYTHONPATH}\" exec \"\$(dirname \"\$0\")/python\" -m deerflow_cli \"\$@\"
"
if [ ! -f "$deerflow_cli" ] || [ "$(cat "$deerflow_cli")" != "$(printf '%s' "$deerflow_cli_text")" ]; then
  printf '%s' "$deerflow_cli_text" > "$deerflow_cli"
  chmod 755 "$deerflow_cli"
fi

# The sandbox toolbox: the Python packages skills' scripts use inside the sandbox, in a
# virtualenv of the system Python (under /usr, which the isolated sandbox mounts), rebuilt
# only when skills/toolbox-requirements.txt changes. Without it skills that need it say so.
TOOLBOX="${TOOLBOX:-.toolbox}"
TOOLBOX_PYTHON="${TOOLBOX_PYTHON:-/usr/bin/python3}"
tb_stamp="$TOOLBOX/.requirements.sha256"
tb_want=$(sha256sum skills/toolbox-requirements.txt | cut -d' ' -f1)
if [ -x "$TOOLBOX_PYTHON" ] && { [ ! -f "$tb_stamp" ] || [ "$(cat "$tb_stamp")" != "$tb_want" ]; }; then
  echo "Building the sandbox toolbox in $TOOLBOX (skills/toolbox-requirements.txt)"
  if { [ -x "$TOOLBOX/bin/python" ] || "$TOOLBOX_PYTHON" -m venv "$TOOLBOX"; } \
     && "$TOOLBOX/bin/python" -m pip install -q --disable-pip-version-check -r skills/toolbox-requirements.txt; then
    echo "$tb_want" > "$tb_stamp"
  else
    echo "note: the sandbox toolbox could not be built; skills that need pandas, matplotlib, python-docx, python-pptx or reportlab will say so." >&2
  fi
fi

# The web UI's vendored JavaScript (static/vendor/) is committed; re-fetch it only when missing.
[ -f static/vendor/VERSIONS ] || scripts/vendor.sh || echo "note: static/vendor/ is missing and scripts/vendor.sh failed (needs npm): the chat page will not render Markdown." >&2
