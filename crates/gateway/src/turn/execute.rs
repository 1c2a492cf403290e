//! Gateway-owned calls at the end of a round: validation against the tool's schema, then
//! parallel execution (bounded, each with its own timeout) with their items and events.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use protocol::output::{FileSearchResult, ItemStatus, UrlSource, WebSearchAction};
use protocol::response::Usage;
use serde_json::Value;

use crate::events::citations::Source;
use crate::events::emitter::Emitter;
use crate::events::file_citations::{FileSource, FileSources};
use crate::executors::file_search::{render::render_for_model as render_files, router::search_all, FileHit, VectorStoreBackend};
use crate::tools::file_search::FileSearchOptions;
use crate::executors::web_search::{refine, render_for_model, SearchBackend, SearchRequest};
use crate::executors::ServerTool;
use crate::tools::{custom, ToolEntry};

/// Where a validated gateway call runs.
#[derive(Debug, Clone)]
pub enum Exec {
    /// A server-owned custom tool on its raw input.
    Server(Arc<dyn ServerTool>),
    /// A web search; `include_sources` puts `action.sources` on the item.
    WebSearch { backend: Arc<dyn SearchBackend>, request: SearchRequest, include_sources: bool },
    /// A file search of `queries` over the resolved `stores`; `include_results` fills the
    /// item's `results`.
    FileSearch { stores: Arc<Vec<(String, Arc<dyn VectorStoreBackend>)>>, options: FileSearchOptions, queries: Vec<String>, include_results: bool, timeout: Duration },
}

/// A validated gateway call, ready to run.
#[derive(Debug, Clone)]
pub struct GatewayCall {
    pub call_id: String,
    pub name: String,
    /// The raw input (custom tools) or the query (web search).
    pub input: String,
    pub exec: Exec,
}

/// What the model reads back for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
}

/// The results of one round's gateway calls.
#[derive(Debug, Default)]
pub struct Executed {
    pub results: Vec<ToolResult>,
    /// Sources found by web searches (for `url_citation`s).
    pub sources: Vec<Source>,
    /// Usage of private upstream calls made by executors.
    pub usage: Usage,
    /// `(item id, call id, query)` of each `web_search_call` item of the round.
    pub web_searches: Vec<(String, String, String)>,
}

/// Validates a gateway call's arguments: valid JSON that matches the tool's parameter
/// schema. Returns the parsed arguments; `Err` is the message the model receives instead of
/// an execution.
pub fn validate(entry: &ToolEntry, arguments: &str) -> Result<Value, String> {
    let args: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("error: the arguments of '{}' are not valid JSON ({e}). Call it again with a JSON object.", entry.name))?;
    let validator = validator_for(&entry.upstream.parameters)?;
    if let Some(problem) = validator.iter_errors(&args).next() {
        return Err(format!(
            "error: the arguments of '{}' do not match its schema: {problem} (at '{}'). Call it again with valid arguments.",
            entry.name,
            problem.instance_path()
        ));
    }
    Ok(args)
}

/// Compiled parameter schemas, by their JSON text: a gateway tool's schema is the same on
/// every request, so it is compiled once (bounded; cleared when full).
static VALIDATORS: LazyLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = LazyLock::new(Default::default);

fn validator_for(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
    let key = schema.to_string();
    let mut cache = VALIDATORS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(v) = cache.get(&key) {
        return Ok(v.clone());
    }
    let v = Arc::new(jsonschema::validator_for(schema).map_err(|e| format!("error: the tool's schema is invalid: {e}"))?);
    if cache.len() >= 256 {
        cache.clear();
    }
    cache.insert(key, v.clone());
    Ok(v)
}

