//! MCP servers (issue 18 "Transport", "Security"): a turn's connection to one server over
//! streamable HTTP with the official Rust SDK (`rmcp`), its tool listing and its calls, each
//! within `[mcp]`'s timeouts. A request's `server_url` must be allowed by `[mcp]`
//! (`allowed_urls`, `allowed_hosts`); without `allow_private` every address the host
//! resolves to must be public (checked by the HTTP client's resolver at connect time, so a
//! name cannot resolve differently later), and redirects are not followed. Servers the
//! operator configures (`[mcp.servers.<label>]`) are trusted: any address.

mod address;
mod session;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Url;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;

use crate::config::mcp::{McpConfig, McpServerConfig};
use crate::config::Config;
use crate::upstream::redact::Secrets;
use address::{Prefix, PublicOnly};

pub use address::is_public;
pub use session::{Called, ListedTool, McpConnection, McpSession, MAX_OUTPUT_CHARS};

/// The MCP servers this deployment allows, and the HTTP clients that reach them.
#[derive(Debug, Clone)]
pub struct McpServers {
    allowed_urls: Vec<Prefix>,
    allowed_hosts: Vec<String>,
    allow_private: bool,
    /// For request-given URLs: public addresses only, unless `allow_private`.
    http: Result<reqwest::Client, String>,
    /// For the operator's servers: any address.
    trusted_http: Result<reqwest::Client, String>,
    operator: HashMap<String, Result<Target, String>>,
    connect: Duration,
    list: Duration,
    call: Duration,
}

/// The headers and bearer token sent to one server only; never printed (`Debug` names
/// the headers, not their values).
#[derive(Clone, Default)]
pub struct Credentials {
    pub headers: Vec<(String, String)>,
    pub authorization: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Credentials").field("headers", &names).field("authorization", &self.authorization.as_ref().map(|_| "[redacted]")).finish()
    }
}

impl Credentials {
    /// True when nothing is sent.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.authorization.is_none()
    }

    /// These credentials with `over`'s on top: a header of the same name (case-insensitive)
    /// is replaced; `over`'s token (or Authorization header) replaces both forms of ours.
    pub fn overridden_by(mut self, over: &Credentials) -> Credentials {
        let is_auth = |name: &str| name.eq_ignore_ascii_case("authorization");
        if over.authorization.is_some() || over.headers.iter().any(|(k, _)| is_auth(k)) {
            self.authorization = None;
            self.headers.retain(|(name, _)| !is_auth(name));
        }
        for (k, v) in &over.headers {
            self.headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
            self.headers.push((k.clone(), v.clone()));
        }
        if over.authorization.is_some() {
            self.authorization.clone_from(&over.authorization);
        }
        self
    }
}

/// Where one server is and what is sent to it.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: Url,
    pub credentials: Credentials,
    /// The operator's server: reached at any address (not only public ones).
    pub trusted: bool,
    /// The operator's description of it.
    pub description: Option<String>,
}

impl Default for McpServers {
    fn default() -> Self {
        McpServers::from_config(&McpConfig::default())
    }
}

impl McpServers {
    /// From `[mcp]`. An `allowed_urls` entry that is not a URL is skipped with a warning; an
    /// operator server whose URL or credentials are unusable (an unset variable) is kept as
    /// that error, which its listings then show.
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
        let connect = Duration::from_millis(c.connect_timeout_ms.max(1));
        let client = |public_only: bool| {
            let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).connect_timeout(connect);
            if public_only {
                builder = builder.dns_resolver(Arc::new(PublicOnly));
            }
            builder.build().map_err(|e| {
                tracing::warn!(error = %e, "the MCP HTTP client could not be built: MCP servers cannot be reached");
                format!("the gateway's MCP client could not be built: {e}")
            })
        };
        let operator = c
            .servers
            .iter()
            .map(|(label, s)| {
                let target = operator_target(label, s);
                if let Err(e) = &target {
                    tracing::warn!(server_label = %label, error = %e, "mcp.servers: this server cannot be used");
                }
                (label.clone(), target)
            })
            .collect();
        McpServers {
            allowed_urls,
            allowed_hosts: c.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
            allow_private: c.allow_private,
            http: client(!c.allow_private),
            trusted_http: if c.servers.is_empty() { Err("no operator server".into()) } else { client(false) },
            operator,
            connect,
            list: Duration::from_millis(c.list_timeout_ms.max(1)),
            call: Duration::from_millis(c.call_timeout_ms.max(1)),
        }
    }

    /// What a request may name here: `(request_urls, labels)`: whether `allowed_urls` or
    /// `allowed_hosts` admit any `server_url`, and the labels of the operator's servers that
    /// are usable (sorted). Neither: a request's `mcp` tool is always refused.
    pub fn offered(&self) -> (bool, Vec<&str>) {
        let urls = !self.allowed_urls.is_empty() || !self.allowed_hosts.is_empty();
        let mut labels: Vec<&str> = self.operator.iter().filter(|(_, t)| t.is_ok()).map(|(l, _)| l.as_str()).collect();
        labels.sort_unstable();
        (urls, labels)
    }

    /// `tools/call`'s timeout (`mcp.call_timeout_ms`).
    pub fn call_timeout(&self) -> Duration {
        self.call
    }

    /// The operator's server named `label` (`[mcp.servers.<label>]`): `None` when there is
    /// none; `Some(Err)` when its configuration is unusable (the message names the setting,
    /// never a value).
    pub fn operator(&self, label: &str) -> Option<Result<&Target, &str>> {
        self.operator.get(label).map(|t| t.as_ref().map_err(String::as_str))
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

    /// Checks, before any model call, that a request's server does not resolve only to
    /// addresses that are not public (unless `allow_private`; an operator's server is
    /// trusted). Errors: the message of the 400 on `server_url`.
    pub async fn check_resolved(&self, target: &Target) -> Result<(), String> {
        if self.allow_private || target.trusted {
            return Ok(());
        }
        let Some(url::Host::Domain(host)) = target.url.host() else { return Ok(()) };
        let port = target.url.port_or_known_default().unwrap_or(80);
        match tokio::time::timeout(self.connect, address::only_private(host, port)).await {
            Ok(Some(_)) => Err(format!("'{host}' resolves only to loopback or private addresses, which MCP servers may not use on this gateway (mcp.allow_private).")),
            _ => Ok(()),
        }
    }

    /// Connects to `target` and runs the MCP handshake, sending its credentials (the token
    /// as a bearer token) to that server only. Errors: a message without the credentials,
    /// for the item's `error`.
    pub async fn connect(&self, target: &Target) -> Result<McpSession, String> {
        let (url, creds) = (&target.url, &target.credentials);
        let query_values = url.query_pairs().map(|(_, v)| v.into_owned());
        // An operator's server is never shown: its URL is a secret too.
        let location = if target.trusted { hidden_location(url) } else { Vec::new() };
        let values = creds.headers.iter().map(|(_, v)| v.clone()).chain(creds.authorization.clone()).chain(query_values);
        // A value this short cannot be a credential; redacting it would garble every message.
        let secrets = Secrets::new(values.filter(|v| v.chars().count() >= MIN_SECRET_CHARS).chain(location));
        let mut custom = std::collections::HashMap::new();
        for (k, v) in &creds.headers {
            let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| format!("'{k}' is not a valid header name."))?;
            let value = HeaderValue::from_str(v).map_err(|_| format!("the value of header '{k}' is not valid."))?;
            custom.insert(name, value);
        }
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
        if let Some(token) = &creds.authorization {
            config = config.auth_header(token.clone());
        }
        let http = if target.trusted { &self.trusted_http } else { &self.http };
        let transport = StreamableHttpClientTransport::with_client(http.clone()?, config);
        let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("responses-gateway", env!("CARGO_PKG_VERSION")));
        let service = match tokio::time::timeout(self.connect, info.serve(transport)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(secrets.redact(&format!("could not connect to the MCP server: {}", session::root_cause(&e)))),
            Err(_) => return Err(format!("the MCP server did not answer within {} ms", self.connect.as_millis())),
        };
        Ok(McpSession::new(service, secrets, self.list, self.call))
    }
}

