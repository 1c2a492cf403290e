//! Validation of a create request (contract §1–§3, §9): its body parsed, its fields checked,
//! its tools and transcript built into a [`Prepared`] turn; a 4xx in the OpenAI error shape
//! naming the offending `param` otherwise. Store-free: [`crate::turn::prepare`] loads what the
//! turn continues from and calls it.

use std::collections::BTreeMap;
use std::sync::Arc;

use protocol::input::{Input, InputItem};
use protocol::request::{TextConfig, TextFormat, Verbosity, INCLUDE_VALUES};
use protocol::{ApiError, CreateResponse, Response, ResponseStatus};
use serde_json::{json, Value};

use crate::error::GatewayError;
use crate::events::emitter::now_secs;
use crate::events::ids::new_id;
use crate::executors::Registry;
use crate::tools::ToolSet;
use crate::tools::replay::Replayer;
use crate::seal::Sealer;
use crate::turn::continuation::Continuation;
use crate::transcript::Transcript;
use crate::upstream::{Sampling, UpstreamCaps};

/// A validated turn, ready to run.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The echo of the request: the Response before any output. The handler moves it
    /// into the turn's emitter (`std::mem::take`); nothing else reads it.
    pub base: Response,
    pub upstream_model: String,
    pub transcript: Transcript,
    pub tools: ToolSet,
    pub sampling: Sampling,
    /// Output-token cap summed over all rounds.
    pub max_output_tokens: Option<u64>,
    /// Cap on gateway-executed calls in this turn.
    pub max_tool_calls: Option<u64>,
    /// `include` (e.g. `web_search_call.action.sources`).
    pub include: Vec<String>,
    /// The deployment's executors (shared, cheap to clone).
    pub executors: Arc<Registry>,
    pub stream: bool,
    pub store: bool,
    /// Cancelled when the gateway shuts down and its grace period is over: the turn then
    /// ends [`crate::events::emitter::Terminal::Interrupted`]; or, for a background
    /// response, when its client cancels it and `cancelled_by_client` is set first:
    /// [`crate::events::emitter::Terminal::Cancelled`].
    pub cancel: tokio_util::sync::CancellationToken,
    /// Set before `cancel` fires when the client cancelled a background response.
    pub cancelled_by_client: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Set before `cancel` fires when a foreground turn's client left (its stream, its
    /// request or its WebSocket closed): the turn ends `incomplete` with
    /// `incomplete_details.reason` [`crate::events::emitter::CLIENT_DISCONNECTED`].
    pub client_left: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// What to write when the turn ends (`store: true` or a conversation); set by
    /// [`crate::turn::prepare`].
    pub persist: Option<crate::turn::persist::Persist>,
    /// False for a WebSocket `response.create` with `generate: false` (Codex's warm-up, 2026
    /// supplement W1.2): the turn is prepared and ends `completed` with no output and no
    /// model call; its id can be continued from.
    pub generate: bool,
    /// The outcome keeps the turn's transcript also when the turn is stored (a WebSocket
    /// connection keeps its latest responses; otherwise the commit takes it).
    pub keep_transcript: bool,
    /// Seals this gateway's reasoning items' `encrypted_content` (`include` has
    /// `reasoning.encrypted_content`; `None` in tests without a key).
    pub sealer: Option<Arc<Sealer>>,
    /// `context_management`'s compaction threshold in tokens (`turn::auto_compact`).
    pub compact_threshold: Option<u64>,
}


