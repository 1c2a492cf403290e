//! MCP servers (issue 18 "Transport", "Security"): a turn's connection to one server over
//! streamable HTTP with the official Rust SDK (`rmcp`), its tool listing and its calls, each
//! within `[mcp]`'s timeouts. A request's `server_url` must be allowed by `[mcp]`
//! (`allowed_urls`, `allowed_hosts`); without `allow_private` every address the host
//! resolves to must be public (checked by the HTTP client's resolver at connect time, so a
//! name cannot resolve differently later), and redirects are not followed.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Url;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Map, Value};

use crate::config::mcp::McpConfig;
use crate::upstream::redact::Secrets;

/// The MCP servers this deployment allows, and the HTTP client that reaches them.
#[derive(Debug, Clone)]
pub struct McpServers {
    allowed_urls: Vec<Prefix>,
    allowed_hosts: Vec<String>,
    allow_private: bool,
    http: Result<reqwest::Client, String>,
    connect: Duration,
    list: Duration,
    call: Duration,
}

impl Default for McpServers {
    fn default() -> Self {
        McpServers::from_config(&McpConfig::default())
    }
}

impl McpServers {
    /// From `[mcp]`. An `allowed_urls` entry that is not a URL is skipped with a warning.
    pub fn from_config(c: &McpConfig) -> McpServers {
        let allowed_urls = c
            .allowed_urls
            .iter()
            .filter_map(|u| match Prefix::parse(u) {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::warn!(url = %u, error = %e, "mcp.allowed_urls: not a URL; ignored");
                    None
                }
            })
            .collect();
        crate::crypto::install();
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_millis(c.connect_timeout_ms.max(1)));
        if !c.allow_private {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        let http = builder.build().map_err(|e| {
            tracing::warn!(error = %e, "the MCP HTTP client could not be built: MCP servers cannot be reached");
            format!("the gateway's MCP client could not be built: {e}")
        });
        McpServers {
            allowed_urls,
            allowed_hosts: c.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
            allow_private: c.allow_private,
            http,
            connect: Duration::from_millis(c.connect_timeout_ms.max(1)),
            list: Duration::from_millis(c.list_timeout_ms.max(1)),
            call: Duration::from_millis(c.call_timeout_ms.max(1)),
        }
    }

    /// `tools/call`'s timeout (`mcp.call_timeout_ms`).
    pub fn call_timeout(&self) -> Duration {
        self.call
    }

    /// Checks a request's `server_url`: `http` or `https`, no user info, allowed by
    /// `allowed_urls` (a prefix) or `allowed_hosts`, and, unless `allow_private`, not a
    /// literal address that is not public. Errors: the message of the 400.
    pub fn check_url(&self, raw: &str) -> Result<Url, String> {
        let url = Url::parse(raw).map_err(|_| format!("'{raw}' is not a URL."))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err("server_url must be an http or https URL.".into());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("server_url must not hold credentials: use 'authorization' or 'headers'.".into());
        }
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let by_prefix = self.allowed_urls.iter().any(|p| p.admits(&url));
        let by_host = self.allowed_hosts.iter().any(|h| match h.strip_prefix("*.") {
            Some(suffix) => host.ends_with(&format!(".{suffix}")),
            None => *h == host,
        });
        if !by_prefix && !by_host {
            return Err("This MCP server is not allowed on this gateway (mcp.allowed_urls, mcp.allowed_hosts).".into());
        }
        if !self.allow_private {
            let literal = match url.host() {
                Some(url::Host::Ipv4(a)) => Some(IpAddr::V4(a)),
                Some(url::Host::Ipv6(a)) => Some(IpAddr::V6(a)),
                _ => None,
            };
            if literal.is_some_and(|ip| !is_public(ip)) || host == "localhost" {
                return Err("MCP servers on loopback or private addresses are not allowed on this gateway (mcp.allow_private).".into());
            }
        }
        Ok(url)
    }

    /// Connects to `url` (checked by [`McpServers::check_url`]) and runs the MCP handshake,
    /// sending `headers` and `authorization` (as a bearer token) to that server only.
    /// Errors: a message without the credentials, for the item's `error`.
    pub async fn connect(&self, url: &Url, headers: &[(String, String)], authorization: Option<&str>) -> Result<McpSession, String> {
        let query_values = url.query_pairs().map(|(_, v)| v.into_owned());
        let secrets = Secrets::new(headers.iter().map(|(_, v)| v.clone()).chain(authorization.map(str::to_string)).chain(query_values));
        let mut custom = std::collections::HashMap::new();
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| format!("'{k}' is not a valid header name."))?;
            let value = HeaderValue::from_str(v).map_err(|_| format!("the value of header '{k}' is not valid."))?;
            custom.insert(name, value);
        }
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
        if let Some(token) = authorization {
            config = config.auth_header(token);
        }
        let transport = StreamableHttpClientTransport::with_client(self.http.clone()?, config);
        let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("responses-gateway", env!("CARGO_PKG_VERSION")));
        let service = match tokio::time::timeout(self.connect, info.serve(transport)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(secrets.redact(&format!("could not connect to the MCP server: {}", root_cause(&e)))),
            Err(_) => return Err(format!("the MCP server did not answer within {} ms", self.connect.as_millis())),
        };
        Ok(McpSession { service: Arc::new(service), secrets: Arc::new(secrets), list: self.list, call: self.call })
    }
}

