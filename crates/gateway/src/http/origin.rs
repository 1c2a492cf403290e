//! No cross-site turns (issue 28, point 2): which browser pages and which host names may
//! reach the gateway, checked before anything runs.
//!
//! * `Host`: against DNS rebinding (a page whose name starts resolving to 127.0.0.1), a
//!   name must be one the gateway answers to. On a loopback listener (`server.listen`, the
//!   default): `localhost`, `*.localhost` or a name of `server.allowed_hosts`. On any other
//!   listener: a name of `server.allowed_hosts` when it is set, else any. An IP address is
//!   always accepted (a rebinding needs a name). Refused: 403 `host_not_allowed`.
//! * `Origin` (sent by browsers): the page's own origin (the `Host`'s, as the playground's),
//!   or one of `server.cors_origins`; no `Origin` (SDKs, curl) is not checked. Refused (also
//!   `Origin: null`): 403 `origin_not_allowed`. The CORS preflights of `server.cors_origins`
//!   are answered by tower-http's layer ([`cors`]).
//!
//! API keys, when configured, are still required: this check comes before theirs.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use protocol::ApiError;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use crate::config::ServerConfig;

/// What the check allows, from `[server]`.
#[derive(Debug, Clone)]
pub struct SitePolicy {
    /// `server.listen` is a loopback address.
    loopback: bool,
    /// `server.allowed_hosts`, lowercase.
    hosts: Vec<String>,
    /// `server.cors_origins`, normalized ([`normalize_origin`]).
    origins: Vec<String>,
}

impl SitePolicy {
    /// The policy of `[server]`.
    pub fn new(server: &ServerConfig) -> Arc<SitePolicy> {
        Arc::new(SitePolicy {
            loopback: server.listen.ip().is_loopback(),
            hosts: server.allowed_hosts.iter().map(|h| h.trim_end_matches('.').to_ascii_lowercase()).collect(),
            origins: server.cors_origins.iter().filter_map(|o| normalize_origin(o)).collect(),
        })
    }

    /// True when a request naming `host` (the `Host` header: `name[:port]`) is answered.
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let (name, _) = split_port(&host);
        let name = name.trim_end_matches('.');
        if name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_ok() {
            return true;
        }
        if self.hosts.iter().any(|h| *h == host || h == name) {
            return true;
        }
        if self.loopback {
            return name == "localhost" || name.ends_with(".localhost");
        }
        self.hosts.is_empty()
    }

    /// True when a request from the page `origin` (the `Origin` header) to `host` is answered.
    pub fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let Some(origin) = normalize_origin(origin) else { return false };
        if self.origins.contains(&origin) {
            return true;
        }
        // The page's own origin: same host and port (the scheme is the listener's, or a
        // proxy's in front of it).
        let Some(host) = host else { return false };
        let (scheme, authority) = origin.split_once("://").unwrap_or(("", ""));
        let default_port = if scheme == "https" { "443" } else { "80" };
        let with_port = |a: &str| match split_port(a) {
            (name, Some(port)) => format!("{name}:{port}"),
            (name, None) => format!("{name}:{default_port}"),
        };
        with_port(authority) == with_port(&host.trim().to_ascii_lowercase())
    }
}

/// `name` and `port` of `name[:port]` (`[v6]:port` too).
fn split_port(host: &str) -> (&str, Option<&str>) {
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((v6, tail)) => (&host[..v6.len() + 2], tail.strip_prefix(':')),
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => (name, Some(port)),
        _ => (host, None),
    }
}

/// `scheme://host[:port]` in lowercase without a default port, or `None` when `origin` is
/// not an http(s) origin (`null`, a path, a user).
pub fn normalize_origin(origin: &str) -> Option<String> {
    let url = url::Url::parse(origin.trim()).ok()?;
    let ok = matches!(url.scheme(), "http" | "https") && url.path() == "/" && url.query().is_none() && url.username().is_empty();
    if !ok || origin.trim().trim_end_matches('/').matches('/').count() != 2 {
        return None;
    }
    let host = url.host_str()?.trim_end_matches('.');
    Some(match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    })
}

