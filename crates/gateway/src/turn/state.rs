//! What a turn continues from (contract §1.1): the stored transcript of
//! `previous_response_id`, or a conversation's transcript or items under its lease. All
//! store access of a turn before it runs happens here, before any stream starts, so a
//! missing id is a 400/404, a busy conversation a 409 and an unreachable store a 503.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use protocol::input::{Input, InputItem};
use protocol::{ApiError, CreateResponse};
use serde_json::Value;

use crate::error::HttpError;
use crate::events::ids::new_id;
use crate::executors::Registry;
use crate::store::{items, LeaseOutcome, Store, StoreError};
use crate::turn::persist::{ConversationTurn, Persist};
use crate::executors::file_search::router::ResolveError;
use crate::turn::prepare::{prepare_with, Prepared};
use crate::turn::transcript::{self, Transcript};

/// Where a turn's transcript starts.
#[derive(Debug, Clone, Default)]
pub struct Continuation {
    /// A stored transcript (instructions never carried over).
    pub base: Option<Transcript>,
    /// Conversation items that go before this request's input (when the conversation's
    /// stored transcript is not current).
    pub prefix: Vec<InputItem>,
    /// The stored ids of `prefix`'s items, in the same order.
    pub prefix_ids: Vec<String>,
    /// Echoed as `previous_response_id`.
    pub previous_response_id: Option<String>,
    /// Echoed as `conversation: {id}`.
    pub conversation_id: Option<String>,
    /// Stored `(query, results)` of the `web_search_call` items the input replays, by item id.
    pub restored: HashMap<String, (String, String)>,
}

impl Continuation {
    /// Builds the transcript: `base`, then `prefix`, then this request's `items`. An error
    /// naming `input[i]` counts only this request's items; one in a stored conversation
    /// item names that item (param `conversation`) and how to repair it.
    /// Takes `base` and `prefix` out (a long conversation is not copied).
    pub fn transcript(
        &mut self,
        instructions: Option<&str>,
        items: Vec<InputItem>,
        is_server_tool: &dyn Fn(&str) -> bool,
    ) -> Result<Transcript, ApiError> {
        let n = self.prefix.len();
        let all: Vec<InputItem> = if n == 0 {
            items
        } else {
            let mut all = std::mem::take(&mut self.prefix);
            all.extend(items);
            all
        };
        transcript::build(self.base.take(), instructions, &all, is_server_tool, &self.restored).map_err(|mut e| {
            let conv = self.conversation_id.as_deref().unwrap_or_default();
            let item_id = |i: usize| self.prefix_ids.get(i).map(String::as_str).unwrap_or_default();
            match e.param.as_deref().and_then(input_index) {
                Some(i) if i < n => {
                    let id = item_id(i);
                    e.message = format!(
                        "Conversation item '{id}' cannot be sent to the model: {} Delete it (DELETE /v1/conversations/{conv}/items/{id}).",
                        e.message
                    );
                    e.param = Some("conversation".to_string());
                }
                None if n > 0 => {
                    // A call stored in the conversation that nothing answers.
                    if let Some(i) = unanswered_call(&e.message).and_then(|id| call_position(&all[..n], id)) {
                        let id = item_id(i);
                        e.message = format!(
                            "{} It is conversation item '{id}': give its output in this request's input, add it (POST /v1/conversations/{conv}/items), or delete the call (DELETE /v1/conversations/{conv}/items/{id}).",
                            e.message
                        );
                        e.param = Some("conversation".to_string());
                    }
                }
                _ => e.param = e.param.map(|p| shift_index(&p, n)),
            }
            e
        })
    }
}

/// The call id in `transcript::build`'s "No tool output found for function call {id}.".
fn unanswered_call(message: &str) -> Option<&str> {
    message.strip_prefix("No tool output found for function call ")?.strip_suffix('.')
}

/// Where the call with `call_id` is among `items`.
fn call_position(items: &[InputItem], call_id: &str) -> Option<usize> {
    items.iter().position(|i| match i {
        InputItem::FunctionCall(c) => c.call_id == call_id,
        InputItem::CustomToolCall(c) => c.call_id == call_id,
        _ => false,
    })
}

/// `input[7].call_id` → 7.
fn input_index(param: &str) -> Option<usize> {
    param.strip_prefix("input[")?.split_once(']')?.0.parse().ok()
}

/// `input[7].call_id` with 5 prefix items → `input[2].call_id`.
fn shift_index(param: &str, n: usize) -> String {
    let Some(rest) = param.strip_prefix("input[") else { return param.to_string() };
    let Some((num, tail)) = rest.split_once(']') else { return param.to_string() };
    match num.parse::<usize>() {
        Ok(i) if i >= n => format!("input[{}]{tail}", i - n),
        _ => param.to_string(),
    }
}

/// What [`prepare`] needs besides the request.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub models: Option<&'a BTreeMap<String, String>>,
    pub reject_unknown: bool,
    pub registry: &'a Arc<Registry>,
    pub store: &'a Arc<dyn Store>,
    /// `store.lease_ttl_ms`.
    pub lease_ttl_ms: u64,
}

