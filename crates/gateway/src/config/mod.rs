//! Configuration: built-in defaults < TOML file < `RESPONSES_GATEWAY_<TABLE>__<KEY>`
//! environment variables < command-line flags. Secrets are never in the file: the file
//! names the environment variable that holds them. Every key is documented in
//! `docs/config.example.toml`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};

pub mod auth;
pub mod background;
pub mod mcp;
pub mod file_search;
pub mod limits;
pub mod seal;
pub mod store;
pub mod telemetry;
pub mod websocket;

/// The whole configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub upstream: UpstreamConfig,
    /// Public model name → upstream model name. When set, only these names are served
    /// (others get 404 `model_not_found`); when absent, `model` passes through.
    pub models: Option<BTreeMap<String, String>>,
    pub tools: ToolsConfig,
    pub server_tools: ServerToolsConfig,
    pub web_search: WebSearchConfig,
    /// `[file_search]`: executors per vector store, the embedded store and its embeddings.
    pub file_search: file_search::FileSearchConfig,
    /// `[store]`: where stored responses and conversations live (see [`store::StoreConfig`]).
    pub store: store::StoreConfig,
    /// `[auth]`: inbound API keys (see [`auth::AuthConfig`]).
    pub auth: auth::AuthConfig,
    /// `[websocket]`: WebSocket mode's bounds (see [`websocket::WebSocketConfig`]).
    pub websocket: websocket::WebSocketConfig,
    /// `[metrics]`: the Prometheus endpoint (see [`auth::MetricsConfig`]).
    pub metrics: auth::MetricsConfig,
    /// `[limits]`: rates, streams and upstream slots, size ceilings (see [`limits::LimitsConfig`]).
    pub limits: limits::LimitsConfig,
    /// `[log]`: the log's format (see [`telemetry::LogConfig`]).
    pub log: telemetry::LogConfig,
    /// `[otel]`: OpenTelemetry traces (see [`telemetry::OtelConfig`]).
    pub otel: telemetry::OtelConfig,
    /// `[background]`: workers and queue of background responses (see [`background::BackgroundConfig`]).
    pub background: background::BackgroundConfig,
    /// `[mcp]`: allowed MCP servers and their timeouts (see [`mcp::McpConfig`]).
    pub mcp: mcp::McpConfig,
    /// `[seal]`: the key of the gateway's sealed items (see [`seal::SealConfig`]).
    pub seal: seal::SealConfig,
}

/// `[web_search]`: where gateway-owned web searches run. A request never selects a backend.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebSearchConfig {
    /// `http` (SearXNG / Degoog) or `openai` (an upstream Responses model's native search).
    /// Unset: `web_search` declarations get a 400 naming this setting.
    pub backend: Option<WebSearchBackendKind>,
    pub http: HttpSearchConfig,
    pub openai: OpenAiSearchConfig,
}

/// `web_search.backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebSearchBackendKind {
    Http,
    Openai,
}

/// `[web_search.http]`: one JSON GET to `url` with `q=…&format=json` appended.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSearchConfig {
    /// The whole endpoint, e.g. `https://searx.example/search` or `https://degoog.example/api/search`.
    pub url: Option<String>,
    /// Environment variable holding an optional Bearer key.
    pub api_key_env: Option<String>,
    /// Request timeout, milliseconds (default 10000).
    pub timeout_ms: u64,
}

impl Default for HttpSearchConfig {
    fn default() -> Self {
        HttpSearchConfig { url: None, api_key_env: None, timeout_ms: 10_000 }
    }
}

/// `[web_search.openai]`: a private upstream Responses call with native web search.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OpenAiSearchConfig {
    /// OpenAI base URL including `/v1`.
    pub url: Option<String>,
    /// Environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Model that runs the search.
    pub model: Option<String>,
    /// Request timeout, milliseconds (default 60000).
    pub timeout_ms: u64,
}

impl Default for OpenAiSearchConfig {
    fn default() -> Self {
        OpenAiSearchConfig { url: None, api_key_env: None, model: None, timeout_ms: 60_000 }
    }
}

