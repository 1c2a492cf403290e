//! `[store]` configuration: which backend keeps stored responses and conversations.
//! Secrets (the PostgreSQL URL, which may carry a password) come only from the environment
//! variable named by `url_env`; they are never in the file, in errors or in logs.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `store.backend`: `sqlite` (embedded, one process) or `postgres` (shared by replicas).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    #[default]
    Sqlite,
    Postgres,
}

/// `[store]` (every key documented in `docs/config.example.toml`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `sqlite` (default) or `postgres`.
    pub backend: BackendKind,
    /// SQLite database file; default `<data_dir>/store.sqlite3`. Created when missing.
    pub path: Option<PathBuf>,
    /// Name of the environment variable holding the PostgreSQL URL
    /// (`postgres://user:password@host:5432/db`). Required for `postgres`.
    pub url_env: Option<String>,
    /// Largest number of pooled database connections. Default 8.
    pub max_connections: u32,
    /// How long a request waits for a database connection (and the start-up connect),
    /// milliseconds; then the request gets 503 (at start: the process exits). Default 5000.
    pub acquire_timeout_ms: u64,
    /// Lifetime of a conversation lease, milliseconds. A running turn renews it every third
    /// of this; a replica that dies holding one blocks the conversation at most this long.
    /// Default 30000.
    pub lease_ttl_ms: u64,
    /// Largest stored value (a response, its input items or its transcript) that is loaded,
    /// in characters; a larger one is answered with 500 instead of being read. Default 64 MiB.
    pub max_row_chars: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            backend: BackendKind::Sqlite,
            path: None,
            url_env: None,
            max_connections: 8,
            acquire_timeout_ms: 5_000,
            lease_ttl_ms: 30_000,
            max_row_chars: 64 * 1024 * 1024,
        }
    }
}

impl StoreConfig {
    /// Checks ranges and that `postgres` names `url_env` (not that the variable is set:
    /// that is checked when the store opens, so `check-config` works without the secret).
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.max_connections == 0 || self.acquire_timeout_ms == 0 || self.lease_ttl_ms < 3 || self.max_row_chars == 0 {
            anyhow::bail!("store.max_connections, store.acquire_timeout_ms, store.max_row_chars must be > 0 and store.lease_ttl_ms >= 3");
        }
        if self.backend == BackendKind::Postgres && self.url_env.as_deref().is_none_or(str::is_empty) {
            anyhow::bail!("store.backend = \"postgres\" needs store.url_env: the name of the environment variable holding the database URL");
        }
        Ok(())
    }
}
