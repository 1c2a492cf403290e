//! Server-owned `custom` tools (DESIGN.md "Ownership model"): `{"type":"custom","name":N}`
//! where N is registered in `[server_tools]`. Gateway-owned; the server owns the
//! description and the free-form input contract. A call is a `custom_tool_call` (its input
//! streamed as one delta) followed by its `custom_tool_call_output` in the same response.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use protocol::output::ItemStatus;
use protocol::ApiError;
use serde_json::{json, Value};

use super::duties::timed_out;
use super::{BindCtx, CallItem, Declared, Finished, Invocation, Owner, Ran, RunStatus, Tool, ToolEntry, UpstreamTool};
use crate::events::file_citations::FileSources;
use crate::events::Emitter;
use crate::executors::ServerTool;
use crate::transcript::custom::INPUT_PARAM;
use crate::upstream::NativeTool;

/// Validates the declaration. A client `format` → 400 (the server owns the input
/// contract); a client `description` is ignored. The echo keeps what the client sent plus
/// `format: {type: text}`.
pub fn declare(decl: Value, param: &str, tool: Arc<dyn ServerTool>) -> Result<Declared, ApiError> {
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
        owner: Owner::Gateway,
        upstream: UpstreamTool {
            name: tool.name().to_string(),
            description: Some(tool.description()),
            parameters: json!({
                "type": "object",
                "properties": {INPUT_PARAM: {"type": "string", "description": "The component name."}},
                "required": [INPUT_PARAM],
            }),
            strict: None,
            native: Some(NativeTool::custom(tool.name(), Some(&tool.description()), &json!({"type": "text"}))),
        },
        param: param.to_string(),
        deferred: None,
        tool: Arc::new(ServerCustomTool { executor: tool }),
    };
    Ok(Declared { entries: vec![entry], echo, discovery: None })
}

/// A declared server tool and the executor its calls run on.
#[derive(Debug, Clone)]
pub struct ServerCustomTool {
    pub executor: Arc<dyn ServerTool>,
}

impl Tool for ServerCustomTool {
    fn tool_type(&self) -> &'static str {
        "custom"
    }

    fn call_item(&self) -> CallItem {
        CallItem::Custom
    }

    /// The call's raw input is its `input` argument.
    fn bind(&self, call_id: &str, arguments: &Value, _ctx: &BindCtx<'_>) -> Result<Box<dyn Invocation>, String> {
        let input = arguments.get(INPUT_PARAM).and_then(Value::as_str).unwrap_or_default().to_string();
        Ok(Box::new(ServerCall { call_id: call_id.to_string(), input, executor: self.executor.clone(), index: None }))
    }
}

/// One bound server-tool call.
struct ServerCall {
    call_id: String,
    input: String,
    executor: Arc<dyn ServerTool>,
    /// The `custom_tool_call` item, once added.
    index: Option<usize>,
}

impl Invocation for ServerCall {
    fn call_id(&self) -> &str {
        &self.call_id
    }

    fn labels(&self) -> (&'static str, String) {
        ("custom", self.executor.name().to_string())
    }

    fn start(&mut self, out: &mut Emitter) {
        out.progress(&self.executor.progress(&self.input));
        let idx = out.custom_call_start(self.call_id.clone(), self.executor.name().to_string(), None);
        out.call_delta(idx, self.input.clone());
        self.index = Some(idx);
    }

    fn run(&self, timeout: Duration) -> BoxFuture<'static, Ran> {
        let (executor, input) = (self.executor.clone(), self.input.clone());
        Box::pin(async move {
            match tokio::time::timeout(timeout, executor.run(&input)).await {
                Ok(Ok(content)) => Ran { status: RunStatus::Ok, content, ..Ran::default() },
                Ok(Err(e)) => Ran { status: RunStatus::Error, content: format!("error: {e}"), ..Ran::default() },
                Err(_) => Ran { status: RunStatus::Timeout, content: timed_out(timeout), ..Ran::default() },
            }
        })
    }

    /// The call item is done (`completed`: the call itself was whole); its output is
    /// `completed`, or `incomplete` with an `error: …` text when the run failed.
    fn finish(self: Box<Self>, ran: Ran, out: &mut Emitter, _files: &mut FileSources) -> Finished {
        if let Some(idx) = self.index {
            out.call_done(idx, self.input.clone(), ItemStatus::Completed);
        }
        let status = if ran.status == RunStatus::Ok { ItemStatus::Completed } else { ItemStatus::Incomplete };
        out.custom_call_output(self.call_id.clone(), ran.content.clone(), status);
        Finished { content: ran.content, usage: ran.usage, ..Finished::default() }
    }
}

#[cfg(test)]
mod duties {
    use super::*;
    use crate::executors::components::PackageVersion;
    use crate::executors::Registry;
    use crate::tools::duties::testing::{names, recording};
    use crate::tools::{DeclareCtx, ToolSet, ToolType};
    use crate::upstream::UpstreamCaps;
    use protocol::output::OutputItem;

    /// The four duties of a server tool (the real `package_version` executor): a client
    /// `format` is refused, the server's description goes upstream (natively where the
    /// upstream takes `custom`), a call binds to its input, and it is encoded as a
    /// `custom_tool_call` (input streamed) with its `custom_tool_call_output`.
    #[tokio::test]
    async fn server_custom_duties() {
        let mut registry = Registry::default();
        registry.register(Arc::new(PackageVersion::new(vec!["tokio".into()])));
        let ctx = DeclareCtx { registry: &registry };
        let with_format = json!({"type":"custom","name":"package_version","format":{"type":"text"}});
        assert_eq!(crate::tools::custom::CustomType.declare(with_format, "custom", "tools[0]", &ctx).unwrap_err().param.as_deref(), Some("tools[0].format"));
        let caps = UpstreamCaps { native_tools: vec!["custom".into()], ..UpstreamCaps::default() };
        let decl = json!({"type":"custom","name":"package_version","description":"ignored"});
        let set = ToolSet::build(vec![decl], None, &registry, &caps).unwrap();
        let entry = set.lookup("package_version").unwrap();
        assert_eq!((entry.owner, entry.is_custom()), (Owner::Gateway, true));
        assert!(entry.upstream.description.as_deref().unwrap_or("").starts_with("Report the installed version"));
        assert!(entry.upstream.is_native());
        let mut call = entry.tool.bind("c1", &json!({"input":"tokio"}), &BindCtx { executors: &registry, include: &[], native: false, tools: None }).unwrap();
        assert_eq!(call.labels(), ("custom", "package_version".to_string()));
        let (mut out, recorder) = recording();
        call.start(&mut out);
        let ran = call.run(Duration::from_secs(5)).await;
        assert_eq!(ran.status, RunStatus::Ok, "{}", ran.content);
        let done = call.finish(ran, &mut out, &mut FileSources::default());
        assert!(done.content.starts_with("tokio "), "{}", done.content);
        assert_eq!(
            names(&recorder)[6..],
            [
                "response.output_item.added",
                "response.custom_tool_call_input.delta",
                "response.custom_tool_call_input.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.output_item.done"
            ],
            "after the progress message: the call, then its output"
        );
        let output = out.response().output.last().cloned();
        let Some(OutputItem::CustomToolCallOutput { call_id, output, status, .. }) = output else { panic!("an output item") };
        assert_eq!((call_id.as_str(), output.as_str(), status), ("c1", done.content.as_str(), ItemStatus::Completed));
    }
}
