//! The file-search executor seam: a [`VectorStoreBackend`] answers one query against one
//! vector store with scored chunks. The embedded local index and remote OpenAI-compatible
//! stores (OGX) both implement it; [`FileSearchRouter`] picks the executor per store id
//! (embedded first, then `[file_search.stores]`, then `[file_search].default`).

/// `[file_search]` settings (defined with the rest of the configuration).
pub use crate::config::file_search as config;
pub mod filters;
pub mod render;
pub mod router;

use std::fmt::Debug;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

pub use router::FileSearchRouter;

/// One search as the handler asks for it (contract §2 `file_search`, §10 search body).
#[derive(Debug, Clone, Default)]
pub struct FileSearchRequest {
    pub query: String,
    /// 1–50.
    pub max_num_results: u32,
    /// A ComparisonFilter or CompoundFilter, already validated.
    pub filters: Option<Value>,
    /// `ranking_options.ranker` (`auto`, `default-2024-11-15`, `none`).
    pub ranker: Option<String>,
    /// `ranking_options.score_threshold`, 0..1: hits scoring below are dropped.
    pub score_threshold: f64,
    /// `ranking_options.hybrid_search` weights `(embedding_weight, text_weight)`.
    pub hybrid: Option<(f64, f64)>,
}

/// One retrieved chunk. `score` is in 0..1 (remote scores above 1 are clamped).
#[derive(Debug, Clone, PartialEq)]
pub struct FileHit {
    /// The `file-…` id.
    pub file_id: String,
    pub filename: String,
    pub score: f64,
    pub text: String,
    /// `attributes`: string, number or boolean values.
    pub attributes: Map<String, Value>,
}

/// A vector-store executor; a request never selects one.
pub trait VectorStoreBackend: Send + Sync + Debug {
    /// `embedded` or `remote`.
    fn kind(&self) -> &'static str;
    /// Whether the store `id` exists for `project` (the request's tenant): `Ok(false)` for
    /// an unknown id or another project's, `Err` (a message without credentials) when the
    /// executor cannot tell. A remote executor's stores are the operator's, shared by every
    /// project (it ignores `project`).
    fn has_store<'a>(&'a self, project: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, String>>;
    /// Searches one store. `Err` is a message for the model and the failed item; it never
    /// contains credentials or backend payloads.
    fn search<'a>(&'a self, store_id: &'a str, req: &'a FileSearchRequest) -> BoxFuture<'a, Result<Vec<FileHit>, String>>;
}
