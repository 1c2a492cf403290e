//! A local HTTP server shaped like a remote OpenAI-compatible vector store API (OpenAI's and
//! OGX's search page shapes), with the failure modes the remote executor must tell apart.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

/// How the search endpoint answers.
#[derive(Debug, Clone)]
pub enum VsMode {
    /// OpenAI's page shape with these hits `(file_id, filename, score, text)`.
    OpenAi(Vec<(&'static str, &'static str, f64, &'static str)>),
    /// OGX's shape: internal `file_id`, the real one in `attributes.file_id`, scores > 1,
    /// `search_query` an array, extra null fields.
    Ogx(Vec<(&'static str, &'static str, f64, &'static str)>),
    /// OpenAI's page, but a body with `ranking_options.hybrid_search` gets OGX-on-faiss's 400.
    NoHybrid(Vec<(&'static str, &'static str, f64, &'static str)>),
    /// An empty 200 page while `/v1/health` says healthy (a true zero-result search).
    EmptyHealthy,
    /// An empty 200 page while `/v1/health` fails (OGX's internal-failure answer).
    EmptyBroken,
    Status(u16),
    Malformed,
    Hang,
}

#[derive(Default)]
struct Inner {
    mode: Option<VsMode>,
    seen: Vec<Value>,
}

#[derive(Clone)]
pub struct VectorFixture {
    /// Base URL including `/v1`.
    pub base: String,
    inner: Arc<Mutex<Inner>>,
}

/// Store ids the fixture knows.
pub const STORES: [&str; 2] = ["vs_remote_a", "vs_remote_b"];

impl VectorFixture {
    pub async fn start() -> VectorFixture {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/v1/vector_stores/{id}", get(store))
            .route("/v1/vector_stores/{id}/search", post(search))
            .route("/v1/health", get(health))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        VectorFixture { base, inner }
    }

    pub fn set(&self, mode: VsMode) {
        self.inner.lock().unwrap().mode = Some(mode);
    }

    /// Every search request: `{store, body, authorization}`.
    pub fn seen(&self) -> Vec<Value> {
        self.inner.lock().unwrap().seen.clone()
    }
}

async fn store(Path(id): Path<String>) -> Response {
    if STORES.contains(&id.as_str()) {
        Json(json!({"id": id, "object": "vector_store"})).into_response()
    } else if id.starts_with("vs_ogx_") {
        // OGX answers an unknown store with 400.
        (StatusCode::BAD_REQUEST, Json(json!({"error": {"message": format!("Vector_store '{id}' not found")}}))).into_response()
    } else {
        (StatusCode::NOT_FOUND, Json(json!({"error": {"message": "not found"}}))).into_response()
    }
}

async fn health(State(inner): State<Arc<Mutex<Inner>>>) -> Response {
    let broken = matches!(inner.lock().unwrap().mode, Some(VsMode::EmptyBroken));
    if broken {
        (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"status": "Error"}))).into_response()
    } else {
        Json(json!({"status": "OK"})).into_response()
    }
}

async fn search(State(inner): State<Arc<Mutex<Inner>>>, Path(id): Path<String>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let mode = {
        let mut g = inner.lock().unwrap();
        let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
        g.seen.push(json!({"store": id, "body": body, "authorization": auth}));
        g.mode.clone().unwrap_or(VsMode::EmptyHealthy)
    };
    let query = body["query"].clone();
    let mode = match mode {
        VsMode::NoHybrid(_) if body.pointer("/ranking_options/hybrid_search").is_some() => {
            let msg = format!("The provider of vector store '{id}' does not support weighted hybrid search.");
            return (StatusCode::BAD_REQUEST, Json(json!({"error": {"message": msg}}))).into_response();
        }
        VsMode::NoHybrid(hits) => VsMode::OpenAi(hits),
        m => m,
    };
    match mode {
        VsMode::OpenAi(hits) => Json(json!({
            "object": "vector_store.search_results.page",
            "search_query": query,
            "data": hits.iter().map(|(f, n, s, t)| json!({"file_id": f, "filename": n, "score": s, "attributes": {"store": id}, "content": [{"type": "text", "text": t}]})).collect::<Vec<_>>(),
            "has_more": false, "next_page": null
        }))
        .into_response(),
        VsMode::Ogx(hits) => Json(json!({
            "object": "vector_store.search_results.page",
            "search_query": [query],
            "data": hits.iter().enumerate().map(|(i, (f, n, s, t))| json!({"file_id": format!("8c1f-{i}-internal"), "filename": n, "score": s, "attributes": {"file_id": f, "store": id}, "content": [{"type": "text", "text": t, "embedding": null, "chunk_metadata": null}]})).collect::<Vec<_>>(),
            "has_more": false, "next_page": null
        }))
        .into_response(),
        VsMode::EmptyHealthy | VsMode::EmptyBroken => Json(json!({"object": "vector_store.search_results.page", "search_query": [query], "data": [], "has_more": false, "next_page": null})).into_response(),
        VsMode::Status(s) => (StatusCode::from_u16(s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), Json(json!({"error": {"message": "denied"}}))).into_response(),
        VsMode::Malformed => (StatusCode::OK, "{\"data\": 7").into_response(),
        VsMode::NoHybrid(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        VsMode::Hang => {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            StatusCode::OK.into_response()
        }
    }
}
