//! The Chat Completions adapter (contract §11), one [`ModelClient`]: a neutral round →
//! `POST {base}/chat/completions` with `stream: true` (`request.rs` renders it), and the SSE
//! answer → [`UpstreamEvent`]s. SSE framing is parsed by the `sse-stream` crate.

use std::collections::VecDeque;
use std::sync::Arc;
use std::pin::Pin;
use std::time::Duration;

use std::borrow::Cow;
use std::future::Future;
use std::task::Poll;

use bytes::Bytes;
use futures_util::Stream;
use sse_stream::{Sse, SseByteStream};
use tokio::time::{Instant, Sleep};
use protocol::chat::{ChatChunk, ChatUsage};
use protocol::response::{InputTokensDetails, OutputTokensDetails, Usage};
use serde_json::Value;

use futures_util::future::BoxFuture;

use crate::upstream::redact::Secrets;
use crate::upstream::{FinishReason, ModelClient, RoundRequest, UpstreamCaps, UpstreamError, UpstreamEvent, UpstreamStream};

pub mod request;

/// A configured chat-completions upstream.
#[derive(Debug, Clone)]
pub struct ChatCompletions {
    client: reqwest::Client,
    /// The base URL without its `user:password@` (sent as Basic auth when there is no key).
    base: reqwest::Url,
    /// `{base}/chat/completions` (the base's query string kept), built once.
    chat_url: reqwest::Url,
    api_key: Option<String>,
    basic: Option<(String, Option<String>)>,
    /// Every credential an upstream message could echo: the key, the URL's password, its
    /// `user:password`, the URL's query values (any encoding, and Base64). Replaced by
    /// `[redacted]` in every error message.
    secrets: Arc<Secrets>,
    idle: Duration,
    caps: UpstreamCaps,
}

/// `base` with `path` appended to its path; the query string stays at the end.
fn endpoint(base: &reqwest::Url, path: &str) -> reqwest::Url {
    let mut u = base.clone();
    let joined = format!("{}{path}", base.path().trim_end_matches('/'));
    u.set_path(&joined);
    u
}

/// True when an upstream 404's `message` is about `model`: it says "model" and names it as a
/// whole (`The model `m` does not exist.`, `model "m" not found`), not inside a path
/// (`/v1/chat/completions` for model `v1`) or a longer name (`m-lora`).
/// `err` as [`UpstreamError::UnknownModel`] when it is a 404 (an HTTP answer, or an error
/// sent inside a 200 stream with `code: 404`) whose message names `model`; else `err`.
pub fn about_the_model(err: UpstreamError, model: &str) -> UpstreamError {
    match err {
        UpstreamError::Status { status: 404, message } if names_the_model(&message, model) => UpstreamError::UnknownModel(message),
        other => other,
    }
}

fn names_the_model(message: &str, model: &str) -> bool {
    if model.is_empty() || !message.to_ascii_lowercase().contains("model") {
        return false;
    }
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '/' | ':' | '.');
    message.match_indices(model).any(|(i, _)| {
        let before = message[..i].chars().next_back();
        let mut after = message[i + model.len()..].chars();
        let next = after.next();
        // A full stop after the name ends the sentence; before it, or inside, it is part of a name.
        let ends = match next {
            None => true,
            Some('.') => after.next().is_none_or(|c| !name_char(c)),
            Some(c) => !name_char(c),
        };
        !before.is_some_and(name_char) && ends
    })
}

