//! The store: stored responses (`previous_response_id`, `GET/DELETE /v1/responses/{id}`,
//! `input_items`) and conversations (contract §1.1, §10), behind one [`Store`] trait.
//!
//! Two backends, chosen by `[store] backend`: embedded SQLite (default, a file in the data
//! directory) and PostgreSQL (shared by several replicas). Both run the same versioned
//! migrations at start and the same portable SQL through sqlx's `Any` driver
//! ([`sql::SqlStore`]); only connecting differs. DESIGN.md "Scale-out".

/// `[store]` settings (defined with the rest of the configuration).
pub use crate::config::store as config;
pub mod items;
pub mod sql;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

pub use config::{BackendKind, StoreConfig};
pub use crate::config::auth::DEFAULT_PROJECT;

use crate::transcript::Transcript;

/// Why a store operation failed. Messages never carry the database URL or row contents.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached (HTTP 503).
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
    /// A stored value does not parse (HTTP 500); names the row, never its content.
    #[error("stored {what} {id} is corrupt")]
    Corrupt { what: &'static str, id: String },
    /// A stored value is larger than `store.max_row_chars` (HTTP 500).
    #[error("stored {what} {id} is too large to load ({chars} characters)")]
    TooLarge { what: &'static str, id: String, chars: i64 },
    /// A pagination cursor (`after`) names no item of the list (HTTP 400).
    #[error("no item with id '{0}' in this list")]
    BadCursor(String),
    /// The conversation lease was lost (expired and taken, or the conversation deleted)
    /// before the turn could be committed.
    #[error("the conversation lease was lost before the turn was committed")]
    LeaseLost,
    /// An item id that already exists in the conversation (HTTP 400).
    #[error("an item with this id already exists in the conversation")]
    Duplicate,
    /// Anything else the database reported (HTTP 500).
    #[error("store error: {0}")]
    Other(String),
}

/// `order` of a list (contract §10): `asc` or `desc` (default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    Asc,
    #[default]
    Desc,
}

/// A list request (contract §10): `limit` 1–100, `order`, `after` (an item id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub limit: usize,
    pub order: Order,
    pub after: Option<String>,
}

/// One page of a list: the items (JSON item resources) and whether more follow.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub data: Vec<Value>,
    pub has_more: bool,
}

/// A conversation object's fields (contract §10): `{id, object:"conversation", created_at, metadata}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub id: String,
    /// Unix seconds.
    pub created_at: i64,
    pub metadata: BTreeMap<String, String>,
}

/// A new conversation with its initial items (item resources, each with an `id`).
#[derive(Debug, Clone)]
pub struct NewConversation {
    /// The project the conversation belongs to.
    pub project: String,
    pub conversation: Conversation,
    pub items: Vec<Value>,
}

/// Result of a lookup inside a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup<T> {
    Found(T),
    NoConversation,
    NoItem,
}

/// Result of trying to take a conversation's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseOutcome {
    Acquired,
    /// Another turn holds an unexpired lease (HTTP 409).
    Busy,
    NotFound,
}

/// What a conversation turn starts from: the stored transcript when it is current, else
/// the items to rebuild it from.
#[derive(Debug, Clone)]
pub struct ConversationContext {
    /// The item version this context was read at (compared again at commit).
    pub version: i64,
    /// What the model saw at the end of the last turn, when no item changed since.
    pub transcript: Option<Transcript>,
    /// All items in order, when `transcript` is `None`.
    pub items: Vec<Value>,
}

/// Everything one finished turn writes, in one transaction.
#[derive(Debug, Clone)]
pub struct TurnRecord {
    /// The project the response and its private tool results belong to.
    pub project: String,
    pub response_id: String,
    /// Unix seconds.
    pub created_at: i64,
    /// `completed`, `incomplete` or `failed`.
    pub status: String,
    pub previous_response_id: Option<String>,
    /// `Some` for `store: true`: the Response row's JSON columns.
    pub stored: Option<StoredResponse>,
    /// What the model saw at the end of the turn (instructions excluded).
    pub transcript: Transcript,
    pub conversation: Option<ConversationAppend>,
    /// `(item id, query, output)` of this turn's `web_search_call` items, whose results are
    /// private: stored with the response so that a replay of its items restores them.
    pub tool_results: Vec<(String, String, String)>,
}

