//! Listing a declared MCP server's tools when the turn runs (issue 18 "Listing"): one
//! `mcp_list_tools` item per server, or, on a continuation, the history's listing for its
//! label, reused without an item. Each allowed tool becomes a function of the model.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use protocol::output::McpToolInfo;
use protocol::ApiError;
use serde_json::Value;

use super::call::McpTool;
use super::{visible_name, ServerDecl};
use crate::events::Emitter;
use crate::executors::mcp::{ListedTool, McpConnection, McpServers};
use crate::tools::deferred::{Deferred, Holder};
use crate::tools::{Discovered, Discovery, Listing, Owner, ToolEntry, UpstreamTool};

/// A declared MCP server: its tools are listed when the turn runs.
#[derive(Debug)]
pub(super) struct McpServer {
    pub(super) decl: Arc<ServerDecl>,
    pub(super) servers: Arc<McpServers>,
}

impl Discovery for McpServer {
    fn label(&self) -> &str {
        &self.decl.label
    }

    fn label_field(&self) -> &'static str {
        "server_label"
    }

    fn deferred(&self) -> Option<(String, Option<String>)> {
        self.decl.deferred.then(|| (self.decl.label.clone(), self.decl.description.clone()))
    }

    fn param(&self) -> &str {
        &self.decl.param
    }

    /// A request's server whose host resolves only to private addresses is a 400 now.
    fn check(&self) -> BoxFuture<'_, Result<(), ApiError>> {
        Box::pin(async move {
            let Ok(target) = &self.decl.target else { return Ok(()) };
            self.servers
                .check_resolved(target)
                .await
                .map_err(|m| ApiError::invalid(format!("{}.server_url", self.decl.param), m).with_code("invalid_value"))
        })
    }

    /// A turn's connection is made here (not yet opened). `known` tools that do not parse
    /// as an `mcp_list_tools` item's are listed again.
    fn start(&self, out: &mut Emitter, known: Option<&Value>) -> Box<dyn Listing> {
        let d = &self.decl;
        let connection = d.target.clone().map(|t| Arc::new(McpConnection::new(self.servers.clone(), t)));
        let reused = known.and_then(|k| serde_json::from_value::<Vec<McpToolInfo>>(k.clone()).ok());
        if let Some(tools) = reused {
            let listed = tools.into_iter().map(listed_tool).collect();
            return Box::new(McpListing { decl: d.clone(), connection, index: None, listed: Some(Ok(listed)) });
        }
        let index = out.mcp_list_start(&d.label);
        Box::new(McpListing { decl: d.clone(), connection, index: Some(index), listed: None })
    }
}

/// A tool of an `mcp_list_tools` item, as listed.
fn listed_tool(t: McpToolInfo) -> ListedTool {
    let read_only = t.annotations.as_ref().and_then(|a| a.get("readOnlyHint")).and_then(Value::as_bool).unwrap_or(false);
    ListedTool { name: t.name, description: t.description, input_schema: t.input_schema, annotations: t.annotations, read_only }
}

/// One server's listing in a turn.
struct McpListing {
    decl: Arc<ServerDecl>,
    connection: Result<Arc<McpConnection>, String>,
    /// The `mcp_list_tools` item; `None` for a reused listing.
    index: Option<usize>,
    listed: Option<Result<Vec<ListedTool>, String>>,
}

impl Listing for McpListing {
    fn run(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if self.listed.is_some() {
                return;
            }
            let listed = match &self.connection {
                Ok(c) => c.list().await,
                Err(e) => Err(e.clone()),
            };
            if let Err(e) = &listed {
                tracing::warn!(server_label = %self.decl.label, error = %e, "an MCP server could not be listed");
            }
            self.listed = Some(listed);
        })
    }

    /// The allowed tools go into the item and become the model's functions; a failed
    /// listing is a failed item and offers nothing.
    fn finish(self: Box<Self>, out: &mut Emitter) -> Discovered {
        let d = &self.decl;
        let listed = self.listed.unwrap_or_else(|| Err("the MCP server was not listed".into()));
        let (tools, connection) = match (listed, self.connection) {
            (Ok(tools), Ok(connection)) => (tools.into_iter().filter(|t| d.allowed.admits(t)).collect::<Vec<_>>(), connection),
            (Err(e), _) | (_, Err(e)) => {
                if let Some(index) = self.index {
                    out.mcp_list_done(index, &d.label, Err(e));
                }
                return Discovered::default();
            }
        };
        let mut listing = None;
        if let Some(index) = self.index {
            let infos: Vec<McpToolInfo> = tools
                .iter()
                .map(|t| McpToolInfo { name: t.name.clone(), input_schema: t.input_schema.clone(), description: t.description.clone(), annotations: t.annotations.clone() })
                .collect();
            listing = serde_json::to_value(&infos).ok();
            out.mcp_list_done(index, &d.label, Ok(infos));
        }
        let entries = tools
            .into_iter()
            .map(|t| ToolEntry {
                name: t.name.clone(),
                namespace: None,
                owner: Owner::Gateway,
                upstream: UpstreamTool {
                    name: visible_name(&d.label, &t.name),
                    description: Some(describe(d, &t)),
                    parameters: t.input_schema.clone(),
                    strict: None,
                    native: None,
                },
                param: d.param.clone(),
                deferred: d.deferred.then(|| {
                    let public = serde_json::json!({"name": t.name, "description": t.description, "input_schema": t.input_schema});
                    Arc::new(Deferred { holder: Holder::McpServer, surface: d.label.clone(), about: d.description.clone(), public })
                }),
                tool: Arc::new(McpTool { label: d.label.clone(), needs_approval: d.approval.needs(&t), name: t.name, connection: connection.clone() }),
            })
            .collect();
        Discovered { entries, listing }
    }
}

/// The description the model sees: the tool's, with the server's when it has one.
fn describe(d: &ServerDecl, t: &ListedTool) -> String {
    let tool = t.description.clone().unwrap_or_default();
    match &d.description {
        Some(server) if !server.is_empty() => format!("{tool} (MCP server '{}': {server})", d.label),
        _ => tool,
    }
}