/// The string argument `key` of validated arguments (e.g. custom `input`, search `query`).
pub fn string_arg(args: &Value, key: &str) -> String {
    args.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The custom-tool input parameter name.
pub const INPUT: &str = custom::INPUT_PARAM;

#[derive(Default)]
struct Done {
    content: String,
    ok: bool,
    hits: Vec<Source>,
    usage: Option<Usage>,
    /// A successful file search's chunks (numbered and rendered in call order).
    files: Option<Vec<FileHit>>,
}

/// Runs `calls`. Each first gets its progress message (streams only) and its item
/// (`custom_tool_call`, or `web_search_call` with `in_progress` → `searching`); then they
/// execute in parallel (at most `max_parallel`, each bounded by `timeout`) and each result
/// is recorded in call order. A failure or timeout is visible in the item (`status:
/// "incomplete"` with an output starting `error: `, or a `failed` search) and in the text
/// the model reads; it is never an empty success. File-search chunks are numbered on from
/// `files` (the turn's earlier chunks) and appended to it.
pub async fn run_calls(calls: Vec<GatewayCall>, emitter: &mut Emitter, max_parallel: usize, timeout: Duration, files: &mut FileSources) -> Executed {
    let mut indices = Vec::with_capacity(calls.len());
    for c in &calls {
        let idx = match &c.exec {
            Exec::Server(tool) => {
                emitter.progress(&tool.progress(&c.input));
                let idx = emitter.custom_call_start(c.call_id.clone(), c.name.clone(), None);
                emitter.call_delta(idx, c.input.clone());
                idx
            }
            Exec::WebSearch { .. } => {
                emitter.progress(&format!("Searching the web for “{}”", c.input));
                emitter.web_search_start()
            }
            Exec::FileSearch { queries, .. } => {
                let quoted: Vec<String> = queries.iter().map(|q| format!("“{q}”")).collect();
                emitter.progress(&format!("Searching files for {}", quoted.join(", ")));
                emitter.file_search_start()
            }
        };
        indices.push(idx);
    }
    let futures: Vec<BoxFuture<'static, Done>> = calls.iter().map(|c| execute(c.exec.clone(), c.input.clone(), timeout)).collect();
    let runs = futures_util::stream::iter(futures).buffered(max_parallel.max(1));
    futures_util::pin_mut!(runs);
    let mut out = Executed::default();
    let mut i = 0;
    while let Some(done) = runs.next().await {
        let (call, idx) = (&calls[i], indices[i]);
        i += 1;
        match &call.exec {
            Exec::Server(_) => {
                let status = if done.ok { ItemStatus::Completed } else { ItemStatus::Incomplete };
                emitter.call_done(idx, call.input.clone(), ItemStatus::Completed);
                emitter.custom_call_output(call.call_id.clone(), done.content.clone(), status);
            }
            Exec::WebSearch { include_sources, .. } => {
                let sources = include_sources.then(|| {
                    done.hits.iter().map(|s| UrlSource { kind: "url".into(), url: s.url.clone() }).collect()
                });
                let action = WebSearchAction { kind: "search".into(), query: call.input.clone(), queries: vec![call.input.clone()], sources };
                emitter.web_search_done(idx, action, done.ok);
                out.web_searches.push((emitter.item_id(idx), call.call_id.clone(), call.input.clone()));
            }
            Exec::FileSearch { queries, include_results, .. } => {
                let mut done = done;
                let hits = done.files.take();
                let results = match (&hits, include_results) {
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
                if let Some(hits) = &hits {
                    done.content = render_files(queries, hits, files.list.len() + 1);
                    files.list.extend(hits.iter().map(|h| FileSource { file_id: h.file_id.clone(), filename: h.filename.clone() }));
                }
                emitter.file_search_done(idx, queries.clone(), results, done.ok);
                out.results.push(ToolResult { call_id: call.call_id.clone(), content: done.content });
                continue;
            }
        }
        if let Some(u) = &done.usage {
            out.usage.add(u);
        }
        for s in done.hits {
            if !out.sources.iter().any(|k| k.url == s.url) {
                out.sources.push(s);
            }
        }
        out.results.push(ToolResult { call_id: call.call_id.clone(), content: done.content });
    }
    out
}

fn execute(exec: Exec, input: String, timeout: Duration) -> BoxFuture<'static, Done> {
    Box::pin(async move {
        let timed_out = || format!("error: the tool timed out after {} ms", timeout.as_millis());
        match exec {
            Exec::Server(tool) => match tokio::time::timeout(timeout, tool.run(&input)).await {
                Ok(Ok(out)) => Done { content: out, ok: true, ..Done::default() },
                Ok(Err(e)) => Done { content: format!("error: {e}"), ..Done::default() },
                Err(_) => Done { content: timed_out(), ..Done::default() },
            },
            Exec::FileSearch { stores, options, queries, timeout: search_timeout, .. } => {
                let limit = timeout.min(search_timeout);
                match file_search(&stores, &options, &queries, limit).await {
                    Ok(hits) => Done { ok: true, files: Some(hits), ..Done::default() },
                    Err(e) => Done { content: format!("error: file search failed: {e}"), ..Done::default() },
                }
            }
            Exec::WebSearch { backend, request, .. } => match tokio::time::timeout(timeout, backend.search(&request)).await {
                Ok(Ok(outcome)) => {
                    let hits = refine(outcome.hits.clone(), &request);
                    let content = render_for_model(&request.query, &outcome, &hits);
                    let sources = hits.iter().map(|h| Source { url: h.url.clone(), title: h.title.clone() }).collect();
                    Done { content, ok: true, hits: sources, usage: outcome.usage, files: None }
                }
                Ok(Err(e)) => Done { content: format!("error: web search failed: {e}"), ..Done::default() },
                Err(_) => Done { content: timed_out(), ..Done::default() },
            },
        }
    })
}

/// Every query over every store (in parallel, within `timeout`), merged: one chunk (same
/// file and text) keeps its best score; highest first; at most `max_num_results`. `Err`
/// when every query failed.
async fn file_search(stores: &[(String, Arc<dyn VectorStoreBackend>)], options: &FileSearchOptions, queries: &[String], timeout: Duration) -> Result<Vec<FileHit>, String> {
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