/// The JSON text of a stored Response row, serialized once by the turn's end.
#[derive(Debug, Clone)]
pub struct StoredResponse {
    /// The Response object (progress messages stripped).
    pub response: String,
    /// This request's input items as item resources (with ids): a JSON array.
    pub input_items: String,
}

/// The conversation part of a turn: its input and output items, appended under the lease.
#[derive(Debug, Clone)]
pub struct ConversationAppend {
    pub id: String,
    pub lease_owner: String,
    /// [`ConversationContext::version`] the turn started from.
    pub version: i64,
    pub items: Vec<Value>,
}

/// A background run a worker has claimed (issue 19): its request, to be prepared and run.
#[derive(Debug, Clone)]
pub struct ClaimedRun {
    pub response_id: String,
    pub project: String,
    /// The `POST /v1/responses` body as the client sent it.
    pub request: String,
    /// The queued Response's `created_at` (unix seconds), which the run keeps.
    pub created_at: Option<u64>,
}

/// What a cancel request found in the queue of runs.
#[derive(Debug, Clone, PartialEq)]
pub enum RunCancel {
    /// No run of that id in the project (unknown, foreground, or already stored).
    NotFound,
    /// The run had not started: it is `cancelled` now; its Response.
    Cancelled(Value),
    /// The run is in progress: its owner is told (at its next heartbeat, or at once when it
    /// runs in this process).
    Requested,
}

/// The operations the gateway needs from a store. Every method is one short statement or
/// transaction; errors are [`StoreError`]s (never a panic on a row's content).
///
/// `project` is the tenant of the request's API key ([`DEFAULT_PROJECT`] without keys): a
/// row of another project reads, updates and deletes exactly as an unknown id (issue 20
/// "Tenants").
/// An item found by id ([`Store::stored_item`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FoundItem {
    /// The item resource's JSON.
    pub item: Value,
    /// The stored response whose input or output holds it; `None` for a conversation's item.
    pub response_id: Option<String>,
}

pub trait Store: Send + Sync + Debug {
    /// `sqlite` or `postgres`.
    fn backend(&self) -> BackendKind;
    /// Checks that the database answers (a store:true turn asks before it starts).
    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>>;

