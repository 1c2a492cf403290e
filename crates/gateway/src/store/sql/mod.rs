//! [`SqlStore`]: the one [`Store`] implementation, over sqlx's `Any` driver, so SQLite and
//! PostgreSQL run the same portable SQL (`$N` parameters, TEXT and BIGINT columns) and a bug
//! is fixed once. The backends differ only in how they connect ([`SqlStore::open`]).
//! Queries are built at run time (no `query!` macros: nothing needs a database at build time).

mod conversations;
mod responses;
mod runs;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyPool, ConnectOptions, Executor};

use super::{
    BackendKind, Conversation, ConversationContext, LeaseOutcome, ListQuery, Lookup, NewConversation, Order,
    Page, Store, StoreConfig, StoreError, TurnRecord,
};
use crate::transcript::Transcript;

/// The versioned migrations, embedded in the binary and run at start (same SQL on both
/// backends; the applied versions are recorded in `_sqlx_migrations`).
#[derive(Debug)]
struct Embedded;

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, sqlx::error::BoxDynError>> {
        Box::pin(async {
            Ok(vec![
                Migration::new(
                    1,
                    Cow::Borrowed("init"),
                    MigrationType::Simple,
                    Cow::Borrowed(include_str!("../../../migrations/0001_init.sql")),
                    false,
                ),
                Migration::new(
                    2,
                    Cow::Borrowed("tool_results"),
                    MigrationType::Simple,
                    Cow::Borrowed(include_str!("../../../migrations/0002_tool_results.sql")),
                    false,
                ),
                Migration::new(
                    3,
                    Cow::Borrowed("projects"),
                    MigrationType::Simple,
                    Cow::Borrowed(include_str!("../../../migrations/0003_projects.sql")),
                    false,
                ),
                Migration::new(
                    4,
                    Cow::Borrowed("runs"),
                    MigrationType::Simple,
                    Cow::Borrowed(include_str!("../../../migrations/0004_runs.sql")),
                    false,
                ),
                Migration::new(
                    5,
                    Cow::Borrowed("response_events"),
                    MigrationType::Simple,
                    Cow::Borrowed(include_str!("../../../migrations/0005_response_events.sql")),
                    false,
                ),
                Migration::new(
                    6,
                    Cow::Borrowed("approvals"),
                    MigrationType::Simple,
                    Cow::Borrowed(include_str!("../../../migrations/0006_approvals.sql")),
                    false,
                ),
                Migration::new(
                    7,
                    Cow::Borrowed("response_events_json"),
                    MigrationType::Simple,
                    Cow::Borrowed(include_str!("../../../migrations/0007_response_events_json.sql")),
                    false,
                ),
            ])
        })
    }
}

