#!/usr/bin/env bash
# Background responses' cost: bench/background.py (see its docstring and bench/README.md).
#   bench/background.sh [--no-build] [--requests N] [--latency-runs N]
# Builds responses-gateway and scripted-upstream in release mode (unless --no-build), uses
# the Python venv of the SDK tests (tests/python/run.sh creates it) and PostgreSQL from
# scripts/pg.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=1
args=()
for a in "$@"; do
  case "$a" in
    --no-build) build=0 ;;
    *) args+=("$a") ;;
  esac
done
if [ "$build" = 1 ]; then
  cargo build --release -p responses-gateway -p scripted-upstream
fi
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
PY="${PY:-$TARGET_DIR/py-venv/bin/python}"
[ -x "$PY" ] || { echo "background.sh: no venv at $PY: run tests/python/run.sh once (or set PY)" >&2; exit 2; }
exec "$PY" bench/background.py "${args[@]}"
