//! The browser playground: one HTML page with its script and style, embedded in the binary
//! (`crates/gateway/assets/playground`). `GET /` and `GET /playground` answer the page
//! (`GET /playground/` redirects there), `GET /favicon.ico` its icon (SVG), `GET /playground/{file}` its assets and
//! `GET /playground/vendor/{file}` the vendored libraries that render answers as Markdown
//! (`marked` and `DOMPurify`, pinned npm builds with their licences, see
//! `assets/playground/vendor/README.md`). Nothing is fetched from elsewhere at run time.
//! With `server.playground = false` every one of these routes answers the usual 404.
//!
//! The page talks only to this gateway's public API (`/v1/models`, `/v1/gateway/tools`,
//! `/v1/vector_stores`, `/v1/responses`), with relative URLs, so it also works behind a
//! path prefix.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

use super::AppState;

/// The page itself.
const INDEX_HTML: &str = include_str!("../../assets/playground/index.html");

const JS: &str = "text/javascript; charset=utf-8";
const SVG: &str = "image/svg+xml";
/// The page's icon, also answered at `/favicon.ico` (browsers ask there by themselves).
const FAVICON: &str = include_str!("../../assets/playground/favicon.svg");
const TEXT: &str = "text/plain; charset=utf-8";

/// Assets under `/playground/`: path (below `/playground/`), content type, body.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.js", JS, include_str!("../../assets/playground/app.js")),
    ("api.js", JS, include_str!("../../assets/playground/api.js")),
    ("conversation.js", JS, include_str!("../../assets/playground/conversation.js")),
    ("dom.js", JS, include_str!("../../assets/playground/dom.js")),
    ("lib.js", JS, include_str!("../../assets/playground/lib.js")),
    ("markdown.js", JS, include_str!("../../assets/playground/markdown.js")),
    ("mcp.js", JS, include_str!("../../assets/playground/mcp.js")),
    ("settings.js", JS, include_str!("../../assets/playground/settings.js")),
    ("stream.js", JS, include_str!("../../assets/playground/stream.js")),
    ("transcript.js", JS, include_str!("../../assets/playground/transcript.js")),
    ("style.css", "text/css; charset=utf-8", include_str!("../../assets/playground/style.css")),
    ("favicon.svg", SVG, FAVICON),
    ("vendor/marked.esm.js", JS, include_str!("../../assets/playground/vendor/marked.esm.js")),
    ("vendor/purify.es.mjs", JS, include_str!("../../assets/playground/vendor/purify.es.mjs")),
    ("vendor/marked.LICENSE.md", TEXT, include_str!("../../assets/playground/vendor/marked.LICENSE.md")),
    (
        "vendor/dompurify.LICENSE-MPL-2.0.txt",
        TEXT,
        include_str!("../../assets/playground/vendor/dompurify.LICENSE-MPL-2.0.txt"),
    ),
    (
        "vendor/dompurify.LICENSE-Apache-2.0.txt",
        TEXT,
        include_str!("../../assets/playground/vendor/dompurify.LICENSE-Apache-2.0.txt"),
    ),
    ("vendor/README.md", TEXT, include_str!("../../assets/playground/vendor/README.md")),
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

/// `GET /playground/`: a redirect (308) to `../playground`, the page's own URL. The page's
/// relative URLs (`playground/app.js`) resolve only from there; the `Location` is relative so
/// that it holds behind a path prefix too.
pub async fn index_slash(State(state): State<Arc<AppState>>) -> Response {
    if !state.playground {
        return super::health::not_found().await.into_response();
    }
    axum::response::Redirect::permanent("../playground").into_response()
}

/// `GET /favicon.ico`: the playground's icon (an SVG image), or 404 when the playground is
/// turned off.
pub async fn favicon(State(state): State<Arc<AppState>>) -> Response {
    serve(&state, "favicon.svg").await
}

/// `GET /playground/{file}`: one embedded asset; unknown names (and a disabled playground)
/// answer 404.
pub async fn file(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Response {
    serve(&state, &name).await
}

/// `GET /playground/vendor/{file}`: one vendored library or its licence.
pub async fn vendor_file(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Response {
    serve(&state, &format!("vendor/{name}")).await
}

async fn serve(state: &AppState, path: &str) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == path) {
        Some((_, content_type, body)) if state.playground => asset(content_type, body),
        _ => super::health::not_found().await.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's own scripts (app.js and the modules it imports, directly or not).
    const SCRIPTS: &[&str] = &[
        "app.js",
        "api.js",
        "conversation.js",
        "dom.js",
        "lib.js",
        "markdown.js",
        "mcp.js",
        "settings.js",
        "stream.js",
        "transcript.js",
    ];

    fn body(name: &str) -> &'static str {
        ASSETS.iter().find(|(n, _, _)| *n == name).map(|a| a.2).unwrap_or_default()
    }

    #[test]
    fn the_page_references_only_embedded_assets() {
        // Every asset is served by `file` (one segment) or `vendor_file` (`vendor/` and one).
        for (name, _, _) in ASSETS {
            let rest = name.strip_prefix("vendor/").unwrap_or(name);
            assert!(!rest.contains('/') && !rest.is_empty(), "{name}");
        }
        for needle in ["playground/app.js", "playground/style.css", "playground/favicon.svg"] {
            assert!(INDEX_HTML.contains(needle), "index.html does not load {needle}");
        }
        assert!(body("app.js").contains("./conversation.js"), "app.js imports conversation.js");
        // SCRIPTS names every script served outside vendor/.
        for (name, content_type, _) in ASSETS {
            if *content_type == JS && !name.starts_with("vendor/") {
                assert!(SCRIPTS.contains(name), "{name} is missing from SCRIPTS");
            }
        }
        // Every relative module import of the page's own scripts is an embedded asset.
        for script in SCRIPTS {
            for line in body(script).lines().filter(|l| l.contains(" from './")) {
                let target = line.split(" from './").nth(1).and_then(|t| t.split('\'').next()).unwrap_or("");
                assert!(ASSETS.iter().any(|(n, _, _)| *n == target), "{script} imports {target}, which is not served");
            }
        }
    }

    #[test]
    fn the_vendored_libraries_carry_their_versions_and_licences() {
        assert!(body("vendor/marked.esm.js").starts_with("/**\n * marked v18.2.1 "));
        assert!(body("vendor/purify.es.mjs").starts_with("/*! @license DOMPurify 3.5.0 "));
        assert!(body("vendor/marked.LICENSE.md").contains("Permission is hereby granted"));
        assert!(body("vendor/dompurify.LICENSE-MPL-2.0.txt").contains("Mozilla Public License Version 2.0"));
        assert!(body("vendor/dompurify.LICENSE-Apache-2.0.txt").contains("Apache License"));
        // Nothing the page runs refers to another origin.
        for script in SCRIPTS {
            assert!(!body(script).contains(" from 'http"), "{script}");
        }
    }
}
