//! `file_search` tool (contract §2): gateway-owned. Upstream sees a function
//! `file_search(queries)`; its calls become `file_search_call` items, and the answer's
//! `【N】` markers become `file_citation` annotations. Which executor serves each vector
//! store is resolved before any model call ([`Tool::resolve`]).

use protocol::ApiError;
use serde_json::{json, Value};

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use protocol::input::InputItem;
use protocol::output::FileSearchResult;

use super::{BindCtx, CallItem, DeclareCtx, Declared, Finished, Invocation, Owner, Ran, ResolveCtx, RunStatus, Tool, ToolEntry, ToolType, UpstreamTool};
use crate::error::GatewayError;
use crate::events::file_citations::{FileSource, FileSources};
use crate::events::Emitter;
use crate::executors::file_search::router::{search_all, ResolveError};
use crate::executors::file_search::{filters, render::render_chunk, render::render_for_model, FileHit, FileSearchRequest, VectorStoreBackend};
use crate::transcript::{Call, Replayed};
use crate::upstream::NativeTool;

/// The `file_search` tool type.
#[derive(Debug, Clone, Copy)]
pub struct FileSearchType;

impl ToolType for FileSearchType {
    fn types(&self) -> &'static [&'static str] {
        &["file_search"]
    }

    fn declare(&self, decl: Value, _kind: &str, param: &str, _ctx: &DeclareCtx<'_>) -> Result<Declared, ApiError> {
        declare(&decl, param)
    }

    fn replay(&self, item: &InputItem, file_sources: &mut Vec<FileSource>) -> Option<Replayed> {
        match item {
            InputItem::FileSearchCall(fs) => Some(replay(fs, file_sources)),
            _ => None,
        }
    }
}

/// The model-visible name of the gateway's file search function.
pub const FUNCTION: &str = "file_search";

/// A validated declaration: what each search of this request uses.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSearchOptions {
    /// `vector_store_ids`, non-empty.
    pub vector_store_ids: Vec<String>,
    /// 1–50, default 20.
    pub max_num_results: u32,
    pub filters: Option<Value>,
    pub ranker: Option<String>,
    /// 0..1, default 0.
    pub score_threshold: f64,
    /// `hybrid_search` `(embedding_weight, text_weight)`.
    pub hybrid: Option<(f64, f64)>,
}

impl FileSearchOptions {
    /// The executor request for one query.
    pub fn request(&self, query: String) -> FileSearchRequest {
        FileSearchRequest {
            query,
            max_num_results: self.max_num_results,
            filters: self.filters.clone(),
            ranker: self.ranker.clone(),
            score_threshold: self.score_threshold,
            hybrid: self.hybrid,
        }
    }
}

fn invalid(param: String, message: impl Into<String>) -> ApiError {
    ApiError::invalid(param, message).with_code("invalid_value")
}

fn number(v: &Value, param: String, lo: f64, hi: f64) -> Result<f64, ApiError> {
    match v.as_f64() {
        Some(x) if (lo..=hi).contains(&x) => Ok(x),
        _ => Err(invalid(param.clone(), format!("'{param}' must be a number from {lo} to {hi}."))),
    }
}

