//! `function` tools (contract §2): client-owned, forwarded as they are.

use protocol::ApiError;
use serde_json::{json, Value};

use std::sync::Arc;

use protocol::input::InputItem;

use super::{check_name, opt_str, visible_name, CallItem, DeclareCtx, Declared, Owner, Tool, ToolEntry, ToolType, UpstreamTool};
use crate::events::file_citations::FileSource;
use crate::transcript::{Call, Replayed};

/// The `function` tool type.
#[derive(Debug, Clone, Copy)]
pub struct FunctionType;

impl ToolType for FunctionType {
    fn types(&self) -> &'static [&'static str] {
        &["function"]
    }

    /// A function named like a registered server tool → 400 `reserved_tool_name`.
    fn declare(&self, decl: Value, _kind: &str, param: &str, ctx: &DeclareCtx<'_>) -> Result<Declared, ApiError> {
        if let Some(name) = decl.get("name").and_then(Value::as_str).filter(|n| ctx.registry.contains(n)) {
            return Err(ApiError::invalid(
                format!("{param}.name"),
                format!("The tool name '{name}' belongs to a server tool; declare it as {{\"type\":\"custom\",\"name\":\"{name}\"}}."),
            )
            .with_code("reserved_tool_name"));
        }
        declare(decl, param, None)
    }

    fn replay(&self, item: &InputItem, _: &mut Vec<FileSource>) -> Option<Replayed> {
        match item {
            InputItem::FunctionCall(c) => Some(replay(c)),
            _ => None,
        }
    }
}

/// A declared client function: its calls are returned as `function_call` items.
#[derive(Debug, Clone, Copy)]
pub struct FunctionTool;

impl Tool for FunctionTool {
    fn tool_type(&self) -> &'static str {
        "function"
    }

    fn call_item(&self) -> CallItem {
        CallItem::Function
    }
}

/// Validates a `function` declaration at `param` (e.g. `tools[0]`; also a namespace
/// member). Missing or null `parameters` become `{"type":"object","properties":{}}` because
/// some model servers reject null. Returns the entry and the normalized echo (the
/// declaration itself, moved: only `parameters` is copied, for the upstream).
pub fn declare(decl: Value, param: &str, namespace: Option<&str>) -> Result<Declared, ApiError> {
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
    let deferred = super::deferred::Deferred::of_member(&echo, param, &name, description.as_deref())?;
    let entry = ToolEntry {
        name: name.clone(),
        namespace: namespace.map(str::to_string),
        owner: Owner::Client,
        upstream: UpstreamTool {
            name: visible_name(&name, namespace),
            description,
            parameters,
            strict,
            native: None,
        },
        param: param.to_string(),
        deferred,
        tool: Arc::new(FunctionTool),
    };
    Ok(Declared { entries: vec![entry], echo, discovery: None })
}

/// Replays a `function_call` item as the call the model made, under its model-visible name.
/// Servers that parse the arguments refuse an empty string: a function called without them
/// was called with `{}`. A `namespace` equal to the name is a deferred top-level function's
/// (contract W3.4): the call of that function.
pub fn replay(c: &protocol::input::FunctionCall) -> Replayed {
    let arguments = if c.arguments.trim().is_empty() { "{}".to_string() } else { c.arguments.clone() };
    let namespace = c.namespace.as_deref().filter(|ns| *ns != c.name);
    let call = Call { call_id: c.call_id.clone(), name: visible_name(&c.name, namespace), arguments };
    Replayed { call, result: None, private_key: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_parameters_become_empty_object_schema() {
        let Declared { entries: e, echo, .. } =
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

#[cfg(test)]
mod duties {
    use super::*;
    use crate::executors::{components::PackageVersion, Registry};
    use crate::tools::{BindCtx, CallItem, ToolSet};
    use crate::upstream::UpstreamCaps;

    /// The four duties of `function`: its declaration is checked (a server tool's name is
    /// reserved), it goes upstream as itself, its calls belong to the client (never bound),
    /// and a replayed call comes back under its visible name with `{}` for no arguments.
    #[test]
    fn function_duties() {
        let mut registry = Registry::default();
        registry.register(Arc::new(PackageVersion::new(vec!["tokio".into()])));
        let ctx = DeclareCtx { registry: &registry };
        let err = FunctionType.declare(json!({"type":"function","name":"package_version"}), "function", "tools[0]", &ctx).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("reserved_tool_name"));
        let decl = json!({"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true});
        let set = ToolSet::build(vec![decl], None, &registry, &UpstreamCaps { native_tools: vec!["custom".into()], ..UpstreamCaps::default() }).unwrap();
        let entry = set.lookup("get_weather").unwrap();
        assert_eq!((entry.owner, entry.call_item()), (Owner::Client, CallItem::Function));
        assert_eq!(entry.upstream.strict, Some(true));
        assert!(!entry.upstream.is_native(), "a function has no other form");
        let bound = entry.tool.bind("c1", &json!({"city":"Paris"}), &BindCtx { executors: &registry, include: &[], native: false, tools: None });
        assert!(bound.is_err(), "client calls are returned, never run");
        let item: InputItem = serde_json::from_value(json!({"type":"function_call","call_id":"c1","name":"f","namespace":"ns","arguments":" "})).unwrap();
        let r = FunctionType.replay(&item, &mut Vec::new()).unwrap();
        assert_eq!(r.call, Call { call_id: "c1".into(), name: "ns__f".into(), arguments: "{}".into() });
        assert_eq!(r.result, None);
    }
}
