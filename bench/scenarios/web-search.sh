# shellcheck shell=bash
# Sourced by bench/run.sh (see "Adding a scenario" in bench/README.md): the gateway-owned
# web_search scenarios. Uses run.sh's helpers (n, measure_direct, measure_gateway,
# await_line, log) and variables (BIN, TMP, CLIENT_CPU, STARTED_PIDS, TOKENS).
#
# search-c1: one search round plus a 64-token cited answer, streamed, concurrency 1.
#   The client declares {"type":"web_search"}; the scripted model calls
#   web_search({"query":…}); the gateway GETs `loadgen search-fixture` (a SearXNG-shaped
#   page answered at once: 5 results, one duplicate and one javascript: URL to drop),
#   records the web_search_call (progress message, in_progress → searching → completed),
#   asks the model again, streams its 64-token answer and scans it for source URLs (one
#   markdown link, one bare URL → two url_citation annotations). Default store (true),
#   like the other scenarios.
# search-nostore-c1: the same with "store": false (the search round and the citation
#   scan without the SQLite write).
# The direct side is the 64-token answer alone (the same answer script, one chat
# completion): the gateway side does two upstream rounds and one search more, so its TTFT
# and added TTFT are not like-for-like; gateway CPU ms/request is the figure (target
# ≤ 0.8 ms, issue 4). TTFT through the gateway is the first text delta, i.e. the
# progress message "Searching the web for …", sent before the search runs. The gateway
# stream carries 65 text deltas: 1 (progress) + 64 (answer).

SEARCH_CALL_SCRIPT='{"tool_calls":[{"name":"web_search","arguments":"{\"query\":\"2025 Tour de France winner\"}"}]}'

# The 64-token cited answer as one scripted-upstream text script: 64 deltas, one holding
# a markdown link to a source, one a bare source URL.
search_answer_script() {
    local i parts=()
    for ((i = 0; i < TOKENS; i++)); do
        case "$i" in
            20) parts+=('"([Wikipedia](https://en.wikipedia.org/wiki/2025_Tour_de_France)) "') ;;
            50) parts+=('"https://www.letour.fr/en/rankings "') ;;
            *) parts+=("\"word$i \"") ;;
        esac
    done
    local IFS=,
    echo "{\"text\":[${parts[*]}]}"
}

# start_search_fixture: `loadgen search-fixture` on the client core; sets SEARCH_URL.
start_search_fixture() {
    taskset -c "$CLIENT_CPU" "$BIN/loadgen" search-fixture --listen 127.0.0.1:0 > "$TMP/search.out" 2>&1 &
    SEARCH_PID=$!
    STARTED_PIDS+=("$SEARCH_PID")
    SEARCH_URL="$(await_line "$TMP/search.out" '^LISTENING (http://[^ ]+)' search-fixture "$SEARCH_PID")"
    "$BIN/loadgen" wait "${SEARCH_URL%/search}/healthz"
}

# stop_search_fixture EXPECTED: stops it and checks that it served EXPECTED searches.
stop_search_fixture() {
    local want="$1" served
    kill "$SEARCH_PID" 2>/dev/null || true
    wait "$SEARCH_PID" 2>/dev/null || true
    served="$(await_line "$TMP/search.out" '^SERVED ([0-9]+) searches' search-fixture "$SEARCH_PID" || true)"
    if [ "$served" = "$want" ]; then
        log "    search fixture served $served searches (one per request, warm-up included)"
    else
        log "    WARNING: search fixture served ${served:-?} searches, expected $want: not every request searched"
    fi
}

# search_scenario NAME STORE(true|false)
search_scenario() {
    local name="$1" store="$2" requests warmup=100 answer body
    requests="$(n 2000 300)"
    answer="$(search_answer_script)"
    body="$TMP/$name.body.json"
    echo "{\"model\":\"m\",\"input\":\"Who won the 2025 Tour de France? Search the web and cite sources.\",\"tools\":[{\"type\":\"web_search\"}],\"stream\":true,\"store\":$store}" > "$body"

    measure_direct "$name" --stream --expect-deltas "$TOKENS" --concurrency 1 --requests "$requests" \
        --warmup "$warmup" --push-script "$answer"

    start_search_fixture
    export RESPONSES_GATEWAY_WEB_SEARCH__BACKEND=http RESPONSES_GATEWAY_WEB_SEARCH__HTTP__URL="$SEARCH_URL"
    measure_gateway "$name" --stream --body-file "$body" --expect-deltas "$((TOKENS + 1))" --concurrency 1 \
        --requests "$requests" --warmup "$warmup" --push-script "[$SEARCH_CALL_SCRIPT,$answer]" \
        --target-cpu-ms 0.80 --target-rss-mib 40
    unset RESPONSES_GATEWAY_WEB_SEARCH__BACKEND RESPONSES_GATEWAY_WEB_SEARCH__HTTP__URL
    stop_search_fixture "$((warmup + requests))"
}

scenario_search-c1() { search_scenario search-c1 true; }
scenario_search-nostore-c1() { search_scenario search-nostore-c1 false; }

SCENARIOS+=(search-c1 search-nostore-c1)
