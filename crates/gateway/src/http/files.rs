//! The Files API on the embedded index (contract §10): `POST /v1/files` (multipart `file`,
//! `purpose`, optional `expires_after[anchor]`/`expires_after[seconds]`), `GET /v1/files`
//! (`purpose`, `limit` 1–10000 default 10000, `order` default `desc`, `after`),
//! `GET/DELETE /v1/files/{id}` and `GET /v1/files/{id}/content` (the bytes).
//! Also the helpers the vector-store routes share: index lookup, list parsing, error mapping.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::multipart::{Multipart, MultipartRejection};
use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use protocol::ApiError;
use serde_json::{json, Value};

use super::auth::Tenant;
use super::AppState;
use crate::error::GatewayError;
use crate::executors::local_index::{FileRecord, IndexError, ListParams, LocalIndex};

/// `purpose` values of `POST /v1/files`.
pub const PURPOSES: [&str; 6] = ["assistants", "batch", "fine-tune", "vision", "user_data", "evals"];

impl From<IndexError> for GatewayError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::NotFound { what, .. } => {
                let code = match what {
                    "file" => "file_not_found",
                    "vector_store" => "vector_store_not_found",
                    _ => "not_found",
                };
                GatewayError::not_found(None, e.to_string(), code)
            }
            IndexError::Invalid { param, message } => GatewayError::bad_request(param, message).with_code("invalid_value"),
            IndexError::TooLarge { limit } => GatewayError {
                kind: crate::error::ErrorKind::PayloadTooLarge,
                error: ApiError::invalid(
                    Some("file".to_string()),
                    format!("File is too large: the largest upload is {limit} bytes ([file_search.embedded] max_upload_bytes)."),
                )
                .with_code("file_too_large"),
            },
            IndexError::Internal(m) => {
                tracing::error!("embedded vector store: {m}");
                GatewayError {
                    kind: crate::error::ErrorKind::Internal,
                    error: ApiError {
                        message: "The embedded vector store failed; see the gateway log.".into(),
                        kind: "server_error".into(),
                        param: None,
                        code: Some("server_error".into()),
                    },
                }
            }
        }
    }
}

/// The embedded index, or 404 when `[file_search.embedded] enabled = false`.
pub fn index(state: &AppState) -> Result<&Arc<LocalIndex>, GatewayError> {
    state.local_index.as_ref().ok_or_else(|| {
        GatewayError::not_found(
            None,
            "The embedded Files and Vector Stores API is disabled on this gateway ([file_search.embedded] enabled = false).",
            "not_found",
        )
    })
}

/// Parses `limit` (1..=`max_limit`, default `default_limit`), `order` (`asc`|`desc`,
/// default `desc`), `after`, `before`; returns them and every other query pair. Bad values
/// → 400 naming the parameter.
pub fn parse_list(
    raw: Option<&str>,
    default_limit: usize,
    max_limit: usize,
) -> Result<(ListParams, BTreeMap<String, String>), GatewayError> {
    let mut p = ListParams { limit: default_limit, ascending: false, after: None, before: None };
    let mut rest = BTreeMap::new();
    let pairs: Vec<(String, String)> = match raw {
        None | Some("") => Vec::new(),
        Some(raw) => url::form_urlencoded::parse(raw.as_bytes()).into_owned().collect(),
    };
    let bad = |name: &str, msg: String| GatewayError::bad_request(Some(name.to_string()), msg).with_code("invalid_value");
    for (k, v) in pairs {
        match k.as_str() {
            "limit" => {
                p.limit = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=max_limit).contains(n))
                    .ok_or_else(|| bad("limit", format!("Invalid 'limit': expected an integer from 1 to {max_limit}, got '{v}'.")))?
            }
            "order" => {
                p.ascending = match v.as_str() {
                    "asc" => true,
                    "desc" => false,
                    _ => return Err(bad("order", format!("Invalid 'order': expected 'asc' or 'desc', got '{v}'."))),
                }
            }
            "after" if !v.is_empty() => p.after = Some(v),
            "before" if !v.is_empty() => p.before = Some(v),
            _ => {
                rest.insert(k, v);
            }
        }
    }
    Ok((p, rest))
}

/// `{object:"list", data, first_id, last_id, has_more}` (contract §10).
pub fn render_list(data: Vec<Value>, has_more: bool) -> Value {
    let id = |v: Option<&Value>| v.and_then(|i| i.get("id")).cloned().unwrap_or(Value::Null);
    json!({"object": "list", "first_id": id(data.first()), "last_id": id(data.last()), "has_more": has_more, "data": data})
}

