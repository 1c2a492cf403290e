//! MCP tools against a real MCP server, the official Rust SDK's (`rmcp`) over streamable HTTP:
//! listing, calls (ok, the tool's error, a schema error the server never sees, a timeout), a
//! server that is down, and the URL policy (issue 18).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use scripted_upstream::Script;
use serde_json::{json, Value};

use crate::common::{error_of, Harness};

/// The test server: `echo` (read-only), `slow`, `fail` (an `isError` result) and `nested`
/// (a nested schema); counts the calls it gets.
#[derive(Clone, Default)]
struct Demo {
    calls: Arc<AtomicUsize>,
}

fn schema(v: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

impl ServerHandler for Demo {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        info
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let mut echo = Tool::new("echo", "Echoes the text", schema(text.clone()));
        echo.annotations = Some(ToolAnnotations::default().read_only(true));
        let nested = json!({"type": "object", "required": ["config"], "properties": {"config": {"type": "object", "required": ["inner"],
            "properties": {"inner": {"type": "object", "required": ["ids"], "properties": {"ids": {"type": "array", "items": {"type": "integer"}}}}}}}});
        Ok(ListToolsResult::with_all_items(vec![
            echo,
            Tool::new("slow", "Sleeps", schema(json!({"type": "object", "properties": {"ms": {"type": "integer"}}}))),
            Tool::new("fail", "Fails", schema(text)),
            Tool::new("nested", "Takes a nested object", schema(nested)),
        ]))
    }

    async fn call_tool(&self, req: CallToolRequestParams, _: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let args = Value::Object(req.arguments.clone().unwrap_or_default());
        let result = match req.name.as_ref() {
            "echo" => CallToolResult::success(vec![ContentBlock::text(args["text"].as_str().unwrap_or_default().to_string())]),
            "slow" => {
                tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(2000))).await;
                CallToolResult::success(vec![ContentBlock::text("slept")])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text(format!("failed: {}", args["text"].as_str().unwrap_or_default()))]),
            "nested" => CallToolResult::success(vec![ContentBlock::text(format!("ids {}", args["config"]["inner"]["ids"]))]),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(CallToolResponse::Complete(result))
    }
}

/// Serves [`Demo`] on 127.0.0.1 (a free port): its `/mcp` URL and its call counter.
pub(crate) async fn mcp_server() -> (String, Arc<AtomicUsize>) {
    let demo = Demo::default();
    let calls = demo.calls.clone();
    let service = StreamableHttpService::new(move || Ok(demo.clone()), Arc::new(LocalSessionManager::default()), StreamableHttpServerConfig::default());
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (format!("http://{addr}/mcp"), calls)
}

pub(crate) async fn gateway(call_timeout_ms: u64) -> Harness {
    Harness::start_with(move |c| {
        c.mcp.allowed_urls = vec!["http://127.0.0.1:".into()];
        c.mcp.allow_private = true;
        c.mcp.call_timeout_ms = call_timeout_ms;
    })
    .await
}

fn decl(url: &str) -> Value {
    json!({"type": "mcp", "server_label": "demo", "server_url": url, "require_approval": "never"})
}

fn items<'a>(response: &'a Value, kind: &str) -> Vec<&'a Value> {
    response["output"].as_array().unwrap().iter().filter(|i| i["type"] == kind).collect()
}