/// A URL's percent-encoded user or password, decoded (as sent in Basic auth).
fn percent(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

impl ChatCompletions {
    /// `base` is the OpenAI base URL including `/v1`; `idle` bounds every wait on the
    /// upstream (headers and each chunk); `pool_idle` closes unused pooled connections.
    pub fn new(base: &str, api_key: Option<String>, idle: Duration, connect: Duration, pool_idle: Duration) -> anyhow::Result<Self> {
        crate::crypto::install();
        let client = reqwest::Client::builder()
            .connect_timeout(connect)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(256)
            .pool_idle_timeout(pool_idle)
            .build()?;
        let mut base = reqwest::Url::parse(base)?;
        let user = percent(base.username());
        let password = base.password().map(percent);
        let mut secrets: Vec<String> = api_key.iter().cloned().collect();
        if let Some(pw) = password.as_ref().filter(|p| !p.is_empty()) {
            // The pair also as written in the URL: its Base64 differs from the decoded one's.
            let raw = format!("{}:{}", base.username(), base.password().unwrap_or_default());
            secrets.extend([pw.clone(), format!("{user}:{pw}"), raw]);
        }
        secrets.extend(base.query_pairs().map(|(_, v)| v.into_owned()).filter(|v| v.len() >= 4));
        let secrets = Arc::new(Secrets::new(secrets));
        let basic = (!base.username().is_empty()).then_some((user, password));
        let _ = base.set_username("");
        let _ = base.set_password(None);
        let chat_url = endpoint(&base, "/chat/completions");
        Ok(ChatCompletions { client, base, chat_url, api_key, basic, secrets, idle, caps: UpstreamCaps::default() })
    }

    /// The same upstream with these capabilities (`upstream.native_tools`).
    pub fn with_caps(mut self, caps: UpstreamCaps) -> Self {
        self.caps = caps;
        self
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.auth(self.client.request(method, endpoint(&self.base, path)))
    }

    /// The key as Bearer; else the URL's `user:password` as Basic; else nothing.
    fn auth(&self, rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match (&self.api_key, &self.basic) {
            (Some(k), _) => rb.bearer_auth(k),
            (None, Some((user, password))) => rb.basic_auth(user, password.as_ref()),
            (None, None) => rb,
        }
    }

    /// `GET {base}/models`, passed through as JSON (used by `/v1/models` and `/readyz`).
    pub async fn models(&self, timeout: Duration) -> Result<Value, UpstreamError> {
        let resp = self.send_once_more(timeout, || self.request(reqwest::Method::GET, "/models")).await?;
        let status = resp.status();
        if !status.is_success() {
            return Err(UpstreamError::Status { status: status.as_u16(), message: "models list failed".into() });
        }
        resp.json::<Value>().await.map_err(|_| UpstreamError::Protocol("models list is not JSON".into()))
    }

    /// Starts one streamed round.
    pub async fn stream(&self, req: &RoundRequest<'_>) -> Result<RoundStream, UpstreamError> {
        let body = Bytes::from(
            request::encode(req).map_err(|e| UpstreamError::Protocol(format!("could not encode the request: {e}")))?,
        );
        let resp = self
            .send_once_more(self.idle, || {
                let post = self.client.post(self.chat_url.clone()).header(reqwest::header::CONTENT_TYPE, "application/json");
                self.auth(post.body(body.clone()))
            })
            .await?;
        let status = resp.status();
        if !status.is_success() {
            let text = tokio::time::timeout(self.idle, resp.bytes()).await.ok().and_then(Result::ok).unwrap_or_default();
            // A 401/403 is about the gateway's own credentials: what the upstream says of them
            // (often a masked key) is not the client's business.
            let message = if matches!(status.as_u16(), 401 | 403) {
                "the upstream refused the gateway's credentials (see upstream.api_key_env)".to_string()
            } else {
                self.error_message(&text)
            };
            return Err(about_the_model(UpstreamError::Status { status: status.as_u16(), message }, req.model));
        }
        let is_json = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.trim_start().get(..16).is_some_and(|p| p.eq_ignore_ascii_case("application/json")));
        if is_json {
            // A server that ignores `stream: true` answers one `chat.completion`: read as the
            // one chunk it amounts to, so that every later step sees one shape.
            let body = match tokio::time::timeout(self.idle, resp.bytes()).await {
                Ok(Ok(b)) => b,
                Ok(Err(e)) => return Err(self.sanitize(e)),
                Err(_) => return Err(UpstreamError::Timeout(self.idle.as_millis() as u64)),
            };
            let sse = completion_as_sse(&body);
            let bytes = futures_util::stream::once(async move { Ok::<_, std::io::Error>(sse) });
            return Ok(RoundStream::new(bytes, self.idle).with_secrets(self.secrets.clone()));
        }
        Ok(RoundStream::new(resp.bytes_stream(), self.idle).with_secrets(self.secrets.clone()))
    }

    /// Sends the request `build` makes, waiting at most `timeout` for the response head. A
    /// pooled keep-alive connection the server closed just as it was reused (llama.cpp closes
    /// idle ones after 5 s) fails before any response byte: the request is sent once more on
    /// a fresh connection, as the OpenAI SDKs do. Errors: `Timeout`, else the sanitized error.
    async fn send_once_more(
        &self,
        timeout: Duration,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, UpstreamError> {
        let mut retried = false;
        loop {
            match tokio::time::timeout(timeout, build().send()).await {
                Err(_) => return Err(UpstreamError::Timeout(timeout.as_millis() as u64)),
                Ok(Ok(resp)) => return Ok(resp),
                Ok(Err(e)) if !retried && e.is_request() && !e.is_timeout() => {
                    tracing::debug!(error = %self.redact(&e.without_url().to_string()), "upstream send failed; retrying once");
                    retried = true;
                }
                Ok(Err(e)) => return Err(self.sanitize(e)),
            }
        }
    }

    /// A reqwest error without its URL (which may carry credentials) and without the key.
    fn sanitize(&self, e: reqwest::Error) -> UpstreamError {
        let timeout = e.is_timeout();
        let e = e.without_url();
        // The causes say why ("connection refused", a TLS error); they carry no URL.
        let msg = self.redact(&crate::error::with_causes(&e));
        if timeout {
            UpstreamError::Timeout(self.idle.as_millis() as u64)
        } else {
            UpstreamError::Unreachable(msg)
        }
    }

    fn redact(&self, s: &str) -> String {
        self.secrets.redact(s)
    }

    /// The upstream's own error message (`error.message`, `error`, or `message`; a body
    /// that is not JSON is the message itself), cut to 500 characters, key redacted.
    fn error_message(&self, body: &[u8]) -> String {
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let msg = match &parsed {
            Some(v) => v
                .pointer("/error/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("message"))
                .or_else(|| v.get("detail"))
                .and_then(|m| match m {
                    Value::String(s) => Some(s.clone()),
                    // FastAPI's validation errors: `{"detail": [{…}]}`.
                    Value::Array(_) | Value::Object(_) => Some(m.to_string()),
                    _ => None,
                }),
            None => std::str::from_utf8(body).ok().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string),
        };
        let msg = msg.unwrap_or_else(|| "no error message".to_string());
        let msg: String = msg.chars().take(500).collect();
        self.redact(&msg)
    }
}

type Events = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// The events of one streamed round. Every wait is bounded by the idle timeout; the timer
/// is only re-armed when it fires early, so a busy stream costs no timer work per chunk.
pub struct RoundStream {
    events: Events,
    pending: VecDeque<UpstreamEvent>,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    last_data: Instant,
    finished: bool,
    done: bool,
    /// Native custom calls whose re-encoded arguments are still open.
    open_custom: Vec<usize>,
    /// Credentials to redact from error messages (`ChatCompletions::secrets`).
    secrets: Arc<Secrets>,
}

enum Next {
    Event(Result<Sse, sse_stream::Error>),
    End,
    Idle,
}

impl RoundStream {
    /// Reads SSE (with the `sse-stream` crate) from any byte stream: the HTTP body, or
    /// recorded bytes in tests.
    pub fn new<S, E>(bytes: S, idle: Duration) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        RoundStream {
            events: Box::pin(SseByteStream::new(bytes)),
            pending: VecDeque::new(),
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
            last_data: Instant::now(),
            finished: false,
            done: false,
            open_custom: Vec::new(),
            secrets: Arc::default(),
        }
    }

    /// Redacts these credentials from every error the stream reports.
    pub fn with_secrets(mut self, secrets: Arc<Secrets>) -> Self {
        self.secrets = secrets;
        self
    }

    async fn poll_event(&mut self) -> Next {
        let (events, deadline, idle, last) = (&mut self.events, &mut self.deadline, self.idle, self.last_data);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(item) = events.as_mut().poll_next(cx) {
                return Poll::Ready(match item {
                    Some(ev) => Next::Event(ev),
                    None => Next::End,
                });
            }
            loop {
                match deadline.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(()) => {
                        let due = last + idle;
                        if Instant::now() >= due {
                            return Poll::Ready(Next::Idle);
                        }
                        deadline.as_mut().reset(due);
                    }
                }
            }
        })
        .await
    }

    /// The next event; `None` at the end of the round. Error messages never hold a secret.
    pub async fn next(&mut self) -> Option<Result<UpstreamEvent, UpstreamError>> {
        match self.next_raw().await {
            Some(Err(e)) if !self.secrets.is_empty() => Some(Err(e.redacted(|m| self.secrets.redact(m)))),
            other => other,
        }
    }

    async fn next_raw(&mut self) -> Option<Result<UpstreamEvent, UpstreamError>> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Some(Ok(e));
            }
            if self.done {
                return None;
            }
            let ev = match self.poll_event().await {
                Next::Idle => {
                    self.done = true;
                    return Some(Err(UpstreamError::Timeout(self.idle.as_millis() as u64)));
                }
                Next::End => {
                    self.done = true;
                    if self.finished {
                        return None;
                    }
                    return Some(Err(UpstreamError::Protocol("the stream ended before the model finished".into())));
                }
                Next::Event(Err(e)) => {
                    self.done = true;
                    return Some(Err(match e {
                        sse_stream::Error::Body(_) => UpstreamError::Unreachable("the upstream connection failed mid-stream".into()),
                        other => UpstreamError::Protocol(other.to_string()),
                    }));
                }
                Next::Event(Ok(ev)) => ev,
            };
            self.last_data = Instant::now();
            let Some(data) = ev.data.as_deref() else { continue };
            if data == "[DONE]" {
                self.done = true;
                if !self.finished {
                    return Some(Err(UpstreamError::Protocol("[DONE] before a finish_reason".into())));
                }
                return None;
            }
            if data.is_empty() {
                continue;
            }
            if let Err(e) = parse_chunk(data, &mut self.pending, &mut self.finished, &mut self.open_custom) {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}

