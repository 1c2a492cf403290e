#!/usr/bin/env bash
# Gateway-vs-direct-upstream benchmark. See bench/README.md.
#
#   bench/run.sh [--quick] [--no-build] [--bin-dir DIR] [SCENARIO ...]
#
# Needs only cargo, bash, coreutils and taskset (util-linux). Builds the release
# binaries, starts scripted-upstream on the client core and, per scenario, a fresh
# gateway pinned alone to the gateway core; measures the direct upstream and the
# gateway with the same load; prints the table and writes bench/results/latest.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="$ROOT/target/release"

QUICK=0
BUILD=1
ONLY=()
next_is_bin=0
for arg in "$@"; do
    if [ "$next_is_bin" = 1 ]; then BIN="$(cd "$arg" && pwd)"; BUILD=0; next_is_bin=0; continue; fi
    case "$arg" in
        --quick) QUICK=1 ;;
        --no-build) BUILD=0 ;;
        # The binaries of another build (the `profiling` profile's are release code).
        --bin-dir) next_is_bin=1 ;;
        -h|--help) head -n 9 "$0" | tail -n +2; exit 0 ;;
        -*) echo "unknown flag: $arg" >&2; exit 2 ;;
        *) ONLY+=("$arg") ;;
    esac
done

# Cores: the gateway alone on one, load generator + scripted upstream on the other.
CLIENT_CPU="${BENCH_CLIENT_CPU:-0}"
GATEWAY_CPU="${BENCH_GATEWAY_CPU:-1}"
CLK_TCK="$(getconf CLK_TCK 2>/dev/null || echo 100)"
TOKENS=64
TOOL_SCRIPT='{"tool_calls":[{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}]}'

# ---------------------------------------------------------------------------
# Scenarios. A scenario is a function `scenario_<name>` that calls measure_pair
# (or measure_direct and measure_gateway with different arguments). Arguments after
# the name go to `loadgen run` (see `target/release/loadgen run --help`); the
# gateway is started fresh for each measure_gateway with the flags in GATEWAY_ARGS.
# Add a scenario: write its function and append its name to SCENARIOS.
# ---------------------------------------------------------------------------

# Picks the full or the --quick request count.
n() { if [ "$QUICK" = 1 ]; then echo "$2"; else echo "$1"; fi; }

# (a) a 64-token streamed answer, one request at a time.
scenario_stream-c1() {
    measure_pair stream-c1 --stream --expect-deltas "$TOKENS" --concurrency 1 --requests "$(n 2000 300)" \
        --target-cpu-ms 0.40 --target-added-ttft-p50-ms 0.15 --target-rss-mib 40
}

# (b) the same at concurrency 64.
scenario_stream-c64() {
    measure_pair stream-c64 --stream --expect-deltas "$TOKENS" --concurrency 64 --requests "$(n 20000 3000)" \
        --target-cpu-ms 0.40 --target-rss-mib 40
}

# (c) one client-owned function tool, not streamed: the model calls it, the
# gateway answers a function_call item (the direct upstream: tool_calls). 10000
# requests: CPU is read in 10 ms clock ticks, so ~1 s of gateway CPU is ±1 %.
scenario_tool-c1() {
    measure_pair tool-c1 --tool --push-script "$TOOL_SCRIPT" --concurrency 1 --requests "$(n 10000 300)" \
        --target-cpu-ms 0.10 --target-added-ttft-p50-ms 0.15 --target-rss-mib 40
}

scenario_tool-c64() {
    measure_pair tool-c64 --tool --push-script "$TOOL_SCRIPT" --concurrency 64 --requests "$(n 20000 3000)" \
        --target-cpu-ms 0.10 --target-rss-mib 40
}

