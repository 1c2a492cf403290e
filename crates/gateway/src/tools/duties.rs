//! The four duties of a tool type (DESIGN.md "The three seams"), as traits:
//! 1. validate the public declaration, and 2. give its upstream form ([`ToolType::declare`]:
//!    each tool's function, with the native form an upstream may take instead);
//! 3. recognize and bind a model call into one [`Invocation`] ([`Tool::bind`]: arguments
//!    already checked against the schema, executor chosen);
//! 4. encode its canonical items and events ([`Invocation::start`], [`Invocation::finish`])
//!    and its continuation input ([`ToolType::replay`]).
//!
//! The turn loop drives these and names no tool type. Executors (where a tool runs) stay
//! apart, in `executors/`.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use protocol::input::InputItem;
use protocol::response::Usage;
use protocol::ApiError;
use serde_json::Value;

use super::ToolEntry;
use crate::error::GatewayError;
use crate::events::citations::Source;
use crate::events::file_citations::{FileSource, FileSources};
use crate::events::Emitter;
use crate::executors::Registry;
use crate::transcript::{Recorded, Replayed};

/// What declaring a tool needs besides the declaration: the deployment's executors.
#[derive(Debug, Clone, Copy)]
pub struct DeclareCtx<'a> {
    pub registry: &'a Registry,
}

/// What resolving a tool needs ([`Tool::resolve`]): the executors and the request's
/// project (tenant), whose vector stores alone a file search may name.
#[derive(Debug, Clone, Copy)]
pub struct ResolveCtx<'a> {
    pub registry: &'a Registry,
    pub project: &'a str,
}

/// A validated declaration: its tools (a `namespace` gives one per member), the
/// normalized declaration echoed in `Response.tools` (contract §2), and, for a declaration
/// whose tools are known only once the turn runs (an MCP server), how to find them.
#[derive(Debug)]
pub struct Declared {
    pub entries: Vec<ToolEntry>,
    pub echo: Value,
    pub discovery: Option<Arc<dyn Discovery>>,
}

/// Duty 0 of a declaration whose tools are listed at run time (an MCP server, issue 18
/// "Listing"): before the first round every discovery starts (its item is added), all run
/// at once, then each finishes in declaration order and gives its tools. A label whose
/// listing the history holds (a continuation) reuses it: no item, no listing.
pub trait Discovery: Send + Sync + Debug {
    /// What names it, unique per request (an MCP `server_label`).
    fn label(&self) -> &str;
    /// The declaration's field that names it, e.g. `server_label` (a duplicate's 400).
    fn label_field(&self) -> &'static str;
    /// Checks, before any model call, what only the network can tell (an MCP server's
    /// host resolving only to private addresses). Errors are 400s naming the declaration.
    fn check(&self) -> BoxFuture<'_, Result<(), ApiError>> {
        Box::pin(async { Ok(()) })
    }
    /// Adds its item to the output and returns the listing to run; with `known` (the
    /// tools the history lists for its label) adds nothing and the listing gives those.
    fn start(&self, out: &mut Emitter, known: Option<&Value>) -> Box<dyn Listing>;
    /// For a declaration whose tools are deferred (`defer_loading: true`, issue 31): its
    /// name and description, all the model sees of it until a tool search loads its tools.
    /// It is then listed only when a search needs it (or a continuation loaded its tools).
    fn deferred(&self) -> Option<(String, Option<String>)> {
        None
    }
    /// Where it is declared, `tools[i]` (errors found later name it).
    fn param(&self) -> &str;
}

/// What a finished listing gives: the tools the model may call and, for a listing made
/// now that succeeded, the tools as its item has them (kept for reuse).
#[derive(Debug, Default)]
pub struct Discovered {
    pub entries: Vec<ToolEntry>,
    pub listing: Option<Value>,
}

/// One listing in progress ([`Discovery::start`]).
pub trait Listing: Send {
    /// Lists (connecting first); never fails: a failure is kept for [`Listing::finish`].
    fn run(&mut self) -> BoxFuture<'_, ()>;
    /// Completes the item; the tools found.
    fn finish(self: Box<Self>, out: &mut Emitter) -> Discovered;
}

