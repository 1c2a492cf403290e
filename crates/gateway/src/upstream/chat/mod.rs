//! The Chat Completions adapter (contract §11), one [`ModelClient`]: a neutral round →
//! `POST {base}/chat/completions` with `stream: true` (`request.rs` renders it), and the SSE
//! answer → [`UpstreamEvent`]s. SSE framing is parsed by the `sse-stream` crate.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use protocol::chat::{ChatChunk, ChatUsage};
use protocol::response::{InputTokensDetails, OutputTokensDetails, Usage};
use serde_json::Value;

use futures_util::future::BoxFuture;

use crate::upstream::http::HttpUpstream;
use crate::upstream::sse::{SseParser, SseRound};
use crate::upstream::{FinishReason, ModelClient, RoundRequest, UpstreamCaps, UpstreamError, UpstreamEvent, UpstreamStream};

pub mod calls;
pub mod request;

use calls::CallSlots;
use crate::transcript::ReasoningField;

/// A configured chat-completions upstream.
#[derive(Debug, Clone)]
pub struct ChatCompletions {
    http: HttpUpstream,
    /// `{base}/chat/completions` (the base's query string kept), built once.
    chat_url: reqwest::Url,
    caps: UpstreamCaps,
}

impl ChatCompletions {
    /// `base` is the OpenAI base URL including `/v1`; `idle` bounds every wait on the
    /// upstream (headers and each chunk); `pool_idle` closes unused pooled connections.
    /// Errors: `base` is not a URL, or the HTTP client cannot be built.
    pub fn new(base: &str, api_key: Option<String>, idle: Duration, connect: Duration, pool_idle: Duration) -> anyhow::Result<Self> {
        let http = HttpUpstream::new(base, api_key, idle, connect, pool_idle)?;
        let chat_url = http.url("/chat/completions");
        Ok(ChatCompletions { http, chat_url, caps: UpstreamCaps::default() })
    }

    /// The same upstream with these capabilities (`upstream.native_tools`).
    pub fn with_caps(mut self, caps: UpstreamCaps) -> Self {
        self.caps = caps;
        self
    }

    /// `GET {base}/models`, passed through as JSON (used by `/v1/models` and `/readyz`).
    pub async fn models(&self, timeout: Duration) -> Result<Value, UpstreamError> {
        self.http.models(timeout).await
    }

    /// Starts one streamed round.
    pub async fn stream(&self, req: &RoundRequest<'_>) -> Result<RoundStream, UpstreamError> {
        let body = Bytes::from(
            request::encode(req, self.caps.reasoning_handback).map_err(|e| UpstreamError::Protocol(format!("could not encode the request: {e}")))?,
        );
        let resp = self.http.post_round(&self.chat_url, body, req.model).await?;
        let idle = self.http.idle();
        let is_json = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.trim_start().get(..16).is_some_and(|p| p.eq_ignore_ascii_case("application/json")));
        if is_json {
            // A server that ignores `stream: true` answers one `chat.completion`: read as the
            // one chunk it amounts to, so that every later step sees one shape.
            let body = self.http.body(resp).await?;
            let sse = completion_as_sse(&body);
            let bytes = futures_util::stream::once(async move { Ok::<_, std::io::Error>(sse) });
            return Ok(RoundStream::new(bytes, idle).with_secrets(self.http.secrets()));
        }
        Ok(RoundStream::new(resp.bytes_stream(), idle).with_secrets(self.http.secrets()))
    }

}

/// The events of one streamed chat round.
pub type RoundStream = SseRound<ChatParser>;

impl SseRound<ChatParser> {
    /// Reads a chat round's SSE from any byte stream: the HTTP body, or recorded bytes in tests.
    pub fn new<S, E>(bytes: S, idle: Duration) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        SseRound::with_parser(bytes, idle, ChatParser::default())
    }
}

/// What a chat round's chunks mean; `data: [DONE]` ends it.
#[derive(Debug, Default)]
pub struct ChatParser {
    finished: bool,
    /// Native custom calls (by call number) whose re-encoded arguments are still open.
    open_custom: Vec<usize>,
    /// The round's calls by `index` and `id`.
    slots: CallSlots,
    /// The field the round's reasoning came in (told once).
    field: Option<ReasoningField>,
}

