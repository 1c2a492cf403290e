//! `namespace` tools (contract §2): a named group of `function`/`custom` tools. Each member
//! is declared upstream as `<namespace>__<name>`, its description led by the namespace's;
//! calls come back with `namespace` set.

use protocol::ApiError;
use serde_json::Value;

use protocol::input::InputItem;

use std::sync::Arc;

use super::deferred::{self, Deferred, Holder};
use super::{check_name, custom, function, DeclareCtx, Declared, ToolType};
use crate::events::file_citations::FileSource;
use crate::transcript::Replayed;

/// The `namespace` tool type: its members are `function` and `custom` tools (their calls
/// replay as those types' items).
#[derive(Debug, Clone, Copy)]
pub struct NamespaceType;

impl ToolType for NamespaceType {
    fn types(&self) -> &'static [&'static str] {
        &["namespace"]
    }

    fn declare(&self, decl: Value, _kind: &str, param: &str, _ctx: &DeclareCtx<'_>) -> Result<Declared, ApiError> {
        declare(decl, param)
    }

    fn replay(&self, _item: &InputItem, _: &mut Vec<FileSource>) -> Option<Replayed> {
        None
    }
}

/// Separator between namespace and member name in the model-visible name.
pub const SEPARATOR: &str = "__";

/// Validates a `namespace` declaration and its members.
pub fn declare(mut decl: Value, param: &str) -> Result<Declared, ApiError> {
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
    // `defer_loading` on the namespace defers every member (the guide marks namespaces;
    // the SDK's members carry it one by one).
    let all_deferred = deferred::flag(&decl, param)?;
    let mut entries = Vec::new();
    let mut echo_members = Vec::new();
    for (j, m) in members.into_iter().enumerate() {
        let mp = format!("{param}.tools[{j}]");
        let Declared { entries: mut e, echo, .. } = match m.get("type").and_then(Value::as_str) {
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
            let led = |own: Option<&str>| match own {
                Some(own) => format!("{about}\n\n{own}"),
                None => about.clone(),
            };
            for entry in &mut e {
                entry.upstream.description = Some(led(entry.upstream.description.as_deref()));
                // The native form (a custom member's, where the upstream takes it) too.
                if let Some(native) = &mut entry.upstream.native {
                    let own = native.declaration.get("description").and_then(Value::as_str).map(str::to_string);
                    native.declaration["description"] = Value::String(led(own.as_deref()));
                }
            }
        }
        for entry in &mut e {
            if all_deferred || entry.deferred.is_some() {
                let d = Deferred { holder: Holder::Namespace, surface: ns.clone(), about: about.clone(), public: echo.clone() };
                entry.deferred = Some(Arc::new(d));
            }
        }
        entries.append(&mut e);
        echo_members.push(echo);
    }
    decl["tools"] = Value::Array(echo_members);
    Ok(Declared { entries, echo: decl, discovery: None })
}

#[cfg(test)]
mod duties {
    use super::*;
    use crate::executors::Registry;
    use crate::tools::{CallItem, ToolSet};
    use serde_json::json;

    /// The duties of `namespace`: members must be functions or custom tools; each goes
    /// upstream as `<namespace>__<name>`, led by the namespace's description; calls keep
    /// their member's item type; the namespace has no items of its own to replay.
    #[test]
    fn namespace_duties() {
        let registry = Registry::default();
        let ctx = DeclareCtx { registry: &registry };
        let bad = json!({"type":"namespace","name":"crm","tools":[{"type":"web_search"}]});
        assert_eq!(NamespaceType.declare(bad, "namespace", "tools[0]", &ctx).unwrap_err().param.as_deref(), Some("tools[0].tools[0].type"));
        let decl = json!({"type":"namespace","name":"crm","description":"The CRM.","tools":[
            {"type":"function","name":"find","description":"Find a customer."},
            {"type":"custom","name":"note"}
        ]});
        let set = ToolSet::build(vec![decl], None, &registry, &Default::default()).unwrap();
        let find = set.lookup("crm__find").unwrap();
        assert_eq!(find.upstream.description.as_deref(), Some("The CRM.\n\nFind a customer."));
        assert_eq!((find.namespace.as_deref(), find.call_item()), (Some("crm"), CallItem::Function));
        assert_eq!(set.lookup("crm__note").unwrap().call_item(), CallItem::Custom);
        // Where the upstream takes custom tools natively, the native form is led too.
        let native_caps = crate::upstream::UpstreamCaps { native_tools: vec!["custom".into()], ..Default::default() };
        let decl = json!({"type":"namespace","name":"crm","description":"The CRM.","tools":[{"type":"custom","name":"note","description":"Note it."}]});
        let native = ToolSet::build(vec![decl], None, &registry, &native_caps).unwrap();
        let n = native.lookup("crm__note").unwrap().upstream.native.clone().unwrap();
        assert_eq!(n.declaration["description"], json!("The CRM.\n\nNote it."));
        assert_eq!(n.declaration["name"], json!("crm__note"));
        let item: InputItem = serde_json::from_value(json!({"type":"function_call","call_id":"c","name":"find","namespace":"crm","arguments":"{}"})).unwrap();
        assert!(NamespaceType.replay(&item, &mut Vec::new()).is_none());
    }
}