/// JSON answer or error.
pub fn answer<T>(r: Result<T, GatewayError>, ok: impl FnOnce(T) -> Value) -> Response {
    match r {
        Ok(v) => Json(ok(v)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `{id, object:"file", bytes, created_at, expires_at, filename, purpose, status, status_details}`.
pub fn render(f: &FileRecord) -> Value {
    json!({
        "id": f.id, "object": "file", "bytes": f.bytes, "created_at": f.created_at, "expires_at": f.expires_at,
        "filename": f.filename, "purpose": f.purpose, "status": "processed", "status_details": null,
    })
}

fn multipart_error(e: axum::extract::multipart::MultipartError, limit: usize) -> GatewayError {
    // The parser's message hides why the body stopped: the causes say it.
    let full = crate::error::with_causes(&e);
    if let Some(timeout) = super::rejections::body_timeout(&full) {
        return timeout;
    }
    let text = e.to_string();
    if full.contains("length limit") || text.contains("too large") {
        return IndexError::TooLarge { limit }.into();
    }
    GatewayError::bad_request(None, format!("Invalid multipart body: {text}")).with_code("invalid_request")
}

/// `POST /v1/files`: stores the `file` part (413 over `max_upload_bytes`, before anything is
/// kept); `purpose` is required and one of [`PURPOSES`].
pub async fn upload(State(state): State<Arc<AppState>>, tenant: Tenant, form: Result<Multipart, MultipartRejection>) -> Response {
    let r = async {
        let index = index(&state)?;
        let limit = index.max_upload_bytes();
        let mut form = form.map_err(|e| {
            GatewayError::bad_request(None, format!("Expected a multipart/form-data body with 'file' and 'purpose': {e}"))
                .with_code("invalid_request")
        })?;
        let (mut upload, mut filename, mut purpose) = (None, None, None);
        let mut expires: BTreeMap<String, String> = BTreeMap::new();
        loop {
            let field = match form.next_field().await {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => return Err(multipart_error(e, limit)),
            };
            match field.name().unwrap_or_default().to_string().as_str() {
                "file" => {
                    filename = Some(field.file_name().filter(|n| !n.is_empty()).unwrap_or("upload").to_string());
                    let mut up = index.begin_upload().await?;
                    let mut field = field;
                    loop {
                        match field.chunk().await {
                            Ok(Some(bytes)) => {
                                if let Err(e) = up.write(&bytes).await {
                                    // Read (and drop) the rest of the part so the client gets the answer.
                                    while let Ok(Some(_)) = field.chunk().await {}
                                    return Err(e.into());
                                }
                            }
                            Ok(None) => break,
                            Err(e) => return Err(multipart_error(e, limit)),
                        }
                    }
                    upload = Some(up);
                }
                "purpose" => purpose = Some(field.text().await.map_err(|e| multipart_error(e, limit))?),
                name @ ("expires_after[anchor]" | "expires_after[seconds]") => {
                    let name = name.to_string();
                    expires.insert(name, field.text().await.map_err(|e| multipart_error(e, limit))?);
                }
                _ => {}
            }
        }
        let missing = |p: &str| {
            GatewayError::bad_request(Some(p.to_string()), format!("Missing required parameter: '{p}'."))
                .with_code("missing_required_parameter")
        };
        let purpose = purpose.ok_or_else(|| missing("purpose"))?;
        if !PURPOSES.contains(&purpose.as_str()) {
            return Err(GatewayError::bad_request(
                Some("purpose".to_string()),
                format!("Invalid 'purpose': '{purpose}'; expected one of {}.", PURPOSES.join(", ")),
            )
            .with_code("invalid_value"));
        }
        let (Some(upload), Some(filename)) = (upload, filename) else { return Err(missing("file")) };
        let expires_at = match expires.get("expires_after[seconds]") {
            None => None,
            Some(s) => match s.parse::<i64>() {
                Ok(n) if (3600..=2_592_000).contains(&n) => Some(crate::executors::local_index::now() + n),
                _ => {
                    return Err(GatewayError::bad_request(
                        Some("expires_after.seconds".to_string()),
                        "Invalid 'expires_after.seconds': expected an integer from 3600 to 2592000.",
                    )
                    .with_code("invalid_value"))
                }
            },
        };
        Ok(index.create_file(tenant.as_str(), upload, &filename, &purpose, expires_at).await?)
    }
    .await;
    answer(r, |f| render(&f))
}

/// `GET /v1/files` (`purpose`, `limit`, `order`, `after`).
pub async fn list(State(state): State<Arc<AppState>>, tenant: Tenant, RawQuery(q): RawQuery) -> Response {
    let r = async {
        let index = index(&state)?;
        let (p, rest) = parse_list(q.as_deref(), 10_000, 10_000)?;
        Ok(index.list_files(tenant.as_str(), rest.get("purpose").map(String::as_str), &p).await?)
    }
    .await;
    answer(r, |l| render_list(l.items.iter().map(render).collect(), l.has_more))
}

/// `GET /v1/files/{id}`.
pub async fn get(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>) -> Response {
    let r = async { Ok(index(&state)?.file(tenant.as_str(), &id).await?) }.await;
    answer(r, |f| render(&f))
}

/// `DELETE /v1/files/{id}`: `{id, object:"file", deleted:true}`; its chunks leave every store.
pub async fn delete(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>) -> Response {
    let r = async { Ok(index(&state)?.delete_file(tenant.as_str(), &id).await?) }.await;
    answer(r, |()| json!({"id": id, "object": "file", "deleted": true}))
}

/// `GET /v1/files/{id}/content`: the bytes as uploaded (`application/octet-stream`).
pub async fn content(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>) -> Response {
    let r: Result<_, GatewayError> = async { Ok(index(&state)?.file_content(tenant.as_str(), &id).await?) }.await;
    match r {
        Ok((_, bytes)) => ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response(),
        Err(e) => e.into_response(),
    }
}
