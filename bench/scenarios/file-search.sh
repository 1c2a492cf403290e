# shellcheck shell=bash
# Sourced by bench/run.sh (see "Adding a scenario" in bench/README.md): the gateway-owned
# file_search scenario. Uses run.sh's helpers (n, measure_direct, measure_gateway,
# await_line, log) and variables (BIN, TMP, CLIENT_CPU, STARTED_PIDS, TOKENS).
#
# fsearch-nostore-c1: one file_search round plus a 64-token cited answer, streamed,
#   concurrency 1, store false. The client declares {"type":"file_search",
#   "vector_store_ids":["vs_bench"]} with include file_search_call.results; the gateway
#   checks the store id on the remote (`loadgen vector-fixture`, a vector store API that
#   answers at once: the executor is excluded), the scripted model calls
#   file_search({"queries":[…]}), the gateway POSTs the search, records the
#   file_search_call (progress message, in_progress → searching → completed, results),
#   asks the model again and streams its 64-token answer through the citation-marker
#   filter (two 【N】 markers → two file_citation annotations).
# The direct side is the 64-token answer alone; gateway CPU ms/request is the figure
# (target ≤ 0.8 ms, issue 5). The gateway stream carries 65 text deltas: 1 (progress) + 64.

FSEARCH_CALL_SCRIPT='{"tool_calls":[{"name":"file_search","arguments":"{\"queries\":[\"2025 Tour de France winner\"]}"}]}'

# The 64-token cited answer: 64 deltas, two ending with a citation marker.
fsearch_answer_script() {
    local i parts=()
    for ((i = 0; i < TOKENS; i++)); do
        case "$i" in
            20) parts+=('"Pogačar won【1】 "') ;;
            50) parts+=('"record【3】 "') ;;
            *) parts+=("\"word$i \"") ;;
        esac
    done
    local IFS=,
    echo "{\"text\":[${parts[*]}]}"
}

scenario_fsearch-nostore-c1() {
    local name=fsearch-nostore-c1 requests warmup=100 answer body url pid served
    requests="$(n 2000 300)"
    answer="$(fsearch_answer_script)"
    body="$TMP/$name.body.json"
    echo '{"model":"m","input":"Who won the 2025 Tour de France? Search my files and cite them.","tools":[{"type":"file_search","vector_store_ids":["vs_bench"]}],"include":["file_search_call.results"],"stream":true,"store":false}' > "$body"

    measure_direct "$name" --stream --expect-deltas "$TOKENS" --concurrency 1 --requests "$requests" \
        --warmup "$warmup" --push-script "$answer"

    taskset -c "$CLIENT_CPU" "$BIN/loadgen" vector-fixture --listen 127.0.0.1:0 > "$TMP/vector.out" 2>&1 &
    pid=$!
    STARTED_PIDS+=("$pid")
    url="$(await_line "$TMP/vector.out" '^LISTENING (http://[^ ]+)' vector-fixture "$pid")"
    "$BIN/loadgen" wait "${url%/v1}/healthz"
    export RESPONSES_GATEWAY_FILE_SEARCH__DEFAULT=bench RESPONSES_GATEWAY_FILE_SEARCH__REMOTES__BENCH__URL="$url"
    measure_gateway "$name" --stream --body-file "$body" --expect-deltas "$((TOKENS + 1))" --concurrency 1 \
        --requests "$requests" --warmup "$warmup" --push-script "[$FSEARCH_CALL_SCRIPT,$answer]" \
        --target-cpu-ms 0.80 --target-rss-mib 40
    unset RESPONSES_GATEWAY_FILE_SEARCH__DEFAULT RESPONSES_GATEWAY_FILE_SEARCH__REMOTES__BENCH__URL
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    served="$(await_line "$TMP/vector.out" '^SERVED ([0-9]+) searches' vector-fixture "$pid" || true)"
    if [ "$served" = "$((warmup + requests))" ]; then
        log "    vector fixture served $served searches (one per request, warm-up included)"
    else
        log "    WARNING: vector fixture served ${served:-?} searches, expected $((warmup + requests))"
    fi
}

SCENARIOS+=(fsearch-nostore-c1)