# Next (sketch): a gateway-owned tool round. The scripted model first calls
# package_version, the gateway runs it and asks again, the model answers 64 tokens:
#   scenario_owned-tool-c1() {
#       GATEWAY_ARGS=(--config "$ROOT/bench/owned-tool.toml")   # enables package_version
#       measure_direct  owned-tool-c1 --stream --expect-deltas "$TOKENS" --concurrency 1 --requests "$(n 2000 300)"
#       measure_gateway owned-tool-c1 --stream --expect-deltas "$TOKENS" --concurrency 1 --requests "$(n 2000 300)" \
#           --push-script '{"tool_calls":[{"name":"package_version","arguments":"{\"name\":\"serde\"}"}]}' \
#           --target-cpu-ms 0.80 --target-rss-mib 40
#       GATEWAY_ARGS=()
#   }
# (Only tool-call scripts are queued; the second round takes the 64-token default.
# At concurrency > 1 the FIFO queue does not pair scripts with requests, but every
# request still ends after its text answer and the totals match: N tool rounds.)

SCENARIOS=(stream-c1 stream-c64 tool-c1 tool-c64)
GATEWAY_ARGS=()

# Scenarios kept in their own files: each defines scenario_<name> functions and appends
# the names to SCENARIOS (bench/scenarios/web-search.sh: search-c1, search-nostore-c1).
for f in "$ROOT"/bench/scenarios/*.sh; do
    [ -e "$f" ] || continue
    # shellcheck source=/dev/null
    . "$f"
done

# ---------------------------------------------------------------------------
# Machinery.
# ---------------------------------------------------------------------------

STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
RESULTS="$ROOT/bench/results"
RUN_DIR="$RESULTS/run-$STAMP"
TMP="$(mktemp -d)"
mkdir -p "$RUN_DIR"
STARTED_PIDS=()

cleanup() {
    local pid
    for pid in "${STARTED_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${STARTED_PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[bench] $*" >&2; }

# Waits until FILE has a line matching the regex and prints its first capture group.
await_line() {
    local file="$1" regex="$2" what="$3" pid="$4" line i
    for ((i = 0; i < 300; i++)); do
        if [ -s "$file" ]; then
            while IFS= read -r line; do
                if [[ "$line" =~ $regex ]]; then
                    echo "${BASH_REMATCH[1]}"
                    return 0
                fi
            done < "$file"
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            log "$what exited early:"; cat "$file" >&2; return 1
        fi
        sleep 0.05
    done
    log "$what did not start in 15 s:"; cat "$file" >&2
    return 1
}

loadgen() { taskset -c "$CLIENT_CPU" "$BIN/loadgen" "$@"; }

start_upstream() {
    taskset -c "$CLIENT_CPU" "$BIN/scripted-upstream" --listen 127.0.0.1:0 \
        --default-tokens "$TOKENS" --token-delay-ms 0 --no-record > "$TMP/upstream.out" 2>&1 &
    UPSTREAM_PID=$!
    STARTED_PIDS+=("$UPSTREAM_PID")
    UPSTREAM="$(await_line "$TMP/upstream.out" '^LISTENING (http://[^ ]+)' scripted-upstream "$UPSTREAM_PID")"
    loadgen wait "$UPSTREAM/health"
    log "scripted-upstream pid $UPSTREAM_PID at $UPSTREAM (cpu $CLIENT_CPU)"
}

start_gateway() {
    local logf="$TMP/gateway-$1.log"
    taskset -c "$GATEWAY_CPU" "$BIN/responses-gateway" serve --upstream-url "$UPSTREAM/v1" \
        --listen 127.0.0.1:0 --data-dir "$TMP/gateway-data" ${GATEWAY_ARGS[@]+"${GATEWAY_ARGS[@]}"} \
        > "$logf" 2>&1 &
    GATEWAY_PID=$!
    STARTED_PIDS+=("$GATEWAY_PID")
    GATEWAY="http://$(await_line "$logf" 'listening on http://([0-9.]+:[0-9]+)' gateway "$GATEWAY_PID")"
    loadgen wait "$GATEWAY/healthz"
}

stop_gateway() {
    kill "$GATEWAY_PID" 2>/dev/null || true
    wait "$GATEWAY_PID" 2>/dev/null || true
}

# measure_direct NAME LOADGEN_ARGS...: the load against the upstream itself.
measure_direct() {
    local name="$1"; shift
    log "$name: direct upstream"
    # DIRECT_API=responses: the upstream's own /v1/responses (read as the gateway's stream is).
    local target=upstream
    [ "${DIRECT_API:-chat}" = responses ] && target=gateway
    loadgen run --scenario "$name" --target "$target" --base-url "$UPSTREAM/v1" --control-url "$UPSTREAM" \
        --bench-pid "$UPSTREAM_PID" --clk-tck "$CLK_TCK" "$@" > "$RUN_DIR/$name.direct.json"
    summary "$RUN_DIR/$name.direct.json"
}

# measure_gateway NAME LOADGEN_ARGS...: the same load through a fresh gateway.
measure_gateway() {
    local name="$1"; shift
    start_gateway "$name"
    log "$name: gateway pid $GATEWAY_PID at $GATEWAY (cpu $GATEWAY_CPU)"
    loadgen run --scenario "$name" --target gateway --base-url "$GATEWAY/v1" --control-url "$UPSTREAM" \
        --server-pid "$GATEWAY_PID" --bench-pid "$UPSTREAM_PID" --clk-tck "$CLK_TCK" "$@" \
        > "$RUN_DIR/$name.gateway.json"
    stop_gateway
    summary "$RUN_DIR/$name.gateway.json"
}

measure_pair() {
    measure_direct "$@"
    measure_gateway "$@"
}

# One line per measurement, from the JSON, with bash only.
summary() {
    local file="$1" line ok="" errors="" rps=""
    while IFS= read -r line; do
        case "$line" in
            '  "ok": '*) ok="${line#*: }" ;;
            '  "errors": '*) errors="${line#*: }" ;;
            '  "rps": '*) rps="${line#*: }" ;;
        esac
    done < "$file"
    log "    ok ${ok%,}, errors ${errors%,}, req/s ${rps%,}"
}

# ---------------------------------------------------------------------------

command -v taskset > /dev/null || { echo "taskset (util-linux) is required" >&2; exit 1; }
if [ "$(nproc --all)" -lt 2 ]; then
    log "fewer than 2 CPUs: everything shares cpu 0; figures are not comparable"
    GATEWAY_CPU=0
fi

if [ "$BUILD" = 1 ]; then
    log "building release binaries"
    cargo build --release -p responses-gateway -p scripted-upstream -p loadgen
fi

if [ "${#ONLY[@]}" -gt 0 ]; then
    SCENARIOS=("${ONLY[@]}")
fi
for s in "${SCENARIOS[@]}"; do
    declare -F "scenario_$s" > /dev/null || { echo "unknown scenario: $s" >&2; exit 2; }
done

read -r LOAD_START _ < /proc/loadavg
GATEWAY_BUILT="$(date -u -r "$BIN/responses-gateway" +%Y-%m-%dT%H:%M:%SZ)"
log "load average before: $LOAD_START (other work on these cores skews every figure)"
start_upstream
T0=$SECONDS
for s in "${SCENARIOS[@]}"; do
    "scenario_$s"
done
read -r LOAD_END _ < /proc/loadavg
log "measured in $((SECONDS - T0)) s; load average after: $LOAD_END; raw results in $RUN_DIR"

REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
DIRTY="$(git -C "$ROOT" status --porcelain 2>/dev/null | head -c 1 || true)"
loadgen report --dir "$RUN_DIR" --out "$RESULTS/latest.json" \
    --meta "revision=$REV${DIRTY:+-dirty}" --meta "quick=$QUICK" --meta "stamp=$STAMP" \
    --meta "client_cpu=$CLIENT_CPU" --meta "gateway_cpu=$GATEWAY_CPU" --meta "clk_tck=$CLK_TCK" \
    --meta "tokens=$TOKENS" --meta "run_dir=$RUN_DIR" \
    --meta "gateway_binary_built=$GATEWAY_BUILT" --meta "loadavg_1m_before=$LOAD_START" --meta "loadavg_1m_after=$LOAD_END" \
    "${SCENARIOS[@]}"
cp "$RESULTS/latest.json" "$RUN_DIR/report.json"