/// `[tools]`: the agent loop's bounds for gateway-owned tools.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    /// Upstream rounds per turn; the last one goes upstream without tools. Default 8.
    pub max_rounds: usize,
    /// Gateway tool calls of one round run in parallel, at most this many at once. Default 4.
    pub max_parallel: usize,
    /// Timeout of one gateway tool call, in milliseconds. Default 30000.
    pub call_timeout_ms: u64,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig { max_rounds: 8, max_parallel: 4, call_timeout_ms: 30_000 }
    }
}

/// `[server_tools]`: server-owned custom tools a client selects by name.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerToolsConfig {
    pub package_version: PackageVersionConfig,
}

/// `[server_tools.package_version]`: reports installed component versions.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PackageVersionConfig {
    /// On by default.
    pub enabled: bool,
    /// Components it answers for; any other name gets an error listing these.
    pub allow: Vec<String>,
}

/// The gateway's own component name (`package_version`'s first allowed name).
pub const SELF_NAME: &str = "responses-gateway";

/// `package_version`'s default allowlist: the gateway itself and its main runtime crates.
pub fn default_allow() -> Vec<String> {
    [SELF_NAME, "tokio", "axum", "reqwest", "hyper", "serde"].iter().map(|s| s.to_string()).collect()
}

impl Default for PackageVersionConfig {
    fn default() -> Self {
        PackageVersionConfig { enabled: true, allow: default_allow() }
    }
}

/// `[server]`: the gateway's own HTTP side.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Listen address; default `127.0.0.1:8080` (never all interfaces by default).
    pub listen: SocketAddr,
    /// Data directory; default `$XDG_DATA_HOME/responses-gateway`.
    pub data_dir: Option<PathBuf>,
    /// Unknown top-level request fields: ignored (false, default) or 400 `unknown_parameter`.
    pub reject_unknown_parameters: bool,
    /// SSE keep-alive comment interval while nothing else is sent, in milliseconds.
    pub keepalive_interval_ms: u64,
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
    /// Longest wait for a request's head, also a new connection's first byte (the
    /// connection is then closed), or for the next piece of its body (408, and the
    /// connection freed), in milliseconds. Default 30000.
    pub request_read_timeout_ms: u64,
    /// Longest time for a whole request body, from its head, in milliseconds: past it the
    /// answer is 408 and the connection is closed. Default 60000.
    pub request_body_timeout_ms: u64,
    /// Browser origins (`scheme://host[:port]`) allowed to call the API besides the page's
    /// own (the playground): their CORS preflights are answered. A request with any other
    /// `Origin` is a 403. Default none.
    pub cors_origins: Vec<String>,
    /// Host names (with or without `:port`) the gateway answers to besides loopback ones on
    /// a loopback listener; on any other listener, when set, the only ones (403 otherwise).
    /// Guards against DNS rebinding. Default none.
    pub allowed_hosts: Vec<String>,
    /// Serve the browser playground at `/` and `/playground` (default true; false: 404).
    pub playground: bool,
    /// On SIGTERM/Ctrl-C, how long running turns may go on, in milliseconds; then they end
    /// `incomplete` (stored turns are stored so) and the process exits. Default 30000.
    pub shutdown_grace_ms: u64,
}

/// `upstream.api`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamApiKind {
    /// `POST {url}/chat/completions`.
    #[default]
    Chat,
    /// `POST {url}/responses`.
    Responses,
}

/// Tool types an upstream may take natively (`upstream.native_tools`): `custom` on either
/// API; the hosted `file_search` and `web_search` only on a Responses upstream.
pub const NATIVE_TOOL_TYPES: [&str; 3] = ["custom", "file_search", "web_search"];

/// Domains whose hosts execute hosted tools themselves (OpenAI runs `web_search` and
/// `file_search` on its side; any host of these domains, e.g. `eu.api.openai.com`): a
/// native declaration there would not come back as a call for the gateway.
const SELF_EXECUTING_DOMAINS: [&str; 2] = ["openai.com", "openai.azure.com"];

