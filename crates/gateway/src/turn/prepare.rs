//! `turn::prepare`: request bytes → a validated [`Prepared`] turn, or a 4xx in the OpenAI
//! error shape naming the offending `param` (contract §9). All store access of a turn
//! before it runs happens here, before any stream starts, so a missing id is a 400/404, a
//! busy conversation a 409 and an unreachable store a 503.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use protocol::input::{Input, InputItem};
use protocol::{ApiError, CreateResponse};
use serde_json::Value;

use crate::error::GatewayError;
use crate::events::ids::new_id;
use crate::executors::Registry;
use crate::store::{items, Answers, LeaseOutcome, Store, StoreError};
use crate::tools::replay::Replayer;
use crate::tools::ResolveCtx;
use crate::transcript::ToolReplay;
use crate::turn::continuation::{Continuation, Previous};
use crate::turn::lease::Lease;
use crate::turn::persist::{ConversationTurn, Persist};
use crate::turn::validate::{validate, Prepared};

/// What [`prepare`] needs besides the request.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub models: Option<&'a BTreeMap<String, String>>,
    pub reject_unknown: bool,
    pub registry: &'a Arc<Registry>,
    /// The upstream's capabilities (native tool declarations).
    pub caps: &'a crate::upstream::UpstreamCaps,
    pub store: &'a Arc<dyn Store>,
    /// The request's project (tenant): what it continues from and what it stores are its own.
    pub project: &'a str,
    /// `store.lease_ttl_ms`.
    pub lease_ttl_ms: u64,
    /// The size ceilings of `[limits]`.
    pub sizes: Sizes,
    /// Ask the store whether it answers before a stored turn starts (false where the caller
    /// has just used it: a background worker that claimed the run).
    pub ping_store: bool,
    /// A background worker prepares the run it claimed (a background request is prepared
    /// twice: when queued, to validate it, and when run; only the run answers approvals).
    pub worker: bool,
    /// Where `previous_response_id` is loaded from.
    pub previous: Previous<'a>,
    /// `[seal]`: opens and seals this gateway's reasoning items (`None`: handed-back
    /// reasoning is dropped, and none is sealed).
    pub sealer: Option<&'a Arc<crate::seal::Sealer>>,
}

/// The size ceilings of a request (`[limits]`: `max_input_items`, `max_tools`,
/// `max_output_tokens`; 0 is no ceiling) and the output cap of a request that names none
/// (`default_max_output_tokens`, tokens; 0 is none).
#[derive(Debug, Clone, Copy, Default)]
pub struct Sizes {
    pub max_input_items: usize,
    pub max_tools: usize,
    pub max_output_tokens: u64,
    pub default_max_output_tokens: u64,
}

impl Sizes {
    /// The sizes of `[limits]`.
    pub fn of(limits: &crate::config::limits::LimitsConfig) -> Sizes {
        Sizes {
            max_input_items: limits.max_input_items,
            max_tools: limits.max_tools,
            max_output_tokens: limits.max_output_tokens,
            default_max_output_tokens: limits.default_max_output_tokens,
        }
    }

    /// Gives a request that names no `max_output_tokens` the gateway's default cap
    /// (`limits.default_max_output_tokens`, when set): the turn, its upstream rounds and its
    /// Response's echo then all carry it, as if the client had asked for it.
    pub fn apply_default_cap(&self, req: &mut CreateResponse) {
        if req.max_output_tokens.is_none() && self.default_max_output_tokens > 0 {
            req.max_output_tokens = Some(self.default_max_output_tokens);
        }
    }

    /// 400 `invalid_value` naming `input`, `tools` or `max_output_tokens` when the request
    /// passes a ceiling (before anything is read from the store or sent upstream).
    pub fn check(&self, req: &CreateResponse) -> Result<(), GatewayError> {
        let over = |param: &str, message: String| Err(GatewayError::bad_request(Some(param.to_string()), message).with_code("invalid_value"));
        let items = match &req.input {
            Some(Input::Items(items)) => items.len(),
            _ => 0,
        };
        if self.max_input_items > 0 && items > self.max_input_items {
            return over("input", format!("Invalid 'input': {items} items; this gateway accepts at most {} (limits.max_input_items).", self.max_input_items));
        }
        let tools = req.tools.as_ref().map_or(0, Vec::len);
        if self.max_tools > 0 && tools > self.max_tools {
            return over("tools", format!("Invalid 'tools': {tools} tools; this gateway accepts at most {} (limits.max_tools).", self.max_tools));
        }
        match req.max_output_tokens {
            Some(n) if self.max_output_tokens > 0 && n > self.max_output_tokens => over(
                "max_output_tokens",
                format!("Invalid 'max_output_tokens': {n}; this gateway accepts at most {} (limits.max_output_tokens).", self.max_output_tokens),
            ),
            _ => Ok(()),
        }
    }
}

