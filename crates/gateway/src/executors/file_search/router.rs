//! Which executor serves a vector store id: the embedded store first, then the explicit
//! `[file_search.stores]` table, then `[file_search].default` (contract-independent; issue 5
//! "configuration"). Also the parallel fan-out of one query over several stores.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::config::FileSearchConfig;
use super::{FileHit, FileSearchRequest, VectorStoreBackend};
use crate::config::Config;
use crate::executors::vector_store::RemoteVectorStore;

/// The name of the embedded executor in `[file_search]` tables.
pub const EMBEDDED: &str = "embedded";

const NOT_CONFIGURED: &str =
    "file_search is not configured: the embedded store is disabled (file_search.embedded.enabled) and no [file_search.remotes.*] is set";

/// Resolves store ids to executors. Remotes that could not be built (a key variable unset, a
/// bad URL) are kept as the message naming the setting, surfaced when a request uses them.
#[derive(Debug, Clone, Default)]
pub struct FileSearchRouter {
    embedded: Option<Arc<dyn VectorStoreBackend>>,
    remotes: BTreeMap<String, Result<Arc<dyn VectorStoreBackend>, String>>,
    stores: BTreeMap<String, String>,
    default: String,
    /// Bounds one call's whole fan-out.
    pub timeout: Duration,
}

/// Why a store id cannot be searched: `Unknown` (400 naming the id) or `NotConfigured`
/// (400 naming the missing setting).
#[derive(Debug, Clone, PartialEq)]
pub enum ResolveError {
    Unknown(String),
    NotConfigured(String),
}

impl FileSearchRouter {
    /// Builds the remotes of `[file_search.remotes.*]`; `embedded` is the local index when
    /// enabled.
    pub fn from_config(c: &FileSearchConfig, embedded: Option<Arc<dyn VectorStoreBackend>>) -> FileSearchRouter {
        let mut remotes = BTreeMap::new();
        for (name, r) in &c.remotes {
            let built = (|| -> Result<Arc<dyn VectorStoreBackend>, String> {
                let url = r.url.as_deref().ok_or_else(|| format!("file_search is not configured: file_search.remotes.{name}.url is not set"))?;
                let key_setting = format!("file_search.remotes.{name}.api_key_env");
                let key = Config::secret(r.api_key_env.as_deref(), &key_setting).map_err(|e| format!("file_search is not configured: {e}"))?;
                let remote = RemoteVectorStore::new(url, key, r.api_key_env.clone(), Duration::from_millis(c.timeout_ms))
                    .map_err(|e| format!("file_search is not configured: file_search.remotes.{name}: {e}"))?;
                Ok(Arc::new(remote))
            })();
            if let Err(why) = &built {
                tracing::warn!("{why}");
            }
            remotes.insert(name.clone(), built);
        }
        FileSearchRouter {
            embedded,
            remotes,
            stores: c.stores.clone(),
            default: c.default.clone(),
            timeout: Duration::from_millis(c.timeout_ms),
        }
    }

    /// Whether a request's `file_search` can run here: the embedded store is on, or one
    /// remote is usable. `Err` is the message a request would get (naming the setting).
    pub fn availability(&self) -> Result<(), String> {
        if self.embedded.is_some() || self.remotes.values().any(Result::is_ok) {
            return Ok(());
        }
        match self.remotes.values().find_map(|r| r.as_ref().err()) {
            Some(why) => Err(why.clone()),
            None => Err(NOT_CONFIGURED.to_string()),
        }
    }

    /// Sets the embedded executor (the local index, opened after the registry).
    pub fn set_embedded(&mut self, embedded: Option<Arc<dyn VectorStoreBackend>>) {
        self.embedded = embedded;
    }

    fn executor(&self, name: &str) -> Result<Option<Arc<dyn VectorStoreBackend>>, ResolveError> {
        if name == EMBEDDED {
            return Ok(None);
        }
        match self.remotes.get(name) {
            Some(Ok(r)) => Ok(Some(r.clone())),
            Some(Err(why)) => Err(ResolveError::NotConfigured(why.clone())),
            None => Err(ResolveError::NotConfigured(format!(
                "file_search is not configured: executor '{name}' (named in [file_search]) has no [file_search.remotes.{name}] table"
            ))),
        }
    }

    /// The executor of store `id` for `project`. The embedded store is asked first (for the
    /// project's stores only); a remote is asked
    /// with a GET, and only its definite "no such store" makes the id unknown (a remote that
    /// cannot answer now is used anyway: its search then fails visibly in the item).
    pub async fn resolve(&self, project: &str, id: &str) -> Result<Arc<dyn VectorStoreBackend>, ResolveError> {
        if let Some(e) = &self.embedded {
            if e.has_store(project, id).await.unwrap_or(false) {
                return Ok(e.clone());
            }
        }
        let (name, explicit) = match self.stores.get(id) {
            Some(n) => (n.as_str(), true),
            None => (self.default.as_str(), false),
        };
        let remote = match self.executor(name)? {
            Some(r) => r,
            None if self.embedded.is_none() && explicit => {
                return Err(ResolveError::NotConfigured(format!(
                    "file_search is not configured: vector store '{id}' maps to the embedded store, which is disabled (file_search.embedded.enabled)"
                )))
            }
            None if self.embedded.is_none() && self.remotes.is_empty() => return Err(ResolveError::NotConfigured(NOT_CONFIGURED.into())),
            None => return Err(ResolveError::Unknown(id.to_string())),
        };
        match remote.has_store(project, id).await {
            Ok(true) => Ok(remote),
            Ok(false) => Err(ResolveError::Unknown(id.to_string())),
            Err(why) => {
                tracing::warn!(vector_store_id = id, "could not check the vector store: {why}");
                Ok(remote)
            }
        }
    }
}

/// One query over several stores in parallel (bounded by `timeout`), merged by score
/// (highest first), cut to `req.max_num_results`. Hits below `req.score_threshold` and hits
/// whose attributes fail `req.filters` are dropped here too, whatever the executor did.
/// `Err` when every store failed (the first message) or on timeout.
pub async fn search_all(stores: &[(String, Arc<dyn VectorStoreBackend>)], req: &FileSearchRequest, timeout: Duration) -> Result<Vec<FileHit>, String> {
    let runs = stores.iter().map(|(id, backend)| backend.search(id, req));
    let results = tokio::time::timeout(timeout, futures_util::future::join_all(runs))
        .await
        .map_err(|_| format!("the file search timed out after {} ms", timeout.as_millis()))?;
    let mut hits = Vec::new();
    let mut first_err = None;
    let mut ok = 0;
    for r in results {
        match r {
            Ok(h) => {
                ok += 1;
                hits.extend(h);
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if ok == 0 {
        if let Some(e) = first_err {
            return Err(e);
        }
    }
    if let Some(e) = &first_err {
        tracing::warn!("one vector store of a file search failed: {e}");
    }
    hits.retain(|h| h.score >= req.score_threshold);
    if let Some(f) = &req.filters {
        hits.retain(|h| super::filters::matches(f, &h.attributes));
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(req.max_num_results.clamp(1, 50) as usize);
    Ok(hits)
}
