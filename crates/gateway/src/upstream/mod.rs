//! Upstream model servers behind one seam, [`ModelClient`] (DESIGN.md "The three seams"):
//! the turn hands it a neutral [`RoundRequest`] (transcript, [`UpstreamTool`] declarations,
//! [`ToolChoice`], [`Sampling`]) and reads the round back as neutral [`UpstreamEvent`]s. Each
//! wire API is one adapter folder that renders both (`chat/`: Chat Completions);
//! [`connect`] picks it from `[upstream]`.

pub mod arguments;
pub mod chat;
pub mod connect;
pub mod http;
pub mod leaked_calls;
pub mod redact;
pub mod responses;
pub mod sse;

use std::pin::Pin;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::Stream;
use protocol::request::TextFormat;
use protocol::response::Usage;
use serde_json::Value;

use crate::transcript::Transcript;

pub use connect::connect;

/// The wire API an upstream speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpstreamApi {
    /// `POST {base}/chat/completions` (contract §11).
    #[default]
    ChatCompletions,
    /// `POST {base}/responses`.
    Responses,
}

/// What an upstream can do, from `[upstream]`: the API it speaks and the tool types it takes
/// in their native form (`upstream.native_tools`). Capabilities never change who owns a
/// tool (DESIGN.md "Ownership model"); they only change how it is declared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamCaps {
    pub api: UpstreamApi,
    /// Responses tool types declared natively, e.g. `custom`.
    pub native_tools: Vec<String>,
    /// Which assistant messages carry their reasoning back to a chat upstream
    /// (`upstream.reasoning_handback`).
    pub reasoning_handback: ReasoningHandback,
}

pub use crate::config::ReasoningHandback;

impl UpstreamCaps {
    /// True when this upstream takes `tool_type` (a Responses tool type) natively.
    pub fn renders_native(&self, tool_type: &str) -> bool {
        self.native_tools.iter().any(|t| t == tool_type)
    }
}

/// One tool as the model sees it, neutral to the wire API: a function (`name`,
/// `description`, `parameters` as JSON Schema, `strict`), or its native form when the
/// upstream takes the tool type natively.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamTool {
    /// The model-visible name (`namespace__name` for namespace members).
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    pub strict: Option<bool>,
    /// The native declaration, used instead of the function when set; the ToolSet keeps it
    /// only when [`UpstreamCaps::renders_native`] says so.
    pub native: Option<NativeTool>,
}

impl UpstreamTool {
    /// True when the upstream sees this tool in its native form.
    pub fn is_native(&self) -> bool {
        self.native.is_some()
    }
}

/// A tool's native declaration: its Responses tool type and the declaration in the
/// Responses shape (contract §2, e.g. `{type:"custom", name, description, format}` with the
/// model-visible name); each adapter renders it in its wire API's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeTool {
    pub tool_type: String,
    pub declaration: Value,
}

/// Hosted tool types an upstream may render natively and return as typed calls for the
/// gateway to execute (`file_search_call`, `web_search_call`), with the output item type of
/// their calls.
pub const HOSTED_NATIVE: [(&str, &str); 2] = [("file_search", "file_search_call"), ("web_search", "web_search_call")];

impl NativeTool {
    /// A hosted tool's native declaration (`tool_type` is `file_search` or `web_search`):
    /// `declaration` is the Responses one, stripped of what belongs to the gateway.
    pub fn hosted(tool_type: &str, declaration: Value) -> NativeTool {
        NativeTool { tool_type: tool_type.to_string(), declaration }
    }

    /// The output item type of this tool's typed calls (`file_search_call`,
    /// `web_search_call`), for a hosted type; `None` for `custom`.
    pub fn call_item_type(&self) -> Option<&'static str> {
        HOSTED_NATIVE.iter().find(|(t, _)| *t == self.tool_type).map(|(_, item)| *item)
    }

    /// A custom tool's native declaration: the Responses one (contract §2) under its
    /// model-visible `name`, `{type:"custom", name, description?, format}`.
    pub fn custom(name: &str, description: Option<&str>, format: &Value) -> NativeTool {
        let mut declaration = serde_json::json!({"type": "custom", "name": name, "format": format});
        if let Some(d) = description.filter(|d| !d.is_empty()) {
            declaration["description"] = Value::String(d.to_string());
        }
        NativeTool { tool_type: "custom".to_string(), declaration }
    }
}

/// The resolved tool choice (contract §3); names are model-visible names.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ToolChoice {
    /// No tool is declared upstream and none is executed.
    None,
    #[default]
    Auto,
    Required,
    /// Forces one tool.
    Named(String),
    /// Only these tools are declared upstream; `required` forces one of them.
    Allowed { required: bool, names: Vec<String> },
}

