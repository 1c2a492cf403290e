//! Near-JSON call arguments (issue 17, point 3): repaired, then checked against the tool's
//! schema. A gateway tool runs on repaired arguments; a non-strict client function gets
//! them; a strict one is asked again once, then the turn ends `incomplete`. Streamed or not,
//! and a client call's argument deltas add up to what it finally carries.

use scripted_upstream::{Script, ToolCallScript};
use serde_json::{json, Value};

use crate::common::{items_without_ids, Checked, Harness};

fn weather() -> Value {
    json!({"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"hot":{"type":"boolean"}}}})
}

fn strict_weather() -> Value {
    json!({"type":"function","name":"get_weather","strict":true,"parameters":{
        "type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}})
}

fn request(tools: Value) -> Value {
    json!({"model":"m","input":"weather?","tools":tools,"store":false})
}

/// A call of `name` with `arguments` sent in fragments of `n` characters.
fn call(name: &str, arguments: &str, n: usize) -> Script {
    Script::default().with_tool(ToolCallScript::new(name, arguments).fragment_chars(n))
}

/// The concatenated `function_call_arguments.delta`s and the `.done` arguments of each
/// function call of the stream.
fn streamed_arguments(s: &Checked) -> Vec<(String, String)> {
    let mut out: Vec<(u64, String, String)> = Vec::new();
    for e in &s.events {
        let oi = e["output_index"].as_u64().unwrap_or(u64::MAX);
        match e["type"].as_str().unwrap_or("") {
            "response.output_item.added" if e["item"]["type"] == "function_call" => out.push((oi, String::new(), String::new())),
            "response.function_call_arguments.delta" => out.iter_mut().find(|c| c.0 == oi).unwrap().1.push_str(e["delta"].as_str().unwrap()),
            "response.function_call_arguments.done" => out.iter_mut().find(|c| c.0 == oi).unwrap().2 = e["arguments"].as_str().unwrap().to_string(),
            _ => {}
        }
    }
    out.into_iter().map(|(_, d, a)| (d, a)).collect()
}

/// `(type, arguments)` of each function call of a Response.
fn calls(response: &Value) -> Vec<String> {
    response["output"].as_array().unwrap().iter().filter(|i| i["type"] == "function_call").map(|i| i["arguments"].as_str().unwrap().to_string()).collect()
}

/// Streams `scripts` (through the stream checker), then runs them again without streaming:
/// the same items both ways. Returns the stream.
async fn both_ways(h: &Harness, scripts: &[Script], request: &Value) -> Checked {
    for s in scripts {
        h.upstream.push(s.clone());
    }
    let s = h.stream(request.clone()).await;
    for s in scripts {
        h.upstream.push(s.clone());
    }
    let (status, body) = h.post(request.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(items_without_ids(&body), items_without_ids(&s.response));
    assert_eq!(body["status"], s.response["status"]);
    s
}

/// A gateway tool's near-JSON arguments are repaired and it runs, in the same round: the
/// model is not asked again.
#[tokio::test]
async fn a_gateway_tool_runs_on_repaired_arguments() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("package_version", "{'input': 'axum',}"));
    h.upstream.push(Script::text(&["axum is installed."]));
    let (status, body) = h.post(json!({"model":"m","input":"axum version?","tools":[{"type":"custom","name":"package_version"}]})).await;
    assert_eq!(status, 200, "{body}");
    let types: Vec<&str> = body["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["custom_tool_call", "custom_tool_call_output", "message"], "{body}");
    assert_eq!(body["output"][0]["input"], "axum");
    assert!(body["output"][1]["output"].as_str().unwrap().starts_with("axum 0.8"), "{}", body["output"][1]);
    // The next round replays the repaired arguments, as JSON.
    let reqs = h.upstream.requests();
    let assistant = reqs[1].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap().clone();
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], r#"{"input": "axum"}"#);
}

/// Arguments that stay invalid are not run: the model reads the error and answers.
#[tokio::test]
async fn a_gateway_tool_with_unrepairable_arguments_is_not_run() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("package_version", "{input: axum}"));
    h.upstream.push(Script::text(&["Sorry."]));
    let (status, body) = h.post(json!({"model":"m","input":"axum version?","tools":[{"type":"custom","name":"package_version"}]})).await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.to_string().contains("axum 0.8"), "not executed: {body}");
    let tool = h.upstream.requests()[1].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap().clone();
    assert!(tool["content"].as_str().unwrap().contains("not valid JSON"), "{tool}");
}

/// A non-strict client function gets repaired arguments, streamed as they come while they
/// are JSON, the rest at the end: the deltas add up to the repaired text.
#[tokio::test]
async fn a_client_function_gets_repaired_arguments() {
    let h = Harness::start().await;
    let cases = [
        (r#"{"city": "Oslo", 'days': 3, "hot": True,}"#, r#"{"city": "Oslo", "days": 3, "hot": true}"#),
        (r#"{city: 'Oslo', days: 2}"#, r#"{"city": "Oslo", "days": 2}"#),
        (r#""{\"city\":\"Oslo\"}""#, r#"{"city":"Oslo"}"#),
        ("```json\n{\"city\": \"Oslo\"}\n```", r#"{"city": "Oslo"}"#),
        (r#"{"city": "Oslo", "hot": None}"#, r#"{"city": "Oslo", "hot": null}"#),
        // Not repairable: what the model wrote.
        (r#"{"city": Oslo}"#, r#"{"city": Oslo}"#),
    ];
    for (written, want) in cases {
        let s = both_ways(&h, &[call("get_weather", written, 5)], &request(json!([weather()]))).await;
        assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
        assert_eq!(calls(&s.response), [want], "{written}");
        assert_eq!(streamed_arguments(&s), [(want.to_string(), want.to_string())], "{written}: deltas add up to the done arguments");
        // The valid prefix streamed before the end of the round.
        if written.starts_with("{\"city\"") {
            let first = s.events.iter().find(|e| e["type"] == "response.function_call_arguments.delta").unwrap();
            assert!(want.starts_with(first["delta"].as_str().unwrap()), "{first}");
        }
    }
}

/// A strict function's arguments that do not match its schema are not returned: the model
/// is asked again with the error as the call's result, and its second, valid call is the one
/// the client gets.
#[tokio::test]
async fn a_strict_function_with_invalid_arguments_is_asked_again() {
    let h = Harness::start().await;
    let scripts = [Script::text(&["Checking."]).with_tool_call("get_weather", r#"{"town": "Oslo"}"#), call("get_weather", "{'city': 'Oslo'}", 4)];
    let s = both_ways(&h, &scripts, &request(json!([strict_weather()]))).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    assert_eq!(calls(&s.response), [r#"{"city": "Oslo"}"#], "only the valid call: {}", s.response);
    assert_eq!(streamed_arguments(&s), [(r#"{"city": "Oslo"}"#.to_string(), r#"{"city": "Oslo"}"#.to_string())]);
    assert_eq!(s.response["output"][0]["phase"], "commentary", "{}", s.response);
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 4, "two rounds each way");
    let messages = reqs[1].body["messages"].as_array().unwrap();
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], r#"{"town": "Oslo"}"#);
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], assistant["tool_calls"][0]["id"]);
    let error = tool["content"].as_str().unwrap();
    assert!(error.contains("do not match its schema") && error.contains("get_weather"), "{error}");
    // A strict call that is valid after repair is returned at once.
    h.upstream.push(call("get_weather", "{city: 'Oslo',}", 3));
    let s = h.stream(request(json!([strict_weather()]))).await;
    assert_eq!(calls(&s.response), [r#"{"city": "Oslo"}"#]);
    assert_eq!(h.upstream.requests().len(), 5);
}

/// A second invalid attempt ends the turn `incomplete` (`content_filter`: the gateway
/// withheld the output), and no invalid call reaches the client.
#[tokio::test]
async fn a_strict_function_invalid_twice_ends_the_turn_incomplete() {
    let h = Harness::start().await;
    let scripts = [call("get_weather", r#"{"town": "Oslo"}"#, 4), call("get_weather", r#"{"city": 7}"#, 4)];
    let s = both_ways(&h, &scripts, &request(json!([strict_weather()]))).await;
    assert_eq!(s.terminal_type(), "response.incomplete", "{}", s.raw);
    assert_eq!(s.response["incomplete_details"]["reason"], "content_filter");
    assert!(calls(&s.response).is_empty(), "{}", s.response);
    assert!(!s.raw.contains("function_call_arguments"), "no argument of an invalid call streamed: {}", s.raw);
    assert_eq!(h.upstream.requests().len(), 4, "two rounds each way, no third");
}

/// With a strict function offered, a round's client calls wait for its end: when the strict
/// call is asked again, the round's other client call is not shown either (the model reads
/// that it was not returned), and the second round's calls are the ones the client gets.
#[tokio::test]
async fn the_other_client_calls_of_an_asked_again_round_are_not_shown() {
    let h = Harness::start().await;
    let note = json!({"type":"function","name":"note","parameters":{"type":"object","properties":{"text":{"type":"string"}}}});
    let first = Script::default().with_tool_call("note", r#"{"text":"hi"}"#).with_tool_call("get_weather", r#"{"town":"Oslo"}"#);
    let second = Script::default().with_tool_call("note", r#"{"text":"hi"}"#).with_tool_call("get_weather", r#"{"city":"Oslo"}"#);
    let s = both_ways(&h, &[first, second], &request(json!([note, strict_weather()]))).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    assert_eq!(calls(&s.response), [r#"{"text":"hi"}"#, r#"{"city":"Oslo"}"#], "{}", s.response);
    assert_eq!(s.of_type("response.output_item.added").len(), 2, "no item of the first round: {}", s.raw);
    let messages = h.upstream.requests()[1].body["messages"].clone();
    let results: Vec<&str> = messages.as_array().unwrap().iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(results.len(), 2, "{messages}");
    assert!(results[0].contains("not returned"), "{results:?}");
    assert!(results[1].contains("do not match its schema"), "{results:?}");
}
