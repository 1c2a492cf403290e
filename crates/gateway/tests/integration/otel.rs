//! OpenTelemetry traces (the `otel` feature): a request's `traceparent` is the parent of its
//! span; under it the turn, its rounds and its gateway tool calls, with the Responses ids as
//! attributes; also when the turn runs in its own task (stored or streamed). In process,
//! through an exporter that keeps the spans; then the real binary exporting over OTLP/HTTP
//! (protobuf) to a collector in the test.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use opentelemetry::trace::{SpanId, SpanKind, TraceId};
use opentelemetry::Value as OtelValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use scripted_upstream::{Script, ToolCallScript};
use serde_json::{json, Value};
use tracing_subscriber::layer::SubscriberExt;

use crate::common::Harness;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{PARENT_ID}-01")
}

/// Keeps what it is given.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Kept {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

impl Kept {
    fn spans(&self) -> Vec<SpanData> {
        self.0.lock().unwrap().clone()
    }
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| match &kv.value {
        OtelValue::String(s) => s.to_string(),
        v => v.to_string(),
    })
}

/// The in-process gateway with the gateway's OpenTelemetry layer as this thread's
/// subscriber (the test runtime is single-threaded: the server's tasks run here).
async fn traced() -> (Harness, Kept, SdkTracerProvider, tracing::subscriber::DefaultGuard) {
    let kept = Kept::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(kept.clone()).build();
    let subscriber = tracing_subscriber::registry().with(responses_gateway::telemetry::otel::layer(&provider));
    let guard = tracing::subscriber::set_default(subscriber);
    let h = Harness::start().await;
    // A callsite another test's thread was registering while this subscriber was set may
    // have cached "no interest" (tracing-core computes it from the subscribers it saw):
    // computed again, now that this one is known.
    tracing::callsite::rebuild_interest_cache();
    (h, kept, provider, guard)
}

