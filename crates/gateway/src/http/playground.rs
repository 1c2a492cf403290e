//! The browser playground: one HTML page with its script and style, embedded in the binary
//! (`crates/gateway/assets/playground`). `GET /` and `GET /playground` answer the page,
//! `GET /playground/{file}` its assets. With `server.playground = false` every one of these
//! routes answers the usual 404.
//!
//! The page talks only to this gateway's public API (`/v1/models`, `/v1/vector_stores`,
//! `/v1/responses`), with relative URLs, so it also works behind a path prefix.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

use super::AppState;

/// The page itself.
const INDEX_HTML: &str = include_str!("../../assets/playground/index.html");

/// Assets under `/playground/`: file name, content type, body.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.js", "text/javascript; charset=utf-8", include_str!("../../assets/playground/app.js")),
    ("lib.js", "text/javascript; charset=utf-8", include_str!("../../assets/playground/lib.js")),
    ("style.css", "text/css; charset=utf-8", include_str!("../../assets/playground/style.css")),
];

/// Only same-origin scripts, styles and requests; no framing, no inline code.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// A static body with its content type and the page's security headers.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    response
}

/// `GET /` and `GET /playground`: the page, or 404 when the playground is turned off.
pub async fn index(State(state): State<Arc<AppState>>) -> Response {
    if !state.playground {
        return super::health::not_found().await.into_response();
    }
    asset("text/html; charset=utf-8", INDEX_HTML)
}

/// `GET /playground/{file}`: one embedded asset; unknown names (and a disabled playground)
/// answer 404.
pub async fn file(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, body)) if state.playground => asset(content_type, body),
        _ => super::health::not_found().await.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_references_only_embedded_assets() {
        // Every script and stylesheet the page loads is served by `file`.
        for (name, _, _) in ASSETS {
            assert!(!name.contains('/'), "{name}");
        }
        for needle in ["playground/app.js", "playground/style.css"] {
            assert!(INDEX_HTML.contains(needle), "index.html does not load {needle}");
        }
        let app = ASSETS.iter().find(|(n, _, _)| *n == "app.js").map(|a| a.2).unwrap_or_default();
        assert!(app.contains("./lib.js"), "app.js imports lib.js");
    }
}
