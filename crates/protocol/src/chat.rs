//! Chat Completions wire types for a function-only upstream (contract §11).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A chat message sent upstream. `content` is a string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ChatToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// An assistant tool call: `{id, type:"function", function:{name, arguments}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: ChatFunctionCall,
}

/// `function` of a tool call; `arguments` is a JSON string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatFunctionCall {
    pub name: String,
    pub arguments: String,
}

/// A streamed `chat.completion.chunk` (contract §11), decoded without copying: strings
/// borrow from the chunk text unless they contain escapes. Unknown fields (`timings`,
/// `logprobs`, …) are skipped.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChatChunk<'a> {
    #[serde(default, borrow)]
    pub choices: Vec<ChunkChoice<'a>>,
    #[serde(default)]
    pub usage: Option<ChatUsage>,
    #[serde(default)]
    pub error: Option<Value>,
}

/// One choice of a chunk.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChunkChoice<'a> {
    #[serde(default)]
    pub index: u32,
    #[serde(default, borrow)]
    pub delta: ChunkDelta<'a>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
}

/// `delta` of a chunk.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChunkDelta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<ToolCallChunk<'a>>>,
}

/// A tool-call fragment: `index` correlates fragments (contract §11 `ToolCallChunk`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ToolCallChunk<'a> {
    #[serde(default)]
    pub index: usize,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionChunk<'a>>,
    /// A native custom tool call's fragment (OpenAI: `type: "custom"`).
    #[serde(default, borrow)]
    pub custom: Option<CustomChunk<'a>>,
}

/// `custom` of a tool-call fragment: `input` is raw text, not JSON.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CustomChunk<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub input: Option<Cow<'a, str>>,
}

/// `function` of a tool-call fragment.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FunctionChunk<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub arguments: Option<Cow<'a, str>>,
}

/// Chat usage (contract §11 "Usage fields").
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct ChatUsage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

/// `prompt_tokens_details`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct PromptTokensDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

/// `completion_tokens_details`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct CompletionTokensDetails {
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}
