//! `GET /v1/gateway/tools`: which of the tools the gateway executes this deployment has a
//! backend for, so that a client offers only those (the playground disables the others'
//! switches, with the reason as their tooltip). The gateway's own route, not OpenAI's; like
//! every `/v1/*` route it needs a key when `[auth]` has keys.
//!
//! ```json
//! {"object": "list", "data": [
//!   {"type": "web_search", "available": false, "reason": "web_search is not configured on this gateway: …"},
//!   {"type": "file_search", "available": true, "vector_store_api": true},
//!   {"type": "mcp", "available": true, "server_urls": false, "server_labels": ["wiki"]},
//!   {"type": "custom", "name": "package_version", "available": true}
//! ]}
//! ```
//!
//! - `available`: a request declaring the tool is not refused for want of a backend (it may
//!   still be refused for what it declares: an unknown vector store, a URL `[mcp]` does not
//!   allow). When false, `reason` says which setting is missing (never a value); a request
//!   declaring the tool gets a 400 (`tool_not_configured` for web_search and file_search).
//! - `file_search`: `vector_store_api` is true when this gateway serves `/v1/vector_stores`
//!   (the embedded store).
//! - `mcp`: `server_urls` is true when `[mcp]` admits some request-given `server_url`
//!   (`allowed_urls`, `allowed_hosts`); `server_labels` are the operator's usable servers
//!   (`[mcp.servers.<label>]`), named by label alone.
//! - One `custom` entry per registered server tool (`[server_tools]`), by `name`.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::AppState;

/// The handler; it never fails (it reads the configuration the gateway started with).
pub async fn list(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(describe(&state))
}

/// `{"available": true}`, or `false` with the reason.
fn availability(r: Result<(), String>) -> Value {
    match r {
        Ok(()) => json!({"available": true}),
        Err(reason) => json!({"available": false, "reason": reason}),
    }
}

/// One entry: `{"type", …extra, …availability}`.
fn entry(kind: &str, extra: Value, available: Value) -> Value {
    let mut e = json!({"type": kind});
    for part in [extra, available] {
        if let (Some(e), Value::Object(part)) = (e.as_object_mut(), part) {
            e.extend(part);
        }
    }
    e
}

fn describe(state: &AppState) -> Value {
    let registry = &state.registry;
    let mut data = Vec::new();
    data.push(entry("web_search", json!({}), availability(registry.web_search.as_ref().map(|_| ()).map_err(|why| why.clone()))));
    data.push(entry(
        "file_search",
        json!({"vector_store_api": state.local_index.is_some()}),
        availability(registry.file_search.availability()),
    ));
    let (server_urls, labels) = registry.mcp.offered();
    let mcp = if server_urls || !labels.is_empty() {
        Ok(())
    } else {
        Err("MCP is not configured on this gateway: set mcp.allowed_urls or mcp.allowed_hosts, or an operator server in [mcp.servers.<label>]".to_string())
    };
    data.push(entry("mcp", json!({"server_urls": server_urls, "server_labels": labels}), availability(mcp)));
    for name in registry.server_tool_names() {
        data.push(entry("custom", json!({"name": name}), availability(Ok(()))));
    }
    json!({"object": "list", "data": data})
}
