# The gateway on the scripted model's /v1/responses (upstream.api = "responses"), beside
# the chat path in the same run: the same loads as stream-nostore-c1 / tool-nostore-c1.
# The direct side of the tool load is the scripted server's /v1/chat/completions with the
# same scripts; that of the stream load is its own /v1/responses (same answers), so the
# added TTFT is the gateway's alone. The gateway CPU figures compare with the chat
# scenarios' gateway side directly.
#
# stream-responses-c1: 64-token streamed answer, concurrency 1.
# tool-responses-c1:   one client-owned function tool, not streamed, concurrency 1.

responses_config() {
    local file="$TMP/responses-upstream.toml"
    printf '[upstream]\napi = "responses"\n' > "$file"
    echo "$file"
}

scenario_stream-responses-c1() {
    local body config
    body="$(nostore_body stream-responses-c1 '{"model":"m","input":"hi","stream":true,"store":false}')"
    config="$(responses_config)"
    # The direct side is the upstream's own /v1/responses: its TTFT includes what the
    # upstream spends on its Responses events, so the added TTFT is the gateway's alone.
    DIRECT_API=responses measure_direct stream-responses-c1 --stream --body-file "$body" --expect-deltas "$TOKENS" \
        --concurrency 1 --requests "$(n 2000 300)"
    GATEWAY_ARGS=(--config "$config")
    measure_gateway stream-responses-c1 --stream --body-file "$body" --expect-deltas "$TOKENS" --concurrency 1 \
        --requests "$(n 2000 300)" --target-cpu-ms 0.44 --target-added-ttft-p50-ms 0.15 --target-rss-mib 40
    GATEWAY_ARGS=()
}

scenario_tool-responses-c1() {
    local body config
    body="$(nostore_body tool-responses-c1 '{"model":"m","input":"hi","store":false,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}')"
    config="$(responses_config)"
    measure_direct tool-responses-c1 --tool --push-script "$TOOL_SCRIPT" --concurrency 1 --requests "$(n 10000 300)"
    GATEWAY_ARGS=(--config "$config")
    measure_gateway tool-responses-c1 --tool --body-file "$body" --push-script "$TOOL_SCRIPT" --concurrency 1 \
        --requests "$(n 10000 300)" --target-cpu-ms 0.11 --target-added-ttft-p50-ms 0.15 --target-rss-mib 40
    GATEWAY_ARGS=()
}

SCENARIOS+=(stream-responses-c1 tool-responses-c1)
