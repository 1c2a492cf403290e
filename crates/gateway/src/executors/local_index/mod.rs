//! The embedded local index behind `/v1/files` and `/v1/vector_stores` (contract §10, issue 5
//! "Embedded executor and API") and the `embedded` [`VectorStoreBackend`].
//!
//! On disk under `[file_search.embedded] path` (default `<data_dir>/vector_stores`): its own
//! SQLite database `index.sqlite3` (WAL; schema in [`schema`]) and the uploaded bytes under
//! `files/<file-id>`. An upload is written to a temporary file, synced and renamed before its
//! row is inserted, so a crash leaves a file either absent or complete. Attaching a file to
//! a store records it `in_progress` and ingests it in a background task ([`pipeline`]);
//! files still `in_progress` when the process died are ingested again at the next start.
//!
//! Search ([`search`]) is BM25 over SQLite FTS5, or hybrid (BM25 + cosine over stored
//! vectors, reciprocal-rank fusion) when an [`Embedder`] is configured. The index is local to
//! one process: replicas behind a load balancer use a remote store.

pub mod chunk;
pub mod files;
pub mod ingest;
pub mod pipeline;
pub mod schema;
pub mod search;
pub mod stores;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::future::BoxFuture;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;
use tokio::sync::{OnceCell, Semaphore};

use super::embeddings::Embedder;
use super::file_search::config::EmbeddedConfig;
use super::file_search::{FileHit, FileSearchRequest, VectorStoreBackend};

pub use chunk::Chunking;
pub use files::{FileRecord, Upload};
pub use stores::{FileCounts, NewStore, StoreFileRecord, StoreRecord, StoreUpdate};

/// Why an index operation failed; the HTTP layer maps each variant to its status.
#[derive(Debug, Clone, thiserror::Error)]
pub enum IndexError {
    /// An unknown file, vector store or attachment (HTTP 404). `what`: `file`,
    /// `vector_store` or `vector_store_file`.
    #[error("No {what} found with id '{id}'.")]
    NotFound { what: &'static str, id: String },
    /// Bad input (HTTP 400) naming `param`.
    #[error("{message}")]
    Invalid { param: Option<String>, message: String },
    /// An upload larger than `max_upload_bytes` (HTTP 413).
    #[error("File is too large: the limit is {limit} bytes.")]
    TooLarge { limit: usize },
    /// The database or the disk failed (HTTP 500); the message names no file content.
    #[error("local index error: {0}")]
    Internal(String),
}

impl IndexError {
    pub(crate) fn invalid(param: &str, message: impl Into<String>) -> IndexError {
        IndexError::Invalid { param: Some(param.to_string()), message: message.into() }
    }
}

impl From<sqlx::Error> for IndexError {
    fn from(e: sqlx::Error) -> Self {
        IndexError::Internal(e.to_string())
    }
}

impl From<std::io::Error> for IndexError {
    fn from(e: std::io::Error) -> Self {
        IndexError::Internal(e.to_string())
    }
}

/// A list request: `limit` (≥ 1), `order`, and the `after`/`before` cursors (object ids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListParams {
    pub limit: usize,
    pub ascending: bool,
    pub after: Option<String>,
    pub before: Option<String>,
}

/// One page of a list and whether more follow.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed<T> {
    pub items: Vec<T>,
    pub has_more: bool,
}

/// Ingestion jobs that may run at once (each holds a CPU for extraction and tokenizing).
const PARALLEL_INGEST: usize = 2;

/// The embedded Files + Vector Stores index (see the module doc).
#[derive(Debug)]
pub struct LocalIndex {
    dir: PathBuf,
    pool: SqlitePool,
    embedder: Option<Arc<dyn Embedder>>,
    max_upload_bytes: usize,
    ready: OnceCell<()>,
    jobs: Arc<Semaphore>,
    /// This index itself, for the background ingestion tasks it spawns.
    me: Weak<LocalIndex>,
}

