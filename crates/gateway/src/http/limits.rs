//! `[limits]` on the wire: the per-key rate on every `/v1/*` request (after the key check),
//! and the 429 `rate_limit_exceeded` answer with `Retry-After` for every [`Refused`]
//! (rate, streams, upstream slots). The checks themselves are [`crate::admission`]'s.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use protocol::ApiError;

use crate::admission::{Admission, KeyId, Refused};

/// The request's key id ([`KeyId::ANONYMOUS`] without keys).
pub fn key_of(req: &Request) -> KeyId {
    req.extensions().get::<KeyId>().copied().unwrap_or(KeyId::ANONYMOUS)
}

/// The middleware: counts each `/v1/*` request against its key's rate.
pub async fn rate(State(admission): State<Arc<Admission>>, req: Request, next: Next) -> Response {
    if super::auth::guarded(req.uri().path(), false) {
        if let Err(refused) = admission.request(key_of(&req)) {
            return too_many(&refused);
        }
    }
    next.run(req).await
}

/// 429 `{"error":{"type":"requests","code":"rate_limit_exceeded",…}}` (as OpenAI answers a
/// requests-per-minute limit) with `Retry-After` in whole seconds.
pub fn too_many(refused: &Refused) -> Response {
    let error = ApiError { kind: "requests".into(), ..ApiError::invalid(None, refused.message()).with_code("rate_limit_exceeded") };
    let mut resp = super::error::respond(StatusCode::TOO_MANY_REQUESTS, error);
    if let Ok(v) = HeaderValue::from_str(&refused.retry_after_secs().to_string()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}
