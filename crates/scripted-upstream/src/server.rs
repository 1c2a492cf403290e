//! HTTP routes: the chat-completions endpoint, models, health and control endpoints.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::pacing::PacedEvents;
use crate::render::{self, RequestInfo, DEFAULT_MODEL};
use crate::script::{Fault, Script};
use crate::RecordedRequest;

/// Largest request body accepted (long transcripts in benchmarks).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// State shared by the handle and the routes. Every lock is held only to move a
/// script or a record in or out, never while answering.
pub(crate) struct Shared {
    inner: Mutex<Inner>,
    /// Streamed answers whose client left before their end.
    pub(crate) cut: Arc<std::sync::atomic::AtomicUsize>,
}

struct Inner {
    queue: VecDeque<Arc<Script>>,
    requests: Vec<RecordedRequest>,
    default: Arc<Script>,
    recording: bool,
    /// The chat field in which the reasoning of tool rounds must come back (a thinking
    /// model's server that enforces it), or none.
    require_reasoning: Option<String>,
}

impl Shared {
    pub(crate) fn new(default: Script) -> Self {
        Shared {
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                requests: Vec::new(),
                default: Arc::new(default),
                recording: true,
                require_reasoning: None,
            }),
            cut: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere cannot leave these plain collections inconsistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn push(&self, scripts: impl IntoIterator<Item = Script>) -> usize {
        let mut inner = self.lock();
        inner.queue.extend(scripts.into_iter().map(Arc::new));
        inner.queue.len()
    }

    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    pub(crate) fn reset(&self) {
        let mut inner = self.lock();
        inner.queue.clear();
        inner.requests.clear();
    }

    pub(crate) fn set_default(&self, script: Script) {
        self.lock().default = Arc::new(script);
    }

    pub(crate) fn set_recording(&self, on: bool) {
        self.lock().recording = on;
    }

    pub(crate) fn require_reasoning(&self, field: Option<String>) {
        self.lock().require_reasoning = field;
    }

    fn required_reasoning(&self) -> Option<String> {
        self.lock().require_reasoning.clone()
    }

    /// Records a request that no script answers.
    fn record_only(&self, record: RecordedRequest) {
        let mut inner = self.lock();
        if inner.recording {
            inner.requests.push(record);
        }
    }

    /// Records the request and takes the script that answers it, atomically, so the
    /// n-th recorded request is the one the n-th queued script answered.
    fn take(&self, record: RecordedRequest) -> Arc<Script> {
        let mut inner = self.lock();
        if inner.recording {
            inner.requests.push(record);
        }
        match inner.queue.pop_front() {
            Some(script) => script,
            None => inner.default.clone(),
        }
    }
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/chat/completions", post(chat_completions))
        .route("/v1/responses", post(responses))
        .route("/responses", post(responses))
        .route("/v1/models", get(models))
        .route("/health", get(health))
        .route("/v1/health", get(health))
        .route("/_control/scripts", post(push_scripts))
        .route("/_control/requests", get(recorded_requests))
        .route("/_control/reset", post(reset))
        .route("/_control/require_reasoning", post(set_require_reasoning))
        .route("/_control/stats", get(stats))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

/// The request body as JSON, or the 400 that says it is not.
fn json_body(body: &[u8]) -> Result<Value, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| {
        let message = format!("request body is not valid JSON: {e}");
        Box::new(error_response(StatusCode::BAD_REQUEST, "invalid_request_error", &message))
    })
}

