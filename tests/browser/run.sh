#!/usr/bin/env bash
# Browser tests of the playground page: node:test + playwright-core (pinned in
# package-lock.json) driving Debian's Chromium against the real gateway binary,
# scripted-upstream and the SearXNG-shaped fixture.
#
#   tests/browser/run.sh [node --test args, e.g. --test-name-pattern=keyboard]
#
# Environment:
#   GATEWAY_BIN, UPSTREAM_BIN  binaries to test; when either is unset, runs
#                              `cargo build -p responses-gateway -p scripted-upstream`
#                              and uses target/debug/{responses-gateway,scripted-upstream}.
#   CHROMIUM                   browser executable (default /usr/bin/chromium: `apt-get install chromium`).
#   BROWSER_SHOTS_DIR          screenshots and process logs (default target/browser-shots).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac

if [ -z "${GATEWAY_BIN:-}" ] || [ -z "${UPSTREAM_BIN:-}" ]; then
  (cd "$ROOT" && cargo build -p responses-gateway -p scripted-upstream)
  export GATEWAY_BIN="${GATEWAY_BIN:-$TARGET_DIR/debug/responses-gateway}"
  export UPSTREAM_BIN="${UPSTREAM_BIN:-$TARGET_DIR/debug/scripted-upstream}"
fi
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] || { echo "run.sh: no Chromium at $CHROMIUM (apt-get install -y chromium)" >&2; exit 2; }
command -v node >/dev/null || { echo "run.sh: node is not installed" >&2; exit 2; }

# Install exactly what package-lock.json pins, again whenever the lock changes.
stamp="$HERE/node_modules/.lock-stamp"
if [ ! -f "$stamp" ] || ! cmp -s "$HERE/package-lock.json" "$stamp"; then
  (cd "$HERE" && npm ci --no-audit --no-fund)
  cp "$HERE/package-lock.json" "$stamp"
fi

export BROWSER_SHOTS_DIR="${BROWSER_SHOTS_DIR:-$TARGET_DIR/browser-shots}"
rm -rf "$BROWSER_SHOTS_DIR/logs" && rm -f "$BROWSER_SHOTS_DIR"/*.png
mkdir -p "$BROWSER_SHOTS_DIR"
cd "$HERE"
status=0
node --test --test-concurrency=1 "$@" lib.test.mjs playground.test.mjs auth.test.mjs || status=$?
echo "screenshots: $BROWSER_SHOTS_DIR"
exit "$status"
