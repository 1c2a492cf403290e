//! MCP tools owned by the gateway (issue 18; contract §2 `mcp`, §5, §8.4 f). A declaration
//! names one MCP server, by `server_url` or, for a server the operator configures
//! (`[mcp.servers.<label>]`), by `server_label` alone. Its tools are listed when the turn
//! runs ([`listing`]): an `mcp_list_tools` item, then each allowed tool is a function the
//! model sees as `{server_label}__{tool}` (at most 64 characters; mapped back exactly). A
//! call ([`call`]) runs on the turn's connection to that server and is an `mcp_call` item,
//! unless it needs the user's approval ([`approval`]): then the turn ends with an
//! `mcp_approval_request`. `headers` and `authorization` go to that server only and are
//! left out of the echo in `Response.tools`.

mod approval;
mod call;
mod listing;

use std::sync::Arc;

use protocol::input::InputItem;
use protocol::ApiError;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{opt_str, DeclareCtx, Declared, ToolType};
use crate::events::file_citations::FileSource;
use crate::executors::mcp::{Credentials, ListedTool, Target};
use crate::transcript::{Call, Recorded, Replayed};
use approval::Approval;

/// The `mcp` tool type.
#[derive(Debug)]
pub struct McpType;

/// Which listed tools the model may call (`allowed_tools`).
#[derive(Debug, Clone, Default)]
struct Allowed {
    names: Option<Vec<String>>,
    /// Only tools annotated `readOnlyHint`.
    read_only: bool,
}

impl Allowed {
    fn admits(&self, tool: &ListedTool) -> bool {
        self.names.as_ref().is_none_or(|n| n.contains(&tool.name)) && (!self.read_only || tool.read_only)
    }
}

/// A declared server, as validated.
#[derive(Debug)]
struct ServerDecl {
    label: String,
    /// Where it is; `Err` when the operator's configuration of it is unusable (the
    /// listing then fails with that message).
    target: Result<Target, String>,
    description: Option<String>,
    allowed: Allowed,
    approval: Approval,
    /// `tools[i]`.
    param: String,
    /// `defer_loading: true`: the server's tools wait for a tool search (issue 31).
    deferred: bool,
}

