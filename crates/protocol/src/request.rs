//! `POST /v1/responses` request body (contract §1).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::Input;

/// The create-response body (contract §1.1). Fields the gateway interprets are typed;
/// `tools` and `tool_choice` stay raw JSON because each tool handler validates its own
/// declaration (DESIGN.md "A tool type is one handler module"). Unknown top-level fields
/// land in `unknown` (ignored, or a 400 `unknown_parameter` when configured).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct CreateResponse {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub input: Option<Input>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[schema(value_type = Option<Vec<crate::response::ToolEcho>>)]
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[schema(value_type = Option<crate::response::ToolChoiceEcho>)]
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default)]
    pub max_tool_calls: Option<u64>,
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<f64>,
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub store: Option<bool>,
    #[serde(default)]
    pub previous_response_id: Option<String>,
    #[serde(default)]
    pub conversation: Option<Value>,
    #[serde(default)]
    pub include: Option<Vec<String>>,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub background: Option<bool>,
    #[serde(default)]
    pub truncation: Option<Truncation>,
    #[serde(default)]
    pub text: Option<TextConfig>,
    #[serde(default)]
    pub reasoning: Option<Value>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub safety_identifier: Option<String>,
    #[serde(default)]
    pub prompt_cache_key: Option<String>,
    #[serde(default)]
    pub prompt_cache_retention: Option<String>,
    #[serde(default)]
    pub service_tier: Option<String>,
    #[serde(default)]
    pub prompt: Option<Value>,
    #[serde(default)]
    pub frequency_penalty: Option<f64>,
    #[serde(default)]
    pub presence_penalty: Option<f64>,
    /// Newer fields accepted and ignored (contract §1.3).
    #[serde(default)]
    pub context_management: Option<Value>,
    #[serde(default)]
    pub moderation: Option<Value>,
    #[serde(default)]
    pub prompt_cache_options: Option<Value>,
    #[serde(default)]
    pub background_options: Option<Value>,
    #[serde(default)]
    pub access_programs: Option<Value>,
    #[serde(default)]
    pub image: Option<Value>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub unknown: BTreeMap<String, Value>,
}

/// `stream_options` (contract §1.1).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StreamOptions {
    pub include_obfuscation: Option<bool>,
}

/// `truncation` (contract §1.1): `auto` | `disabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Truncation {
    Auto,
    Disabled,
}

/// `text` (contract §1.2): `{format?, verbosity?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TextConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TextFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<Verbosity>,
}

/// `text.verbosity`: `low` | `medium` | `high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    Low,
    Medium,
    High,
}

/// `text.format` (contract §1.2); `json_schema` is flat, not nested as in Chat Completions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
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