/// Parses the body. Not JSON → 400 with `param: null`; a wrong type → 400 naming the
/// field path (e.g. `input[0].content`). Unknown top-level fields are returned for the
/// caller to ignore or reject.
pub fn parse_request(body: &[u8]) -> Result<CreateResponse, ApiError> {
    // A key repeated at any depth is refused as a repeated top-level field is.
    if let Some(dup) = protocol::dupkeys::find(body) {
        return Err(duplicate_key(&dup));
    }
    // The common case without tracking the path (serde_path_to_error wraps every key);
    // a body that fails is parsed again to name the offending field.
    if let Ok(req) = serde_json::from_slice::<CreateResponse>(body) {
        return Ok(req);
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    match serde_path_to_error::deserialize::<_, CreateResponse>(&mut *de) {
        // Only what follows the value can have failed the first parse (`{…} xyz`).
        Ok(_) => Err(unparsable(de.end().err())),
        Err(err) => {
            let path = err.path().to_string();
            let inner = err.into_inner();
            if inner.is_syntax() || inner.is_eof() {
                return Err(unparsable(Some(inner)));
            }
            let param = if path.is_empty() || path == "." { None } else { Some(path.clone()) };
            let inner = crate::error::short_numbers(&inner.to_string());
            let message = match &param {
                Some(p) => format!("Invalid value for '{p}': {inner}"),
                None if body.trim_ascii_start().first() != Some(&b'{') => {
                    "Invalid request body: expected a JSON object.".to_string()
                }
                None => format!("Invalid request body: {inner}"),
            };
            Err(ApiError::invalid(param, message).with_code("invalid_type"))
        }
    }
}

/// 400 with `param: null` for a body that is not one JSON value.
fn unparsable(e: Option<serde_json::Error>) -> ApiError {
    let why = e.map_or_else(|| "trailing characters".to_string(), |e| crate::error::short_numbers(&e.to_string()));
    ApiError::invalid(None, format!("We could not parse the JSON body of your request: {why}"))
}

/// 400 naming a key repeated in a body (at any depth), worded as serde words a repeated
/// top-level field.
pub fn duplicate_key(dup: &protocol::dupkeys::DuplicateKey) -> ApiError {
    let field = dup.field();
    let key: String = dup.key.chars().take(64).collect();
    ApiError::invalid(Some(field.clone()), format!("Invalid value for '{field}': duplicate field `{key}`.")).with_code("invalid_type")
}

fn bad(param: &str, message: impl Into<String>, code: &str) -> GatewayError {
    GatewayError::bad_request(Some(param.to_string()), message).with_code(code)
}

/// The `i`th `include` value: one of the API's (`INCLUDE_VALUES`), else 400 `include[i]`
/// `invalid_value` (also the check of `GET /v1/responses/{id}?include[]=`).
pub fn check_include(i: usize, value: &str) -> Result<(), GatewayError> {
    if INCLUDE_VALUES.contains(&value) {
        return Ok(());
    }
    Err(bad(
        &format!("include[{i}]"),
        format!("Invalid value: '{value}'. Supported values are: {}.", INCLUDE_VALUES.join(", ")),
        "invalid_value",
    ))
}

/// Validates the request and builds the turn, continuing from `from` (the stored
/// transcript and/or conversation items it starts from). `models` maps public → upstream
/// names (absent: pass through); an unknown model → 404 `model_not_found`.
pub fn validate(
    mut req: CreateResponse,
    models: Option<&BTreeMap<String, String>>,
    reject_unknown: bool,
    registry: &Arc<Registry>,
    caps: &UpstreamCaps,
    mut from: Continuation,
    sealer: Option<&Arc<Sealer>>,
) -> Result<Prepared, GatewayError> {
    if let Some(key) = req.unknown.keys().next() {
        if reject_unknown {
            return Err(bad(key, format!("Unknown parameter: '{key}'."), "unknown_parameter"));
        }
        tracing::debug!(fields = ?req.unknown.keys().collect::<Vec<_>>(), "ignoring unknown request fields");
    }
    let Some(model) = req.model.clone().filter(|m| !m.is_empty()) else {
        return Err(bad("model", "Missing required parameter: 'model'.", "missing_required_parameter"));
    };
    for (i, value) in req.include.iter().flatten().enumerate() {
        check_include(i, value)?;
    }
    let upstream_model = match models {
        None => model.clone(),
        Some(map) => match map.get(&model) {
            Some(u) => u.clone(),
            None => {
                return Err(GatewayError::not_found(
                    Some("model"),
                    format!("The model '{model}' does not exist or you do not have access to it."),
                    "model_not_found",
                ))
            }
        },
    };
    check_ranges(&req)?;
    let compact_threshold = crate::turn::auto_compact::threshold(req.context_management.as_ref()).map_err(GatewayError::from)?;
    let background = req.background == Some(true);
    if background && req.store == Some(false) {
        return Err(bad("background", "Background mode requires store=true: a background response is stored.", "invalid_value"));
    }
    let items: Vec<InputItem> = match req.input.take() {
        Some(Input::Text(s)) => vec![InputItem::Message(protocol::input::InputMessage {
            role: protocol::input::Role::User,
            content: protocol::MessageContent::Text(s),
            id: None,
            status: None,
            phase: None,
        })],
        Some(Input::Items(items)) => items,
        // Optional, as in OpenAI's API: `instructions` or the earlier turns may be all the
        // model needs (a request with nothing for it is refused below, on `input`).
        None => Vec::new(),
    };
    let mut tools = ToolSet::build(req.tools.take().unwrap_or_default(), req.tool_choice.as_ref(), registry, caps)?;
    let transcript = from.transcript(req.instructions.as_deref(), items, &Replayer { registry }, sealer.map(|s| &**s))?;
    // Tools that earlier searches loaded are loaded again (issue 31), and so are deferred
    // tools the history calls by name (a model that skipped the search; replayed input
    // holds no item that loaded them).
    tools.load_declared(&transcript.loaded);
    let called = transcript.call_names();
    tools.load_called(&called.iter().map(String::as_str).collect::<Vec<_>>());
    let text = text_config(&req)?;
    let reasoning = reasoning_of(req.reasoning.as_ref())?;
    let store = req.store.unwrap_or(true);
    let sampling = Sampling {
        temperature: req.temperature,
        top_p: req.top_p,
        max_tokens: req.max_output_tokens,
        parallel_tool_calls: req.parallel_tool_calls,
        text_format: text.format.clone().filter(|f| *f != TextFormat::Text),
        user: req.user.clone().or_else(|| req.safety_identifier.clone()),
        reasoning_effort: reasoning.effort.clone(),
        reasoning_summary: reasoning.summary.clone(),
        encrypted_reasoning: req.include.iter().flatten().any(|i| i == "reasoning.encrypted_content"),
    };
    let base = Response {
        id: new_id("resp"),
        object: "response".into(),
        created_at: now_secs(),
        status: ResponseStatus::InProgress,
        background,
        completed_at: None,
        error: None,
        incomplete_details: None,
        instructions: req.instructions.clone(),
        max_output_tokens: req.max_output_tokens,
        max_tool_calls: req.max_tool_calls,
        model,
        output: Vec::new(),
        parallel_tool_calls: req.parallel_tool_calls.unwrap_or(true),
        previous_response_id: from.previous_response_id,
        prompt_cache_key: req.prompt_cache_key.clone(),
        prompt_cache_retention: req.prompt_cache_retention.clone(),
        // Always `{effort, summary}` (contract §7), whatever subset was sent.
        reasoning: json!({"effort": reasoning.effort, "summary": reasoning.summary}),
        safety_identifier: req.safety_identifier.clone(),
        // The tier that serves the request: the gateway has one, so `auto` resolves to
        // `default`; `fast` is reported as `priority` (contract §1.1).
        service_tier: match req.service_tier.as_deref() {
            None | Some("auto") => "default".into(),
            Some("fast") => "priority".into(),
            Some(t) => t.into(),
        },
        store,
        temperature: req.temperature.unwrap_or(1.0),
        text,
        tool_choice: std::mem::take(&mut tools.choice_echo),
        tools: std::mem::take(&mut tools.echo),
        top_logprobs: req.top_logprobs.unwrap_or(0),
        top_p: req.top_p.unwrap_or(1.0),
        truncation: match req.truncation {
            Some(protocol::request::Truncation::Auto) => "auto".into(),
            _ => "disabled".into(),
        },
        usage: None,
        user: req.user.clone(),
        metadata: req.metadata.clone().unwrap_or_default(),
        frequency_penalty: req.frequency_penalty.unwrap_or(0.0),
        presence_penalty: req.presence_penalty.unwrap_or(0.0),
        conversation: from.conversation_id.map(|id| protocol::response::ConversationRef { id }),
    };
    Ok(Prepared {
        base,
        upstream_model,
        transcript,
        tools,
        sampling,
        max_output_tokens: req.max_output_tokens,
        max_tool_calls: req.max_tool_calls,
        include: req.include.clone().unwrap_or_default(),
        executors: registry.clone(),
        cancel: Default::default(),
        cancelled_by_client: Default::default(),
        client_left: Default::default(),
        stream: req.stream.unwrap_or(false),
        store,
        persist: None,
        generate: true,
        keep_transcript: false,
        sealer: sealer.cloned(),
        compact_threshold,
    })
}

fn text_config(req: &CreateResponse) -> Result<TextConfig, GatewayError> {
    let given = req.text.clone().unwrap_or_default();
    if let Some(TextFormat::JsonSchema { name, schema, .. }) = &given.format {
        if !schema.is_object() {
            return Err(bad("text.format.schema", "Invalid schema: 'schema' must be a JSON Schema object.", "invalid_json_schema"));
        }
        let ok = !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(bad("text.format.name", "Invalid 'text.format.name': use 1-64 of a-z, A-Z, 0-9, '_' and '-'.", "invalid_value"));
        }
    }
    Ok(TextConfig {
        format: Some(given.format.unwrap_or(TextFormat::Text)),
        verbosity: Some(given.verbosity.unwrap_or(Verbosity::Medium)),
    })
}

