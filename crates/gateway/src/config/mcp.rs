//! `[mcp]`: where a request's MCP servers may be (issue 18 "Security") and how long the
//! gateway waits for them (issue 18 "Transport").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `[mcp]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// URL prefixes a request's `server_url` may start with (e.g.
    /// `"https://mcp.example.com/"`); compared after parsing, case-insensitively in scheme
    /// and host. Empty (the default): no request-given MCP server is allowed.
    pub allowed_urls: Vec<String>,
    /// Hosts a request's `server_url` may name (`mcp.example.com`, or `*.example.com` for
    /// its subdomains), any path and port.
    pub allowed_hosts: Vec<String>,
    /// Allows servers whose address is loopback, private, link-local or otherwise not
    /// public (checked on every address the host resolves to, at connect time). Default false.
    pub allow_private: bool,
    /// Connecting and the MCP handshake, milliseconds. Default 5000.
    pub connect_timeout_ms: u64,
    /// One `tools/list` (all its pages), milliseconds. Default 10000.
    pub list_timeout_ms: u64,
    /// One `tools/call`, milliseconds. Default 30000.
    pub call_timeout_ms: u64,
    /// `[mcp.servers.<server_label>]`: servers the operator configures. A request names one
    /// by its `server_label` alone; its URL and credentials are used and never shown.
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// `[mcp.servers.<server_label>]`: one operator-configured MCP server (issue 18
/// "Declaration"). Its URL is trusted: neither `allowed_urls` nor `allow_private` applies.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpServerConfig {
    /// The server's streamable-HTTP endpoint, e.g. `"http://10.0.0.5:8000/mcp"`.
    pub url: String,
    /// Given to the model with each of its tools when the request gives none.
    pub description: Option<String>,
    /// The environment variable holding a bearer token sent as `Authorization`.
    pub authorization_env: Option<String>,
    /// Headers sent to this server: header name → the environment variable holding its value.
    pub headers_env: BTreeMap<String, String>,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            allowed_urls: Vec::new(),
            allowed_hosts: Vec::new(),
            allow_private: false,
            connect_timeout_ms: 5_000,
            list_timeout_ms: 10_000,
            call_timeout_ms: 30_000,
            servers: BTreeMap::new(),
        }
    }
}
