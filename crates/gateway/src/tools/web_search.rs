//! `web_search` / `web_search_preview` (+ dated aliases) tools (contract §2): gateway-owned.
//! Upstream sees a function `web_search(query)`; the calls become `web_search_call` items
//! and the answer gets `url_citation` annotations.

use protocol::ApiError;
use serde_json::{json, Value};

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use protocol::input::InputItem;
use protocol::output::{UrlSource, WebSearchAction};

use super::duties::timed_out;
use super::{BindCtx, CallItem, DeclareCtx, Declared, Finished, Invocation, Owner, Ran, RunStatus, Tool, ToolEntry, ToolType, UpstreamTool};
use crate::events::citations::Source;
use crate::events::file_citations::{FileSource, FileSources};
use crate::events::Emitter;
use crate::executors::web_search::{refine, render_for_model, SearchBackend, SearchRequest};
use crate::transcript::{Call, Replayed};
use crate::upstream::NativeTool;

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

/// The `web_search` tool type (and its `web_search_preview` and dated aliases).
#[derive(Debug, Clone, Copy)]
pub struct WebSearchType;

impl ToolType for WebSearchType {
    fn types(&self) -> &'static [&'static str] {
        &TYPES
    }

    fn declare(&self, decl: Value, kind: &str, param: &str, ctx: &DeclareCtx<'_>) -> Result<Declared, ApiError> {
        declare(&decl, param, kind, ctx)
    }

    fn replay(&self, item: &InputItem, _: &mut Vec<FileSource>) -> Option<Replayed> {
        match item {
            InputItem::WebSearchCall(ws) => Some(replay(ws)),
            _ => None,
        }
    }

    /// The results of a search are private: kept by the item's id.
    fn private_result_id<'i>(&self, item: &'i InputItem) -> Option<&'i str> {
        match item {
            InputItem::WebSearchCall(ws) => Some(&ws.id),
            _ => None,
        }
    }
}

/// Validates a declaration (contract §2). No backend configured → 400 naming the missing
/// setting; `external_web_access: false` with a backend that cannot keep to cached or
/// indexed results → 400 (both configured backends can: see `SearchBackend::supports_cache_only`).
pub fn declare(decl: &Value, param: &str, kind: &str, ctx: &DeclareCtx<'_>) -> Result<Declared, ApiError> {
    let backend = ctx.registry.web_search.as_ref().map_err(|why| {
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
    // The native form: the declared type with its context size and location; domain filters
    // and cache-only mode stay with the gateway, which runs the search.
    let mut native = json!({"type": kind, "search_context_size": context_size});
    if let Some(loc) = &user_location {
        native["user_location"] = loc.clone();
    }
    let options = WebSearchOptions { declared_type: kind.to_string(), context_size, allowed_domains, user_location, external_web_access };
    let entry = ToolEntry {
        name: WEB_SEARCH_FUNCTION.to_string(),
        namespace: None,
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
            native: Some(NativeTool::hosted("web_search", native)),
        },
        param: param.to_string(),
        deferred: None,
        tool: Arc::new(WebSearchTool { options }),
    };
    Ok(Declared { entries: vec![entry], echo, discovery: None })
}

/// A declared web search: what each of its searches uses.
#[derive(Debug, Clone)]
pub struct WebSearchTool {
    pub options: WebSearchOptions,
}

impl Tool for WebSearchTool {
    fn tool_type(&self) -> &'static str {
        "web_search"
    }

    fn choice_types(&self) -> &'static [&'static str] {
        &TYPES
    }

    fn call_item(&self) -> CallItem {
        CallItem::Hosted
    }

    /// The call's `query` on the configured backend; `include:
    /// ["web_search_call.action.sources"]` puts the sources on the item.
    fn bind(&self, call_id: &str, arguments: &Value, ctx: &BindCtx<'_>) -> Result<Box<dyn Invocation>, String> {
        let backend = ctx.executors.web_search.clone().map_err(|_| "error: this tool has no executor configured.".to_string())?;
        let query = arguments.get("query").and_then(Value::as_str).unwrap_or_default().to_string();
        Ok(Box::new(WebSearchCall {
            call_id: call_id.to_string(),
            request: self.options.request(query),
            backend,
            include_sources: ctx.includes("web_search_call.action.sources"),
            native: ctx.native,
            index: None,
        }))
    }
}

