#!/usr/bin/env bash
# Vendor the web UI's third-party JavaScript into static/vendor/ from the npm registry.
# Pinned versions; the files are committed so `make run` works offline. Re-run this after
# changing a version below (needs npm and network access to the registry).
set -euo pipefail
cd "$(dirname "$0")/.."

# package@version  file-in-package  name-in-static/vendor
PACKAGES=(
  "marked@18.2.1 lib/marked.umd.js marked.umd.js"
  "dompurify@3.5.0 dist/purify.min.js purify.min.js"
  "@highlightjs/cdn-assets@11.12.0 highlight.min.js highlight.min.js"
  "@highlightjs/cdn-assets@11.12.0 styles/github.min.css highlight-github.min.css"
  "@highlightjs/cdn-assets@11.12.0 styles/github-dark.min.css highlight-github-dark.min.css"
)
# Lucide: only the icons the UI names (scripts/build_icons.py), not the whole set.
LUCIDE=lucide-static@1.62.0

command -v npm >/dev/null || { echo "vendor.sh needs npm" >&2; exit 1; }
out=static/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
: > "$work/VERSIONS"
for entry in "${PACKAGES[@]}"; do
  read -r spec file name <<<"$entry"
  dir="$work/$(echo "$spec" | tr '/@' '__')"
  if [ ! -d "$dir" ]; then
    mkdir -p "$dir"
    (cd "$dir" && npm pack --silent "$spec" >/dev/null && tar -xzf ./*.tgz)
  fi
  cp "$dir/package/$file" "$out/$name"
  echo "$name $spec $(sha256sum "$out/$name" | cut -d' ' -f1)" >> "$work/VERSIONS"
  # each package's licence travels with its file
  lic=$(ls "$dir"/package/LICENSE* 2>/dev/null | head -1 || true)
  [ -n "$lic" ] && cp "$lic" "$out/$(echo "${spec%@*}" | tr '/@' '__').LICENSE"
done
ldir="$work/lucide"
mkdir -p "$ldir"
(cd "$ldir" && npm pack --silent "$LUCIDE" >/dev/null && tar -xzf ./*.tgz)
python3 scripts/build_icons.py "$ldir/package" "$out/lucide-icons.js"
cp "$ldir/package/LICENSE" "$out/lucide-static.LICENSE"
echo "lucide-icons.js $LUCIDE $(sha256sum "$out/lucide-icons.js" | cut -d' ' -f1)" >> "$work/VERSIONS"
mv "$work/VERSIONS" "$out/VERSIONS"
echo "vendored into $out:"; cat "$out/VERSIONS"
