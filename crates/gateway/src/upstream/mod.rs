//! Upstream model servers. One turn pipeline drives them through [`UpstreamEvent`]s;
//! only the adapter differs per upstream kind (DESIGN.md "Layout").

pub mod chat_completions;
pub mod chat_request;
pub mod redact;

use protocol::response::Usage;
use serde_json::Value;

use crate::tools::{ToolChoice, UpstreamFunction};
use crate::turn::transcript::Transcript;

pub use chat_completions::{ChatCompletions, RoundStream};

/// Why the upstream stopped a round (contract §11 `finish_reason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
}

/// One normalized piece of an upstream round.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamEvent {
    /// Assistant text.
    Text(String),
    /// The model's refusal (`delta.refusal`): a `refusal` content part, not text.
    Refusal(String),
    /// The model's raw reasoning (`delta.reasoning_content`, or `delta.reasoning`).
    Reasoning(String),
    /// A tool-call fragment; `index` correlates fragments of one call.
    ToolCall { index: usize, id: Option<String>, name: Option<String>, arguments: Option<String> },
    Finish(FinishReason),
    Usage(Usage),
}

/// Sampling and format settings passed on to the upstream.
#[derive(Debug, Clone, Default)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// Output-token cap for this round (what is left of `max_output_tokens`).
    pub max_tokens: Option<u64>,
    pub parallel_tool_calls: Option<bool>,
    /// Chat Completions `response_format` (from `text.format`).
    pub response_format: Option<Value>,
    pub user: Option<String>,
    /// Chat Completions `reasoning_effort` (from `reasoning.effort`).
    pub reasoning_effort: Option<String>,
}

/// One upstream round: the transcript, the tools declared for it and the choice.
#[derive(Debug, Clone, Copy)]
pub struct RoundRequest<'a> {
    pub model: &'a str,
    pub transcript: &'a Transcript,
    pub tools: &'a [&'a UpstreamFunction],
    pub tool_choice: &'a ToolChoice,
    pub sampling: &'a Sampling,
}

/// An upstream failure. Messages never contain the upstream URL or credentials.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UpstreamError {
    #[error("upstream unreachable: {0}")]
    Unreachable(String),
    #[error("upstream returned HTTP {status}: {message}")]
    Status { status: u16, message: String },
    /// The upstream's 404 for the model the request named (its message names that model, as
    /// vLLM's and Ollama's do); a 404 that does not name it is a `Status` (a wrong URL).
    #[error("upstream returned HTTP 404: {0}")]
    UnknownModel(String),
    #[error("upstream sent an invalid response: {0}")]
    Protocol(String),
    #[error("upstream timed out: no data for {0} ms")]
    Timeout(u64),
}

impl UpstreamError {
    /// The `code` of the non-streamed error body and of a stream's `error` event (the same
    /// for both): `context_length_exceeded` (an upstream 400/413/422 whose message says the
    /// prompt does not fit the model's context, as vLLM, llama.cpp, Ollama and OpenAI word
    /// it), `upstream_rejected_request` (any other 400/413/422), `model_not_found`
    /// ([`UpstreamError::UnknownModel`]), `rate_limit_exceeded` (429), `upstream_timeout`,
    /// else `upstream_error`.
    pub fn code(&self) -> &'static str {
        match self {
            UpstreamError::UnknownModel(_) => "model_not_found",
            UpstreamError::Status { status: 400 | 413 | 422, message } if is_context_length(message) => {
                "context_length_exceeded"
            }
            UpstreamError::Status { status: 400 | 413 | 422, .. } => "upstream_rejected_request",
            UpstreamError::Status { status: 429, .. } => "rate_limit_exceeded",
            UpstreamError::Timeout(_) => "upstream_timeout",
            _ => "upstream_error",
        }
    }

    /// `response.error.code` of the failed Response, one of the codes the SDK's
    /// `ResponseError` allows: `invalid_prompt` for the upstream's refusal of the request
    /// (clients such as Codex CLI do not retry it), `rate_limit_exceeded`, else `server_error`.
    pub fn response_code(code: &str) -> &'static str {
        match code {
            "upstream_rejected_request" | "context_length_exceeded" | "model_not_found" => "invalid_prompt",
            "rate_limit_exceeded" => "rate_limit_exceeded",
            _ => "server_error",
        }
    }
}

impl UpstreamError {
    /// The same error with `redact` applied to its message.
    pub fn redacted(self, redact: impl Fn(&str) -> String) -> UpstreamError {
        match self {
            UpstreamError::Unreachable(m) => UpstreamError::Unreachable(redact(&m)),
            UpstreamError::Status { status, message } => UpstreamError::Status { status, message: redact(&message) },
            UpstreamError::UnknownModel(m) => UpstreamError::UnknownModel(redact(&m)),
            UpstreamError::Protocol(m) => UpstreamError::Protocol(redact(&m)),
            UpstreamError::Timeout(ms) => UpstreamError::Timeout(ms),
        }
    }
}

/// True when an upstream error message says the prompt exceeds the model's context.
fn is_context_length(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["context length", "context_length_exceeded", "context size", "context window"].iter().any(|p| m.contains(p))
}

impl UpstreamError {
    /// The HTTP answer for a non-streamed turn that failed on the upstream: the upstream's
    /// own request errors (400, 413, 422) are the client's 400, an unknown model is a 404
    /// naming `model`, and a 429 stays a 429, so SDKs do not retry a request that cannot
    /// succeed; a timeout is a 504; anything else
    /// (unreachable, 5xx, auth or routing errors of the gateway's own credentials, broken
    /// streams) is a 502.
    pub fn to_http(&self) -> crate::error::HttpError {
        use axum::http::StatusCode;
        let code = self.code();
        let (status, kind) = match self {
            _ if code == "model_not_found" => (StatusCode::NOT_FOUND, "invalid_request_error"),
            UpstreamError::Status { status: 400 | 413 | 422, .. } => (StatusCode::BAD_REQUEST, "invalid_request_error"),
            UpstreamError::Status { status: 429, .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error"),
            UpstreamError::Timeout(_) => (StatusCode::GATEWAY_TIMEOUT, "server_error"),
            _ => (StatusCode::BAD_GATEWAY, "server_error"),
        };
        let param = (code == "model_not_found").then(|| "model".to_string());
        crate::error::HttpError {
            status,
            error: protocol::ApiError { message: self.to_string(), kind: kind.into(), param, code: Some(code.into()) },
        }
    }
}