impl ModelClient for ChatCompletions {
    fn caps(&self) -> &UpstreamCaps {
        &self.caps
    }

    /// The round's stream; an error inside it is classified as an HTTP answer is (a 404
    /// naming the model is `UnknownModel`).
    fn stream_round<'a>(&'a self, req: &'a RoundRequest<'a>) -> BoxFuture<'a, Result<UpstreamStream, UpstreamError>> {
        Box::pin(async move {
            // Boxed: the unfold moves its state through each step, and a pointer moves
            // cheaper than the stream.
            let rs = Box::new(self.stream(req).await?);
            let model: Arc<str> = req.model.into();
            let events = futures_util::stream::unfold((rs, model), |(mut rs, model)| async move {
                let ev = rs.next().await?.map_err(|e| about_the_model(e, &model));
                Some((ev, (rs, model)))
            });
            Ok(Box::pin(events) as UpstreamStream)
        })
    }

    fn models(&self, timeout: Duration) -> BoxFuture<'_, Result<Value, UpstreamError>> {
        Box::pin(ChatCompletions::models(self, timeout))
    }
}

/// A non-streamed `chat.completion` body as the SSE of the one chunk it amounts to: each
/// choice's `message` becomes its `delta`, its tool calls numbered by position, then
/// `[DONE]`. A body that is not a completion (an `{"error":…}`) goes through as it is, to be
/// read as such; one that is not JSON gives a chunk the parser reports as malformed.
fn completion_as_sse(body: &[u8]) -> Bytes {
    let mut v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if let Some(choices) = v.get_mut("choices").and_then(Value::as_array_mut) {
        for c in choices.iter_mut().filter_map(Value::as_object_mut) {
            let mut delta = c.remove("message").unwrap_or(Value::Null);
            if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
                for (i, call) in calls.iter_mut().enumerate().filter_map(|(i, c)| c.as_object_mut().map(|c| (i, c))) {
                    call.entry("index").or_insert(Value::from(i));
                }
            }
            c.insert("delta".into(), delta);
        }
    }
    let chunk = if v.is_null() { "{".to_string() } else { v.to_string() };
    Bytes::from(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
}

