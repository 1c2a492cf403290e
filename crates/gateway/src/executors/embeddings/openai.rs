//! The `openai` embeddings backend: any OpenAI-compatible `POST {url}/embeddings` (OpenAI,
//! vLLM, llama.cpp, Ollama, OGX, …) with `{"model", "input": [texts]}`, answered with
//! `{"data": [{"index", "embedding": [floats]}]}`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;

use super::{normalize, Embedder};
use crate::upstream::redact::Secrets;

/// Largest number of texts sent in one request (OpenAI allows 2048; local servers less).
pub const MAX_BATCH: usize = 64;

/// Largest part of an endpoint's own error message repeated in ours, in characters.
const MAX_ERROR_CHARS: usize = 300;

/// An OpenAI-compatible embeddings endpoint. Vectors are normalized to unit length; their
/// length is learned from the first answer and every later answer must match it.
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    /// 0 until the first successful answer.
    dims: AtomicUsize,
    /// The key, in every form a message could echo it.
    secrets: Secrets,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Page {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// `base` is the base URL including `/v1` (requests go to `{base}/embeddings`); `model`
    /// is sent as is; `api_key` (optional) goes in `Authorization: Bearer`; `timeout` bounds
    /// each request of at most [`MAX_BATCH`] texts. Errors on a URL that is not http(s).
    pub fn new(base: &str, model: &str, api_key: Option<String>, timeout: Duration) -> anyhow::Result<Self> {
        crate::crypto::install();
        let endpoint = format!("{}/embeddings", base.trim_end_matches('/'));
        let endpoint = reqwest::Url::parse(&endpoint)
            .map_err(|e| anyhow::anyhow!("file_search.embedded.embeddings.url is not a valid URL: {e}"))?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            anyhow::bail!("file_search.embedded.embeddings.url must be http or https");
        }
        let client = reqwest::Client::builder().timeout(timeout).build()?;
        Ok(OpenAiEmbedder {
            client,
            endpoint,
            model: model.to_string(),
            secrets: Secrets::new(api_key.clone()),
            api_key: api_key.filter(|k| !k.is_empty()),
            timeout,
            dims: AtomicUsize::new(0),
        })
    }

    /// `s` with the key, in any encoding, replaced by `[redacted]`.
    fn redact(&self, s: &str) -> String {
        self.secrets.redact(s)
    }

    /// One request for at most [`MAX_BATCH`] texts: unit vectors in input order.
    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let body = serde_json::json!({ "model": self.model, "input": texts });
        let mut rb = self.client.post(self.endpoint.clone()).json(&body);
        if let Some(k) = &self.api_key {
            rb = rb.bearer_auth(k);
        }
        let resp = rb.send().await.map_err(|e| self.transport_error(e))?;
        let status = resp.status();
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            // The body is not repeated: some servers echo (part of) the key they rejected.
            return Err(match self.api_key {
                Some(_) => format!(
                    "the embeddings endpoint rejected the key (HTTP {}): check the variable named by \
                     file_search.embedded.embeddings.api_key_env",
                    status.as_u16()
                ),
                None => format!(
                    "the embeddings endpoint wants a key (HTTP {}): set file_search.embedded.embeddings.api_key_env",
                    status.as_u16()
                ),
            });
        }
        let bytes = resp.bytes().await.map_err(|e| self.transport_error(e))?;
        if !status.is_success() {
            let detail = error_message(&bytes);
            let detail = if detail.is_empty() { String::new() } else { format!(": {}", self.redact(&detail)) };
            return Err(format!("the embeddings endpoint answered HTTP {}{detail}", status.as_u16()));
        }
        let page: Page = serde_json::from_slice(&bytes)
            .map_err(|e| self.redact(&format!("the embeddings endpoint's answer is not an embeddings list ({e})")))?;
        if page.data.len() != texts.len() {
            return Err(format!("the embeddings endpoint returned {} vectors for {} texts", page.data.len(), texts.len()));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for item in page.data {
            let slot = out
                .get_mut(item.index)
                .ok_or_else(|| format!("the embeddings endpoint returned index {} for {} texts", item.index, texts.len()))?;
            if slot.is_some() {
                return Err(format!("the embeddings endpoint returned index {} twice", item.index));
            }
            *slot = Some(item.embedding);
        }
        let mut vectors = Vec::with_capacity(texts.len());
        for v in out.into_iter().flatten() {
            vectors.push(v);
        }
        for v in &mut vectors {
            self.check_dims(v.len())?;
            normalize(v)?;
        }
        Ok(vectors)
    }

    /// Records the vector length on first use; `Err` when a later vector differs.
    fn check_dims(&self, n: usize) -> Result<(), String> {
        if n == 0 {
            return Err("the embeddings endpoint returned an empty vector".into());
        }
        match self.dims.compare_exchange(0, n, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(()),
            Err(known) if known == n => Ok(()),
            Err(known) => Err(format!("the embeddings endpoint returned {n} dimensions where {known} were expected")),
        }
    }

    /// A send/receive failure as a message without the URL (it may hold credentials).
    fn transport_error(&self, e: reqwest::Error) -> String {
        if e.is_timeout() {
            format!("the embeddings endpoint timed out after {} ms", self.timeout.as_millis())
        } else if e.is_connect() {
            "the embeddings endpoint is unreachable".to_string()
        } else {
            let e = e.without_url();
            self.redact(&format!("the embeddings request failed: {e}"))
        }
    }
}

/// The endpoint's own message (`error.message`, `error` or `message`) cut to
/// [`MAX_ERROR_CHARS`] characters; empty when the body has none.
fn error_message(body: &[u8]) -> String {
    let v: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => return String::new(),
    };
    let msg = v
        .pointer("/error/message")
        .or_else(|| v.get("error"))
        .or_else(|| v.get("message"))
        .and_then(|m| m.as_str())
        .unwrap_or_default();
    msg.chars().take(MAX_ERROR_CHARS).collect()
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn dims(&self) -> usize {
        self.dims.load(Ordering::Acquire)
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, String>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(texts.len());
            for batch in texts.chunks(MAX_BATCH) {
                out.extend(self.embed_batch(batch).await?);
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_reads_the_usual_shapes_and_is_bounded() {
        assert_eq!(error_message(br#"{"error":{"message":"bad model"}}"#), "bad model");
        assert_eq!(error_message(br#"{"error":"overloaded"}"#), "overloaded");
        assert_eq!(error_message(br#"{"message":"nope"}"#), "nope");
        assert_eq!(error_message(b"<html>"), "");
        let long = format!(r#"{{"message":"{}"}}"#, "x".repeat(1000));
        assert_eq!(error_message(long.as_bytes()).chars().count(), MAX_ERROR_CHARS);
    }

    #[test]
    fn debug_never_shows_the_key() {
        let e = OpenAiEmbedder::new("http://127.0.0.1:9/v1", "m", Some("sk-secret-123".into()), Duration::from_secs(1)).unwrap();
        let d = format!("{e:?}");
        assert!(!d.contains("sk-secret-123") && d.contains("[redacted]"), "{d}");
        assert_eq!(e.endpoint.as_str(), "http://127.0.0.1:9/v1/embeddings");
    }

    #[test]
    fn a_non_http_url_is_rejected() {
        let e = OpenAiEmbedder::new("ftp://example/v1", "m", None, Duration::from_secs(1)).unwrap_err().to_string();
        assert!(e.contains("http or https"), "{e}");
    }
}
