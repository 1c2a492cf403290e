//! The Responses adapter, a second [`ModelClient`]: a neutral round → `POST
//! {base}/responses` (`stream: true`, `store: false`; `request.rs` renders it), and the
//! upstream's streaming events → the same neutral [`UpstreamEvent`]s as a chat upstream's.
//! The upstream's ids, sequence numbers and item order never reach the client: the one
//! emitter of the turn assigns them.

pub mod request;

use std::borrow::Cow;
use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use protocol::response::{InputTokensDetails, OutputTokensDetails, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::upstream::http::HttpUpstream;
use crate::upstream::sse::{SseParser, SseRound};
use crate::upstream::{FinishReason, ModelClient, RoundRequest, UpstreamCaps, UpstreamError, UpstreamEvent, UpstreamStream, HOSTED_NATIVE};

/// A configured Responses upstream (`upstream.api = "responses"`).
#[derive(Debug, Clone)]
pub struct Responses {
    http: HttpUpstream,
    /// `{base}/responses`, built once.
    url: reqwest::Url,
    caps: UpstreamCaps,
}

impl Responses {
    /// `base` is the OpenAI base URL including `/v1`; the timeouts as for a chat upstream.
    /// Errors: `base` is not a URL, or the HTTP client cannot be built.
    pub fn new(base: &str, api_key: Option<String>, idle: Duration, connect: Duration, pool_idle: Duration) -> anyhow::Result<Self> {
        let http = HttpUpstream::new(base, api_key, idle, connect, pool_idle)?;
        let url = http.url("/responses");
        Ok(Responses { http, url, caps: UpstreamCaps::default() })
    }

    /// The same upstream with these capabilities.
    pub fn with_caps(mut self, caps: UpstreamCaps) -> Self {
        self.caps = caps;
        self
    }

    /// One non-streamed `POST {base}/responses` with `body` (which names `model`), the
    /// answer's Response object as JSON: the private calls an executor makes (the `openai`
    /// web-search backend) go through the same client as the rounds. Errors as for
    /// [`Responses::stream`]; an answer that is not JSON is a `Protocol` error.
    pub async fn create(&self, body: &Value, model: &str) -> Result<Value, UpstreamError> {
        let bytes = serde_json::to_vec(body).map_err(|e| UpstreamError::Protocol(format!("could not encode the request: {e}")))?;
        let resp = self.http.post_round(&self.url, Bytes::from(bytes), model).await?;
        let answer = self.http.body(resp).await?;
        serde_json::from_slice(&answer).map_err(|_| UpstreamError::Protocol("the answer is not JSON".into()))
    }

    /// Starts one streamed round. An answer that is not an event stream is a `Protocol`
    /// error (the request asks for `stream: true`).
    pub async fn stream(&self, req: &RoundRequest<'_>) -> Result<SseRound<ResponsesParser>, UpstreamError> {
        let body = request::encode(req).map_err(|e| UpstreamError::Protocol(format!("could not encode the request: {e}")))?;
        let resp = self.http.post_round(&self.url, Bytes::from(body), req.model).await?;
        let is_stream = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
        if !is_stream {
            return Err(UpstreamError::Protocol("the upstream answered a streamed request without an event stream".into()));
        }
        Ok(SseRound::with_parser(resp.bytes_stream(), self.http.idle(), ResponsesParser::for_round(req)).with_secrets(self.http.secrets()))
    }
}

impl ModelClient for Responses {
    fn caps(&self) -> &UpstreamCaps {
        &self.caps
    }

    fn stream_round<'a>(&'a self, req: &'a RoundRequest<'a>) -> BoxFuture<'a, Result<UpstreamStream, UpstreamError>> {
        Box::pin(async move { Ok(self.stream(req).await?.into_upstream(req.model)) })
    }

    fn models(&self, timeout: Duration) -> BoxFuture<'_, Result<Value, UpstreamError>> {
        Box::pin(self.http.models(timeout))
    }
}

/// Events that carry nothing the turn needs (the turn builds its own items).
const QUIET: [&str; 17] = [
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.refusal.done",
    "response.reasoning_text.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    // A typed call's progress: the gateway runs the search and emits its own.
    "response.file_search_call.in_progress",
    "response.file_search_call.searching",
    "response.file_search_call.completed",
    "response.web_search_call.in_progress",
    "response.web_search_call.searching",
    "response.web_search_call.completed",
];

