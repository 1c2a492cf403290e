#!/usr/bin/env bash
# The playground's vendored browser libraries (crates/gateway/assets/playground/vendor):
# fetches the pinned npm packages with `npm pack` and checks (default) or rewrites
# (--update) the vendored files against them. The versions are pinned here and in
# vendor/README.md; the page never fetches anything at run time.
#
#   scripts/playground-vendor.sh [--update]
set -euo pipefail
cd "$(dirname "$0")/.."
VENDOR=crates/gateway/assets/playground/vendor

MARKED=marked@18.2.1
DOMPURIFY=dompurify@3.5.0
# package file -> vendored file
FILES=(
  "$MARKED lib/marked.esm.js marked.esm.js"
  "$MARKED LICENSE marked.LICENSE.md"
  "$DOMPURIFY dist/purify.es.mjs purify.es.mjs"
  "$DOMPURIFY LICENSE dompurify.LICENSE-Apache-2.0.txt"
  "$DOMPURIFY LICENSE-MPL dompurify.LICENSE-MPL-2.0.txt"
)

update=0
case "${1:-}" in
  --update) update=1 ;;
  "") ;;
  *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for pkg in "$MARKED" "$DOMPURIFY"; do
  mkdir -p "$tmp/$pkg"
  tgz="$(cd "$tmp/$pkg" && npm pack --silent "$pkg")"
  tar xzf "$tmp/$pkg/$tgz" -C "$tmp/$pkg"
done

status=0
for entry in "${FILES[@]}"; do
  read -r pkg from to <<<"$entry"
  if [ "$update" = 1 ]; then
    cp "$tmp/$pkg/package/$from" "$VENDOR/$to"
    echo "updated $VENDOR/$to from $pkg $from"
  elif cmp -s "$tmp/$pkg/package/$from" "$VENDOR/$to"; then
    echo "ok $VENDOR/$to = $pkg $from"
  else
    echo "DIFFERS $VENDOR/$to != $pkg $from" >&2
    status=1
  fi
done
exit "$status"