/// One Responses tool type (contract §2), the request-independent side of its duties.
pub trait ToolType: Send + Sync + Debug {
    /// The declared `type` values it handles, e.g. `["file_search"]`.
    fn types(&self) -> &'static [&'static str];
    /// Duties 1 and 2: validates the declaration at `param` (`tools[i]`) whose `type` is
    /// `kind`, and gives each tool its upstream form (a function, plus the native form
    /// where the type has one). Errors are 400s naming the offending field.
    fn declare(&self, decl: Value, kind: &str, param: &str, ctx: &DeclareCtx<'_>) -> Result<Declared, ApiError>;
    /// Duty 4, replay: the call (and, for a gateway tool's item, the result the model read)
    /// that an input item of this type stands for; `None` for other items. A file search
    /// appends its replayed chunks to `file_sources`.
    fn replay(&self, _item: &InputItem, _file_sources: &mut Vec<FileSource>) -> Option<Replayed> {
        None
    }
    /// The id under which an item of this type keeps a private result (results not on the
    /// wire, e.g. web search's), so that its replay restores them; `None` by default.
    fn private_result_id<'i>(&self, _item: &'i InputItem) -> Option<&'i str> {
        None
    }
    /// The state an input item of this type records (a listing, an approval request or
    /// response; [`Recorded`]); `None` for other items.
    fn record(&self, _item: &InputItem) -> Option<Recorded> {
        None
    }
}

/// How a tool's calls appear in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallItem {
    /// A client `function_call`, answered by a `function_call_output`.
    Function,
    /// A `custom_tool_call` (the client's, or a server tool's with its output).
    Custom,
    /// A gateway item of its own (`web_search_call`, `file_search_call`).
    Hosted,
    /// A client-executed `tool_search_call` (contract W3.3), answered by the client's
    /// `tool_search_output`.
    ToolSearch,
}

/// One declared tool of a request: the per-request side of the duties.
pub trait Tool: Send + Sync + Debug {
    /// The Responses tool type, e.g. `function`, `custom`, `web_search`, `file_search`.
    fn tool_type(&self) -> &'static str;
    /// The declared `type` values a `tool_choice` may name it by (hosted tools).
    fn choice_types(&self) -> &'static [&'static str] {
        &[]
    }
    /// How its calls appear in the output.
    fn call_item(&self) -> CallItem;
    /// Duty 3: binds a gateway call whose `arguments` matched the tool's schema into an
    /// invocation on its executor. `Err` is the message the model reads instead of a run
    /// (e.g. no executor configured). Client tools are never bound.
    fn bind(&self, _call_id: &str, _arguments: &Value, _ctx: &BindCtx<'_>) -> Result<Box<dyn Invocation>, String> {
        Err("error: this tool has no executor configured.".to_string())
    }
    /// Resolves what the tool needs before any model call, asynchronously (file_search:
    /// each vector store's executor); `param` is the declaration's `tools[i]`. Returns the
    /// resolved tool to use instead, or `None` to keep this one. Errors are 400s.
    fn resolve<'a>(&'a self, _param: &'a str, _ctx: &'a ResolveCtx<'a>) -> BoxFuture<'a, Result<Option<Arc<dyn Tool>>, GatewayError>> {
        Box::pin(async { Ok(None) })
    }
    /// True when the answer's `【N】` markers name this tool's chunks (file citations).
    fn cites_files(&self) -> bool {
        false
    }
    /// True when a call must be approved by the user before it runs (issue 18
    /// "Approvals"): the turn then asks ([`Tool::request_approval`]) instead of binding it.
    fn needs_approval(&self) -> bool {
        false
    }
    /// True for a tool whose calls search the request's deferred tools (`tool_search`,
    /// issue 31): it binds with the request's tools ([`BindCtx::tools`]), and deferred MCP
    /// servers are listed before its calls run.
    fn searches_deferred(&self) -> bool {
        false
    }
    /// A gateway call refused before it ran (its `arguments`, JSON text, are not valid, or
    /// it could not be bound; `msg` says why): a tool whose items must come in pairs adds
    /// them here, failed, and returns what the model reads instead of `msg` (the text a
    /// replay of those items gives it back). `None`, the default: no item, the model reads `msg`.
    fn refused(&self, _arguments: &str, _msg: &str, _out: &mut Emitter) -> Option<String> {
        None
    }
    /// Adds the item that asks the user to approve a call with `arguments` (JSON text) and
    /// returns its id, which the approval response names; `None` when the tool asks none.
    fn request_approval(&self, _arguments: &str, _out: &mut Emitter) -> Option<String> {
        None
    }
}

