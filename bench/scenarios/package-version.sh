# shellcheck shell=bash
# Sourced by bench/run.sh: the gateway-owned server-tool scenario (issue 3).
#
# pv-c1: the client declares {"type":"custom","name":"package_version"}; the scripted model
#   first calls package_version({"input":"axum"}), the gateway runs it (progress message,
#   custom_tool_call, custom_tool_call_output), asks the model again and streams its
#   64-token answer. Concurrency 1, store false (the tool round alone).
#   The direct side is the 64-token answer alone (one chat completion); the gateway side
#   makes two upstream calls, so "added latency" includes one extra (instant) upstream
#   round trip. Gateway CPU ms/request is the figure (target ≤ 0.6 ms, issue 3).

PV_CALL_SCRIPT='{"tool_calls":[{"name":"package_version","arguments":"{\"input\":\"axum\"}"}]}'

scenario_pv-c1() {
    local requests warmup=100 answer body
    requests="$(n 2000 300)"
    answer="$(printf '{"text":[%s]}' "$(for ((i = 0; i < TOKENS; i++)); do printf '"tok%d "' "$i"; [ "$i" -lt $((TOKENS - 1)) ] && printf ','; done)")"
    body="$TMP/pv-c1.body.json"
    echo '{"model":"m","input":"Which axum version is installed?","tools":[{"type":"custom","name":"package_version"}],"stream":true,"store":false}' > "$body"
    measure_direct pv-c1 --stream --expect-deltas "$TOKENS" --concurrency 1 --requests "$requests" \
        --warmup "$warmup" --push-script "$answer"
    measure_gateway pv-c1 --stream --body-file "$body" --expect-deltas "$((TOKENS + 1))" --concurrency 1 \
        --requests "$requests" --warmup "$warmup" --push-script "[$PV_CALL_SCRIPT,$answer]" \
        --target-cpu-ms 0.60 --target-rss-mib 40
}
SCENARIOS+=(pv-c1)