/// Where [`SqlStore::connect`] connects.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// A SQLite file (created, with its directory, when missing).
    Sqlite(&'a Path),
    /// A PostgreSQL URL (`postgres://…`); it is never logged or put in an error.
    Postgres(&'a str),
}

/// Stored responses and conversations in SQLite or PostgreSQL.
#[derive(Debug, Clone)]
pub struct SqlStore {
    pool: AnyPool,
    backend: BackendKind,
    /// Largest value (in characters) that is loaded; see `store.max_row_chars`.
    max_chars: i64,
}

impl SqlStore {
    /// Connects and migrates. SQLite: the file (default `<data_dir>/store.sqlite3`) and its
    /// directory are created, WAL journal with `synchronous = NORMAL`. PostgreSQL: the URL
    /// is read from the variable named by `url_env`. Errors never contain the URL.
    pub async fn open(config: &StoreConfig, data_dir: &Path) -> anyhow::Result<SqlStore> {
        match config.backend {
            BackendKind::Sqlite => {
                let path = config.path.clone().unwrap_or_else(|| data_dir.join("store.sqlite3"));
                SqlStore::connect(config, Target::Sqlite(&path)).await
            }
            BackendKind::Postgres => {
                let var = config.url_env.as_deref().unwrap_or_default();
                let Some(url) = crate::config::Config::secret(Some(var), "store.url_env")? else {
                    anyhow::bail!("store.url_env is not set");
                };
                SqlStore::connect(config, Target::Postgres(&url)).await
            }
        }
    }

    /// Connects to `target` (the backend in `config` is ignored) and migrates.
    pub async fn connect(config: &StoreConfig, target: Target<'_>) -> anyhow::Result<SqlStore> {
        sqlx::any::install_default_drivers();
        let (backend, url, secret) = match target {
            Target::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        anyhow::anyhow!("store (sqlite): cannot create directory {}: {e}", dir.display())
                    })?;
                }
                let opts = SqliteConnectOptions::new().filename(path).create_if_missing(true);
                (BackendKind::Sqlite, opts.to_url_lossy(), None)
            }
            Target::Postgres(url) => {
                let parsed = reqwest::Url::parse(url)
                    .map_err(|e| anyhow::anyhow!("store (postgres): the database URL is not valid: {e}"))?;
                if !matches!(parsed.scheme(), "postgres" | "postgresql") {
                    anyhow::bail!("store (postgres): the database URL must start with postgres://");
                }
                (BackendKind::Postgres, parsed, Some(url.to_string()))
            }
        };
        let redact = |e: &dyn std::fmt::Display| -> String {
            let text = e.to_string();
            match &secret {
                Some(s) if !s.is_empty() => text.replace(s.as_str(), "<url>"),
                _ => text,
            }
        };
        let name = backend_name(backend);
        let options = AnyConnectOptions::from_url(&url)
            .map_err(|e| anyhow::anyhow!("store ({name}): bad connection settings: {}", redact(&e)))?
            .disable_statement_logging();
        let sqlite = backend == BackendKind::Sqlite;
        let pool = AnyPoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(Duration::from_millis(config.acquire_timeout_ms))
            // A SQLite connection is a file handle in this process: a ping per acquire
            // would only add a round trip to its worker thread on every query.
            .test_before_acquire(!sqlite)
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if sqlite {
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| anyhow::anyhow!("store ({name}): cannot connect to the database: {}", redact(&e)))?;
        let migrator = Migrator::new(Embedded)
            .await
            .map_err(|e| anyhow::anyhow!("store ({name}): migrations: {}", redact(&e)))?;
        // PostgreSQL serialises concurrent migrators with an advisory lock; SQLite has none,
        // so a process that lost a race with another one migrating the same file retries.
        let mut attempt = 0u64;
        loop {
            match migrator.run(&pool).await {
                Ok(()) => break,
                Err(e) if sqlite && attempt < 5 => {
                    tracing::debug!(error = %e, attempt, "sqlite migration raced another process; retrying");
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(100 * attempt)).await;
                }
                Err(e) => anyhow::bail!("store ({name}): running migrations failed: {}", redact(&e)),
            }
        }
        Ok(SqlStore { pool, backend, max_chars: i64::try_from(config.max_row_chars).unwrap_or(i64::MAX) })
    }

    /// The connection pool (for tests and benchmarks).
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Closes the pool (waits for connections to be returned).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

fn backend_name(b: BackendKind) -> &'static str {
    match b {
        BackendKind::Sqlite => "sqlite",
        BackendKind::Postgres => "postgres",
    }
}

/// Maps a database error: connection trouble → `Unavailable` (503), a unique violation →
/// `Duplicate`, anything else → `Other` (500).
pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    use sqlx::Error as E;
    match &e {
        E::PoolTimedOut | E::PoolClosed | E::Io(_) | E::Tls(_) | E::WorkerCrashed | E::Protocol(_) => {
            StoreError::Unavailable(e.to_string())
        }
        E::Database(db) => {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            let down = if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                // SQLite primary codes: busy (5), locked (6), I/O error (10), cannot open (14).
                matches!(code.parse::<i32>().map(|c| c & 0xff), Ok(5 | 6 | 10 | 14))
            } else {
                // PostgreSQL: connection exceptions (08…), shutdown (57P0…), database
                // missing (3D000), too many connections (53300).
                code.starts_with("08") || code.starts_with("57P0") || matches!(code.as_str(), "3D000" | "53300")
            };
            if down {
                StoreError::Unavailable(db.message().to_string())
            } else if db.is_unique_violation() {
                StoreError::Duplicate
            } else {
                StoreError::Other(db.message().to_string())
            }
        }
        _ => StoreError::Other(e.to_string()),
    }
}

/// Reads a size-limited text column pair `(length(col), CASE WHEN length(col) <= max THEN col END)`.
pub(crate) fn limited(
    len: Option<i64>,
    text: Option<String>,
    what: &'static str,
    id: &str,
) -> Result<Option<String>, StoreError> {
    match (len, text) {
        (None, _) => Ok(None),
        (Some(_), Some(t)) => Ok(Some(t)),
        (Some(chars), None) => Err(StoreError::TooLarge { what, id: id.to_string(), chars }),
    }
}

