#!/usr/bin/env bash
# Runs every test: Rust unit/integration/fuzz tests, the Python end-to-end tests with the
# official openai SDK, then (serially, last) the real-model smoke test.
# Usage: scripts/test.sh [--no-real-model]
set -euo pipefail
cd "$(dirname "$0")/.."

real_model=1
for arg in "$@"; do
  case "$arg" in
    --no-real-model) real_model=0 ;;
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done

echo "== cargo test (workspace) =="
cargo build --workspace --bins
cargo test --workspace

echo "== Python end-to-end tests (openai SDK) =="
GATEWAY_BIN="$PWD/target/debug/responses-gateway" UPSTREAM_BIN="$PWD/target/debug/scripted-upstream" \
  bash tests/python/run.sh

if [ "$real_model" = 1 ]; then
  echo "== real model (SmolLM2-135M via llama.cpp) =="
  bash scripts/real-model.sh
fi
echo "== all tests passed =="
