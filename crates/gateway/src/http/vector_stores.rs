//! The Vector Stores API on the embedded index (contract §10, same shapes as OpenAI):
//! `POST/GET /v1/vector_stores`, `GET/POST(update)/DELETE /v1/vector_stores/{id}`,
//! `POST/GET /v1/vector_stores/{id}/files`, `GET/POST(attributes)/DELETE
//! /v1/vector_stores/{id}/files/{file_id}`, `GET …/files/{file_id}/content` and
//! `POST /v1/vector_stores/{id}/search`. Bad input → 400 naming the `param`; unknown ids → 404.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::auth::Tenant;
use super::files::{answer, index, parse_list, render_list};
use super::{json_body, AppState};
use crate::error::GatewayError;
use crate::executors::file_search::{filters, FileHit, FileSearchRequest};
use crate::executors::local_index::{now, Chunking, NewStore, StoreFileRecord, StoreRecord, StoreUpdate};

/// Most `file_ids` in one create request.
pub const MAX_FILE_IDS: usize = 500;

#[derive(Debug, Default, Deserialize)]
struct CreateBody {
    name: Option<String>,
    description: Option<String>,
    file_ids: Option<Vec<String>>,
    chunking_strategy: Option<Value>,
    metadata: Option<Map<String, Value>>,
    expires_after: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct UpdateBody {
    name: Option<String>,
    metadata: Option<Map<String, Value>>,
    expires_after: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct AttachBody {
    file_id: Option<String>,
    attributes: Option<Map<String, Value>>,
    chunking_strategy: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct AttributesBody {
    attributes: Option<Map<String, Value>>,
}

#[derive(Debug, Default, Deserialize)]
struct Hybrid {
    embedding_weight: f64,
    text_weight: f64,
}

#[derive(Debug, Default, Deserialize)]
struct RankingOptions {
    ranker: Option<String>,
    score_threshold: Option<f64>,
    hybrid_search: Option<Hybrid>,
}

#[derive(Debug, Default, Deserialize)]
struct SearchBody {
    query: Option<Value>,
    max_num_results: Option<i64>,
    filters: Option<Value>,
    ranking_options: Option<RankingOptions>,
    #[allow(dead_code)]
    rewrite_query: Option<bool>,
}

fn invalid(param: &str, message: impl Into<String>) -> GatewayError {
    GatewayError::bad_request(Some(param.to_string()), message).with_code("invalid_value")
}

/// `metadata`: at most 16 pairs, string values, keys ≤ 64 and values ≤ 512 characters.
fn check_metadata(md: &Map<String, Value>) -> Result<(), GatewayError> {
    let ok = md.len() <= 16
        && md.iter().all(|(k, v)| k.chars().count() <= 64 && v.as_str().is_some_and(|s| s.chars().count() <= 512));
    if ok {
        Ok(())
    } else {
        Err(invalid("metadata", "Invalid 'metadata': at most 16 pairs of strings, keys up to 64 and values up to 512 characters."))
    }
}

/// `attributes`: at most 16 keys (≤ 64 characters), values strings (≤ 512 characters),
/// numbers or booleans.
fn check_attributes(a: &Map<String, Value>) -> Result<(), GatewayError> {
    let ok = a.len() <= 16
        && a.iter().all(|(k, v)| {
            k.chars().count() <= 64
                && match v {
                    Value::String(s) => s.chars().count() <= 512,
                    Value::Number(_) | Value::Bool(_) => true,
                    _ => false,
                }
        });
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "attributes",
            "Invalid 'attributes': at most 16 keys (up to 64 characters), values strings (up to 512 characters), numbers or booleans.",
        ))
    }
}

