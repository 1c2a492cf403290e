//! The Response object (contract §7).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::OutputItem;
use crate::request::TextConfig;

/// `status` of a Response (contract §7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseStatus {
    Queued,
    #[default]
    InProgress,
    Completed,
    Incomplete,
    Failed,
    Cancelled,
}

impl ResponseStatus {
    /// The wire name, e.g. `completed`, `in_progress`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResponseStatus::Queued => "queued",
            ResponseStatus::InProgress => "in_progress",
            ResponseStatus::Completed => "completed",
            ResponseStatus::Incomplete => "incomplete",
            ResponseStatus::Failed => "failed",
            ResponseStatus::Cancelled => "cancelled",
        }
    }
}

/// `usage` (contract §7), token counts summed over every upstream call of the turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Usage {
    pub input_tokens: u64,
    pub input_tokens_details: InputTokensDetails,
    pub output_tokens: u64,
    pub output_tokens_details: OutputTokensDetails,
    pub total_tokens: u64,
}

/// `usage.input_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InputTokensDetails {
    pub cached_tokens: u64,
    /// Tokens written to the prompt cache (SDK 3.57 requires the key); 0 when unknown.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

/// `usage.output_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OutputTokensDetails {
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Adds another upstream call's usage.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.input_tokens_details.cached_tokens += other.input_tokens_details.cached_tokens;
        self.input_tokens_details.cache_write_tokens += other.input_tokens_details.cache_write_tokens;
        self.output_tokens += other.output_tokens;
        self.output_tokens_details.reasoning_tokens +=
            other.output_tokens_details.reasoning_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// `error` on a failed Response: `{code, message}`; `code` is one of the SDK's fixed list
/// (the gateway uses `server_error`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResponseError {
    pub code: String,
    pub message: String,
}

/// `incomplete_details`: `{reason: "max_output_tokens" | "content_filter"}`, or the gateway's
/// `"client_disconnected"` (a foreground turn whose client left).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IncompleteDetails {
    pub reason: String,
}

/// The Response object (contract §7). Every echo field the SDK or the Open Responses
/// schema requires is always present (never null where a value is required). `Default` is
/// an empty placeholder (it lets a Response be moved out of a struct), not a valid echo.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Response {
    pub id: String,
    pub object: String,
    /// Unix seconds.
    pub created_at: u64,
    pub status: ResponseStatus,
    pub background: bool,
    /// Unix seconds; set only when `completed`.
    #[schema(required = true)]
    pub completed_at: Option<u64>,
    #[schema(required = true)]
    pub error: Option<ResponseError>,
    #[schema(required = true)]
    pub incomplete_details: Option<IncompleteDetails>,
    #[schema(required = true)]
    pub instructions: Option<String>,
    #[schema(required = true)]
    pub max_output_tokens: Option<u64>,
    #[schema(required = true)]
    pub max_tool_calls: Option<u64>,
    pub model: String,
    pub output: Vec<OutputItem>,
    pub parallel_tool_calls: bool,
    #[schema(required = true)]
    pub previous_response_id: Option<String>,
    #[schema(required = true)]
    pub prompt_cache_key: Option<String>,
    #[schema(required = true)]
    pub prompt_cache_retention: Option<String>,
    /// Always `{effort, summary}` (each null when not given).
    #[schema(value_type = ReasoningEcho)]
    pub reasoning: Value,
    #[schema(required = true)]
    pub safety_identifier: Option<String>,
    pub service_tier: String,
    pub store: bool,
    pub temperature: f64,
    pub text: TextConfig,
    #[schema(value_type = ToolChoiceEcho)]
    pub tool_choice: Value,
    #[schema(value_type = Vec<ToolEcho>)]
    pub tools: Vec<Value>,
    pub top_logprobs: u32,
    pub top_p: f64,
    pub truncation: String,
    #[schema(required = true)]
    pub usage: Option<Usage>,
    #[schema(required = true)]
    pub user: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub frequency_penalty: f64,
    pub presence_penalty: f64,
    /// `conversation: {id}` when the turn ran in a conversation (contract §1.1, §7 echo);
    /// left out otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<ConversationRef>,
}

/// The `reasoning` echo of a Response (its schema; the field is kept as JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReasoningEcho {
    /// `none` | `minimal` | `low` | `medium` | `high` | `xhigh` | `max`.
    #[schema(required = true)]
    pub effort: Option<String>,
    /// `auto` | `concise` | `detailed`.
    #[schema(required = true)]
    pub summary: Option<String>,
}

/// The `tool_choice` echo (its schema): `none` | `auto` | `required`, or an object naming
/// a tool (`{type, name?, …}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum ToolChoiceEcho {
    Mode(String),
    Tool(ToolEcho),
}

/// A tool declaration as echoed (its schema): `type` and the type's own fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolEcho {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(flatten)]
    #[schema(ignore)]
    pub rest: std::collections::BTreeMap<String, Value>,
}

/// The `conversation` echo of a Response: `{id: "conv_…"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationRef {
    pub id: String,
}

#[cfg(test)]
mod tests {
    use super::ResponseStatus::{self, *};

    #[test]
    fn status_names_are_the_wire_names() {
        for s in [Queued, InProgress, Completed, Incomplete, Failed, Cancelled] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str(), "{s:?}");
        }
        let _: ResponseStatus = serde_json::from_str("\"completed\"").unwrap();
    }
}
