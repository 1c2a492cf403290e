//! The end of a stored turn (DESIGN.md "Pipeline", `store`): the request's input items,
//! the Response (its output items), and the final transcript with the private gateway-tool
//! results the model saw are written in one transaction — also for `failed` and
//! `incomplete` turns. Progress messages (streams only) are never stored.

use std::sync::Arc;

use serde_json::Value;

use crate::store::{ConversationAppend, Store, StoreError, TurnRecord};
use crate::turn::state::Lease;
use crate::turn::transcript::PROGRESS_ID_PREFIX;
use crate::turn::Outcome;

/// What to write when the turn ends, planned by `turn::state::prepare`.
#[derive(Debug, Clone)]
pub struct Persist {
    pub store: Arc<dyn Store>,
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

/// Writes the finished turn. Errors: the store failed or the conversation lease was lost;
/// then nothing was written.
pub async fn commit(plan: Persist, outcome: &Outcome) -> Result<(), StoreError> {
    let mut response = outcome.response.clone();
    response.output.retain(|item| !item.id().starts_with(PROGRESS_ID_PREFIX));
    let status = serde_json::to_value(response.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let created_at = i64::try_from(response.created_at).unwrap_or(i64::MAX);
    let response_id = response.id.clone();
    let value = serde_json::to_value(&response).map_err(|e| StoreError::Other(format!("serializing the response: {e}")))?;
    let conversation = plan.conversation.as_ref().map(|c| {
        let output = value.get("output").and_then(Value::as_array).cloned().unwrap_or_default();
        ConversationAppend {
            id: c.id.clone(),
            lease_owner: c.lease.owner.clone(),
            version: c.version,
            items: plan.input_items.iter().cloned().chain(output).collect(),
        }
    });
    let record = TurnRecord {
        response_id,
        created_at,
        status,
        previous_response_id: plan.previous_response_id.clone(),
        stored: plan.store_response.then(|| (value, plan.input_items.clone())),
        transcript: outcome.transcript.clone(),
        conversation,
    };
    plan.store.save_turn(record).await?;
    if let Some(c) = &plan.conversation {
        c.lease.settled();
    }
    Ok(())
}