/// `expires_after`: `{anchor:"last_active_at", days: 1..=365}`.
fn check_expiry(e: &Value) -> Result<(), GatewayError> {
    let ok = e.get("anchor").and_then(Value::as_str) == Some("last_active_at")
        && e.get("days").and_then(Value::as_u64).is_some_and(|d| (1..=365).contains(&d));
    if ok {
        Ok(())
    } else {
        Err(invalid("expires_after", "Invalid 'expires_after': expected {\"anchor\": \"last_active_at\", \"days\": 1..365}."))
    }
}

fn chunking(v: Option<&Value>) -> Result<Chunking, GatewayError> {
    Chunking::from_request(v).map_err(|m| invalid("chunking_strategy", m))
}

/// The `vector_store` object.
pub fn render_store(s: &StoreRecord) -> Value {
    let expires_at =
        s.expires_after.as_ref().and_then(|e| e.get("days")).and_then(Value::as_i64).map(|d| s.last_active_at + d * 86_400);
    let status = if expires_at.is_some_and(|t| t < now()) {
        "expired"
    } else if s.file_counts.in_progress > 0 {
        "in_progress"
    } else {
        "completed"
    };
    let c = s.file_counts;
    json!({
        "id": s.id, "object": "vector_store", "created_at": s.created_at, "name": s.name,
        "description": s.description, "usage_bytes": s.usage_bytes,
        "file_counts": {"in_progress": c.in_progress, "completed": c.completed, "failed": c.failed,
            "cancelled": c.cancelled, "total": c.total},
        "status": status, "expires_after": s.expires_after, "expires_at": expires_at,
        "last_active_at": s.last_active_at, "metadata": s.metadata,
    })
}

/// The `vector_store.file` object (`id` is the file's id).
pub fn render_store_file(f: &StoreFileRecord) -> Value {
    json!({
        "id": f.file_id, "object": "vector_store.file", "usage_bytes": f.usage_bytes, "created_at": f.created_at,
        "vector_store_id": f.store_id, "status": f.status,
        "last_error": f.last_error.as_ref().map(|(code, message)| json!({"code": code, "message": message})),
        "chunking_strategy": f.chunking.to_json(), "attributes": f.attributes,
    })
}

/// `POST /v1/vector_stores`.
pub async fn create(State(state): State<Arc<AppState>>, tenant: Tenant, body: Bytes) -> Response {
    let r = async {
        let index = index(&state)?;
        let b: CreateBody = json_body::parse(&body)?;
        let metadata = b.metadata.unwrap_or_default();
        check_metadata(&metadata)?;
        if let Some(e) = &b.expires_after {
            check_expiry(e)?;
        }
        let file_ids = b.file_ids.unwrap_or_default();
        if file_ids.len() > MAX_FILE_IDS {
            return Err(invalid("file_ids", format!("Invalid 'file_ids': at most {MAX_FILE_IDS} files.")));
        }
        let new = NewStore {
            name: b.name,
            description: b.description,
            metadata,
            expires_after: b.expires_after,
            file_ids,
            chunking: chunking(b.chunking_strategy.as_ref())?,
        };
        Ok(index.create_store(tenant.as_str(), new).await?)
    }
    .await;
    answer(r, |s| render_store(&s))
}

/// `GET /v1/vector_stores` (`limit` 1–100 default 20, `order`, `after`, `before`).
pub async fn list(State(state): State<Arc<AppState>>, tenant: Tenant, RawQuery(q): RawQuery) -> Response {
    let r = async {
        let (p, _) = parse_list(q.as_deref(), 20, 100)?;
        Ok(index(&state)?.list_stores(tenant.as_str(), &p).await?)
    }
    .await;
    answer(r, |l| render_list(l.items.iter().map(render_store).collect(), l.has_more))
}

/// `GET /v1/vector_stores/{id}`.
pub async fn get(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>) -> Response {
    let r = async { Ok(index(&state)?.store(tenant.as_str(), &id).await?) }.await;
    answer(r, |s| render_store(&s))
}