impl ToolType for McpType {
    fn types(&self) -> &'static [&'static str] {
        &["mcp"]
    }

    /// An `mcp_call` of the input (a replayed output) is the call the model made, under its
    /// function name, and the result it read; one that ran under an approval is recorded
    /// instead ([`McpType::record`]).
    fn replay(&self, item: &InputItem, _: &mut Vec<FileSource>) -> Option<Replayed> {
        let InputItem::Other { kind, raw } = item else { return None };
        if kind != "mcp_call" || raw.get("approval_request_id").is_some_and(Value::is_string) {
            return None;
        }
        replayed_call(raw)
    }

    /// `mcp_list_tools` (a successful listing), `mcp_approval_request`,
    /// `mcp_approval_response`, and an `mcp_call` that ran under an approval.
    fn record(&self, item: &InputItem) -> Option<Recorded> {
        let InputItem::Other { kind, raw } = item else { return None };
        let text = |k: &str| raw.get(k).and_then(Value::as_str);
        match kind.as_str() {
            "mcp_list_tools" => {
                let failed = raw.get("error").is_some_and(|e| !e.is_null());
                let tools = raw.get("tools").filter(|t| t.is_array() && !failed)?;
                Some(Recorded::Listing { label: text("server_label")?.to_string(), tools: tools.clone() })
            }
            "mcp_approval_request" => {
                let (id, label, name) = (text("id")?, text("server_label")?, text("name")?);
                let arguments = text("arguments").unwrap_or("{}").to_string();
                Some(Recorded::ApprovalRequest(Call { call_id: id.to_string(), name: visible_name(label, name), arguments }))
            }
            "mcp_approval_response" => {
                let field = |k: &str| raw.get(k).cloned().unwrap_or(Value::Null);
                Some(Recorded::ApprovalResponse { request_id: field("approval_request_id"), approve: field("approve"), reason: field("reason") })
            }
            "mcp_call" => Some(Recorded::ApprovedRun { request_id: text("approval_request_id")?.to_string(), replayed: replayed_call(raw)? }),
            _ => None,
        }
    }

    /// Validates the declaration (400s name the field): `server_label` (1–64 of
    /// `a-zA-Z0-9_-`, unique), `server_url` (allowed by `[mcp]`; left out for an operator's
    /// server), `server_description`, `headers` (strings), `authorization`,
    /// `allowed_tools`, `require_approval`.
    fn declare(&self, decl: Value, _kind: &str, param: &str, ctx: &DeclareCtx<'_>) -> Result<Declared, ApiError> {
        let invalid = |field: &str, msg: String| ApiError::invalid(format!("{param}.{field}"), msg).with_code("invalid_value");
        let label = match decl.get("server_label") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => {
                return Err(ApiError::invalid(format!("{param}.server_label"), format!("Missing required parameter: '{param}.server_label'."))
                    .with_code("missing_required_parameter"))
            }
            Some(_) => return Err(invalid("server_label", "server_label must be a string.".into())),
        };
        if label.is_empty() || label.len() > 64 || !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(invalid("server_label", format!("Invalid server_label '{label}': use 1-64 characters of a-z, A-Z, 0-9, '_' and '-'.")));
        }
        for other in ["connector_id", "tunnel_id"] {
            if decl.get(other).is_some_and(|v| !v.is_null()) {
                return Err(ApiError::invalid(format!("{param}.{other}"), format!("'{other}' is not available on this gateway: give a server_url."))
                    .with_code("unsupported_value"));
            }
        }
        let credentials = credentials(&decl, param)?;
        let description = opt_str(&decl, "server_description", param)?;
        let servers = &ctx.registry.mcp;
        let target = match (servers.operator(&label), opt_str(&decl, "server_url", param)?) {
            (Some(_), Some(_)) => {
                return Err(invalid("server_url", format!("The server '{label}' is configured on this gateway: name it by server_label alone, without server_url.")))
            }
            (Some(operator), None) => operator.map_err(str::to_string).map(|t| Target {
                credentials: credentials.clone().overridden_by(&t.credentials),
                ..t.clone()
            }),
            (None, Some(url)) => {
                if url.len() > MAX_URL_BYTES {
                    return Err(invalid("server_url", format!("server_url is longer than {MAX_URL_BYTES} bytes.")));
                }
                let url = servers.check_url(&url).map_err(|m| invalid("server_url", m))?;
                Ok(Target { url, credentials, trusted: false, description: None })
            }
            (None, None) => {
                return Err(ApiError::invalid(
                    format!("{param}.server_url"),
                    format!("Missing required parameter: '{param}.server_url' (no server labelled '{label}' is configured on this gateway)."),
                )
                .with_code("missing_required_parameter"))
            }
        };
        let description = description.or_else(|| target.as_ref().ok().and_then(|t| t.description.clone()));
        let allowed = allowed_tools(decl.get("allowed_tools")).map_err(|m| invalid("allowed_tools", m))?;
        let approval = Approval::parse(decl.get("require_approval")).map_err(|m| invalid("require_approval", m))?;
        let deferred = super::deferred::flag(&decl, param)?;
        let mut echo = decl;
        if let Some(o) = echo.as_object_mut() {
            o.remove("headers");
            o.remove("authorization");
        }
        let decl = ServerDecl { label, target, description, allowed, approval, param: param.to_string(), deferred };
        let server = listing::McpServer { decl: Arc::new(decl), servers: servers.clone() };
        Ok(Declared { entries: Vec::new(), echo, discovery: Some(Arc::new(server)) })
    }
}

