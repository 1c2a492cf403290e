//! `function` tools (contract §2): client-owned, forwarded as they are.

use protocol::ApiError;
use serde_json::{json, Value};

use super::{check_name, opt_str, visible_name, Owner, ToolEntry, ToolKind, UpstreamTool};
use crate::transcript::{Call, Replayed};

/// Validates a `function` declaration at `param` (e.g. `tools[0]`). Missing or null
/// `parameters` become `{"type":"object","properties":{}}` because some model servers
/// reject null. Returns the entry and the normalized echo (the declaration itself, moved:
/// only `parameters` is copied, for the upstream).
pub fn declare(
    decl: Value,
    param: &str,
    namespace: Option<&str>,
) -> Result<(Vec<ToolEntry>, Value), ApiError> {
    let name = check_name(decl.get("name"), param)?;
    let description = opt_str(&decl, "description", param)?;
    let parameters = match decl.get("parameters") {
        None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => {
            return Err(ApiError::invalid(
                format!("{param}.parameters"),
                "Invalid type for 'parameters': expected a JSON Schema object.",
            )
            .with_code("invalid_type"))
        }
    };
    let strict = match decl.get("strict") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            return Err(ApiError::invalid(
                format!("{param}.strict"),
                "Invalid type for 'strict': expected a boolean.",
            )
            .with_code("invalid_type"))
        }
    };
    let mut echo = decl;
    if !echo.get("parameters").is_some_and(Value::is_object) {
        echo["parameters"] = parameters.clone();
    }
    echo["strict"] = json!(strict.unwrap_or(false));
    if echo.get("description").is_none() {
        echo["description"] = Value::Null;
    }
    let entry = ToolEntry {
        name: name.clone(),
        namespace: namespace.map(str::to_string),
        kind: ToolKind::Function,
        owner: Owner::Client,
        upstream: UpstreamTool {
            name: visible_name(&name, namespace),
            description,
            parameters,
            strict,
            native: None,
        },
        executor: None,
    };
    Ok((vec![entry], echo))
}

/// Replays a `function_call` item as the call the model made, under its model-visible name.
/// Servers that parse the arguments refuse an empty string: a function called without them
/// was called with `{}`.
pub fn replay(c: &protocol::input::FunctionCall) -> Replayed {
    let arguments = if c.arguments.trim().is_empty() { "{}".to_string() } else { c.arguments.clone() };
    let call = Call { call_id: c.call_id.clone(), name: visible_name(&c.name, c.namespace.as_deref()), arguments };
    Replayed { call, result: None, private_key: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_parameters_become_empty_object_schema() {
        let (e, echo) =
            declare(json!({"type":"function","name":"f","parameters":null}), "tools[0]", None)
                .unwrap();
        assert_eq!(e[0].upstream.parameters, json!({"type":"object","properties":{}}));
        assert_eq!(echo["parameters"], json!({"type":"object","properties":{}}));
    }

    #[test]
    fn bad_name_is_a_400_naming_the_param() {
        let err = declare(json!({"type":"function","name":"a b"}), "tools[3]", None).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("tools[3].name"));
    }
}