/// Validates a declaration (contract §2). Errors are 400s naming the field
/// (`tools[i].vector_store_ids`, `.max_num_results`, `.ranking_options.*`, `.filters`).
pub fn declare(decl: &Value, param: &str) -> Result<Declared, ApiError> {
    let ids_param = format!("{param}.vector_store_ids");
    let vector_store_ids: Vec<String> = match decl.get("vector_store_ids") {
        None | Some(Value::Null) => {
            return Err(ApiError::invalid(ids_param.clone(), format!("Missing required parameter: '{ids_param}'."))
                .with_code("missing_required_parameter"))
        }
        Some(Value::Array(a)) if !a.is_empty() => {
            let mut out = Vec::with_capacity(a.len());
            for v in a {
                match v.as_str() {
                    Some(s) if !s.trim().is_empty() => out.push(s.to_string()),
                    _ => return Err(invalid(ids_param, "vector_store_ids must be a list of vector store ids.")),
                }
            }
            out
        }
        Some(_) => return Err(invalid(ids_param, "vector_store_ids must be a non-empty list of vector store ids.")),
    };
    let max_num_results = match decl.get("max_num_results") {
        None | Some(Value::Null) => 20,
        Some(v) => match v.as_u64() {
            Some(n @ 1..=50) => n as u32,
            _ => return Err(invalid(format!("{param}.max_num_results"), "max_num_results must be an integer from 1 to 50.")),
        },
    };
    let (mut ranker, mut score_threshold, mut hybrid) = (None, 0.0, None);
    match decl.get("ranking_options") {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) => {
            let rp = format!("{param}.ranking_options");
            match o.get("ranker") {
                None | Some(Value::Null) => {}
                Some(Value::String(r)) if matches!(r.as_str(), "auto" | "default-2024-11-15" | "none") => ranker = Some(r.clone()),
                Some(_) => return Err(invalid(format!("{rp}.ranker"), "ranker must be 'auto', 'default-2024-11-15' or 'none'.")),
            }
            if let Some(v) = o.get("score_threshold").filter(|v| !v.is_null()) {
                score_threshold = number(v, format!("{rp}.score_threshold"), 0.0, 1.0)?;
            }
            match o.get("hybrid_search") {
                None | Some(Value::Null) => {}
                Some(Value::Object(h)) => {
                    let hp = format!("{rp}.hybrid_search");
                    let w = |k: &str| match h.get(k) {
                        Some(v) => number(v, format!("{hp}.{k}"), 0.0, f64::MAX),
                        None => Err(ApiError::invalid(format!("{hp}.{k}"), format!("Missing required parameter: '{hp}.{k}'."))
                            .with_code("missing_required_parameter")),
                    };
                    hybrid = Some((w("embedding_weight")?, w("text_weight")?));
                }
                Some(_) => return Err(invalid(format!("{rp}.hybrid_search"), "hybrid_search must be an object.")),
            }
        }
        Some(_) => return Err(invalid(format!("{param}.ranking_options"), "ranking_options must be an object.")),
    }
    let filters = match decl.get("filters") {
        None | Some(Value::Null) => None,
        Some(f) => {
            filters::validate(f).map_err(|why| invalid(format!("{param}.filters"), format!("Invalid filters: {why}.")))?;
            Some(f.clone())
        }
    };
    let mut ranking_echo = json!({"ranker": ranker.clone().unwrap_or_else(|| "auto".into()), "score_threshold": score_threshold});
    if let Some((e, t)) = hybrid {
        ranking_echo["hybrid_search"] = json!({"embedding_weight": e, "text_weight": t});
    }
    let echo = json!({
        "type": "file_search",
        "vector_store_ids": vector_store_ids,
        "filters": filters,
        "max_num_results": max_num_results,
        "ranking_options": ranking_echo,
    });
    // The native form (for an upstream that renders `file_search` and returns typed calls):
    // the client's store ids and result cap; filters and ranking stay with the gateway,
    // which runs the search, and no backend URL or credential is named.
    let native = NativeTool::hosted("file_search", json!({"type": "file_search", "vector_store_ids": vector_store_ids, "max_num_results": max_num_results}));
    let options = FileSearchOptions { vector_store_ids, max_num_results, filters, ranker, score_threshold, hybrid };
    let entry = ToolEntry {
        name: FUNCTION.to_string(),
        namespace: None,
        owner: Owner::Gateway,
        upstream: UpstreamTool {
            name: FUNCTION.to_string(),
            description: Some(
                "Search the user's uploaded files for passages relevant to the question. Returns numbered \
                 excerpts; cite the ones you use by writing their marker, e.g. 【1】."
                    .to_string(),
            ),
            parameters: json!({
                "type": "object",
                "properties": {"queries": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "maxItems": 5,
                    "description": "One to five search queries."
                }},
                "required": ["queries"],
            }),
            strict: None,
            native: Some(native),
        },
        param: param.to_string(),
        deferred: None,
        tool: Arc::new(FileSearchTool { options, stores: Arc::default() }),
    };
    Ok(Declared { entries: vec![entry], echo, discovery: None })
}

/// The vector stores of a declaration, each with the executor that serves it.
pub type Stores = Arc<Vec<(String, Arc<dyn VectorStoreBackend>)>>;

/// A declared file search: its options and, once resolved, its stores' executors.
#[derive(Debug, Clone)]
pub struct FileSearchTool {
    pub options: FileSearchOptions,
    /// Empty until [`Tool::resolve`].
    pub stores: Stores,
}

