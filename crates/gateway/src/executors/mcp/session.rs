//! A turn's connection to one MCP server ([`McpConnection`], made on first use) and its
//! `tools/list` and `tools/call` (issue 18 "Transport", "Listing", "Calls").

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig, ContentBlock};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::{json, Map, Value};
use tokio::sync::OnceCell;

use super::{McpServers, Target};
use crate::upstream::redact::Secrets;

/// A turn's connection to one server, made on first use (its listing, or the first call of
/// a continuation that reuses a listing) and shared by the turn's calls. A failed connect is
/// kept: the turn's later calls fail with the same message without trying again.
#[derive(Debug)]
pub struct McpConnection {
    servers: Arc<McpServers>,
    target: Target,
    session: OnceCell<Result<McpSession, String>>,
}

impl McpConnection {
    /// Not connected yet.
    pub fn new(servers: Arc<McpServers>, target: Target) -> McpConnection {
        McpConnection { servers, target, session: OnceCell::new() }
    }

    /// The server's target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// `tools/call`'s timeout (`mcp.call_timeout_ms`).
    pub fn call_timeout(&self) -> Duration {
        self.servers.call_timeout()
    }

    async fn session(&self) -> Result<&McpSession, String> {
        self.session.get_or_init(|| self.servers.connect(&self.target)).await.as_ref().map_err(Clone::clone)
    }

    /// Connects if need be, then lists ([`McpSession::list`]).
    pub async fn list(&self) -> Result<Vec<ListedTool>, String> {
        self.session().await?.list().await
    }

    /// Connects if need be, then calls ([`McpSession::call`]); a failed connect is a
    /// [`Called::Failed`].
    pub async fn call(&self, name: &str, arguments: Map<String, Value>, timeout: Duration) -> Called {
        match self.session().await {
            Ok(session) => session.call(name, arguments, timeout).await,
            Err(message) => Called::Failed(message.clone(), json!({"type": "mcp_protocol_error", "code": -32603, "message": message})),
        }
    }
}

/// An open MCP session (closed when the last clone is dropped).
#[derive(Debug, Clone)]
pub struct McpSession {
    service: Arc<RunningService<RoleClient, ClientConfig>>,
    secrets: Arc<Secrets>,
    list: Duration,
    call: Duration,
}

/// One tool a server listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub description: Option<String>,
    /// Its JSON Schema (an object).
    pub input_schema: Value,
    /// The server's annotations as sent (`readOnlyHint`, …).
    pub annotations: Option<Value>,
    /// `annotations.readOnlyHint`.
    pub read_only: bool,
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Called {
    /// The tool's text.
    Ok(String),
    /// The tool reported an error (`isError`): its text, and the item's `error` object
    /// (`mcp_tool_execution_error` with the content).
    ToolError(String, Value),
    /// The call did not complete (transport, protocol): a message and the item's `error`
    /// object (`mcp_protocol_error`).
    Failed(String, Value),
    /// No answer within the timeout: a message and the item's `error` object.
    TimedOut(String, Value),
}

impl McpSession {
    pub(super) fn new(service: RunningService<RoleClient, ClientConfig>, secrets: Secrets, list: Duration, call: Duration) -> McpSession {
        McpSession { service: Arc::new(service), secrets: Arc::new(secrets), list, call }
    }

