//! `tool_search` (issue 31; contract W3): searching the request's deferred tools.
//!
//! Hosted (`execution: "server"`, the default), the gateway runs it: upstream, the model
//! sees a function `tool_search(query, paths)` whose description lists what is searchable
//! (`ToolSet::deferred_overview`). A call ranks the deferred tools not loaded yet
//! ([`rank`]) and loads the best, plus whatever `paths` names exactly (a namespace, an MCP
//! server, a function); it is a `tool_search_call` (`call_id: null`) and a
//! `tool_search_output` with the loaded declarations. Deferred MCP servers are listed
//! first, when a search needs them.
//!
//! Client-executed (`execution: "client"`), the model sees the client's `description` and
//! `parameters`; a call is returned as a `tool_search_call` with its `call_id`, and the
//! client's `tool_search_output` in the next request loads the tools it names.

pub mod rank;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use protocol::input::InputItem;
use protocol::output::ItemStatus;
use protocol::ApiError;
use serde_json::{json, Value};

use super::deferred::{declarations, Deferred};
use super::loading::result_text;
use super::{opt_str, BindCtx, CallItem, DeclareCtx, Declared, Invocation, Owner, Ran, RunStatus, Tool, ToolEntry, ToolType, UpstreamTool};
use crate::events::file_citations::FileSources;
use crate::events::Emitter;
use crate::tools::Finished;
use crate::transcript::{Call, Recorded};
use rank::Doc;

/// The model-visible name of the search.
pub const NAME: &str = "tool_search";

/// What the model reads of a search that failed (its arguments not valid, or the index
/// failed): live, and again when a replayed `tool_search_output` is `incomplete`.
pub const FAILED: &str = "error: the tool search failed. Call it again with `query` (a string) and/or `paths` (an array of names), or answer without these tools.";

/// How many tools a query loads at most.
const LOADED_PER_QUERY: usize = 5;

/// What the model reads about the hosted search (the catalog's overview follows).
const HOSTED_DESCRIPTION: &str = "Search the deferred tools and load the ones you need; loaded tools can be called from your next step on. Give a short description of the task as `query`, or the exact names of namespaces, MCP servers or functions to load as `paths`.";

/// The `tool_search` tool type.
#[derive(Debug, Clone, Copy)]
pub struct ToolSearchType;

impl ToolType for ToolSearchType {
    fn types(&self) -> &'static [&'static str] {
        &["tool_search"]
    }

    /// `execution` is `"server"` (or absent) or `"client"` (400 naming it otherwise); a
    /// client search may give its `description` and `parameters` (a JSON Schema object).
    fn declare(&self, decl: Value, _kind: &str, param: &str, _ctx: &DeclareCtx<'_>) -> Result<Declared, ApiError> {
        let client = match decl.get("execution") {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) if s == "server" => false,
            Some(Value::String(s)) if s == "client" => true,
            Some(_) => return Err(ApiError::invalid(format!("{param}.execution"), "execution must be 'server' or 'client'.").with_code("invalid_value")),
        };
        let description = opt_str(&decl, "description", param)?;
        let parameters = match decl.get("parameters") {
            None | Some(Value::Null) => None,
            Some(p @ Value::Object(_)) => Some(p.clone()),
            Some(_) => return Err(ApiError::invalid(format!("{param}.parameters"), "Invalid type for 'parameters': expected a JSON Schema object.").with_code("invalid_type")),
        };
        let hosted_parameters = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tools you need should do, in a few words."},
                "paths": {"type": "array", "items": {"type": "string"}, "description": "Exact names of namespaces, MCP servers or functions to load."}
            }
        });
        let (description, parameters) = if client {
            (description.or_else(|| Some(HOSTED_DESCRIPTION.to_string())), parameters.unwrap_or(hosted_parameters))
        } else {
            (Some(HOSTED_DESCRIPTION.to_string()), hosted_parameters)
        };
        let mut echo = decl;
        for k in ["description", "parameters"] {
            if echo.get(k).is_none() {
                echo[k] = Value::Null;
            }
        }
        let entry = ToolEntry {
            name: NAME.to_string(),
            namespace: None,
            owner: if client { Owner::Client } else { Owner::Gateway },
            upstream: UpstreamTool { name: NAME.to_string(), description, parameters, strict: None, native: None },
            param: param.to_string(),
            deferred: None,
            tool: Arc::new(ToolSearchTool { client }),
        };
        Ok(Declared { entries: vec![entry], echo, discovery: None })
    }

    /// `tool_search_call` is the call the model made (under its `call_id`, or the item's
    /// `id` for a hosted search); `tool_search_output` answers it with the text the model
    /// read, rebuilt from its tools, and loads them; `additional_tools` loads its tools.
    fn record(&self, item: &InputItem) -> Option<Recorded> {
        let InputItem::Other { kind, raw } = item else { return None };
        let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
        match kind.as_str() {
            "tool_search_call" => {
                let call_id = text("call_id").or_else(|| text("id"))?;
                let arguments = raw.get("arguments").filter(|a| a.is_object()).cloned().unwrap_or_else(|| json!({}));
                Some(Recorded::Call(Call { call_id, name: NAME.to_string(), arguments: arguments.to_string() }))
            }
            "tool_search_output" => {
                let loads = raw.get("tools").and_then(Value::as_array).cloned().unwrap_or_default();
                let content = if text("status").as_deref() == Some("incomplete") && loads.is_empty() { FAILED.to_string() } else { result_text(&loads) };
                Some(Recorded::Output { call_id: text("call_id"), content, loads })
            }
            // Tools added part-way through a conversation (contract W3.3): declared from
            // here on as a search's output declares them.
            "additional_tools" => Some(Recorded::Tools(raw.get("tools").and_then(Value::as_array).cloned().unwrap_or_default())),
            _ => None,
        }
    }
}