fn forbidden(message: String, code: &str) -> Response {
    super::error::respond(StatusCode::FORBIDDEN, ApiError::invalid(None, message).with_code(code))
}

/// The middleware: 403 for a `Host` or an `Origin` that is not allowed.
pub async fn check(State(policy): State<Arc<SitePolicy>>, req: Request, next: Next) -> Response {
    let host = req.headers().get(header::HOST).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if let Some(h) = &host {
        if !policy.host_allowed(h) {
            return forbidden(format!("Host '{}' is not served here (server.allowed_hosts).", cut(h)), "host_not_allowed");
        }
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes());
        if !policy.origin_allowed(&origin, host.as_deref()) {
            return forbidden(
                format!("Requests from the web page origin '{}' are not allowed (server.cors_origins).", cut(&origin)),
                "origin_not_allowed",
            );
        }
    }
    next.run(req).await
}

/// `s` cut to 100 characters for a message.
fn cut(s: &str) -> String {
    let mut out: String = s.chars().take(100).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// tower-http's CORS layer for `server.cors_origins` (`None` when there are none): it
/// answers their preflights (any requested header, the API's methods, cached 10 minutes)
/// and lets their pages read the answers and `x-request-id`.
pub fn cors(server: &ServerConfig) -> Option<CorsLayer> {
    let origins: Vec<HeaderValue> = server
        .cors_origins
        .iter()
        .filter_map(|o| normalize_origin(o))
        .filter_map(|o| HeaderValue::from_str(&o).ok())
        .collect();
    (!origins.is_empty()).then(|| {
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers(AllowHeaders::mirror_request())
            .expose_headers([super::request::REQUEST_ID.clone()])
            .max_age(Duration::from_secs(600))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(listen: &str, hosts: &[&str], origins: &[&str]) -> Arc<SitePolicy> {
        let server = ServerConfig {
            listen: listen.parse().unwrap(),
            allowed_hosts: hosts.iter().map(|s| s.to_string()).collect(),
            cors_origins: origins.iter().map(|s| s.to_string()).collect(),
            ..ServerConfig::default()
        };
        SitePolicy::new(&server)
    }

    #[test]
    fn hosts_on_loopback_and_elsewhere() {
        let p = policy("127.0.0.1:8080", &["gw.example"], &[]);
        for ok in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST", "app.localhost:1", "[::1]:8080", "gw.example", "gw.example:8080", "10.0.0.1"] {
            assert!(p.host_allowed(ok), "{ok}");
        }
        for bad in ["evil.example:8080", "localhost.evil.example", "gw.example.evil", ""] {
            assert!(!p.host_allowed(bad), "{bad}");
        }
        assert!(policy("0.0.0.0:8080", &[], &[]).host_allowed("anything.example"));
        let named = policy("0.0.0.0:8080", &["api.example:443"], &[]);
        assert!(named.host_allowed("api.example:443") && !named.host_allowed("api.example:80") && !named.host_allowed("localhost"));
    }

    #[test]
    fn origins() {
        let p = policy("127.0.0.1:8080", &[], &["https://app.example", "http://127.0.0.1:3000/"]);
        assert!(p.origin_allowed("https://app.example", Some("127.0.0.1:8080")));
        assert!(p.origin_allowed("https://APP.example:443", Some("x")));
        assert!(p.origin_allowed("http://127.0.0.1:3000", None));
        assert!(p.origin_allowed("http://127.0.0.1:8080", Some("127.0.0.1:8080")), "the page's own origin");
        assert!(p.origin_allowed("http://localhost", Some("localhost:80")));
        for bad in ["null", "https://evil.example", "http://127.0.0.1:3001", "http://127.0.0.1:8080/x", "file://x"] {
            assert!(!p.origin_allowed(bad, Some("127.0.0.1:3002")), "{bad}");
        }
        assert!(!p.origin_allowed("http://evil.example:8080", Some("127.0.0.1:8080")));
        assert_eq!(normalize_origin("HTTP://A.example:80/").as_deref(), Some("http://a.example"));
        assert_eq!(normalize_origin("http://[::1]:8080").as_deref(), Some("http://[::1]:8080"));
    }
}