/// 400 `previous_response_not_found` naming the id (contract §9).
pub fn previous_not_found(id: &str) -> HttpError {
    HttpError {
        status: StatusCode::BAD_REQUEST,
        error: ApiError::invalid(
            Some("previous_response_id".to_string()),
            format!("Previous response with id '{id}' not found."),
        )
        .with_code("previous_response_not_found"),
    }
}

/// 404 for an unknown conversation.
pub fn conversation_not_found(id: &str) -> HttpError {
    HttpError::not_found(Some("conversation"), format!("Conversation with id '{id}' not found."), "conversation_not_found")
}

/// `conversation`: `"conv_…"` or `{id: "conv_…"}` (null: none); anything else → 400.
pub fn conversation_id(req: &CreateResponse) -> Result<Option<String>, HttpError> {
    match &req.conversation {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) if !id.is_empty() => Ok(Some(id.clone())),
        Some(Value::Object(o)) => match o.get("id") {
            Some(Value::String(id)) if !id.is_empty() => Ok(Some(id.clone())),
            _ => Err(HttpError::bad_request(Some("conversation.id".to_string()), "Missing required parameter: 'conversation.id'.")
                .with_code("missing_required_parameter")),
        },
        Some(_) => Err(HttpError::bad_request(
            Some("conversation".to_string()),
            "Invalid 'conversation': expected a conversation id or an object {\"id\": …}.",
        )
        .with_code("invalid_type")),
    }
}

/// `turn::prepare` with the store: loads what the turn continues from, takes the
/// conversation's lease, validates and builds the turn, and plans what to store at its
/// end. `body` is the raw request (its `input` is stored as given, with ids added).
pub async fn prepare(req: CreateResponse, body: &[u8], ctx: &Context<'_>) -> Result<Prepared, HttpError> {
    let store_response = req.store.unwrap_or(true);
    let conversation = conversation_id(&req)?;
    if req.previous_response_id.is_some() && conversation.is_some() {
        return Err(HttpError::bad_request(
            Some("conversation".to_string()),
            "Mutually exclusive parameters: provide either 'previous_response_id' or 'conversation', not both.",
        )
        .with_code("mutually_exclusive_parameters"));
    }
    let mut from = Continuation::default();
    let mut turn = None;
    // The store's futures are boxed: held inline, each would enlarge every turn's future.
    if let Some(id) = &req.previous_response_id {
        match Box::pin(ctx.store.transcript(id)).await? {
            Some(t) => from.base = Some(t),
            None => return Err(previous_not_found(id)),
        }
        from.previous_response_id = Some(id.clone());
    } else if let Some(id) = conversation {
        let (c, conv) = Box::pin(begin_conversation(ctx, id)).await?;
        from = c;
        turn = Some(conv);
    } else if store_response {
        // Fail before any stream starts when the turn could not be stored.
        Box::pin(ctx.store.ping()).await?;
    }
    // A replayed web_search_call of a stored turn (in the input, or among conversation items
    // whose transcript is not current) gets its results back (the Agents SDK replays items
    // rather than continuing by previous_response_id).
    let input: &[InputItem] = match &req.input {
        Some(Input::Items(items)) => items,
        _ => &[],
    };
    let replayed: Vec<String> = from
        .prefix
        .iter()
        .chain(input)
        .filter_map(|i| match i {
            InputItem::WebSearchCall(ws) => Some(ws.id.clone()),
            _ => None,
        })
        .collect();
    if !replayed.is_empty() {
        match Box::pin(ctx.store.tool_results(&replayed)).await {
            Ok(found) => from.restored = found,
            // Not fatal: the replay falls back to the query and sources.
            Err(e) => tracing::warn!(error = %e, "stored web search results could not be read"),
        }
    }
    let previous_response_id = from.previous_response_id.clone();
    let result = match prepare_with(req, ctx.models, ctx.reject_unknown, ctx.registry, from) {
        Ok(mut p) => Box::pin(resolve_file_stores(&mut p)).await.map(|()| p),
        Err(e) => Err(e),
    };
    let mut prepared = match result {
        Ok(p) => p,
        Err(e) => {
            if let Some(t) = &turn {
                Box::pin(t.lease.release()).await;
            }
            return Err(e);
        }
    };
    if store_response || turn.is_some() {
        prepared.persist = Some(Persist {
            store: ctx.store.clone(),
            store_response,
            input_items: items::input_resources(body),
            previous_response_id,
            conversation: turn,
        });
    }
    Ok(prepared)
}