impl Tool for FileSearchTool {
    fn tool_type(&self) -> &'static str {
        "file_search"
    }

    fn choice_types(&self) -> &'static [&'static str] {
        &["file_search"]
    }

    fn call_item(&self) -> CallItem {
        CallItem::Hosted
    }

    fn cites_files(&self) -> bool {
        true
    }

    /// The executor of every vector store: an id no executor knows is a 400
    /// `vector_store_not_found` naming it (param `tools[i].vector_store_ids`); a store whose
    /// executor is not configured is a 400 `tool_not_configured` naming the missing setting.
    fn resolve<'a>(&'a self, param: &'a str, ctx: &'a ResolveCtx<'a>) -> BoxFuture<'a, Result<Option<Arc<dyn Tool>>, GatewayError>> {
        Box::pin(async move {
            let param = format!("{param}.vector_store_ids");
            let router = &ctx.registry.file_search;
            let ids = &self.options.vector_store_ids;
            let resolved = futures_util::future::join_all(ids.iter().map(|id| router.resolve(ctx.project, id))).await;
            let mut stores = Vec::with_capacity(resolved.len());
            for (id, r) in ids.iter().zip(resolved) {
                match r {
                    Ok(backend) => stores.push((id.clone(), backend)),
                    Err(ResolveError::Unknown(id)) => {
                        return Err(GatewayError::bad_request(Some(param), format!("Vector store with id '{id}' not found."))
                            .with_code("vector_store_not_found"))
                    }
                    Err(ResolveError::NotConfigured(why)) => {
                        return Err(GatewayError::bad_request(Some(param), why).with_code("tool_not_configured"))
                    }
                }
            }
            let tool: Arc<dyn Tool> = Arc::new(FileSearchTool { options: self.options.clone(), stores: Arc::new(stores) });
            Ok(Some(tool))
        })
    }

    /// The call's `queries` (trimmed, empty ones dropped) over the resolved stores;
    /// `include: ["file_search_call.results"]` fills the item's `results`.
    fn bind(&self, call_id: &str, arguments: &Value, ctx: &BindCtx<'_>) -> Result<Box<dyn Invocation>, String> {
        let queries: Vec<String> = arguments
            .get("queries")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(|q| q.trim().to_string()).filter(|q| !q.is_empty()).collect())
            .unwrap_or_default();
        Ok(Box::new(FileSearchCall {
            call_id: call_id.to_string(),
            queries,
            options: self.options.clone(),
            stores: self.stores.clone(),
            include_results: ctx.includes("file_search_call.results"),
            native: ctx.native,
            search_timeout: ctx.executors.file_search.timeout,
            index: None,
        }))
    }
}

/// One bound file search.
struct FileSearchCall {
    call_id: String,
    queries: Vec<String>,
    options: FileSearchOptions,
    stores: Stores,
    include_results: bool,
    /// Declared natively upstream: the result goes back as a `file_search_call` item.
    native: bool,
    /// `file_search.timeout_ms`, besides the call's own timeout.
    search_timeout: Duration,
    /// The `file_search_call` item, once added.
    index: Option<usize>,
}

impl Invocation for FileSearchCall {
    fn call_id(&self) -> &str {
        &self.call_id
    }

    fn labels(&self) -> (&'static str, String) {
        let executor = self.stores.first().map_or("none", |(_, b)| b.kind());
        ("file_search", executor.to_string())
    }

    /// A progress message, then the item (`in_progress` → `searching`, `queries: []`).
    fn start(&mut self, out: &mut Emitter) {
        let quoted: Vec<String> = self.queries.iter().map(|q| format!("“{q}”")).collect();
        out.progress(&format!("Searching files for {}", quoted.join(", ")));
        self.index = Some(out.file_search_start());
    }

    fn run(&self, timeout: Duration) -> BoxFuture<'static, Ran> {
        let (stores, options, queries) = (self.stores.clone(), self.options.clone(), self.queries.clone());
        let limit = timeout.min(self.search_timeout);
        Box::pin(async move {
            match search(&stores, &options, &queries, limit).await {
                Ok(hits) => Ran { status: RunStatus::Ok, files: Some(hits), ..Ran::default() },
                Err(e) => Ran { status: RunStatus::Error, content: format!("error: file search failed: {e}"), ..Ran::default() },
            }
        })
    }

    /// The chunks are numbered after the turn's earlier ones (`files`, which they join) and
    /// rendered for the model as untrusted data; `.completed` (only on success) and the item
    /// done with its queries and, when included, its `results`.
    fn finish(self: Box<Self>, ran: Ran, out: &mut Emitter, files: &mut FileSources) -> Finished {
        let mut content = ran.content;
        let results = match (&ran.files, self.include_results) {
            (Some(h), true) => Some(
                h.iter()
                    .map(|h| FileSearchResult {
                        file_id: h.file_id.clone(),
                        filename: h.filename.clone(),
                        score: h.score,
                        text: h.text.clone(),
                        attributes: h.attributes.clone(),
                    })
                    .collect(),
            ),
            _ => None,
        };
        let first = files.list.len() + 1;
        if let Some(hits) = &ran.files {
            content = render_for_model(&self.queries, hits, first);
            files.list.extend(hits.iter().map(|h| FileSource { file_id: h.file_id.clone(), filename: h.filename.clone() }));
        }
        let ok = ran.status == RunStatus::Ok;
        let continuation = self.native.then(|| continuation(&self.call_id, &self.queries, ran.files.as_deref(), first, ok));
        if let Some(idx) = self.index {
            out.file_search_done(idx, self.queries.clone(), results, ok);
        }
        Finished { content, continuation, ..Finished::default() }
    }
}

