//! The remote file-search executor: any OpenAI-compatible vector store API, with OGX
//! (formerly Llama Stack) the reference (`shared/reference/real-backends.md`). One
//! `POST {url}/vector_stores/{id}/search` per store and query. OGX quirks: the real `file-…`
//! id is `attributes.file_id` (its `file_id` is an internal document id); scores above 1 are
//! **clamped** to 1 (negative ones to 0); `search_query` may be a string or an array; and an
//! internal failure is an empty 200 page, so an empty page is only believed after
//! `GET {url}/health` answers healthy (a store without that route, 404, is believed).

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::file_search::{FileHit, FileSearchRequest, VectorStoreBackend};

/// A configured remote vector store API.
#[derive(Debug, Clone)]
pub struct RemoteVectorStore {
    client: reqwest::Client,
    base: String,
    api_key: Option<String>,
    /// The key's environment variable, named (never the key) in 401/403 messages.
    key_env: Option<String>,
}

#[derive(Deserialize)]
struct Page {
    data: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    #[serde(default)]
    file_id: Option<String>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    attributes: Option<Map<String, Value>>,
    #[serde(default)]
    content: Vec<Content>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    text: Option<String>,
}

impl RemoteVectorStore {
    /// `url` is the base URL including `/v1`; `timeout` bounds each request.
    pub fn new(url: &str, api_key: Option<String>, key_env: Option<String>, timeout: Duration) -> anyhow::Result<Self> {
        crate::crypto::install();
        let parsed = reqwest::Url::parse(url).map_err(|e| anyhow::anyhow!("url is not a valid URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            anyhow::bail!("url must be http or https");
        }
        let client = reqwest::Client::builder().timeout(timeout).build()?;
        Ok(RemoteVectorStore { client, base: url.trim_end_matches('/').to_string(), api_key, key_env })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let rb = self.client.request(method, format!("{}{path}", self.base)).header("accept", "application/json");
        match &self.api_key {
            Some(k) => rb.bearer_auth(k),
            None => rb,
        }
    }

    fn transport(e: reqwest::Error) -> String {
        if e.is_timeout() {
            "the vector store timed out".to_string()
        } else {
            "the vector store is unreachable".to_string()
        }
    }

    fn status_error(&self, status: u16) -> String {
        match status {
            401 | 403 => match &self.key_env {
                Some(var) => format!("the vector store rejected the API key (HTTP {status}): the key in {var} is wrong or lacks access"),
                None => format!("the vector store requires an API key (HTTP {status}): set api_key_env for this remote"),
            },
            404 => "the vector store does not exist on the remote (HTTP 404)".to_string(),
            s => format!("the vector store answered HTTP {s}"),
        }
    }

    /// True when `GET {url}/health` answers 2xx (with `status` OK when it has one) or 404.
    async fn healthy(&self) -> bool {
        let Ok(resp) = self.request(reqwest::Method::GET, "/health").send().await else { return false };
        match resp.status().as_u16() {
            404 => true,
            s if (200..300).contains(&s) => match resp.json::<Value>().await {
                Ok(v) => v.get("status").and_then(Value::as_str).is_none_or(|s| s.eq_ignore_ascii_case("ok") || s.eq_ignore_ascii_case("healthy")),
                Err(_) => true,
            },
            _ => false,
        }
    }

    async fn search_one(&self, store_id: &str, req: &FileSearchRequest) -> Result<Vec<FileHit>, String> {
        let mut body = json!({"query": req.query, "max_num_results": req.max_num_results.clamp(1, 50)});
        if let Some(f) = &req.filters {
            body["filters"] = f.clone();
        }
        let mut ranking = Map::new();
        if let Some(r) = &req.ranker {
            ranking.insert("ranker".into(), json!(r));
        }
        if req.score_threshold > 0.0 {
            ranking.insert("score_threshold".into(), json!(req.score_threshold));
        }
        if let Some((e, t)) = req.hybrid {
            ranking.insert("hybrid_search".into(), json!({"embedding_weight": e, "text_weight": t}));
        }
        if !ranking.is_empty() {
            body["ranking_options"] = Value::Object(ranking);
        }
        let path = format!("/vector_stores/{}/search", urlencode(store_id));
        let mut resp = self.request(reqwest::Method::POST, &path).json(&body).send().await.map_err(Self::transport)?;
        if resp.status().as_u16() == 400 && body.pointer("/ranking_options/hybrid_search").is_some() {
            // A store without weighted hybrid search (OGX on faiss) refuses the weights:
            // they are honoured where possible, so search again without them.
            let message = error_message(resp).await;
            if !message.to_ascii_lowercase().contains("hybrid") {
                return Err(format!("the vector store refused the search (HTTP 400): {message}"));
            }
            if let Some(r) = body.get_mut("ranking_options").and_then(Value::as_object_mut) {
                r.remove("hybrid_search");
            }
            resp = self.request(reqwest::Method::POST, &path).json(&body).send().await.map_err(Self::transport)?;
        }
        let status = resp.status();
        if status.as_u16() == 400 {
            return Err(format!("the vector store refused the search (HTTP 400): {}", error_message(resp).await));
        }
        if !status.is_success() {
            return Err(self.status_error(status.as_u16()));
        }
        let bytes = resp.bytes().await.map_err(Self::transport)?;
        let page: Page = serde_json::from_slice(&bytes).map_err(|_| "the vector store answered a malformed search page".to_string())?;
        if page.data.is_empty() && !self.healthy().await {
            return Err("the vector store answered an empty page and its health check failed (an internal search failure)".into());
        }
        Ok(page.data.into_iter().map(hit).collect())
    }
}

fn hit(h: Hit) -> FileHit {
    let attributes = h.attributes.unwrap_or_default();
    // OGX: `file_id` is an internal document id; the `file-…` id is in the attributes.
    let file_id = attributes
        .get("file_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or(h.file_id)
        .unwrap_or_default();
    let filename = h
        .filename
        .filter(|f| !f.is_empty())
        .or_else(|| attributes.get("filename").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| file_id.clone());
    let score = h.score.filter(|s| s.is_finite()).unwrap_or(0.0).clamp(0.0, 1.0);
    let text = h.content.into_iter().filter_map(|c| c.text).collect::<Vec<_>>().join("\n");
    FileHit { file_id, filename, score, text, attributes }
}

/// The `error.message` (or `message`, or `error` string) of an error body, cut to 200
/// characters: what the store said went wrong, for the model and the logs (a 400 echoes
/// the request, which holds no credentials).
async fn error_message(resp: reqwest::Response) -> String {
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    let msg = body
        .pointer("/error/message")
        .or_else(|| body.get("message"))
        .or_else(|| body.get("error"))
        .or_else(|| body.get("detail"))
        .and_then(Value::as_str)
        .unwrap_or("no message");
    msg.chars().take(200).collect()
}

fn urlencode(id: &str) -> String {
    url::form_urlencoded::byte_serialize(id.as_bytes()).collect()
}

impl VectorStoreBackend for RemoteVectorStore {
    fn kind(&self) -> &'static str {
        "remote"
    }

    fn has_store<'a>(&'a self, _project: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let path = format!("/vector_stores/{}", urlencode(id));
            let resp = self.request(reqwest::Method::GET, &path).send().await.map_err(Self::transport)?;
            match resp.status().as_u16() {
                s if (200..300).contains(&s) => Ok(true),
                404 => Ok(false),
                // OGX answers an unknown store with 400 "Vector_store '…' not found".
                400 if error_message(resp).await.to_ascii_lowercase().contains("not found") => Ok(false),
                s => Err(self.status_error(s)),
            }
        })
    }

    fn search<'a>(&'a self, store_id: &'a str, req: &'a FileSearchRequest) -> BoxFuture<'a, Result<Vec<FileHit>, String>> {
        Box::pin(self.search_one(store_id, req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ogx_hits_use_the_attribute_file_id_and_clamped_scores() {
        let page: Page = serde_json::from_value(json!({
            "object": "vector_store.search_results.page", "search_query": ["q"],
            "data": [{"file_id": "5f1c-uuid", "filename": "notes.md", "score": 1.7,
                      "attributes": {"file_id": "file-abc", "team": "infra"},
                      "content": [{"type": "text", "text": "hello", "embedding": null}]}],
            "has_more": false, "next_page": null
        }))
        .expect("page");
        let h = hit(page.data.into_iter().next().expect("one hit"));
        assert_eq!((h.file_id.as_str(), h.filename.as_str(), h.score, h.text.as_str()), ("file-abc", "notes.md", 1.0, "hello"));
    }
}
