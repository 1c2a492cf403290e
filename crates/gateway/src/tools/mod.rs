//! The request-scoped [`ToolSet`]: the only thing that decides tool ownership
//! (DESIGN.md "Ownership model"). One handler module per tool type validates its
//! declaration and says how it is declared upstream, how its calls are recognized and
//! how its items are encoded.

pub mod choice;
pub mod custom;
pub mod file_search;
pub mod function;
pub mod namespace;
pub mod replay;
pub mod server_custom;
pub mod web_search;

use std::collections::HashMap;
use std::sync::Arc;

use protocol::ApiError;
use serde_json::Value;

pub use crate::upstream::{ToolChoice, UpstreamTool};

use crate::executors::{Registry, ServerTool};
use crate::upstream::UpstreamCaps;

/// Who executes a tool's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Returned to the client (`function`, `custom`).
    Client,
    /// Executed inside the gateway.
    Gateway,
}

/// What a declared tool is; keeps the original type so upstream function calls are
/// restored to the typed item.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolKind {
    /// `function`: calls become `function_call` items.
    Function,
    /// `custom`: upstream sees one string parameter ([`custom::INPUT_PARAM`]); calls become
    /// `custom_tool_call` items with the raw `input`.
    Custom,
    /// `custom` naming a registered server tool: gateway-owned, executed by
    /// [`ToolEntry::executor`], answered by a `custom_tool_call_output` in the same response.
    ServerCustom,
    /// `web_search*`: gateway-owned; calls become `web_search_call` items.
    WebSearch(web_search::WebSearchOptions),
    /// `file_search`: gateway-owned; calls become `file_search_call` items.
    FileSearch(file_search::FileSearchOptions),
}

impl ToolKind {
    /// True for kinds whose calls are `custom_tool_call` items.
    pub fn is_custom(&self) -> bool {
        matches!(self, ToolKind::Custom | ToolKind::ServerCustom)
    }
}

/// One declared tool.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// Public name (as the client declared it).
    pub name: String,
    /// Set for members of a `namespace` declaration.
    pub namespace: Option<String>,
    pub kind: ToolKind,
    pub owner: Owner,
    /// Upstream declaration; its `name` is the model-visible name.
    pub upstream: UpstreamTool,
    /// Set for server tools: where the call runs.
    pub executor: Option<Arc<dyn ServerTool>>,
}

impl ToolEntry {
    /// The model-visible (upstream) name.
    pub fn visible_name(&self) -> &str {
        &self.upstream.name
    }
}

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
}

impl ToolSet {
    /// Validates `tools` and `tool_choice` (contract §2, §3); each tool keeps its native
    /// declaration only where `caps` renders its type natively. Errors are 400s naming the
    /// offending `param` (`tools[i].type`, `tools[i].name`, `tool_choice`, …).
    pub fn build(tools: Vec<Value>, tool_choice: Option<&Value>, registry: &Registry, caps: &UpstreamCaps) -> Result<ToolSet, ApiError> {
        let mut set = ToolSet { echo: Vec::with_capacity(tools.len()), ..ToolSet::default() };
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
            let name = obj.get("name").and_then(Value::as_str);
            let server_tool = name.and_then(|n| registry.get(n));
            let (entries, echo) = match kind.as_str() {
                "function" if server_tool.is_some() => {
                    return Err(ApiError::invalid(
                        format!("{param}.name"),
                        format!(
                            "The tool name '{}' belongs to a server tool; declare it as {{\"type\":\"custom\",\"name\":\"{}\"}}.",
                            name.unwrap_or(""),
                            name.unwrap_or("")
                        ),
                    )
                    .with_code("reserved_tool_name"))
                }
                "function" => function::declare(decl, &param, None)?,
                "custom" => match server_tool {
                    Some(tool) => server_custom::declare(decl, &param, tool.clone())?,
                    None => custom::declare(decl, &param, None)?,
                },
                "namespace" => namespace::declare(decl, &param)?,
"web_search" | "web_search_2025_08_26" | "web_search_preview"
                | "web_search_preview_2025_03_11" => web_search::declare(&decl, &param, &kind, registry)?,
                "file_search" => file_search::declare(&decl, &param)?,
                "mcp" | "code_interpreter"
                | "image_generation" | "local_shell" | "shell" | "apply_patch"
                | "computer_use_preview" | "computer" | "tool_search"
                | "programmatic_tool_calling" => {
                    return Err(ApiError::invalid(
                        format!("{param}.type"),
                        format!("Tool type '{kind}' is not available on this gateway."),
                    )
                    .with_code("unsupported_tool_type"))
                }
                other => {
                    return Err(ApiError::invalid(
                        format!("{param}.type"),
                        format!("Invalid value: '{other}'. Unknown tool type."),
                    )
                    .with_code("invalid_value"))
                }
            };
            for mut entry in entries {
                // The handler offers its native form; only an upstream that advertises the
                // type gets it (`upstream.native_tools`).
                if entry.upstream.native.as_ref().is_some_and(|n| !caps.renders_native(&n.tool_type)) {
                    entry.upstream.native = None;
                }
                set.insert(entry, &param)?;
            }
            set.echo.push(echo);
        }
        let (choice, echo) = choice::resolve(tool_choice, &set)?;
        set.choice = choice;
        set.choice_echo = echo;
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

    /// The same tools less those not in `offered` (upstream names): what one round of an
    /// `allowed_tools` choice may call. `None` when every tool is offered.
    pub fn restricted_to(&self, offered: &[&UpstreamTool]) -> Option<ToolSet> {
        // `offered` comes from `upstream_tools`: a subset of these tools, each once.
        if offered.len() == self.entries.len() {
            return None;
        }
        let offered: std::collections::HashSet<&str> = offered.iter().map(|o| o.name.as_str()).collect();
        let mut set = ToolSet { choice: self.choice.clone(), choice_echo: self.choice_echo.clone(), ..ToolSet::default() };
        for e in self.entries.iter().filter(|e| offered.contains(e.upstream.name.as_str())) {
            set.by_visible.insert(e.visible_name().to_string(), set.entries.len());
            set.entries.push(e.clone());
        }
        Some(set)
    }

    /// The `file_search` declaration of this request, if any.
    pub fn file_search(&self) -> Option<&file_search::FileSearchOptions> {
        self.entries.iter().find_map(|e| match &e.kind {
            ToolKind::FileSearch(o) => Some(o),
            _ => None,
        })
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
    /// `allowed_tools`; gateway-owned tools first, then client tools.
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
        let gateway = self.entries.iter().filter(|e| e.owner == Owner::Gateway && allowed(e));
        let client = self.entries.iter().filter(|e| e.owner == Owner::Client && allowed(e));
        gateway.chain(client).map(|e| &e.upstream).collect()
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