#[tokio::test]
async fn listed_tools_are_called_and_shown_as_mcp_items() {
    let (url, calls) = mcp_server().await;
    let h = gateway(30_000).await;
    h.upstream.push(Script::tool_call("demo__echo", r#"{"text":"hello"}"#));
    h.upstream.push(Script::text(&["done"]));
    let s = h.stream(json!({"model": "m", "input": "hi", "tools": [decl(&url)]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let mcp: Vec<String> = s.types().into_iter().filter(|t| t.contains("mcp")).collect();
    assert_eq!(
        mcp,
        [
            "response.mcp_list_tools.in_progress",
            "response.mcp_list_tools.completed",
            "response.mcp_call.in_progress",
            "response.mcp_call_arguments.delta",
            "response.mcp_call_arguments.done",
            "response.mcp_call.completed"
        ]
    );
    let list = items(&s.response, "mcp_list_tools");
    let names: Vec<&str> = list[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "slow", "fail", "nested"]);
    assert_eq!(list[0]["tools"][0]["annotations"]["readOnlyHint"], true);
    let call = items(&s.response, "mcp_call")[0];
    assert_eq!((call["name"].as_str(), call["status"].as_str(), call["output"].as_str()), (Some("echo"), Some("completed"), Some("hello")));
    assert_eq!(call["error"], Value::Null);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // The model saw each tool as a function with the server's schema, and read the output
    // fenced as untrusted data.
    let reqs = h.upstream.requests();
    let offered: Vec<&str> = reqs[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(offered, ["demo__echo", "demo__slow", "demo__fail", "demo__nested"]);
    assert_eq!(reqs[0].body["tools"][3]["function"]["parameters"]["properties"]["config"]["required"], json!(["inner"]));
    let result = reqs[1].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap()["content"].to_string();
    assert!(result.contains("<untrusted_mcp_output>") && result.contains("hello"), "{result}");
}

#[tokio::test]
async fn tool_errors_schema_errors_and_timeouts_are_for_the_model() {
    let (url, calls) = mcp_server().await;
    let h = gateway(300).await;
    h.upstream.push(Script::tool_call("demo__fail", r#"{"text":"nope"}"#));
    h.upstream.push(Script::tool_call("demo__nested", r#"{"config":{"inner":{"ids":["x"]}}}"#));
    h.upstream.push(Script::tool_call("demo__slow", r#"{"ms":3000}"#));
    h.upstream.push(Script::text(&["done"]));
    let (status, body) = h.post(json!({"model": "m", "input": "hi", "tools": [decl(&url)]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed");
    let calls_out = items(&body, "mcp_call");
    assert_eq!(calls_out.len(), 2, "the call with invalid arguments is not made: {body}");
    assert_eq!((calls_out[0]["name"].as_str(), calls_out[0]["status"].as_str()), (Some("fail"), Some("failed")));
    assert_eq!(calls_out[0]["error"]["type"], "mcp_tool_execution_error");
    assert!(calls_out[0]["error"]["content"].to_string().contains("failed: nope"));
    assert_eq!(calls_out[0]["output"], Value::Null);
    assert_eq!((calls_out[1]["name"].as_str(), calls_out[1]["status"].as_str()), (Some("slow"), Some("failed")));
    assert_eq!(calls_out[1]["error"]["type"], "mcp_protocol_error");
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the server got fail and slow, not the invalid nested call");
    let reqs = h.upstream.requests();
    let tool_text = |i: usize| reqs[i].body["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].to_string();
    assert!(tool_text(1).contains("failed: nope"), "{}", tool_text(1));
    assert!(tool_text(2).contains("do not match its schema"), "{}", tool_text(2));
    assert!(tool_text(3).contains("timed out"), "{}", tool_text(3));
}

#[tokio::test]
async fn a_server_that_is_down_is_a_failed_listing_and_the_turn_goes_on() {
    let h = gateway(30_000).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    h.upstream.push(Script::text(&["no tools"]));
    let s = h.stream(json!({"model": "m", "input": "hi", "tools": [decl(&format!("http://{closed}/mcp"))]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    assert!(s.types().contains(&"response.mcp_list_tools.failed".to_string()));
    let list = items(&s.response, "mcp_list_tools")[0];
    assert!(list["error"].as_str().is_some_and(|e| !e.is_empty()), "{list}");
    assert_eq!(list["tools"], json!([]));
    assert!(h.upstream.requests()[0].body.get("tools").is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)), "nothing offered");
    // A query value of the URL (a token, often) is redacted from the item's error.
    h.upstream.push(Script::text(&["no tools"]));
    let (_, body) = h.post(json!({"model": "m", "input": "hi", "tools": [decl(&format!("http://{closed}/mcp?key=SECRETQ123"))]})).await;
    let error = items(&body, "mcp_list_tools")[0]["error"].as_str().unwrap_or_default().to_string();
    assert!(!error.is_empty() && !error.contains("SECRETQ123"), "{error}");
    assert!(!error.contains("rmcp::"), "the cause, not the SDK's type names: {error}");
}

#[tokio::test]
async fn servers_outside_the_policy_are_refused_before_any_model_call() {
    let (url, calls) = mcp_server().await;
    // Allowed by URL but private, and private addresses are not allowed.
    let h = Harness::start_with(|c| c.mcp.allowed_urls = vec!["http://127.0.0.1:".into()]).await;
    let (status, body) = h.post(json!({"model": "m", "input": "hi", "tools": [decl(&url)]})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_of(&body)["param"], "tools[0].server_url");
    assert!(h.upstream.requests().is_empty());
    // Not allowed at all (the default).
    let h = Harness::start_with(|_| {}).await;
    let (status, body) = h.post(json!({"model": "m", "input": "hi", "tools": [decl(&url)]})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_replayed_mcp_call_is_the_call_and_the_result_the_model_read() {
    let (url, _) = mcp_server().await;
    let h = gateway(30_000).await;
    h.upstream.push(Script::text(&["ok"]));
    let input = json!([
        {"role": "user", "content": "echo earlier"},
        {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "demo", "tools": [], "error": null},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "demo", "name": "echo", "arguments": "{\"text\":\"earlier\"}",
         "output": "earlier", "error": null, "status": "completed"},
        {"role": "user", "content": "and now?"}
    ]);
    let (status, body) = h.post(json!({"model": "m", "input": input, "tools": [decl(&url)], "store": false})).await;
    assert_eq!(status, 200, "{body}");
    let messages = h.upstream.requests()[0].body["messages"].as_array().unwrap().clone();
    let call = messages.iter().find(|m| m["role"] == "assistant").expect("the replayed call");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "demo__echo");
    assert_eq!(call["tool_calls"][0]["function"]["arguments"], "{\"text\":\"earlier\"}");
    let result = messages.iter().find(|m| m["role"] == "tool").expect("its result")["content"].to_string();
    assert!(result.contains("<untrusted_mcp_output>") && result.contains("earlier"), "{result}");
}

fn approval_decl(url: &str, require_approval: Value) -> Value {
    let mut d = decl(url);
    d["require_approval"] = require_approval;
    if d["require_approval"].is_null() {
        d.as_object_mut().unwrap().remove("require_approval");
    }
    d
}

fn types_of(response: &Value) -> Vec<String> {
    response["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap_or_default().to_string()).collect()
}

/// The tool messages the upstream got in request `n`.
fn tool_messages(h: &Harness, n: usize) -> Vec<String> {
    h.upstream.requests()[n].body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").map(|m| m["content"].to_string()).collect()
}

#[tokio::test]
async fn an_approval_request_ends_the_turn_and_an_approval_runs_the_call_once() {
    let (url, calls) = mcp_server().await;
    let h = gateway(30_000).await;
    h.upstream.push(Script::tool_call("demo__echo", r#"{"text":"approved text"}"#));
    // require_approval omitted: "always", as at OpenAI.
    let tools = json!([approval_decl(&url, Value::Null)]);
    let (status, first) = h.post(json!({"model": "m", "input": "echo it", "tools": tools})).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "completed");
    assert_eq!(types_of(&first), ["mcp_list_tools", "mcp_approval_request"]);
    let request = items(&first, "mcp_approval_request")[0];
    let id = request["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("mcpr_"), "{id}");
    assert_eq!((request["server_label"].as_str(), request["name"].as_str()), (Some("demo"), Some("echo")));
    assert_eq!(request["arguments"], r#"{"text":"approved text"}"#);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "nothing runs before the approval");

    h.upstream.push(Script::text(&["echoed"]));
    let answer = json!([{"type": "mcp_approval_response", "approval_request_id": id, "approve": true}]);
    let s = h.stream(json!({"model": "m", "previous_response_id": first["id"], "input": answer, "tools": tools})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    assert_eq!(types_of(&s.response), ["mcp_call", "message"], "the history's listing is reused: no new mcp_list_tools");
    let call = items(&s.response, "mcp_call")[0];
    assert_eq!((call["approval_request_id"].as_str(), call["output"].as_str(), call["status"].as_str()), (Some(id.as_str()), Some("approved text"), Some("completed")));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(tool_messages(&h, 1).iter().any(|m| m.contains("approved text")), "the model read the approved call's output");

    // The same answer again, from the same response (a retried request): it does not run again.
    let (status, retried) = h.post(json!({"model": "m", "previous_response_id": first["id"], "input": answer, "tools": tools})).await;
    assert_eq!(status, 400, "{retried}");
    assert_eq!(error_of(&retried)["param"], "input[0].approval_request_id");
    // The same answer again, on the turn that ran it: already answered.
    let (status, again) = h.post(json!({"model": "m", "previous_response_id": s.response["id"], "input": answer, "tools": tools})).await;
    assert_eq!(status, 400, "{again}");
    assert_eq!(error_of(&again)["param"], "input[0].approval_request_id");
    let unknown = json!([{"type": "mcp_approval_response", "approval_request_id": "mcpr_nope", "approve": true}]);
    let (status, body) = h.post(json!({"model": "m", "previous_response_id": first["id"], "input": unknown, "tools": tools})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_of(&body)["param"], "input[0].approval_request_id");
    let not_bool = json!([{"type": "mcp_approval_response", "approval_request_id": id, "approve": "yes"}]);
    let (status, body) = h.post(json!({"model": "m", "previous_response_id": first["id"], "input": not_bool, "tools": tools})).await;
    assert_eq!((status, error_of(&body)["param"].as_str(), error_of(&body)["code"].as_str()), (400, Some("input[0].approve"), Some("invalid_type")));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "no refused answer ran anything");
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_is_told_with_replayed_items() {
    let (url, calls) = mcp_server().await;
    let h = gateway(30_000).await;
    h.upstream.push(Script::tool_call("demo__echo", r#"{"text":"secret plan"}"#));
    let tools = json!([approval_decl(&url, json!("always"))]);
    let user = json!({"role": "user", "content": "echo it"});
    let (_, first) = h.post(json!({"model": "m", "input": [user], "tools": tools, "store": false})).await;
    let id = items(&first, "mcp_approval_request")[0]["id"].as_str().unwrap().to_string();
    // Stateless: the client replays the output items, then its answer.
    let mut input = vec![user];
    input.extend(first["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"type": "mcp_approval_response", "approval_request_id": id, "approve": false, "reason": "not now"}));
    h.upstream.push(Script::text(&["ok, I will not"]));
    let (status, second) = h.post(json!({"model": "m", "input": input, "tools": tools, "store": false})).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(types_of(&second), ["message"], "no listing again, no call");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let told = tool_messages(&h, 1);
    assert!(told.len() == 1 && told[0].contains("did not approve") && told[0].contains("not now"), "{told:?}");
}

#[tokio::test]
async fn a_mixed_round_runs_gateway_calls_first_then_surfaces_client_calls_and_approvals() {
    let (url, calls) = mcp_server().await;
    let h = gateway(30_000).await;
    // echo needs approval; nested does not.
    let tools = json!([
        approval_decl(&url, json!({"always": {"tool_names": ["echo"]}, "never": {}})),
        {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
    ]);
    h.upstream.push(
        Script::tool_call("demo__echo", r#"{"text":"needs ok"}"#)
            .with_tool_call("demo__nested", r#"{"config":{"inner":{"ids":[1,2]}}}"#)
            .with_tool_call("lookup", "{}"),
    );
    let (_, first) = h.post(json!({"model": "m", "input": "go", "tools": tools})).await;
    let kinds = types_of(&first);
    assert_eq!(kinds.iter().filter(|k| *k == "mcp_call").count(), 1, "{kinds:?}");
    let after = |k: &str| kinds.iter().position(|x| x == k).unwrap();
    assert!(after("mcp_call") < after("mcp_approval_request"), "gateway work first: {kinds:?}");
    assert!(kinds.contains(&"function_call".to_string()), "{kinds:?}");
    assert_eq!(items(&first, "mcp_call")[0]["output"], "ids [1,2]");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "only the call without approval ran");
    let id = items(&first, "mcp_approval_request")[0]["id"].clone();
    let call_id = items(&first, "function_call")[0]["call_id"].clone();

    h.upstream.push(Script::text(&["all done"]));
    let input = json!([
        {"type": "function_call_output", "call_id": call_id, "output": "looked up"},
        {"type": "mcp_approval_response", "approval_request_id": id, "approve": true}
    ]);
    let (status, second) = h.post(json!({"model": "m", "previous_response_id": first["id"], "input": input, "tools": tools})).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(types_of(&second), ["mcp_call", "message"]);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let told = tool_messages(&h, 1);
    assert_eq!(told.len(), 3, "every call of the round has its result: {told:?}");
    assert!(told.iter().any(|m| m.contains("needs ok")) && told.iter().any(|m| m.contains("looked up")) && told.iter().any(|m| m.contains("ids [1,2]")), "{told:?}");
}

#[tokio::test]
async fn tool_choice_forces_an_mcp_tool_by_label_and_name() {
    let (url, _) = mcp_server().await;
    let h = gateway(30_000).await;
    h.upstream.push(Script::tool_call("demo__nested", r#"{"config":{"inner":{"ids":[3]}}}"#));
    h.upstream.push(Script::text(&["ok"]));
    let choice = json!({"type": "mcp", "server_label": "demo", "name": "nested"});
    let (status, body) = h.post(json!({"model": "m", "input": "go", "tools": [decl(&url)], "tool_choice": choice})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tool_choice"], choice);
    let sent = &h.upstream.requests()[0].body;
    assert_eq!(sent["tool_choice"]["function"]["name"], "demo__nested", "{sent}");
    // allowed_tools with the server: only its tools are offered.
    h.upstream.push(Script::text(&["ok"]));
    let allowed = json!({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "mcp", "server_label": "demo", "name": "echo"}]});
    let fun = json!({"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}});
    let (status, body) = h.post(json!({"model": "m", "input": "go", "tools": [decl(&url), fun], "tool_choice": allowed})).await;
    assert_eq!(status, 200, "{body}");
    let offered: Vec<String> = h.upstream.requests()[2].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(offered, ["demo__echo"]);
    let (status, body) = h.post(json!({"model": "m", "input": "go", "tools": [decl(&url)], "tool_choice": {"type": "mcp", "server_label": "other"}})).await;
    assert_eq!((status, error_of(&body)["param"].as_str()), (400, Some("tool_choice")));
}

#[tokio::test]
async fn an_operator_server_is_named_by_label_and_its_url_is_never_shown() {
    let (url, calls) = mcp_server().await;
    let server = responses_gateway::config::mcp::McpServerConfig { url: url.clone(), ..Default::default() };
    // A server that is down, its URL holding a key: neither shows in the listing's error.
    let down = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down_port = down.local_addr().unwrap().port().to_string();
    drop(down);
    let gone = responses_gateway::config::mcp::McpServerConfig { url: format!("http://127.0.0.1:{down_port}/mcp?key=k3y-value"), ..Default::default() };
    // No allowed_urls, no allow_private: the operator's server is trusted.
    let h = Harness::start_with(move |c| {
        c.mcp.servers.insert("ops".into(), server);
        c.mcp.servers.insert("gone".into(), gone);
    })
    .await;
    h.upstream.push(Script::tool_call("ops__echo", r#"{"text":"from ops"}"#));
    h.upstream.push(Script::text(&["done"]));
    let tools = json!([{"type": "mcp", "server_label": "ops", "require_approval": "never"}]);
    let (status, body) = h.post(json!({"model": "m", "input": "go", "tools": tools})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(items(&body, "mcp_call")[0]["output"], "from ops");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    assert!(!body.to_string().contains(port), "the operator's URL is not shown: {body}");
    h.upstream.push(Script::text(&["without it"]));
    let (status, body) = h.post(json!({"model": "m", "input": "go", "tools": [{"type": "mcp", "server_label": "gone"}]})).await;
    assert_eq!(status, 200, "{body}");
    let error = items(&body, "mcp_list_tools")[0]["error"].as_str().unwrap_or_default().to_string();
    assert!(!error.is_empty() && !error.contains(&down_port) && !error.contains("k3y-value") && !error.contains("127.0.0.1"), "{error}");
    let with_url = json!([{"type": "mcp", "server_label": "ops", "server_url": url}]);
    let (status, body) = h.post(json!({"model": "m", "input": "go", "tools": with_url})).await;
    assert_eq!((status, error_of(&body)["param"].as_str()), (400, Some("tools[0].server_url")));
}

#[tokio::test]
async fn a_denied_or_answered_request_is_never_approved_later_from_an_earlier_response() {
    let (url, calls) = mcp_server().await;
    let h = gateway(30_000).await;
    let tools = json!([approval_decl(&url, Value::Null)]);
    h.upstream.push(Script::tool_call("demo__echo", r#"{"text":"no"}"#));
    let (_, first) = h.post(json!({"model": "m", "input": "echo it", "tools": tools})).await;
    let id = items(&first, "mcp_approval_request")[0]["id"].clone();
    let answer = |approve: bool| json!([{"type": "mcp_approval_response", "approval_request_id": id, "approve": approve}]);
    h.upstream.push(Script::text(&["fine"]));
    let (status, denied) = h.post(json!({"model": "m", "previous_response_id": first["id"], "input": answer(false), "tools": tools})).await;
    assert_eq!(status, 200, "{denied}");
    // Forking from the request's response with an approval: refused, nothing runs.
    let (status, body) = h.post(json!({"model": "m", "previous_response_id": first["id"], "input": answer(true), "tools": tools})).await;
    assert_eq!((status, error_of(&body)["param"].as_str()), (400, Some("input[0].approval_request_id")), "{body}");
    // A background answer is refused when queued, not failed later.
    let (status, body) = h.post(json!({"model": "m", "previous_response_id": first["id"], "input": answer(true), "tools": tools, "background": true})).await;
    assert_eq!((status, error_of(&body)["param"].as_str()), (400, Some("input[0].approval_request_id")), "{body}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}