/// Shorter header and query values are not redacted from messages.
const MIN_SECRET_CHARS: usize = 4;

/// How an operator's server's URL may appear in a message: whole, without its query, and
/// its `host:port`.
fn hidden_location(url: &Url) -> Vec<String> {
    let mut bare = url.clone();
    bare.set_query(None);
    bare.set_fragment(None);
    let host = url.host_str().unwrap_or_default();
    let authority = url.port_or_known_default().map_or_else(|| host.to_string(), |p| format!("{host}:{p}"));
    vec![url.to_string(), bare.to_string(), bare.to_string().trim_end_matches('/').to_string(), authority]
}

/// An operator server's target, its credentials read from the environment now.
fn operator_target(label: &str, s: &McpServerConfig) -> Result<Target, String> {
    let url = Url::parse(&s.url).map_err(|_| format!("mcp.servers.{label}.url is not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("mcp.servers.{label}.url must be an http or https URL"));
    }
    let authorization = Config::secret(s.authorization_env.as_deref(), &format!("mcp.servers.{label}.authorization_env")).map_err(|e| e.to_string())?;
    let headers = s
        .headers_env
        .iter()
        .map(|(name, var)| {
            let value = Config::secret(Some(var), &format!("mcp.servers.{label}.headers_env.{name}")).map_err(|e| e.to_string())?;
            Ok((name.clone(), value.unwrap_or_default()))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Target { url, credentials: Credentials { headers, authorization }, trusted: true, description: s.description.clone() })
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
    fn the_operators_token_replaces_the_requests_in_either_form() {
        let request = Credentials { headers: vec![("Authorization".into(), "Bearer req".into()), ("X-A".into(), "a".into())], authorization: None };
        let operator = Credentials { headers: vec![("x-a".into(), "op".into())], authorization: Some("op-token".into()) };
        let merged = request.overridden_by(&operator);
        assert_eq!(merged.authorization.as_deref(), Some("op-token"));
        assert_eq!(merged.headers, vec![("x-a".to_string(), "op".to_string())], "one token, one X-A");
    }

    #[tokio::test]
    async fn a_host_resolving_only_to_private_addresses_is_refused_early() {
        let target = |url: &str, trusted: bool| Target { url: Url::parse(url).unwrap(), credentials: Credentials::default(), trusted, description: None };
        let public_only = servers(&[], &[], false);
        assert!(public_only.check_resolved(&target("http://localhost:9/mcp", false)).await.unwrap_err().contains("allow_private"));
        assert!(public_only.check_resolved(&target("http://localhost:9/mcp", true)).await.is_ok(), "the operator's server is trusted");
        assert!(servers(&[], &[], true).check_resolved(&target("http://localhost:9/mcp", false)).await.is_ok());
    }

    #[test]
    fn an_operator_url_is_hidden_whole_bare_and_by_authority() {
        let hidden = hidden_location(&Url::parse("http://10.0.0.5:8000/mcp?key=abc").unwrap());
        let secrets = Secrets::new(hidden);
        let message = "error sending request for url (http://10.0.0.5:8000/mcp?key=abc); connecting to 10.0.0.5:8000; http://10.0.0.5:8000/mcp";
        let redacted = secrets.redact(message);
        assert!(!redacted.contains("10.0.0.5") && !redacted.contains("abc"), "{redacted}");
    }
}
