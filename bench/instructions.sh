#!/usr/bin/env bash
# Instructions per request of the gateway, counted by valgrind's callgrind: a figure that,
# unlike CPU time, does not move with the machine's speed (run it on an idle machine: how
# upstream chunks batch depends on timing). See bench/README.md.
#
#   bench/instructions.sh [--no-build] [--requests N] [--keep DIR] [--syscalls] [--bin-dir DIR]
#                         [--token-delay-ms MS] [--warmup N] [--baseline FILE [--tolerance PCT]] [SCENARIO ...]
#
# Scenarios: tool (one client-owned function tool, not streamed, store:false), stream
# (64-token streamed answer, store:false), tool-stored, stream-stored (store: true),
# stream-background (the stream with background: true: every event also goes to the run
# log); tool-responses and stream-responses are tool and stream with the gateway on the same
# scripted model's /v1/responses (upstream.api = "responses").
# Each runs the gateway under callgrind twice, with 20 and 20+N requests (default N=400;
# the load generator's warm-up runs in both), and prints (total2 - total1) / N: startup,
# warm-up and shutdown cancel out. Needs valgrind (Debian package `valgrind`).
# The binaries are Cargo's `profiling` profile (the release build with line tables, in
# target/profiling): `--keep DIR` keeps callgrind's profiles there, for
# `callgrind_annotate DIR/cg.tool.420.out` by function, file and line. --bin-dir DIR runs
# the binaries in DIR instead (the CI guard runs the debug build). --syscalls counts system
# calls instead (strace -f -c), per request and by kind: the kernel work callgrind does not see.
# --token-delay-ms MS: the scripted model waits MS between tokens (default 0). At 0 the tokens
# of a stream arrive together and the gateway sends them as few deltas, how few depending on
# timing; with a delay each token is its own delta, and the count repeats within ~2 %.
# --warmup N: the load generator's warm-up requests (in both runs; default its own, 100).
# --baseline FILE (the CI guard, scripts/test.sh): FILE has lines `SCENARIO INSTRUCTIONS`;
# the scenarios are FILE's, and the script exits 1 when one costs more than PCT % (default 10)
# over its line. Raising a baseline is a commit of its own that says why.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/target/profiling"
BUILD=1
REQUESTS=400
KEEP=""
SYSCALLS=0
BASELINE=""
TOLERANCE=10
TOKEN_DELAY=0
WARMUP=()
ONLY=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) BUILD=0 ;;
        --requests) REQUESTS="$2"; shift ;;
        --keep) KEEP="$2"; shift ;;
        --syscalls) SYSCALLS=1 ;;
        --bin-dir) BIN="$(cd "$2" && pwd)"; BUILD=0; shift ;;
        --baseline) BASELINE="$2"; shift ;;
        --tolerance) TOLERANCE="$2"; shift ;;
        --token-delay-ms) TOKEN_DELAY="$2"; shift ;;
        --warmup) WARMUP=(--warmup "$2"); shift ;;
        -h|--help) sed -n 2,27p "$0"; exit 0 ;;
        -*) echo "unknown flag: $1" >&2; exit 2 ;;
        *) ONLY+=("$1") ;;
    esac
    shift
done
if [ -n "$BASELINE" ]; then
    [ -f "$BASELINE" ] || { echo "no baseline file $BASELINE" >&2; exit 2; }
    [ "$SYSCALLS" = 0 ] || { echo "--baseline counts instructions, not system calls" >&2; exit 2; }
    [ "${#ONLY[@]}" = 0 ] || { echo "--baseline takes its scenarios from the file" >&2; exit 2; }
    while read -r name _; do
        case "$name" in ''|'#'*) ;; *) ONLY+=("$name") ;; esac
    done < "$BASELINE"
fi
[ "${#ONLY[@]}" -gt 0 ] || ONLY=(tool stream tool-stored stream-stored)
if [ "$SYSCALLS" = 1 ]; then
    command -v strace > /dev/null || { echo "strace is required (apt-get install strace)" >&2; exit 1; }
else
    command -v valgrind > /dev/null || { echo "valgrind is required (apt-get install valgrind)" >&2; exit 1; }
fi

if [ "$BUILD" = 1 ]; then
    (cd "$ROOT" && cargo build --profile profiling -p responses-gateway -p scripted-upstream -p loadgen)
fi

TMP="$(mktemp -d)"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT

# Waits until FILE has a line matching REGEX and prints its first capture group.
await_line() {
    local file="$1" regex="$2" line i
    for ((i = 0; i < 1200; i++)); do
        if [ -s "$file" ]; then
            while IFS= read -r line; do
                if [[ "$line" =~ $regex ]]; then echo "${BASH_REMATCH[1]}"; return 0; fi
            done < "$file"
        fi
        sleep 0.1
    done
    echo "no line matching $regex in $file:" >&2; cat "$file" >&2
    return 1
}

"$BIN/scripted-upstream" --listen 127.0.0.1:0 --default-tokens 64 --token-delay-ms "$TOKEN_DELAY" --no-record > "$TMP/upstream.out" 2>&1 &
PIDS+=($!)
UPSTREAM="$(await_line "$TMP/upstream.out" '^LISTENING (http://[^ ]+)')"

TOOLS='"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]'
SCRIPT='{"tool_calls":[{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}]}'

