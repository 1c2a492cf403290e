//! Loading deferred tools into a request's [`ToolSet`] (issue 31; contract W3.2): what a
//! search or a replayed `tool_search_output` loads, tools called by name without a search,
//! and client search results declared as client tools. Kept apart from `deferred` (what a
//! deferred tool is), which the tool types use: this module uses them.

use std::collections::HashSet;
use std::sync::Arc;

use protocol::ApiError;
use serde_json::{json, Value};

use super::deferred::{declarations, Deferred, Holder};
use super::{function, mcp, namespace, visible_name, Owner, ToolEntry, ToolSet};

/// The model-visible names of the tools `decl` (one of a `tool_search_output`'s tools)
/// loads.
pub fn names_loaded_by(decl: &Value) -> Vec<String> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match decl.get("type").and_then(Value::as_str) {
        Some("function" | "custom") => text(decl, "name").into_iter().collect(),
        Some("namespace") => {
            let Some(ns) = text(decl, "name") else { return Vec::new() };
            let members = decl.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            members.iter().filter_map(|m| text(m, "name")).map(|m| visible_name(&m, Some(&ns))).collect()
        }
        Some("mcp") => {
            let Some(label) = text(decl, "server_label") else { return Vec::new() };
            let names = match decl.get("allowed_tools") {
                Some(Value::Array(a)) => a.clone(),
                Some(Value::Object(o)) => o.get("tool_names").and_then(Value::as_array).cloned().unwrap_or_default(),
                _ => Vec::new(),
            };
            names.iter().filter_map(Value::as_str).map(|t| mcp::visible_name(&label, t)).collect()
        }
        _ => Vec::new(),
    }
}

/// What the model reads as a search's result: the tools it may call from now on.
pub fn result_text(loaded: &[Value]) -> String {
    let names: Vec<String> = loaded.iter().flat_map(names_loaded_by).collect();
    if names.is_empty() {
        return "No deferred tool matched. Try other words, or answer without these tools.".to_string();
    }
    format!("Loaded {} tool(s), callable from now on: {}.", names.len(), names.join(", "))
}

impl ToolSet {
    /// True for a deferred tool not loaded yet: not declared upstream.
    pub(super) fn is_hidden(&self, i: usize) -> bool {
        self.entries[i].deferred.is_some() && !self.loaded.contains(&i)
    }

    /// The deferred tools not loaded yet, in declaration order.
    pub fn hidden(&self) -> Vec<&ToolEntry> {
        (0..self.entries.len()).filter(|&i| self.is_hidden(i)).map(|i| &self.entries[i]).collect()
    }

    /// True when deferred MCP servers wait to be listed ([`ToolSet::discover_lazy`]).
    pub fn has_lazy(&self) -> bool {
        !self.lazy.is_empty()
    }

    /// What the model sees of the deferred tools before they are loaded, one line each:
    /// each namespace and MCP server holding deferred tools (listed or not), and each
    /// deferred top-level function, with its description.
    pub fn deferred_overview(&self) -> Vec<String> {
        let mut seen: HashSet<(String, &'static str)> = HashSet::new();
        let mut lines = Vec::new();
        let mut add = |kind: &'static str, name: &str, about: Option<&str>| {
            if seen.insert((name.to_string(), kind)) {
                lines.push(match about.map(str::trim).filter(|a| !a.is_empty()) {
                    Some(a) => format!("- {kind} `{name}`: {a}"),
                    None => format!("- {kind} `{name}`"),
                });
            }
        };
        for e in &self.entries {
            if let Some(d) = &e.deferred {
                let kind = match d.holder {
                    Holder::Function => "function",
                    Holder::Namespace => "namespace",
                    Holder::McpServer => "MCP server",
                };
                add(kind, &d.surface, d.about.as_deref());
            }
        }
        for d in self.lazy.iter().chain(&self.discoveries) {
            if let Some((label, about)) = d.deferred() {
                add("MCP server", &label, about.as_deref());
            }
        }
        lines
    }