/// The continuation of a native call (contract §4.2): a `file_search_call` under the
/// call's id with its `queries` and `results`, each result's `text` the chunk as
/// the function form shows it (headed by its `【N†filename】` marker, numbered from
/// `first`, defused), so the model cites it the same way.
fn continuation(call_id: &str, queries: &[String], hits: Option<&[FileHit]>, first: usize, ok: bool) -> Value {
    let results: Vec<Value> = hits
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            json!({"file_id": h.file_id, "filename": h.filename, "score": h.score, "attributes": h.attributes,
                "text": render_chunk(first + i, h)})
        })
        .collect();
    json!({"type": "file_search_call", "id": call_id, "queries": queries, "status": if ok { "completed" } else { "failed" }, "results": results})
}

/// Every query over every store (in parallel, within `timeout`), merged: one chunk (same
/// file and text) keeps its best score; highest first; at most `max_num_results`. `Err`
/// when every query failed.
async fn search(stores: &[(String, Arc<dyn VectorStoreBackend>)], options: &FileSearchOptions, queries: &[String], timeout: Duration) -> Result<Vec<FileHit>, String> {
    let requests: Vec<_> = queries.iter().map(|q| options.request(q.clone())).collect();
    let runs = requests.iter().map(|r| search_all(stores, r, timeout));
    let mut merged: Vec<FileHit> = Vec::new();
    let mut first_err = None;
    let mut ok = false;
    for r in futures_util::future::join_all(runs).await {
        match r {
            Ok(hits) => {
                ok = true;
                for h in hits {
                    match merged.iter_mut().find(|m| m.file_id == h.file_id && m.text == h.text) {
                        Some(m) if m.score < h.score => *m = h,
                        Some(_) => {}
                        None => merged.push(h),
                    }
                }
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if !ok {
        return Err(first_err.unwrap_or_else(|| "no query to search".into()));
    }
    merged.sort_by(|a, b| b.score.total_cmp(&a.score));
    merged.truncate(options.max_num_results.clamp(1, 50) as usize);
    Ok(merged)
}

/// Replays a `file_search_call` item: the call with its queries, and its result shown again
/// from `results` (with `include: ["file_search_call.results"]`; the chunks are numbered
/// after `sources`, which they join) or only its queries (lossy).
pub fn replay(fs: &protocol::input::FileSearchCallItem, sources: &mut Vec<FileSource>) -> Replayed {
    let call = Call { call_id: fs.id.clone(), name: FUNCTION.to_string(), arguments: json!({"queries": fs.queries}).to_string() };
    let result = match &fs.results {
        Some(results) => {
            let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            let hits: Vec<FileHit> = results
                .iter()
                .map(|r| FileHit {
                    file_id: str_of(r, "file_id"),
                    filename: str_of(r, "filename"),
                    score: r.get("score").and_then(Value::as_f64).unwrap_or(0.0),
                    text: str_of(r, "text"),
                    attributes: r.get("attributes").and_then(Value::as_object).cloned().unwrap_or_default(),
                })
                .collect();
            let text = render_for_model(&fs.queries, &hits, sources.len() + 1);
            sources.extend(hits.iter().map(|h| FileSource { file_id: h.file_id.clone(), filename: h.filename.clone() }));
            text
        }
        None => format!(
            "File search for {} (earlier turn; the results were not kept).",
            fs.queries.iter().map(|q| format!("\"{q}\"")).collect::<Vec<_>>().join(", ")
        ),
    };
    Replayed { call, result: Some(result), private_key: None }
}

#[cfg(test)]
mod duties {
    use super::*;
    use crate::config::file_search::FileSearchConfig;
    use crate::executors::file_search::router::FileSearchRouter;
    use crate::executors::Registry;
    use crate::tools::duties::testing::{names, recording};
    use crate::tools::ToolSet;
    use protocol::output::{ItemStatus, OutputItem};

    /// An embedded store that holds `vs_1` with one chunk.
    #[derive(Debug)]
    struct OneChunk;

    impl VectorStoreBackend for OneChunk {
        fn kind(&self) -> &'static str {
            "embedded"
        }
        fn has_store<'a>(&'a self, _project: &'a str, id: &'a str) -> BoxFuture<'a, Result<bool, String>> {
            Box::pin(async move { Ok(id == "vs_1") })
        }
        fn search<'a>(&'a self, _store: &'a str, _req: &'a FileSearchRequest) -> BoxFuture<'a, Result<Vec<FileHit>, String>> {
            Box::pin(async {
                Ok(vec![FileHit { file_id: "file-1".into(), filename: "a.md".into(), score: 0.5, text: "Alpha.".into(), attributes: Default::default() }])
            })
        }
    }

    /// The four duties of `file_search`: its options are checked; an unknown store is a 400
    /// naming `vector_store_ids` when its stores are resolved; upstream it is the function
    /// `file_search(queries)`; a call binds to its queries over the resolved stores; it is
    /// encoded as a `file_search_call` (with `results` when included) whose chunks are
    /// numbered after the turn's earlier ones; a replayed item with results shows them again.
    #[tokio::test]
    async fn file_search_duties() {
        let mut registry = Registry::default();
        registry.file_search = FileSearchRouter::from_config(&FileSearchConfig::default(), Some(Arc::new(OneChunk)));
        let ctx = DeclareCtx { registry: &registry };
        let bad = json!({"type":"file_search","vector_store_ids":["vs_1"],"max_num_results":0});
        assert_eq!(FileSearchType.declare(bad, "file_search", "tools[0]", &ctx).unwrap_err().param.as_deref(), Some("tools[0].max_num_results"));
        let mut unknown = ToolSet::build(vec![json!({"type":"file_search","vector_store_ids":["vs_9"]})], None, &registry, &Default::default()).unwrap();
        let resolve = ResolveCtx { registry: &registry, project: "default" };
        let err = unknown.resolve(&resolve).await.unwrap_err();
        assert_eq!((err.error.param.as_deref(), err.error.code.as_deref()), (Some("tools[0].vector_store_ids"), Some("vector_store_not_found")));
        let decl = json!({"type":"function","name":"f"});
        let mut set = ToolSet::build(vec![decl, json!({"type":"file_search","vector_store_ids":["vs_1"]})], None, &registry, &Default::default()).unwrap();
        set.resolve(&resolve).await.unwrap();
        assert!(set.cites_files());
        let entry = set.lookup(FUNCTION).unwrap();
        assert_eq!((entry.owner, entry.call_item(), entry.param.as_str()), (Owner::Gateway, CallItem::Hosted, "tools[1]"));
        let include = ["file_search_call.results".to_string()];
        let mut call = entry.tool.bind("c1", &json!({"queries":[" alpha ", ""]}), &BindCtx { executors: &registry, include: &include, native: false, tools: None }).unwrap();
        assert_eq!(call.labels(), ("file_search", "embedded".to_string()));
        let (mut out, recorder) = recording();
        call.start(&mut out);
        let ran = call.run(Duration::from_secs(5)).await;
        assert_eq!(ran.status, RunStatus::Ok, "{}", ran.content);
        let mut files = FileSources { enabled: true, list: vec![FileSource { file_id: "file-0".into(), filename: "earlier.md".into() }] };
        let done = call.finish(ran, &mut out, &mut files);
        assert!(done.content.contains("【2†a.md】") && done.content.contains("Alpha."), "numbered after the earlier chunk: {}", done.content);
        assert_eq!(files.list.len(), 2);
        assert_eq!(
            names(&recorder)[6..],
            [
                "response.output_item.added",
                "response.file_search_call.in_progress",
                "response.file_search_call.searching",
                "response.file_search_call.completed",
                "response.output_item.done"
            ]
        );
        let Some(OutputItem::FileSearchCall { id, status, queries, results }) = out.response().output.last().cloned() else { panic!("a search item") };
        assert_eq!((status, queries), (ItemStatus::Completed, vec!["alpha".to_string()]));
        assert_eq!(results.map(|r| r.len()), Some(1));
        let item: InputItem = serde_json::from_value(json!({"type":"file_search_call","id":id,"status":"completed","queries":["alpha"],
            "results":[{"file_id":"file-1","filename":"a.md","score":0.5,"text":"Alpha.","attributes":{}}]})).unwrap();
        let mut sources = Vec::new();
        let r = FileSearchType.replay(&item, &mut sources).unwrap();
        assert!(r.result.unwrap_or_default().contains("Alpha."));
        assert_eq!((r.call.name.as_str(), sources.len()), (FUNCTION, 1));
    }
}
