//! The request-scoped [`ToolSet`]: the only thing that decides tool ownership
//! (DESIGN.md "Ownership model"). One module per tool type implements its four duties
//! ([`duties`]): validate the declaration, give its upstream form, bind a model call,
//! encode its items, events and replay.

pub mod choice;
pub mod custom;
pub mod deferred;
pub mod loading;
pub mod duties;
pub mod file_search;
pub mod function;
pub mod mcp;
pub mod namespace;
pub mod replay;
pub mod server_custom;
pub mod tool_search;
pub mod web_search;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use protocol::ApiError;
use serde_json::Value;

pub use crate::upstream::{ToolChoice, UpstreamTool};

pub use duties::{BindCtx, CallItem, DeclareCtx, Declared, Discovered, Discovery, Finished, Invocation, Listing, Ran, ResolveCtx, RunStatus, Tool, ToolType};

use crate::error::GatewayError;
use crate::events::Emitter;
use crate::executors::Registry;
use crate::upstream::UpstreamCaps;

/// Who executes a tool's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Returned to the client (`function`, `custom`).
    Client,
    /// Executed inside the gateway.
    Gateway,
}

/// One declared tool.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// Public name (as the client declared it).
    pub name: String,
    /// Set for members of a `namespace` declaration.
    pub namespace: Option<String>,
    pub owner: Owner,
    /// Upstream declaration; its `name` is the model-visible name.
    pub upstream: UpstreamTool,
    /// The declaration's place, `tools[i]` (errors found later name it).
    pub param: String,
    /// Set for a tool declared with `defer_loading: true` ([`deferred`]): not declared
    /// upstream until loaded.
    pub deferred: Option<Arc<deferred::Deferred>>,
    /// What the tool is: its type's per-request duties (binding, encoding).
    pub tool: Arc<dyn Tool>,
}

impl ToolEntry {
    /// The model-visible (upstream) name.
    pub fn visible_name(&self) -> &str {
        &self.upstream.name
    }

    /// How its calls appear in the output.
    pub fn call_item(&self) -> CallItem {
        self.tool.call_item()
    }

    /// True when its calls are `custom_tool_call` items.
    pub fn is_custom(&self) -> bool {
        self.tool.call_item() == CallItem::Custom
    }
}

/// Every tool type the gateway knows (duties in `duties.rs`); a declaration goes to the one
/// whose `types()` holds its `type`.
pub fn types() -> [&'static dyn ToolType; 7] {
    [
        &tool_search::ToolSearchType,
        &function::FunctionType,
        &custom::CustomType,
        &namespace::NamespaceType,
        &web_search::WebSearchType,
        &file_search::FileSearchType,
        &mcp::McpType,
    ]
}

/// Declared types the gateway knows but does not offer (400 `unsupported_tool_type`).
const UNSUPPORTED: [&str; 8] = [
    "code_interpreter", "image_generation", "local_shell", "shell", "apply_patch",
    "computer_use_preview", "computer", "programmatic_tool_calling",
];

/// The model-visible name of a tool: `name`, or `namespace__name` for namespace members.
pub fn visible_name(name: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("{ns}{}{name}", namespace::SEPARATOR),
        None => name.to_string(),
    }
}

/// The tools of one request, with the tool choice resolved against them.
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    entries: Vec<ToolEntry>,
    by_visible: HashMap<String, usize>,
    /// Normalized declarations echoed in `Response.tools` (contract §2); `prepare` moves
    /// them (and `choice_echo`) into the base Response.
    pub echo: Vec<Value>,
    /// The resolved choice.
    pub choice: ToolChoice,
    /// `tool_choice` echoed in the Response.
    pub choice_echo: Value,
    /// Declarations whose tools are listed when the turn runs ([`ToolSet::discover`]).
    discoveries: Vec<Arc<dyn Discovery>>,
    /// A choice naming tools known once listed ([`choice::Deferred`]).
    deferred_choice: Option<choice::Deferred>,
    /// Deferred tools loaded so far (entry indexes), in load order ([`deferred`]).
    loaded: Vec<usize>,
    /// Model-visible names a continuation loaded whose MCP server is not listed yet.
    pending_loads: Vec<String>,
    /// Deferred MCP servers not listed yet: listed when a tool search needs them.
    lazy: Vec<Arc<dyn Discovery>>,
    /// The tool search is the client's (`execution: "client"`): it may hold the catalog.
    client_search: bool,
}