    /// Loads the tools `decls` name (a `tool_search_output`'s tools; contract W3.3): a
    /// deferred tool of the request is offered from now on; a function or namespace the
    /// request does not declare (a client's own search returned it) is declared as a client
    /// tool and offered; an MCP tool of a server not listed yet is loaded once listed.
    pub fn load_declared(&mut self, decls: &[Value]) {
        for decl in decls {
            let names = names_loaded_by(decl);
            let unknown = names.iter().any(|n| !self.by_visible.contains_key(n));
            if unknown && matches!(decl.get("type").and_then(Value::as_str), Some("function" | "namespace")) {
                self.declare_returned(decl.clone());
            }
            for name in names {
                match self.by_visible.get(&name).copied() {
                    Some(i) => self.mark_loaded(i),
                    None => self.pending_loads.push(name),
                }
            }
        }
    }

    /// Loads the deferred tools that `names` call without a search (the model skipped it):
    /// returns the declarations loaded, for the transcript.
    pub fn load_called(&mut self, names: &[&str]) -> Vec<Value> {
        let idx: Vec<usize> = names.iter().filter_map(|n| self.by_visible.get(*n).copied()).filter(|&i| self.is_hidden(i)).collect();
        let tools: Vec<(&str, &Deferred)> = idx.iter().filter_map(|&i| self.entries[i].deferred.as_deref().map(|d| (self.entries[i].name.as_str(), d))).collect();
        let decls = declarations(&tools);
        for i in idx {
            self.mark_loaded(i);
        }
        decls
    }

    pub(super) fn mark_loaded(&mut self, i: usize) {
        if self.entries[i].deferred.is_some() && !self.loaded.contains(&i) {
            self.loaded.push(i);
        }
    }

    /// Loads what waited for its server's listing.
    pub(super) fn load_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending_loads);
        for name in pending {
            match self.by_visible.get(&name).copied() {
                Some(i) => self.mark_loaded(i),
                None => self.pending_loads.push(name),
            }
        }
    }

    /// A function or namespace that a client's tool search returned, not declared in the
    /// request: declared now as loaded client tools (a bad declaration is left out with a
    /// warning).
    fn declare_returned(&mut self, decl: Value) {
        let declared = match decl.get("type").and_then(Value::as_str) {
            Some("function") => function::declare(decl, "tool_search_output", None),
            _ => namespace::declare(decl, "tool_search_output"),
        };
        match declared {
            Ok(d) => {
                for mut entry in d.entries {
                    let visible = entry.visible_name().to_string();
                    if self.by_visible.contains_key(&visible) {
                        continue;
                    }
                    let public = json!({"type": "function", "name": entry.name, "description": entry.upstream.description, "parameters": entry.upstream.parameters});
                    entry.deferred = Some(Arc::new(Deferred { holder: Holder::Function, surface: visible.clone(), about: None, public }));
                    entry.owner = Owner::Client;
                    self.by_visible.insert(visible, self.entries.len());
                    self.entries.push(entry);
                    self.mark_loaded(self.entries.len() - 1);
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "a tool a tool search returned is not a valid declaration; it is not loaded"),
        }
    }

    /// The 400s of issue 31, once every declaration is in: deferred tools without a tool
    /// search, a tool search with nothing deferred, two tool searches.
    pub(super) fn check_deferred(&self, searchers: &[String]) -> Result<(), ApiError> {
        let deferred_param = self
            .entries
            .iter()
            .find(|e| e.deferred.is_some())
            .map(|e| e.param.clone())
            .or_else(|| self.lazy.iter().chain(&self.discoveries).find_map(|d| d.deferred().map(|_| d.param().to_string())));
        match (searchers, deferred_param) {
            ([], Some(param)) => Err(ApiError::invalid(
                format!("{param}.defer_loading"),
                "Deferred tools need a tool search: add {\"type\": \"tool_search\"} to tools, or remove defer_loading.",
            )
            .with_code("invalid_value")),
            ([param, ..], None) if !self.client_search => Err(ApiError::invalid(
                format!("{param}.type"),
                "A hosted tool_search needs deferred tools: set defer_loading: true on functions, namespace members or mcp tools.",
            )
            .with_code("invalid_value")),
            _ => Ok(()),
        }
    }
}