impl ToolChoice {
    /// After a round that executed gateway tools, a forcing choice (`required`, a named
    /// tool, `allowed_tools` in `required` mode) drops back to `auto`, so the loop cannot spin.
    pub fn relaxed(self) -> ToolChoice {
        match self {
            ToolChoice::Required | ToolChoice::Named(_) => ToolChoice::Auto,
            ToolChoice::Allowed { names, .. } => ToolChoice::Allowed { required: false, names },
            other => other,
        }
    }

    /// True when the choice requires a call (`required`, a named tool, `allowed_tools` in
    /// `required` mode).
    pub fn forces(&self) -> bool {
        matches!(self, ToolChoice::Required | ToolChoice::Named(_) | ToolChoice::Allowed { required: true, .. })
    }
}

/// One round as it streams: neutral events, or an error (credentials already redacted).
pub type UpstreamStream = Pin<Box<dyn Stream<Item = Result<UpstreamEvent, UpstreamError>> + Send>>;

/// A model server (DESIGN.md "The three seams"): one implementation per wire API.
pub trait ModelClient: Send + Sync + std::fmt::Debug {
    /// What this upstream speaks and which native tool declarations it takes.
    fn caps(&self) -> &UpstreamCaps;
    /// Starts one streamed round. Errors: the upstream refused the request (`Status`, or
    /// `UnknownModel` for its 404 naming the model), could not be reached, timed out (no
    /// byte for `upstream.idle_timeout_ms`) or answered something unreadable (`Protocol`).
    fn stream_round<'a>(&'a self, req: &'a RoundRequest<'a>) -> BoxFuture<'a, Result<UpstreamStream, UpstreamError>>;
    /// The upstream's model list, `{"object":"list","data":[…]}` as it sent it (`/v1/models`,
    /// `/readyz`), waiting at most `timeout`.
    fn models(&self, timeout: Duration) -> BoxFuture<'_, Result<Value, UpstreamError>>;
}

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
    /// The model's raw reasoning (`delta.reasoning_content`, or `delta.reasoning`; a
    /// Responses upstream's `reasoning_text`).
    Reasoning(String),
    /// The chat field the round's reasoning came in (before its first `Reasoning`): the
    /// reasoning goes back to the server in that field.
    ReasoningField(crate::transcript::ReasoningField),
    /// A piece of a reasoning summary (a Responses upstream's `summary_text` part number
    /// `part`), kept apart from the raw reasoning.
    ReasoningSummary { part: usize, delta: String },
    /// A tool-call fragment; `index` correlates fragments of one call.
    ToolCall { index: usize, id: Option<String>, name: Option<String>, arguments: Option<String> },
    Finish(FinishReason),
    Usage(Usage),
    /// An output item of the upstream's own that the client never sees but that goes back
    /// to that upstream with the history: a Responses upstream's `reasoning` item (with its
    /// `encrypted_content` when asked for). A chat upstream sends none.
    OpaqueItem(Value),
}

/// Sampling and format settings passed on to the upstream.
#[derive(Debug, Clone, Default)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// Output-token cap for this round (what is left of `max_output_tokens`).
    pub max_tokens: Option<u64>,
    pub parallel_tool_calls: Option<bool>,
    /// `text.format` (contract §1): `json_schema` or `json_object` constrain the answer;
    /// `None` or `text` for plain text.
    pub text_format: Option<TextFormat>,
    pub user: Option<String>,
    /// Ask the upstream for its reasoning's `encrypted_content` (the client's `include` has
    /// `reasoning.encrypted_content`): a Responses upstream's reasoning then goes back to it
    /// whole on the next round.
    pub encrypted_reasoning: bool,
    /// `reasoning.effort` (contract §1), when set.
    pub reasoning_effort: Option<String>,
    /// `reasoning.summary` (contract 2026 §W5.1), when set: forwarded to a Responses
    /// upstream (a chat upstream has no such parameter).
    pub reasoning_summary: Option<String>,
}

/// One upstream round: the transcript, the tools declared for it and the choice.
#[derive(Debug, Clone, Copy)]
pub struct RoundRequest<'a> {
    pub model: &'a str,
    pub transcript: &'a Transcript,
    pub tools: &'a [&'a UpstreamTool],
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
    /// The upstream's stream said the response failed (a Responses upstream's
    /// `response.failed` or `error` event without an HTTP status of its own).
    #[error("upstream response failed: {0}")]
    Failed(String),
    #[error("upstream timed out: no data for {0} ms")]
    Timeout(u64),
}

