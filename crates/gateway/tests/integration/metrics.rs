//! Prometheus `/metrics` (`[metrics]`): after known requests against the scripted upstream
//! the scrape counts exactly them (requests by route and status, turns by status, rounds,
//! TTFT, upstream errors, tool calls, store operations, overhead, active streams); it is
//! absent when disabled, guarded when `require_key`, and alone on `metrics.listen`.

use std::collections::BTreeMap;
use std::sync::Arc;

use scripted_upstream::{Script, ScriptedUpstream};
use serde_json::json;

use crate::common::Harness;

/// `name{labels} value` lines of a scrape (labels as written, sorted by the exporter).
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.rsplit_once(' ').map(|(k, v)| (k.to_string(), v.parse().unwrap())))
        .collect()
}

async fn scrape(h: &Harness) -> (u16, String) {
    let resp = h.client.get(format!("{}/metrics", h.base)).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

fn value(s: &BTreeMap<String, f64>, key: &str) -> f64 {
    *s.get(key).unwrap_or_else(|| panic!("no sample {key} in {s:#?}"))
}

#[tokio::test]
async fn a_scrape_counts_the_known_requests() {
    let h = Harness::start_with(|c| c.metrics.enabled = true).await;
    // 1: a gateway tool round, then the answer (2 rounds, completed).
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    h.upstream.push(Script::text(&["axum ", "is installed."]));
    let (status, body) = h.post(json!({"model":"m","input":"v?","tools":[{"type":"custom","name":"package_version"}]})).await;
    assert_eq!(status, 200, "{body}");
    let id = body["id"].as_str().unwrap().to_string();
    // 2: a streamed answer (1 round, completed).
    h.upstream.push(Script::text(&["streamed"]));
    let s = h.stream(json!({"model":"m","input":"hi"})).await;
    assert_eq!(s.response["status"], "completed");
    // 3: the upstream fails (1 round, failed, 502).
    h.upstream.push(Script::http_error(500, r#"{"error":{"message":"boom"}}"#));
    let (status, _) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502);
    // 4, 5: a stored response and an unknown one.
    assert_eq!(h.get(&format!("/v1/responses/{id}")).await.0, 200);
    assert_eq!(h.get("/v1/responses/resp_unknown").await.0, 404);
    assert_eq!(h.get("/no/such/route").await.0, 404);

    let (status, text) = scrape(&h).await;
    assert_eq!(status, 200, "{text}");
    let s = samples(&text);
    let v = |k: &str| value(&s, k);
    assert_eq!(v(r#"gateway_http_requests_total{route="/v1/responses",status="200"}"#), 2.0);
    assert_eq!(v(r#"gateway_http_requests_total{route="/v1/responses",status="502"}"#), 1.0);
    assert_eq!(v(r#"gateway_http_requests_total{route="/v1/responses/{id}",status="200"}"#), 1.0);
    assert_eq!(v(r#"gateway_http_requests_total{route="/v1/responses/{id}",status="404"}"#), 1.0);
    assert_eq!(v(r#"gateway_http_requests_total{route="unmatched",status="404"}"#), 1.0);
    assert_eq!(v(r#"gateway_turns_total{status="completed"}"#), 2.0);
    assert_eq!(v(r#"gateway_turns_total{status="failed"}"#), 1.0);
    assert_eq!(v(r#"gateway_turns_total{status="incomplete"}"#), 0.0);
    assert_eq!(v("gateway_turn_duration_seconds_count"), 3.0);
    assert_eq!(v("gateway_turn_rounds_count"), 3.0);
    assert_eq!(v("gateway_turn_rounds_sum"), 4.0);
    assert_eq!(v(r#"gateway_turn_rounds_bucket{le="1"}"#), 2.0);
    assert_eq!(v("gateway_ttft_seconds_count"), 2.0, "the failed turn had no first token");
    assert_eq!(v("gateway_upstream_round_duration_seconds_count"), 4.0);
    assert_eq!(v(r#"gateway_upstream_errors_total{kind="upstream_error"}"#), 1.0);
    assert_eq!(v(r#"gateway_tool_calls_total{type="custom",executor="package_version",outcome="ok"}"#), 1.0);
    assert_eq!(v(r#"gateway_tool_call_duration_seconds_count{type="custom",executor="package_version"}"#), 1.0);
    assert_eq!(v("gateway_overhead_seconds_count"), 3.0);
    assert!(v("gateway_overhead_seconds_sum") <= v("gateway_turn_duration_seconds_sum"));
    assert_eq!(v("gateway_active_streams"), 0.0);
    // The stored one once; the unknown one twice (before and after looking for its run,
    // which may have been stored between the two reads).
    assert_eq!(v(r#"gateway_store_operation_duration_seconds_count{op="response"}"#), 3.0);
    assert!(v(r#"gateway_store_operation_duration_seconds_count{op="save_turn"}"#) >= 2.0);
    // The scrape itself is counted once it has answered.
    let (_, text) = scrape(&h).await;
    assert_eq!(value(&samples(&text), r#"gateway_http_requests_total{route="/metrics",status="200"}"#), 1.0);
}

#[tokio::test]
async fn a_running_stream_is_active() {
    let h = Harness::start_with(|c| c.metrics.enabled = true).await;
    h.upstream.push(Script::text(&["a", "b", "c", "d"]).delay_ms(300));
    let url = format!("{}/v1/responses", h.base);
    let client = h.client.clone();
    let running = tokio::spawn(async move {
        client.post(url).json(&json!({"model":"m","input":"hi","stream":true})).send().await.unwrap().text().await.unwrap()
    });
    let mut seen = 0.0;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        seen = samples(&scrape(&h).await.1).get("gateway_active_streams").copied().unwrap_or(0.0);
        if seen == 1.0 {
            break;
        }
    }
    assert_eq!(seen, 1.0, "the stream was never seen active");
    running.await.unwrap();
    assert_eq!(value(&samples(&scrape(&h).await.1), "gateway_active_streams"), 0.0);
}

#[tokio::test]
async fn metrics_are_off_by_default_and_can_need_a_key() {
    let h = Harness::start().await;
    assert_eq!(scrape(&h).await.0, 404);

    let file = std::env::temp_dir().join(format!("rg-metrics-keys-{}-{:x}", std::process::id(), rand::random::<u64>()));
    std::fs::write(&file, "sk-metrics-key\n").unwrap();
    let keys = file.clone();
    let open = Harness::start_with(move |c| {
        c.metrics.enabled = true;
        c.auth.keys_file = Some(keys);
    })
    .await;
    assert_eq!(scrape(&open).await.0, 200, "without require_key Prometheus scrapes without a key");
    let guarded = Harness::start_with(move |c| {
        c.metrics.enabled = true;
        c.metrics.require_key = true;
        c.auth.keys_file = Some(file);
    })
    .await;
    assert_eq!(scrape(&guarded).await.0, 401);
    let resp = guarded.client.get(format!("{}/metrics", guarded.base)).bearer_auth("sk-metrics-key").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    // A refused request is counted too.
    let text = resp.text().await.unwrap();
    assert_eq!(value(&samples(&text), r#"gateway_http_requests_total{route="/metrics",status="401"}"#), 1.0);
}

#[tokio::test]
async fn metrics_listen_serves_them_on_their_own_address() {
    let upstream = ScriptedUpstream::start().await.unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics_addr = free.local_addr().unwrap();
    drop(free);
    let dir = std::env::temp_dir().join(format!("rg-metrics-listen-{}-{:x}", std::process::id(), rand::random::<u64>()));
    let mut config = responses_gateway::Config::default();
    config.upstream.url = Some(upstream.base_url());
    config.server.data_dir = Some(dir);
    config.metrics.enabled = true;
    config.metrics.listen = Some(metrics_addr);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let main = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let config = Arc::new(config);
    let c = config.clone();
    let server = tokio::spawn(async move {
        responses_gateway::serve_on(listener, &c, async {
            let _ = rx.await;
        })
        .await
        .unwrap()
    });
    let client = reqwest::Client::new();
    let mut up = false;
    for _ in 0..100 {
        if client.get(format!("{main}/healthz")).send().await.is_ok_and(|r| r.status() == 200) {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(up, "the gateway did not start");
    assert_eq!(client.get(format!("{main}/metrics")).send().await.unwrap().status(), 404);
    let resp = client.get(format!("http://{metrics_addr}/metrics")).header("x-request-id", "scrape-1").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    // Its answers carry x-request-id too (the client's, else a generated one).
    assert_eq!(resp.headers().get("x-request-id").and_then(|v| v.to_str().ok()), Some("scrape-1"));
    let text = resp.text().await.unwrap();
    assert!(text.contains(r#"gateway_http_requests_total{route="/healthz",status="200"}"#), "{text}");
    let other = client.get(format!("http://{metrics_addr}/v1/models")).send().await.unwrap();
    assert_eq!(other.status(), 404);
    assert!(other.headers().get("x-request-id").is_some_and(|v| v.len() == 36), "a generated UUID");
    let _ = tx.send(());
    server.await.unwrap();
}
