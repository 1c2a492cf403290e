//! What every HTTP upstream shares: one pooled client, the base URL and its credentials
//! (Bearer key, or the URL's `user:password` as Basic), the POST of a round with the error
//! classification of its answer, `GET {base}/models`, and the redaction of every credential
//! from error messages. Each wire API's adapter (`chat/`, `responses/`) wraps one.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use crate::upstream::redact::Secrets;
use crate::upstream::UpstreamError;

/// A configured HTTP upstream (`[upstream]`).
#[derive(Debug, Clone)]
pub struct HttpUpstream {
    client: reqwest::Client,
    /// The base URL without its `user:password@` (sent as Basic auth when there is no key).
    base: reqwest::Url,
    api_key: Option<String>,
    basic: Option<(String, Option<String>)>,
    /// Every credential an upstream message could echo: the key, the URL's password, its
    /// `user:password`, the URL's query values (any encoding, and Base64). Replaced by
    /// `[redacted]` in every error message.
    secrets: Arc<Secrets>,
    idle: Duration,
}

/// `base` with `path` appended to its path; the query string stays at the end.
pub fn endpoint(base: &reqwest::Url, path: &str) -> reqwest::Url {
    let mut u = base.clone();
    let joined = format!("{}{path}", base.path().trim_end_matches('/'));
    u.set_path(&joined);
    u
}

/// True when an upstream 404's `message` is about `model`: it says "model" and names it as a
/// whole (`The model `m` does not exist.`, `model "m" not found`), not inside a path
/// (`/v1/chat/completions` for model `v1`) or a longer name (`m-lora`).
/// `err` as [`UpstreamError::UnknownModel`] when it is a 404 (an HTTP answer, or an error
/// sent inside a 200 stream with `code: 404`) whose message names `model`; else `err`.
pub fn about_the_model(err: UpstreamError, model: &str) -> UpstreamError {
    match err {
        UpstreamError::Status { status: 404, message } if names_the_model(&message, model) => UpstreamError::UnknownModel(message),
        other => other,
    }
}

fn names_the_model(message: &str, model: &str) -> bool {
    if model.is_empty() || !message.to_ascii_lowercase().contains("model") {
        return false;
    }
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '/' | ':' | '.');
    message.match_indices(model).any(|(i, _)| {
        let before = message[..i].chars().next_back();
        let mut after = message[i + model.len()..].chars();
        let next = after.next();
        // A full stop after the name ends the sentence; before it, or inside, it is part of a name.
        let ends = match next {
            None => true,
            Some('.') => after.next().is_none_or(|c| !name_char(c)),
            Some(c) => !name_char(c),
        };
        !before.is_some_and(name_char) && ends
    })
}

