//! Where an MCP server may be (issue 18 "Security"): `allowed_urls` prefixes, and the
//! public-address check that the HTTP client's resolver applies at connect time.

use std::net::{IpAddr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;

/// An `allowed_urls` entry: scheme, host and path prefix must match; the port too, unless
/// the entry ends its host with `:` (any port, e.g. `http://127.0.0.1:`). A path prefix
/// ends at a segment: `/mcp` admits `/mcp` and `/mcp/…`, not `/mcpx`.
#[derive(Debug, Clone)]
pub(super) struct Prefix {
    url: Url,
    any_port: bool,
}

impl Prefix {
    pub(super) fn parse(raw: &str) -> Result<Prefix, url::ParseError> {
        let url = Url::parse(raw)?;
        let authority_end = raw.find("://").map_or(0, |i| i + 3);
        let authority = raw[authority_end..].split(['/', '?', '#']).next().unwrap_or_default();
        Ok(Prefix { any_port: authority.ends_with(':'), url })
    }

    pub(super) fn admits(&self, url: &Url) -> bool {
        let p = &self.url;
        url.scheme() == p.scheme()
            && url.host_str().map(str::to_ascii_lowercase) == p.host_str().map(str::to_ascii_lowercase)
            && (self.any_port || url.port_or_known_default() == p.port_or_known_default())
            && path_within(url.path(), p.path())
    }
}

/// True when `path` is `prefix` or below it, segment-wise.
fn path_within(path: &str, prefix: &str) -> bool {
    match path.strip_prefix(prefix) {
        Some(rest) => prefix.ends_with('/') || rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// The addresses `host` resolves to, when every one of them is not public: the
/// declaration's early refusal (the resolver refuses them again at connect time). `None`
/// when one is public or the name does not resolve (the listing then fails on its own).
pub(super) async fn only_private(host: &str, port: u16) -> Option<Vec<IpAddr>> {
    let all: Vec<IpAddr> = tokio::net::lookup_host((host, port)).await.ok()?.map(|a| a.ip()).collect();
    (!all.is_empty() && all.iter().all(|ip| !is_public(*ip))).then_some(all)
}

/// A resolver that keeps only public addresses: a host that resolves to none is refused.
#[derive(Debug)]
pub(super) struct PublicOnly;

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

    #[test]
    fn a_path_prefix_ends_at_a_segment() {
        assert!(path_within("/mcp", "/mcp") && path_within("/mcp/x", "/mcp") && path_within("/v1/mcp", "/v1/"));
        assert!(!path_within("/mcpx", "/mcp") && !path_within("/mc", "/mcp"));
    }

    #[tokio::test]
    async fn a_name_resolving_only_to_loopback_is_found_early() {
        assert!(only_private("localhost", 80).await.is_some());
        assert!(only_private("127.0.0.1", 80).await.is_some());
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

    #[tokio::test]
    async fn a_name_resolving_only_to_loopback_is_refused() {
        let addrs = PublicOnly.resolve("localhost".parse::<Name>().unwrap()).await;
        assert!(addrs.is_err());
    }
}

