//! `tool_choice` (contract §3), resolved against the request's [`ToolSet`].

use protocol::ApiError;
use serde_json::{json, Value};

use super::{CallItem, ToolSet};
use crate::upstream::ToolChoice;

fn not_found(name: &str) -> ApiError {
    ApiError::invalid(
        Some("tool_choice".to_string()),
        format!("Tool choice '{name}' not found in 'tools' parameter."),
    )
}

/// A `tool_choice` that names MCP tools, whose model-visible names are known only once
/// their server is listed (issue 18 "Security": `{type:"mcp", server_label, name?}`, and
/// MCP entries of `allowed_tools`). [`expand`] resolves it after the listing.
#[derive(Debug, Clone)]
pub enum Deferred {
    /// Forces a call of the tool `name` of the server, or of any of its tools.
    Mcp { label: String, name: Option<String> },
    /// `allowed_tools` with the names resolved already and the MCP entries `(label, name?)`.
    Allowed { required: bool, names: Vec<String>, servers: Vec<(String, Option<String>)> },
}

/// The choice a [`Deferred`] stands for, given each server's listed tools as `(name,
/// model-visible name)` by label. A named MCP tool that was not listed (or a server that
/// listed none) does not force anything: `auto`, with a warning.
pub fn expand(deferred: &Deferred, listed: &std::collections::HashMap<String, Vec<(String, String)>>) -> ToolChoice {
    let visible = |label: &str, name: &Option<String>| -> Vec<String> {
        listed
            .get(label)
            .map(|tools| tools.iter().filter(|(n, _)| name.as_ref().is_none_or(|w| w == n)).map(|(_, v)| v.clone()).collect())
            .unwrap_or_default()
    };
    match deferred {
        Deferred::Mcp { label, name } => {
            let names = visible(label, name);
            match (name, names.as_slice()) {
                (_, []) => {
                    tracing::warn!(server_label = %label, "tool_choice names an MCP tool that was not listed; it is not forced");
                    ToolChoice::Auto
                }
                (Some(_), [one]) => ToolChoice::Named(one.clone()),
                _ => ToolChoice::Allowed { required: true, names },
            }
        }
        Deferred::Allowed { required, names, servers } => {
            let mut all = names.clone();
            for (label, name) in servers {
                all.extend(visible(label, name));
            }
            ToolChoice::Allowed { required: *required, names: all }
        }
    }
}

/// An MCP entry of a `tool_choice`: `(server_label, name?)` of a declared server, else 400.
fn mcp_entry(o: &serde_json::Map<String, Value>, set: &ToolSet) -> Result<(String, Option<String>), ApiError> {
    let label = match o.get("server_label") {
        Some(Value::String(l)) => l.as_str(),
        None | Some(Value::Null) => {
            return Err(ApiError::invalid(Some("tool_choice".to_string()), "An MCP tool choice needs its 'server_label'.").with_code("missing_required_parameter"))
        }
        Some(_) => return Err(ApiError::invalid(Some("tool_choice".to_string()), "Invalid value for 'tool_choice': 'server_label' must be a string.").with_code("invalid_type")),
    };
    if !set.discoveries.iter().any(|d| d.label() == label) {
        return Err(not_found(label));
    }
    let name = match o.get("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) => Some(n.clone()),
        Some(_) => return Err(ApiError::invalid(Some("tool_choice".to_string()), "Invalid value for 'tool_choice': 'name' must be a string.").with_code("invalid_type")),
    };
    Ok((label.to_string(), name))
}

