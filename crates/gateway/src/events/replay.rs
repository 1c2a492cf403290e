//! A stored Response as the event stream that would have produced it (contract §8.4), for
//! `GET /v1/responses/{id}?stream=true`: `response.created`, `response.in_progress`, each
//! output item in its live shape (added, its sub-events with the whole text as one delta,
//! done), then the terminal event. The fold of these events is the stored Response. It is
//! a reconstruction, not the original stream: texts come as one delta each (so the
//! numbering differs), progress messages were never stored, and a failed Response's `error`
//! event carries `response.error.code` (`server_error`), not the live event's code.

use protocol::events::{ErrorEventDetail, EventKind};
use protocol::output::{ItemStatus, OutputContent, OutputItem, ReasoningSummary};
use protocol::{Response, ResponseStatus};

/// The events, `sequence_number` = position. A failed Response gets the `error` event
/// (`response.error.code`, `.message`) before `response.failed`.
pub fn events(stored: &Response) -> Vec<EventKind> {
    let mut base = stored.clone();
    base.status = ResponseStatus::InProgress;
    base.output = Vec::new();
    base.usage = None;
    base.completed_at = None;
    base.error = None;
    base.incomplete_details = None;
    let mut out = vec![EventKind::Created { response: Box::new(base.clone()) }, EventKind::InProgress { response: Box::new(base) }];
    for (output_index, item) in stored.output.iter().enumerate() {
        item_events(output_index, item, &mut out);
    }
    let response = Box::new(stored.clone());
    let terminal = match stored.status {
        ResponseStatus::Incomplete => EventKind::Incomplete { response },
        ResponseStatus::Failed | ResponseStatus::Cancelled => {
            let (code, message) = stored.error.as_ref().map_or(("server_error", ""), |e| (e.code.as_str(), e.message.as_str()));
            out.push(EventKind::Error {
                code: Some(code.to_string()),
                message: message.to_string(),
                param: None,
                error: ErrorEventDetail { kind: "server_error".into(), code: Some(code.to_string()), message: message.to_string(), param: None },
            });
            EventKind::Failed { response }
        }
        _ => EventKind::Completed { response },
    };
    out.push(terminal);
    out
}

