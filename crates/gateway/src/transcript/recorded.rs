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
    ApprovalResponse { request_id: Option<String>, approve: Option<bool>, reason: Option<String> },
    /// A call that ran once approved (an `mcp_call` with `approval_request_id`): its result
    /// answers that request's call, which this input approved or an earlier turn ran.
    ApprovedRun { request_id: String, replayed: Replayed },
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
            if let Some(i) = t.approved.iter().position(|a| *a == request_id) {
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
        Recorded::ApprovalResponse { request_id, approve, reason } => {
            let field = format!("{param}.approval_request_id");
            let Some(id) = request_id.filter(|id| !id.is_empty()) else {
                return Err(ApiError::invalid(field, format!("Missing required parameter: '{param}.approval_request_id'.")).with_code("missing_required_parameter"));
            };
            let Some(approve) = approve else {
                return Err(ApiError::invalid(format!("{param}.approve"), format!("Missing required parameter: '{param}.approve' (a boolean).")).with_code("missing_required_parameter"));
            };
            let slot = calls.index.get(&id).copied().filter(|_| t.approvals.contains(&id));
            match slot.and_then(|i| calls.ids.get_mut(i)) {
                None => Err(ApiError::invalid(field, format!("No approval request found with id '{id}'.")).with_code("invalid_value")),
                Some((_, true)) => Err(ApiError::invalid(field, format!("The approval request '{id}' was already answered.")).with_code("invalid_value")),
                Some((_, answered)) => {
                    *answered = true;
                    if approve {
                        t.approved.push(id.clone());
                        t.push_tool_result(id, APPROVED_NOT_RUN.to_string());
                    } else {
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

