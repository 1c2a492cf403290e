//! The Conversations API (contract §10): `POST /v1/conversations` (`{metadata?, items?}`,
//! at most 20 items), `GET/POST(update metadata)/DELETE /v1/conversations/{id}`,
//! `POST/GET /v1/conversations/{id}/items` and `GET/DELETE …/items/{item_id}`.
//! Items are stored as item resources with ids; bad input → 400 naming the `param`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use protocol::input::InputItem;
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::Tenant;
use super::{json_body, list};
use super::AppState;
use crate::error::GatewayError;
use crate::events::emitter::now_secs;
use crate::events::ids::new_id;
use crate::store::{items, Conversation, Lookup, NewConversation};

/// Most items one create or add request may carry.
pub const MAX_ITEMS: usize = 20;

#[derive(Debug, Default, Deserialize)]
struct Body {
    #[serde(default)]
    metadata: Option<BTreeMap<String, String>>,
    #[serde(default)]
    items: Option<Vec<Value>>,
}

/// `{id, object:"conversation", created_at, metadata}`.
fn render(c: &Conversation) -> Value {
    json!({"id": c.id, "object": "conversation", "created_at": c.created_at, "metadata": c.metadata})
}

fn check_metadata(md: &BTreeMap<String, String>) -> Result<(), GatewayError> {
    if md.len() > 16 || md.iter().any(|(k, v)| k.chars().count() > 64 || v.chars().count() > 512) {
        return Err(GatewayError::bad_request(
            Some("metadata".to_string()),
            "Invalid 'metadata': at most 16 pairs, keys up to 64 and values up to 512 characters.",
        )
        .with_code("invalid_value"));
    }
    Ok(())
}

/// Validates items (at most 20, each a known input item shape, ids unique) and gives
/// them their resource shape.
fn check_items(given: Vec<Value>) -> Result<Vec<Value>, GatewayError> {
    if given.len() > MAX_ITEMS {
        return Err(GatewayError::bad_request(
            Some("items".to_string()),
            format!("Invalid 'items': at most {MAX_ITEMS} items per request, got {}.", given.len()),
        )
        .with_code("array_above_max_length"));
    }
    let mut out: Vec<Value> = Vec::with_capacity(given.len());
    for (i, item) in given.into_iter().enumerate() {
        check_item(&item, i)?;
        let resource = items::to_resource(item);
        let id = resource.get("id").and_then(Value::as_str).unwrap_or_default();
        if out.iter().any(|o| o.get("id").and_then(Value::as_str) == Some(id)) {
            return Err(GatewayError::bad_request(Some(format!("items[{i}].id")), format!("Duplicate item id '{id}'."))
                .with_code("invalid_value"));
        }
        out.push(resource);
    }
    Ok(out)
}

/// Item types an input may hold besides those [`InputItem`] reads (contract §4, §5): kept
/// as they are, for the tools and upstreams that read them.
const OTHER_ITEM_TYPES: &[&str] = &[
    "mcp_list_tools",
    "mcp_call",
    "mcp_approval_request",
    "mcp_approval_response",
    "computer_call",
    "computer_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "image_generation_call",
    "code_interpreter_call",
    "compaction",
    "tool_search_call",
    "tool_search_output",
];

/// Checks one item as an input item is checked (its type and fields), and what a stored
/// item must not hold: an unknown type, a reasoning item whose `summary` is not a list of
/// `summary_text` parts, a key with a control character; and the content checks of an input
/// item (`transcript::check_item_content`: image URLs, `input_file`s). 400 naming `items[i]…`.
fn check_item(item: &Value, i: usize) -> Result<(), GatewayError> {
    let bad = |at: &str, message: String| GatewayError::bad_request(Some(format!("items[{i}]{at}")), message).with_code("invalid_value");
    let parsed = InputItem::from_value(item.clone()).map_err(|e| bad("", format!("Invalid item: {}", crate::error::short_numbers(&e.to_string()))))?;
    match &parsed {
        InputItem::Other { kind, .. } if !OTHER_ITEM_TYPES.contains(&kind.as_str()) => {
            let kind: String = kind.chars().take(64).collect();
            return Err(bad(".type", format!("Invalid value: '{kind}'. Unknown item type.")));
        }
        InputItem::Reasoning(r) => {
            let parts_ok = |key: &str, part: &str, required: bool| match r.get(key) {
                None | Some(Value::Null) => !required,
                Some(Value::Array(parts)) => parts.iter().all(|p| p.get("type").and_then(Value::as_str) == Some(part) && p.get("text").is_some_and(Value::is_string)),
                Some(_) => false,
            };
            if !parts_ok("summary", "summary_text", true) {
                return Err(bad(".summary", "Invalid 'summary': expected a list of {\"type\": \"summary_text\", \"text\"} parts.".to_string()));
            }
            if !parts_ok("content", "reasoning_text", false) {
                return Err(bad(".content", "Invalid 'content': expected a list of {\"type\": \"reasoning_text\", \"text\"} parts.".to_string()));
            }
        }
        _ => {}
    }
    // The content checks an input item gets (`POST /v1/responses`): otherwise a stored item
    // would refuse every later turn on the conversation.
    crate::transcript::check_item_content(&parsed, &format!("items[{i}]")).map_err(GatewayError::from)?;
    if let Some(path) = control_key(item) {
        return Err(bad(&path, "Invalid key: keys may not hold control characters.".to_string()));
    }
    Ok(())
}