impl ToolSet {
    /// Validates `tools` and `tool_choice` (contract §2, §3); each tool keeps its native
    /// declaration only where `caps` renders its type natively. Errors are 400s naming the
    /// offending `param` (`tools[i].type`, `tools[i].name`, `tool_choice`, …).
    pub fn build(tools: Vec<Value>, tool_choice: Option<&Value>, registry: &Registry, caps: &UpstreamCaps) -> Result<ToolSet, ApiError> {
        let mut set = ToolSet { echo: Vec::with_capacity(tools.len()), ..ToolSet::default() };
        let ctx = DeclareCtx { registry };
        let mut searchers: Vec<String> = Vec::new();
        for (i, decl) in tools.into_iter().enumerate() {
            let param = format!("tools[{i}]");
            let Some(obj) = decl.as_object() else {
                return Err(ApiError::invalid(param, "Each tool must be an object."));
            };
            let kind = match obj.get("type") {
                Some(Value::String(t)) => t.clone(),
                _ => {
                    return Err(ApiError::invalid(
                        format!("{param}.type"),
                        "Missing required parameter: 'type'.",
                    )
                    .with_code("missing_required_parameter"))
                }
            };
            let Some(tool_type) = types().into_iter().find(|t| t.types().contains(&kind.as_str())) else {
                if UNSUPPORTED.contains(&kind.as_str()) {
                    return Err(ApiError::invalid(
                        format!("{param}.type"),
                        format!("Tool type '{kind}' is not available on this gateway."),
                    )
                    .with_code("unsupported_tool_type"));
                }
                return Err(ApiError::invalid(format!("{param}.type"), format!("Invalid value: '{kind}'. Unknown tool type."))
                    .with_code("invalid_value"));
            };
            let Declared { entries, echo, discovery } = tool_type.declare(decl, &kind, &param, &ctx)?;
            if let Some(d) = discovery {
                if set.discoveries.iter().any(|o| o.label() == d.label()) {
                    let field = d.label_field();
                    return Err(ApiError::invalid(
                        format!("{param}.{field}"),
                        format!("Duplicate {field} '{}': each must be unique in a request.", d.label()),
                    )
                    .with_code("invalid_value"));
                }
                set.discoveries.push(d);
            }
            for mut entry in entries {
                if entry.tool.searches_deferred() {
                    if !searchers.is_empty() {
                        return Err(ApiError::invalid(format!("{param}.type"), "Only one tool_search tool may be declared.").with_code("invalid_value"));
                    }
                    searchers.push(param.clone());
                    set.client_search = entry.owner == Owner::Client;
                }
                // The handler offers its native form; only an upstream that advertises the
                // type gets it (`upstream.native_tools`).
                if entry.upstream.native.as_ref().is_some_and(|n| !caps.renders_native(&n.tool_type)) {
                    entry.upstream.native = None;
                }
                set.insert(entry, &param)?;
            }
            set.echo.push(echo);
        }
        set.check_deferred(&searchers)?;
        // The search's function tells the model what it can load (the guide's overview).
        let overview = set.deferred_overview();
        if let Some(search) = set.entries.iter_mut().find(|e| e.tool.searches_deferred()).filter(|_| !overview.is_empty()) {
            let own = search.upstream.description.take().unwrap_or_default();
            search.upstream.description = Some(format!("{own}\n\nSearchable deferred tools:\n{}", overview.join("\n")));
        }
        let (choice, echo, deferred) = choice::resolve(tool_choice, &set)?;
        set.choice = choice;
        set.choice_echo = echo;
        set.deferred_choice = deferred;
        Ok(set)
    }