/// Parses one `chat.completion.chunk` into events (choice 0 only).
/// `open_custom` holds the indices of native custom calls whose arguments are still open.
pub fn parse_chunk(
    data: &str,
    out: &mut VecDeque<UpstreamEvent>,
    finished: &mut bool,
    open_custom: &mut Vec<usize>,
) -> Result<(), UpstreamError> {
    let chunk: ChatChunk<'_> =
        serde_json::from_str(data).map_err(|_| UpstreamError::Protocol("malformed chunk".into()))?;
    // An error sent inside the 200 stream (`{"error":{…}}`, or vLLM's top-level
    // `{"object":"error",…}`) is the upstream's error: its `code`, when an HTTP status,
    // classifies it as a response with that status would be (e.g. a context-length 400).
    let in_stream = match (&chunk.error, &chunk.message) {
        (Some(err), _) => Some((err.get("message").and_then(Value::as_str).map(str::to_string), err.get("code").cloned())),
        (None, Some(m)) if chunk.choice.is_none() => Some((Some(m.to_string()), chunk.code.clone())),
        _ => None,
    };
    if let Some((msg, code)) = in_stream {
        let status = code.as_ref().and_then(Value::as_u64).filter(|c| (400..600).contains(c)).unwrap_or(500) as u16;
        let message = msg.unwrap_or_else(|| "error in stream".to_string()).chars().take(500).collect();
        return Err(UpstreamError::Status { status, message });
    }
    if let Some(choice) = chunk.choice {
        let d = choice.delta;
        // Servers moving from `reasoning_content` to `reasoning` may send both: one is used.
        if let Some(text) = d.reasoning_content.filter(|t| !t.is_empty()).or(d.reasoning.filter(|t| !t.is_empty())) {
            out.push_back(UpstreamEvent::Reasoning(text.into_owned()));
        }
        if let Some(text) = d.content.filter(|t| !t.is_empty()) {
            out.push_back(UpstreamEvent::Text(text.into_owned()));
        }
        if let Some(text) = d.refusal.filter(|t| !t.is_empty()) {
            out.push_back(UpstreamEvent::Refusal(text.into_owned()));
        }
        for tc in d.tool_calls.unwrap_or_default() {
            let (name, arguments) = match (tc.function, tc.custom) {
                (Some(f), _) => (f.name.map(Cow::into_owned), f.arguments.map(Cow::into_owned)),
                // A native custom call's raw input is re-encoded as the function form's
                // arguments `{"input": "…"}`, piece by piece, so every later step sees one
                // shape; the closing `"}` follows at the finish.
                (None, Some(c)) => {
                    let mut args = String::new();
                    if !open_custom.contains(&tc.index) {
                        open_custom.push(tc.index);
                        args.push_str("{\"input\":\"");
                    }
                    if let Some(piece) = c.input {
                        let quoted = serde_json::to_string(piece.as_ref()).unwrap_or_default();
                        args.push_str(quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default());
                    }
                    (c.name.map(Cow::into_owned), Some(args))
                }
                (None, None) => (None, None),
            };
            out.push_back(UpstreamEvent::ToolCall { index: tc.index, id: tc.id.map(Cow::into_owned), name, arguments });
        }
        if let Some(r) = choice.finish_reason {
            // vLLM's `abort` (or an `error` reason): the server gave up on the generation
            // (engine error, its own shutdown); what came is not a whole answer.
            if r == "abort" || r == "error" {
                return Err(UpstreamError::Protocol("the model server aborted the generation".into()));
            }
            for index in open_custom.drain(..) {
                out.push_back(UpstreamEvent::ToolCall { index, id: None, name: None, arguments: Some("\"}".into()) });
            }
            *finished = true;
            out.push_back(UpstreamEvent::Finish(match r.as_ref() {
                "length" => FinishReason::Length,
                "tool_calls" | "function_call" => FinishReason::ToolCalls,
                "content_filter" => FinishReason::ContentFilter,
                _ => FinishReason::Stop,
            }));
        }
    }
    if let Some(u) = chunk.usage {
        out.push_back(UpstreamEvent::Usage(map_usage(&u)));
    }
    Ok(())
}

