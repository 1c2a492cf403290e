//! Streaming events (contract §8.2). Every event carries `type` and `sequence_number`;
//! the gateway's emitter is the only place that assigns `sequence_number`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::{Annotation, OutputContent, OutputItem, ReasoningSummary};
use crate::response::Response;

/// One SSE event: `{"type": …, …payload, "sequence_number": n}` (contract §8.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StreamEvent {
    #[serde(flatten)]
    pub kind: EventKind,
    pub sequence_number: u64,
}

/// The nested error object of an `error` event (contract §8.2, §12.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorEventDetail {
    #[serde(rename = "type")]
    pub kind: String,
    #[schema(required = true)]
    pub code: Option<String>,
    pub message: String,
    #[schema(required = true)]
    pub param: Option<String>,
}

/// Event payloads by `type` (contract §8.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type")]
pub enum EventKind {
    #[serde(rename = "response.created")]
    Created { response: Box<Response> },
    #[serde(rename = "response.in_progress")]
    InProgress { response: Box<Response> },
    /// A background response waits for a worker (contract §8.2 `response.queued`).
    #[serde(rename = "response.queued")]
    Queued { response: Box<Response> },
    #[serde(rename = "response.completed")]
    Completed { response: Box<Response> },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: Box<Response> },
    #[serde(rename = "response.failed")]
    Failed { response: Box<Response> },
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded { output_index: usize, item: OutputItem },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone { output_index: usize, item: OutputItem },
    #[serde(rename = "response.content_part.added")]
    ContentPartAdded {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: OutputContent,
    },
    #[serde(rename = "response.content_part.done")]
    ContentPartDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: OutputContent,
    },
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        item_id: String,
        output_index: usize,
        content_index: usize,
        delta: String,
        logprobs: Vec<Value>,
    },
    #[serde(rename = "response.output_text.done")]
    OutputTextDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        text: String,
        logprobs: Vec<Value>,
    },
    /// A delta of a message's `refusal` part (contract §8.2).
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta {
        item_id: String,
        output_index: usize,
        content_index: usize,
        delta: String,
    },
    /// The full text of a message's `refusal` part.
    #[serde(rename = "response.refusal.done")]
    RefusalDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        refusal: String,
    },
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningTextDelta {
        item_id: String,
        output_index: usize,
        content_index: usize,
        delta: String,
    },
    #[serde(rename = "response.reasoning_text.done")]
    ReasoningTextDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        text: String,
    },
    /// A new `summary_text` part of a reasoning item's `summary` (contract 2026 §W5.3).
    #[serde(rename = "response.reasoning_summary_part.added")]
    ReasoningSummaryPartAdded {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        part: ReasoningSummary,
    },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        delta: String,
    },
    #[serde(rename = "response.reasoning_summary_text.done")]
    ReasoningSummaryTextDone {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        text: String,
    },
    #[serde(rename = "response.reasoning_summary_part.done")]
    ReasoningSummaryPartDone {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        part: ReasoningSummary,
    },
    #[serde(rename = "response.output_text.annotation.added")]
    AnnotationAdded {
        item_id: String,
        output_index: usize,
        content_index: usize,
        annotation_index: usize,
        annotation: Annotation,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone {
        item_id: String,
        output_index: usize,
        name: String,
        arguments: String,
    },
    #[serde(rename = "response.custom_tool_call_input.delta")]
    CustomToolCallInputDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.custom_tool_call_input.done")]
    CustomToolCallInputDone {
        item_id: String,
        output_index: usize,
        input: String,
    },
    #[serde(rename = "response.web_search_call.in_progress")]
    WebSearchInProgress { item_id: String, output_index: usize },
    #[serde(rename = "response.web_search_call.searching")]
    WebSearchSearching { item_id: String, output_index: usize },
    #[serde(rename = "response.web_search_call.completed")]
    WebSearchCompleted { item_id: String, output_index: usize },
    #[serde(rename = "response.file_search_call.in_progress")]
    FileSearchInProgress { item_id: String, output_index: usize },
    #[serde(rename = "response.file_search_call.searching")]
    FileSearchSearching { item_id: String, output_index: usize },
    #[serde(rename = "response.file_search_call.completed")]
    FileSearchCompleted { item_id: String, output_index: usize },
    #[serde(rename = "response.mcp_list_tools.in_progress")]
    McpListToolsInProgress { item_id: String, output_index: usize },
    #[serde(rename = "response.mcp_list_tools.completed")]
    McpListToolsCompleted { item_id: String, output_index: usize },
    #[serde(rename = "response.mcp_list_tools.failed")]
    McpListToolsFailed { item_id: String, output_index: usize },
    #[serde(rename = "response.mcp_call.in_progress")]
    McpCallInProgress { item_id: String, output_index: usize },
    /// The call's `arguments`, in one delta (contract §8.4 f).
    #[serde(rename = "response.mcp_call_arguments.delta")]
    McpCallArgumentsDelta { item_id: String, output_index: usize, delta: String },
    #[serde(rename = "response.mcp_call_arguments.done")]
    McpCallArgumentsDone { item_id: String, output_index: usize, arguments: String },
    #[serde(rename = "response.mcp_call.completed")]
    McpCallCompleted { item_id: String, output_index: usize },
    #[serde(rename = "response.mcp_call.failed")]
    McpCallFailed { item_id: String, output_index: usize },
    /// `error`: flat SPEC fields plus the nested object the live API sends (contract §8.3 #7).
    #[serde(rename = "error")]
    Error {
        #[schema(required = true)]
        code: Option<String>,
        message: String,
        #[schema(required = true)]
        param: Option<String>,
        error: ErrorEventDetail,
    },
}

