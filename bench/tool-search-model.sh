#!/usr/bin/env bash
# Issue 31's real-model run (bench/tool_search_model.py; see bench/README.md, "Deferred tools
# and tool search"): SmolLM2-135M-Instruct on llama.cpp (the pinned PyPI packages of
# scripts/lib/model-stack.sh) with 40 client functions, declared directly against deferred
# behind the hosted tool_search. A measurement, not a test.
#   bench/tool-search-model.sh     GATEWAY_BIN: default target/debug/responses-gateway (built)
# Output: the table on stdout; each turn in target/tool-search-model/turns.json.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SCRIPT_NAME=tool-search-model.sh
# shellcheck source=scripts/lib/model-stack.sh
source scripts/lib/model-stack.sh
WORK="target/tool-search-model"
mkdir -p "$WORK"
cleanup() { stop_pid "$LLAMA_PID" llama.cpp; }
trap cleanup EXIT
install_venv
"$PY" -c 'import jsonschema' 2>/dev/null || "$PY" -m pip install --quiet --disable-pip-version-check "jsonschema==4.26.0"
if [[ -z "${GATEWAY_BIN:-}" ]]; then
  cargo build -p responses-gateway
  GATEWAY_BIN="${CARGO_TARGET_DIR:-target}/debug/responses-gateway"
fi
start_llama "$WORK/llama.log"
"$PY" bench/tool_search_model.py --llama-url "http://127.0.0.1:$LLAMA_PORT" --gateway "$GATEWAY_BIN" \
  --work "$WORK" --out "$WORK/turns.json"