/// `POST /v1/vector_stores/{id}`: `name`, `metadata`, `expires_after`.
pub async fn update(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>, body: Bytes) -> Response {
    let r = async {
        let index = index(&state)?;
        let b: UpdateBody = json_body::parse(&body)?;
        if let Some(m) = &b.metadata {
            check_metadata(m)?;
        }
        if let Some(e) = &b.expires_after {
            check_expiry(e)?;
        }
        Ok(index.update_store(tenant.as_str(), &id, StoreUpdate { name: b.name, metadata: b.metadata, expires_after: b.expires_after }).await?)
    }
    .await;
    answer(r, |s| render_store(&s))
}

/// `DELETE /v1/vector_stores/{id}`: `{id, object:"vector_store.deleted", deleted:true}`.
pub async fn delete(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>) -> Response {
    let r = async { Ok(index(&state)?.delete_store(tenant.as_str(), &id).await?) }.await;
    answer(r, |()| json!({"id": id, "object": "vector_store.deleted", "deleted": true}))
}

/// `POST /v1/vector_stores/{id}/files`: `file_id*`, `attributes`, `chunking_strategy`;
/// answers `in_progress` (ingestion runs in the background). 404 for an unknown store or file.
pub async fn attach(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>, body: Bytes) -> Response {
    let r = async {
        let index = index(&state)?;
        let b: AttachBody = json_body::parse(&body)?;
        let Some(file_id) = b.file_id else {
            return Err(GatewayError::bad_request(Some("file_id".to_string()), "Missing required parameter: 'file_id'.")
                .with_code("missing_required_parameter"));
        };
        let attributes = b.attributes.unwrap_or_default();
        check_attributes(&attributes)?;
        let c = chunking(b.chunking_strategy.as_ref())?;
        Ok(index.attach(tenant.as_str(), &id, &file_id, &attributes, c).await?)
    }
    .await;
    answer(r, |f| render_store_file(&f))
}

/// `GET /v1/vector_stores/{id}/files` (`limit` 1–100 default 20, `order`, `after`,
/// `before`, `filter`: in_progress | completed | failed | cancelled).
pub async fn list_files(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let r = async {
        let (p, rest) = parse_list(q.as_deref(), 20, 100)?;
        let status = rest.get("filter").map(String::as_str);
        if let Some(s) = status {
            if !["in_progress", "completed", "failed", "cancelled"].contains(&s) {
                return Err(invalid("filter", format!("Invalid 'filter': '{s}'; expected in_progress, completed, failed or cancelled.")));
            }
        }
        Ok(index(&state)?.list_store_files(tenant.as_str(), &id, status, &p).await?)
    }
    .await;
    answer(r, |l| render_list(l.items.iter().map(render_store_file).collect(), l.has_more))
}

/// `GET /v1/vector_stores/{id}/files/{file_id}`.
pub async fn get_file(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    Path((id, file_id)): Path<(String, String)>,
) -> Response {
    let r = async { Ok(index(&state)?.store_file(tenant.as_str(), &id, &file_id).await?) }.await;
    answer(r, |f| render_store_file(&f))
}