/// Parses stored JSON; a failure names the row, never its content.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &'static str, id: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|_| StoreError::Corrupt { what, id: id.to_string() })
}

/// Serializes a value for storage.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Other(format!("serializing: {e}")))
}

/// One page of an in-memory list (a response's input items), ordered by `q.order`,
/// starting after the item with id `q.after`.
pub fn paginate(mut items: Vec<Value>, q: &ListQuery) -> Result<Page, StoreError> {
    if q.order == Order::Desc {
        items.reverse();
    }
    let start = match &q.after {
        None => 0,
        Some(after) => match items.iter().position(|i| i.get("id").and_then(Value::as_str) == Some(after.as_str())) {
            Some(pos) => pos + 1,
            None => return Err(StoreError::BadCursor(after.clone())),
        },
    };
    let rest = items.len().saturating_sub(start);
    let data: Vec<Value> = items.into_iter().skip(start).take(q.limit).collect();
    Ok(Page { has_more: rest > data.len(), data })
}

/// The `id` of an item resource (items are given ids before they are stored).
pub(crate) fn item_id(item: &Value) -> String {
    item.get("id").and_then(Value::as_str).unwrap_or_default().to_string()
}

use super::Answers;

impl Store for SqlStore {
    fn backend(&self) -> BackendKind {
        self.backend
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            if self.backend == BackendKind::Sqlite {
                // A file in this process: nothing to ask but whether the pool is open (a
                // query would cost two thread switches per stored turn). Disk trouble
                // still surfaces at the commit.
                return if self.pool.is_closed() { Err(db_err(sqlx::Error::PoolClosed)) } else { Ok(()) };
            }
            sqlx::query("SELECT 1").execute(&self.pool).await.map_err(db_err)?;
            Ok(())
        })
    }

    fn transcript<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Transcript>, StoreError>> {
        Box::pin(self.transcript_of(project, id))
    }

    fn response<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        Box::pin(self.response_of(project, id))
    }

    fn delete_response<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.delete_response_row(project, id))
    }

    fn tool_results<'a>(&'a self, project: &'a str, item_ids: &'a [String]) -> BoxFuture<'a, Result<super::PrivateResults, StoreError>> {
        Box::pin(self.tool_results_of(project, item_ids))
    }

    fn answer_approvals<'a>(&'a self, project: &'a str, answers: Answers<'a>) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(self.answer_approvals_of(project, answers.approved, answers.denied, answers.record))
    }

    fn input_items<'a>(&'a self, project: &'a str, id: &'a str, q: &'a ListQuery) -> BoxFuture<'a, Result<Option<Page>, StoreError>> {
        Box::pin(self.input_items_of(project, id, q))
    }

    fn save_turn(&self, turn: TurnRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.save(turn))
    }

    fn create_conversation(&self, new: NewConversation) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.insert_conversation(new))
    }

    fn conversation<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Conversation>, StoreError>> {
        Box::pin(self.conversation_of(project, id))
    }

    fn update_conversation<'a>(
        &'a self,
        project: &'a str,
        id: &'a str,
        metadata: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Option<Conversation>, StoreError>> {
        Box::pin(self.set_metadata(project, id, metadata))
    }

    fn delete_conversation<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.delete_conversation_rows(project, id))
    }

    fn add_items<'a>(&'a self, project: &'a str, id: &'a str, items: Vec<Value>) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.append_items(project, id, items))
    }

    fn list_items<'a>(&'a self, project: &'a str, id: &'a str, q: &'a ListQuery) -> BoxFuture<'a, Result<Option<Page>, StoreError>> {
        Box::pin(self.items_page(project, id, q))
    }

    fn item<'a>(&'a self, project: &'a str, id: &'a str, item_id: &'a str) -> BoxFuture<'a, Result<Lookup<Value>, StoreError>> {
        Box::pin(self.item_of(project, id, item_id))
    }

    fn stored_item<'a>(&'a self, project: &'a str, item_id: &'a str) -> BoxFuture<'a, Result<Option<super::FoundItem>, StoreError>> {
        Box::pin(self.stored_item_of(project, item_id))
    }

    fn in_chain<'a>(&'a self, project: &'a str, last: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.in_chain_of(project, last, id))
    }

    fn delete_item<'a>(&'a self, project: &'a str, id: &'a str, item_id: &'a str) -> BoxFuture<'a, Result<Lookup<Conversation>, StoreError>> {
        Box::pin(self.delete_item_row(project, id, item_id))
    }

    fn lease<'a>(&'a self, project: &'a str, id: &'a str, owner: &'a str, ttl_ms: u64) -> BoxFuture<'a, Result<LeaseOutcome, StoreError>> {
        Box::pin(self.take_lease(project, id, owner, ttl_ms))
    }

    fn renew_lease<'a>(&'a self, id: &'a str, owner: &'a str, ttl_ms: u64) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.extend_lease(id, owner, ttl_ms))
    }

    fn release_lease<'a>(&'a self, id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.drop_lease(id, owner))
    }

    fn enqueue_run(
        &self,
        project: &str,
        id: &str,
        request: String,
        response: String,
        max_queued: usize,
        frames: Vec<String>,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let (project, id) = (project.to_string(), id.to_string());
        Box::pin(async move { self.insert_run(&project, &id, request, response, max_queued, frames).await })
    }

    fn fail_run<'a>(&'a self, id: &'a str, owner: &'a str, response: String) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.fail(id, owner, response))
    }

    fn claim_run<'a>(&'a self, owner: &'a str, ttl_ms: u64) -> BoxFuture<'a, Result<Option<super::ClaimedRun>, StoreError>> {
        Box::pin(self.claim(owner, ttl_ms))
    }

    fn run_response<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        Box::pin(self.run_snapshot(project, id))
    }

    fn beat_run<'a>(&'a self, id: &'a str, owner: &'a str, ttl_ms: u64, response: Option<String>) -> BoxFuture<'a, Result<Option<bool>, StoreError>> {
        Box::pin(self.beat(id, owner, ttl_ms, response))
    }

    fn cancel_run<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<super::RunCancel, StoreError>> {
        Box::pin(self.cancel(project, id))
    }

    fn finish_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.remove_run(id))
    }

    fn delete_run<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<bool>, StoreError>> {
        Box::pin(self.drop_run(project, id))
    }

    fn run_request<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(self.request_of(project, id))
    }

    fn requeue_run<'a>(&'a self, id: &'a str, owner: &'a str, delay_ms: u64) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.requeue(id, owner, delay_ms))
    }

    fn append_events<'a>(&'a self, id: &'a str, first_seq: u64, frames: Vec<String>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.insert_events(id, first_seq, frames))
    }

    fn events_after<'a>(&'a self, id: &'a str, after: Option<u64>, limit: usize) -> BoxFuture<'a, Result<Vec<(u64, String)>, StoreError>> {
        Box::pin(self.read_events(id, after, limit))
    }

    fn expired_runs(&self, limit: usize) -> BoxFuture<'_, Result<Vec<(String, Value)>, StoreError>> {
        Box::pin(self.expired(limit))
    }

    fn reap_run<'a>(&'a self, id: &'a str, response: String) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.reap(id, response))
    }

    fn conversation_context<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<Option<ConversationContext>, StoreError>> {
        Box::pin(self.context_of(project, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(limit: usize, order: Order, after: Option<&str>) -> ListQuery {
        ListQuery { limit, order, after: after.map(str::to_string) }
    }

    #[test]
    fn paginate_orders_cursors_and_reports_more() {
        let items: Vec<Value> = (0..5).map(|i| json!({"id": format!("i{i}")})).collect();
        let p = paginate(items.clone(), &q(2, Order::Asc, None)).unwrap();
        assert_eq!(p.data, vec![json!({"id":"i0"}), json!({"id":"i1"})]);
        assert!(p.has_more);
        let p = paginate(items.clone(), &q(2, Order::Asc, Some("i3"))).unwrap();
        assert_eq!(p.data, vec![json!({"id":"i4"})]);
        assert!(!p.has_more);
        let p = paginate(items.clone(), &q(3, Order::Desc, Some("i3"))).unwrap();
        assert_eq!(p.data, vec![json!({"id":"i2"}), json!({"id":"i1"}), json!({"id":"i0"})]);
        assert!(!p.has_more);
        assert!(matches!(paginate(items, &q(2, Order::Asc, Some("nope"))), Err(StoreError::BadCursor(_))));
    }
}
