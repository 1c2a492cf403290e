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

/// Resolves `tool_choice` against `set`. Naming an undeclared tool → 400 with
/// `param: "tool_choice"` (contract §3). Returns the choice and its echo.
pub fn resolve(v: Option<&Value>, set: &ToolSet) -> Result<(ToolChoice, Value), ApiError> {
    let invalid = || {
        ApiError::invalid(Some("tool_choice".to_string()), "Invalid value for 'tool_choice'.")
            .with_code("invalid_value")
    };
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok((ToolChoice::Auto, json!("auto")));
    };
    match v {
        Value::String(s) => match s.as_str() {
            "none" => Ok((ToolChoice::None, v.clone())),
            "auto" => Ok((ToolChoice::Auto, v.clone())),
            "required" => {
                // MCP servers' tools are known only once listed: they count.
                if set.entries().is_empty() && set.discoveries.is_empty() {
                    return Err(ApiError::invalid(
                        Some("tool_choice".to_string()),
                        "tool_choice 'required' needs at least one tool in 'tools'.",
                    ));
                }
                Ok((ToolChoice::Required, v.clone()))
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
                    for t in tools {
                        let entry = declared(t.as_object().ok_or_else(invalid)?, set)?;
                        names.push(entry.visible_name().to_string());
                    }
                    Ok((ToolChoice::Allowed { required, names }, v.clone()))
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
                    Ok((ToolChoice::Named(entry.visible_name().to_string()), echo))
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