impl EventKind {
    /// The wire `type` of this event.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Created { .. } => "response.created",
            EventKind::InProgress { .. } => "response.in_progress",
            EventKind::Queued { .. } => "response.queued",
            EventKind::Completed { .. } => "response.completed",
            EventKind::Incomplete { .. } => "response.incomplete",
            EventKind::Failed { .. } => "response.failed",
            EventKind::OutputItemAdded { .. } => "response.output_item.added",
            EventKind::OutputItemDone { .. } => "response.output_item.done",
            EventKind::ContentPartAdded { .. } => "response.content_part.added",
            EventKind::ContentPartDone { .. } => "response.content_part.done",
            EventKind::OutputTextDelta { .. } => "response.output_text.delta",
            EventKind::OutputTextDone { .. } => "response.output_text.done",
            EventKind::RefusalDelta { .. } => "response.refusal.delta",
            EventKind::RefusalDone { .. } => "response.refusal.done",
            EventKind::ReasoningTextDelta { .. } => "response.reasoning_text.delta",
            EventKind::ReasoningTextDone { .. } => "response.reasoning_text.done",
            EventKind::ReasoningSummaryPartAdded { .. } => "response.reasoning_summary_part.added",
            EventKind::ReasoningSummaryTextDelta { .. } => "response.reasoning_summary_text.delta",
            EventKind::ReasoningSummaryTextDone { .. } => "response.reasoning_summary_text.done",
            EventKind::ReasoningSummaryPartDone { .. } => "response.reasoning_summary_part.done",
            EventKind::AnnotationAdded { .. } => "response.output_text.annotation.added",
            EventKind::FunctionCallArgumentsDelta { .. } => {
                "response.function_call_arguments.delta"
            }
            EventKind::FunctionCallArgumentsDone { .. } => "response.function_call_arguments.done",
            EventKind::CustomToolCallInputDelta { .. } => "response.custom_tool_call_input.delta",
            EventKind::CustomToolCallInputDone { .. } => "response.custom_tool_call_input.done",
            EventKind::WebSearchInProgress { .. } => "response.web_search_call.in_progress",
            EventKind::WebSearchSearching { .. } => "response.web_search_call.searching",
            EventKind::WebSearchCompleted { .. } => "response.web_search_call.completed",
            EventKind::FileSearchInProgress { .. } => "response.file_search_call.in_progress",
            EventKind::FileSearchSearching { .. } => "response.file_search_call.searching",
            EventKind::FileSearchCompleted { .. } => "response.file_search_call.completed",
            EventKind::McpListToolsInProgress { .. } => "response.mcp_list_tools.in_progress",
            EventKind::McpListToolsCompleted { .. } => "response.mcp_list_tools.completed",
            EventKind::McpListToolsFailed { .. } => "response.mcp_list_tools.failed",
            EventKind::McpCallInProgress { .. } => "response.mcp_call.in_progress",
            EventKind::McpCallArgumentsDelta { .. } => "response.mcp_call_arguments.delta",
            EventKind::McpCallArgumentsDone { .. } => "response.mcp_call_arguments.done",
            EventKind::McpCallCompleted { .. } => "response.mcp_call.completed",
            EventKind::McpCallFailed { .. } => "response.mcp_call.failed",
            EventKind::Error { .. } => "error",
        }
    }

    /// True for `response.completed` / `response.incomplete` / `response.failed`.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            EventKind::Completed { .. } | EventKind::Incomplete { .. } | EventKind::Failed { .. }
        )
    }
}
