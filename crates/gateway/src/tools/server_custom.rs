//! Server-owned `custom` tools (DESIGN.md "Ownership model"): `{"type":"custom","name":N}`
//! where N is registered in `[server_tools]`. Gateway-owned; the server owns the
//! description and the free-form input contract.

use std::sync::Arc;

use protocol::ApiError;
use serde_json::{json, Value};

use super::{custom, Owner, ToolEntry, ToolKind, UpstreamTool};
use crate::executors::ServerTool;

/// Validates the declaration. A client `format` → 400 (the server owns the input
/// contract); a client `description` is ignored. The echo keeps what the client sent plus
/// `format: {type: text}`.
pub fn declare(decl: Value, param: &str, tool: Arc<dyn ServerTool>) -> Result<(Vec<ToolEntry>, Value), ApiError> {
    if decl.get("format").is_some_and(|f| !f.is_null()) {
        return Err(ApiError::invalid(
            format!("{param}.format"),
            format!("'{}' is a server tool: the server owns its input format; remove 'format'.", tool.name()),
        )
        .with_code("invalid_value"));
    }
    let mut echo = decl;
    echo["format"] = json!({"type": "text"});
    let entry = ToolEntry {
        name: tool.name().to_string(),
        namespace: None,
        kind: ToolKind::ServerCustom,
        owner: Owner::Gateway,
        upstream: UpstreamTool {
            name: tool.name().to_string(),
            description: Some(tool.description()),
            parameters: json!({
                "type": "object",
                "properties": {custom::INPUT_PARAM: {"type": "string", "description": "The component name."}},
                "required": [custom::INPUT_PARAM],
            }),
            strict: None,
            native: Some(custom::native_declaration(tool.name(), Some(&tool.description()), &json!({"type": "text"}))),
        },
        executor: Some(tool),
    };
    Ok((vec![entry], echo))
}