/// The path (below the item) of the first object key holding a control character.
fn control_key(v: &Value) -> Option<String> {
    match v {
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            if k.chars().any(char::is_control) {
                return Some(String::new());
            }
            control_key(v).map(|p| format!(".{k}{p}"))
        }),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| control_key(v).map(|p| format!("[{i}]{p}"))),
        _ => None,
    }
}

/// How an item changes the list of calls and their answered flags.
enum Fold {
    Done,
    /// A tool output whose `call_id` matches no call before it.
    NoCall,
    /// A second output for one call.
    Duplicate,
}

fn fold(calls: &mut Vec<(String, bool)>, item: &Value) -> Fold {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
    let Some(call_id) = item.get("call_id").and_then(Value::as_str) else { return Fold::Done };
    match kind {
        "function_call" | "custom_tool_call" => calls.push((call_id.to_string(), false)),
        "function_call_output" | "custom_tool_call_output" => match calls.iter_mut().find(|(id, _)| id == call_id) {
            None => return Fold::NoCall,
            Some((_, true)) => return Fold::Duplicate,
            Some((_, answered)) => *answered = true,
        },
        _ => {}
    }
    Fold::Done
}

/// Tool outputs among `items` must answer a call that comes before them (in `calls`, the
/// conversation's calls so far with their answered flag, or earlier in `items`), once:
/// otherwise every later turn on the conversation would be refused. 400 naming
/// `items[i].call_id`, worded as `POST /v1/responses` words it.
fn check_outputs(mut calls: Vec<(String, bool)>, items: &[Value]) -> Result<(), GatewayError> {
    for (i, item) in items.iter().enumerate() {
        let call_id = item.get("call_id").and_then(Value::as_str).unwrap_or_default();
        let message = match fold(&mut calls, item) {
            Fold::Done => continue,
            Fold::NoCall => format!("No tool call found for output with call_id {call_id}."),
            Fold::Duplicate => format!("Duplicate tool output for call_id {call_id}."),
        };
        return Err(GatewayError::bad_request(Some(format!("items[{i}].call_id")), message).with_code("invalid_value"));
    }
    Ok(())
}

/// The conversation's calls and whether each has its output (from its current transcript,
/// or from its items); None for an unknown conversation.
async fn calls_so_far(state: &AppState, project: &str, id: &str) -> Result<Option<Vec<(String, bool)>>, GatewayError> {
    let Some(context) = state.store.conversation_context(project, id).await? else { return Ok(None) };
    if let Some(t) = context.transcript {
        return Ok(Some(t.calls()));
    }
    let mut calls: Vec<(String, bool)> = Vec::new();
    for item in &context.items {
        let _ = fold(&mut calls, item);
    }
    Ok(Some(calls))
}

fn has_outputs(items: &[Value]) -> bool {
    items.iter().any(|i| matches!(i.get("type").and_then(Value::as_str), Some("function_call_output" | "custom_tool_call_output")))
}

fn conversation_not_found(id: &str) -> GatewayError {
    GatewayError::not_found(None, format!("Conversation with id '{id}' not found."), "conversation_not_found")
}

fn item_not_found(item_id: &str) -> GatewayError {
    GatewayError::not_found(None, format!("Item with id '{item_id}' not found."), "item_not_found")
}