/// An `allowed_urls` entry: scheme, host and path prefix must match; the port too, unless
/// the entry ends its host with `:` (any port, e.g. `http://127.0.0.1:`).
#[derive(Debug, Clone)]
struct Prefix {
    url: Url,
    any_port: bool,
}

impl Prefix {
    fn parse(raw: &str) -> Result<Prefix, url::ParseError> {
        let url = Url::parse(raw)?;
        let authority_end = raw.find("://").map_or(0, |i| i + 3);
        let authority = raw[authority_end..].split(['/', '?', '#']).next().unwrap_or_default();
        Ok(Prefix { any_port: authority.ends_with(':'), url })
    }

    fn admits(&self, url: &Url) -> bool {
        let p = &self.url;
        url.scheme() == p.scheme()
            && url.host_str().map(str::to_ascii_lowercase) == p.host_str().map(str::to_ascii_lowercase)
            && (self.any_port || url.port_or_known_default() == p.port_or_known_default())
            && url.path().starts_with(p.path())
    }
}

/// A turn's connection to one MCP server (closed when the last clone is dropped).
#[derive(Debug, Clone)]
pub struct McpSession {
    service: Arc<RunningService<RoleClient, ClientConfig>>,
    secrets: Arc<Secrets>,
    list: Duration,
    call: Duration,
}

/// One tool a server listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub description: Option<String>,
    /// Its JSON Schema (an object).
    pub input_schema: Value,
    /// The server's annotations as sent (`readOnlyHint`, …).
    pub annotations: Option<Value>,
    /// `annotations.readOnlyHint`.
    pub read_only: bool,
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Called {
    /// The tool's text.
    Ok(String),
    /// The tool reported an error (`isError`): its text, and the item's `error` object
    /// (`mcp_tool_execution_error` with the content).
    ToolError(String, Value),
    /// The call did not complete (transport, protocol): a message and the item's `error`
    /// object (`mcp_protocol_error`).
    Failed(String, Value),
    /// No answer within the timeout: a message and the item's `error` object.
    TimedOut(String, Value),
}