/// The `Authorization` header, as recorded.
fn authorization(headers: &HeaderMap) -> Option<String> {
    headers.get(header::AUTHORIZATION).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// An OpenAI-shaped error answer.
fn error_response(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
    (status, Json(body)).into_response()
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = match json_body(&body) {
        Ok(v) => v,
        Err(answer) => return *answer,
    };
    let stream = request.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let info = RequestInfo {
        model: request.get("model").and_then(Value::as_str).unwrap_or(DEFAULT_MODEL).to_owned(),
        include_usage: request
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    // A thinking model's server that wants its reasoning back refuses before it answers
    // (the request is still recorded; no script is used).
    if let Some(refusal) = shared.required_reasoning().and_then(|field| crate::thinking::refusal(&request, &field)) {
        shared.record_only(RecordedRequest { body: request, authorization: authorization(&headers) });
        return refusal;
    }
    let script = shared.take(RecordedRequest { body: request, authorization: authorization(&headers) });

    if let Some(status) = script.http_status {
        return scripted_error(status, script.error_body.as_deref());
    }
    if stream {
        stream_answer(&script, &info, &shared.cut)
    } else {
        complete_answer(&script, &info).await
    }
}

/// `POST /v1/responses`: the next script as a streamed Responses answer (`stream: true`
/// only: a non-streamed request is a 400).
async fn responses(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let request = match json_body(&body) {
        Ok(v) => v,
        Err(answer) => return *answer,
    };
    let stream = request.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = request.get("model").and_then(Value::as_str).unwrap_or(DEFAULT_MODEL).to_owned();
    let script = shared.take(RecordedRequest { body: request, authorization: authorization(&headers) });
    if let Some(status) = script.http_status {
        return scripted_error(status, script.error_body.as_deref());
    }
    if !stream {
        return error_response(StatusCode::BAD_REQUEST, "invalid_request_error", "scripted-upstream answers /v1/responses with stream: true only");
    }
    let events = crate::responses::stream_events(&script, &model);
    sse_response(events, &script, &shared.cut)
}

fn scripted_error(status: u16, body: Option<&str>) -> Response {
    let Ok(status) = StatusCode::from_u16(status) else {
        let message = format!("script has an invalid http_status {status}");
        return error_response(StatusCode::INTERNAL_SERVER_ERROR, "server_error", &message);
    };
    match body {
        Some(body) => {
            let kind = if serde_json::from_str::<serde::de::IgnoredAny>(body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            (status, [(header::CONTENT_TYPE, kind)], body.to_owned()).into_response()
        }
        None => {
            let kind = if status.is_client_error() { "invalid_request_error" } else { "server_error" };
            let message = format!("scripted upstream error (HTTP {})", status.as_u16());
            error_response(status, kind, &message)
        }
    }
}

/// Pre-rendered events as an SSE answer, paced and broken as the script says.
fn sse_response(events: Vec<Bytes>, script: &Script, cut: &Arc<std::sync::atomic::AtomicUsize>) -> Response {
    let delay = Duration::from_millis(script.token_delay_ms);
    let body = Body::from_stream(PacedEvents::new(events, delay, script.fault).counting_cuts(cut.clone()));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn render_failed(e: serde_json::Error) -> Response {
    error_response(StatusCode::INTERNAL_SERVER_ERROR, "server_error", &format!("render: {e}"))
}

fn stream_answer(script: &Script, info: &RequestInfo, cut: &Arc<std::sync::atomic::AtomicUsize>) -> Response {
    let events = match render::stream_events(script, info) {
        Ok(events) => events,
        Err(e) => return render_failed(e),
    };
    sse_response(events, script, cut)
}

async fn complete_answer(script: &Script, info: &RequestInfo) -> Response {
    let body = match render::completion_body(script, info) {
        Ok(body) => body,
        Err(e) => return render_failed(e),
    };
    // A real server takes as long to generate the answer whether it streams or not.
    let chunks = render::stream_chunk_count(script) as u64;
    let mut wait = Duration::from_millis(script.token_delay_ms.saturating_mul(chunks.saturating_sub(1)));
    let json_type = [(header::CONTENT_TYPE, "application/json")];
    match script.fault {
        None => {}
        Some(Fault::Stall { stall_ms, .. }) => wait += Duration::from_millis(stall_ms),
        Some(Fault::Malformed { .. }) => {
            let half = body.len() / 2;
            let half = Bytes::from(body).slice(..half);
            return (StatusCode::OK, json_type, half).into_response();
        }
        Some(Fault::Disconnect { .. }) => {
            let events = Vec::new();
            let aborted = PacedEvents::new(events, Duration::ZERO, script.fault);
            return (StatusCode::OK, json_type, Body::from_stream(aborted)).into_response();
        }
    }
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    (StatusCode::OK, json_type, body).into_response()
}

async fn models() -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{"id": DEFAULT_MODEL, "object": "model", "created": 0, "owned_by": "scripted"}]
    }))
}

async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn push_scripts(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let parsed = serde_json::from_slice::<Value>(&body).and_then(|value| match value {
        Value::Array(_) => serde_json::from_value::<Vec<Script>>(value),
        other => serde_json::from_value::<Script>(other).map(|s| vec![s]),
    });
    match parsed {
        Ok(scripts) => {
            let added = scripts.len();
            let queued = shared.push(scripts);
            Json(json!({"added": added, "queued": queued})).into_response()
        }
        Err(e) => error_response(StatusCode::BAD_REQUEST, "invalid_request_error", &e.to_string()),
    }
}

async fn recorded_requests(State(shared): State<Arc<Shared>>) -> Json<Vec<RecordedRequest>> {
    Json(shared.requests())
}

/// `{cut_streams}`: streamed answers whose client left before their end.
async fn stats(State(shared): State<Arc<Shared>>) -> Json<Value> {
    Json(json!({"cut_streams": shared.cut.load(std::sync::atomic::Ordering::SeqCst)}))
}

/// `POST /_control/require_reasoning` `{"field": "reasoning_content" | "reasoning" | null}`:
/// from now on, chat requests whose tool rounds lack their reasoning in that field are
/// refused as that server refuses them (`null`: no check).
async fn set_require_reasoning(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request = match json_body(&body) {
        Ok(v) => v,
        Err(answer) => return *answer,
    };
    let field = request.get("field").and_then(Value::as_str).map(str::to_string);
    shared.require_reasoning(field.clone());
    Json(json!({"field": field})).into_response()
}

async fn reset(State(shared): State<Arc<Shared>>) -> Json<Value> {
    shared.reset();
    Json(json!({"status": "ok"}))
}
