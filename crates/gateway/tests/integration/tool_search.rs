//! Deferred tools and `tool_search` (issue 31): what the model sees before and after a
//! search, the `tool_search_call` / `tool_search_output` items and their events, loading on
//! continuation (stored and replayed), a deferred MCP server listed only when searched,
//! client execution, a call that skips the search, a search that fails, the 400s; and the
//! round trip again on an upstream `/v1/responses`.

use responses_gateway::config::UpstreamApiKind;
use scripted_upstream::Script;
use serde_json::{json, Value};

use crate::common::{error_of, Harness};
use crate::mcp::{gateway, mcp_server};

/// Forty functions would do; four make the point: two deferred in a namespace, one
/// deferred on its own, one declared as usual.
fn tools() -> Value {
    json!([
        {"type": "function", "name": "ping", "description": "Always there."},
        {"type": "namespace", "name": "crm", "description": "Customer records: find and update customers.", "tools": [
            {"type": "function", "name": "find_customer", "description": "Find a customer by email.", "defer_loading": true,
             "parameters": {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}},
            {"type": "function", "name": "delete_customer", "description": "Delete a customer.", "defer_loading": true}
        ]},
        {"type": "function", "name": "get_weather", "description": "Current weather for a city.", "defer_loading": true,
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
        {"type": "tool_search"}
    ])
}

/// The names of the tools declared upstream, on either upstream API (a chat function's
/// name is under `function`, a Responses function's at the top).
fn offered(body: &Value) -> Vec<String> {
    let name = |t: &Value| t["function"]["name"].as_str().or(t["name"].as_str()).unwrap().to_string();
    body["tools"].as_array().map(|t| t.iter().map(name).collect()).unwrap_or_default()
}

fn types_of(response: &Value) -> Vec<String> {
    response["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap().to_string()).collect()
}

fn search(query: &str) -> Script {
    Script::tool_call("tool_search", json!({"query": query}).to_string())
}

#[tokio::test]
async fn a_search_loads_the_tools_it_finds_for_the_next_round_and_on_continuation() {
    let h = Harness::start().await;
    h.upstream.push(search("find a customer by email"));
    h.upstream.push(Script::tool_call("crm__find_customer", r#"{"email":"a@b.c"}"#));
    let s = h.stream(json!({"model": "m", "input": "who is a@b.c?", "tools": tools()})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    assert_eq!(types_of(&s.response), ["tool_search_call", "tool_search_output", "function_call"]);
    // The items as the contract's capture has them: added in progress, done completed.
    let added: Vec<&Value> = s.of_type("response.output_item.added");
    assert_eq!(added[0]["item"]["arguments"], json!({}));
    assert_eq!((added[0]["item"]["status"].as_str(), added[0]["item"]["execution"].as_str()), (Some("in_progress"), Some("server")));
    assert_eq!(added[0]["item"]["call_id"], Value::Null);
    assert!(added[0]["item"]["id"].as_str().unwrap().starts_with("tsc_"));
    let out = &s.response["output"];
    assert_eq!(out[0]["arguments"], json!({"query": "find a customer by email"}));
    assert_eq!(out[0]["status"], "completed");
    assert!(out[1]["id"].as_str().unwrap().starts_with("tso_"));
    assert_eq!((out[1]["status"].as_str(), out[1]["execution"].as_str()), (Some("completed"), Some("server")));
    let loaded = out[1]["tools"].as_array().unwrap();
    assert_eq!(loaded[0]["type"], "namespace");
    assert_eq!(loaded[0]["name"], "crm");
    assert_eq!(loaded[0]["tools"][0]["name"], "find_customer");
    assert_eq!((out[2]["name"].as_str(), out[2]["namespace"].as_str()), (Some("find_customer"), Some("crm")));
    // Round 1: the deferred tools are not declared; the search's description names the
    // namespace and the deferred function, nothing of the namespace's members.
    let reqs = h.upstream.requests();
    assert_eq!(offered(&reqs[0].body), ["tool_search", "ping"]);
    let about = reqs[0].body["tools"][0]["function"]["description"].as_str().unwrap();
    assert!(about.contains("namespace `crm`: Customer records") && about.contains("function `get_weather`: Current weather"), "{about}");
    assert!(!about.contains("find_customer"), "{about}");
    // Round 2: the loaded tool comes last, the search's result reads as a tool message.
    assert_eq!(offered(&reqs[1].body), ["tool_search", "ping", "crm__find_customer"]);
    let tool_msg = reqs[1].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert!(tool_msg["content"].as_str().unwrap().contains("crm__find_customer"));
    // The non-streamed answer is the same fold.
    assert_eq!(s.response["tools"][1]["tools"][0]["defer_loading"], true, "declarations echoed as given");

    // previous_response_id: still loaded.
    let id = s.response["id"].as_str().unwrap();
    h.upstream.push(Script::text(&["ok"]));
    let (st, b) = h.post(json!({"model": "m", "previous_response_id": id, "tools": tools(),
        "input": [{"type": "function_call_output", "call_id": out[2]["call_id"], "output": "Ada"}]})).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(offered(&h.upstream.requests()[2].body), ["tool_search", "ping", "crm__find_customer"]);

    // store:false replay of the items (as Codex does): loaded again from tool_search_output.
    let mut input = vec![json!({"role": "user", "content": "who is a@b.c?"})];
    input.extend(out.as_array().unwrap().iter().cloned());
    input.push(json!({"type": "function_call_output", "call_id": out[2]["call_id"], "output": "Ada"}));
    h.upstream.push(Script::text(&["ok"]));
    let (st, b) = h.post(json!({"model": "m", "store": false, "tools": tools(), "input": input})).await;
    assert_eq!(st, 200, "{b}");
    let body = &h.upstream.requests()[3].body;
    assert_eq!(offered(body), ["tool_search", "ping", "crm__find_customer"]);
    let calls: Vec<&str> = body["messages"].as_array().unwrap().iter().flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["function"]["name"].as_str().unwrap().to_string().leak() as &str).collect();
    assert_eq!(calls, ["tool_search", "crm__find_customer"], "the search replays as the model's call");
    let roles: Vec<&str> = body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "tool"], "two rounds, as the model made them");
}

#[tokio::test]
async fn a_call_that_skips_the_search_loads_the_tool() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("get_weather", r#"{"city":"Paris"}"#));
    let (st, b) = h.post(json!({"model": "m", "input": "weather?", "tools": tools()})).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(types_of(&b), ["function_call"]);
    assert_eq!(b["output"][0]["name"], "get_weather");
    assert_eq!(b["output"][0]["namespace"], "get_weather", "a deferred top-level function loads as a namespace of its name (W3.4)");
    h.upstream.push(Script::text(&["sunny"]));
    let (st, b2) = h.post(json!({"model": "m", "previous_response_id": b["id"], "tools": tools(),
        "input": [{"type": "function_call_output", "call_id": b["output"][0]["call_id"], "output": "sunny"}]})).await;
    assert_eq!(st, 200, "{b2}");
    assert_eq!(offered(&h.upstream.requests()[1].body), ["tool_search", "ping", "get_weather"]);
    // store:false replay of the call with its namespace: the call of get_weather, loaded.
    h.upstream.push(Script::text(&["sunny"]));
    let input = json!([{"role": "user", "content": "weather?"}, b["output"][0],
        {"type": "function_call_output", "call_id": b["output"][0]["call_id"], "output": "sunny"}]);
    let (st, b3) = h.post(json!({"model": "m", "store": false, "tools": tools(), "input": input})).await;
    assert_eq!(st, 200, "{b3}");
    let body = &h.upstream.requests()[2].body;
    assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(offered(body), ["tool_search", "ping", "get_weather"]);
}

#[tokio::test]
async fn a_deferred_mcp_server_is_listed_only_when_searched() {
    let (url, calls) = mcp_server().await;
    let h = gateway(30_000).await;
    let tools = json!([
        {"type": "mcp", "server_label": "demo", "server_description": "Echo and sleep utilities.", "server_url": url, "require_approval": "never", "defer_loading": true},
        {"type": "tool_search"}
    ]);
    h.upstream.push(Script::text(&["no tools needed"]));
    let (st, b) = h.post(json!({"model": "m", "input": "hi", "tools": tools})).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(types_of(&b), ["message"], "not listed: nothing searched");
    let about = h.upstream.requests()[0].body["tools"][0]["function"]["description"].as_str().unwrap().to_string();
    assert!(about.contains("MCP server `demo`: Echo and sleep"), "{about}");

    h.upstream.push(search("echo text"));
    h.upstream.push(Script::tool_call("demo__echo", r#"{"text":"hello"}"#));
    h.upstream.push(Script::text(&["done"]));
    let s = h.stream(json!({"model": "m", "input": "echo hello", "tools": tools})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    assert_eq!(types_of(&s.response), ["mcp_list_tools", "tool_search_call", "tool_search_output", "mcp_call", "message"]);
    let loaded = &s.response["output"][2]["tools"][0];
    assert_eq!((loaded["type"].as_str(), loaded["server_label"].as_str()), (Some("mcp"), Some("demo")));
    assert!(loaded["allowed_tools"].as_array().unwrap().contains(&json!("echo")));
    assert_eq!(s.response["output"][3]["output"], "hello");
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    let reqs = h.upstream.requests();
    assert_eq!(offered(&reqs[1].body), ["tool_search"]);
    assert!(offered(&reqs[2].body).contains(&"demo__echo".to_string()));

    // Continued: the history's listing is reused and the loaded tool is offered at once.
    h.upstream.push(Script::text(&["again"]));
    let (st, b) = h.post(json!({"model": "m", "previous_response_id": s.response["id"], "input": "more", "tools": tools})).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(types_of(&b), ["message"]);
    assert!(offered(&h.upstream.requests()[4].body).contains(&"demo__echo".to_string()));
}

#[tokio::test]
async fn a_client_search_is_returned_and_its_output_loads_the_tools() {
    let h = Harness::start().await;
    let tools = json!([
        {"type": "function", "name": "ping"},
        {"type": "tool_search", "execution": "client", "description": "Find project tools.",
         "parameters": {"type": "object", "properties": {"goal": {"type": "string"}}, "required": ["goal"]}}
    ]);
    h.upstream.push(Script::tool_call("tool_search", r#"{"goal":"deploy"}"#));
    let s = h.stream(json!({"model": "m", "input": "deploy it", "tools": tools})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let call = &s.response["output"][0];
    assert_eq!((call["type"].as_str(), call["execution"].as_str()), (Some("tool_search_call"), Some("client")));
    assert_eq!(call["arguments"], json!({"goal": "deploy"}));
    let call_id = call["call_id"].as_str().unwrap().to_string();
    assert_eq!(offered(&h.upstream.requests()[0].body), ["ping", "tool_search"]);
    assert_eq!(h.upstream.requests()[0].body["tools"][1]["function"]["description"], "Find project tools.");

    h.upstream.push(Script::text(&["deploying"]));
    let output = json!({"type": "tool_search_output", "execution": "client", "call_id": call_id, "status": "completed",
        "tools": [{"type": "function", "name": "deploy", "description": "Deploy.", "parameters": {"type": "object", "properties": {}}}]});
    let (st, b) = h.post(json!({"model": "m", "previous_response_id": s.response["id"], "tools": tools, "input": [output]})).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(offered(&h.upstream.requests()[1].body), ["ping", "tool_search", "deploy"]);
}

#[tokio::test]
async fn declarations_that_cannot_work_are_400s_naming_the_field() {
    let h = Harness::start().await;
    let cases = [
        (json!([{"type": "function", "name": "f", "defer_loading": true}]), "tools[0].defer_loading"),
        (json!([{"type": "namespace", "name": "n", "description": "d", "tools": [{"type": "function", "name": "f", "defer_loading": true}]}]), "tools[0].tools[0].defer_loading"),
        (json!([{"type": "function", "name": "f"}, {"type": "tool_search"}]), "tools[1].type"),
        (json!([{"type": "function", "name": "f", "defer_loading": true}, {"type": "tool_search"}, {"type": "tool_search"}]), "tools[2].type"),
        (json!([{"type": "function", "name": "f", "defer_loading": "yes"}, {"type": "tool_search"}]), "tools[0].defer_loading"),
        (json!([{"type": "tool_search", "execution": "elsewhere"}]), "tools[0].execution"),
    ];
    for (tools, param) in cases {
        let (st, b) = h.post(json!({"model": "m", "input": "x", "tools": tools})).await;
        assert_eq!(st, 400, "{tools}: {b}");
        assert_eq!(error_of(&b)["param"], param, "{tools}");
    }
    assert!(h.upstream.requests().is_empty());
}

#[tokio::test]
async fn a_search_with_malformed_arguments_is_a_failed_pair_that_replays() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("tool_search", r#"{"query": 5}"#));
    h.upstream.push(Script::text(&["no tools"]));
    let s = h.stream(json!({"model": "m", "input": "who is a@b.c?", "tools": tools()})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let out = &s.response["output"];
    assert_eq!(types_of(&s.response), ["tool_search_call", "tool_search_output", "message"]);
    assert_eq!((out[0]["status"].as_str(), out[0]["execution"].as_str()), (Some("incomplete"), Some("server")));
    assert_eq!(out[0]["arguments"], json!({"query": 5}), "the arguments as the model gave them");
    assert_eq!((out[1]["status"].as_str(), out[1]["tools"].clone()), (Some("incomplete"), json!([])));
    let added = s.of_type("response.output_item.added");
    assert_eq!(added.iter().map(|e| e["item"]["type"].as_str().unwrap()).collect::<Vec<_>>(), ["tool_search_call", "tool_search_output", "message"]);
    // Nothing loaded; the model read the failure as the call's result.
    let reqs = h.upstream.requests();
    assert_eq!(offered(&reqs[1].body), ["tool_search", "ping"]);
    let tool_text = |body: &Value| body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_string();
    let seen = tool_text(&reqs[1].body);
    assert!(seen.starts_with("error: the tool search failed"), "{seen}");

    // store:false replay of the items: the call is answered by its output, as it was.
    let mut input = vec![json!({"role": "user", "content": "who is a@b.c?"})];
    input.extend(out.as_array().unwrap().iter().cloned());
    input.push(json!({"role": "user", "content": "and now?"}));
    h.upstream.push(Script::text(&["ok"]));
    let (st, b) = h.post(json!({"model": "m", "store": false, "tools": tools(), "input": input})).await;
    assert_eq!(st, 200, "{b}");
    let body = &h.upstream.requests()[2].body;
    assert_eq!(tool_text(body), seen, "the replay gives the model what it read");
    assert_eq!(offered(body), ["tool_search", "ping"]);
}

async fn on_responses() -> Harness {
    Harness::start_with(|c| c.upstream.api = UpstreamApiKind::Responses).await
}

/// The kinds of the items of a Responses upstream request's input.
fn input_kinds(body: &Value) -> Vec<String> {
    body["input"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn on_a_responses_upstream_a_search_loads_for_the_next_round_and_on_continuation() {
    let h = on_responses().await;
    h.upstream.push(search("find a customer by email"));
    h.upstream.push(Script::tool_call("crm__find_customer", r#"{"email":"a@b.c"}"#));
    let s = h.stream(json!({"model": "m", "input": "who is a@b.c?", "tools": tools()})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    assert_eq!(types_of(&s.response), ["tool_search_call", "tool_search_output", "function_call"]);
    let out = &s.response["output"];
    assert_eq!(out[0]["arguments"], json!({"query": "find a customer by email"}));
    assert_eq!(out[1]["tools"][0]["name"], "crm");
    assert_eq!((out[2]["name"].as_str(), out[2]["namespace"].as_str()), (Some("find_customer"), Some("crm")));
    let reqs = h.upstream.requests();
    // Round 1: a flat Responses function for the search, nothing deferred declared.
    assert_eq!(offered(&reqs[0].body), ["tool_search", "ping"]);
    assert_eq!(reqs[0].body["tools"][0]["type"], "function");
    // Round 2: the loaded tool last; the search went back as a function call and its output.
    assert_eq!(offered(&reqs[1].body), ["tool_search", "ping", "crm__find_customer"]);
    assert_eq!(input_kinds(&reqs[1].body), ["message", "function_call", "function_call_output"]);
    assert_eq!(reqs[1].body["input"][1]["name"], "tool_search");
    assert!(reqs[1].body["input"][2]["output"].as_str().unwrap().contains("crm__find_customer"));

    // previous_response_id: still loaded.
    h.upstream.push(Script::text(&["ok"]));
    let (st, b) = h.post(json!({"model": "m", "previous_response_id": s.response["id"], "tools": tools(),
        "input": [{"type": "function_call_output", "call_id": out[2]["call_id"], "output": "Ada"}]})).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(offered(&h.upstream.requests()[2].body), ["tool_search", "ping", "crm__find_customer"]);

    // store:false replay of the items: loaded again from tool_search_output.
    let mut input = vec![json!({"role": "user", "content": "who is a@b.c?"})];
    input.extend(out.as_array().unwrap().iter().cloned());
    input.push(json!({"type": "function_call_output", "call_id": out[2]["call_id"], "output": "Ada"}));
    h.upstream.push(Script::text(&["ok"]));
    let (st, b) = h.post(json!({"model": "m", "store": false, "tools": tools(), "input": input})).await;
    assert_eq!(st, 200, "{b}");
    let body = &h.upstream.requests()[3].body;
    assert_eq!(offered(body), ["tool_search", "ping", "crm__find_customer"]);
    assert_eq!(input_kinds(body), ["message", "function_call", "function_call_output", "function_call", "function_call_output"]);
    assert_eq!((body["input"][1]["name"].as_str(), body["input"][3]["name"].as_str()), (Some("tool_search"), Some("crm__find_customer")));
}

#[tokio::test]
async fn on_a_responses_upstream_a_deferred_mcp_server_and_a_failed_search() {
    let (url, calls) = mcp_server().await;
    let h = Harness::start_with(|c| {
        c.upstream.api = UpstreamApiKind::Responses;
        c.mcp.allowed_urls = vec!["http://127.0.0.1:".into()];
        c.mcp.allow_private = true;
    })
    .await;
    let tools = json!([
        {"type": "mcp", "server_label": "demo", "server_description": "Echo and sleep utilities.", "server_url": url, "require_approval": "never", "defer_loading": true},
        {"type": "tool_search"}
    ]);
    h.upstream.push(search("echo text"));
    h.upstream.push(Script::tool_call("demo__echo", r#"{"text":"hello"}"#));
    h.upstream.push(Script::text(&["done"]));
    let (st, b) = h.post(json!({"model": "m", "input": "echo hello", "tools": tools})).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(types_of(&b), ["mcp_list_tools", "tool_search_call", "tool_search_output", "mcp_call", "message"]);
    assert_eq!(b["output"][3]["output"], "hello");
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    let reqs = h.upstream.requests();
    assert_eq!(offered(&reqs[0].body), ["tool_search"]);
    assert!(offered(&reqs[1].body).contains(&"demo__echo".to_string()));

    // A malformed search: the failed pair, and the model reads the failure.
    h.upstream.push(Script::tool_call("tool_search", r#"{"paths": "demo"}"#));
    h.upstream.push(Script::text(&["sorry"]));
    let (st, b) = h.post(json!({"model": "m", "input": "echo again", "tools": tools, "store": false})).await;
    assert_eq!(st, 200, "{b}");
    // The server is listed when a search is called (before its arguments are checked).
    assert_eq!(types_of(&b), ["mcp_list_tools", "tool_search_call", "tool_search_output", "message"]);
    assert_eq!((b["output"][1]["status"].as_str(), b["output"][2]["status"].as_str()), (Some("incomplete"), Some("incomplete")));
    let body = &h.upstream.requests()[4].body;
    assert_eq!(input_kinds(body), ["message", "function_call", "function_call_output"]);
    assert!(body["input"][2]["output"].as_str().unwrap().starts_with("error: the tool search failed"), "{body}");
}

#[tokio::test]
async fn additional_tools_items_declare_their_tools_from_there_on() {
    let h = Harness::start().await;
    let tools = json!([{"type": "function", "name": "ping"}]);
    let input = json!([
        {"role": "user", "content": "deploy it"},
        {"type": "additional_tools", "role": "developer", "tools": [
            {"type": "function", "name": "deploy", "description": "Deploy.", "parameters": {"type": "object", "properties": {"env": {"type": "string"}}}}]}
    ]);
    h.upstream.push(Script::tool_call("deploy", r#"{"env":"prod"}"#));
    let (st, b) = h.post(json!({"model": "m", "input": input, "tools": tools})).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(offered(&h.upstream.requests()[0].body), ["ping", "deploy"]);
    assert_eq!((b["output"][0]["type"].as_str(), b["output"][0]["name"].as_str()), (Some("function_call"), Some("deploy")), "a client tool");
    // Continued: still declared.
    h.upstream.push(Script::text(&["deployed"]));
    let (st, b2) = h.post(json!({"model": "m", "previous_response_id": b["id"], "tools": tools,
        "input": [{"type": "function_call_output", "call_id": b["output"][0]["call_id"], "output": "ok"}]})).await;
    assert_eq!(st, 200, "{b2}");
    assert_eq!(offered(&h.upstream.requests()[1].body), ["ping", "deploy"]);
}
