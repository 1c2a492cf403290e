#!/usr/bin/env bash
# Real clients against the gateway: the OpenAI Agents SDK (PyPI, pinned in
# requirements-clients.txt) and Codex CLI (npm, pinned in package-lock.json), each driving the
# real gateway binary on scripted-upstream and the SearXNG-shaped fixture.
#
#   tests/clients/run.sh [pytest args, e.g. -k codex]
#
# Environment: GATEWAY_BIN, UPSTREAM_BIN as for tests/python/run.sh (built when unset);
# CODEX_BIN to use another codex binary. The venv is target/py-venv-clients.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
command -v node >/dev/null || { echo "run.sh: node is not installed" >&2; exit 2; }

# Install exactly what package-lock.json pins, again whenever the lock changes.
stamp="$HERE/node_modules/.lock-stamp"
if [ -z "${CODEX_BIN:-}" ] && { [ ! -f "$stamp" ] || ! cmp -s "$HERE/package-lock.json" "$stamp"; }; then
  (cd "$HERE" && npm ci --no-audit --no-fund)
  cp "$HERE/package-lock.json" "$stamp"
fi

cd "$ROOT"
PY_REQUIREMENTS="$HERE/requirements-clients.txt" PY_TESTS="$HERE" exec bash "$ROOT/tests/python/run.sh" "$@"
