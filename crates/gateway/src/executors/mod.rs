//! Executors: where gateway-owned tools run, configured per deployment and kept apart
//! from the handlers that say what a tool means (DESIGN.md "Layout").

pub mod components;
pub mod embeddings;
pub mod file_search;
pub mod http_search;
pub mod local_index;
pub mod mcp;
pub mod openai_search;
pub mod vector_store;
pub mod web_search;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use std::time::Duration;

use crate::config::{Config, WebSearchBackendKind, WebSearchConfig};
use http_search::HttpSearch;
use openai_search::OpenAiSearch;
use web_search::SearchBackend;

/// A server-owned custom tool (`{"type":"custom","name":…}` naming a registered tool). The
/// server owns its description and its free-form input contract.
pub trait ServerTool: Send + Sync + Debug {
    /// The registered name, e.g. `package_version`.
    fn name(&self) -> &str;
    /// The description the model sees (a client's description is ignored).
    fn description(&self) -> String;
    /// A short progress line for streams, e.g. "Looking up the installed version of axum".
    fn progress(&self, input: &str) -> String;
    /// Runs the tool on the raw input. `Err` is a message the model can read; it becomes
    /// an output starting `error: ` with `status: "incomplete"`.
    fn run<'a>(&'a self, input: &'a str) -> BoxFuture<'a, Result<String, String>>;
}

/// The executors this deployment configures: server tools by name, and the web-search
/// backend (or why there is none, naming the missing setting).
#[derive(Debug, Clone)]
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn ServerTool>>,
    pub web_search: Result<Arc<dyn SearchBackend>, String>,
    /// Which executor serves each vector store (`[file_search]`).
    pub file_search: file_search::FileSearchRouter,
    /// The MCP servers requests may name, and how they are reached (`[mcp]`).
    pub mcp: Arc<mcp::McpServers>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            tools: BTreeMap::new(),
            web_search: Err(NO_WEB_SEARCH.to_string()),
            file_search: Default::default(),
            mcp: Arc::new(mcp::McpServers::default()),
        }
    }
}

const NO_WEB_SEARCH: &str =
    "web_search is not configured on this gateway: set `backend` (http or openai) in [web_search]";

/// The web-search backend of `[web_search]`, or a message naming what is missing.
fn web_search_backend(c: &WebSearchConfig) -> Result<Arc<dyn SearchBackend>, String> {
    let err = |e: anyhow::Error| e.to_string();
    match c.backend {
        None => Err(NO_WEB_SEARCH.to_string()),
        Some(WebSearchBackendKind::Http) => {
            let url = c.http.url.as_deref().ok_or("web_search is not configured: web_search.http.url is not set")?;
            let key = Config::secret(c.http.api_key_env.as_deref(), "web_search.http.api_key_env").map_err(err)?;
            let backend = HttpSearch::new(url, key, Duration::from_millis(c.http.timeout_ms)).map_err(err)?;
            Ok(Arc::new(backend))
        }
        Some(WebSearchBackendKind::Openai) => {
            let url = c.openai.url.as_deref().ok_or("web_search is not configured: web_search.openai.url is not set")?;
            let model = c.openai.model.clone().ok_or("web_search is not configured: web_search.openai.model is not set")?;
            let key = Config::secret(c.openai.api_key_env.as_deref(), "web_search.openai.api_key_env").map_err(err)?;
            let backend = OpenAiSearch::new(url, key, model, Duration::from_millis(c.openai.timeout_ms)).map_err(err)?;
            Ok(Arc::new(backend))
        }
    }
}

impl Registry {
    /// Registers the tools enabled in `config.server_tools`, the web-search backend and the
    /// file-search executors (`embedded`: the local index, when enabled and opened).
    pub fn from_config(config: &Config, embedded: Option<Arc<dyn file_search::VectorStoreBackend>>) -> Registry {
        let mut r = Registry {
            web_search: web_search_backend(&config.web_search),
            file_search: file_search::FileSearchRouter::from_config(&config.file_search, embedded),
            mcp: Arc::new(mcp::McpServers::from_config(&config.mcp)),
            ..Registry::default()
        };
        if let Err(why) = &r.web_search {
            if config.web_search.backend.is_some() {
                tracing::warn!("{why}");
            }
        }
        let pv = &config.server_tools.package_version;
        if pv.enabled {
            r.register(Arc::new(components::PackageVersion::new(pv.allow.clone())));
        }
        r
    }

    /// Adds a tool (replacing one of the same name).
    pub fn register(&mut self, tool: Arc<dyn ServerTool>) {
        self.tools.insert(tool.name().to_string(), tool);
    }

    /// The tool registered under `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ServerTool>> {
        self.tools.get(name)
    }

    /// True when `name` is a registered server tool.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The registered server tools' names, in order.
    pub fn server_tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }
}
