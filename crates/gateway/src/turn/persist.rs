//! The end of a stored turn (DESIGN.md "Pipeline", `store`): the request's input items,
//! the Response (its output items), and the final transcript with the private gateway-tool
//! results the model saw are written in one transaction — also for `failed` and
//! `incomplete` turns. Progress messages (streams only) are never stored.

use std::sync::Arc;

use serde_json::Value;

use protocol::response::Response;

use crate::store::{ConversationAppend, Store, StoreError, StoredResponse, TurnRecord};
use crate::turn::lease::Lease;
use crate::events::ids::PROGRESS_ID_PREFIX;
use crate::transcript::Transcript;

/// What to write when the turn ends, planned by `turn::prepare`.
#[derive(Debug, Clone)]
pub struct Persist {
    pub store: Arc<dyn Store>,
    /// The project (tenant) the stored rows belong to.
    pub project: String,
    /// `store: true`: write the response row (else only the conversation, if any).
    pub store_response: bool,
    /// This request's input items as item resources (with ids).
    pub input_items: Vec<Value>,
    pub previous_response_id: Option<String>,
    pub conversation: Option<ConversationTurn>,
}

/// A turn running in a conversation under its lease.
#[derive(Debug, Clone)]
pub struct ConversationTurn {
    pub id: String,
    /// The item version the turn started from.
    pub version: i64,
    pub lease: Arc<Lease>,
}

/// Writes the finished turn: `response` is its final Response, `transcript` what the
/// model saw (moved: the store serializes it). Errors: the store failed or the
/// conversation lease was lost; then nothing was written.
pub async fn commit(plan: Persist, response: &Response, transcript: Transcript) -> Result<(), StoreError> {
    // Progress messages exist only in streams; a Response without any is stored as it is.
    let stripped;
    let response = if response.output.iter().any(|item| item.id().starts_with(PROGRESS_ID_PREFIX)) {
        let mut r = response.clone();
        r.output.retain(|item| !item.id().starts_with(PROGRESS_ID_PREFIX));
        stripped = r;
        &stripped
    } else {
        response
    };
    let status = serde_json::to_value(response.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let created_at = i64::try_from(response.created_at).unwrap_or(i64::MAX);
    let stored = match plan.store_response {
        true => Some(StoredResponse { response: to_json(response)?, input_items: to_json(&plan.input_items)? }),
        false => None,
    };
    let conversation = match plan.conversation.as_ref() {
        Some(c) => {
            let mut items = plan.input_items;
            items.reserve(response.output.len());
            for item in &response.output {
                items.push(serde_json::to_value(item).map_err(|e| StoreError::Other(format!("serializing an output item: {e}")))?);
            }
            Some(ConversationAppend { id: c.id.clone(), lease_owner: c.lease.owner.clone(), version: c.version, items })
        }
        None => {
            // Serialized above: the values are not kept while the store writes (issue 28).
            drop(plan.input_items);
            None
        }
    };
    let tool_results = if plan.store_response { private_results(&transcript) } else { Vec::new() };
    let record = TurnRecord {
        project: plan.project,
        tool_results,
        response_id: response.id.clone(),
        created_at,
        status,
        previous_response_id: plan.previous_response_id,
        stored,
        transcript,
        conversation,
    };
    plan.store.save_turn(record).await?;
    if let Some(c) = &plan.conversation {
        c.lease.settled();
    }
    Ok(())
}

/// `(item id, key, result)` of this turn's private tool results (web search: the item's
/// query and the results the model read). They are not in the items, so they are kept by
/// item id for a client that replays the turn's items instead of continuing by
/// previous_response_id.
fn private_results(transcript: &Transcript) -> Vec<(String, String, String)> {
    transcript
        .private_results
        .iter()
        .filter_map(|(item_id, call_id, key)| {
            transcript.tool_result(call_id).map(|o| (item_id.clone(), key.clone(), o.to_string()))
        })
        .collect()
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Other(format!("serializing the turn: {e}")))
}