/// `headers` (an object of strings) and `authorization` (a token), checked as the HTTP
/// client would at connect time (400s naming the field).
fn credentials(decl: &Value, param: &str) -> Result<Credentials, ApiError> {
    let invalid = |field: &str, msg: String| ApiError::invalid(format!("{param}.{field}"), msg).with_code("invalid_value");
    let authorization = opt_str(decl, "authorization", param)?;
    let headers: Vec<(String, String)> = match decl.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(invalid("headers", format!("The value of header '{k}' must be a string."))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid("headers", "headers must be an object of strings.".into())),
    };
    for (k, v) in &headers {
        if reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_err() || reqwest::header::HeaderValue::from_str(v).is_err() {
            return Err(invalid("headers", format!("Header '{}' is not a valid HTTP header name and value.", k.escape_debug())));
        }
        if RESERVED_HEADERS.iter().any(|r| r.eq_ignore_ascii_case(k)) {
            return Err(invalid("headers", format!("Header '{k}' is set by the gateway's MCP client and cannot be given.")));
        }
    }
    if authorization.is_some() && headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")) {
        return Err(invalid("headers", "Give the token once: in 'authorization' or as an Authorization header, not both.".into()));
    }
    if authorization.as_deref().is_some_and(|a| reqwest::header::HeaderValue::from_str(&format!("Bearer {a}")).is_err()) {
        return Err(invalid("authorization", "authorization must be a token without line breaks or control characters.".into()));
    }
    Ok(Credentials { headers, authorization })
}

/// Headers the MCP client sets itself (HTTP framing and the MCP session): a request
/// giving one would break the transport.
const RESERVED_HEADERS: [&str; 13] = [
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer",
    "content-type", "accept", "mcp-session-id", "mcp-protocol-version", "last-event-id",
];

/// The longest `server_url`, in bytes.
const MAX_URL_BYTES: usize = 2048;

/// `allowed_tools`: `null`, a list of names, or `{tool_names?, read_only?}`.
fn allowed_tools(v: Option<&Value>) -> Result<Allowed, String> {
    let names = |v: &Value| -> Result<Vec<String>, String> {
        v.as_array()
            .ok_or("tool_names must be a list of strings.")?
            .iter()
            .map(|n| n.as_str().map(str::to_string).ok_or_else(|| "tool names must be strings.".to_string()))
            .collect()
    };
    match v {
        None | Some(Value::Null) => Ok(Allowed::default()),
        Some(list @ Value::Array(_)) => Ok(Allowed { names: Some(names(list).map_err(|_| "allowed_tools must be a list of tool names.")?), read_only: false }),
        Some(Value::Object(o)) => Ok(Allowed {
            names: o.get("tool_names").filter(|v| !v.is_null()).map(names).transpose()?,
            read_only: match o.get("read_only") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err("read_only must be a boolean.".into()),
            },
        }),
        Some(_) => Err("allowed_tools must be a list of tool names or {\"tool_names\": [...], \"read_only\": bool}.".into()),
    }
}

/// An `mcp_call` item as the call the model made (under its function name) and the result
/// it read.
fn replayed_call(raw: &Value) -> Option<Replayed> {
    let text = |k: &str| raw.get(k).and_then(Value::as_str);
    let (id, label, name) = (text("id")?, text("server_label")?, text("name")?);
    let result = match (text("output"), raw.get("error").filter(|e| !e.is_null())) {
        (Some(output), None) => call::for_model(label, name, output),
        (_, Some(error)) => format!("error: the MCP call failed: {}", error.get("message").and_then(Value::as_str).map_or_else(|| error.to_string(), str::to_string)),
        (None, None) => return None,
    };
    let call = Call { call_id: id.to_string(), name: visible_name(label, name), arguments: text("arguments").unwrap_or("{}").to_string() };
    Some(Replayed { call, result: Some(result), private_key: None })
}