impl McpSession {
    /// `tools/list`, every page, within `mcp.list_timeout_ms`. Errors: a message for the
    /// item's `error`.
    pub async fn list(&self) -> Result<Vec<ListedTool>, String> {
        let tools = match tokio::time::timeout(self.list, self.service.list_all_tools()).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => return Err(self.secrets.redact(&format!("listing the tools failed: {}", root_cause(&e)))),
            Err(_) => return Err(format!("listing the tools took more than {} ms", self.list.as_millis())),
        };
        Ok(tools
            .into_iter()
            .map(|t| {
                let annotations = t.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok());
                ListedTool {
                    read_only: t.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false),
                    name: t.name.to_string(),
                    description: t.description.map(|d| d.to_string()),
                    input_schema: Value::Object((*t.input_schema).clone()),
                    annotations,
                }
            })
            .collect())
    }

    /// `tools/call` of `name` with `arguments`, within `timeout` (at most `mcp.call_timeout_ms`).
    pub async fn call(&self, name: &str, arguments: Map<String, Value>, timeout: Duration) -> Called {
        let timeout = timeout.min(self.call);
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        let result = match tokio::time::timeout(timeout, self.service.call_tool(params)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                let message = self.secrets.redact(&format!("the MCP call failed: {}", root_cause(&e)));
                return Called::Failed(message.clone(), json!({"type": "mcp_protocol_error", "code": -32603, "message": message}));
            }
            Err(_) => {
                let message = format!("the MCP call took more than {} ms", timeout.as_millis());
                return Called::TimedOut(message.clone(), json!({"type": "mcp_protocol_error", "code": -32001, "message": message}));
            }
        };
        let text = content_text(&result.content, result.structured_content.as_ref());
        if result.is_error == Some(true) {
            let content = serde_json::to_value(&result.content).unwrap_or(Value::Null);
            return Called::ToolError(text, json!({"type": "mcp_tool_execution_error", "content": content}));
        }
        Called::Ok(text)
    }
}

/// The innermost cause of an SDK error (e.g. "Connection refused (os error 111)"), without
/// the transport's type names that the outer messages carry.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    without_type_names(&cause.to_string())
}