/// One bound search.
struct WebSearchCall {
    call_id: String,
    request: SearchRequest,
    backend: Arc<dyn SearchBackend>,
    include_sources: bool,
    /// Declared natively upstream: the result goes back as a `web_search_call` item.
    native: bool,
    /// The `web_search_call` item, once added.
    index: Option<usize>,
}

impl Invocation for WebSearchCall {
    fn call_id(&self) -> &str {
        &self.call_id
    }

    fn labels(&self) -> (&'static str, String) {
        ("web_search", self.backend.kind().to_string())
    }

    /// A progress message, then the item (`in_progress` → `searching`, no `action` yet).
    fn start(&mut self, out: &mut Emitter) {
        out.progress(&format!("Searching the web for “{}”", self.request.query));
        self.index = Some(out.web_search_start());
    }

    /// The backend's hits, refined (allowed domains, safe URLs, no duplicates, the count
    /// and snippet length of `search_context_size`) and rendered as untrusted data.
    fn run(&self, timeout: Duration) -> BoxFuture<'static, Ran> {
        let (backend, request) = (self.backend.clone(), self.request.clone());
        Box::pin(async move {
            match tokio::time::timeout(timeout, backend.search(&request)).await {
                Ok(Ok(outcome)) => {
                    let hits = refine(outcome.hits.clone(), &request);
                    let content = render_for_model(&request.query, &outcome, &hits);
                    let sources = hits.iter().map(|h| Source { url: h.url.clone(), title: h.title.clone() }).collect();
                    Ran { status: RunStatus::Ok, content, usage: outcome.usage, sources, files: None, loaded: Vec::new() }
                }
                Ok(Err(e)) => Ran { status: RunStatus::Error, content: format!("error: web search failed: {e}"), ..Ran::default() },
                Err(_) => Ran { status: RunStatus::Timeout, content: timed_out(timeout), ..Ran::default() },
            }
        })
    }

    /// `web_search_call.completed` and the item done with its `action` (`failed`, with no
    /// `.completed`, when the search failed). The results the model read are the call's
    /// private result, kept by item id for a replay of the item.
    fn finish(self: Box<Self>, ran: Ran, out: &mut Emitter, _files: &mut FileSources) -> Finished {
        let Some(idx) = self.index else { return Finished { content: ran.content, ..Finished::default() } };
        let query = self.request.query;
        let ok = ran.status == RunStatus::Ok;
        let url_sources = || ran.sources.iter().map(|s| UrlSource { kind: "url".into(), url: s.url.clone() }).collect::<Vec<_>>();
        let sources = self.include_sources.then(url_sources);
        // The continuation of a native call: the typed item under the call's id,
        // with every source (the Responses item has no field for the results' text).
        let continuation = self.native.then(|| {
            let action = WebSearchAction { kind: "search".into(), query: query.clone(), queries: vec![query.clone()], sources: Some(url_sources()) };
            json!({"type": "web_search_call", "id": self.call_id, "status": if ok { "completed" } else { "failed" }, "action": action})
        });
        let action = WebSearchAction { kind: "search".into(), query: query.clone(), queries: vec![query.clone()], sources };
        out.web_search_done(idx, action, ok);
        Finished { content: ran.content, sources: ran.sources, usage: ran.usage, private: Some((out.item_id(idx), query)), continuation, loads: Vec::new() }
    }
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

#[cfg(test)]
mod duties {
    use super::*;
    use crate::executors::web_search::{SearchHit, SearchOutcome};
    use crate::executors::Registry;
    use crate::tools::duties::testing::{names, recording};
    use crate::tools::ToolSet;
    use protocol::output::{ItemStatus, OutputItem};

    /// A backend that answers every query with the same two hits, one of them a private
    /// address (the refinement drops it).
    #[derive(Debug)]
    struct TwoHits;

