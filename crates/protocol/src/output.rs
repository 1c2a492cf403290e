//! Output items of `response.output` (contract §5) and annotations (contract §6).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `message.phase` (contract §5): `commentary` (text before tool calls) or `final_answer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Commentary,
    FinalAnswer,
}

/// Item status (`in_progress` | `completed` | `incomplete` | `searching` | `failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    InProgress,
    Completed,
    Incomplete,
    Searching,
    Failed,
}

/// One output item (contract §5), serialized with its `type` tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    /// `message` (`msg_…`): `phase` is left out while unknown (on `output_item.added`).
    Message {
        id: String,
        role: String,
        status: ItemStatus,
        content: Vec<OutputContent>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<Phase>,
    },
    /// `function_call` (`fc_…`), returned to the client.
    FunctionCall {
        id: String,
        call_id: String,
        name: String,
        arguments: String,
        status: ItemStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
    /// `custom_tool_call` (`ctc_…`): free-text `input`.
    CustomToolCall {
        id: String,
        call_id: String,
        name: String,
        input: String,
        status: ItemStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
    /// `custom_tool_call_output` (`ctco_…`): the output of a gateway-executed custom tool.
    CustomToolCallOutput {
        id: String,
        call_id: String,
        output: String,
        status: ItemStatus,
    },
    /// `web_search_call` (`ws_…`): `action` is left out on `output_item.added` and set on
    /// `output_item.done` (contract §5, §8.4 d).
    WebSearchCall {
        id: String,
        status: ItemStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action: Option<WebSearchAction>,
    },
    /// `file_search_call` (`fs_…`): `queries` is empty and `results` null on
    /// `output_item.added`; `results` stays null unless the request `include`s
    /// `file_search_call.results` (contract §5, §8.4 e).
    FileSearchCall {
        id: String,
        status: ItemStatus,
        queries: Vec<String>,
        #[schema(required = true)]
        results: Option<Vec<FileSearchResult>>,
    },
    /// `function_call_output` (`fco_…`).
    FunctionCallOutput {
        id: String,
        call_id: String,
        output: String,
        status: ItemStatus,
    },
    /// `mcp_list_tools` (`mcpl_…`): the tools an MCP server listed (contract §5, §8.4 f);
    /// `tools` is empty on `output_item.added`; `error` is set (and `tools` empty) when the
    /// listing failed.
    McpListTools {
        id: String,
        server_label: String,
        tools: Vec<McpToolInfo>,
        #[schema(required = true)]
        error: Option<String>,
    },
    /// `mcp_call` (`mcp_…`): a call the gateway made on an MCP server (contract §5, §8.4 f);
    /// `arguments` is a JSON text, `output` the tool's text, `approval_request_id` the
    /// approval it ran under. `error` is the tagged object of current SDKs (contract §5
    /// "Drift"): `{type:"mcp_protocol_error", code, message}`,
    /// `{type:"mcp_tool_execution_error", content}` or `{type:"http_error", code, message}`.
    McpCall {
        id: String,
        server_label: String,
        name: String,
        arguments: String,
        #[schema(required = true)]
        output: Option<String>,
        #[schema(required = true)]
        error: Option<Value>,
        status: ItemStatus,
        #[schema(required = true)]
        approval_request_id: Option<String>,
    },
    /// `mcp_approval_request` (`mcpr_…`): a call that waits for the client's
    /// `mcp_approval_response` (contract §5); `arguments` is a JSON text.
    McpApprovalRequest {
        id: String,
        server_label: String,
        name: String,
        arguments: String,
    },
    /// `tool_search_call` (`tsc_…`): a search of the request's deferred tools (contract
    /// W3.3, SDK `ResponseToolSearchCall`). `arguments` is a JSON object (`{}` on
    /// `output_item.added`); `call_id` is `null` for the gateway's own search (`execution:
    /// "server"`) and the model's call id for a client-executed one (`"client"`).
    ToolSearchCall {
        id: String,
        arguments: Value,
        #[schema(required = true)]
        call_id: Option<String>,
        execution: String,
        status: ItemStatus,
    },
    /// `tool_search_output` (`tso_…`): the tools a search loaded, as full declarations
    /// (`function`, `namespace` with its loaded members, `mcp`; contract W3.3, SDK
    /// `ResponseToolSearchOutputItem`).
    ToolSearchOutput {
        id: String,
        #[schema(required = true)]
        call_id: Option<String>,
        execution: String,
        status: ItemStatus,
        tools: Vec<Value>,
    },
    /// `compaction` (`cmp_…`; contract 2026 §W2.3, SDK `ResponseCompactionItem`): the
    /// summary of everything before it, sealed (opaque); no `status`.
    Compaction {
        id: String,
        encrypted_content: String,
    },
    /// `reasoning` (`rs_…`): the model's raw reasoning as `reasoning_text` parts in
    /// `content` (an upstream's `reasoning_content`); `summary` stays empty: a chat upstream
    /// writes no summaries (contract §5, §8.4 h).
    Reasoning {
        id: String,
        summary: Vec<ReasoningSummary>,
        content: Vec<OutputContent>,
        /// A Responses upstream's encrypted reasoning, only when the request's `include`
        /// has `reasoning.encrypted_content` (contract §5); a client that replays the item
        /// gives it back to that upstream.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        status: ItemStatus,
    },
}

/// One tool of an `mcp_list_tools` item (contract §5): `input_schema` is the tool's JSON
/// Schema, `annotations` the server's hints (e.g. `readOnlyHint`) as it sent them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct McpToolInfo {
    pub name: String,
    pub input_schema: Value,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub annotations: Option<Value>,
}