/// Takes the lease (409 when another turn holds it), then reads the conversation's
/// transcript, or its items when an item changed since the last turn.
async fn begin_conversation(ctx: &Context<'_>, id: String) -> Result<(Continuation, ConversationTurn), HttpError> {
    let owner = new_id("lease");
    match ctx.store.lease(&id, &owner, ctx.lease_ttl_ms).await? {
        LeaseOutcome::Acquired => {}
        LeaseOutcome::NotFound => return Err(conversation_not_found(&id)),
        LeaseOutcome::Busy => return Err(StoreError::LeaseLost.into()),
    }
    let lease = Arc::new(Lease::start(ctx.store.clone(), id.clone(), owner, ctx.lease_ttl_ms));
    let loaded = async {
        let Some(context) = ctx.store.conversation_context(&id).await? else {
            return Err(conversation_not_found(&id));
        };
        let mut prefix = Vec::with_capacity(context.items.len());
        let mut prefix_ids = Vec::with_capacity(context.items.len());
        for item in context.items {
            let item_id = item.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
            let parsed = InputItem::from_value(item)
                .map_err(|_| HttpError::from(StoreError::Corrupt { what: "conversation item", id: item_id.clone() }))?;
            prefix.push(parsed);
            prefix_ids.push(item_id);
        }
        Ok((context.version, context.transcript, prefix, prefix_ids))
    }
    .await;
    match loaded {
        Ok((version, base, prefix, prefix_ids)) => {
            let from = Continuation { base, prefix, prefix_ids, previous_response_id: None, conversation_id: Some(id.clone()), restored: HashMap::new() };
            Ok((from, ConversationTurn { id, version, lease }))
        }
        Err(e) => {
            lease.release().await;
            Err(e)
        }
    }
}

/// A held conversation lease. A background task renews it every third of its lifetime
/// while the turn runs; dropping it releases it unless the turn's commit already did.
#[derive(Debug)]
pub struct Lease {
    store: Arc<dyn Store>,
    pub conversation_id: String,
    /// The lease token stored in `conversations.lease_owner`.
    pub owner: String,
    renewer: tokio::task::AbortHandle,
    settled: AtomicBool,
}

impl Lease {
    fn start(store: Arc<dyn Store>, conversation_id: String, owner: String, ttl_ms: u64) -> Lease {
        let (s, c, o) = (store.clone(), conversation_id.clone(), owner.clone());
        let period = Duration::from_millis((ttl_ms / 3).max(1));
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                match s.renew_lease(&c, &o, ttl_ms).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(conversation = %c, "conversation lease lost while the turn runs");
                        break;
                    }
                    Err(e) => tracing::warn!(conversation = %c, error = %e, "renewing the conversation lease failed"),
                }
            }
        });
        Lease { store, conversation_id, owner, renewer: task.abort_handle(), settled: AtomicBool::new(false) }
    }

    /// The commit released the lease in its transaction: nothing left to do on drop.
    pub fn settled(&self) {
        self.renewer.abort();
        self.settled.store(true, Ordering::SeqCst);
    }

    /// Releases the lease now (a turn that will not run).
    pub async fn release(&self) {
        self.renewer.abort();
        if !self.settled.swap(true, Ordering::SeqCst) {
            if let Err(e) = self.store.release_lease(&self.conversation_id, &self.owner).await {
                tracing::warn!(conversation = %self.conversation_id, error = %e, "releasing the conversation lease failed");
            }
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
        if self.settled.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (s, c, o) = (self.store.clone(), self.conversation_id.clone(), self.owner.clone());
            rt.spawn(async move {
                let _ = s.release_lease(&c, &o).await;
            });
        }
    }
}

/// Resolves the executor of every `file_search` vector store before any model call: an id
/// no executor knows is a 400 `invalid_request_error` naming it (param
/// `tools[i].vector_store_ids`); a store whose executor is not configured is a 400 naming
/// the missing setting (code `tool_not_configured`).
pub async fn resolve_file_stores(p: &mut Prepared) -> Result<(), HttpError> {
    let Some(options) = p.tools.file_search() else { return Ok(()) };
    let param = p
        .base
        .tools
        .iter()
        .position(|t| t.get("type").and_then(Value::as_str) == Some("file_search"))
        .map(|i| format!("tools[{i}].vector_store_ids"))
        .unwrap_or_else(|| "tools".to_string());
    let router = &p.executors.file_search;
    let resolved = futures_util::future::join_all(options.vector_store_ids.iter().map(|id| router.resolve(id))).await;
    let mut stores = Vec::with_capacity(resolved.len());
    for (id, r) in options.vector_store_ids.iter().zip(resolved) {
        match r {
            Ok(backend) => stores.push((id.clone(), backend)),
            Err(ResolveError::Unknown(id)) => {
                return Err(HttpError::bad_request(Some(param), format!("Vector store with id '{id}' not found.")).with_code("vector_store_not_found"))
            }
            Err(ResolveError::NotConfigured(why)) => {
                return Err(HttpError::bad_request(Some(param), why).with_code("tool_not_configured"))
            }
        }
    }
    p.file_stores = stores;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_counted_from_this_requests_input() {
        assert_eq!(shift_index("input[7].call_id", 5), "input[2].call_id");
        assert_eq!(shift_index("input[1]", 5), "input[1]");
        assert_eq!(shift_index("input", 5), "input");
        assert_eq!(shift_index("tools[0]", 5), "tools[0]");
    }
}
