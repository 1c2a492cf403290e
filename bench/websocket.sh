#!/usr/bin/env bash
# WebSocket mode against SSE (issue 27): a 20-call client tool loop, each call answered at
# once by the client, over the WebSocket (one connection, previous_response_id) and over SSE
# (previous_response_id with store: true; the whole history replayed with store: false), with
# store false and true, in one run. Prints wall time and gateway CPU per loop, and the
# WebSocket/SSE ratios. Not a test: figures for the issue note (bench/README.md).
#
#   bench/websocket.sh [--no-build] [--loops N] [--calls N]
#
# The gateway runs alone on one core (BENCH_GATEWAY_CPU, default 1); the client and the
# scripted upstream share the other (BENCH_CLIENT_CPU, default 0). A fresh gateway (SQLite
# store in a temporary directory) serves each of the four runs.
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
loops=50
calls=20
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0 ;;
    --loops) loops="$2"; shift ;;
    --calls) calls="$2"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
gw_cpu="${BENCH_GATEWAY_CPU:-1}"
cl_cpu="${BENCH_CLIENT_CPU:-0}"
if [ "$build" = 1 ]; then
  cargo build --release -p responses-gateway -p scripted-upstream -p loadgen >&2
fi
bin=target/release
tmp="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
  || echo $((20000 + RANDOM % 20000)); }

up_port="$(free_port)"
taskset -c "$cl_cpu" "$bin/scripted-upstream" --listen "127.0.0.1:$up_port" --no-record >"$tmp/upstream.log" 2>&1 &
pids+=($!)
"$bin/loadgen" wait "http://127.0.0.1:$up_port/v1/models" >/dev/null

results=()
for store in false true; do
  for transport in sse ws; do
    port="$(free_port)"
    data="$tmp/data-$transport-$store"
    mkdir -p "$data"
    RUST_LOG=warn RESPONSES_GATEWAY_SERVER__DATA_DIR="$data" taskset -c "$gw_cpu" "$bin/responses-gateway" serve \
      --upstream-url "http://127.0.0.1:$up_port/v1" --listen "127.0.0.1:$port" >"$tmp/gw-$transport-$store.log" 2>&1 &
    gw=$!
    "$bin/loadgen" wait "http://127.0.0.1:$port/healthz" >/dev/null
    out="$(taskset -c "$cl_cpu" "$bin/loadgen" tool-loop --base-url "http://127.0.0.1:$port/v1" \
      --control-url "http://127.0.0.1:$up_port" --transport "$transport" $([ "$store" = true ] && echo --store) \
      --loops "$loops" --calls "$calls" --server-pid "$gw" --clk-tck "$(getconf CLK_TCK)")"
    echo "$out"
    results+=("$out")
    kill "$gw"; wait "$gw" 2>/dev/null || true
  done
done

python3 - "${results[@]}" <<'EOF'
import json, sys
rows = [json.loads(a) for a in sys.argv[1:]]
by = {(r["transport"], r["store"]): r for r in rows}
print()
print(f"{'store':<6} {'transport':<9} {'wall ms/loop p50':>17} {'mean':>8} {'gateway CPU ms/loop':>20}")
for (t, s), r in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"{str(s):<6} {t:<9} {r['wall_ms_p50']:>17.2f} {r['wall_ms_mean']:>8.2f} {r['gateway_cpu_ms_per_loop'] or 0:>20.2f}")
for s in (False, True):
    ws, sse = by[("ws", s)], by[("sse", s)]
    wall = ws["wall_ms_p50"] / sse["wall_ms_p50"]
    cpu = (ws["gateway_cpu_ms_per_loop"] or 0) / max(sse["gateway_cpu_ms_per_loop"] or 1e-9, 1e-9)
    print(f"store={str(s).lower()}: WebSocket/SSE wall {wall:.2f}x (target <= 0.80), gateway CPU {cpu:.2f}x (target <= 1.00)")
EOF