/// Chat usage → Responses usage (contract §11 mapping).
pub fn map_usage(u: &ChatUsage) -> Usage {
    let total = if u.total_tokens > 0 { u.total_tokens } else { u.prompt_tokens + u.completion_tokens };
    Usage {
        input_tokens: u.prompt_tokens,
        input_tokens_details: InputTokensDetails {
            cached_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0),
            cache_write_tokens: 0,
        },
        output_tokens: u.completion_tokens,
        output_tokens_details: OutputTokensDetails {
            reasoning_tokens: u.completion_tokens_details.and_then(|d| d.reasoning_tokens).unwrap_or(0),
        },
        total_tokens: total,
    }
}

#[cfg(test)]
mod tests {
    use super::names_the_model;

    #[test]
    fn a_404_is_about_the_model_only_when_it_names_it() {
        for (message, model) in [
            ("The model `gpt-4o` does not exist.", "gpt-4o"),
            ("model \"llama3:8b\" not found, try pulling it first", "llama3:8b"),
            ("The model Qwen/Qwen3-8B does not exist", "Qwen/Qwen3-8B"),
            ("Unknown model: m1.", "m1"),
        ] {
            assert!(names_the_model(message, model), "{message}");
        }
        for (message, model) in [
            ("Cannot POST /v1/chat/completions", "v1"),
            ("Route /v1/chat/completions not found. Did you mean /v1/models?", "chat"),
            ("Not Found", "Not"),
            ("The model `qwen-x-lora` does not exist.", "qwen-x"),
            ("file not found for qwen-x adapter", "qwen-x"),
            ("The model `m.1` does not exist.", "m"),
            ("model missing", ""),
        ] {
            assert!(!names_the_model(message, model), "{message} / {model}");
        }
    }
}