    /// The final transcript of stored response `id` (None: unknown or deleted).
    fn transcript<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Transcript>, StoreError>>;
    /// The stored Response object.
    fn response<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreError>>;
    /// Deletes a stored response; false when there was none.
    fn delete_response<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// The stored private `(key, result)` of these gateway tool items of stored turns (web
    /// search: the query and the results the model read), by item id; ids not found are
    /// left out.
    fn tool_results<'a>(&'a self, project: &'a str, item_ids: &'a [String]) -> BoxFuture<'a, Result<PrivateResults, StoreError>>;
    /// A page of the response's input items (None: unknown response).
    fn input_items<'a>(&'a self, project: &'a str, id: &'a str, q: &'a ListQuery) -> BoxFuture<'a, Result<Option<Page>, StoreError>>;
    /// Records the answers to MCP approval requests of `project` (issue 18 "Approvals": an
    /// approval runs its call at most once). Returns the first approved id answered already
    /// (approved or denied before), and then records nothing.
    fn answer_approvals<'a>(&'a self, project: &'a str, answers: Answers<'a>) -> BoxFuture<'a, Result<Option<String>, StoreError>>;
    /// Writes a finished turn atomically: the response row (if stored) and the
    /// conversation's new items, transcript and lease release (if any).
    fn save_turn(&self, turn: TurnRecord) -> BoxFuture<'_, Result<(), StoreError>>;

    /// Creates a conversation with its initial items.
    fn create_conversation(&self, new: NewConversation) -> BoxFuture<'_, Result<(), StoreError>>;
    /// The conversation object (None: unknown or deleted).
    fn conversation<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Conversation>, StoreError>>;
    /// Replaces the metadata; None when unknown.
    fn update_conversation<'a>(
        &'a self,
        project: &'a str,
        id: &'a str,
        metadata: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Option<Conversation>, StoreError>>;
    /// Deletes the conversation and its items; false when unknown.
    fn delete_conversation<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Appends items (resources with ids); false when the conversation is unknown.
    fn add_items<'a>(&'a self, project: &'a str, id: &'a str, items: Vec<Value>) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// A page of the conversation's items (None: unknown conversation).
    fn list_items<'a>(&'a self, project: &'a str, id: &'a str, q: &'a ListQuery) -> BoxFuture<'a, Result<Option<Page>, StoreError>>;
    /// One item of a conversation (its JSON item resource).
    fn item<'a>(&'a self, project: &'a str, id: &'a str, item_id: &'a str) -> BoxFuture<'a, Result<Lookup<Value>, StoreError>>;
    /// The item with id `item_id` among this project's stored items: a conversation's items,
    /// then a stored response's output and input items (what an `item_reference` input item
    /// names, contract §4). `None` when no item of this project has that id. Stored
    /// responses are searched by a scan of their JSON (no index by item id).
    fn stored_item<'a>(&'a self, project: &'a str, item_id: &'a str) -> BoxFuture<'a, Result<Option<FoundItem>, StoreError>>;
    /// True when the stored response `id` is `last` or one of the responses `last`
    /// continues from (its `previous_response_id` chain, at most 10 000 deep).
    fn in_chain<'a>(&'a self, project: &'a str, last: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Deletes one item; returns the conversation.
    fn delete_item<'a>(&'a self, project: &'a str, id: &'a str, item_id: &'a str) -> BoxFuture<'a, Result<Lookup<Conversation>, StoreError>>;

    /// Takes the conversation's lease for `owner` until now + `ttl_ms`.
    fn lease<'a>(&'a self, project: &'a str, id: &'a str, owner: &'a str, ttl_ms: u64) -> BoxFuture<'a, Result<LeaseOutcome, StoreError>>;
    /// Extends a held lease; false when it is no longer held by `owner`.
    fn renew_lease<'a>(&'a self, id: &'a str, owner: &'a str, ttl_ms: u64) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Releases the lease if `owner` holds it.
    fn release_lease<'a>(&'a self, id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Queues a background run: its request body, the `queued` Response GET shows, and the
    /// first events of its log (JSON, sequence numbers from 0), in one transaction. `false`
    /// (nothing written) when `max_queued` runs are already waiting.
    fn enqueue_run(
        &self,
        project: &str,
        id: &str,
        request: String,
        response: String,
        max_queued: usize,
        events: Vec<String>,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// Ends a claimed run that could not start as `failed`, with its Response.
    fn fail_run<'a>(&'a self, id: &'a str, owner: &'a str, response: String) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Claims the oldest queued run for `owner` until now + `ttl_ms` (PostgreSQL: `FOR
    /// UPDATE SKIP LOCKED`, so replicas never claim one twice); `None` when none is queued.
    fn claim_run<'a>(&'a self, owner: &'a str, ttl_ms: u64) -> BoxFuture<'a, Result<Option<ClaimedRun>, StoreError>>;
    /// The Response of a run not yet stored in `responses` (queued, in progress, or
    /// cancelled before it started).
    fn run_response<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreError>>;
    /// The owner's heartbeat: extends its lease and replaces the Response GET shows
    /// (`None`: keep it). Returns `None` when `owner` no longer holds the run, else whether
    /// a cancel was asked for.
    fn beat_run<'a>(&'a self, id: &'a str, owner: &'a str, ttl_ms: u64, response: Option<String>) -> BoxFuture<'a, Result<Option<bool>, StoreError>>;
    /// Cancels a run: a queued one at once (its Response becomes `cancelled`), an
    /// in-progress one by telling its owner.
    fn cancel_run<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<RunCancel, StoreError>>;
    /// Deletes a run of `project` that ended before it was stored (cancelled while queued,
    /// failed) with its event log: `Some(true)`; `Some(false)` while it is queued or in
    /// progress; `None` when there is no such run.
    fn delete_run<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<bool>, StoreError>>;
    /// The request body of a run of `project` (its input items before it is stored).
    fn run_request<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>>;
    /// Gives a claimed run back to the queue, to be claimed again no sooner than `delay_ms`
    /// from now (its conversation is busy).
    fn requeue_run<'a>(&'a self, id: &'a str, owner: &'a str, delay_ms: u64) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Removes a run whose turn is stored in `responses`.
    fn finish_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Appends events (one JSON event each, the SSE `data:` payload) to a response's event
    /// log, the first with sequence number `first_seq`.
    fn append_events<'a>(&'a self, id: &'a str, first_seq: u64, events: Vec<String>) -> BoxFuture<'a, Result<(), StoreError>>;
    /// At most `limit` events (JSON) of the log after sequence number `after` (all: `None`),
    /// in order, with their sequence numbers.
    fn events_after<'a>(&'a self, id: &'a str, after: Option<u64>, limit: usize) -> BoxFuture<'a, Result<Vec<(u64, String)>, StoreError>>;
    /// In-progress runs whose lease expired (their worker died): id and Response.
    fn expired_runs(&self, limit: usize) -> BoxFuture<'_, Result<Vec<(String, Value)>, StoreError>>;
    /// Marks an expired run `failed` with `response`; `false` when it was no longer expired
    /// (renewed, or another replica reaped it first).
    fn reap_run<'a>(&'a self, id: &'a str, response: String) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// What a turn on the conversation starts from (None: unknown conversation).
    fn conversation_context<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<ConversationContext>, StoreError>>;
}