    impl SearchBackend for TwoHits {
        fn kind(&self) -> &'static str {
            "test"
        }
        fn supports_cache_only(&self) -> bool {
            false
        }
        fn search<'a>(&'a self, _req: &'a SearchRequest) -> BoxFuture<'a, Result<SearchOutcome, String>> {
            Box::pin(async {
                let hit = |url: &str| SearchHit { url: url.into(), title: "T".into(), snippet: "S".into() };
                Ok(SearchOutcome { hits: vec![hit("https://example.com/a"), hit("http://127.0.0.1/x")], ..SearchOutcome::default() })
            })
        }
    }

    /// The four duties of `web_search`: a declaration without a backend or asking for
    /// cache-only search where the backend cannot is refused; upstream it is the function
    /// `web_search(query)`; a call binds to its query on the backend; it is encoded as a
    /// `web_search_call` (in progress, searching, completed, done with its action and, when
    /// included, its sources) whose results are the call's private result; a replayed item
    /// gives the call and a result rebuilt from its query and sources.
    #[tokio::test]
    async fn web_search_duties() {
        let unconfigured = Registry::default();
        let err = WebSearchType.declare(json!({"type":"web_search"}), "web_search", "tools[0]", &DeclareCtx { registry: &unconfigured }).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("tool_not_configured"));
        let mut registry = Registry::default();
        registry.web_search = Ok(Arc::new(TwoHits));
        let ctx = DeclareCtx { registry: &registry };
        let cache_only = json!({"type":"web_search","external_web_access":false});
        assert_eq!(WebSearchType.declare(cache_only, "web_search", "tools[0]", &ctx).unwrap_err().param.as_deref(), Some("tools[0].external_web_access"));
        let set = ToolSet::build(vec![json!({"type":"web_search_preview"})], None, &registry, &Default::default()).unwrap();
        let entry = set.lookup(WEB_SEARCH_FUNCTION).unwrap();
        assert_eq!((entry.owner, entry.call_item()), (Owner::Gateway, CallItem::Hosted));
        assert_eq!(entry.upstream.parameters["required"], json!(["query"]));
        assert!(entry.tool.choice_types().contains(&"web_search"));
        let include = ["web_search_call.action.sources".to_string()];
        let mut call = entry.tool.bind("c1", &json!({"query":"rust"}), &BindCtx { executors: &registry, include: &include, native: false, tools: None }).unwrap();
        assert_eq!(call.labels(), ("web_search", "test".to_string()));
        let (mut out, recorder) = recording();
        call.start(&mut out);
        let ran = call.run(Duration::from_secs(5)).await;
        assert_eq!((ran.status, ran.sources.len()), (RunStatus::Ok, 1), "the private address is dropped");
        let done = call.finish(ran, &mut out, &mut FileSources::default());
        assert!(done.content.contains("https://example.com/a") && done.content.contains("untrusted"), "{}", done.content);
        assert_eq!(
            names(&recorder)[6..],
            [
                "response.output_item.added",
                "response.web_search_call.in_progress",
                "response.web_search_call.searching",
                "response.web_search_call.completed",
                "response.output_item.done"
            ]
        );
        let Some(OutputItem::WebSearchCall { id, status, action: Some(action) }) = out.response().output.last().cloned() else { panic!("a search item") };
        assert_eq!((status, action.query.as_str()), (ItemStatus::Completed, "rust"));
        assert_eq!(action.sources.map(|s| s.len()), Some(1));
        assert_eq!(done.private, Some((id.clone(), "rust".to_string())));
        let item: InputItem = serde_json::from_value(json!({"type":"web_search_call","id":id,"status":"completed","action":{"type":"search","query":"rust","sources":[{"type":"url","url":"https://example.com/a"}]}})).unwrap();
        let r = WebSearchType.replay(&item, &mut Vec::new()).unwrap();
        assert_eq!((r.call.call_id.as_str(), r.private_key.as_deref()), (id.as_str(), Some("rust")));
        assert!(r.result.unwrap_or_default().contains("https://example.com/a"));
        assert_eq!(WebSearchType.private_result_id(&item), Some(id.as_str()));
    }
}
