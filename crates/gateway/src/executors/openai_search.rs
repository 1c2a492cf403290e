//! The `openai` web-search backend: a private upstream Responses call with
//! `{"type":"web_search"}` and `tool_choice: "required"`. Its cited URLs (`url_citation`
//! annotations and `web_search_call.action.sources`) become the sources. The private call
//! never appears in the client's response; its usage is summed into the turn's usage.

use std::time::Duration;

use futures_util::future::BoxFuture;
use protocol::response::Usage;
use serde_json::{json, Value};

use super::web_search::{SearchBackend, SearchHit, SearchOutcome, SearchRequest};
use crate::upstream::responses::Responses;
use crate::upstream::UpstreamError;

/// A configured upstream Responses endpoint with native web search: the same Responses
/// client as a Responses upstream's rounds (`upstream::responses`).
#[derive(Debug, Clone)]
pub struct OpenAiSearch {
    client: Responses,
    model: String,
}

impl OpenAiSearch {
    /// `base` is the OpenAI base URL including `/v1`; `model` the search-capable model;
    /// `timeout` bounds the wait for the answer's head and then for its body.
    /// Errors: `base` is not an http(s) URL, or the HTTP client cannot be built.
    pub fn new(base: &str, api_key: Option<String>, model: String, timeout: Duration) -> anyhow::Result<Self> {
        let parsed = reqwest::Url::parse(base).map_err(|e| anyhow::anyhow!("web_search.openai.url is not a valid URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            anyhow::bail!("web_search.openai.url must be http or https");
        }
        let client = Responses::new(base, api_key, timeout, timeout.min(Duration::from_secs(10)), Duration::from_secs(4))?;
        Ok(OpenAiSearch { client, model })
    }

    fn body(&self, req: &SearchRequest) -> Value {
        let mut tool = json!({"type": "web_search", "search_context_size": req.context_size});
        if let Some(d) = &req.allowed_domains {
            tool["filters"] = json!({"allowed_domains": d});
        }
        if let Some(loc) = &req.user_location {
            tool["user_location"] = loc.clone();
        }
        if !req.external_web_access {
            tool["external_web_access"] = json!(false);
        }
        json!({
            "model": self.model,
            "input": req.query,
            "tools": [tool],
            "tool_choice": "required",
            "include": ["web_search_call.action.sources"],
            "store": false,
        })
    }

    /// Errors are short texts the model may read: never the URL or the key.
    async fn call(&self, req: &SearchRequest) -> Result<SearchOutcome, String> {
        let v = self.client.create(&self.body(req), &self.model).await.map_err(|e| match e {
            UpstreamError::Timeout(_) => "the search model timed out".to_string(),
            UpstreamError::Unreachable(_) => "the search model is unreachable".to_string(),
            UpstreamError::Status { status, .. } => format!("the search model answered HTTP {status}"),
            UpstreamError::UnknownModel(_) => "the search model answered HTTP 404".to_string(),
            UpstreamError::Protocol(_) => "the search model's answer is not JSON".to_string(),
            UpstreamError::Failed(_) => "the search model failed".to_string(),
        })?;
        parse(&v).ok_or_else(|| "the search model's answer is not a Responses object".to_string())
    }
}

/// Sources and summary from a Responses object: cited URLs first (with titles), then the
/// search actions' sources.
pub fn parse(v: &Value) -> Option<SearchOutcome> {
    let output = v.get("output")?.as_array()?;
    let mut hits: Vec<SearchHit> = Vec::new();
    let mut summary = String::new();
    let mut push = |url: &str, title: &str| {
        if !hits.iter().any(|h| h.url == url) {
            hits.push(SearchHit { url: url.to_string(), title: title.to_string(), snippet: String::new() });
        }
    };
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(t) = part.get("text").and_then(Value::as_str) {
                        summary.push_str(t);
                    }
                    for a in part.get("annotations").and_then(Value::as_array).into_iter().flatten() {
                        if a.get("type").and_then(Value::as_str) == Some("url_citation") {
                            if let Some(url) = a.get("url").and_then(Value::as_str) {
                                push(url, a.get("title").and_then(Value::as_str).unwrap_or(""));
                            }
                        }
                    }
                }
            }
            Some("web_search_call") => {
                for s in item.pointer("/action/sources").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(url) = s.get("url").and_then(Value::as_str) {
                        push(url, s.get("title").and_then(Value::as_str).unwrap_or(""));
                    }
                }
            }
            _ => {}
        }
    }
    let usage = v.get("usage").and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok());
    Some(SearchOutcome { hits, summary: Some(summary).filter(|s| !s.is_empty()), usage })
}

impl SearchBackend for OpenAiSearch {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn supports_cache_only(&self) -> bool {
        true
    }

    fn search<'a>(&'a self, req: &'a SearchRequest) -> BoxFuture<'a, Result<SearchOutcome, String>> {
        Box::pin(self.call(req))
    }
}