/// 400 `previous_response_not_found` naming the id (contract §9).
pub fn previous_not_found(id: &str) -> GatewayError {
    GatewayError {
        kind: crate::error::ErrorKind::BadRequest,
        error: ApiError::invalid(
            Some("previous_response_id".to_string()),
            format!("Previous response with id '{id}' not found."),
        )
        .with_code("previous_response_not_found"),
    }
}

/// 404 for an unknown conversation.
pub fn conversation_not_found(id: &str) -> GatewayError {
    GatewayError::not_found(Some("conversation"), format!("Conversation with id '{id}' not found."), "conversation_not_found")
}

/// `conversation`: `"conv_…"` or `{id: "conv_…"}` (null: none); anything else → 400.
pub fn conversation_id(req: &CreateResponse) -> Result<Option<String>, GatewayError> {
    match &req.conversation {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) if !id.is_empty() => Ok(Some(id.clone())),
        Some(Value::Object(o)) => match o.get("id") {
            Some(Value::String(id)) if !id.is_empty() => Ok(Some(id.clone())),
            _ => Err(GatewayError::bad_request(Some("conversation.id".to_string()), "Missing required parameter: 'conversation.id'.")
                .with_code("missing_required_parameter")),
        },
        Some(_) => Err(GatewayError::bad_request(
            Some("conversation".to_string()),
            "Invalid 'conversation': expected a conversation id or an object {\"id\": …}.",
        )
        .with_code("invalid_type")),
    }
}

