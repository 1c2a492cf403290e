#!/usr/bin/env bash
# Real-model smoke test: SmolLM2-135M-Instruct behind llama.cpp's OpenAI-compatible
# server (PyPI xllamacpp), the gateway in front of it, and the official openai SDK
# talking to the gateway's Responses API (scripts/real_model/smoke.py). It runs twice: with
# the gateway on llama.cpp's /v1/chat/completions, then on its /v1/responses
# (upstream.api = "responses"). The gateway's
# web_search runs on its http backend against a local SearXNG-shaped fixture
# (scripts/real_model/searxng_fixture.py; the machine has no internet).
#
# Usage: scripts/real-model.sh [--llama-only [--port N]] [--record] [--install-only]
#   (default)       install (idempotent), start llama.cpp and the gateway, run the
#                   smoke test; exit code = smoke test result
#   --llama-only    install, start llama.cpp only, print its URL, stay until Ctrl-C
#   --port N        llama.cpp port for --llama-only (default: a free port)
#   --record        re-record crates/gateway/tests/integration/data/llamacpp_*.{sse,json}
#   --install-only  only create/refresh the venv
# Environment: GATEWAY_BIN (default target/release/responses-gateway, built with
#   cargo if missing), PYTHON (default python3), LLAMA_PORT, SEARCH_PORT,
#   HEALTH_TIMEOUT (seconds, default 120).
# Logs: target/real-model/llama.log, target/real-model/gateway.log,
#   target/real-model/search.log
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SCRIPT_NAME=real-model.sh
# shellcheck source=scripts/lib/model-stack.sh
source scripts/lib/model-stack.sh

WORK="target/real-model"
LLAMA_LOG="$WORK/llama.log"
GW_LOG="$WORK/gateway.log"
SEARCH_LOG="$WORK/search.log"
GW_DATA="$WORK/gateway-data"

MODE=smoke
LLAMA_PORT="${LLAMA_PORT:-}"
SEARCH_PORT="${SEARCH_PORT:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --llama-only) MODE=llama ;;
    --record) MODE=record ;;
    --install-only) MODE=install ;;
    --port) LLAMA_PORT="${2:?--port needs a value}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "real-model.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

GW_PID=""
SEARCH_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$GW_PID" gateway
  stop_pid "$SEARCH_PID" searxng-fixture
  stop_pid "$LLAMA_PID" llama.cpp
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

SEARCH_URL=""
start_search() {
  SEARCH_PORT="${SEARCH_PORT:-$(free_port)}"
  SEARCH_URL="http://127.0.0.1:$SEARCH_PORT/search"
  say "starting the SearXNG-shaped search fixture on $SEARCH_URL (log: $SEARCH_LOG)"
  "$PY" scripts/real_model/searxng_fixture.py --port "$SEARCH_PORT" > "$SEARCH_LOG" 2>&1 &
  SEARCH_PID=$!
  wait_http searxng-fixture "http://127.0.0.1:$SEARCH_PORT/healthz" "$SEARCH_PID" "$SEARCH_LOG"
}

start_gateway() {  # start_gateway [chat|responses]: the upstream API the gateway speaks
  local api="${1:-chat}"
  local bin="${GATEWAY_BIN:-target/release/responses-gateway}"
  if [[ ! -x "$bin" ]]; then
    [[ -z "${GATEWAY_BIN:-}" ]] || die "GATEWAY_BIN=$bin is not an executable"
    say "building the gateway: cargo build --release -p responses-gateway"
    cargo build --release -p responses-gateway
  fi
  GW_PORT="$(free_port)"
  say "starting the gateway ($api upstream) on 127.0.0.1:$GW_PORT -> http://127.0.0.1:$LLAMA_PORT/v1 (log: $GW_LOG)"
  rm -rf "$GW_DATA"  # a fresh data dir per run: no state from earlier runs
  local search_env=()
  if [[ -n "$SEARCH_URL" ]]; then
    say "gateway web_search: http backend -> $SEARCH_URL"
    search_env=(RESPONSES_GATEWAY_WEB_SEARCH__BACKEND=http "RESPONSES_GATEWAY_WEB_SEARCH__HTTP__URL=$SEARCH_URL")
  fi
  env "${search_env[@]}" "RESPONSES_GATEWAY_UPSTREAM__API=$api" "$bin" serve --upstream-url "http://127.0.0.1:$LLAMA_PORT/v1" --listen "127.0.0.1:$GW_PORT" \
    --data-dir "$GW_DATA" > "$GW_LOG" 2>&1 &
  GW_PID=$!
  wait_http gateway "http://127.0.0.1:$GW_PORT/healthz" "$GW_PID" "$GW_LOG"
}

# ---------------------------------------------------------------- main
install_venv
case "$MODE" in
  install)
    exit 0 ;;
  llama)
    start_llama "$LLAMA_LOG"
    say "llama.cpp OpenAI base URL: http://127.0.0.1:$LLAMA_PORT/v1 (model \"smollm2\"); Ctrl-C to stop"
    wait "$LLAMA_PID" ;;
  record)
    start_llama "$LLAMA_LOG"
    "$PY" scripts/real_model/record.py --base-url "http://127.0.0.1:$LLAMA_PORT/v1" \
      --out crates/gateway/tests/integration/data ;;
  smoke)
    start_llama "$LLAMA_LOG"
    start_search
    rc=0
    : > "$GW_LOG"
    for api in chat responses; do
      start_gateway "$api"
      say "running the smoke test against http://127.0.0.1:$GW_PORT/v1 (the gateway on llama.cpp's $api API)"
      "$PY" scripts/real_model/smoke.py --base-url "http://127.0.0.1:$GW_PORT/v1" --search-url "$SEARCH_URL" || rc=$?
      stop_pid "$GW_PID" gateway
      GW_PID=""
    done
    if (( rc != 0 )); then
      echo "---- last lines of $GW_LOG"; tail -n 40 "$GW_LOG" || true
      echo "---- last lines of $LLAMA_LOG"; tail -n 20 "$LLAMA_LOG" || true
      echo "---- last lines of $SEARCH_LOG"; tail -n 10 "$SEARCH_LOG" || true
      say "smoke test FAILED (exit $rc)"
    else
      say "smoke test passed"
    fi
    exit "$rc" ;;
esac
