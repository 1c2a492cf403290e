//! `web_search` / `web_search_preview` (+ dated aliases) tools (contract §2): gateway-owned.
//! Upstream sees a function `web_search(query)`; the calls become `web_search_call` items
//! and the answer gets `url_citation` annotations.

use protocol::ApiError;
use serde_json::{json, Value};

use super::{Owner, ToolEntry, ToolKind, UpstreamTool};
use crate::executors::web_search::SearchRequest;
use crate::executors::Registry;
use crate::transcript::{Call, Replayed};

/// The model-visible name of the gateway's web search function.
pub const WEB_SEARCH_FUNCTION: &str = "web_search";

/// The declared type names this handler accepts.
pub const TYPES: [&str; 4] = ["web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11"];

/// A validated declaration: what each search of this request uses.
#[derive(Debug, Clone, PartialEq)]
pub struct WebSearchOptions {
    /// The declared `type`, echoed back.
    pub declared_type: String,
    /// `low` | `medium` | `high` (default `medium`).
    pub context_size: String,
    pub allowed_domains: Option<Vec<String>>,
    pub user_location: Option<Value>,
    pub external_web_access: bool,
}

impl WebSearchOptions {
    /// The backend request for one query.
    pub fn request(&self, query: String) -> SearchRequest {
        SearchRequest {
            query,
            context_size: self.context_size.clone(),
            allowed_domains: self.allowed_domains.clone(),
            country: self.user_location.as_ref().and_then(|l| l.get("country")).and_then(Value::as_str).map(str::to_string),
            user_location: self.user_location.clone(),
            external_web_access: self.external_web_access,
        }
    }
}

fn invalid(param: String, message: impl Into<String>) -> ApiError {
    ApiError::invalid(param, message).with_code("invalid_value")
}

/// Validates a declaration (contract §2). No backend configured → 400 naming the missing
/// setting; `external_web_access: false` with the `http` backend → 400 (no cache-only mode).
pub fn declare(decl: &Value, param: &str, kind: &str, registry: &Registry) -> Result<(Vec<ToolEntry>, Value), ApiError> {
    let backend = registry.web_search.as_ref().map_err(|why| {
        ApiError::invalid(format!("{param}.type"), why.clone()).with_code("tool_not_configured")
    })?;
    let context_size = match decl.get("search_context_size") {
        None | Some(Value::Null) => "medium".to_string(),
        Some(Value::String(s)) if matches!(s.as_str(), "low" | "medium" | "high") => s.clone(),
        Some(_) => return Err(invalid(format!("{param}.search_context_size"), "search_context_size must be 'low', 'medium' or 'high'.")),
    };
    let filters = decl.get("filters").filter(|f| !f.is_null());
    let allowed_domains = match filters.map(|f| f.get("allowed_domains")) {
        None | Some(None) | Some(Some(Value::Null)) => None,
        Some(Some(Value::Array(a))) => {
            let mut out = Vec::with_capacity(a.len());
            for d in a {
                match d.as_str() {
                    Some(s) if !s.trim().is_empty() => out.push(s.trim().to_string()),
                    _ => return Err(invalid(format!("{param}.filters.allowed_domains"), "allowed_domains must be a list of domain names.")),
                }
            }
            Some(out)
        }
        Some(Some(_)) => return Err(invalid(format!("{param}.filters.allowed_domains"), "allowed_domains must be a list of domain names.")),
    };
    let user_location = match decl.get("user_location") {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => {
            let mut loc = json!({"type": "approximate", "city": null, "country": null, "region": null, "timezone": null});
            for key in ["city", "country", "region", "timezone"] {
                match o.get(key) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) => loc[key] = json!(s),
                    Some(_) => return Err(invalid(format!("{param}.user_location.{key}"), format!("user_location.{key} must be a string."))),
                }
            }
            Some(loc)
        }
        Some(_) => return Err(invalid(format!("{param}.user_location"), "user_location must be an object.")),
    };
    let external_web_access = match decl.get("external_web_access") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid(format!("{param}.external_web_access"), "external_web_access must be a boolean.")),
    };
    if !external_web_access && !backend.supports_cache_only() {
        return Err(invalid(
            format!("{param}.external_web_access"),
            "external_web_access: false (cache-only search) is not supported by this gateway's web search backend.",
        ));
    }
    let default_location = json!({"type": "approximate", "city": null, "country": "US", "region": null, "timezone": null});
    let mut echo = json!({
        "type": kind,
        "search_context_size": context_size,
        "user_location": user_location.clone().unwrap_or(default_location),
    });
    if !kind.starts_with("web_search_preview") {
        echo["filters"] = filters.cloned().unwrap_or(Value::Null);
    }
    if decl.get("external_web_access").is_some() {
        echo["external_web_access"] = json!(external_web_access);
    }
    if let Some(t) = decl.get("search_content_types") {
        echo["search_content_types"] = t.clone();
    }
    let options = WebSearchOptions { declared_type: kind.to_string(), context_size, allowed_domains, user_location, external_web_access };
    let entry = ToolEntry {
        name: WEB_SEARCH_FUNCTION.to_string(),
        namespace: None,
        kind: ToolKind::WebSearch(options),
        owner: Owner::Gateway,
        upstream: UpstreamTool {
            name: WEB_SEARCH_FUNCTION.to_string(),
            description: Some(
                "Search the web for current information. Returns titles, URLs and snippets. \
                 Cite the URLs you use as markdown links."
                    .to_string(),
            ),
            parameters: json!({
                "type": "object",
                "properties": {"query": {"type": "string", "minLength": 1, "description": "The search query."}},
                "required": ["query"],
            }),
            strict: None,
            native: None,
        },
        executor: None,
    };
    Ok((vec![entry], echo))
}

/// Replays a `web_search_call` item: the call with its query, and a result rebuilt from its
/// query and sources (the results themselves are not on the wire; a stored turn's come back
/// through the private result keyed by the query).
pub fn replay(ws: &protocol::input::WebSearchCallItem) -> Replayed {
    let action = ws.action.as_ref();
    let query = action
        .and_then(|a| a.get("query").and_then(|q| q.as_str()).map(str::to_string))
        .or_else(|| action.and_then(|a| a.pointer("/queries/0")).and_then(|q| q.as_str()).map(str::to_string))
        .unwrap_or_default();
    let sources: Vec<&str> = action
        .and_then(|a| a.get("sources"))
        .and_then(|s| s.as_array())
        .map(|a| a.iter().filter_map(|s| s.get("url").and_then(|u| u.as_str())).collect())
        .unwrap_or_default();
    let mut result = format!("Web search for \"{query}\" (earlier turn; results not kept).");
    if !sources.is_empty() {
        result.push_str(&format!(" Sources: {}", sources.join(", ")));
    }
    let call = Call { call_id: ws.id.clone(), name: WEB_SEARCH_FUNCTION.to_string(), arguments: json!({"query": query}).to_string() };
    Replayed { call, result: Some(result), private_key: Some(query) }
}