/// Resolves `tool_choice` against `set`. Naming an undeclared tool → 400 with
/// `param: "tool_choice"` (contract §3). Returns the choice, its echo, and what waits for
/// MCP listings ([`Deferred`]; the choice is then `required` until [`expand`]).
pub fn resolve(v: Option<&Value>, set: &ToolSet) -> Result<(ToolChoice, Value, Option<Deferred>), ApiError> {
    let invalid = || {
        ApiError::invalid(Some("tool_choice".to_string()), "Invalid value for 'tool_choice'.")
            .with_code("invalid_value")
    };
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok((ToolChoice::Auto, json!("auto"), None));
    };
    match v {
        Value::String(s) => match s.as_str() {
            "none" => Ok((ToolChoice::None, v.clone(), None)),
            "auto" => Ok((ToolChoice::Auto, v.clone(), None)),
            "required" => {
                // MCP servers' tools are known only once listed: they count.
                if set.entries().is_empty() && set.discoveries.is_empty() {
                    return Err(ApiError::invalid(
                        Some("tool_choice".to_string()),
                        "tool_choice 'required' needs at least one tool in 'tools'.",
                    ));
                }
                Ok((ToolChoice::Required, v.clone(), None))
            }
            _ => Err(invalid()),
        },
        Value::Object(o) => {
            let kind = o.get("type").and_then(Value::as_str).ok_or_else(invalid)?;
            match kind {
                "allowed_tools" => {
                    let required = match o.get("mode").and_then(Value::as_str) {
                        Some("auto") => false,
                        Some("required") => true,
                        _ => return Err(invalid()),
                    };
                    let Some(Value::Array(tools)) = o.get("tools") else {
                        return Err(invalid());
                    };
                    let mut names = Vec::new();
                    let mut servers = Vec::new();
                    for t in tools {
                        let t = t.as_object().ok_or_else(invalid)?;
                        if t.get("type").and_then(Value::as_str) == Some("mcp") {
                            servers.push(mcp_entry(t, set)?);
                            continue;
                        }
                        let entry = declared(t, set)?;
                        names.push(entry.visible_name().to_string());
                    }
                    if servers.is_empty() {
                        return Ok((ToolChoice::Allowed { required, names }, v.clone(), None));
                    }
                    let choice = ToolChoice::Allowed { required, names: names.clone() };
                    Ok((choice, v.clone(), Some(Deferred::Allowed { required, names, servers })))
                }
                "mcp" => {
                    let (label, name) = mcp_entry(o, set)?;
                    Ok((ToolChoice::Required, v.clone(), Some(Deferred::Mcp { label, name })))
                }
                t => {
                    let entry = declared(o, set)?;
                    // `{type:"web_search"}` is accepted leniently (clients send it) but is not
                    // in the SDK's `ToolChoiceTypes`; echo the nearest valid type so the
                    // Response still parses.
                    let echo = if super::web_search::TYPES.contains(&t) && !t.starts_with("web_search_preview") {
                        json!({"type": "web_search_preview"})
                    } else {
                        v.clone()
                    };
                    Ok((ToolChoice::Named(entry.visible_name().to_string()), echo, None))
                }
            }
        }
        _ => Err(invalid()),
    }
}

/// The declared tool a `{type, name?, namespace?}` names (a `tool_choice`, or an entry of
/// `allowed_tools`): a `function` or `custom` tool by name and kind, a hosted tool by its
/// type. No `type` → 400 `invalid_value`; no such tool → 400 (both on `tool_choice`).
fn declared<'s>(o: &serde_json::Map<String, Value>, set: &'s ToolSet) -> Result<&'s super::ToolEntry, ApiError> {
    let invalid = || ApiError::invalid(Some("tool_choice".to_string()), "Invalid value for 'tool_choice'.").with_code("invalid_value");
    let kind = o.get("type").and_then(Value::as_str).ok_or_else(invalid)?;
    match kind {
        "function" | "custom" => {
            let name = o.get("name").and_then(Value::as_str).ok_or_else(invalid)?;
            let entry = set.find(name, o.get("namespace").and_then(Value::as_str)).ok_or_else(|| not_found(name))?;
            let matches = if kind == "function" { entry.call_item() == CallItem::Function } else { entry.is_custom() };
            if matches { Ok(entry) } else { Err(not_found(name)) }
        }
        // A hosted tool by its declared type (or one of its aliases).
        t => set.entries().iter().find(|e| e.tool.choice_types().contains(&t)).ok_or_else(|| not_found(t)),
    }
}
