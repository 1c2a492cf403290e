#!/usr/bin/env bash
# Browser tests of the playground page: node:test + playwright-core (pinned in
# package-lock.json) driving Debian's Chromium against the real gateway binary,
# scripted-upstream, the SearXNG-shaped fixture and a real MCP server (the official
# Python SDK's, tests/python/mcp_server.py).
#
#   tests/browser/run.sh [node --test args, e.g. --test-name-pattern=keyboard]
#
# Environment:
#   GATEWAY_BIN, UPSTREAM_BIN  binaries to test; when either is unset, runs
#                              `cargo build -p responses-gateway -p scripted-upstream`
#                              and uses target/debug/{responses-gateway,scripted-upstream}.
#   CHROMIUM                   browser executable (default /usr/bin/chromium: `apt-get install chromium`).
#   BROWSER_SHOTS_DIR          screenshots and process logs (default target/browser-shots).
#   MCP_PYTHON                 interpreter that runs tests/python/mcp_server.py (the MCP tests'
#                              real MCP server). Default: the Python suite's venv target/py-venv,
#                              created and filled from tests/python/requirements.txt when missing
#                              or stale, as tests/python/run.sh does (PYTHON creates it).
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
# Absolute paths: the tests run from tests/browser.
case "$GATEWAY_BIN" in /*) ;; *) GATEWAY_BIN="$PWD/$GATEWAY_BIN" ;; esac
case "$UPSTREAM_BIN" in /*) ;; *) UPSTREAM_BIN="$PWD/$UPSTREAM_BIN" ;; esac
export GATEWAY_BIN UPSTREAM_BIN
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] || { echo "run.sh: no Chromium at $CHROMIUM (apt-get install -y chromium)" >&2; exit 2; }
command -v node >/dev/null || { echo "run.sh: node is not installed" >&2; exit 2; }

# Install exactly what package-lock.json pins, again whenever the lock changes.
stamp="$HERE/node_modules/.lock-stamp"
if [ ! -f "$stamp" ] || ! cmp -s "$HERE/package-lock.json" "$stamp"; then
  (cd "$HERE" && npm ci --no-audit --no-fund)
  cp "$HERE/package-lock.json" "$stamp"
fi

# The MCP server's venv: the same one, made the same way, as tests/python/run.sh's.
if [ -z "${MCP_PYTHON:-}" ]; then
  VENV="$TARGET_DIR/py-venv"
  REQ="$ROOT/tests/python/requirements.txt"
  # shellcheck source=../python/venv.sh
  . "$ROOT/tests/python/venv.sh"
  export MCP_PYTHON="$VENV/bin/python"
fi
case "$MCP_PYTHON" in /*) ;; *) MCP_PYTHON="$PWD/$MCP_PYTHON" ;; esac
export MCP_PYTHON

export BROWSER_SHOTS_DIR="${BROWSER_SHOTS_DIR:-$TARGET_DIR/browser-shots}"
rm -rf "$BROWSER_SHOTS_DIR/logs" && rm -f "$BROWSER_SHOTS_DIR"/*.png
mkdir -p "$BROWSER_SHOTS_DIR"
cd "$HERE"
status=0
node --test --test-concurrency=1 "$@" lib.test.mjs playground.test.mjs auth.test.mjs || status=$?
echo "screenshots: $BROWSER_SHOTS_DIR"
exit "$status"