    fn insert(&mut self, entry: ToolEntry, param: &str) -> Result<(), ApiError> {
        let visible = entry.visible_name().to_string();
        if self.by_visible.contains_key(&visible) {
            return Err(ApiError::invalid(
                format!("{param}.name"),
                format!("Duplicate tool name '{visible}': two tools have the same model-visible name."),
            )
            .with_code("duplicate_tool_name"));
        }
        self.by_visible.insert(visible, self.entries.len());
        self.entries.push(entry);
        Ok(())
    }

    /// Lists the tools of the declarations known only at run time (MCP servers, issue 18
    /// "Listing"): every listing's item is added, they run at once, then each is finished
    /// in declaration order and its tools join the set. A label `listings` holds (the
    /// history's) is reused, not listed; a fresh listing is added to `listings`. A tool whose
    /// model-visible name is taken already is left out (with a warning). A `tool_choice`
    /// naming listed tools is resolved now. Before the first round only.
    pub async fn discover(&mut self, out: &mut Emitter, listings: &mut BTreeMap<String, Value>) {
        // A deferred server is listed now only when its listing is known (no item, no
        // request) or a continuation loaded its tools; else when a search needs it.
        let pending = std::mem::take(&mut self.pending_loads);
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.discoveries).into_iter().partition(|d| {
            d.deferred().is_none() || listings.contains_key(d.label()) || pending.iter().any(|n| n.starts_with(&format!("{}__", d.label())))
        });
        self.pending_loads = pending;
        self.discoveries = now;
        self.lazy.extend(later);
        self.list(out, listings).await;
    }

    /// Lists the deferred MCP servers not listed yet (a tool search needs their tools),
    /// each with its `mcp_list_tools` item.
    pub async fn discover_lazy(&mut self, out: &mut Emitter, listings: &mut BTreeMap<String, Value>) {
        self.discoveries = std::mem::take(&mut self.lazy);
        self.list(out, listings).await;
    }

    async fn list(&mut self, out: &mut Emitter, listings: &mut BTreeMap<String, Value>) {
        if self.discoveries.is_empty() {
            return;
        }
        let mut started: Vec<Box<dyn Listing>> = self.discoveries.iter().map(|d| d.start(out, listings.get(d.label()))).collect();
        futures_util::future::join_all(started.iter_mut().map(|l| l.run())).await;
        let mut listed: HashMap<String, Vec<(String, String)>> = HashMap::new();
        for (discovery, listing) in self.discoveries.clone().iter().zip(started) {
            let Discovered { entries, listing } = listing.finish(out);
            if let Some(tools) = listing {
                listings.insert(discovery.label().to_string(), tools);
            }
            let names = listed.entry(discovery.label().to_string()).or_default();
            for entry in entries {
                let visible = entry.visible_name().to_string();
                if self.by_visible.contains_key(&visible) {
                    tracing::warn!(name = %visible, "a listed tool's name is taken by another tool; it is not offered");
                    continue;
                }
                names.push((entry.name.clone(), visible.clone()));
                self.by_visible.insert(visible, self.entries.len());
                self.entries.push(entry);
            }
        }
        if let Some(deferred) = self.deferred_choice.take() {
            self.choice = choice::expand(&deferred, &listed);
        }
        self.discoveries.clear();
        self.load_pending();
    }

    /// The same tools less those not in `offered` (upstream names): what one round of an
    /// `allowed_tools` choice may call. `None` when every tool is offered.
    /// A deferred tool not loaded yet stays callable by its exact name while any tool is
    /// offered (a model that skips the search, issue 31).
    pub fn restricted_to(&self, offered: &[&UpstreamTool]) -> Option<ToolSet> {
        // `offered` comes from `upstream_tools`: a subset of these tools, each once.
        let names: std::collections::HashSet<&str> = offered.iter().map(|o| o.name.as_str()).collect();
        let keep = |i: usize| names.contains(self.entries[i].upstream.name.as_str()) || (!offered.is_empty() && self.is_hidden(i));
        if (0..self.entries.len()).all(&keep) {
            return None;
        }
        let mut set = ToolSet { choice: self.choice.clone(), choice_echo: self.choice_echo.clone(), ..ToolSet::default() };
        for (i, e) in (0..self.entries.len()).filter(|&i| keep(i)).map(|i| (i, &self.entries[i])) {
            if self.loaded.contains(&i) {
                set.loaded.push(set.entries.len());
            }
            set.by_visible.insert(e.visible_name().to_string(), set.entries.len());
            set.entries.push(e.clone());
        }
        Some(set)
    }

    /// True when a declared tool's chunks may be cited by `【N】` markers in the answer.
    pub fn cites_files(&self) -> bool {
        self.entries.iter().any(|e| e.tool.cites_files())
    }

    /// Resolves what each tool needs before any model call ([`Tool::resolve`]), e.g. the
    /// executors of file_search's vector stores. Errors are 400s naming the declaration.
    pub async fn resolve(&mut self, ctx: &ResolveCtx<'_>) -> Result<(), GatewayError> {
        for entry in &mut self.entries {
            if let Some(resolved) = entry.tool.resolve(&entry.param, ctx).await? {
                entry.tool = resolved;
            }
        }
        for discovery in &self.discoveries {
            discovery.check().await?;
        }
        Ok(())
    }

    /// All declared tools, in declaration order.
    pub fn entries(&self) -> &[ToolEntry] {
        &self.entries
    }

    /// The tool a model-visible name refers to.
    pub fn lookup(&self, visible: &str) -> Option<&ToolEntry> {
        self.by_visible.get(visible).map(|&i| &self.entries[i])
    }

    /// The tool with a public `name` (and `namespace`), as named by `tool_choice`.
    pub fn find(&self, name: &str, namespace: Option<&str>) -> Option<&ToolEntry> {
        self.lookup(&visible_name(name, namespace))
    }

    /// The upstream declarations for `choice`: none for `none`, only the allowed subset for
    /// `allowed_tools`; gateway-owned tools first, then client tools, then the loaded
    /// deferred tools in load order (a deferred tool not loaded is not declared).
    pub fn upstream_tools(&self, choice: &ToolChoice) -> Vec<&UpstreamTool> {
        let names: std::collections::HashSet<&str> = match choice {
            ToolChoice::Allowed { names, .. } => names.iter().map(String::as_str).collect(),
            _ => Default::default(),
        };
        let allowed = |e: &ToolEntry| match choice {
            ToolChoice::None => false,
            ToolChoice::Allowed { .. } => names.contains(e.visible_name()),
            _ => true,
        };
        let plain = |e: &&ToolEntry| e.deferred.is_none() && allowed(e);
        let gateway = self.entries.iter().filter(|e| e.owner == Owner::Gateway).filter(plain);
        let client = self.entries.iter().filter(|e| e.owner == Owner::Client).filter(plain);
        let loaded = self.loaded.iter().map(|&i| &self.entries[i]).filter(|e| allowed(e));
        gateway.chain(client).chain(loaded).map(|e| &e.upstream).collect()
    }
}

/// Validates a tool name: 1–64 of `a-zA-Z0-9_-` (the OpenAI function-name rule).
pub fn check_name(v: Option<&Value>, param: &str) -> Result<String, ApiError> {
    let name = match v {
        Some(Value::String(s)) => s,
        None | Some(Value::Null) => {
            return Err(ApiError::invalid(
                format!("{param}.name"),
                format!("Missing required parameter: '{param}.name'."),
            )
            .with_code("missing_required_parameter"))
        }
        Some(_) => {
            return Err(ApiError::invalid(format!("{param}.name"), "Tool name must be a string.")
                .with_code("invalid_type"))
        }
    };
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !ok {
        return Err(ApiError::invalid(
            format!("{param}.name"),
            format!("Invalid tool name '{name}': use 1-64 characters of a-z, A-Z, 0-9, '_' and '-'."),
        )
        .with_code("invalid_value"));
    }
    Ok(name.clone())
}

/// An optional string field; wrong type → 400.
pub fn opt_str(obj: &Value, key: &str, param: &str) -> Result<Option<String>, ApiError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::invalid(
            format!("{param}.{key}"),
            format!("Invalid type for '{param}.{key}': expected a string."),
        )
        .with_code("invalid_type")),
    }
}