/// `POST /v1/vector_stores/{id}/files/{file_id}` with `{attributes}`.
pub async fn update_file(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    Path((id, file_id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let r = async {
        let index = index(&state)?;
        let Some(attributes) = json_body::parse::<AttributesBody>(&body)?.attributes else {
            return Err(GatewayError::bad_request(Some("attributes".to_string()), "Missing required parameter: 'attributes'.")
                .with_code("missing_required_parameter"));
        };
        check_attributes(&attributes)?;
        Ok(index.update_store_file(tenant.as_str(), &id, &file_id, &attributes).await?)
    }
    .await;
    answer(r, |f| render_store_file(&f))
}

/// `DELETE /v1/vector_stores/{id}/files/{file_id}`: detaches (the file itself stays).
pub async fn delete_file(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    Path((id, file_id)): Path<(String, String)>,
) -> Response {
    let r = async { Ok(index(&state)?.detach(tenant.as_str(), &id, &file_id).await?) }.await;
    answer(r, |()| json!({"id": file_id, "object": "vector_store.file.deleted", "deleted": true}))
}

/// `GET /v1/vector_stores/{id}/files/{file_id}/content`: the indexed chunks as text parts.
pub async fn file_content(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    Path((id, file_id)): Path<(String, String)>,
) -> Response {
    let r = async { Ok(index(&state)?.store_file_chunks(tenant.as_str(), &id, &file_id).await?) }.await;
    answer(r, |texts| {
        let data: Vec<Value> = texts.into_iter().map(|t| json!({"type": "text", "text": t})).collect();
        json!({"object": "vector_store.file_content.page", "data": data, "has_more": false, "next_page": null})
    })
}

/// Validates a search body into the queries and the request.
fn search_request(b: SearchBody) -> Result<(Vec<String>, FileSearchRequest), GatewayError> {
    let queries: Vec<String> = match b.query {
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(items)) if !items.is_empty() && items.iter().all(Value::is_string) => {
            items.into_iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
        }
        None => {
            return Err(GatewayError::bad_request(Some("query".to_string()), "Missing required parameter: 'query'.")
                .with_code("missing_required_parameter"))
        }
        Some(_) => return Err(invalid("query", "Invalid 'query': expected a string or a non-empty array of strings.")),
    };
    let max = b.max_num_results.unwrap_or(10);
    if !(1..=50).contains(&max) {
        return Err(invalid("max_num_results", format!("Invalid 'max_num_results': expected 1 to 50, got {max}.")));
    }
    if let Some(f) = &b.filters {
        filters::validate(f).map_err(|m| invalid("filters", format!("Invalid 'filters': {m}")))?;
    }
    let ro = b.ranking_options.unwrap_or_default();
    if let Some(r) = &ro.ranker {
        if !["none", "auto", "default-2024-11-15"].contains(&r.as_str()) {
            return Err(invalid("ranking_options.ranker", format!("Invalid 'ranking_options.ranker': '{r}'.")));
        }
    }
    let threshold = ro.score_threshold.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(invalid("ranking_options.score_threshold", "Invalid 'ranking_options.score_threshold': expected 0 to 1."));
    }
    let hybrid = match ro.hybrid_search {
        Some(h) if h.embedding_weight < 0.0 || h.text_weight < 0.0 || h.embedding_weight + h.text_weight <= 0.0 => {
            return Err(invalid(
                "ranking_options.hybrid_search",
                "Invalid 'ranking_options.hybrid_search': weights must be non-negative and not both zero.",
            ))
        }
        Some(h) => Some((h.embedding_weight, h.text_weight)),
        None => None,
    };
    let req = FileSearchRequest {
        query: queries.first().cloned().unwrap_or_default(),
        max_num_results: u32::try_from(max).unwrap_or(10),
        filters: b.filters.filter(|f| !f.is_null()),
        ranker: ro.ranker,
        score_threshold: threshold,
        hybrid,
    };
    Ok((queries, req))
}

fn render_hit(h: FileHit) -> Value {
    json!({"file_id": h.file_id, "filename": h.filename, "score": h.score, "attributes": h.attributes,
        "content": [{"type": "text", "text": h.text}]})
}

/// `POST /v1/vector_stores/{id}/search`: `vector_store.search_results.page`.
pub async fn search(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>, body: Bytes) -> Response {
    let r = async {
        let index = index(&state)?;
        let (queries, req) = search_request(json_body::parse(&body)?)?;
        index.store(tenant.as_str(), &id).await?;
        let hits = index.search_many(&id, &queries, &req).await?;
        Ok((queries, hits))
    }
    .await;
    answer(r, |(queries, hits)| {
        json!({"object": "vector_store.search_results.page", "search_query": queries,
            "data": hits.into_iter().map(render_hit).collect::<Vec<_>>(), "has_more": false, "next_page": null})
    })
}