/// `turn::prepare` with the store: loads what the turn continues from, takes the
/// conversation's lease, validates and builds the turn, and plans what to store at its
/// end. `body` is the raw request (its `input` is stored as given, with ids added).
pub async fn prepare(mut req: CreateResponse, body: &[u8], ctx: &Context<'_>) -> Result<Prepared, GatewayError> {
    ctx.sizes.check(&req)?;
    ctx.sizes.apply_default_cap(&mut req);
    let store_response = req.store.unwrap_or(true);
    let conversation = conversation_id(&req)?;
    if req.previous_response_id.is_some() && conversation.is_some() {
        return Err(GatewayError::bad_request(
            Some("conversation".to_string()),
            "Mutually exclusive parameters: provide either 'previous_response_id' or 'conversation', not both.",
        )
        .with_code("mutually_exclusive_parameters"));
    }
    let mut from = Continuation::default();
    let mut turn = None;
    // The store's futures are boxed: held inline, each would enlarge every turn's future.
    if let Some(id) = &req.previous_response_id {
        let kept = match ctx.previous {
            Previous::Kept(kept) => kept.transcript(id),
            Previous::Store => None,
        };
        let loaded = match kept {
            Some(t) => Some(t),
            None => Box::pin(ctx.store.transcript(ctx.project, id)).await?,
        };
        match loaded {
            Some(t) => from.base = Some(t),
            None => {
                // A background response still running has no stored state yet.
                let run = Box::pin(ctx.store.run_response(ctx.project, id)).await?;
                let status = run.as_ref().and_then(|r| r.get("status")).and_then(Value::as_str);
                return Err(match status {
                    Some(s @ ("queued" | "in_progress")) => GatewayError {
                        kind: crate::error::ErrorKind::BadRequest,
                        error: ApiError::invalid(
                            Some("previous_response_id".to_string()),
                            format!("Previous response with id '{id}' is a background response still {s}: continue from it once it has finished."),
                        )
                        .with_code("previous_response_not_finished"),
                    },
                    _ => previous_not_found(id),
                });
            }
        }
        from.previous_response_id = Some(id.clone());
    } else if let Some(id) = conversation {
        let (c, conv) = Box::pin(begin_conversation(ctx, id)).await?;
        from = c;
        turn = Some(conv);
    } else if store_response && ctx.ping_store {
        // Fail before any stream starts when the turn could not be stored.
        Box::pin(ctx.store.ping()).await?;
    }
    // A replayed gateway tool item of a stored turn whose results are private (in the input,
    // or among conversation items whose transcript is not current) gets them back (the
    // Agents SDK replays items rather than continuing by previous_response_id).
    let input: &[InputItem] = match &req.input {
        Some(Input::Items(items)) => items,
        _ => &[],
    };
    let replayer = Replayer { registry: ctx.registry };
    let replayed: Vec<String> = from
        .prefix
        .iter()
        .chain(input)
        .filter_map(|i| replayer.private_result_id(i).map(str::to_string))
        .collect();
    if !replayed.is_empty() {
        match Box::pin(ctx.store.tool_results(ctx.project, &replayed)).await {
            Ok(found) => from.restored = found,
            // Not fatal: the replay falls back to the query and sources.
            Err(e) => tracing::warn!(error = %e, "stored private tool results could not be read"),
        }
    }
    if let Err(e) = Box::pin(resolve_references(&mut req, ctx)).await {
        if let Some(t) = &turn {
            Box::pin(t.lease.release()).await;
        }
        return Err(e);
    }
    let previous_response_id = from.previous_response_id.clone();
    let result = match validate(req, ctx.models, ctx.reject_unknown, ctx.registry, ctx.caps, from, ctx.sealer) {
        Ok(mut p) => Box::pin(p.tools.resolve(&ResolveCtx { registry: ctx.registry, project: ctx.project })).await.map(|()| p),
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
    // An approval runs its call at most once, whatever the client continues from.
    // A background request is checked when queued and recorded when its run starts.
    let runs_now = !prepared.base.background || ctx.worker;
    let t = &prepared.transcript;
    if let Err(e) = Box::pin(answer_approvals(ctx, &t.approved, &t.denied, runs_now)).await {
        if let Some(t) = &turn {
            Box::pin(t.lease.release()).await;
        }
        return Err(e);
    }
    if store_response || turn.is_some() {
        prepared.persist = Some(Persist {
            store: ctx.store.clone(),
            project: ctx.project.to_string(),
            store_response,
            input_items: items::input_resources(body),
            previous_response_id,
            conversation: turn,
        });
    }
    Ok(prepared)
}

/// Replaces each `item_reference` input item with the stored item of that id in this
/// project (contract §4; [`Store::stored_item`]). An unknown id, another project's, or a
/// stored item that no longer parses is a 400 naming `input[i]` ("Item with id '…' not
/// found."); a reference to a reference is never followed. With `previous_response_id`, a
/// reference to an item of a response in that stored chain is dropped: the model sees that
/// item already (it is kept in place as an item nothing replays, so later items keep their
/// indexes in error messages).
async fn resolve_references(req: &mut CreateResponse, ctx: &Context<'_>) -> Result<(), GatewayError> {
    let previous = req.previous_response_id.clone();
    let Some(Input::Items(items)) = &mut req.input else { return Ok(()) };
    for (i, item) in items.iter_mut().enumerate() {
        let InputItem::ItemReference { id } = item else { continue };
        let not_found = || GatewayError::bad_request(Some(format!("input[{i}]")), format!("Item with id '{id}' not found.")).with_code("invalid_value");
        let Some(found) = Box::pin(ctx.store.stored_item(ctx.project, id)).await? else { return Err(not_found()) };
        if let (Some(last), Some(holder)) = (&previous, &found.response_id) {
            if Box::pin(ctx.store.in_chain(ctx.project, last, holder)).await? {
                *item = InputItem::Other { kind: "item_reference".to_string(), raw: serde_json::json!({"type": "item_reference", "id": id}) };
                continue;
            }
        }
        match InputItem::from_value(found.item) {
            Ok(InputItem::ItemReference { .. }) | Err(_) => return Err(not_found()),
            Ok(resolved) => *item = resolved,
        }
    }
    Ok(())
}

/// Records this request's answers to approval requests (issue 18 "Approvals"; only checks
/// them unless `record`). An approval of a request answered already (a retried request, two
/// answers at once, a continuation from an earlier response, one denied before) is a 400 on
/// its `approval_request_id`.
async fn answer_approvals(ctx: &Context<'_>, approved: &[(String, String)], denied: &[(String, String)], record: bool) -> Result<(), GatewayError> {
    if approved.is_empty() && (denied.is_empty() || !record) {
        return Ok(());
    }
    let ids = |list: &[(String, String)]| list.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    let (approved_ids, denied_ids) = (ids(approved), ids(denied));
    let answers = Answers { approved: &approved_ids, denied: &denied_ids, record };
    let Some(id) = Box::pin(ctx.store.answer_approvals(ctx.project, answers)).await? else { return Ok(()) };
    let param = approved.iter().find(|(a, _)| *a == id).map_or_else(|| "input".to_string(), |(_, p)| format!("{p}.approval_request_id"));
    Err(GatewayError::bad_request(Some(param), format!("The approval request '{id}' was already answered.")).with_code("invalid_value"))
}

/// Takes the lease (409 when another turn holds it), then reads the conversation's
/// transcript, or its items when an item changed since the last turn.
async fn begin_conversation(ctx: &Context<'_>, id: String) -> Result<(Continuation, ConversationTurn), GatewayError> {
    let owner = new_id("lease");
    match ctx.store.lease(ctx.project, &id, &owner, ctx.lease_ttl_ms).await? {
        LeaseOutcome::Acquired => {}
        LeaseOutcome::NotFound => return Err(conversation_not_found(&id)),
        LeaseOutcome::Busy => return Err(StoreError::LeaseLost.into()),
    }
    let lease = Arc::new(Lease::start(ctx.store.clone(), id.clone(), owner, ctx.lease_ttl_ms));
    let loaded = async {
        let Some(context) = ctx.store.conversation_context(ctx.project, &id).await? else {
            return Err(conversation_not_found(&id));
        };
        let mut prefix = Vec::with_capacity(context.items.len());
        let mut prefix_ids = Vec::with_capacity(context.items.len());
        for item in context.items {
            let item_id = item.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
            let parsed = InputItem::from_value(item)
                .map_err(|_| GatewayError::from(StoreError::Corrupt { what: "conversation item", id: item_id.clone() }))?;
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
