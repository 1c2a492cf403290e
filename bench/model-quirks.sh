#!/usr/bin/env bash
# Issue 17's real-model table: how often SmolLM2-135M-Instruct on llama.cpp ends a turn in a
# valid call, leaks call markup, gets invalid arguments to the client, and how many upstream
# rounds a turn takes, through the gateway before issue 17 and after it. A measurement, not a
# test (not run by scripts/test.sh or CI). See bench/README.md, "Real-model tool calls".
#
# Two llama.cpp setups, both with scripts/real_model/chatml-tools.jinja (the model sees the
# tools and the <tool_call> syntax either way):
#   parser  llama.cpp's own tool-call parser, derived from the template (and its lazy
#           grammar, which constrains the arguments once <tool_call> is written)
#   text    serve.py --skip-chat-parsing (llama-server's option of that name): no parser and
#           no grammar, so the model's calls arrive as message text
# For each, the "before" and "after" gateways run the fixed prompt set
# (bench/model_quirks/prompts.json) through the openai SDK; a recording proxy between each
# gateway and llama.cpp counts upstream rounds and adds a fixed seed.
#
# Usage: bench/model-quirks.sh [--mode parser|text]... [--limit N]
#   --mode M    only this setup (repeatable; default: parser and text)
#   --limit N   the first N prompts of each category (N >= 1; a quick check once both
#               gateways are built: on a fresh clone the two debug builds take ~35 min)
# Environment:
#   BEFORE_REF  the gateway before issue 17 (default: 81e9e49, the first parent of the
#               merge of issue 17's first part, b4d503a)
#   BEFORE_BIN  use this binary instead of building BEFORE_REF (git archive into
#               target/model-quirks/before-src, cargo build there; its target dir is
#               BEFORE_TARGET_DIR, default target/model-quirks/before-target)
#   AFTER_BIN   use this binary instead of this checkout's (cargo build -p responses-gateway)
#   BEFORE_DESC, AFTER_DESC: how the table names a given BEFORE_BIN / AFTER_BIN (default: its path)
#   PYTHON, HEALTH_TIMEOUT: as for scripts/real-model.sh
# Output: the Markdown table on stdout and in target/model-quirks/table.md (the modes of the
#   latest run only: it is rewritten each run); each turn in
#   target/model-quirks/<mode>.json (items, upstream requests, what the model wrote);
#   logs in target/model-quirks/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SCRIPT_NAME=model-quirks.sh
# shellcheck source=scripts/lib/model-stack.sh
source scripts/lib/model-stack.sh

WORK="target/model-quirks"
JSONSCHEMA_PIN="jsonschema==4.26.0"
BEFORE_REF="${BEFORE_REF:-81e9e498c8a5adc6933531062a801a69f260ec1b}"

MODES=()
LIMIT=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mode) case "${2:-}" in parser|text) MODES+=("$2") ;; *) die "--mode is parser or text" ;; esac; shift ;;
    --limit)
      [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--limit needs a positive number of prompts"
      LIMIT=(--limit "$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done
(( ${#MODES[@]} )) || MODES=(parser text)

RUN_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [[ -n "$RUN_PID" ]] && kill "$RUN_PID" 2>/dev/null
  stop_pid "$LLAMA_PID" llama.cpp
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$WORK"
install_venv
if ! "$PY" -c 'import jsonschema' 2>/dev/null; then
  say "installing $JSONSCHEMA_PIN into $VENV"
  "$PY" -m pip install --quiet --disable-pip-version-check "$JSONSCHEMA_PIN"
fi

# ---------------------------------------------------------------- the two gateways
if [[ -n "${AFTER_BIN:-}" ]]; then
  [[ -x "$AFTER_BIN" ]] || die "AFTER_BIN=$AFTER_BIN is not an executable"
  AFTER_DESC="${AFTER_DESC:-$AFTER_BIN}"
else
  say "building this checkout's gateway: cargo build -p responses-gateway"
  cargo build -p responses-gateway
  AFTER_BIN="${CARGO_TARGET_DIR:-target}/debug/responses-gateway"
  AFTER_DESC="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo '+changes')"
fi
if [[ -n "${BEFORE_BIN:-}" ]]; then
  [[ -x "$BEFORE_BIN" ]] || die "BEFORE_BIN=$BEFORE_BIN is not an executable"
  BEFORE_DESC="${BEFORE_DESC:-$BEFORE_BIN}"
else
  src="$WORK/before-src"
  if [[ "$(cat "$src/.ref" 2>/dev/null)" != "$BEFORE_REF" ]]; then
    say "extracting $BEFORE_REF into $src"
    rm -rf "$src" && mkdir -p "$src"
    git archive "$BEFORE_REF" | tar -x -C "$src"
    printf '%s' "$BEFORE_REF" > "$src/.ref"
  fi
  before_target="$(mkdir -p "${BEFORE_TARGET_DIR:-$WORK/before-target}" && cd "${BEFORE_TARGET_DIR:-$WORK/before-target}" && pwd)"
  say "building the gateway before issue 17 ($BEFORE_REF) in $src (target dir $before_target)"
  (cd "$src" && CARGO_TARGET_DIR="$before_target" cargo build -p responses-gateway)
  BEFORE_BIN="$before_target/debug/responses-gateway"
  BEFORE_DESC="$(git rev-parse --short "$BEFORE_REF")"
fi

XLLAMACPP="$("$PY" -c 'import importlib.metadata as m; print(m.version("xllamacpp"))')"

# ---------------------------------------------------------------- the runs
outputs=()
for mode in "${MODES[@]}"; do
  serve_args=()
  [[ "$mode" == text ]] && serve_args=(--skip-chat-parsing)
  LLAMA_PORT=""
  start_llama "$WORK/llama-$mode.log" "${serve_args[@]}"
  # In the background and waited for: a TERM to this script runs its trap at once (which
  # stops the run, its gateways and llama.cpp) instead of after the run.
  "$PY" bench/model_quirks/model_quirks.py run --mode "$mode" \
    --llama-url "http://127.0.0.1:$LLAMA_PORT" \
    --gateway "before=$BEFORE_BIN" --gateway "after=$AFTER_BIN" \
    --work "$WORK" --out "$WORK/$mode.json" "${LIMIT[@]}" \
    --meta "before=$BEFORE_DESC" --meta "after=$AFTER_DESC" \
    --meta "model=SmolLM2-135M-Instruct Q4_1" --meta "xllamacpp=$XLLAMACPP" &
  RUN_PID=$!
  wait "$RUN_PID"
  RUN_PID=""
  stop_pid "$LLAMA_PID" llama.cpp
  LLAMA_PID=""
  outputs+=("$WORK/$mode.json")
done

"$PY" bench/model_quirks/model_quirks.py table "${outputs[@]}" --out "$WORK/table.md"
say "table written to $WORK/table.md"
