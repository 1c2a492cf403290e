//! The API-key check (`[auth]`): with keys configured, `/v1/*` (and `/metrics` when
//! `metrics.require_key`) needs `Authorization: Bearer <key>`; a missing or wrong key is a
//! 401 `invalid_api_key` in the OpenAI error shape. `/healthz`, `/readyz` and the playground
//! stay open. The request's [`Project`] goes into its extensions. The key is never logged
//! nor echoed.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use protocol::ApiError;

use crate::auth::{ApiKeys, Project};
use crate::config::auth::DEFAULT_PROJECT;

/// What the key check needs: the keys, and whether `/metrics` is guarded too.
#[derive(Debug)]
pub struct Guard {
    pub keys: Arc<ApiKeys>,
    pub metrics_need_key: bool,
}

const MISSING: &str = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
const WRONG: &str = "Incorrect API key provided.";

/// True for the paths that need a key.
pub(super) fn guarded(path: &str, metrics_need_key: bool) -> bool {
    path == "/v1" || path.starts_with("/v1/") || (metrics_need_key && path == "/metrics")
}

/// The middleware: passes open paths through; checks the Bearer key on guarded ones.
pub async fn require_key(State(guard): State<Arc<Guard>>, mut req: Request, next: Next) -> Response {
    if !guarded(req.uri().path(), guard.metrics_need_key) {
        return next.run(req).await;
    }
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|k| !k.is_empty());
    let Some(presented) = presented else { return unauthorized(MISSING) };
    match guard.keys.check(presented) {
        Some((key, project)) => {
            let project = project.clone();
            req.extensions_mut().insert(project);
            req.extensions_mut().insert(key);
            next.run(req).await
        }
        None => unauthorized(WRONG),
    }
}

/// The request's project (tenant): the one of its API key, or [`DEFAULT_PROJECT`] when no
/// key is configured. Every stored object a handler reads or writes is scoped by it.
#[derive(Debug, Clone)]
pub struct Tenant(pub Project);

impl Tenant {
    /// The project name.
    pub fn as_str(&self) -> &str {
        &self.0 .0
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Tenant(parts.extensions.get::<Project>().cloned().unwrap_or_else(|| Project(DEFAULT_PROJECT.into()))))
    }
}

fn unauthorized(message: &str) -> Response {
    let mut resp = super::error::respond(StatusCode::UNAUTHORIZED, ApiError::invalid(None, message).with_code("invalid_api_key"));
    resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    resp
}

#[cfg(test)]
mod tests {
    use super::guarded;

    #[test]
    fn only_the_api_and_optionally_metrics_are_guarded() {
        assert!(guarded("/v1/responses", false));
        assert!(guarded("/v1/models/a/b", false));
        assert!(guarded("/v1", false));
        assert!(!guarded("/v10", false));
        assert!(!guarded("/healthz", true));
        assert!(!guarded("/readyz", true));
        assert!(!guarded("/", true));
        assert!(!guarded("/playground/app.js", true));
        assert!(!guarded("/metrics", false));
        assert!(guarded("/metrics", true));
    }
}