/// `reasoning.effort` values (contract §1).
const REASONING_EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh", "max"];
/// `reasoning.summary` values (contract §1).
const REASONING_SUMMARIES: &[&str] = &["auto", "concise", "detailed"];

/// `reasoning` as checked: `effort` (passed on as Chat Completions `reasoning_effort`) and
/// `summary` (a chat upstream writes no summaries), each `None` when null or absent.
#[derive(Debug, Default)]
struct Reasoning {
    effort: Option<String>,
    summary: Option<String>,
}

/// `reasoning`; `null` or absent → neither. Another value or shape → 400 naming
/// `reasoning.effort`, `reasoning.summary` or `reasoning`.
fn reasoning_of(reasoning: Option<&Value>) -> Result<Reasoning, GatewayError> {
    let r = match reasoning {
        None | Some(Value::Null) => return Ok(Reasoning::default()),
        Some(Value::Object(r)) => r,
        Some(_) => return Err(bad("reasoning", "Invalid type for 'reasoning': expected an object.", "invalid_type")),
    };
    let pick = |key: &str, allowed: &[&str]| match r.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(v)) if allowed.contains(&v.as_str()) => Ok(Some(v.clone())),
        Some(other) => Err(bad(
            &format!("reasoning.{key}"),
            format!("Invalid value: {other}. Supported values are: {}.", allowed.join(", ")),
            "invalid_value",
        )),
    };
    Ok(Reasoning { summary: pick("summary", REASONING_SUMMARIES)?, effort: pick("effort", REASONING_EFFORTS)? })
}

