//! The tool framework and the agent loop: routing by owner, the server-owned
//! `package_version` tool, budgets, rejections and collisions.


use std::sync::atomic::Ordering::SeqCst;

use crate::common::{error_of, items_without_ids, Harness, TestTool};
use scripted_upstream::{Script, ToolCallScript};
use serde_json::{json, Value};

fn pv() -> Value {
    json!({"type":"custom","name":"package_version"})
}

fn weather() -> Value {
    json!({"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}})
}

fn types(resp: &Value) -> Vec<String> {
    resp["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap().to_string()).collect()
}

fn tool_messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").cloned().collect()
}

#[tokio::test]
async fn package_version_runs_inside_one_response() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    h.upstream.push(Script::text(&["axum is installed."]));
    let (status, body) = h.post(json!({"model":"m","input":"axum version?","tools":[pv()]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(types(&body), vec!["custom_tool_call", "custom_tool_call_output", "message"]);
    assert_eq!(body["output"][0]["name"], "package_version");
    assert_eq!(body["output"][0]["input"], "axum");
    assert_eq!(body["output"][1]["call_id"], body["output"][0]["call_id"]);
    assert_eq!(body["output"][1]["status"], "completed");
    assert!(body["output"][1]["output"].as_str().unwrap().starts_with("axum 0.8"), "{}", body["output"][1]);
    assert_eq!(body["output"][2]["phase"], "final_answer");
    assert_eq!(body["usage"]["input_tokens"], 20, "usage sums both upstream calls");
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 2);
    let up_tool = &reqs[0].body["tools"][0]["function"];
    assert_eq!(up_tool["name"], "package_version");
    assert!(up_tool["description"].as_str().unwrap().contains("tokio"), "the server owns the description");
    let tm = tool_messages(&reqs[1].body);
    assert_eq!(tm.len(), 1);
    assert!(tm[0]["content"].as_str().unwrap().starts_with("axum 0.8"));
    // streamed: the same items plus one progress message, all in one lifecycle
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    h.upstream.push(Script::text(&["axum is installed."]));
    let s = h.stream(json!({"model":"m","input":"axum version?","tools":[pv()]})).await;
    assert_eq!(types(&s.response), vec!["message", "custom_tool_call", "custom_tool_call_output", "message"]);
    let progress = &s.response["output"][0];
    assert!(progress["id"].as_str().unwrap().starts_with("msg_progress_"));
    assert_eq!(progress["phase"], "commentary");
    assert_eq!(progress["content"][0]["text"], "Looking up the installed version of axum");
    let mut streamed = s.response.clone();
    streamed["output"].as_array_mut().unwrap().remove(0);
    assert_eq!(items_without_ids(&streamed), items_without_ids(&body), "stream = non-stream, except progress");
    assert_eq!(s.of_type("response.created").len(), 1);
    // the progress message never reaches the model
    let third = &h.upstream.requests()[3].body;
    assert!(!third.to_string().contains("Looking up"), "{third}");
    // replay (store=false clients): the output items rebuild the transcript, progress dropped
    h.upstream.push(Script::text(&["again"]));
    let mut input = vec![json!({"role":"user","content":"axum version?"})];
    input.extend(s.response["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"role":"user","content":"and tokio?"}));
    let (status, _) = h.post(json!({"model":"m","input":input,"tools":[pv()],"store":false})).await;
    assert_eq!(status, 200);
    let msgs = h.upstream.requests()[4].body["messages"].clone();
    let roles: Vec<&str> = msgs.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, vec!["user", "assistant", "tool", "assistant", "user"]);
    assert!(!msgs.to_string().contains("Looking up"));
}

#[tokio::test]
async fn mixed_round_runs_gateway_calls_first_then_returns_client_calls() {
    let h = Harness::start().await;
    h.upstream.push(
        Script::default()
            .with_tool(ToolCallScript::new("package_version", r#"{"input":"tokio"}"#))
            .with_tool(ToolCallScript::new("get_weather", r#"{"city":"Oslo"}"#)),
    );
    let s = h.stream(json!({"model":"m","input":"x","tools":[weather(), pv()]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let t = types(&s.response);
    assert_eq!(t, vec!["message", "custom_tool_call", "custom_tool_call_output", "function_call"], "the model's call order, progress first");
    // replaying in any order gives the tool results in call order
    let call = s.response["output"][3].clone();
    let mut input = vec![json!({"role":"user","content":"x"})];
    input.extend(s.response["output"].as_array().unwrap().iter().skip(1).cloned());
    input.push(json!({"type":"function_call_output","call_id":call["call_id"],"output":"rainy"}));
    h.upstream.push(Script::text(&["ok"]));
    let (status, _) = h.post(json!({"model":"m","input":input,"tools":[weather(), pv()],"store":false})).await;
    assert_eq!(status, 200);
    let msgs = h.upstream.requests()[1].body["messages"].clone();
    let ids: Vec<&Value> = msgs[1]["tool_calls"].as_array().unwrap().iter().map(|c| &c["id"]).collect();
    assert_eq!(msgs[2]["tool_call_id"], *ids[0]);
    assert_eq!(msgs[3]["tool_call_id"], *ids[1]);
    assert_eq!(msgs[3]["content"], "rainy");
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 2, "client calls end the turn (the second request is the replay)");
    let names: Vec<&str> = reqs[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["package_version", "get_weather"], "gateway tools are declared first");
    // the client call is done only after the gateway output was recorded
    let pos = |pred: &dyn Fn(&Value) -> bool| s.events.iter().position(pred).unwrap();
    let gw_out = pos(&|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "custom_tool_call_output");
    let client_done = pos(&|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "function_call");
    assert!(gw_out < client_done);
}

#[tokio::test]
async fn hallucinated_names_and_invalid_arguments_are_answered_not_executed() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("package_versions", r#"{"input":"axum"}"#));
    h.upstream.push(Script::tool_call("package_version", "{not json"));
    h.upstream.push(Script::tool_call("package_version", r#"{"input": 5}"#));
    h.upstream.push(Script::text(&["done"]));
    let s = h.stream(json!({"model":"m","input":"x","tools":[pv()]})).await;
    assert_eq!(types(&s.response), vec!["message"], "rejected calls never appear in output");
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 4);
    let last = tool_messages(&reqs[3].body);
    assert_eq!(last.len(), 3);
    assert!(last[0]["content"].as_str().unwrap().contains("no tool named 'package_versions'"));
    assert!(last[1]["content"].as_str().unwrap().contains("not valid JSON"));
    assert!(last[2]["content"].as_str().unwrap().contains("do not match its schema"));
}

#[tokio::test]
async fn truncated_gateway_call_is_never_executed() {
    let h = Harness::start().await;
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("package_version", r#"{"input":"ax"#)).finish("length"));
    let s = h.stream(json!({"model":"m","input":"x","tools":[pv()]})).await;
    assert_eq!(s.terminal_type(), "response.incomplete");
    assert!(!types(&s.response).iter().any(|t| t.starts_with("custom_tool_call")), "{}", s.response);
    assert_eq!(h.upstream.requests().len(), 1);
}

#[tokio::test]
async fn round_budget_ends_with_an_answer_without_tools() {
    let h = Harness::start_with(|c| c.tools.max_rounds = 3).await;
    for _ in 0..2 {
        h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    }
    h.upstream.push(Script::text(&["final"]));
    let s = h.stream(json!({"model":"m","input":"x","tools":[pv()],"tool_choice":"required"})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2].body.get("tools").is_none(), "the last round goes upstream without tools");
    assert_eq!(s.response["output"].as_array().unwrap().last().unwrap()["content"][0]["text"], "final");
}

#[tokio::test]
async fn forcing_choice_drops_back_to_auto_after_gateway_execution() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"serde"}"#));
    h.upstream.push(Script::text(&["ok"]));
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":[pv()],"tool_choice":{"type":"custom","name":"package_version"}})).await;
    assert_eq!(status, 200, "{body}");
    let reqs = h.upstream.requests();
    assert_eq!(reqs[0].body["tool_choice"], json!({"type":"function","function":{"name":"package_version"}}));
    assert_eq!(reqs[1].body["tool_choice"], "auto");
    assert_eq!(body["tool_choice"], json!({"type":"custom","name":"package_version"}), "echo unchanged");
}

#[tokio::test]
async fn max_tool_calls_caps_gateway_execution() {
    let h = Harness::start().await;
    h.upstream.push(
        Script::default()
            .with_tool(ToolCallScript::new("package_version", r#"{"input":"axum"}"#))
            .with_tool(ToolCallScript::new("package_version", r#"{"input":"tokio"}"#)),
    );
    h.upstream.push(Script::text(&["ok"]));
    let (_, body) = h.post(json!({"model":"m","input":"x","tools":[pv()],"max_tool_calls":1})).await;
    assert_eq!(types(&body), vec!["custom_tool_call", "custom_tool_call_output", "message"]);
    let tm = tool_messages(&h.upstream.requests()[1].body);
    assert_eq!(tm.len(), 2);
    assert!(tm[1]["content"].as_str().unwrap().contains("max_tool_calls"));
}

/// Once `max_tool_calls` gateway calls ran, the next round goes upstream without the
/// gateway's tools (client tools are still declared; with none, no tools at all), so the
/// model answers at once instead of spending rounds on calls answered "max_tool_calls
/// reached". A model that calls a gateway tool anyway gets that answer, not "no tool named".
#[tokio::test]
async fn max_tool_calls_reached_drops_the_gateway_tools() {
    let h = Harness::start().await;
    let names = |body: &Value| -> Vec<String> {
        body["tools"].as_array().map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()).unwrap_or_default()
    };
    for (tools, left) in [(json!([pv(), weather()]), vec!["get_weather".to_string()]), (json!([pv()]), vec![])] {
        h.upstream.reset();
        h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
        h.upstream.push(Script::tool_call("package_version", r#"{"input":"tokio"}"#));
        h.upstream.push(Script::text(&["Both are installed."]));
        let (status, body) = h.post(json!({"model":"m","input":"versions?","tools":tools,"max_tool_calls":2})).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(types(&body), ["custom_tool_call", "custom_tool_call_output", "custom_tool_call", "custom_tool_call_output", "message"]);
        let reqs = h.upstream.requests();
        assert_eq!(reqs.len(), 3, "two rounds of calls, then the answer");
        assert!(names(&reqs[1].body).contains(&"package_version".to_string()), "one call left in the budget");
        assert_eq!(names(&reqs[2].body), left, "the spent gateway tool is not offered: {}", reqs[2].body);
        assert_eq!(reqs[2].body.get("tool_choice").is_some(), !left.is_empty());
    }
    // A model that calls it anyway (it ignores the declarations) is answered as over budget.
    h.upstream.reset();
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"tokio"}"#));
    h.upstream.push(Script::text(&["axum is installed."]));
    let (status, body) = h.post(json!({"model":"m","input":"versions?","tools":[pv()],"max_tool_calls":1})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(types(&body), ["custom_tool_call", "custom_tool_call_output", "message"]);
    let reqs = h.upstream.requests();
    assert_eq!(names(&reqs[1].body), Vec::<String>::new());
    let answer = tool_messages(&reqs[2].body)[1]["content"].as_str().unwrap().to_string();
    assert!(answer.contains("max_tool_calls reached"), "{answer}");
}

#[tokio::test]
async fn gateway_calls_run_in_parallel_within_the_limit() {
    let slow = TestTool::new("slow", 300, false);
    let probe = slow.clone();
    let h = Harness::start_full(|c| c.tools.max_parallel = 2, move |r| r.register(slow)).await;
    let mut script = Script::default();
    for i in 0..4 {
        script = script.with_tool(ToolCallScript::new("slow", format!(r#"{{"input":"{i}"}}"#)));
    }
    h.upstream.push(script);
    h.upstream.push(Script::text(&["ok"]));
    let s = h.stream(json!({"model":"m","input":"x","tools":[{"type":"custom","name":"slow"}]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    assert_eq!(probe.max_running.load(SeqCst), 2, "bounded by tools.max_parallel");
    assert!(s.keepalives >= 1, "keep-alive comments flow while tools run");
    let outs: Vec<&str> = s.response["output"].as_array().unwrap().iter().filter(|i| i["type"] == "custom_tool_call_output").map(|i| i["output"].as_str().unwrap()).collect();
    assert_eq!(outs, vec!["slow:0", "slow:1", "slow:2", "slow:3"]);
}

#[tokio::test]
async fn executor_failure_and_timeout_are_visible_and_the_turn_goes_on() {
    let h = Harness::start_full(
        |c| c.tools.call_timeout_ms = 200,
        |r| {
            r.register(TestTool::new("broken", 0, true));
            r.register(TestTool::new("stuck", 5_000, false));
        },
    )
    .await;
    h.upstream.push(
        Script::default()
            .with_tool(ToolCallScript::new("broken", r#"{"input":"a"}"#))
            .with_tool(ToolCallScript::new("stuck", r#"{"input":"b"}"#)),
    );
    h.upstream.push(Script::text(&["sorry"]));
    let s = h.stream(json!({"model":"m","input":"x","tools":[{"type":"custom","name":"broken"},{"type":"custom","name":"stuck"}]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let outs: Vec<&Value> = s.response["output"].as_array().unwrap().iter().filter(|i| i["type"] == "custom_tool_call_output").collect();
    assert_eq!(outs.len(), 2);
    for o in &outs {
        assert_eq!(o["status"], "incomplete");
        assert!(o["output"].as_str().unwrap().starts_with("error: "), "{o}");
    }
    assert!(outs[1]["output"].as_str().unwrap().contains("timed out"));
    let tm = tool_messages(&h.upstream.requests()[1].body);
    assert!(tm[0]["content"].as_str().unwrap().starts_with("error: "));
}

#[tokio::test]
async fn upstream_failure_in_round_two_fails_after_the_streamed_items() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    h.upstream.push(Script::http_error(503, "overloaded"));
    let s = h.stream(json!({"model":"m","input":"x","tools":[pv()]})).await;
    assert_eq!(s.terminal_type(), "response.failed");
    assert!(types(&s.response).contains(&"custom_tool_call_output".to_string()));
    let (status, _) = {
        h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
        h.upstream.push(Script::http_error(503, "overloaded"));
        h.post(json!({"model":"m","input":"x","tools":[pv()]})).await
    };
    assert_eq!(status, 502);
}

#[tokio::test]
async fn collisions_and_server_tool_rules_are_400s() {
    let h = Harness::start().await;
    let cases = vec![
        (json!([weather(), weather()]), "tools[1].name"),
        (json!([{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function","name":"x"}]}, {"type":"function","name":"ns__x"}]), "tools[1].name"),
        (json!([{"type":"function","name":"package_version"}]), "tools[0].name"),
        (json!([{"type":"custom","name":"package_version","format":{"type":"grammar","syntax":"regex","definition":"a+"}}]), "tools[0].format"),
        // a client function and the gateway's file_search would share the model-visible name
        (json!([{"type":"function","name":"file_search"}, {"type":"file_search","vector_store_ids":["vs_1"]}]), "tools[1].name"),
    ];
    for (tools, param) in cases {
        let (s, b) = h.post(json!({"model":"m","input":"x","tools":tools})).await;
        assert_eq!(s, 400, "{tools}: {b}");
        assert_eq!(error_of(&b)["param"], param, "{tools}");
    }
    // a client description of a server tool is ignored
    h.upstream.push(Script::text(&["ok"]));
    let (s, _) = h.post(json!({"model":"m","input":"x","tools":[{"type":"custom","name":"package_version","description":"EVIL"}]})).await;
    assert_eq!(s, 200);
    assert!(!h.upstream.requests()[0].body.to_string().contains("EVIL"));
    assert!(h.upstream.requests().len() == 1, "400s never call the model");
}

#[tokio::test]
async fn tool_choice_none_and_omission_make_the_server_tool_unavailable() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["no tools"]));
    let (s, _) = h.post(json!({"model":"m","input":"x","tools":[pv()],"tool_choice":"none"})).await;
    assert_eq!(s, 200);
    // A model that calls the declared server tool under "none" anyway: never executed, the
    // model is told so and answers.
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    h.upstream.push(Script::text(&["answer"]));
    let (s, body) = h.post(json!({"model":"m","input":"x","tools":[pv(), weather()],"tool_choice":"none"})).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(types(&body), vec!["message"], "not executed under tool_choice none: {body}");
    let reqs = h.upstream.requests();
    assert!(reqs[1].body.get("tools").is_none() && reqs[2].body.get("tools").is_none());
    let told = reqs[2].body["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool" && m["content"].as_str().unwrap_or_default().contains("no tool named"));
    assert!(told, "{}", reqs[2].body);
    // The same for a client tool: no function_call item is returned under "none".
    h.upstream.push(Script::tool_call("get_weather", r#"{"city":"Paris"}"#));
    h.upstream.push(Script::text(&["answer"]));
    let s = h.stream(json!({"model":"m","input":"x","tools":[weather()],"tool_choice":"none"})).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    assert_eq!(types(&s.response), vec!["message"], "{}", s.raw);
    h.upstream.reset();
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    h.upstream.push(Script::text(&["answer"]));
    let (s, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(s, 200);
    assert_eq!(types(&body), vec!["message"], "an undeclared server tool is never executed");
    let reqs = h.upstream.requests();
    assert!(reqs[0].body.get("tools").is_none() && reqs[1].body.get("tools").is_none());
}

/// `upstream.native_tools = ["custom"]`: custom tools reach the upstream in OpenAI's native
/// Chat Completions form (declaration with its grammar format, tool_choice, replayed calls),
/// and native custom calls (raw `custom.input` fragments) become the same items as before.
#[tokio::test]
async fn native_custom_tools_when_the_upstream_advertises_them() {
    let h = Harness::start_with(|c| c.upstream.native_tools = vec!["custom".into()]).await;
    let grammar = json!({"type":"custom","name":"sql","description":"Run SQL","format":{"type":"grammar","syntax":"regex","definition":"SELECT .+"}});
    // a client custom tool, forced: streamed raw input pieces, with quotes and newlines
    let raw = "SELECT \"name\"\nFROM t -- ünïcode";
    h.upstream.push(Script::default().with_tool(ToolCallScript::custom("sql", raw).fragment_chars(4)));
    let s = h.stream(json!({"model":"m","input":"names?","tools":[grammar.clone(), weather()],"tool_choice":{"type":"custom","name":"sql"}})).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    let call = &s.response["output"][0];
    assert_eq!((call["type"].as_str(), call["name"].as_str(), call["input"].as_str()), (Some("custom_tool_call"), Some("sql"), Some(raw)));
    let deltas: String = s.of_type("response.custom_tool_call_input.delta").iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(deltas, raw, "the raw input streams as it arrives");
    let req = &h.upstream.requests()[0].body;
    assert_eq!(req["tools"][0], json!({"type":"custom","custom":{"name":"sql","description":"Run SQL","format":{"type":"grammar","grammar":{"syntax":"regex","definition":"SELECT .+"}}}}));
    assert_eq!(req["tools"][1]["type"], "function", "functions stay functions");
    assert_eq!(req["tool_choice"], json!({"type":"custom","custom":{"name":"sql"}}));
    // the client answers: the replayed call goes upstream in its native shape
    h.upstream.push(Script::text(&["Two rows."]));
    let cid = call["call_id"].as_str().unwrap();
    let input = json!([{"role":"user","content":"names?"}, call.clone(), {"type":"custom_tool_call_output","call_id":cid,"output":"a, b"}]);
    let (status, body) = h.post(json!({"model":"m","input":input,"tools":[grammar],"store":false})).await;
    assert_eq!(status, 200, "{body}");
    let m = &h.upstream.requests()[1].body["messages"];
    assert_eq!(m[1]["tool_calls"][0], json!({"id":cid,"type":"custom","custom":{"name":"sql","input":raw}}));
    assert_eq!(m[2], json!({"role":"tool","tool_call_id":cid,"content":"a, b"}));
    // a server tool called natively runs on its raw input
    h.upstream.push(Script::default().with_tool(ToolCallScript::custom("package_version", "axum")));
    h.upstream.push(Script::text(&["ok"]));
    let (status, body) = h.post(json!({"model":"m","input":"axum?","tools":[pv()]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(types(&body), vec!["custom_tool_call", "custom_tool_call_output", "message"]);
    assert_eq!(body["output"][0]["input"], "axum");
    assert!(body["output"][1]["output"].as_str().unwrap().starts_with("axum 0.8"), "{}", body["output"][1]);
    assert_eq!(h.upstream.requests()[2].body["tools"][0]["type"], "custom");
}

/// Without the capability (the default) a custom tool is a function upstream; an unknown
/// `native_tools` entry is a configuration error.
#[tokio::test]
async fn custom_tools_are_functions_unless_the_upstream_is_native() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["x"]));
    let (status, _) = h.post(json!({"model":"m","input":"x","tools":[{"type":"custom","name":"sql"}]})).await;
    assert_eq!(status, 200);
    assert_eq!(h.upstream.requests()[0].body["tools"][0]["type"], "function");
    let mut c = responses_gateway::config::Config::default();
    c.upstream.url = Some("http://127.0.0.1:1/v1".into());
    c.upstream.native_tools = vec!["web_search".into()];
    let err = c.validate().unwrap_err().to_string();
    assert!(err.contains("upstream.native_tools") && err.contains("web_search"), "{err}");
}

/// `max_output_tokens` caps the sum over rounds: round 2 gets the remainder, usage sums both,
/// and a round 1 that spent the whole budget ends `incomplete` without a second call.
#[tokio::test]
async fn max_output_tokens_caps_the_sum_over_rounds() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#).usage(10, 30));
    h.upstream.push(Script::text(&["ok"]).usage(10, 7));
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":[pv()],"max_output_tokens":40})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed");
    let reqs = h.upstream.requests();
    assert_eq!(reqs[0].body["max_tokens"], 40);
    assert_eq!(reqs[1].body["max_tokens"], 10, "round 2 gets what round 1 left");
    assert_eq!(body["usage"]["output_tokens"], 37);
    h.upstream.reset();
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#).usage(10, 40));
    h.upstream.push(Script::text(&["never"]));
    let s = h.stream(json!({"model":"m","input":"x","tools":[pv()],"max_output_tokens":40})).await;
    assert_eq!(s.terminal_type(), "response.incomplete", "{}", s.raw);
    assert_eq!(s.response["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(s.response["usage"]["output_tokens"], 40);
    assert_eq!(h.upstream.requests().len(), 1, "no round without budget");
}

/// `limits.default_max_output_tokens` is the cap of a request that names none: the rounds
/// share it as they share a request's own (round 2 gets the remainder), the Response echoes
/// it, and a turn that spends it ends `incomplete`. A request's own value (above the default
/// too) is kept, streamed or stored alike.
#[tokio::test]
async fn the_default_output_cap_applies_when_the_request_names_none() {
    let h = Harness::start_with(|c| c.limits.default_max_output_tokens = 40).await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#).usage(10, 30));
    h.upstream.push(Script::text(&["ok"]).usage(10, 7));
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":[pv()]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["status"].as_str(), body["max_output_tokens"].as_u64()), (Some("completed"), Some(40)));
    let reqs = h.upstream.requests();
    assert_eq!(reqs[0].body["max_tokens"], 40);
    assert_eq!(reqs[1].body["max_tokens"], 10, "round 2 gets what round 1 left");
    let (status, stored) = h.get(&format!("/v1/responses/{}", body["id"].as_str().unwrap())).await;
    assert_eq!((status, stored["max_output_tokens"].as_u64()), (200, Some(40)), "{stored}");
    h.upstream.reset();
    // A run-on answer stops at the default cap (the upstream cut it: `length`).
    h.upstream.push(Script::text(&["and on and on"]).usage(10, 40).finish("length"));
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_eq!(s.terminal_type(), "response.incomplete", "{}", s.raw);
    assert_eq!(s.response["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(s.response["max_output_tokens"], 40);
    assert_eq!(h.upstream.requests()[0].body["max_tokens"], 40);
    h.upstream.reset();
    h.upstream.push(Script::text(&["ok"]).usage(10, 50));
    let (status, body) = h.post(json!({"model":"m","input":"x","max_output_tokens":100})).await;
    assert_eq!((status, body["status"].as_str(), body["max_output_tokens"].as_u64()), (200, Some("completed"), Some(100)), "{body}");
    assert_eq!(h.upstream.requests()[0].body["max_tokens"], 100, "the request's own cap wins");
}

/// A default cap below the API's minimum or above the ceiling is a configuration error.
#[test]
fn a_default_output_cap_out_of_range_is_refused_at_startup() {
    let mut c = responses_gateway::config::Config::default();
    c.upstream.url = Some("http://127.0.0.1:1/v1".into());
    c.limits.default_max_output_tokens = 8;
    let err = c.validate().unwrap_err().to_string();
    assert!(err.contains("limits.default_max_output_tokens"), "{err}");
    c.limits.default_max_output_tokens = 600;
    c.limits.max_output_tokens = 500;
    let err = c.validate().unwrap_err().to_string();
    assert!(err.contains("limits.max_output_tokens (500)"), "{err}");
    c.limits.default_max_output_tokens = 500;
    assert!(c.validate().is_ok());
}

/// A call the model writes in the last round (sent without tools) is neither executed nor
/// returned: no dangling call, the text is the final answer and the turn completes.
#[tokio::test]
async fn a_call_in_the_last_round_is_dropped_and_the_turn_completes() {
    let h = Harness::start_with(|c| c.tools.max_rounds = 2).await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    h.upstream.push(Script::text(&["axum 0.8."]).with_tool_call("package_version", r#"{"input":"tokio"}"#));
    let s = h.stream(json!({"model":"m","input":"x","tools":[pv()]})).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[1].body.get("tools").is_none(), "the last round has no tools");
    assert_eq!(types(&s.response), vec!["message", "custom_tool_call", "custom_tool_call_output", "message"]);
    let out = s.response["output"].as_array().unwrap();
    let calls: Vec<&Value> = out.iter().filter(|i| i["type"] == "custom_tool_call").map(|i| &i["call_id"]).collect();
    let outputs: Vec<&Value> = out.iter().filter(|i| i["type"] == "custom_tool_call_output").map(|i| &i["call_id"]).collect();
    assert_eq!(calls, outputs, "every call has its output");
    assert!(!s.raw.contains("tokio"), "the last round's call is not executed: {}", s.raw);
    let last = out.last().unwrap();
    assert_eq!(last["content"][0]["text"], "axum 0.8.");
    assert_eq!(last["phase"], "final_answer");
}

/// `[server_tools.package_version] allow` is the allowlist the tool answers for and lists.
#[tokio::test]
async fn package_version_allowlist_comes_from_config() {
    let h = Harness::start_with(|c| c.server_tools.package_version.allow = vec!["tokio".into()]).await;
    h.upstream.push(
        Script::default()
            .with_tool(ToolCallScript::new("package_version", r#"{"input":"axum"}"#))
            .with_tool(ToolCallScript::new("package_version", r#"{"input":"tokio"}"#)),
    );
    h.upstream.push(Script::text(&["ok"]));
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":[pv()]})).await;
    assert_eq!(status, 200, "{body}");
    let outs: Vec<&Value> = body["output"].as_array().unwrap().iter().filter(|i| i["type"] == "custom_tool_call_output").collect();
    assert_eq!(outs[0]["status"], "incomplete");
    assert_eq!(outs[0]["output"], "error: unknown component 'axum'. Allowed components: tokio.");
    assert!(outs[1]["output"].as_str().unwrap().starts_with("tokio 1."), "{}", outs[1]);
    let desc = h.upstream.requests()[0].body["tools"][0]["function"]["description"].as_str().unwrap().to_string();
    assert!(desc.contains("tokio") && !desc.contains("axum"), "{desc}");
}

/// `[server_tools.package_version] enabled = false`: the name is no server tool any more, so
/// a `custom` declaration of it is an ordinary client tool (no 400) and is never executed.
#[tokio::test]
async fn disabled_package_version_is_just_a_client_custom_tool() {
    let h = Harness::start_with(|c| c.server_tools.package_version.enabled = false).await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":[pv()]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(types(&body), vec!["custom_tool_call"], "returned to the client, not executed");
    assert_eq!(body["output"][0]["input"], "axum");
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].body["tools"][0]["function"].get("description").is_none(), "no server description: {}", reqs[0].body);
    // nor is the name reserved: a client function may take it
    h.upstream.push(Script::text(&["ok"]));
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":[{"type":"function","name":"package_version"}]})).await;
    assert_eq!(status, 200, "{body}");
}

/// Under `allowed_tools`, a call of a declared tool outside the allowed subset is neither
/// streamed nor returned nor executed: the model is told the tool does not exist and answers.
#[tokio::test]
async fn calls_outside_allowed_tools_are_not_returned() {
    let h = Harness::start().await;
    let time = json!({"type":"function","name":"get_time","parameters":{"type":"object","properties":{}}});
    let choice = json!({"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"},{"type":"custom","name":"package_version"}]});
    for tool in ["get_weather", "package_version"] {
        h.upstream.reset();
        let args = if tool == "get_weather" { r#"{"city":"Paris"}"# } else { r#"{"input":"axum"}"# };
        h.upstream.push(Script::tool_call(tool, args));
        h.upstream.push(Script::text(&["Final."]));
        let allowed_pv = tool == "package_version";
        let decl = if allowed_pv { vec![weather(), time.clone(), pv()] } else { vec![weather(), time.clone()] };
        let choice = if allowed_pv { choice.clone() } else { json!({"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}) };
        let s = h.stream(json!({"model":"m","input":"x","tools":decl,"tool_choice":choice,"store":false})).await;
        assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
        if allowed_pv {
            // package_version is allowed here: it runs.
            assert!(types(&s.response).contains(&"custom_tool_call_output".to_string()), "{}", s.raw);
            continue;
        }
        assert_eq!(types(&s.response), vec!["message"], "{}", s.raw);
        let reqs = h.upstream.requests();
        let offered: Vec<&str> = reqs[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
        assert_eq!(offered, vec!["get_time"]);
        let told = reqs[1].body["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool" && m["content"].as_str().unwrap_or_default().contains("no tool named 'get_weather'"));
        assert!(told, "{}", reqs[1].body);
    }
}

/// A function call that comes without arguments (llama.cpp, for a function without
/// parameters) reaches the client as `{}`, streamed (a delta, so that the deltas add up to
/// the final arguments) and not.
#[tokio::test]
async fn a_function_call_without_arguments_gets_an_empty_object() {
    let h = Harness::start().await;
    let input = json!({"model":"m","input":"weather?","tools":[weather()]});
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("get_weather", "")));
    let (status, body) = h.post(input.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"][0]["type"], "function_call");
    assert_eq!(body["output"][0]["arguments"], "{}");
    let mut streamed = input;
    streamed["stream"] = json!(true);
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("get_weather", "")));
    let s = h.stream(streamed).await;
    assert_eq!(s.response["output"][0]["arguments"], "{}");
    let deltas: String = s.events.iter()
        .filter(|e| e["type"] == "response.function_call_arguments.delta")
        .map(|e| e["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(deltas, "{}");
    // Whitespace only: `{}` follows it, and the deltas still add up.
    let mut streamed = json!({"model":"m","input":"weather?","tools":[weather()],"stream":true});
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("get_weather", "\n")));
    let s = h.stream(streamed.clone()).await;
    assert_eq!(s.response["output"][0]["arguments"], "\n{}");
    // Replayed with empty arguments, the call goes upstream with `{}`.
    streamed["input"] = json!([
        {"role":"user","content":"weather?"},
        {"type":"function_call","call_id":"c1","name":"get_weather","arguments":""},
        {"type":"function_call_output","call_id":"c1","output":"sunny"}
    ]);
    h.upstream.push(Script::text(&["Sunny."]));
    h.stream(streamed).await;
    let last = h.upstream.requests().pop().unwrap();
    let call = last.body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(call["tool_calls"][0]["function"]["arguments"], "{}");
}

/// A gateway tool called again with the same arguments in one turn is not run again
/// (issue 28): the model is told it has the result; after two repeats the tools are
/// withdrawn, so the turn ends in an answer.
#[tokio::test]
async fn a_repeated_gateway_call_is_not_run_again() {
    let h = Harness::start().await;
    for args in [r#"{"input":"axum"}"#, r#"{ "input" : "axum" }"#, r#"{"input":"axum"}"#] {
        h.upstream.push(Script::tool_call("package_version", args));
    }
    h.upstream.push(Script::text(&["axum 0.8."]));
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":[pv()]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed", "{body}");
    let t = types(&body);
    assert_eq!(t.iter().filter(|t| *t == "custom_tool_call_output").count(), 1, "run once: {t:?}");
    assert_eq!(body["output"].as_array().unwrap().last().unwrap()["content"][0]["text"], "axum 0.8.");
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 4);
    let tool_messages = |i: usize| -> Vec<String> {
        reqs[i].body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").map(|m| m["content"].to_string()).collect()
    };
    assert_eq!(tool_messages(1).len(), 1);
    assert!(tool_messages(2)[1].contains("already called with these same arguments"), "{:?}", tool_messages(2));
    assert!(reqs[2].body.get("tools").is_some(), "one repeat: the tools are still offered");
    assert!(reqs[3].body.get("tools").is_none(), "two repeats: the last round has no tools");
}