/// What a Responses stream's events mean. A call's fragments are keyed by its item id (or,
/// from servers that send one, its `output_index`; llama.cpp sends only the id); a native
/// custom call's input is re-encoded as the function form's arguments `{"input": "…"}`, as
/// the chat adapter does, so every later step sees one shape.
#[derive(Debug, Default)]
pub struct ResponsesParser {
    finished: bool,
    /// The calls seen, in order.
    calls: Vec<SeenCall>,
    /// Output items added so far (the index of an item without `output_index`).
    items: usize,
    /// An unknown event type was logged (once per round).
    logged_unknown: bool,
    /// `(item type, model-visible name)` of the hosted tools declared natively this round:
    /// a typed call of that item type (`file_search_call`) is a call of that tool.
    hosted: Vec<(&'static str, String)>,
}

/// What kind of call an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    Function,
    /// A native custom call: its input is re-encoded as `{"input": …}`.
    Custom,
    /// A typed call of a natively declared hosted tool: its arguments come from the
    /// finished item (`queries`, `action.query`).
    Hosted,
}

/// A call item of the round.
#[derive(Debug)]
struct SeenCall {
    item_id: String,
    index: usize,
    /// An argument (or input) delta came.
    delta: bool,
    kind: CallKind,
    closed: bool,
}

impl ResponsesParser {
    /// A parser for `req`'s round, knowing its natively declared hosted tools.
    pub fn for_round(req: &RoundRequest<'_>) -> ResponsesParser {
        let hosted = req
            .tools
            .iter()
            .filter_map(|t| Some((t.native.as_ref()?.call_item_type()?, t.name.clone())))
            .collect();
        ResponsesParser { hosted, ..ResponsesParser::default() }
    }

    /// The call an event is about: by its item id, else its `output_index`, else the
    /// latest call.
    fn call(&mut self, id: Option<&str>, index: Option<usize>) -> Option<&mut SeenCall> {
        let pos = match (id, index) {
            (Some(id), _) if self.calls.iter().any(|c| c.item_id == id) => self.calls.iter().position(|c| c.item_id == id),
            (_, Some(i)) => self.calls.iter().position(|c| c.index == i),
            _ => self.calls.len().checked_sub(1),
        }?;
        self.calls.get_mut(pos)
    }
}

/// The fields of a streaming event the parser reads; the rest is skipped unread (a delta
/// event allocates nothing but its text).
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    delta: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    item_id: Option<Cow<'a, str>>,
    #[serde(default)]
    output_index: Option<usize>,
    /// A summary delta's part number.
    #[serde(default)]
    summary_index: Option<usize>,
    /// `function_call_arguments.done`'s whole arguments.
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    item: Option<Item<'a>>,
    #[serde(borrow, default)]
    response: Option<Terminal<'a>>,
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(borrow, default)]
    error: Option<ErrorObj<'a>>,
}

/// An output item's fields the parser reads (calls).
#[derive(Deserialize, Default)]
struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<Cow<'a, str>>,
    /// A `file_search_call`'s queries (read leniently: any JSON).
    #[serde(default)]
    queries: Option<Value>,
    /// A `web_search_call`'s action (read leniently: any JSON).
    #[serde(default)]
    action: Option<Value>,
}

/// The strings of `v`: a string, or the strings of an array (others skipped).
fn strings(v: Option<&Value>) -> Vec<&str> {
    match v {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The function-form arguments of a hosted tool's typed call, from its finished item:
/// `{"queries": […]}` for a file search, `{"query": "…"}` for a web search (`action.query`,
/// else its first `queries`). What the item lacks is left out, so the tool's schema check
/// answers the model instead of the turn failing.
fn hosted_arguments(item: &Item<'_>) -> String {
    if item.kind.as_deref() == Some("web_search_call") {
        let action = item.action.as_ref();
        let query = strings(action.and_then(|a| a.get("query"))).into_iter().chain(strings(action.and_then(|a| a.get("queries")))).next();
        return match query {
            Some(q) => serde_json::json!({"query": q}).to_string(),
            None => "{}".to_string(),
        };
    }
    serde_json::json!({"queries": strings(item.queries.as_ref())}).to_string()
}

/// A Response's fields the parser reads (terminal events); `output` is skipped unread.
#[derive(Deserialize, Default)]
struct Terminal<'a> {
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(borrow, default)]
    incomplete_details: Option<Incomplete<'a>>,
    #[serde(borrow, default)]
    error: Option<ErrorObj<'a>>,
}

/// `incomplete_details`.
#[derive(Deserialize, Default)]
struct Incomplete<'a> {
    #[serde(borrow, default)]
    reason: Option<Cow<'a, str>>,
}

