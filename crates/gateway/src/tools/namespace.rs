//! `namespace` tools (contract §2): a named group of `function`/`custom` tools. Each member
//! is declared upstream as `<namespace>__<name>`, its description led by the namespace's;
//! calls come back with `namespace` set.

use protocol::ApiError;
use serde_json::Value;

use super::{check_name, custom, function, ToolEntry};

/// Separator between namespace and member name in the model-visible name.
pub const SEPARATOR: &str = "__";

/// Validates a `namespace` declaration and its members.
pub fn declare(mut decl: Value, param: &str) -> Result<(Vec<ToolEntry>, Value), ApiError> {
    let ns = check_name(decl.get("name"), param)?;
    let Some(Value::Array(members)) = decl.get_mut("tools").map(Value::take) else {
        return Err(ApiError::invalid(
            format!("{param}.tools"),
            "A namespace needs 'tools': an array of function or custom tools.",
        )
        .with_code("missing_required_parameter"));
    };
    if members.is_empty() {
        return Err(ApiError::invalid(format!("{param}.tools"), "A namespace needs at least one tool.")
            .with_code("empty_array"));
    }
    // The model sees only the members: the namespace's description leads each of theirs.
    let about = decl.get("description").and_then(Value::as_str).map(str::trim).filter(|d| !d.is_empty()).map(str::to_string);
    let mut entries = Vec::new();
    let mut echo_members = Vec::new();
    for (j, m) in members.into_iter().enumerate() {
        let mp = format!("{param}.tools[{j}]");
        let (mut e, echo) = match m.get("type").and_then(Value::as_str) {
            Some("function") => function::declare(m, &mp, Some(&ns))?,
            Some("custom") => custom::declare(m, &mp, Some(&ns))?,
            _ => {
                return Err(ApiError::invalid(
                    format!("{mp}.type"),
                    "A namespace member must be a 'function' or 'custom' tool.",
                )
                .with_code("invalid_value"))
            }
        };
        if let Some(about) = &about {
            for entry in &mut e {
                entry.upstream.description = Some(match entry.upstream.description.take() {
                    Some(own) => format!("{about}\n\n{own}"),
                    None => about.clone(),
                });
            }
        }
        entries.append(&mut e);
        echo_members.push(echo);
    }
    decl["tools"] = Value::Array(echo_members);
    Ok((entries, decl))
}
