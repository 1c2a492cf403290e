#!/usr/bin/env bash
# The fault and fuzz suite (issue 28): schemathesis (PyPI, pinned in
# tests/fuzz/requirements.txt) generates requests from the OpenAPI document the gateway
# serves at /openapi.json (generated from the protocol types) and sends them to the real
# binary in front of scripted-upstream. It fails on any 5xx, any error that is not in the
# OpenAI shape, and any answer that the document does not describe (status, content type,
# body). Bounded in time: FUZZ_MAX_TIME seconds (default 150).
#
#   tests/fuzz/run.sh [schemathesis run options...]
#
# Environment:
#   GATEWAY_BIN, UPSTREAM_BIN  binaries to test (built with cargo when either is unset)
#   FUZZ_MAX_TIME              time budget of the run in seconds (default 150)
#   FUZZ_SEED                  schemathesis' random seed (default: a random one, printed)
#   PYTHON                     interpreter that creates the venv (default python3)
# The venv is target/py-venv-fuzz; logs and the JUnit report go to target/fuzz/.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac

REQ="$HERE/requirements.txt"
VENV="$TARGET_DIR/py-venv-fuzz"
# shellcheck source=../python/venv.sh
. "$ROOT/tests/python/venv.sh"

if [ -z "${GATEWAY_BIN:-}" ] || [ -z "${UPSTREAM_BIN:-}" ]; then
  echo "fuzz: cargo build -p responses-gateway -p scripted-upstream" >&2
  (cd "$ROOT" && cargo build -p responses-gateway -p scripted-upstream)
  GATEWAY_BIN="${GATEWAY_BIN:-$TARGET_DIR/debug/responses-gateway}"
  UPSTREAM_BIN="${UPSTREAM_BIN:-$TARGET_DIR/debug/scripted-upstream}"
fi

OUT="$TARGET_DIR/fuzz"
rm -rf "$OUT"
mkdir -p "$OUT/data"
free_port() { "$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
UP_PORT="$(free_port)"
GW_PORT="$(free_port)"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

# The model answers at once with a short text; nothing is recorded (a long run stays flat).
"$UPSTREAM_BIN" --listen "127.0.0.1:$UP_PORT" --no-record --default-tokens 4 >"$OUT/upstream.log" 2>&1 &
pids+=($!)
XDG_DATA_HOME="$OUT/data" RUST_LOG=info RESPONSES_GATEWAY_LOG__FORMAT=json \
  "$GATEWAY_BIN" serve --upstream-url "http://127.0.0.1:$UP_PORT/v1" --listen "127.0.0.1:$GW_PORT" --data-dir "$OUT/data" \
  >"$OUT/gateway.log" 2>&1 &
pids+=($!)
gw_pid=$!
for _ in $(seq 1 300); do
  if "$VENV/bin/python" -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$GW_PORT/healthz', timeout=1)" 2>/dev/null; then
    break
  fi
  kill -0 "$gw_pid" 2>/dev/null || { echo "fuzz: the gateway exited during start-up" >&2; cat "$OUT/gateway.log" >&2; exit 1; }
  sleep 0.2
done

# Ids of what earlier answers created (responses, conversations, items) feed the
# operations that read, change or delete them.
cat >"$OUT/schemathesis.toml" <<'TOML'
[phases.fuzzing.extra-data-sources]
responses = true
TOML

seed="${FUZZ_SEED:-$RANDOM$RANDOM}"
echo "fuzz: schemathesis against http://127.0.0.1:$GW_PORT/openapi.json for at most ${FUZZ_MAX_TIME:-150} s (seed $seed)"
set +e
# From target/fuzz: schemathesis keeps a cache directory where it runs.
(cd "$OUT" && "$VENV/bin/schemathesis" --config-file "$OUT/schemathesis.toml" run "http://127.0.0.1:$GW_PORT/openapi.json" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --phases examples,coverage,fuzzing,stateful \
  --mode all \
  --max-time "${FUZZ_MAX_TIME:-150}" \
  --workers 1 \
  --seed "$seed" \
  --request-timeout 30 \
  --generation-database none \
  --suppress-health-check all \
  --no-color \
  --report junit --report-junit-path "$OUT/junit.xml" \
  "$@") 2>&1 | tee "$OUT/schemathesis.log"
rc=${PIPESTATUS[0]}
set -e
# What the gateway answered, by route and status (its request log lines).
"$VENV/bin/python" - "$OUT/gateway.log" <<'PY'
import collections, json, sys
counts = collections.Counter()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    f = e.get("fields", e)
    if f.get("message") == "request":
        counts[(f.get("method"), f.get("route"), f.get("status"))] += 1
print(f"fuzz: {sum(counts.values())} requests answered; by route and status:")
for (method, route, status), n in sorted(counts.items(), key=lambda kv: (str(kv[0][1]), str(kv[0][0]), str(kv[0][2]))):
    print(f"  {method:6} {route:45} {status}  {n}")
PY
# The gateway must have stayed up through the run.
if ! kill -0 "$gw_pid" 2>/dev/null; then
  echo "fuzz: the gateway died during the run" >&2
  tail -50 "$OUT/gateway.log" >&2
  exit 1
fi
if grep -q "panicked" "$OUT/gateway.log"; then
  echo "fuzz: the gateway panicked" >&2
  grep -B2 -A10 "panicked" "$OUT/gateway.log" | head -60 >&2
  exit 1
fi
exit "$rc"