/// One item: `output_item.added` in its in-progress shape, its sub-events, `output_item.done`.
fn item_events(output_index: usize, item: &OutputItem, out: &mut Vec<EventKind>) {
    let added = match item {
        OutputItem::Message { id, role, content, .. } => {
            out.push(EventKind::OutputItemAdded {
                output_index,
                item: OutputItem::Message { id: id.clone(), role: role.clone(), status: ItemStatus::InProgress, content: Vec::new(), phase: None },
            });
            for (content_index, part) in content.iter().enumerate() {
                part_events(id, output_index, content_index, part, out);
            }
            true
        }
        OutputItem::Reasoning { id, summary, content, .. } => {
            out.push(EventKind::OutputItemAdded {
                output_index,
                item: OutputItem::Reasoning { id: id.clone(), summary: Vec::new(), content: Vec::new(), encrypted_content: None, status: ItemStatus::InProgress },
            });
            for (summary_index, part) in summary.iter().enumerate() {
                summary_events(id, output_index, summary_index, part, out);
            }
            for (content_index, part) in content.iter().enumerate() {
                part_events(id, output_index, content_index, part, out);
            }
            true
        }
        OutputItem::FunctionCall { id, call_id, name, arguments, namespace, .. } => {
            out.push(EventKind::OutputItemAdded {
                output_index,
                item: OutputItem::FunctionCall {
                    id: id.clone(),
                    call_id: call_id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                    status: ItemStatus::InProgress,
                    namespace: namespace.clone(),
                },
            });
            if !arguments.is_empty() {
                out.push(EventKind::FunctionCallArgumentsDelta { item_id: id.clone(), output_index, delta: arguments.clone() });
            }
            out.push(EventKind::FunctionCallArgumentsDone { item_id: id.clone(), output_index, name: name.clone(), arguments: arguments.clone() });
            true
        }
        OutputItem::CustomToolCall { id, call_id, name, input, namespace, .. } => {
            out.push(EventKind::OutputItemAdded {
                output_index,
                item: OutputItem::CustomToolCall {
                    id: id.clone(),
                    call_id: call_id.clone(),
                    name: name.clone(),
                    input: String::new(),
                    status: ItemStatus::InProgress,
                    namespace: namespace.clone(),
                },
            });
            if !input.is_empty() {
                out.push(EventKind::CustomToolCallInputDelta { item_id: id.clone(), output_index, delta: input.clone() });
            }
            out.push(EventKind::CustomToolCallInputDone { item_id: id.clone(), output_index, input: input.clone() });
            true
        }
        OutputItem::WebSearchCall { id, .. } => {
            out.push(EventKind::OutputItemAdded {
                output_index,
                item: OutputItem::WebSearchCall { id: id.clone(), status: ItemStatus::InProgress, action: None },
            });
            let item_id = id.clone();
            out.push(EventKind::WebSearchInProgress { item_id: item_id.clone(), output_index });
            out.push(EventKind::WebSearchSearching { item_id: item_id.clone(), output_index });
            out.push(EventKind::WebSearchCompleted { item_id, output_index });
            true
        }
        OutputItem::FileSearchCall { id, .. } => {
            out.push(EventKind::OutputItemAdded {
                output_index,
                item: OutputItem::FileSearchCall { id: id.clone(), status: ItemStatus::InProgress, queries: Vec::new(), results: None },
            });
            let item_id = id.clone();
            out.push(EventKind::FileSearchInProgress { item_id: item_id.clone(), output_index });
            out.push(EventKind::FileSearchSearching { item_id: item_id.clone(), output_index });
            out.push(EventKind::FileSearchCompleted { item_id, output_index });
            true
        }
        // Contract §8.4 f: added empty, in progress, then completed or failed.
        OutputItem::McpListTools { id, server_label, error, .. } => {
            out.push(EventKind::OutputItemAdded {
                output_index,
                item: OutputItem::McpListTools { id: id.clone(), server_label: server_label.clone(), tools: Vec::new(), error: None },
            });
            out.push(EventKind::McpListToolsInProgress { item_id: id.clone(), output_index });
            out.push(match error {
                Some(_) => EventKind::McpListToolsFailed { item_id: id.clone(), output_index },
                None => EventKind::McpListToolsCompleted { item_id: id.clone(), output_index },
            });
            true
        }
        OutputItem::McpCall { id, server_label, name, arguments, status, approval_request_id, .. } => {
            out.push(EventKind::OutputItemAdded {
                output_index,
                item: OutputItem::McpCall {
                    id: id.clone(),
                    server_label: server_label.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                    output: None,
                    error: None,
                    status: ItemStatus::InProgress,
                    approval_request_id: approval_request_id.clone(),
                },
            });
            out.push(EventKind::McpCallInProgress { item_id: id.clone(), output_index });
            out.push(EventKind::McpCallArgumentsDelta { item_id: id.clone(), output_index, delta: arguments.clone() });
            out.push(EventKind::McpCallArgumentsDone { item_id: id.clone(), output_index, arguments: arguments.clone() });
            out.push(match status {
                ItemStatus::Failed | ItemStatus::Incomplete => EventKind::McpCallFailed { item_id: id.clone(), output_index },
                _ => EventKind::McpCallCompleted { item_id: id.clone(), output_index },
            });
            true
        }
        // As the live stream adds them (contract W3.4): the call with `{}` arguments, the
        // output with its tools, both in progress.
        OutputItem::ToolSearchCall { id, call_id, execution, .. } => {
            let item = OutputItem::ToolSearchCall { id: id.clone(), arguments: serde_json::json!({}), call_id: call_id.clone(), execution: execution.clone(), status: ItemStatus::InProgress };
            out.push(EventKind::OutputItemAdded { output_index, item });
            true
        }
        OutputItem::ToolSearchOutput { id, call_id, execution, tools, .. } => {
            let item = OutputItem::ToolSearchOutput { id: id.clone(), call_id: call_id.clone(), execution: execution.clone(), status: ItemStatus::InProgress, tools: tools.clone() };
            out.push(EventKind::OutputItemAdded { output_index, item });
            true
        }
        // Tool outputs and approval requests are added already done, as the live stream adds
        // them (an approval request has no sub-events).
        OutputItem::CustomToolCallOutput { .. } | OutputItem::FunctionCallOutput { .. } | OutputItem::McpApprovalRequest { .. } | OutputItem::Compaction { .. } => false,
    };
    if !added {
        out.push(EventKind::OutputItemAdded { output_index, item: item.clone() });
    }
    out.push(EventKind::OutputItemDone { output_index, item: item.clone() });
}