/// Waits until the request span of `request_id` has ended (it ends when its answer has
/// gone), then returns every span of its trace.
async fn trace_of(kept: &Kept, request_id: &str) -> Vec<SpanData> {
    for _ in 0..500 {
        let spans = kept.spans();
        if let Some(req) = spans.iter().find(|s| s.name == "POST /v1/responses" && attr(s, "request_id").as_deref() == Some(request_id)) {
            let trace = req.span_context.trace_id();
            return spans.into_iter().filter(|s| s.span_context.trace_id() == trace).collect();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("no request span for {request_id}: {:#?}", kept.spans().iter().map(|s| s.name.clone()).collect::<Vec<_>>());
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// A stored turn (its own task) with a gateway tool call: `request` (the caller's span as
/// parent, kind server) → `turn` → `round` 0 → `tool_call`, and `round` 1; one trace, the
/// caller's; the ids on them are the answer's.
#[tokio::test]
async fn a_turn_joins_the_callers_trace() {
    let (h, kept, _provider, _guard) = traced().await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    h.upstream.push(Script::text(&["axum ", "is installed."]));
    let resp = h
        .client
        .post(format!("{}/v1/responses", h.base))
        .header("traceparent", traceparent())
        .header("tracestate", "congo=t61rcWkgMzE")
        .header("x-request-id", "trace-test-1")
        .json(&json!({"model":"m","input":"axum version?","tools":[{"type":"custom","name":"package_version"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-request-id"], "trace-test-1");
    let body: Value = resp.json().await.unwrap();
    let spans = trace_of(&kept, "trace-test-1").await;

    let trace = TraceId::from_hex(TRACE_ID).unwrap();
    assert!(spans.iter().all(|s| s.span_context.trace_id() == trace));
    let [req] = named(&spans, "POST /v1/responses")[..] else { panic!("one request span: {spans:#?}") };
    assert_eq!(req.parent_span_id, SpanId::from_hex(PARENT_ID).unwrap());
    assert!(req.parent_span_is_remote);
    assert_eq!(req.span_kind, SpanKind::Server);
    assert_eq!(req.span_context.trace_state().header(), "congo=t61rcWkgMzE");
    assert_eq!(attr(req, "status").as_deref(), Some("200"));
    assert_eq!(attr(req, "route").as_deref(), Some("/v1/responses"));

    let [turn] = named(&spans, "turn")[..] else { panic!("one turn span: {spans:#?}") };
    assert_eq!(turn.parent_span_id, req.span_context.span_id());
    assert_eq!(attr(turn, "response_id").as_deref(), body["id"].as_str());
    assert_eq!(attr(turn, "model").as_deref(), Some("m"));
    assert_eq!(attr(turn, "status").as_deref(), Some("completed"));
    assert_eq!(attr(turn, "rounds").as_deref(), Some("2"));
    assert_eq!(attr(turn, "store").as_deref(), Some("true"));
    assert_eq!(attr(turn, "previous_response_id"), None);

    let rounds = named(&spans, "round");
    assert_eq!(rounds.len(), 2);
    assert!(rounds.iter().all(|r| r.parent_span_id == turn.span_context.span_id()));
    let round0 = rounds.iter().find(|r| attr(r, "round").as_deref() == Some("0")).expect("round 0");
    assert_eq!(attr(round0, "calls").as_deref(), Some("1"));

    let [tool] = named(&spans, "tool_call")[..] else { panic!("one tool span: {spans:#?}") };
    assert_eq!(tool.parent_span_id, round0.span_context.span_id());
    let call = body["output"].as_array().unwrap().iter().find(|i| i["type"] == "custom_tool_call").expect("the call item");
    assert_eq!(attr(tool, "tool_type").as_deref(), Some("custom"));
    assert_eq!(attr(tool, "name").as_deref(), Some("package_version"));
    assert_eq!(attr(tool, "call_id").as_deref(), call["call_id"].as_str());
    assert_eq!(attr(tool, "item_id").as_deref(), call["id"].as_str());
    assert_eq!(attr(tool, "outcome").as_deref(), Some("ok"));
    h.stop().await;
}

/// A streamed turn ending in a client function call continues the caller's trace too, and
/// its continuation names the previous response; a malformed `traceparent` is ignored (a
/// new trace, no parent) and the request is answered as usual.
#[tokio::test]
async fn streamed_turns_and_malformed_traceparents() {
    let (h, kept, _provider, _guard) = traced().await;
    let weather = json!({"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}});
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("get_weather", r#"{"city":"Lima"}"#)));
    let sse = h
        .client
        .post(format!("{}/v1/responses", h.base))
        .header("traceparent", traceparent())
        .header("x-request-id", "trace-stream")
        .json(&json!({"model":"m","input":"Lima?","tools":[weather],"stream":true}))
        .send()
        .await
        .unwrap();
    assert_eq!(sse.headers()["x-request-id"], "trace-stream");
    let text = sse.text().await.unwrap();
    let done = crate::common::check_stream(&text);
    let first_id = done.response["id"].as_str().unwrap().to_string();
    let spans = trace_of(&kept, "trace-stream").await;
    let trace = TraceId::from_hex(TRACE_ID).unwrap();
    assert!(spans.iter().all(|s| s.span_context.trace_id() == trace));
    let [req] = named(&spans, "POST /v1/responses")[..] else { panic!("{spans:#?}") };
    let [turn] = named(&spans, "turn")[..] else { panic!("{spans:#?}") };
    assert_eq!(turn.parent_span_id, req.span_context.span_id(), "the streamed turn's task keeps the request's span");
    assert_eq!(attr(turn, "response_id").as_deref(), Some(first_id.as_str()));
    assert_eq!(attr(turn, "stream").as_deref(), Some("true"));
    assert!(named(&spans, "tool_call").is_empty(), "a client call is not run by the gateway");

    for bad in ["00-xyz-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "garbage"] {
        h.upstream.push(Script::text(&["fine"]));
        let id = format!("bad-{}", bad.len());
        let resp = h
            .client
            .post(format!("{}/v1/responses", h.base))
            .header("traceparent", bad)
            .header("x-request-id", &id)
            .json(&json!({"model":"m","previous_response_id":first_id,"tools":[weather],
                "input":[{"type":"function_call_output","call_id":done.response["output"][0]["call_id"],"output":"19C"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{bad}");
        let spans = trace_of(&kept, &id).await;
        let [req] = named(&spans, "POST /v1/responses")[..] else { panic!("{spans:#?}") };
        assert_ne!(req.span_context.trace_id(), trace, "{bad}: a new trace");
        assert_eq!(req.parent_span_id, SpanId::INVALID, "{bad}: no parent");
        let [turn] = named(&spans, "turn")[..] else { panic!("{spans:#?}") };
        assert_eq!(attr(turn, "previous_response_id").as_deref(), Some(first_id.as_str()));
    }
    h.stop().await;
}

/// One export the collector received: its path, content type, authorization and body.
type Export = (String, String, String, Vec<u8>);

/// What the collector received.
#[derive(Clone, Default)]
struct Collected(Arc<Mutex<Vec<Export>>>);

/// A tiny OTLP/HTTP collector: `POST /v1/traces` (protobuf) kept, answered 200.
async fn collector() -> (String, Collected) {
    use axum::extract::State;
    use axum::http::{HeaderMap, Uri};
    let collected = Collected::default();
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            axum::routing::post(|State(c): State<Collected>, uri: Uri, headers: HeaderMap, body: axum::body::Bytes| async move {
                let h = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                c.0.lock().unwrap().push((uri.path().to_string(), h("content-type"), h("authorization"), body.to_vec()));
                ""
            }),
        )
        .with_state(collected.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, collected)
}

/// The binary with `OTEL_EXPORTER_OTLP_ENDPOINT` exports over OTLP/HTTP (protobuf, with the
/// `OTEL_EXPORTER_OTLP_HEADERS`) to a collector; the spans left at SIGTERM are exported
/// before it exits. The header's token is never logged (RUST_LOG=debug, JSON log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exports_over_otlp_http() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let (collector_url, collected) = collector().await;
    let upstream = scripted_upstream::ScriptedUpstream::start().await.unwrap();
    upstream.push(Script::tool_call("package_version", r#"{"input":"tokio"}"#));
    upstream.push(Script::text(&["ok"]));
    let dir = std::env::temp_dir().join(format!("rg-otel-{}-{:x}", std::process::id(), rand::random::<u64>()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_responses-gateway"))
        .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--upstream-url"])
        .arg(upstream.base_url())
        .arg("--data-dir")
        .arg(&dir)
        .env("RUST_LOG", "debug")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector_url)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer otlp-token-secret-77")
        .env("OTEL_SERVICE_NAME", "gw-under-test")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_SDK_DISABLED")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = Vec::new();
    let base = loop {
        let line = lines.next().expect("the gateway exited before listening").unwrap();
        log.push(line.clone());
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        if let Some(url) = v["message"].as_str().and_then(|m| m.strip_prefix("listening on ")) {
            break url.to_string();
        }
    };
    let drain = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    responses_gateway::install_crypto();
    let resp = reqwest::Client::new()
        .post(format!("{base}/v1/responses"))
        .header("traceparent", traceparent())
        .json(&json!({"model":"m","input":"tokio?","tools":[{"type":"custom","name":"package_version"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let request_id = resp.headers()["x-request-id"].to_str().unwrap().to_string();
    let body: Value = resp.json().await.unwrap();
    // SIGTERM: the spans still queued (the batch delay is 5 s) go out before the exit.
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let status = tokio::task::spawn_blocking(move || child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
    log.extend(drain.join().unwrap());

    let exports = collected.0.lock().unwrap().clone();
    assert!(!exports.is_empty(), "nothing exported; log:\n{}", log.join("\n"));
    let mut spans = Vec::new();
    let mut services = Vec::new();
    for (path, content_type, authorization, bytes) in &exports {
        assert_eq!(path, "/v1/traces");
        assert_eq!(content_type, "application/x-protobuf");
        assert_eq!(authorization, "Bearer otlp-token-secret-77");
        let req = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
        for rs in req.resource_spans {
            for kv in rs.resource.iter().flat_map(|r| r.attributes.iter()) {
                if kv.key == "service.name" {
                    services.push(format!("{:?}", kv.value));
                }
            }
            spans.extend(rs.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
    assert!(services.iter().all(|s| s.contains("gw-under-test")) && !services.is_empty(), "{services:?}");
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let attr = |s: &opentelemetry_proto::tonic::trace::v1::Span, k: &str| {
        s.attributes.iter().find(|kv| kv.key == k).map(|kv| format!("{:?}", kv.value))
    };
    let ours: Vec<_> = spans.iter().filter(|s| hex(&s.trace_id) == TRACE_ID).collect();
    let by = |name: &str| ours.iter().copied().filter(|s| s.name == name).collect::<Vec<_>>();
    let [req] = by("POST /v1/responses")[..] else { panic!("{ours:#?}") };
    assert_eq!(hex(&req.parent_span_id), PARENT_ID);
    assert!(attr(req, "request_id").is_some_and(|v| v.contains(&request_id)));
    let [turn] = by("turn")[..] else { panic!("{ours:#?}") };
    assert_eq!(turn.parent_span_id, req.span_id);
    assert!(attr(turn, "response_id").is_some_and(|v| v.contains(body["id"].as_str().unwrap())), "{turn:?}");
    assert_eq!(by("round").len(), 2);
    let [tool] = by("tool_call")[..] else { panic!("{ours:#?}") };
    assert!(by("round").iter().any(|r| r.span_id == tool.parent_span_id));

    // The log: JSON lines only; the export's token is in none.
    let mut request_ids = HashMap::<String, usize>::new();
    for line in &log {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(!line.contains("otlp-token-secret-77"), "{line}");
        // The request line has it as a field, the lines inside the request from its span.
        let id = v["request_id"].as_str().or_else(|| v["spans"].as_array().and_then(|s| s.first()).and_then(|s| s["request_id"].as_str()));
        if let Some(id) = id {
            *request_ids.entry(id.to_string()).or_default() += 1;
        }
    }
    assert!(request_ids.get(&request_id).is_some_and(|n| *n >= 2), "the request and turn lines: {request_ids:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
