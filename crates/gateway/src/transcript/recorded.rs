//! Input items that are state a turn builds on rather than calls or messages (issue 18):
//! an MCP server's listing, approval requests and their answers, and a call that ran once
//! approved. Tool types say which items these are (`ToolReplay::record`); this module keeps
//! their state in the transcript.

use protocol::ApiError;

use super::call_log::{new_call, CallLog};
use super::{Call, Replayed, Transcript};

/// An input item that is state a turn builds on rather than a call or a message (issue 18).
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// Tools a server listed (`mcp_list_tools`), kept by label for reuse.
    Listing { label: String, tools: serde_json::Value },
    /// A call that waits for approval (`mcp_approval_request`): its `call_id` is the
    /// request's id, its name the model-visible one.
    ApprovalRequest(Call),
    /// An answer to an approval request (`mcp_approval_response`), as given.
    /// Its fields as given (`null` when absent); the build checks their types.
    ApprovalResponse { request_id: serde_json::Value, approve: serde_json::Value, reason: serde_json::Value },
    /// A call that ran once approved (an `mcp_call` with `approval_request_id`): its result
    /// answers that request's call, which this input approved or an earlier turn ran.
    ApprovedRun { request_id: String, replayed: Replayed },
    /// A call whose answer is an item of its own (a `tool_search_call`, issue 31).
    Call(Call),
    /// The answer to such a call (a `tool_search_output`): `call_id` `None` answers the
    /// last call not answered yet (a hosted search's output follows its call); `content` is
    /// what the model read; `loads` the declarations it loaded (kept in `Transcript::loaded`).
    /// A later call starts a new round: the model read the output before making it (it
    /// calls what the search loaded), hosted or client-executed alike.
    Output { call_id: Option<String>, content: String, loads: Vec<serde_json::Value> },
    /// Tools added part-way through the conversation (an `additional_tools` item, contract
    /// W3.3): loaded like a search's, without a call (kept in `Transcript::loaded`).
    Tools(Vec<serde_json::Value>),
}

/// The result the model reads of a call the user denied.
pub const DENIED: &str = "error: the user did not approve this call, so it was not run. Do not call it again unless the user asks for it.";

/// The placeholder result of an approved call until the turn runs it.
pub const APPROVED_NOT_RUN: &str = "error: the approved call did not run.";

/// Adds a recorded item's state to `t`: a listing by label; an approval request as its
/// call; an approval response as its call's result (the denial text, or a placeholder that
/// the turn replaces when it runs the approved call). Returns true when the item answered a
/// call (a later call then starts a new round). Errors (400 naming the field): a response
/// without `approval_request_id` or boolean `approve`, naming no approval request, or one
/// answered already.
pub(super) fn record(item: Recorded, param: &str, t: &mut Transcript, calls: &mut CallLog, stored: usize, after_output: &mut bool) -> Result<bool, ApiError> {
    match item {
        Recorded::Listing { label, tools } => {
            t.listings.insert(label, tools);
            Ok(false)
        }
        Recorded::ApprovalRequest(call) => {
            if new_call(calls, stored, &call.call_id, param)? {
                if !t.approvals.contains(&call.call_id) {
                    t.approvals.push(call.call_id.clone());
                }
                t.push_call(call, std::mem::take(after_output));
            }
            Ok(false)
        }
        Recorded::ApprovedRun { request_id, replayed } => {
            if let Some(i) = t.approved.iter().position(|(a, _)| *a == request_id) {
                // Approved in this input and replayed with its run: not run again.
                t.approved.remove(i);
                t.set_tool_result(&request_id, replayed.result.unwrap_or_default());
            } else if !calls.index.contains_key(&request_id) {
                // Its request and response are not in the history: the call as it ran.
                let call_id = replayed.call.call_id.clone();
                t.push_call(replayed.call, std::mem::take(after_output));
                t.push_tool_result(call_id, replayed.result.unwrap_or_default());
            }
            Ok(false)
        }
        Recorded::Call(call) => {
            if new_call(calls, stored, &call.call_id, param)? {
                t.push_call(call, std::mem::take(after_output));
            }
            Ok(false)
        }
        Recorded::Output { call_id, content, loads } => {
            let slot = match &call_id {
                Some(id) => calls.index.get(id).copied(),
                None => calls.ids.iter().rposition(|(_, answered)| !answered),
            };
            let Some((id, answered)) = slot.and_then(|i| calls.ids.get_mut(i)) else {
                return Err(ApiError::invalid(format!("{param}.call_id"), format!("No tool search call found for output with call_id {}.", shown(call_id.as_deref().unwrap_or("null"))))
                    .with_code("invalid_value"));
            };
            if *answered {
                return Err(ApiError::invalid(format!("{param}.call_id"), format!("Duplicate tool output for call_id {}.", shown(id))).with_code("invalid_value"));
            }
            *answered = true;
            let id = id.clone();
            t.push_tool_result(id, content);
            t.loaded.extend(loads);
            Ok(true)
        }
        Recorded::Tools(loads) => {
            t.loaded.extend(loads);
            Ok(false)
        }
        Recorded::ApprovalResponse { request_id, approve, reason } => {
            use serde_json::Value;
            let field = format!("{param}.approval_request_id");
            let wrong_type = |name: &str, what: &str| {
                ApiError::invalid(format!("{param}.{name}"), format!("Invalid type for '{param}.{name}': expected {what}.")).with_code("invalid_type")
            };
            let id = match request_id {
                Value::String(id) if !id.is_empty() => id,
                Value::Null => {
                    return Err(ApiError::invalid(field, format!("Missing required parameter: '{param}.approval_request_id'.")).with_code("missing_required_parameter"))
                }
                Value::String(_) => return Err(ApiError::invalid(field, format!("Invalid '{param}.approval_request_id': empty string.")).with_code("empty_string")),
                _ => return Err(wrong_type("approval_request_id", "a string")),
            };
            let approve = match approve {
                Value::Bool(b) => b,
                Value::Null => {
                    return Err(ApiError::invalid(format!("{param}.approve"), format!("Missing required parameter: '{param}.approve'.")).with_code("missing_required_parameter"))
                }
                _ => return Err(wrong_type("approve", "a boolean")),
            };
            let reason = match reason {
                Value::String(r) => Some(r),
                Value::Null => None,
                _ => return Err(wrong_type("reason", "a string")),
            };
            let slot = calls.index.get(&id).copied().filter(|_| t.approvals.contains(&id));
            match slot.and_then(|i| calls.ids.get_mut(i)) {
                None => Err(ApiError::invalid(field, format!("No approval request found with id '{}'.", shown(&id))).with_code("invalid_value")),
                Some((_, true)) => Err(ApiError::invalid(field, format!("The approval request '{}' was already answered.", shown(&id))).with_code("invalid_value")),
                Some((_, answered)) => {
                    *answered = true;
                    if approve {
                        t.approved.push((id.clone(), param.to_string()));
                        t.push_tool_result(id, APPROVED_NOT_RUN.to_string());
                    } else {
                        t.denied.push((id.clone(), param.to_string()));
                        let text = match reason.filter(|r| !r.trim().is_empty()) {
                            Some(r) => format!("{DENIED} The user's reason: {r}"),
                            None => DENIED.to_string(),
                        };
                        t.push_tool_result(id, text);
                    }
                    Ok(true)
                }
            }
        }
    }
}

/// An id as an error message shows it: at most 80 characters.
fn shown(id: &str) -> String {
    match id.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &id[..cut]),
        None => id.to_string(),
    }
}