/// `[upstream]`: the model server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UpstreamConfig {
    /// OpenAI base URL including `/v1`, e.g. `http://127.0.0.1:8000/v1`.
    pub url: Option<String>,
    /// The wire API the upstream speaks: `chat` (`/chat/completions`, the default) or
    /// `responses` (`/responses`).
    pub api: UpstreamApiKind,
    /// Name of the environment variable holding the upstream API key (sent as Bearer).
    pub api_key_env: Option<String>,
    /// Longest silence from the upstream (before headers or between chunks), milliseconds.
    pub idle_timeout_ms: u64,
    /// TCP connect timeout, milliseconds.
    pub connect_timeout_ms: u64,
    /// Idle pooled connections to the upstream are closed after this long, milliseconds.
    pub pool_idle_timeout_ms: u64,
    /// Tool types this upstream renders natively and returns as typed calls for the gateway
    /// to execute, instead of functions: `custom` (both APIs), and on a Responses upstream
    /// `file_search` and `web_search` (the gateway still runs the search). Default none.
    pub native_tools: Vec<String>,
    /// Which assistant messages carry the model's reasoning back to a chat upstream, in the
    /// field the server wrote it in (`reasoning_content` or `reasoning`): `tool_rounds`
    /// (the default), `always` or `never`. A Responses upstream always gets its reasoning
    /// items back.
    pub reasoning_handback: ReasoningHandback,
}

/// `upstream.reasoning_handback` (docs/behaviour.md "Reasoning models").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningHandback {
    /// The assistant messages of a user turn in which the model called tools (its call
    /// rounds and the answer that ends them), as DeepSeek (V3.2, V4), Kimi K2 and gpt-oss
    /// require and Qwen3's template renders; a plain chat turn's reasoning is left out
    /// (deepseek-reasoner refuses it, others ignore it).
    #[default]
    ToolRounds,
    /// Every assistant message that has reasoning.
    Always,
    /// None (servers that refuse the field).
    Never,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: None,
            reject_unknown_parameters: false,
            keepalive_interval_ms: 15_000,
            max_body_bytes: 32 * 1024 * 1024,
            request_read_timeout_ms: 30_000,
            request_body_timeout_ms: 60_000,
            cors_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            playground: true,
            shutdown_grace_ms: 30_000,
        }
    }
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        UpstreamConfig {
            url: None,
            api: UpstreamApiKind::Chat,
            api_key_env: None,
            idle_timeout_ms: 120_000,
            connect_timeout_ms: 10_000,
            pool_idle_timeout_ms: 4_000,
            native_tools: Vec::new(),
            reasoning_handback: ReasoningHandback::ToolRounds,
        }
    }
}

/// Values given on the command line; `None` leaves the lower layers in force.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Overrides {
    pub upstream_url: Option<String>,
    pub upstream_api_key_env: Option<String>,
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub log_format: Option<telemetry::LogFormat>,
}

/// Environment variable prefix: `RESPONSES_GATEWAY_<TABLE>__<KEY>`.
pub const ENV_PREFIX: &str = "RESPONSES_GATEWAY_";