# total_instructions SCENARIO N: runs N requests through a gateway under callgrind and
# prints the program's total instruction count.
total_instructions() {
    local scenario="$1" n="$2" body args=() out="$TMP/cg.$1.$2.out" log="$TMP/gateway.$1.$2.log" api=chat
    case "$scenario" in
        *-responses) api=responses ;;
    esac
    case "${scenario%-responses}" in
        tool) body="{\"model\":\"m\",\"input\":\"hi\",\"store\":false,$TOOLS}"; args=(--tool --push-script "$SCRIPT") ;;
        tool-stored) body="{\"model\":\"m\",\"input\":\"hi\",$TOOLS}"; args=(--tool --push-script "$SCRIPT") ;;
        stream) body='{"model":"m","input":"hi","stream":true,"store":false}'; args=(--stream --expect-deltas 64) ;;
        stream-stored) body='{"model":"m","input":"hi","stream":true}'; args=(--stream --expect-deltas 64) ;;
        stream-background) body='{"model":"m","input":"hi","stream":true,"background":true}'; args=(--stream --expect-deltas 64) ;;
        *) echo "unknown scenario: $scenario" >&2; exit 2 ;;
    esac
    echo "$body" > "$TMP/body.json"
    local runner=(valgrind --tool=callgrind --callgrind-out-file="$out")
    [ "$SYSCALLS" = 1 ] && runner=(strace -f -c -o "$out")
    # The API is set only when not the default chat one (older builds, for a bisection, know
    # no `upstream.api`).
    local env=()
    [ "$api" = chat ] || env=(RESPONSES_GATEWAY_UPSTREAM__API="$api")
    env "${env[@]}" "${runner[@]}" "$BIN/responses-gateway" serve \
        --upstream-url "$UPSTREAM/v1" --listen 127.0.0.1:0 --data-dir "$TMP/data-$scenario-$n" > "$log" 2>&1 &
    local pid=$!
    PIDS+=("$pid")
    local gateway
    gateway="http://$(await_line "$log" 'listening on http://([0-9.]+:[0-9]+)')"
    "$BIN/loadgen" wait "$gateway/healthz"
    "$BIN/loadgen" run --scenario "$scenario" --target gateway --base-url "$gateway/v1" --control-url "$UPSTREAM" \
        --body-file "$TMP/body.json" --concurrency 1 --requests "$n" "${WARMUP[@]}" "${args[@]}" > /dev/null
    # Under strace the gateway is strace's child: it is the one stopped (strace then writes
    # its table and exits; a SIGINT to strace would leave the gateway running).
    local target="$pid"
    [ "$SYSCALLS" = 0 ] || target="$(pgrep -P "$pid" | head -n 1)"
    kill -INT "${target:-$pid}"
    wait "$pid" 2>/dev/null || true
    [ -z "$KEEP" ] || { mkdir -p "$KEEP" && cp "$out" "$KEEP/"; }
    if [ "$SYSCALLS" = 1 ]; then
        # The sum of strace -c's `calls` column (% time, seconds, usecs/call, calls,
        # [errors,] syscall).
        awk '$1 ~ /^[0-9.]+$/ && $NF != "total" { t += $4 } END { print t + 0 }' "$out"
        return
    fi
    # callgrind writes `totals: N` (or `summary: N`) into its output file.
    sed -n 's/^\(totals\|summary\): *\([0-9]*\).*/\2/p' "$out" | head -n 1
}

# The system calls per request by kind: two strace -c tables' difference, per request.
syscall_kinds() {
    awk -v n="$3" '
        FNR == 1 { file++ }
        $1 ~ /^[0-9.]+$/ && $NF != "total" { c[file, $NF] = $4; k[$NF] = 1 }
        END { for (s in k) { d = (c[2, s] - c[1, s]) / n; if (d >= 0.05) printf "    %-16s %8.2f\n", s, d } }
    ' "$1" "$2" | sort -k2 -nr
}

unit="instr/request"
[ "$SYSCALLS" = 1 ] && unit="syscalls/request"
if [ -n "$BASELINE" ]; then
    printf '%-18s %16s %16s %8s\n' scenario "$unit" baseline change
else
    printf '%-18s %16s\n' scenario "$unit"
fi
over=0
for s in "${ONLY[@]}"; do
    low="$(total_instructions "$s" 20)"
    high="$(total_instructions "$s" $((20 + REQUESTS)))"
    if [ "$SYSCALLS" = 1 ]; then
        printf '%-18s %16.2f\n' "$s" "$(echo "($high - $low) / $REQUESTS" | bc -l)"
        syscall_kinds "$TMP/cg.$s.20.out" "$TMP/cg.$s.$((20 + REQUESTS)).out" "$REQUESTS"
    elif [ -n "$BASELINE" ]; then
        per=$(((high - low) / REQUESTS))
        base="$(awk -v s="$s" '$1 == s { print $2 }' "$BASELINE")"
        [ -n "$base" ] && [ "$base" -gt 0 ] || { echo "no baseline for $s in $BASELINE" >&2; exit 2; }
        change="$(awk -v a="$per" -v b="$base" 'BEGIN { printf "%+.1f%%", (a - b) * 100 / b }')"
        printf '%-18s %16d %16d %8s\n' "$s" "$per" "$base" "$change"
        if awk -v a="$per" -v b="$base" -v t="$TOLERANCE" 'BEGIN { exit !(a > b * (1 + t / 100)) }'; then
            echo "  $s costs more than $TOLERANCE % over its baseline in $BASELINE" >&2
            over=1
        fi
    else
        printf '%-18s %16d\n' "$s" $(((high - low) / REQUESTS))
    fi
done
exit "$over"
