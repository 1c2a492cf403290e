//! `[auth]` (inbound API keys) and `[metrics]` (the Prometheus endpoint). Keys are never
//! in the file: the file names the environment variables, or a key file, that hold them.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The project a key belongs to when none is named.
pub const DEFAULT_PROJECT: &str = "default";

/// `[auth]`: the API keys clients send as `Authorization: Bearer <key>`. With no key
/// configured, `/v1/*` is open (as before); with any, every `/v1/*` request needs one.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// Keys each read from an environment variable (`[[auth.keys]]`).
    pub keys: Vec<KeyFromEnv>,
    /// A file of keys, one per line: `KEY`, or `PROJECT KEY`; blank lines and lines starting
    /// with `#` are skipped.
    pub keys_file: Option<PathBuf>,
}

/// `[[auth.keys]]`: one key, read from the environment variable `env`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyFromEnv {
    /// Name of the environment variable holding the key.
    pub env: String,
    /// The project (tenant) the key belongs to; default `default`.
    #[serde(default)]
    pub project: Option<String>,
}

/// `[metrics]`: Prometheus text exposition at `GET /metrics`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Serve `/metrics` and record metrics (default false).
    pub enabled: bool,
    /// Serve `/metrics` on this address only (e.g. `127.0.0.1:9090`) instead of on
    /// `server.listen`. Default: unset (the main listener).
    pub listen: Option<SocketAddr>,
    /// `/metrics` needs an API key of `[auth]` like `/v1/*` (default false: Prometheus
    /// scrapes it without one). Has no effect while no key is configured.
    pub require_key: bool,
}
