//! The `http` web-search backend: one JSON GET to the configured endpoint (SearXNG's
//! `/search` or Degoog's `/api/search`) with `q=…&format=json` appended. One adapter reads
//! both result shapes (`shared/reference/real-backends.md`): SearXNG `{results:[{url,title,
//! content}]}`, Degoog `{results:[{url,title,snippet,content}]}`.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;

use super::web_search::{SearchBackend, SearchHit, SearchOutcome, SearchRequest};

/// A configured SearXNG/Degoog endpoint.
#[derive(Debug, Clone)]
pub struct HttpSearch {
    client: reqwest::Client,
    url: reqwest::Url,
    api_key: Option<String>,
}

#[derive(Deserialize)]
struct Page {
    results: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    snippet: Option<String>,
}

impl HttpSearch {
    /// `url` is the whole endpoint; `api_key` is sent as a Bearer token; `timeout` bounds
    /// the whole request.
    pub fn new(url: &str, api_key: Option<String>, timeout: Duration) -> anyhow::Result<Self> {
        crate::crypto::install();
        let url = reqwest::Url::parse(url).map_err(|e| anyhow::anyhow!("web_search.http.url is not a valid URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            anyhow::bail!("web_search.http.url must be http or https");
        }
        let client = reqwest::Client::builder().timeout(timeout).build()?;
        Ok(HttpSearch { client, url, api_key })
    }

    async fn get(&self, req: &SearchRequest) -> Result<SearchOutcome, String> {
        let mut url = self.url.clone();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("q", &req.query).append_pair("format", "json");
            if let Some(lang) = req.country.as_deref().and_then(language_hint) {
                q.append_pair("language", lang);
            }
        }
        let mut rb = self.client.get(url).header("accept", "application/json");
        if let Some(k) = &self.api_key {
            rb = rb.bearer_auth(k);
        }
        let resp = rb.send().await.map_err(|e| {
            if e.is_timeout() {
                "the search backend timed out".to_string()
            } else {
                "the search backend is unreachable".to_string()
            }
        })?;
        let status = resp.status();
        if !status.is_success() {
            return Err(match status.as_u16() {
                403 => "the search backend refused the request (HTTP 403). For SearXNG, enable `json` in `search.formats` of its settings.yml".to_string(),
                401 => "the search backend rejected the credentials (HTTP 401)".to_string(),
                429 => {
                    let after = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_string);
                    match after {
                        Some(a) => format!("the search backend is rate-limited (HTTP 429); retry after {a} s"),
                        None => "the search backend is rate-limited (HTTP 429)".to_string(),
                    }
                }
                code => format!("the search backend answered HTTP {code}"),
            });
        }
        let body = resp.bytes().await.map_err(|_| "the search backend's answer was cut off".to_string())?;
        let page: Page = serde_json::from_slice(&body).map_err(|_| "the search backend's answer is not the expected JSON".to_string())?;
        let hits = page
            .results
            .into_iter()
            .filter_map(|h| {
                let url = h.url?;
                let snippet = h.content.filter(|c| !c.is_empty()).or(h.snippet).unwrap_or_default();
                Some(SearchHit { title: h.title.unwrap_or_default(), url, snippet: collapse(&snippet) })
            })
            .collect();
        Ok(SearchOutcome { hits, summary: None, usage: None })
    }
}

/// Whitespace collapsed to single spaces.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// SearXNG `language` hint from an ISO-2 country (its main language); `None` if unknown.
fn language_hint(country: &str) -> Option<&'static str> {
    Some(match country.to_ascii_uppercase().as_str() {
        "US" => "en-US",
        "GB" => "en-GB",
        "AU" => "en-AU",
        "CA" => "en-CA",
        "IE" => "en-IE",
        "NZ" => "en-NZ",
        "IN" => "en-IN",
        "DE" => "de-DE",
        "AT" => "de-AT",
        "CH" => "de-CH",
        "FR" => "fr-FR",
        "BE" => "fr-BE",
        "ES" => "es-ES",
        "MX" => "es-MX",
        "AR" => "es-AR",
        "IT" => "it-IT",
        "NL" => "nl-NL",
        "PT" => "pt-PT",
        "BR" => "pt-BR",
        "PL" => "pl-PL",
        "SE" => "sv-SE",
        "NO" => "nb-NO",
        "DK" => "da-DK",
        "FI" => "fi-FI",
        "JP" => "ja-JP",
        "KR" => "ko-KR",
        "CN" => "zh-CN",
        "TW" => "zh-TW",
        "RU" => "ru-RU",
        "UA" => "uk-UA",
        "TR" => "tr-TR",
        _ => return None,
    })
}

impl SearchBackend for HttpSearch {
    fn kind(&self) -> &'static str {
        "http"
    }

    /// SearXNG and Degoog answer from what their engines have indexed, and the gateway
    /// fetches no live page: a cache-only request (`external_web_access: false`) is what
    /// this backend does anyway (issue 31).
    fn supports_cache_only(&self) -> bool {
        true
    }

    fn search<'a>(&'a self, req: &'a SearchRequest) -> BoxFuture<'a, Result<SearchOutcome, String>> {
        Box::pin(self.get(req))
    }
}
