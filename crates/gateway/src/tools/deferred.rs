//! Deferred tools (issue 31; contract W3.2): a function, a namespace member or an MCP
//! server's tools declared with `defer_loading: true` are not declared upstream until a
//! tool search loads them. Until then the model sees only what OpenAI's guide says it sees:
//! the name and description of each namespace and MCP server holding deferred tools, and
//! the name and description of each deferred top-level function. Loaded tools are declared
//! from then on, after the others (the end of the context, so a prompt cache holds), in
//! the order they were loaded; a continuation loads them again from the transcript.

use std::sync::Arc;

use protocol::ApiError;
use serde_json::{json, Value};



/// What holds a deferred tool: what the model sees of it before it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// A top-level function (or custom tool): its own name and description.
    Function,
    /// A `namespace`: its name and description.
    Namespace,
    /// An MCP server: its `server_label` and `server_description`.
    McpServer,
}

/// A deferred tool's place in the searchable catalog.
#[derive(Debug, Clone)]
pub struct Deferred {
    pub holder: Holder,
    /// The function's name, the namespace's or the server's label.
    pub surface: String,
    /// The holder's description.
    pub about: Option<String>,
    /// The tool's own declaration (a namespace member's, an MCP tool's `{name, description,
    /// input_schema}`), as a search output shows it.
    pub public: Value,
}

impl Deferred {
    /// `defer_loading` of a function or custom declaration at `param`: `None` unless `true`;
    /// not a boolean → 400 naming the field.
    pub fn of_member(decl: &Value, param: &str, name: &str, description: Option<&str>) -> Result<Option<Arc<Deferred>>, ApiError> {
        if !flag(decl, param)? {
            return Ok(None);
        }
        let d = Deferred { holder: Holder::Function, surface: name.to_string(), about: description.map(str::to_string), public: decl.clone() };
        Ok(Some(Arc::new(d)))
    }
}

/// `defer_loading` of a declaration: absent or null is `false`; not a boolean → 400.
pub fn flag(decl: &Value, param: &str) -> Result<bool, ApiError> {
    match decl.get("defer_loading") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ApiError::invalid(format!("{param}.defer_loading"), "Invalid type for 'defer_loading': expected a boolean.").with_code("invalid_type")),
    }
}

/// The declarations that load `tools` (each its public name and deferred place), grouped
/// as a `tool_search_output` shows them: a function as declared; a namespace with its
/// loaded members; an MCP server with the loaded tools as `allowed_tools`.
pub fn declarations(tools: &[(&str, &Deferred)]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for (name, d) in tools {
        match d.holder {
            Holder::Function => out.push(d.public.clone()),
            Holder::Namespace => match out.iter_mut().find(|v| v["type"] == "namespace" && v["name"] == d.surface.as_str()) {
                Some(Value::Object(ns)) => {
                    if let Some(Value::Array(members)) = ns.get_mut("tools") {
                        members.push(d.public.clone());
                    }
                }
                _ => out.push(json!({"type": "namespace", "name": d.surface, "description": d.about, "tools": [d.public]})),
            },
            Holder::McpServer => match out.iter_mut().find(|v| v["type"] == "mcp" && v["server_label"] == d.surface.as_str()) {
                Some(Value::Object(server)) => {
                    if let Some(Value::Array(names)) = server.get_mut("allowed_tools") {
                        names.push(Value::String(name.to_string()));
                    }
                }
                _ => out.push(json!({"type": "mcp", "server_label": d.surface, "server_description": d.about, "allowed_tools": [name], "defer_loading": true})),
            },
        }
    }
    out
}