/// The model-visible name of `tool` on server `label`: `{label}__{tool}` when that is at
/// most 64 characters of `a-zA-Z0-9_-`; else shortened, with 8 hex digits of the tool
/// name's SHA-256, so that names stay unique.
pub fn visible_name(label: &str, tool: &str) -> String {
    let clean: String = tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let plain = format!("{label}__{clean}");
    if plain.len() <= 64 && clean == tool {
        return plain;
    }
    let hash: String = Sha256::digest(tool.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect();
    let label: String = label.chars().take(24).collect();
    let room = 64 - label.len() - 2 - 1 - hash.len();
    let clean: String = clean.chars().take(room).collect();
    format!("{label}__{clean}_{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executors::mcp::McpServers;
    use crate::executors::Registry;
    use serde_json::json;
    use crate::tools::ToolSet;
    use crate::upstream::UpstreamCaps;

    fn registry() -> Registry {
        let operator = crate::config::mcp::McpServerConfig { url: "http://10.0.0.5:8000/mcp".into(), description: Some("Internal docs".into()), ..Default::default() };
        let unset = crate::config::mcp::McpServerConfig { url: "http://10.0.0.6/mcp".into(), authorization_env: Some("RG_TEST_MCP_TOKEN_NEVER_SET".into()), ..Default::default() };
        let config = crate::config::mcp::McpConfig {
            allowed_urls: vec!["https://mcp.example.com/".into()],
            servers: [("internal".to_string(), operator), ("broken".to_string(), unset)].into_iter().collect(),
            ..Default::default()
        };
        let mut r = Registry::default();
        r.mcp = Arc::new(McpServers::from_config(&config));
        r
    }

    fn param_of(tools: Value) -> Option<String> {
        let tools = tools.as_array().cloned().unwrap_or_default();
        ToolSet::build(tools, None, &registry(), &UpstreamCaps::default()).err().and_then(|e| e.param)
    }

    #[test]
    fn declarations_are_checked_field_by_field() {
        let ok = json!({"type":"mcp","server_label":"docs","server_url":"https://mcp.example.com/mcp","require_approval":"never",
                        "headers":{"X-Key":"k"},"authorization":"tok","allowed_tools":{"tool_names":["a"],"read_only":true}});
        let set = ToolSet::build(vec![ok.clone()], None, &registry(), &UpstreamCaps::default()).expect("valid");
        assert!(set.echo[0].get("headers").is_none() && set.echo[0].get("authorization").is_none(), "credentials are not echoed");
        assert_eq!(set.echo[0]["server_label"], "docs");
        let with = |k: &str, v: Value| {
            let mut d = ok.clone();
            d[k] = v;
            json!([d])
        };
        assert_eq!(param_of(with("server_label", json!(null))).as_deref(), Some("tools[0].server_label"));
        assert_eq!(param_of(with("server_label", json!("a b"))).as_deref(), Some("tools[0].server_label"));
        assert_eq!(param_of(with("server_url", json!("https://elsewhere.example.com/mcp"))).as_deref(), Some("tools[0].server_url"));
        assert_eq!(param_of(with("headers", json!({"a": 1}))).as_deref(), Some("tools[0].headers"));
        assert_eq!(param_of(with("headers", json!({"X Y\n": "v"}))).as_deref(), Some("tools[0].headers"));
        assert_eq!(param_of(with("headers", json!({"X-Y": "a\r\nInjected: 1"}))).as_deref(), Some("tools[0].headers"));
        assert_eq!(param_of(with("authorization", json!("x\r\ny"))).as_deref(), Some("tools[0].authorization"));
        assert_eq!(param_of(with("headers", json!({"Host": "evil.example"}))).as_deref(), Some("tools[0].headers"), "reserved");
        assert_eq!(param_of(with("headers", json!({"authorization": "Bearer h"}))).as_deref(), Some("tools[0].headers"), "the token twice");
        assert_eq!(param_of(with("headers", json!({"content-length": "0"}))).as_deref(), Some("tools[0].headers"), "reserved");
        let long = format!("https://mcp.example.com/{}", "a".repeat(3000));
        assert_eq!(param_of(with("server_url", json!(long))).as_deref(), Some("tools[0].server_url"));
        assert_eq!(param_of(with("allowed_tools", json!("a"))).as_deref(), Some("tools[0].allowed_tools"));
        assert_eq!(param_of(with("require_approval", json!("sometimes"))).as_deref(), Some("tools[0].require_approval"));
        assert_eq!(param_of(with("require_approval", json!({"always": {"tool_names": "echo"}}))).as_deref(), Some("tools[0].require_approval"));
        assert_eq!(param_of(with("require_approval", json!(null))), None, "omitted means always");
        assert_eq!(param_of(json!([ok.clone(), ok])).as_deref(), Some("tools[1].server_label"), "labels are unique");
        // Its tools are known only once listed: a required choice is not refused for lack of tools.
        let required = ToolSet::build(vec![json!({"type":"mcp","server_label":"d","server_url":"https://mcp.example.com/m","require_approval":"never"})], Some(&json!("required")), &registry(), &UpstreamCaps::default());
        assert!(required.is_ok(), "{:?}", required.err());
    }

    #[test]
    fn visible_names_are_short_unique_and_valid() {
        assert_eq!(visible_name("docs", "echo"), "docs__echo");
        let a = visible_name("docs", "search.files");
        let b = visible_name("docs", "search_files");
        assert_ne!(a, b, "a cleaned name does not collide with a real one");
        let long = visible_name(&"l".repeat(64), &"t".repeat(80));
        assert!(long.len() <= 64, "{long}");
        for n in [a, b, long] {
            assert!(n.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-'), "{n}");
        }
    }

    #[test]
    fn allowed_tools_filter_by_name_and_read_only() {
        let t = |name: &str, ro: bool| ListedTool { name: name.into(), description: None, input_schema: json!({}), annotations: None, read_only: ro };
        let by_name = allowed_tools(Some(&json!(["a"]))).unwrap();
        assert!(by_name.admits(&t("a", false)) && !by_name.admits(&t("b", true)));
        let ro = allowed_tools(Some(&json!({"read_only": true}))).unwrap();
        assert!(ro.admits(&t("b", true)) && !ro.admits(&t("a", false)));
        assert!(allowed_tools(Some(&json!({"read_only": "yes"}))).is_err());
    }

    #[test]
    fn operator_servers_are_named_by_label_alone() {
        let set = ToolSet::build(vec![json!({"type":"mcp","server_label":"internal","require_approval":"never"})], None, &registry(), &UpstreamCaps::default()).expect("valid");
        assert!(set.echo[0].get("server_url").is_none(), "the operator's URL is not shown");
        let with_url = json!([{"type":"mcp","server_label":"internal","server_url":"https://mcp.example.com/x"}]);
        assert_eq!(param_of(with_url).as_deref(), Some("tools[0].server_url"));
        assert_eq!(param_of(json!([{"type":"mcp","server_label":"unknown"}])).as_deref(), Some("tools[0].server_url"));
        // A server whose variable is unset is declared; its listing fails with the setting's name.
        assert!(ToolSet::build(vec![json!({"type":"mcp","server_label":"broken"})], None, &registry(), &UpstreamCaps::default()).is_ok());
    }

    #[test]
    fn tool_choice_names_mcp_servers_and_tools() {
        let decl = json!({"type":"mcp","server_label":"internal"});
        let choice = |c: Value| ToolSet::build(vec![decl.clone()], Some(&c), &registry(), &UpstreamCaps::default()).map_err(|e| e.param);
        assert!(choice(json!({"type":"mcp","server_label":"internal","name":"echo"})).is_ok());
        assert!(choice(json!({"type":"allowed_tools","mode":"required","tools":[{"type":"mcp","server_label":"internal"}]})).is_ok());
        assert_eq!(choice(json!({"type":"mcp","server_label":"other"})).err().flatten().as_deref(), Some("tool_choice"));
        assert_eq!(choice(json!({"type":"mcp"})).err().flatten().as_deref(), Some("tool_choice"));
        let listed: std::collections::HashMap<String, Vec<(String, String)>> =
            [("internal".to_string(), vec![("echo".to_string(), "internal__echo".to_string()), ("slow".to_string(), "internal__slow".to_string())])].into_iter().collect();
        use crate::tools::choice::{expand, Deferred};
        use crate::upstream::ToolChoice;
        assert_eq!(expand(&Deferred::Mcp { label: "internal".into(), name: Some("echo".into()) }, &listed), ToolChoice::Named("internal__echo".into()));
        assert_eq!(expand(&Deferred::Mcp { label: "internal".into(), name: Some("nope".into()) }, &listed), ToolChoice::Auto);
        assert_eq!(
            expand(&Deferred::Allowed { required: false, names: vec!["f".into()], servers: vec![("internal".into(), None)] }, &listed),
            ToolChoice::Allowed { required: false, names: vec!["f".into(), "internal__echo".into(), "internal__slow".into()] }
        );
    }
}