impl Config {
    /// Loads defaults, then `file` (if any), then the environment, then `overrides`.
    /// Errors name the offending key (e.g. an unknown key in the file) or the missing setting.
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> anyhow::Result<Config> {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = file {
            if !path.exists() {
                anyhow::bail!("config file {} does not exist", path.display());
            }
            fig = fig.merge(Toml::file(path));
        }
        // Only `<TABLE>__<KEY>` names are settings; other variables that happen to share the
        // prefix (e.g. RESPONSES_GATEWAY_TEST_POSTGRES_URL) are not.
        fig = fig.merge(Env::prefixed(ENV_PREFIX).filter(|k| k.as_str().contains("__")).split("__"));
        let mut config: Config = fig.extract().map_err(|e| anyhow::anyhow!("configuration: {e}"))?;
        if let Some(url) = &overrides.upstream_url {
            config.upstream.url = Some(url.clone());
        }
        if let Some(var) = &overrides.upstream_api_key_env {
            config.upstream.api_key_env = Some(var.clone());
        }
        if let Some(listen) = overrides.listen {
            config.server.listen = listen;
        }
        if let Some(dir) = &overrides.data_dir {
            config.server.data_dir = Some(dir.clone());
        }
        if let Some(format) = overrides.log_format {
            config.log.format = format;
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks required settings and value ranges.
    pub fn validate(&self) -> anyhow::Result<()> {
        let Some(url) = &self.upstream.url else {
            anyhow::bail!(
                "upstream.url is not set (use --upstream-url, `url` in [upstream], or {ENV_PREFIX}UPSTREAM__URL)"
            );
        };
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| anyhow::anyhow!("upstream.url is not a valid URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            anyhow::bail!("upstream.url must be http or https");
        }
        if self.tools.max_rounds == 0 || self.tools.max_parallel == 0 || self.tools.call_timeout_ms == 0 {
            anyhow::bail!("tools.max_rounds, tools.max_parallel and tools.call_timeout_ms must be > 0");
        }
        if let Some(t) = self.upstream.native_tools.iter().find(|t| !NATIVE_TOOL_TYPES.contains(&t.as_str())) {
            anyhow::bail!("upstream.native_tools: '{t}' has no native form here (known: {})", NATIVE_TOOL_TYPES.join(", "));
        }
        if let Some(t) = self.upstream.native_tools.iter().find(|t| *t != "custom") {
            if self.upstream.api != UpstreamApiKind::Responses {
                anyhow::bail!("upstream.native_tools: '{t}' has a native form only on a Responses upstream (upstream.api = \"responses\")");
            }
            let host = parsed.host_str().unwrap_or_default().trim_end_matches('.').to_ascii_lowercase();
            if SELF_EXECUTING_DOMAINS.iter().any(|d| host == *d || host.strip_suffix(d).is_some_and(|h| h.ends_with('.'))) {
                anyhow::bail!(
                    "upstream.native_tools: '{t}' would be executed by this upstream itself, not returned to the gateway; \
                     declare it as a function (leave it out of native_tools), or use [web_search] backend = \"openai\" for OpenAI's own search"
                );
            }
        }
        if self.server.keepalive_interval_ms == 0
            || self.upstream.idle_timeout_ms == 0
            || self.server.request_read_timeout_ms == 0
            || self.server.request_body_timeout_ms == 0
        {
            anyhow::bail!("server.keepalive_interval_ms, server.request_read_timeout_ms, server.request_body_timeout_ms and upstream.idle_timeout_ms must be > 0");
        }
        for origin in &self.server.cors_origins {
            let ok = reqwest::Url::parse(origin).is_ok_and(|u| {
                matches!(u.scheme(), "http" | "https") && u.host().is_some() && u.path() == "/" && u.query().is_none() && u.username().is_empty()
            });
            if !ok || origin.trim_end_matches('/').matches('/').count() != 2 {
                anyhow::bail!("server.cors_origins: '{origin}' is not an origin (scheme://host[:port], e.g. https://app.example)");
            }
        }
        if let Some(h) = self.server.allowed_hosts.iter().find(|h| h.is_empty() || h.contains(['/', '@', ' ', '*'])) {
            anyhow::bail!("server.allowed_hosts: '{h}' is not a host name (name or name:port)");
        }
        self.limits.validate()?;
        self.store.validate()?;
        self.seal.validate()?;
        if self.metrics.listen.is_some_and(|l| l == self.server.listen) {
            anyhow::bail!("metrics.listen must differ from server.listen (leave it unset to serve /metrics there)");
        }
        if let Some(endpoint) = self.otel.endpoint.as_deref().filter(|e| !e.trim().is_empty()) {
            // The URL itself is not repeated: it may hold credentials.
            let ok = reqwest::Url::parse(endpoint).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
            if !ok {
                anyhow::bail!("otel.endpoint must be an http or https URL (e.g. http://127.0.0.1:4318)");
            }
        }
        if self.otel.timeout_ms == 0 {
            anyhow::bail!("otel.timeout_ms must be > 0");
        }
        Ok(())
    }

    /// The data directory: the configured one, else `$XDG_DATA_HOME/responses-gateway`.
    pub fn data_dir(&self) -> PathBuf {
        self.server.data_dir.clone().unwrap_or_else(|| {
            dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("responses-gateway")
        })
    }

    /// Reads a secret from the environment variable `var` named by the setting `setting`,
    /// without surrounding whitespace (a key saved with `echo` ends in a line break).
    /// `Ok(None)` when no variable is named. Errors name both, never the value: unset or
    /// blank, or holding a control character (it could not be sent in an HTTP header).
    pub fn secret(var: Option<&str>, setting: &str) -> anyhow::Result<Option<String>> {
        let Some(var) = var else { return Ok(None) };
        let value = std::env::var(var).unwrap_or_default();
        let value = value.trim();
        if value.is_empty() {
            anyhow::bail!("environment variable {var} ({setting}) is not set");
        }
        if value.chars().any(char::is_control) {
            anyhow::bail!("environment variable {var} ({setting}) holds a control character (a line break inside the value?)");
        }
        Ok(Some(value.to_string()))
    }

    /// Reads the upstream API key from the environment variable named by
    /// `upstream.api_key_env`. Errors when the variable is named but unset.
    pub fn upstream_api_key(&self) -> anyhow::Result<Option<String>> {
        Config::secret(self.upstream.api_key_env.as_deref(), "upstream.api_key_env")
    }

    /// Checks that the secrets `serve` needs at start are set (the upstream key, a
    /// PostgreSQL store's URL) without returning them: `check-config` fails where `serve`
    /// would. Errors name the variable and the setting.
    pub fn check_start_secrets(&self) -> anyhow::Result<()> {
        self.upstream_api_key()?;
        if let Some(var) = self.seal.key_env.as_deref() {
            Config::secret(Some(var), "seal.key_env")?;
        }
        if self.store.backend == store::BackendKind::Postgres {
            let var = self.store.url_env.as_deref().ok_or_else(|| anyhow::anyhow!("store.url_env is not set"))?;
            Config::secret(Some(var), "store.url_env")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let p = dir.join("c.toml");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn unknown_key_in_file_is_named() {
        let dir = std::env::temp_dir().join(format!("rg-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = write(&dir, "[upstream]\nurl = \"http://x/v1\"\napi_key = \"secret\"\n");
        let err = Config::load(Some(&p), &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains("api_key"), "{err}");
        let p = write(&dir, "[server]\nlisten = \"127.0.0.1:1\"\n[upstream]\nurl = \"http://x/v1\"\n");
        let c = Config::load(Some(&p), &Overrides::default()).unwrap();
        assert_eq!(c.server.listen.port(), 1);
        let o = Overrides { listen: Some("127.0.0.1:2".parse().unwrap()), ..Default::default() };
        let c = Config::load(Some(&p), &o).unwrap();
        assert_eq!(c.server.listen.port(), 2, "flags win over the file");
    }

    #[test]
    fn only_table_key_variables_are_settings() {
        std::env::set_var("RESPONSES_GATEWAY_SOME_UNRELATED_URL", "x");
        let o = Overrides { upstream_url: Some("http://127.0.0.1:1/v1".into()), ..Default::default() };
        let loaded = Config::load(None, &o);
        std::env::remove_var("RESPONSES_GATEWAY_SOME_UNRELATED_URL");
        assert!(loaded.is_ok(), "{:?}", loaded.err());
    }

    #[test]
    fn missing_url_is_named() {
        let err = Config::default().validate().unwrap_err().to_string();
        assert!(err.contains("upstream.url"), "{err}");
    }

    #[test]
    fn defaults_listen_on_loopback() {
        assert!(Config::default().server.listen.ip().is_loopback());
    }
}

#[cfg(test)]
mod example_tests {
    use super::*;

    /// docs/config.example.toml must stay loadable: every key it names exists.
    #[test]
    fn example_config_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.example.toml");
        let c = Config::load(Some(&path), &Overrides::default()).expect("example config loads");
        assert_eq!(c.upstream.idle_timeout_ms, 120_000);
        assert_eq!(c.server.keepalive_interval_ms, 15_000);
        assert_eq!(c.log.format, telemetry::LogFormat::Text);
        assert!(!c.otel.enabled && c.otel.timeout_ms == 10_000);
    }
}
