# A calibration, not a gateway figure: the same loads through nginx (a plain reverse proxy
# with proxy_buffering off and upstream keep-alive), so the gateway's added TTFT and CPU can
# be read against what any proxy costs on this machine. Runs only when asked for by name
# (`bench/run.sh nginx-stream-c1 nginx-stream-c64 nginx-tool-c1`) and only where `nginx` is installed; its
# rows report the nginx worker's CPU in the gateway columns.

# measure_nginx NAME LOADGEN-ARGS...: one nginx worker pinned to the gateway core.
measure_nginx() {
    local name="$1"; shift
    command -v nginx > /dev/null || { log "$name: nginx is not installed; skipped"; return 0; }
    local dir="$TMP/nginx" port hostport="${UPSTREAM#http://}" worker mask="1" i
    for ((i = 0; i < GATEWAY_CPU; i++)); do mask="${mask}0"; done
    mkdir -p "$dir"
    port=$((20000 + RANDOM % 20000))
    cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
worker_cpu_affinity $mask;
pid $dir/nginx.pid;
error_log $dir/error.log;
daemon on;
events { worker_connections 1024; }
http {
  access_log off;
  upstream up { server $hostport; keepalive 64; }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
CONF
    nginx -c "$dir/nginx.conf" -p "$dir" 2>> "$dir/error.log"
    sleep 0.3
    worker="$(pgrep -f "nginx: worker process" | head -n 1)"
    log "$name: nginx worker pid $worker at http://127.0.0.1:$port (cpu $GATEWAY_CPU)"
    loadgen run --scenario "$name" --target upstream --base-url "http://127.0.0.1:$port/v1" --control-url "$UPSTREAM" \
        --server-pid "$worker" --bench-pid "$UPSTREAM_PID" --clk-tck "$CLK_TCK" "$@" > "$RUN_DIR/$name.gateway.json"
    nginx -c "$dir/nginx.conf" -p "$dir" -s stop 2>> "$dir/error.log" || true
    summary "$RUN_DIR/$name.gateway.json"
}

scenario_nginx-stream-c1() {
    measure_direct nginx-stream-c1 --stream --expect-deltas "$TOKENS" --concurrency 1 --requests "$(n 2000 300)"
    measure_nginx nginx-stream-c1 --stream --expect-deltas "$TOKENS" --concurrency 1 --requests "$(n 2000 300)"
}

scenario_nginx-tool-c1() {
    measure_direct nginx-tool-c1 --tool --push-script "$TOOL_SCRIPT" --concurrency 1 --requests "$(n 10000 300)"
    measure_nginx nginx-tool-c1 --tool --push-script "$TOOL_SCRIPT" --concurrency 1 --requests "$(n 10000 300)"
}

scenario_nginx-stream-c64() {
    measure_direct nginx-stream-c64 --stream --expect-deltas "$TOKENS" --concurrency 64 --requests "$(n 20000 3000)"
    measure_nginx nginx-stream-c64 --stream --expect-deltas "$TOKENS" --concurrency 64 --requests "$(n 20000 3000)"
}
