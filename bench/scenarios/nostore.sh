# The stream and tool scenarios with "store": false: the protocol path alone (parse,
# upstream round, re-encoding), without the SQLite write a stored turn adds (that cost has
# its own figures: `cargo run --release -p responses-gateway --example store_bench`).
#
# stream-nostore-c1: 64-token streamed answer, concurrency 1.
# tool-nostore-c1:   one client-owned function tool, not streamed, concurrency 1.
# The direct side is the same load as stream-c1 / tool-c1.

nostore_body() {
    local file="$TMP/$1.body.json"
    echo "$2" > "$file"
    echo "$file"
}

scenario_stream-nostore-c1() {
    local body
    body="$(nostore_body stream-nostore-c1 '{"model":"m","input":"hi","stream":true,"store":false}')"
    measure_direct stream-nostore-c1 --stream --expect-deltas "$TOKENS" --concurrency 1 --requests "$(n 2000 300)"
    measure_gateway stream-nostore-c1 --stream --body-file "$body" --expect-deltas "$TOKENS" --concurrency 1 \
        --requests "$(n 2000 300)" --target-cpu-ms 0.40 --target-added-ttft-p50-ms 0.15 --target-rss-mib 40
}

scenario_tool-nostore-c1() {
    local body
    body="$(nostore_body tool-nostore-c1 '{"model":"m","input":"hi","store":false,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}')"
    measure_direct tool-nostore-c1 --tool --push-script "$TOOL_SCRIPT" --concurrency 1 --requests "$(n 10000 300)"
    measure_gateway tool-nostore-c1 --tool --body-file "$body" --push-script "$TOOL_SCRIPT" --concurrency 1 \
        --requests "$(n 10000 300)" --target-cpu-ms 0.10 --target-added-ttft-p50-ms 0.15 --target-rss-mib 40
}

SCENARIOS+=(stream-nostore-c1 tool-nostore-c1)