/// A Responses `usage` object as sent (missing numbers are 0).
#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<Cached>,
    #[serde(default)]
    output_tokens_details: Option<Reasoning>,
}

#[derive(Deserialize, Default)]
struct Cached {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize, Default)]
struct Reasoning {
    #[serde(default)]
    reasoning_tokens: u64,
}

/// An error object's fields.
#[derive(Deserialize, Default)]
struct ErrorObj<'a> {
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
    #[serde(default)]
    code: Option<Value>,
}

/// `s` as the inside of a JSON string (escaped, without the quotes).
fn json_inner(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_default();
    quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_string()
}

impl SseParser for ResponsesParser {
    fn parse(&mut self, event: Option<&str>, data: &str, out: &mut VecDeque<UpstreamEvent>) -> Result<bool, UpstreamError> {
        // An event the turn does not use, named by its `event:` line, is not read at all
        // (`response.created` carries a whole Response).
        if event.is_some_and(|e| QUIET.contains(&e)) {
            return Ok(false);
        }
        let v: Event<'_> = serde_json::from_str(data).map_err(|_| UpstreamError::Protocol("malformed event".into()))?;
        let kind = v.kind.as_deref().or(event).unwrap_or_default();
        let delta = || v.delta.as_deref().unwrap_or_default().to_string();
        match kind {
            "response.output_text.delta" => out.push_back(UpstreamEvent::Text(delta())),
            "response.refusal.delta" => out.push_back(UpstreamEvent::Refusal(delta())),
            "response.reasoning_text.delta" => out.push_back(UpstreamEvent::Reasoning(delta())),
            // A summary stays a summary (`summary_text` parts), apart from the raw reasoning.
            "response.reasoning_summary_text.delta" => out.push_back(UpstreamEvent::ReasoningSummary { part: v.summary_index.unwrap_or(0), delta: delta() }),
            "response.output_item.added" => {
                let index = v.output_index.unwrap_or(self.items);
                self.items += 1;
                let Some(item) = &v.item else { return Ok(false) };
                let owned = |f: &Option<Cow<'_, str>>| f.as_deref().map(str::to_string);
                let (kind, call_id, name) = match item.kind.as_deref() {
                    Some("function_call") => (CallKind::Function, owned(&item.call_id), owned(&item.name)),
                    Some("custom_tool_call") => (CallKind::Custom, owned(&item.call_id), owned(&item.name)),
                    // A typed call has no call id: its item id names it. One of a hosted
                    // tool not declared natively this round is still its call, under the
                    // type's function name: the turn runs it if the tool is declared (as a
                    // function), else answers it as any call of a tool not offered.
                    Some(t) => match self.hosted.iter().find(|(item_type, _)| *item_type == t) {
                        Some((_, name)) => (CallKind::Hosted, owned(&item.id), Some(name.clone())),
                        None => match HOSTED_NATIVE.iter().find(|(_, item_type)| *item_type == t) {
                            Some((tool_type, _)) => (CallKind::Hosted, owned(&item.id), Some(tool_type.to_string())),
                            None => return Ok(false),
                        },
                    },
                    None => return Ok(false),
                };
                let item_id = owned(&item.id).unwrap_or_default();
                self.calls.push(SeenCall { item_id, index, delta: false, kind, closed: false });
                let opening = (kind == CallKind::Custom).then(|| "{\"input\":\"".to_string());
                out.push_back(UpstreamEvent::ToolCall { index, id: call_id, name, arguments: opening });
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                let Some(call) = self.call(v.item_id.as_deref(), v.output_index) else { return Ok(false) };
                call.delta = true;
                let piece = v.delta.as_deref().unwrap_or_default();
                let arguments = if call.kind == CallKind::Custom { json_inner(piece) } else { piece.to_string() };
                out.push_back(UpstreamEvent::ToolCall { index: call.index, id: None, name: None, arguments: Some(arguments) });
            }
            // Arguments given only here (no deltas) are the call's arguments; after deltas
            // they only repeat them.
            "response.function_call_arguments.done" => {
                let Some(call) = self.call(v.item_id.as_deref(), v.output_index).filter(|c| !c.delta && !c.closed) else { return Ok(false) };
                let Some(arguments) = v.arguments.as_deref().filter(|a| !a.is_empty()) else { return Ok(false) };
                call.delta = true;
                out.push_back(UpstreamEvent::ToolCall { index: call.index, id: None, name: None, arguments: Some(arguments.to_string()) });
            }
            "response.output_item.done" if v.item.as_ref().is_some_and(|i| i.kind.as_deref() == Some("reasoning")) => {
                // The upstream's reasoning goes back to it with the history, as it came.
                if let Some(item) = serde_json::from_str::<Value>(data).ok().and_then(|mut e| e.get_mut("item").map(Value::take)) {
                    out.push_back(UpstreamEvent::OpaqueItem(item));
                }
            }
            "response.output_item.done" => {
                let item = v.item.unwrap_or_default();
                let (arguments, input) = (item.arguments.as_deref().unwrap_or_default(), item.input.as_deref().unwrap_or_default());
                let id = v.item_id.as_deref().or(item.id.as_deref());
                let Some(call) = self.call(id, v.output_index).filter(|c| !c.closed) else { return Ok(false) };
                call.closed = true;
                let index = call.index;
                if call.kind == CallKind::Hosted {
                    out.push_back(UpstreamEvent::ToolCall { index, id: None, name: None, arguments: Some(hosted_arguments(&item)) });
                } else if call.kind == CallKind::Custom {
                    // The input, when it came only with the finished item, then the closing.
                    let mut rest = if call.delta { String::new() } else { json_inner(input) };
                    rest.push_str("\"}");
                    out.push_back(UpstreamEvent::ToolCall { index, id: None, name: None, arguments: Some(rest) });
                } else if !call.delta && !arguments.is_empty() {
                    // A function call whose arguments came only with the finished item.
                    out.push_back(UpstreamEvent::ToolCall { index, id: None, name: None, arguments: Some(arguments.to_string()) });
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = v.response.unwrap_or_default();
                if let Some(u) = &response.usage {
                    out.push_back(UpstreamEvent::Usage(usage(u)));
                }
                let reason = response.incomplete_details.as_ref().and_then(|d| d.reason.as_deref());
                let finish = match (kind, reason) {
                    ("response.incomplete", Some("content_filter")) => FinishReason::ContentFilter,
                    ("response.incomplete", _) => FinishReason::Length,
                    _ if !self.calls.is_empty() => FinishReason::ToolCalls,
                    _ => FinishReason::Stop,
                };
                out.push_back(UpstreamEvent::Finish(finish));
                self.finished = true;
                return Ok(true);
            }
            "response.failed" => {
                // The usage of the failed response counts; its message is wherever the
                // upstream put it: the Response's `error`, or beside it on the event.
                let response = v.response.unwrap_or_default();
                if let Some(u) = &response.usage {
                    out.push_back(UpstreamEvent::Usage(usage(u)));
                }
                let message = [response.error.as_ref(), v.error.as_ref()]
                    .into_iter()
                    .flatten()
                    .find_map(|e| e.message.as_deref().filter(|m| !m.trim().is_empty()))
                    .or(v.message.as_deref().filter(|m| !m.trim().is_empty()))
                    .unwrap_or("the upstream response failed without an error message");
                return Err(UpstreamError::Failed(message.chars().take(500).collect()));
            }
            "error" => {
                let message = v.message.as_deref().filter(|m| !m.trim().is_empty()).or_else(|| v.error.as_ref().and_then(|e| e.message.as_deref())).unwrap_or("error in stream");
                let code = v.code.as_ref().or_else(|| v.error.as_ref().and_then(|e| e.code.as_ref()));
                let message: String = message.chars().take(500).collect();
                // An `error` event with an HTTP status as its code is that status's error.
                return Err(match code.and_then(Value::as_u64).filter(|c| (400..600).contains(c)) {
                    Some(status) => UpstreamError::Status { status: status as u16, message },
                    None => UpstreamError::Failed(message),
                });
            }
            "response.custom_tool_call_input.done" => {}
            k if QUIET.contains(&k) => {}
            other => {
                if !self.logged_unknown {
                    self.logged_unknown = true;
                    tracing::debug!(event = ?other, "an upstream event type the gateway does not use; ignored");
                }
            }
        }
        Ok(false)
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

/// The neutral usage of a Responses `usage` object.
fn usage(u: &WireUsage) -> Usage {
    let total = match u.total_tokens {
        0 => u.input_tokens + u.output_tokens,
        t => t,
    };
    Usage {
        input_tokens: u.input_tokens,
        input_tokens_details: InputTokensDetails { cached_tokens: u.input_tokens_details.as_ref().map_or(0, |d| d.cached_tokens), cache_write_tokens: 0 },
        output_tokens: u.output_tokens,
        output_tokens_details: OutputTokensDetails { reasoning_tokens: u.output_tokens_details.as_ref().map_or(0, |d| d.reasoning_tokens) },
        total_tokens: total,
    }
}

#[cfg(test)]
mod tests;
