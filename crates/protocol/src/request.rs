//! `POST /v1/responses` request body (contract §1).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::Input;

/// The create-response body (contract §1.1). Fields the gateway interprets are typed;
/// `tools` and `tool_choice` stay raw JSON because each tool handler validates its own
/// declaration (DESIGN.md "A tool type is one handler module"). Unknown top-level fields
/// land in `unknown` (ignored, or a 400 `unknown_parameter` when configured).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CreateResponse {
    pub model: Option<String>,
    pub input: Option<Input>,
    pub instructions: Option<String>,
    pub tools: Option<Vec<Value>>,
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    pub max_tool_calls: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_logprobs: Option<u32>,
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    pub store: Option<bool>,
    pub previous_response_id: Option<String>,
    pub conversation: Option<Value>,
    pub include: Option<Vec<String>>,
    pub metadata: Option<BTreeMap<String, String>>,
    pub background: Option<bool>,
    pub truncation: Option<Truncation>,
    pub text: Option<TextConfig>,
    pub reasoning: Option<Value>,
    pub user: Option<String>,
    pub safety_identifier: Option<String>,
    pub prompt_cache_key: Option<String>,
    pub prompt_cache_retention: Option<String>,
    pub service_tier: Option<String>,
    pub prompt: Option<Value>,
    pub frequency_penalty: Option<f64>,
    pub presence_penalty: Option<f64>,
    /// Newer fields accepted and ignored (contract §1.3).
    pub context_management: Option<Value>,
    pub moderation: Option<Value>,
    pub prompt_cache_options: Option<Value>,
    pub background_options: Option<Value>,
    pub access_programs: Option<Value>,
    pub image: Option<Value>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `stream_options` (contract §1.1).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamOptions {
    pub include_obfuscation: Option<bool>,
}

/// `truncation` (contract §1.1): `auto` | `disabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Truncation {
    Auto,
    Disabled,
}

/// `text` (contract §1.2): `{format?, verbosity?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TextFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<Verbosity>,
}

/// `text.verbosity`: `low` | `medium` | `high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    Low,
    Medium,
    High,
}

/// `text.format` (contract §1.2); `json_schema` is flat, not nested as in Chat Completions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TextFormat {
    Text,
    JsonObject,
    JsonSchema {
        name: String,
        schema: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(default)]
        strict: Option<bool>,
    },
}

/// The `include` values of the API (contract §1.1 `IncludeEnum`); others are a 400.
pub const INCLUDE_VALUES: [&str; 8] = [
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
];