/// A request's answers to approval requests ([`Store::answer_approvals`]): request ids.
#[derive(Debug, Clone, Copy)]
pub struct Answers<'a> {
    /// Approvals: each must be new.
    pub approved: &'a [String],
    /// Denials: recorded (again) without a check; a later approval of one is refused.
    pub denied: &'a [String],
    /// False: only look (a background request when queued; its run records them).
    pub record: bool,
}

/// Opens the configured store: connects (within `acquire_timeout_ms`), runs the migrations.
/// Errors name the backend and the reason (never the URL).
pub async fn open(config: &StoreConfig, data_dir: &std::path::Path) -> anyhow::Result<Arc<dyn Store>> {
    let store = sql::SqlStore::open(config, data_dir).await?;
    Ok(Arc::new(store))
}

/// Private tool results by item id: `(key, result)` (web search: its query and results).
pub type PrivateResults = std::collections::HashMap<String, (String, String)>;

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl From<StoreError> for crate::error::GatewayError {
    /// `Unavailable` → 503 `store_unavailable`; `BadCursor` → 400 (`param: "after"`);
    /// `Duplicate` → 400 (`param: "items"`); `LeaseLost` → 409 `conversation_locked`;
    /// corrupt, oversized and other failures → 500 `store_error` naming at most the row id.
    /// The detail goes to the log, never a row's content or the database URL.
    fn from(e: StoreError) -> Self {
        use crate::error::ErrorKind;
        use protocol::ApiError;
        let server = |kind: ErrorKind, code: &str, message: String| crate::error::GatewayError::server(kind, message, Some(code));
        match e {
            StoreError::Unavailable(detail) => {
                tracing::warn!(%detail, "store unavailable");
                server(
                    ErrorKind::Unavailable,
                    "store_unavailable",
                    "The response store is unavailable right now; please retry later.".into(),
                )
            }
            StoreError::BadCursor(id) => crate::error::GatewayError::bad_request(
                Some("after".to_string()),
                format!("Invalid 'after': no item with id '{id}' in this list."),
            )
            .with_code("invalid_value"),
            StoreError::Duplicate => crate::error::GatewayError::bad_request(
                Some("items".to_string()),
                "An item with this id already exists in the conversation.",
            )
            .with_code("invalid_value"),
            StoreError::LeaseLost => crate::error::GatewayError {
                kind: ErrorKind::Conflict,
                error: ApiError::invalid(
                    Some("conversation".to_string()),
                    "Another response is in progress on this conversation; retry when it has finished.",
                )
                .with_code("conversation_locked"),
            },
            e @ (StoreError::Corrupt { .. } | StoreError::TooLarge { .. }) => {
                tracing::error!(error = %e, "stored row cannot be loaded");
                server(ErrorKind::Internal, "store_error", format!("{}.", capitalize(&e.to_string())))
            }
            StoreError::Other(detail) => {
                tracing::error!(%detail, "store error");
                server(ErrorKind::Internal, "store_error", "The response store failed.".into())
            }
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