/// A URL's percent-encoded user or password, decoded (as sent in Basic auth).
fn percent(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

impl HttpUpstream {
    /// `base` is the OpenAI base URL including `/v1`; `idle` bounds every wait on the
    /// upstream (headers and each chunk); `pool_idle` closes unused pooled connections.
    pub fn new(base: &str, api_key: Option<String>, idle: Duration, connect: Duration, pool_idle: Duration) -> anyhow::Result<Self> {
        crate::crypto::install();
        let client = reqwest::Client::builder()
            .connect_timeout(connect)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(256)
            .pool_idle_timeout(pool_idle)
            .build()?;
        let mut base = reqwest::Url::parse(base)?;
        let user = percent(base.username());
        let password = base.password().map(percent);
        let mut secrets: Vec<String> = api_key.iter().cloned().collect();
        if let Some(pw) = password.as_ref().filter(|p| !p.is_empty()) {
            // The pair also as written in the URL: its Base64 differs from the decoded one's.
            let raw = format!("{}:{}", base.username(), base.password().unwrap_or_default());
            secrets.extend([pw.clone(), format!("{user}:{pw}"), raw]);
        }
        secrets.extend(base.query_pairs().map(|(_, v)| v.into_owned()).filter(|v| v.len() >= 4));
        let secrets = Arc::new(Secrets::new(secrets));
        let basic = (!base.username().is_empty()).then_some((user, password));
        let _ = base.set_username("");
        let _ = base.set_password(None);
        Ok(HttpUpstream { client, base, api_key, basic, secrets, idle })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.auth(self.client.request(method, endpoint(&self.base, path)))
    }

    /// The key as Bearer; else the URL's `user:password` as Basic; else nothing.
    fn auth(&self, rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match (&self.api_key, &self.basic) {
            (Some(k), _) => rb.bearer_auth(k),
            (None, Some((user, password))) => rb.basic_auth(user, password.as_ref()),
            (None, None) => rb,
        }
    }

    /// `GET {base}/models` (used by `/v1/models` and `/readyz`), rebuilt as the OpenAI list
    /// shape `{"object":"list","data":[{"id","object":"model","created","owned_by"}]}`: only
    /// these fields of each entry with a string `id` are kept (`created` 0 when it is not an
    /// integer, `owned_by` "upstream" when it is not a string), and the strings pass through
    /// the credential redaction ([`Secrets::redact`]), so an upstream echoing the key in its
    /// list never shows it to a client. A body without a `data` array is an empty list.
    pub async fn models(&self, timeout: Duration) -> Result<Value, UpstreamError> {
        let resp = self.send_once_more(timeout, false, || self.request(reqwest::Method::GET, "/models")).await?;
        let status = resp.status();
        if !status.is_success() {
            return Err(UpstreamError::Status { status: status.as_u16(), message: "models list failed".into() });
        }
        let body = resp.json::<Value>().await.map_err(|_| UpstreamError::Protocol("models list is not JSON".into()))?;
        Ok(model_list(&body, &self.secrets))
    }

    /// `{base}{path}` (the base's query string kept).
    pub fn url(&self, path: &str) -> reqwest::Url {
        endpoint(&self.base, path)
    }

    /// The longest silence allowed from the upstream (headers, each chunk).
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// The credentials to redact from what the upstream says.
    pub fn secrets(&self) -> Arc<Secrets> {
        self.secrets.clone()
    }

    /// POSTs the JSON `body` of one round for `model` to `url` and returns the answer's
    /// head. Errors: an unsuccessful status as `Status` with the upstream's own message
    /// (a 404 naming `model` is `UnknownModel`; a 401/403 names only the gateway's key
    /// setting), else `Timeout` or `Unreachable`, redacted.
    /// A large body the upstream closed the connection on while it was sent (twice) is its
    /// refusal, as the 413 it may have answered instead, depending on timing (issue 28).
    pub async fn post_round(&self, url: &reqwest::Url, body: Bytes, model: &str) -> Result<reqwest::Response, UpstreamError> {
        let large = body.len() >= LARGE_BODY;
        let resp = self
            .send_once_more(self.idle, large, || {
                let post = self.client.post(url.clone()).header(reqwest::header::CONTENT_TYPE, "application/json");
                self.auth(post.body(body.clone()))
            })
            .await?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let text = tokio::time::timeout(self.idle, resp.bytes()).await.ok().and_then(Result::ok).unwrap_or_default();
        // A 401/403 is about the gateway's own credentials: what the upstream says of them
        // (often a masked key) is not the client's business.
        let message = if matches!(status.as_u16(), 401 | 403) {
            "the upstream refused the gateway's credentials (see upstream.api_key_env)".to_string()
        } else {
            self.error_message(&text)
        };
        Err(about_the_model(UpstreamError::Status { status: status.as_u16(), message }, model))
    }

    /// The whole body of an answer, within the idle timeout.
    pub async fn body(&self, resp: reqwest::Response) -> Result<Bytes, UpstreamError> {
        match tokio::time::timeout(self.idle, resp.bytes()).await {
            Ok(Ok(b)) => Ok(b),
            Ok(Err(e)) => Err(self.sanitize(e)),
            Err(_) => Err(UpstreamError::Timeout(self.idle.as_millis() as u64)),
        }
    }

    /// Sends the request `build` makes, waiting at most `timeout` for the response head. A
    /// pooled keep-alive connection the server closed just as it was reused (llama.cpp closes
    /// idle ones after 5 s) fails before any response byte: the request is sent once more on
    /// a fresh connection, as the OpenAI SDKs do. Errors: `Timeout`; with a `large` body the
    /// upstream closed while it was being sent, the 413 [`refused_large_body`]; else the
    /// sanitized error.
    async fn send_once_more(
        &self,
        timeout: Duration,
        large: bool,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, UpstreamError> {
        let mut retried = false;
        loop {
            match tokio::time::timeout(timeout, build().send()).await {
                Err(_) => return Err(UpstreamError::Timeout(timeout.as_millis() as u64)),
                Ok(Ok(resp)) => return Ok(resp),
                Ok(Err(e)) if !retried && e.is_request() && !e.is_timeout() => {
                    tracing::debug!(error = %self.redact(&e.without_url().to_string()), "upstream send failed; retrying once");
                    retried = true;
                }
                Ok(Err(e)) if large && closed_while_sending(&e) => return Err(refused_large_body()),
                Ok(Err(e)) => return Err(self.sanitize(e)),
            }
        }
    }

    /// A reqwest error without its URL (which may carry credentials) and without the key.
    fn sanitize(&self, e: reqwest::Error) -> UpstreamError {
        let timeout = e.is_timeout();
        let e = e.without_url();
        // The causes say why ("connection refused", a TLS error); they carry no URL.
        let msg = self.redact(&crate::error::with_causes(&e));
        if timeout {
            UpstreamError::Timeout(self.idle.as_millis() as u64)
        } else {
            UpstreamError::Unreachable(msg)
        }
    }

    pub fn redact(&self, s: &str) -> String {
        self.secrets.redact(s)
    }

    /// The upstream's own error message (`error.message`, `error`, or `message`; a body
    /// that is not JSON is the message itself), cut to 500 characters, key redacted.
    fn error_message(&self, body: &[u8]) -> String {
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let msg = match &parsed {
            Some(v) => v
                .pointer("/error/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("message"))
                .or_else(|| v.get("detail"))
                .and_then(|m| match m {
                    Value::String(s) => Some(s.clone()),
                    // FastAPI's validation errors: `{"detail": [{…}]}`.
                    Value::Array(_) | Value::Object(_) => Some(m.to_string()),
                    _ => None,
                }),
            None => std::str::from_utf8(body).ok().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string),
        };
        let msg = msg.unwrap_or_else(|| "no error message".to_string());
        let msg: String = msg.chars().take(500).collect();
        self.redact(&msg)
    }
}

/// A request body this large (bytes) that the upstream cuts off while it is sent is
/// refused for its size ([`refused_large_body`]).
pub const LARGE_BODY: usize = 1 << 20;

/// True when `e` is the connection closed under the request as it was written (a broken
/// pipe, a reset, or hyper's "closed before message completed"), not a failure to connect
/// or a timeout.
fn closed_while_sending(e: &reqwest::Error) -> bool {
    if e.is_connect() || e.is_timeout() {
        return false;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset};
            return matches!(io.kind(), BrokenPipe | ConnectionReset | ConnectionAborted);
        }
        if s.to_string().contains("connection closed before message completed") {
            return true;
        }
        source = s.source();
    }
    false
}