impl LocalIndex {
    /// The index in `config.path` (default `<data_dir>/vector_stores`). Nothing is created on
    /// disk until first use (or [`LocalIndex::start`] finds an existing index); needs a tokio
    /// runtime.
    pub fn open(config: &EmbeddedConfig, data_dir: &Path, embedder: Option<Arc<dyn Embedder>>) -> Arc<LocalIndex> {
        let dir = config.path.clone().unwrap_or_else(|| data_dir.join("vector_stores"));
        let options = SqliteConnectOptions::new()
            .filename(dir.join("index.sqlite3"))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(10))
            .connect_lazy_with(options);
        Arc::new_cyclic(|me| LocalIndex {
            dir,
            pool,
            embedder,
            max_upload_bytes: config.max_upload_bytes,
            ready: OnceCell::new(),
            jobs: Arc::new(Semaphore::new(PARALLEL_INGEST)),
            me: me.clone(),
        })
    }

    /// When an index already exists on disk, opens it in the background so files left
    /// `in_progress` by a previous process are ingested again without waiting for a request.
    pub fn start(&self) {
        if let (true, Some(me)) = (self.dir.join("index.sqlite3").exists(), self.me.upgrade()) {
            tokio::spawn(async move {
                if let Err(e) = me.ready().await {
                    tracing::error!("embedded vector store: {e}");
                }
            });
        }
    }

    /// Opens the index on first use: creates the directory, the schema, removes partial
    /// uploads, restarts ingestion of files left `in_progress` and embeds chunks that lack a
    /// vector of the configured model.
    pub async fn ready(&self) -> Result<(), IndexError> {
        self.ready
            .get_or_try_init(|| async {
                tokio::fs::create_dir_all(self.files_dir()).await.map_err(|e| {
                    IndexError::Internal(format!("cannot create {}: {e}", self.files_dir().display()))
                })?;
                schema::create(&self.pool).await?;
                files::remove_partial_uploads(&self.files_dir()).await;
                let pending = stores::in_progress(&self.pool).await?;
                if !pending.is_empty() {
                    tracing::info!(count = pending.len(), "embedded vector store: re-ingesting files left in progress");
                }
                for (store_id, file_id) in pending {
                    self.spawn_ingest(store_id, file_id);
                }
                self.spawn_reembed();
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// The directory of the index.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Largest upload, bytes.
    pub fn max_upload_bytes(&self) -> usize {
        self.max_upload_bytes
    }

    fn files_dir(&self) -> PathBuf {
        self.dir.join("files")
    }

    /// Bytes the index takes on disk: the database with its WAL, plus the uploaded files.
    pub fn disk_bytes(&self) -> u64 {
        let size = |p: PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let db: u64 = ["index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"].iter().map(|f| size(self.dir.join(f))).sum();
        let uploads: u64 = std::fs::read_dir(self.files_dir())
            .map(|rd| rd.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
            .unwrap_or(0);
        db + uploads
    }

    /// Folds the WAL into the database file and truncates it (benchmarks measure the size
    /// after this).
    pub async fn checkpoint(&self) -> Result<(), IndexError> {
        self.ready().await?;
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&self.pool).await?;
        Ok(())
    }

    /// Closes the database pool (tests and benchmarks).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Unix seconds now.
pub(crate) fn now() -> i64 {
    i64::try_from(crate::events::emitter::now_secs()).unwrap_or(i64::MAX)
}

impl VectorStoreBackend for LocalIndex {
    fn kind(&self) -> &'static str {
        "embedded"
    }

    fn has_store<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            self.ready().await.map_err(|e| e.to_string())?;
            stores::exists(&self.pool, project, id).await.map_err(|e| IndexError::from(e).to_string())
        })
    }

    fn search<'a>(&'a self, store_id: &'a str, req: &'a FileSearchRequest) -> BoxFuture<'a, Result<Vec<FileHit>, String>> {
        Box::pin(async move { self.search_store(store_id, req).await.map_err(|e| e.to_string()) })
    }
}