/// One summary part: `reasoning_summary_part.added` (empty), its text as one delta, the
/// text's `.done`, `reasoning_summary_part.done` (contract 2026 §W5.3).
fn summary_events(item_id: &str, output_index: usize, summary_index: usize, part: &ReasoningSummary, out: &mut Vec<EventKind>) {
    let ReasoningSummary::SummaryText { text } = part;
    let empty = ReasoningSummary::SummaryText { text: String::new() };
    out.push(EventKind::ReasoningSummaryPartAdded { item_id: item_id.to_string(), output_index, summary_index, part: empty });
    if !text.is_empty() {
        out.push(EventKind::ReasoningSummaryTextDelta { item_id: item_id.to_string(), output_index, summary_index, delta: text.clone() });
    }
    out.push(EventKind::ReasoningSummaryTextDone { item_id: item_id.to_string(), output_index, summary_index, text: text.clone() });
    out.push(EventKind::ReasoningSummaryPartDone { item_id: item_id.to_string(), output_index, summary_index, part: part.clone() });
}

/// One content part: `content_part.added` (empty), the whole text as one delta (with the
/// part's annotations), the text's `.done`, `content_part.done`.
fn part_events(item_id: &str, output_index: usize, content_index: usize, part: &OutputContent, out: &mut Vec<EventKind>) {
    let item_id = item_id.to_string();
    let empty = match part {
        OutputContent::OutputText { .. } => OutputContent::OutputText { annotations: Vec::new(), logprobs: Vec::new(), text: String::new() },
        OutputContent::Refusal { .. } => OutputContent::Refusal { refusal: String::new() },
        OutputContent::ReasoningText { .. } => OutputContent::ReasoningText { text: String::new() },
    };
    out.push(EventKind::ContentPartAdded { item_id: item_id.clone(), output_index, content_index, part: empty });
    match part {
        OutputContent::OutputText { text, annotations, .. } => {
            if !text.is_empty() {
                out.push(EventKind::OutputTextDelta { item_id: item_id.clone(), output_index, content_index, delta: text.clone(), logprobs: Vec::new() });
            }
            for (annotation_index, annotation) in annotations.iter().enumerate() {
                out.push(EventKind::AnnotationAdded {
                    item_id: item_id.clone(),
                    output_index,
                    content_index,
                    annotation_index,
                    annotation: annotation.clone(),
                });
            }
            out.push(EventKind::OutputTextDone { item_id: item_id.clone(), output_index, content_index, text: text.clone(), logprobs: Vec::new() });
        }
        OutputContent::ReasoningText { text } => {
            if !text.is_empty() {
                out.push(EventKind::ReasoningTextDelta { item_id: item_id.clone(), output_index, content_index, delta: text.clone() });
            }
            out.push(EventKind::ReasoningTextDone { item_id: item_id.clone(), output_index, content_index, text: text.clone() });
        }
        OutputContent::Refusal { refusal } => {
            if !refusal.is_empty() {
                out.push(EventKind::RefusalDelta { item_id: item_id.clone(), output_index, content_index, delta: refusal.clone() });
            }
            out.push(EventKind::RefusalDone { item_id: item_id.clone(), output_index, content_index, refusal: refusal.clone() });
        }
    }
    out.push(EventKind::ContentPartDone { item_id, output_index, content_index, part: part.clone() });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Accumulator;

    /// The fold of the replayed events is the stored Response, for every item kind.
    #[test]
    fn the_fold_of_the_replay_is_the_stored_response() {
        let stored: Response = serde_json::from_value(serde_json::json!({
            "id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "background": false,
            "completed_at": 2, "error": null, "incomplete_details": null, "instructions": null,
            "max_output_tokens": null, "max_tool_calls": null, "model": "m",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "think"}], "status": "completed"},
                {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q", "queries": ["q"]}},
                {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "phase": "final_answer",
                 "content": [{"type": "output_text", "text": "See https://a.example", "logprobs": [],
                              "annotations": [{"type": "url_citation", "start_index": 4, "end_index": 21, "title": "A", "url": "https://a.example"}]}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}", "status": "completed"},
                {"type": "custom_tool_call_output", "id": "ctco_1", "call_id": "call_2", "output": "x", "status": "completed"},
                {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "docs", "error": null,
                 "tools": [{"name": "echo", "input_schema": {"type": "object"}, "description": "Echoes", "annotations": {"readOnlyHint": true}}]},
                {"type": "mcp_list_tools", "id": "mcpl_2", "server_label": "down", "tools": [], "error": "connection refused"},
                {"type": "mcp_call", "id": "mcp_1", "server_label": "docs", "name": "echo", "arguments": "{\"x\":1}",
                 "output": "1", "error": null, "status": "completed", "approval_request_id": "mcpr_0"},
                {"type": "mcp_call", "id": "mcp_2", "server_label": "docs", "name": "fail", "arguments": "{}",
                 "output": null, "error": {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": "boom"}]},
                 "status": "failed", "approval_request_id": null},
                {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "docs", "name": "echo", "arguments": "{}"}
            ],
            "parallel_tool_calls": true, "previous_response_id": null, "prompt_cache_key": null,
            "prompt_cache_retention": null, "reasoning": {"effort": null, "summary": null}, "safety_identifier": null,
            "service_tier": "default", "store": true, "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto", "tools": [], "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled",
            "usage": {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}, "output_tokens": 1,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2},
            "user": null, "metadata": {}, "frequency_penalty": 0.0, "presence_penalty": 0.0
        }))
        .expect("a stored response");
        let events = events(&stored);
        let mut acc = Accumulator::new(Response::default());
        let mut folded_before_terminal = None;
        for (i, e) in events.into_iter().enumerate() {
            if e.is_terminal() {
                folded_before_terminal = Some((i, acc.response.output.clone()));
            }
            acc.fold(e);
        }
        let names: Vec<&str> = super::events(&stored).iter().map(EventKind::name).filter(|n| n.contains("mcp")).collect();
        assert_eq!(
            names,
            [
                "response.mcp_list_tools.in_progress",
                "response.mcp_list_tools.completed",
                "response.mcp_list_tools.in_progress",
                "response.mcp_list_tools.failed",
                "response.mcp_call.in_progress",
                "response.mcp_call_arguments.delta",
                "response.mcp_call_arguments.done",
                "response.mcp_call.completed",
                "response.mcp_call.in_progress",
                "response.mcp_call_arguments.delta",
                "response.mcp_call_arguments.done",
                "response.mcp_call.failed",
            ]
        );
        let (_, output) = folded_before_terminal.expect("a terminal event");
        assert_eq!(output, stored.output, "the items fold to the stored ones before the terminal event");
        assert_eq!(acc.response, stored);
    }
}