/// What binding a call needs besides the call: the executors and the request's `include`.
#[derive(Debug, Clone, Copy)]
pub struct BindCtx<'a> {
    pub executors: &'a Registry,
    /// `include` values, e.g. `web_search_call.action.sources`.
    pub include: &'a [String],
    /// The upstream saw the tool in its native form: the call's result goes back to it as
    /// the type's continuation item ([`Finished::continuation`]).
    pub native: bool,
    /// The request's tools, for a tool that searches them ([`Tool::searches_deferred`]).
    pub tools: Option<&'a super::ToolSet>,
}

impl BindCtx<'_> {
    /// True when `include` asks for `what`.
    pub fn includes(&self, what: &str) -> bool {
        self.include.iter().any(|i| i == what)
    }
}

/// How a run ended, for the item's status and the observer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunStatus {
    /// The executor answered.
    Ok,
    /// The executor failed.
    #[default]
    Error,
    /// The call's timeout ran out.
    Timeout,
}

/// What a run produced, before it is encoded.
#[derive(Debug, Default)]
pub struct Ran {
    pub status: RunStatus,
    /// The text the model reads (an `error: …` text when the run failed).
    pub content: String,
    /// Usage of private upstream calls the executor made.
    pub usage: Option<Usage>,
    /// Sources found (web search), for `url_citation`s.
    pub sources: Vec<Source>,
    /// Chunks found (file search), numbered after the turn's earlier ones when encoded.
    pub files: Option<Vec<crate::executors::file_search::FileHit>>,
    /// The declarations a tool search loaded (`tool_search_output.tools`).
    pub loaded: Vec<Value>,
}

/// A finished call as the turn records it.
#[derive(Debug, Default)]
pub struct Finished {
    /// What the model reads as the call's result.
    pub content: String,
    /// Sources for the answer's `url_citation`s.
    pub sources: Vec<Source>,
    pub usage: Option<Usage>,
    /// A private result the tool needs again on replay: `(item id, key)`, the result being
    /// `content` (web search: the item's id and its query).
    pub private: Option<(String, String)>,
    /// For a call of a natively declared hosted tool: the type's continuation input item
    /// that goes back to the upstream instead of a function output (contract §4.2, e.g.
    /// `file_search_call` with `results`), under the call's id.
    pub continuation: Option<Value>,
    /// Declarations the call loaded (a tool search, issue 31): offered from the next round
    /// on, and kept in the transcript for continuations.
    pub loads: Vec<Value>,
}

/// Duty 4, encode: one bound gateway call. The turn starts every call of a round first,
/// runs them in parallel, then finishes them in call order.
pub trait Invocation: Send {
    /// The model's call id.
    fn call_id(&self) -> &str;
    /// The Responses tool type and where the call runs (for the observer), e.g.
    /// `("web_search", "http")`.
    fn labels(&self) -> (&'static str, String);
    /// Runs under the approval request `request_id` (its item names it).
    fn under_approval(&mut self, _request_id: &str) {}
    /// Adds the call's item (after a progress message, which only streams show).
    fn start(&mut self, out: &mut Emitter);
    /// Runs the call on its executor, within `timeout`.
    fn run(&self, timeout: Duration) -> BoxFuture<'static, Ran>;
    /// Completes the call's item with `ran`; `files` are the turn's file-search chunks
    /// (a file search numbers its own after them and appends them).
    fn finish(self: Box<Self>, ran: Ran, out: &mut Emitter, files: &mut FileSources) -> Finished;
}

/// The text of a timed-out run.
pub fn timed_out(timeout: Duration) -> String {
    format!("error: the tool timed out after {} ms", timeout.as_millis())
}

/// Helpers for the tool types' unit tests: an emitter whose events are recorded, and the
/// events' `type` names in order.
#[cfg(test)]
pub(crate) mod testing {
    use protocol::events::EventKind;
    use protocol::Response;

    use crate::events::{Emitter, Recorder};

    /// An emitter that streams to a [`Recorder`] (progress messages included).
    pub fn recording() -> (Emitter, Recorder) {
        let recorder = Recorder::default();
        let mut emitter = Emitter::new(Response::default(), Some(Box::new(recorder.clone())));
        emitter.start();
        (emitter, recorder)
    }

    /// The recorded events after the start, as `type` names.
    pub fn names(recorder: &Recorder) -> Vec<&'static str> {
        recorder.events().iter().skip(2).map(|(_, k): &(u64, EventKind)| k.name()).collect()
    }
}