impl UpstreamError {
    /// The `code` of the non-streamed error body and of a stream's `error` event (the same
    /// for both): `context_length_exceeded` (an upstream 400/413/422 whose message says the
    /// prompt does not fit the model's context, as vLLM, llama.cpp, Ollama and OpenAI word
    /// it), `upstream_rejected_request` (any other 400/413/422), `model_not_found`
    /// ([`UpstreamError::UnknownModel`]), `rate_limit_exceeded` (429), `upstream_timeout`,
    /// `unsupported_input` (the model takes no image or audio input: see
    /// [`UpstreamError::unsupported_input`]), else `upstream_error`.
    pub fn code(&self) -> &'static str {
        match self {
            _ if self.unsupported_input().is_some() => "unsupported_input",
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

}

impl UpstreamError {
    /// The same error with `redact` applied to its message.
    pub fn redacted(self, redact: impl Fn(&str) -> String) -> UpstreamError {
        match self {
            UpstreamError::Unreachable(m) => UpstreamError::Unreachable(redact(&m)),
            UpstreamError::Status { status, message } => UpstreamError::Status { status, message: redact(&message) },
            UpstreamError::UnknownModel(m) => UpstreamError::UnknownModel(redact(&m)),
            UpstreamError::Protocol(m) => UpstreamError::Protocol(redact(&m)),
            UpstreamError::Failed(m) => UpstreamError::Failed(redact(&m)),
            UpstreamError::Timeout(ms) => UpstreamError::Timeout(ms),
        }
    }
}

impl UpstreamError {
    /// The kind of input (`"image"`, `"audio"`, or `"image or audio"`) the model does not
    /// accept, when the upstream's error says so, whatever its status: llama.cpp without
    /// `--mmproj` (500 `image input is not supported - hint: …`, or `audio input …`), vLLM
    /// serving a text-only model (400 `… is not a multimodal model`, or `At most 0 image(s)
    /// may be provided …`), Ollama (`this model is missing data required for image input`,
    /// or `… does not support images`).
    pub fn unsupported_input(&self) -> Option<&'static str> {
        let UpstreamError::Status { message, .. } = self else { return None };
        let m = message.to_ascii_lowercase();
        let says = |patterns: &[&str]| patterns.iter().any(|p| m.contains(p));
        if says(&["image input is not supported", "required for image input", "does not support image", "at most 0 image"]) {
            Some("image")
        } else if says(&["audio input is not supported", "required for audio input", "does not support audio", "at most 0 audio"]) {
            Some("audio")
        } else if says(&["is not a multimodal model"]) {
            Some("image or audio")
        } else {
            None
        }
    }

    /// The message the client gets (the non-streamed error's and the `error` event's): the
    /// error itself, or, for input the model does not accept, what it does not accept
    /// followed by the upstream's words.
    pub fn client_message(&self) -> String {
        match (self.unsupported_input(), self) {
            (Some(kind), UpstreamError::Status { message, .. }) => {
                format!("The model does not accept {kind} input; send text only, or use a model that takes {kind} input (upstream: {message})")
            }
            _ => self.to_string(),
        }
    }
}

/// True when an upstream error message says the prompt exceeds the model's context.
fn is_context_length(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["context length", "context_length_exceeded", "context size", "context window"].iter().any(|p| m.contains(p))
}

impl UpstreamError {
    /// The error of a non-streamed turn that failed on the upstream: the upstream's
    /// own request errors (400, 413, 422) and input the model does not accept (whatever the
    /// upstream's status) are the client's 400, an unknown model is a 404
    /// naming `model`, and a 429 stays a 429, so SDKs do not retry a request that cannot
    /// succeed; a timeout is a 504; anything else
    /// (unreachable, 5xx, auth or routing errors of the gateway's own credentials, broken
    /// streams) is a 502.
    pub fn to_error(&self) -> crate::error::GatewayError {
        use crate::error::ErrorKind;
        let code = self.code();
        let (status, kind) = match self {
            _ if code == "model_not_found" => (ErrorKind::NotFound, "invalid_request_error"),
            _ if code == "unsupported_input" => (ErrorKind::BadRequest, "invalid_request_error"),
            UpstreamError::Status { status: 400 | 413 | 422, .. } => (ErrorKind::BadRequest, "invalid_request_error"),
            UpstreamError::Status { status: 429, .. } => (ErrorKind::RateLimited, "rate_limit_error"),
            UpstreamError::Timeout(_) => (ErrorKind::GatewayTimeout, "server_error"),
            _ => (ErrorKind::BadGateway, "server_error"),
        };
        crate::error::GatewayError {
            kind: status,
            error: protocol::ApiError { message: self.client_message(), kind: kind.into(), param: error_param(code), code: Some(code.into()) },
        }
    }
}

/// The `param` of a failure's error object, by its `code`: `model` for an unknown model,
/// `input` for input the model does not accept.
fn error_param(code: &str) -> Option<String> {
    match code {
        "model_not_found" => Some("model".to_string()),
        "unsupported_input" => Some("input".to_string()),
        _ => None,
    }
}