impl SseParser for ChatParser {
    fn parse(&mut self, _event: Option<&str>, data: &str, out: &mut VecDeque<UpstreamEvent>) -> Result<bool, UpstreamError> {
        if data == "[DONE]" {
            if !self.finished {
                return Err(UpstreamError::Protocol("[DONE] before a finish_reason".into()));
            }
            return Ok(true);
        }
        self.parse_chunk(data, out)?;
        Ok(false)
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

impl ModelClient for ChatCompletions {
    fn caps(&self) -> &UpstreamCaps {
        &self.caps
    }

    /// The round's stream; an error inside it is classified as an HTTP answer is (a 404
    /// naming the model is `UnknownModel`).
    fn stream_round<'a>(&'a self, req: &'a RoundRequest<'a>) -> BoxFuture<'a, Result<UpstreamStream, UpstreamError>> {
        Box::pin(async move { Ok(self.stream(req).await?.into_upstream(req.model)) })
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

impl ChatParser {
    /// Parses one `chat.completion.chunk` into events (choice 0 only). A tool call's fragments
    /// carry the call's number in the round ([`CallSlots`]), not the upstream's `index`.
    pub fn parse_chunk(&mut self, data: &str, out: &mut VecDeque<UpstreamEvent>) -> Result<(), UpstreamError> {
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
            // Servers moving from `reasoning_content` to `reasoning` may send both: one is
            // used, and the round's reasoning goes back in the field that came first.
            let reasoning = match (d.reasoning_content.filter(|t| !t.is_empty()), d.reasoning.filter(|t| !t.is_empty())) {
                (Some(t), _) => Some((t, ReasoningField::ReasoningContent)),
                (None, Some(t)) => Some((t, ReasoningField::Reasoning)),
                (None, None) => None,
            };
            if let Some((text, field)) = reasoning {
                if self.field.is_none() {
                    self.field = Some(field);
                    out.push_back(UpstreamEvent::ReasoningField(field));
                }
                out.push_back(UpstreamEvent::Reasoning(text.into_owned()));
            }
            if let Some(text) = d.content.filter(|t| !t.is_empty()) {
                out.push_back(UpstreamEvent::Text(text.into_owned()));
            }
            if let Some(text) = d.refusal.filter(|t| !t.is_empty()) {
                out.push_back(UpstreamEvent::Refusal(text.into_owned()));
            }
            for tc in d.tool_calls.unwrap_or_default() {
                let name = tc.function.as_ref().and_then(|f| f.name.as_ref()).or(tc.custom.as_ref().and_then(|c| c.name.as_ref()));
                let named = name.is_some_and(|n| !n.is_empty());
                let index = self.slots.slot(tc.index, tc.id.as_deref(), named);
                let (name, arguments) = match (tc.function, tc.custom) {
                    (Some(f), _) => (f.name.map(Cow::into_owned), f.arguments.map(Cow::into_owned)),
                    // A native custom call's raw input is re-encoded as the function form's
                    // arguments `{"input": "…"}`, piece by piece, so every later step sees one
                    // shape; the closing `"}` follows at the finish.
                    (None, Some(c)) => {
                        let mut args = String::new();
                        if !self.open_custom.contains(&index) {
                            self.open_custom.push(index);
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
                out.push_back(UpstreamEvent::ToolCall { index, id: tc.id.map(Cow::into_owned), name, arguments });
            }
            if let Some(r) = choice.finish_reason {
                // vLLM's `abort` (or an `error` reason): the server gave up on the generation
                // (engine error, its own shutdown); what came is not a whole answer.
                if r == "abort" || r == "error" {
                    return Err(UpstreamError::Protocol("the model server aborted the generation".into()));
                }
                for index in self.open_custom.drain(..) {
                    out.push_back(UpstreamEvent::ToolCall { index, id: None, name: None, arguments: Some("\"}".into()) });
                }
                self.finished = true;
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