/// One `reasoning.summary` part (contract §5): `{type:"summary_text", text}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReasoningSummary {
    SummaryText { text: String },
}

impl OutputItem {
    /// The item's `id`.
    pub fn id(&self) -> &str {
        match self {
            OutputItem::Message { id, .. }
            | OutputItem::FunctionCall { id, .. }
            | OutputItem::CustomToolCall { id, .. }
            | OutputItem::CustomToolCallOutput { id, .. }
            | OutputItem::WebSearchCall { id, .. }
            | OutputItem::FileSearchCall { id, .. }
            | OutputItem::FunctionCallOutput { id, .. }
            | OutputItem::McpListTools { id, .. }
            | OutputItem::McpCall { id, .. }
            | OutputItem::McpApprovalRequest { id, .. }
            | OutputItem::ToolSearchCall { id, .. }
            | OutputItem::ToolSearchOutput { id, .. }
            | OutputItem::Compaction { id, .. }
            | OutputItem::Reasoning { id, .. } => id,
        }
    }
}

/// A content part on output (contract §5): `output_text` or `refusal` in a message,
/// `reasoning_text` in a reasoning item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputContent {
    OutputText {
        annotations: Vec<Annotation>,
        logprobs: Vec<Value>,
        text: String,
    },
    Refusal {
        refusal: String,
    },
    ReasoningText {
        text: String,
    },
}

/// An annotation on `output_text` (contract §6). Offsets are Unicode code points,
/// `end_index` exclusive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Annotation {
    UrlCitation {
        start_index: usize,
        end_index: usize,
        title: String,
        url: String,
    },
    FileCitation {
        file_id: String,
        filename: String,
        index: usize,
    },
}

/// One retrieved chunk on a `file_search_call` (contract §5): `score` in 0..1,
/// `attributes` the file's string/number/boolean attributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FileSearchResult {
    pub file_id: String,
    pub filename: String,
    pub score: f64,
    pub text: String,
    #[serde(default)]
    pub attributes: serde_json::Map<String, Value>,
}

/// `web_search_call.action` of type `search` (contract §5): `sources` only when the request
/// `include`s `web_search_call.action.sources`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WebSearchAction {
    /// Always `"search"`.
    #[serde(rename = "type")]
    pub kind: String,
    pub query: String,
    pub queries: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<UrlSource>>,
}

/// One source of a search action: `{type:"url", url}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UrlSource {
    /// Always `"url"`.
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
}