/// `text` less the bracketed Rust type names the SDK's messages hold
/// (`[rmcp::transport::worker::WorkerTransport<…>]`).
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].char_indices().scan(0i32, |depth, (i, c)| {
            *depth += match c { '[' => 1, ']' => -1, _ => 0 };
            Some((i, *depth))
        }).find(|&(_, d)| d == 0).map(|(i, _)| open + i);
        match close {
            Some(close) if rest[open..close].contains("::") => {
                out.push_str(rest[..open].trim_end());
                rest = &rest[close + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The longest text of a call result kept, in characters: the item's `output` and what the
/// model reads are cut there (with a note of the length).
pub const MAX_OUTPUT_CHARS: usize = 100_000;

/// A call result's text: its text blocks joined by newlines; other blocks named by kind; the
/// structured content as JSON when there is no block.
fn content_text(content: &[ContentBlock], structured: Option<&Value>) -> String {
    let parts: Vec<String> = content
        .iter()
        .map(|c| match c {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(_) => "[image]".to_string(),
            ContentBlock::Audio(_) => "[audio]".to_string(),
            ContentBlock::Resource(r) => serde_json::to_string(&r.resource).unwrap_or_default(),
            ContentBlock::ResourceLink(l) => format!("[resource {}]", l.uri),
            _ => "[content]".to_string(),
        })
        .collect();
    let text = if parts.is_empty() { structured.map(Value::to_string).unwrap_or_default() } else { parts.join("\n") };
    match text.char_indices().nth(MAX_OUTPUT_CHARS) {
        Some((cut, _)) => format!("{}\n[output cut at {MAX_OUTPUT_CHARS} of {} characters]", &text[..cut], text.chars().count()),
        None => text,
    }
}

/// A resolver that keeps only public addresses: a host that resolves to none is refused.
#[derive(Debug)]
struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = all.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                return Err(format!("{host} resolves to no public address (mcp.allow_private)").into());
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// True for an address on the public internet: not loopback, private, link-local, shared
/// (100.64/10), documentation, benchmarking, multicast, broadcast, unspecified or reserved,
/// nor an IPv6 unique-local, link-local or IPv4-mapped/translated form of those.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            !(a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_broadcast()
                || a.is_documentation()
                || a.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 198 && (18..20).contains(&o[1]))
                || o[0] >= 240)
        }
        IpAddr::V6(a) => {
            if let Some(v4) = a.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = a.segments();
            !(a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || (s[0] == 0x64 && s[1] == 0xff9b))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(urls: &[&str], hosts: &[&str], private: bool) -> McpServers {
        McpServers::from_config(&McpConfig {
            allowed_urls: urls.iter().map(|s| s.to_string()).collect(),
            allowed_hosts: hosts.iter().map(|s| s.to_string()).collect(),
            allow_private: private,
            ..McpConfig::default()
        })
    }

    #[test]
    fn only_allowed_public_servers_pass() {
        let s = servers(&["https://mcp.example.com/v1/"], &["*.tools.example.org", "exact.example.net"], false);
        assert!(s.check_url("https://mcp.example.com/v1/mcp").is_ok());
        assert!(s.check_url("https://mcp.example.com/v2/mcp").is_err(), "outside the prefix");
        assert!(s.check_url("https://mcp.example.com.evil.test/v1/mcp").is_err());
        assert!(s.check_url("https://a.tools.example.org/mcp").is_ok());
        assert!(s.check_url("https://tools.example.org.evil.test/mcp").is_err());
        assert!(s.check_url("http://EXACT.example.net:8080/x").is_ok());
        assert!(s.check_url("https://user:pw@mcp.example.com/v1/mcp").is_err(), "credentials in the URL");
        assert!(s.check_url("ftp://mcp.example.com/v1/").is_err());
        assert!(s.check_url("not a url").is_err());
        let local = servers(&["http://127.0.0.1:"], &["localhost"], false);
        assert!(local.check_url("http://127.0.0.1:9000/mcp").unwrap_err().contains("allow_private"));
        assert!(local.check_url("http://localhost:9000/mcp").unwrap_err().contains("allow_private"));
        assert!(servers(&["http://127.0.0.1:"], &[], true).check_url("http://127.0.0.1:9000/mcp").is_ok());
        let ports = servers(&["https://mcp.example.com:8443/", "http://127.0.0.1:"], &[], true);
        assert!(ports.check_url("https://mcp.example.com:8443/mcp").is_ok());
        assert!(ports.check_url("https://mcp.example.com/mcp").is_err(), "another port");
        assert!(ports.check_url("http://127.0.0.1:1234/mcp").is_ok(), "any port");
        assert!(ports.check_url("http://127.0.0.10:1234/mcp").is_err(), "another host");
        assert!(servers(&[], &[], true).check_url("http://127.0.0.1:9000/mcp").is_err(), "nothing allowed by default");
    }

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for ip in ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "fd00::1", "fe80::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "198.18.0.1", "224.0.0.1"] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn sdk_type_names_are_left_out_of_messages() {
        assert_eq!(
            without_type_names("Send message error Transport [rmcp::a::W<rmcp::b::C<reqwest::Client>>] error: refused [redacted]"),
            "Send message error Transport error: refused [redacted]"
        );
        assert_eq!(without_type_names("a [b] c [x::y"), "a [b] c [x::y");
    }

    #[test]
    fn long_outputs_are_cut() {
        let long = "é".repeat(MAX_OUTPUT_CHARS + 5);
        let text = content_text(&[ContentBlock::text(long)], None);
        assert!(text.starts_with(&"é".repeat(MAX_OUTPUT_CHARS)) && text.ends_with(&format!("[output cut at {MAX_OUTPUT_CHARS} of {} characters]", MAX_OUTPUT_CHARS + 5)));
        assert_eq!(content_text(&[ContentBlock::text("a"), ContentBlock::text("b")], None), "a\nb");
        assert_eq!(content_text(&[], Some(&json!({"x": 1}))), r#"{"x":1}"#);
    }

    #[tokio::test]
    async fn a_name_resolving_only_to_loopback_is_refused() {
        let addrs = PublicOnly.resolve("localhost".parse::<Name>().unwrap()).await;
        assert!(addrs.is_err());
    }
}