fn check_ranges(req: &CreateResponse) -> Result<(), GatewayError> {
    let ranges = [
        ("temperature", req.temperature, 0.0, 2.0),
        ("top_p", req.top_p, 0.0, 1.0),
        ("presence_penalty", req.presence_penalty, -2.0, 2.0),
        ("frequency_penalty", req.frequency_penalty, -2.0, 2.0),
    ];
    for (param, value, low, high) in ranges {
        if let Some(v) = value.filter(|v| !(low..=high).contains(v)) {
            let v = crate::error::short_number(v);
            return Err(bad(param, format!("Invalid '{param}': {v} is outside {low} to {high}."), "invalid_value"));
        }
    }
    if let Some(m) = req.max_output_tokens {
        if m < 16 {
            return Err(bad(
                "max_output_tokens",
                format!("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got {m} instead."),
                "integer_below_min_value",
            ));
        }
    }
    if let Some(md) = &req.metadata {
        if md.len() > 16 || md.iter().any(|(k, v)| k.chars().count() > 64 || v.chars().count() > 512) {
            return Err(bad("metadata", "Invalid 'metadata': at most 16 pairs, keys up to 64 and values up to 512 characters.", "invalid_value"));
        }
    }
    if let Some(n) = req.top_logprobs.filter(|n| *n > 20) {
        return Err(bad(
            "top_logprobs",
            format!("Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got {n} instead."),
            "integer_above_max_value",
        ));
    }
    let one_of = |param: &str, value: Option<&String>, allowed: &[&str]| match value {
        Some(v) if !allowed.contains(&v.as_str()) => Err(bad(
            param,
            format!("Invalid value: '{v}'. Supported values are: {}.", allowed.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(", ")),
            "invalid_value",
        )),
        _ => Ok(()),
    };
    one_of("service_tier", req.service_tier.as_ref(), &["auto", "default", "flex", "scale", "priority", "fast", "ultrafast"])?;
    one_of("prompt_cache_retention", req.prompt_cache_retention.as_ref(), &["in_memory", "24h"])?;
    if req.prompt.as_ref().is_some_and(|p| !p.is_null()) {
        return Err(bad("prompt", "Stored prompt templates are not supported by this gateway.", "unsupported_parameter"));
    }
    Ok(())
}