/// A declared tool search.
#[derive(Debug)]
struct ToolSearchTool {
    client: bool,
}

impl Tool for ToolSearchTool {
    fn tool_type(&self) -> &'static str {
        "tool_search"
    }

    fn choice_types(&self) -> &'static [&'static str] {
        &["tool_search"]
    }

    fn call_item(&self) -> CallItem {
        if self.client {
            CallItem::ToolSearch
        } else {
            CallItem::Hosted
        }
    }

    fn searches_deferred(&self) -> bool {
        true
    }

    /// A hosted search refused (arguments not valid) is still a pair: its
    /// `tool_search_call` and an empty `tool_search_output`, both `incomplete`, so that a
    /// `store: false` replay answers the call; the model reads [`FAILED`]. A client
    /// search's call is the client's to answer: nothing here.
    fn refused(&self, arguments: &str, _msg: &str, out: &mut Emitter) -> Option<String> {
        if self.client {
            return None;
        }
        let arguments = serde_json::from_str::<Value>(arguments).ok().filter(Value::is_object).unwrap_or_else(|| json!({}));
        failed_pair(out, arguments);
        Some(FAILED.to_string())
    }

    /// Picks the catalog (the deferred tools not loaded yet) and what `paths` names
    /// exactly; the query is ranked when the call runs.
    fn bind(&self, call_id: &str, arguments: &Value, ctx: &BindCtx<'_>) -> Result<Box<dyn Invocation>, String> {
        let tools = ctx.tools.ok_or("error: the tool search has no catalog.")?;
        let query = arguments.get("query").and_then(Value::as_str).unwrap_or_default().to_string();
        let paths: Vec<String> = arguments.get("paths").and_then(Value::as_array).map(|p| p.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default();
        let hidden = tools.hidden();
        let mut catalog = Vec::with_capacity(hidden.len());
        let mut docs = Vec::with_capacity(hidden.len());
        let mut named = Vec::new();
        for (i, e) in hidden.iter().enumerate() {
            let Some(d) = &e.deferred else { continue };
            if paths.iter().any(|p| *p == d.surface || *p == e.name || p == e.visible_name()) {
                named.push(i);
            }
            docs.push(doc(e, d));
            catalog.push((e.name.clone(), d.clone()));
        }
        Ok(Box::new(Search { call_id: call_id.to_string(), arguments: arguments.clone(), query, catalog, docs, named, index: None }))
    }
}

/// A tool's searchable text.
fn doc(e: &ToolEntry, d: &Deferred) -> Doc {
    let params = e.upstream.parameters.get("properties").and_then(Value::as_object).map(|p| p.keys().cloned().collect::<Vec<_>>().join(" ")).unwrap_or_default();
    let description = [d.about.as_deref(), e.upstream.description.as_deref()].into_iter().flatten().collect::<Vec<_>>().join("\n");
    Doc { name: format!("{} {}", e.name, e.visible_name()), surface: d.surface.clone(), description, params }
}

/// One hosted search call.
struct Search {
    call_id: String,
    arguments: Value,
    query: String,
    /// The catalog's tools: public name and place, by doc index.
    catalog: Vec<(String, Arc<Deferred>)>,
    docs: Vec<Doc>,
    /// Doc indexes that `paths` names.
    named: Vec<usize>,
    index: Option<usize>,
}

impl Invocation for Search {
    fn call_id(&self) -> &str {
        &self.call_id
    }

    fn labels(&self) -> (&'static str, String) {
        ("tool_search", "gateway".to_string())
    }

    fn start(&mut self, out: &mut Emitter) {
        self.index = Some(out.tool_search_call_start(None, "server"));
    }

    fn run(&self, _timeout: Duration) -> BoxFuture<'static, Ran> {
        let (query, docs, named, catalog) = (self.query.clone(), self.docs.clone(), self.named.clone(), self.catalog.clone());
        Box::pin(async move {
            let Ok(ranked) = rank::rank(&query, &docs, LOADED_PER_QUERY).await else {
                return Ran { status: RunStatus::Error, content: FAILED.to_string(), ..Ran::default() };
            };
            let mut picked = named;
            for i in ranked {
                if !picked.contains(&i) {
                    picked.push(i);
                }
            }
            let tools: Vec<(&str, &Deferred)> = picked.iter().filter_map(|&i| catalog.get(i)).map(|(n, d)| (n.as_str(), d.as_ref())).collect();
            let loaded = declarations(&tools);
            Ran { status: RunStatus::Ok, content: result_text(&loaded), loaded, ..Ran::default() }
        })
    }

    fn finish(self: Box<Self>, ran: Ran, out: &mut Emitter, _files: &mut FileSources) -> Finished {
        let status = if ran.status == RunStatus::Ok { ItemStatus::Completed } else { ItemStatus::Incomplete };
        if let Some(idx) = self.index {
            out.tool_search_call_done(idx, self.arguments, status);
            // Failed too, the call has its output (empty, `incomplete`): a replay pairs them.
            out.tool_search_output(None, "server", ran.loaded.clone(), status);
        }
        Finished { content: ran.content, usage: ran.usage, loads: ran.loaded, ..Finished::default() }
    }
}

/// The items of a hosted search that failed before it ran: the call and an empty output,
/// both `incomplete`.
fn failed_pair(out: &mut Emitter, arguments: Value) {
    let idx = out.tool_search_call_start(None, "server");
    out.tool_search_call_done(idx, arguments, ItemStatus::Incomplete);
    out.tool_search_output(None, "server", Vec::new(), ItemStatus::Incomplete);
}