fn answer<T>(r: Result<T, GatewayError>, ok: impl FnOnce(T) -> Value) -> Response {
    match r {
        Ok(v) => Json(ok(v)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `POST /v1/conversations`.
pub async fn create(State(state): State<Arc<AppState>>, tenant: Tenant, body: Bytes) -> Response {
    let r = async {
        let body = json_body::parse::<Body>(&body)?;
        let metadata = body.metadata.unwrap_or_default();
        check_metadata(&metadata)?;
        let items = check_items(body.items.unwrap_or_default())?;
        check_outputs(Vec::new(), &items)?;
        let created_at = i64::try_from(now_secs()).unwrap_or(i64::MAX);
        let conversation = Conversation { id: new_id("conv"), created_at, metadata };
        state.store.create_conversation(NewConversation { project: tenant.as_str().to_string(), conversation: conversation.clone(), items }).await?;
        Ok(conversation)
    }
    .await;
    answer(r, |c| render(&c))
}

/// `GET /v1/conversations/{id}`.
pub async fn get(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>) -> Response {
    let r = async {
        match state.store.conversation(tenant.as_str(), &id).await? {
            Some(c) => Ok(c),
            None => Err(conversation_not_found(&id)),
        }
    }
    .await;
    answer(r, |c| render(&c))
}

/// `POST /v1/conversations/{id}` with `{metadata}`: replaces the metadata.
pub async fn update(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>, body: Bytes) -> Response {
    let r = async {
        let Some(metadata) = json_body::parse::<Body>(&body)?.metadata else {
            return Err(GatewayError::bad_request(Some("metadata".to_string()), "Missing required parameter: 'metadata'.")
                .with_code("missing_required_parameter"));
        };
        check_metadata(&metadata)?;
        match state.store.update_conversation(tenant.as_str(), &id, metadata).await? {
            Some(c) => Ok(c),
            None => Err(conversation_not_found(&id)),
        }
    }
    .await;
    answer(r, |c| render(&c))
}

/// `DELETE /v1/conversations/{id}`: `{id, object:"conversation.deleted", deleted:true}`.
pub async fn delete(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>) -> Response {
    let r = async {
        if state.store.delete_conversation(tenant.as_str(), &id).await? {
            Ok(id.clone())
        } else {
            Err(conversation_not_found(&id))
        }
    }
    .await;
    answer(r, |id| json!({"id": id, "object": "conversation.deleted", "deleted": true}))
}

/// `POST /v1/conversations/{id}/items` with `{items}` (at most 20): the added items as a list.
pub async fn add_items(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>, body: Bytes) -> Response {
    let r = async {
        let Some(given) = json_body::parse::<Body>(&body)?.items else {
            return Err(GatewayError::bad_request(Some("items".to_string()), "Missing required parameter: 'items'.")
                .with_code("missing_required_parameter"));
        };
        let items = check_items(given)?;
        if has_outputs(&items) {
            let Some(calls) = calls_so_far(&state, tenant.as_str(), &id).await? else { return Err(conversation_not_found(&id)) };
            check_outputs(calls, &items)?;
        }
        if state.store.add_items(tenant.as_str(), &id, items.clone()).await? {
            Ok(items)
        } else {
            Err(conversation_not_found(&id))
        }
    }
    .await;
    answer(r, |data| list::render(crate::store::Page { data, has_more: false }))
}

/// `GET /v1/conversations/{id}/items` (`limit`, `order`, `after`).
pub async fn list_items(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let r = async {
        let q = list::parse_query(query.as_deref())?;
        match state.store.list_items(tenant.as_str(), &id, &q).await? {
            Some(page) => Ok(page),
            None => Err(conversation_not_found(&id)),
        }
    }
    .await;
    answer(r, list::render)
}

/// `GET /v1/conversations/{id}/items/{item_id}`.
pub async fn get_item(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    Path((id, item_id)): Path<(String, String)>,
) -> Response {
    let r = async {
        match state.store.item(tenant.as_str(), &id, &item_id).await? {
            Lookup::Found(item) => Ok(item),
            Lookup::NoConversation => Err(conversation_not_found(&id)),
            Lookup::NoItem => Err(item_not_found(&item_id)),
        }
    }
    .await;
    answer(r, |v| v)
}

/// `DELETE /v1/conversations/{id}/items/{item_id}`: returns the conversation.
pub async fn delete_item(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    Path((id, item_id)): Path<(String, String)>,
) -> Response {
    let r = async {
        match state.store.delete_item(tenant.as_str(), &id, &item_id).await? {
            Lookup::Found(c) => Ok(c),
            Lookup::NoConversation => Err(conversation_not_found(&id)),
            Lookup::NoItem => Err(item_not_found(&item_id)),
        }
    }
    .await;
    answer(r, |c| render(&c))
}