/// The refusal of a large body the upstream closed the connection on: a 413, as the
/// answer it sends when the timing lets the gateway read it (a 400 for the client).
fn refused_large_body() -> UpstreamError {
    UpstreamError::Status {
        status: 413,
        message: "the upstream closed the connection while the request was sent: it refuses a request this large".into(),
    }
}

/// The OpenAI model list rebuilt from an upstream's `/models` body (see
/// [`HttpUpstream::models`]); empty without a `data` array.
fn model_list(body: &Value, secrets: &Secrets) -> Value {
    let data = body.get("data").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let models: Vec<Value> = data
        .iter()
        .filter_map(|m| {
            let id = m.get("id")?.as_str()?;
            let created = m.get("created").and_then(Value::as_i64).unwrap_or(0);
            let owned_by = m.get("owned_by").and_then(Value::as_str).unwrap_or("upstream");
            Some(serde_json::json!({
                "id": secrets.redact(id),
                "object": "model",
                "created": created,
                "owned_by": secrets.redact(owned_by),
            }))
        })
        .collect();
    serde_json::json!({"object": "list", "data": models})
}

#[cfg(test)]
mod tests {
    use super::names_the_model;

    #[test]
    fn a_404_is_about_the_model_only_when_it_names_it() {
        for (message, model) in [
            ("The model `gpt-4o` does not exist.", "gpt-4o"),
            ("model \"llama3:8b\" not found, try pulling it first", "llama3:8b"),
            ("The model Qwen/Qwen3-8B does not exist", "Qwen/Qwen3-8B"),
            ("Unknown model: m1.", "m1"),
        ] {
            assert!(names_the_model(message, model), "{message}");
        }
        for (message, model) in [
            ("Cannot POST /v1/chat/completions", "v1"),
            ("Route /v1/chat/completions not found. Did you mean /v1/models?", "chat"),
            ("Not Found", "Not"),
            ("The model `qwen-x-lora` does not exist.", "qwen-x"),
            ("file not found for qwen-x adapter", "qwen-x"),
            ("The model `m.1` does not exist.", "m"),
            ("model missing", ""),
        ] {
            assert!(!names_the_model(message, model), "{message} / {model}");
        }
    }
}
