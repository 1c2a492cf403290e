//! `[file_search]` configuration: which executor serves which vector store, the embedded
//! store's limits and its optional embeddings. Secrets come only from the environment
//! variables named by `*_env` keys. Documented key by key in `docs/config.example.toml`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[file_search]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileSearchConfig {
    /// Executor for a store id that is neither in the embedded store nor in `stores`:
    /// `embedded` (default: such an id is unknown) or the name of a `[file_search.remotes.*]`.
    pub default: String,
    /// Explicit store id → executor name (`embedded` or a remote's name).
    pub stores: BTreeMap<String, String>,
    /// Remote OpenAI-compatible vector store APIs (OGX and others), by name.
    pub remotes: BTreeMap<String, RemoteStoreConfig>,
    /// The embedded Files + Vector Stores API and its local index.
    pub embedded: EmbeddedConfig,
    /// Timeout of one search (all stores of one call), milliseconds. Default 10000.
    pub timeout_ms: u64,
}

impl Default for FileSearchConfig {
    fn default() -> Self {
        FileSearchConfig {
            default: "embedded".into(),
            stores: BTreeMap::new(),
            remotes: BTreeMap::new(),
            embedded: EmbeddedConfig::default(),
            timeout_ms: 10_000,
        }
    }
}

/// `[file_search.remotes.<name>]`: an OpenAI-compatible vector store API.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RemoteStoreConfig {
    /// Base URL including `/v1`, e.g. `http://127.0.0.1:8321/v1` (OGX).
    pub url: Option<String>,
    /// Name of the environment variable holding the Bearer key (optional).
    pub api_key_env: Option<String>,
}

/// `[file_search.embedded]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddedConfig {
    /// Serve `/v1/files` and `/v1/vector_stores` from the local index. Default true.
    pub enabled: bool,
    /// Directory of the index and the uploaded files; default `<data_dir>/vector_stores`.
    pub path: Option<PathBuf>,
    /// Largest upload, bytes (larger → 413). Default 32 MiB.
    pub max_upload_bytes: usize,
    /// Optional embeddings for hybrid search (BM25 + vectors, reciprocal-rank fusion).
    pub embeddings: EmbeddingsConfig,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        EmbeddedConfig { enabled: true, path: None, max_upload_bytes: 32 * 1024 * 1024, embeddings: EmbeddingsConfig::default() }
    }
}

/// `embeddings.backend`: none (keyword search only), an OpenAI-compatible endpoint, or the
/// local all-MiniLM-L6-v2 (cargo feature `minilm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EmbeddingsBackend {
    #[default]
    None,
    Openai,
    Minilm,
}

/// `[file_search.embedded.embeddings]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddingsConfig {
    pub backend: EmbeddingsBackend,
    /// `openai`: base URL including `/v1` (`POST {url}/embeddings`).
    pub url: Option<String>,
    /// `openai`: environment variable holding the Bearer key (optional).
    pub api_key_env: Option<String>,
    /// `openai`: the embedding model name.
    pub model: Option<String>,
    /// `minilm`: directory holding `config.json`, `tokenizer.json` and `model.safetensors`.
    pub model_dir: Option<PathBuf>,
    /// Timeout of one embeddings call, milliseconds. Default 30000.
    pub timeout_ms: u64,
}

impl Default for EmbeddingsConfig {
    fn default() -> Self {
        EmbeddingsConfig { backend: EmbeddingsBackend::None, url: None, api_key_env: None, model: None, model_dir: None, timeout_ms: 30_000 }
    }
}
