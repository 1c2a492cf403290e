//! The media type of a `/v1/*` POST body (issue 28, point 2): `application/json` (any
//! parameters, e.g. `charset`), and `multipart/form-data` for `POST /v1/files`. Anything
//! else (a form or `text/plain`, which any web page may send without a CORS preflight) or
//! no `Content-Type` is a 415 `unsupported_media_type` before the body is read. A POST
//! without a body (`/cancel`) needs none.

use axum::body::HttpBody;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use protocol::ApiError;

/// The media type a POST to `path` takes, if it is checked.
pub fn expected(path: &str) -> Option<&'static str> {
    if !path.starts_with("/v1/") {
        return None;
    }
    Some(if path.trim_end_matches('/') == "/v1/files" { "multipart/form-data" } else { "application/json" })
}

/// True when the `Content-Type` value `given` is the media type `want` (case-insensitive,
/// parameters ignored).
pub fn is(given: &[u8], want: &str) -> bool {
    let given = String::from_utf8_lossy(given);
    let media = given.split(';').next().unwrap_or_default().trim();
    media.eq_ignore_ascii_case(want)
}

/// The middleware.
pub async fn check(req: Request, next: Next) -> Response {
    if req.method() != Method::POST || req.body().is_end_stream() {
        return next.run(req).await;
    }
    let Some(want) = expected(req.uri().path()) else { return next.run(req).await };
    let given = req.headers().get(header::CONTENT_TYPE);
    if given.is_some_and(|g| is(g.as_bytes(), want)) {
        return next.run(req).await;
    }
    let message = match given {
        Some(g) => {
            let g: String = String::from_utf8_lossy(g.as_bytes()).chars().take(100).collect();
            format!("Unsupported Content-Type '{g}': this endpoint takes '{want}'.")
        }
        None => format!("Missing Content-Type: this endpoint takes '{want}'."),
    };
    super::error::respond(StatusCode::UNSUPPORTED_MEDIA_TYPE, ApiError::invalid(None, message).with_code("unsupported_media_type"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types() {
        assert!(is(b"application/json", "application/json"));
        assert!(is(b"Application/JSON; charset=utf-8", "application/json"));
        assert!(is(b"multipart/form-data; boundary=x", "multipart/form-data"));
        for bad in [&b"text/plain"[..], b"application/x-www-form-urlencoded", b"application/jsonx", b""] {
            assert!(!is(bad, "application/json"), "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(expected("/v1/files"), Some("multipart/form-data"));
        assert_eq!(expected("/v1/responses"), Some("application/json"));
        assert_eq!(expected("/healthz"), None);
    }
}