    /// `tools/list`, every page, within `mcp.list_timeout_ms`. Errors: a message for the
    /// item's `error`.
    pub async fn list(&self) -> Result<Vec<ListedTool>, String> {
        let tools = match tokio::time::timeout(self.list, self.service.list_all_tools()).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => return Err(self.secrets.redact(&format!("listing the tools failed: {}", root_cause(&e)))),
            Err(_) => return Err(format!("listing the tools took more than {} ms", self.list.as_millis())),
        };
        Ok(tools
            .into_iter()
            .map(|t| {
                let annotations = t.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok());
                ListedTool {
                    read_only: t.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false),
                    name: t.name.to_string(),
                    description: t.description.map(|d| d.to_string()),
                    input_schema: Value::Object((*t.input_schema).clone()),
                    annotations,
                }
            })
            .collect())
    }

    /// `tools/call` of `name` with `arguments`, within `timeout` (at most `mcp.call_timeout_ms`).
    pub async fn call(&self, name: &str, arguments: Map<String, Value>, timeout: Duration) -> Called {
        let timeout = timeout.min(self.call);
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        let result = match tokio::time::timeout(timeout, self.service.call_tool(params)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                let message = self.secrets.redact(&format!("the MCP call failed: {}", root_cause(&e)));
                return Called::Failed(message.clone(), json!({"type": "mcp_protocol_error", "code": -32603, "message": message}));
            }
            Err(_) => {
                let message = format!("the MCP call took more than {} ms", timeout.as_millis());
                return Called::TimedOut(message.clone(), json!({"type": "mcp_protocol_error", "code": -32001, "message": message}));
            }
        };
        let text = content_text(&result.content, result.structured_content.as_ref());
        if result.is_error == Some(true) {
            let content = serde_json::to_value(&result.content).unwrap_or(Value::Null);
            return Called::ToolError(text, json!({"type": "mcp_tool_execution_error", "content": content}));
        }
        Called::Ok(text)
    }
}

/// The innermost cause of an SDK error (e.g. "Connection refused (os error 111)"), without
/// the transport's type names that the outer messages carry.
pub(super) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    without_type_names(&cause.to_string())
}

/// `text` less the bracketed Rust type names the SDK's messages hold
/// (`[rmcp::transport::worker::WorkerTransport<…>]`).
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].char_indices().scan(0i32, |depth, (i, c)| {
            *depth += match c { '[' => 1, ']' => -1, _ => 0 };
            Some((i, *depth))
        }).find(|&(_, d)| d == 0).map(|(i, _)| open + i);
        match close {
            Some(close) if rest[open..close].contains("::") => {
                out.push_str(rest[..open].trim_end());
                rest = &rest[close + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The longest text of a call result kept, in characters: the item's `output` and what the
/// model reads are cut there (with a note of the length).
pub const MAX_OUTPUT_CHARS: usize = 100_000;

/// A call result's text: its text blocks joined by newlines; other blocks named by kind; the
/// structured content as JSON when there is no block.
fn content_text(content: &[ContentBlock], structured: Option<&Value>) -> String {
    let parts: Vec<String> = content
        .iter()
        .map(|c| match c {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(_) => "[image]".to_string(),
            ContentBlock::Audio(_) => "[audio]".to_string(),
            ContentBlock::Resource(r) => serde_json::to_string(&r.resource).unwrap_or_default(),
            ContentBlock::ResourceLink(l) => format!("[resource {}]", l.uri),
            _ => "[content]".to_string(),
        })
        .collect();
    let text = if parts.is_empty() { structured.map(Value::to_string).unwrap_or_default() } else { parts.join("\n") };
    match text.char_indices().nth(MAX_OUTPUT_CHARS) {
        Some((cut, _)) => format!("{}\n[output cut at {MAX_OUTPUT_CHARS} of {} characters]", &text[..cut], text.chars().count()),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdk_type_names_are_left_out_of_messages() {
        assert_eq!(
            without_type_names("Send message error Transport [rmcp::a::W<rmcp::b::C<reqwest::Client>>] error: refused [redacted]"),
            "Send message error Transport error: refused [redacted]"
        );
        assert_eq!(without_type_names("a [b] c [x::y"), "a [b] c [x::y");
    }

    #[test]
    fn long_outputs_are_cut() {
        let long = "é".repeat(MAX_OUTPUT_CHARS + 5);
        let text = content_text(&[ContentBlock::text(long)], None);
        assert!(text.starts_with(&"é".repeat(MAX_OUTPUT_CHARS)) && text.ends_with(&format!("[output cut at {MAX_OUTPUT_CHARS} of {} characters]", MAX_OUTPUT_CHARS + 5)));
        assert_eq!(content_text(&[ContentBlock::text("a"), ContentBlock::text("b")], None), "a\nb");
        assert_eq!(content_text(&[], Some(&json!({"x": 1}))), r#"{"x":1}"#);
    }

}
