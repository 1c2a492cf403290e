//! The gateway on an upstream that speaks `/v1/responses` (`upstream.api = "responses"`):
//! the same turns as on a chat upstream (text, streams, client and gateway tool round
//! trips, failures), with the round sent as Responses input items and the upstream's events
//! read into the gateway's own items and events.

use responses_gateway::config::UpstreamApiKind;
use scripted_upstream::{Fault, Script};
use serde_json::{json, Value};

use crate::common::{error_of, Harness};

async fn on_responses() -> Harness {
    Harness::start_with(|c| c.upstream.api = UpstreamApiKind::Responses).await
}

fn text_of(resp: &Value) -> String {
    resp["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "message")
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_string))
        .collect()
}

fn types(resp: &Value) -> Vec<String> {
    resp["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn text_and_streams_go_through_a_responses_upstream() {
    let h = on_responses().await;
    h.upstream.push(Script::text(&["Hel", "lo"]));
    let (status, body) = h.post(json!({"model":"m","input":"hi","instructions":"Be brief.","store":false})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(text_of(&body), "Hello");
    assert_eq!(body["status"], "completed");
    assert!(body["id"].as_str().unwrap().starts_with("resp_"));
    let reqs = h.upstream.requests();
    let up = &reqs[0].body;
    assert_eq!((up["stream"].clone(), up["store"].clone()), (json!(true), json!(false)));
    assert_eq!(up["instructions"], "Be brief.");
    assert_eq!(up["input"], json!([{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]));
    assert!(up.get("messages").is_none(), "not a chat request: {up}");
    // Streamed: the gateway's own events (the checker asserts the stream's invariants).
    // 20 ms apart: each delta arrives on its own (deltas that arrive together leave as one).
    h.upstream.push(Script::text(&["a", "b", "c"]).reasoning(&["think"]).delay_ms(20));
    let s = h.stream(json!({"model":"m","input":"hi","store":false})).await;
    assert_eq!(s.response["status"], "completed");
    assert_eq!(types(&s.response), ["reasoning", "message"]);
    assert_eq!(text_of(&s.response), "abc");
    let deltas = s.events.iter().filter(|e| e["type"] == "response.output_text.delta").count();
    assert_eq!(deltas, 3, "each upstream delta streams as it came");
}

#[tokio::test]
async fn a_client_function_round_trip_continues_on_the_responses_upstream() {
    let h = on_responses().await;
    let tools = json!([{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]);
    h.upstream.push(Script::tool_call("get_weather", r#"{"city":"Paris"}"#));
    let (status, first) = h.post(json!({"model":"m","input":"weather?","tools":tools})).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(types(&first), ["function_call"]);
    let call = &first["output"][0];
    assert_eq!((call["name"].as_str(), call["arguments"].as_str()), (Some("get_weather"), Some(r#"{"city":"Paris"}"#)));
    let up1 = &h.upstream.requests()[0].body;
    assert_eq!(up1["tools"], json!([{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]));
    h.upstream.push(Script::text(&["Sunny."]));
    let call_id = call["call_id"].as_str().unwrap();
    let (status, second) = h
        .post(json!({"model":"m","previous_response_id":first["id"],"tools":tools,
            "input":[{"type":"function_call_output","call_id":call_id,"output":"sunny, 21 C"}]}))
        .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(text_of(&second), "Sunny.");
    let input = h.upstream.requests()[1].body["input"].clone();
    let kinds: Vec<&str> = input.as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "function_call", "function_call_output"], "{input}");
    assert_eq!(input[1]["call_id"], call_id);
    assert_eq!(input[2], json!({"type":"function_call_output","call_id":call_id,"output":"sunny, 21 C"}));
}

#[tokio::test]
async fn a_gateway_tool_runs_between_responses_rounds() {
    let h = on_responses().await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#));
    h.upstream.push(Script::text(&["axum is installed."]));
    let (status, body) = h.post(json!({"model":"m","input":"axum?","tools":[{"type":"custom","name":"package_version"}]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(types(&body), ["custom_tool_call", "custom_tool_call_output", "message"]);
    assert!(body["output"][1]["output"].as_str().unwrap().starts_with("axum "), "{body}");
    let input = h.upstream.requests()[1].body["input"].clone();
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[1]["name"], "package_version");
    assert_eq!(input[2]["type"], "function_call_output");
    assert!(input[2]["output"].as_str().unwrap().starts_with("axum "), "{input}");
}

#[tokio::test]
async fn sampling_and_format_go_in_responses_terms() {
    let h = on_responses().await;
    h.upstream.push(Script::text(&["{}"]));
    let schema = json!({"type":"object","properties":{}});
    let (status, body) = h
        .post(json!({"model":"m","input":"x","temperature":0.5,"max_output_tokens":100,"reasoning":{"effort":"low"},
            "text":{"format":{"type":"json_schema","name":"out","schema":schema,"strict":true}}}))
        .await;
    assert_eq!(status, 200, "{body}");
    let up = &h.upstream.requests()[0].body;
    assert_eq!(up["temperature"], 0.5);
    assert_eq!(up["max_output_tokens"], 100);
    assert_eq!(up["reasoning"], json!({"effort":"low"}));
    assert_eq!(up["text"]["format"]["type"], "json_schema");
    assert_eq!(up["text"]["format"]["schema"], schema);
    assert!(up.get("response_format").is_none());
}

#[tokio::test]
async fn responses_upstream_failures_are_the_gateways_errors() {
    let h = on_responses().await;
    h.upstream.push(Script::http_error(500, r#"{"error":{"message":"boom"}}"#));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(error_of(&body)["code"], "upstream_error");
    h.upstream.push(Script::text(&["cut"]).finish("length"));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["status"].as_str(), body["incomplete_details"]["reason"].as_str()), (Some("incomplete"), Some("max_output_tokens")));
    h.upstream.push(Script::text(&["a"]).finish("error"));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502, "an upstream response.failed: {body}");
    assert!(error_of(&body)["message"].as_str().unwrap().contains("the scripted model failed"), "{body}");
    h.upstream.push(Script::text(&["a", "b", "c", "d", "e"]).fault(Fault::Disconnect { after_chunks: 3 }));
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_eq!(s.response["status"], "failed", "a cut stream ends with response.failed");
    assert_eq!(s.events.iter().filter(|e| e["type"] == "error").count(), 1);
}

/// The upstream's reasoning items go back to it, as they came, on the next round and on a
/// continuation; they never reach a chat upstream (which never sends any).
#[tokio::test]
async fn reasoning_items_go_back_to_the_responses_upstream() {
    let h = on_responses().await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#).reasoning(&["need ", "a tool"]));
    h.upstream.push(Script::text(&["axum is installed."]));
    let (status, body) = h
        .post(json!({"model":"m","input":"axum?","include":["reasoning.encrypted_content"],"tools":[{"type":"custom","name":"package_version"}]}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(types(&body), ["reasoning", "custom_tool_call", "custom_tool_call_output", "message"]);
    let reqs = h.upstream.requests();
    assert_eq!(reqs[0].body["include"], json!(["reasoning.encrypted_content"]), "asked for as the client asked");
    let input = reqs[1].body["input"].as_array().unwrap().clone();
    let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "reasoning", "function_call", "function_call_output"], "{input:?}");
    let reasoning = &input[1];
    assert!(reasoning["encrypted_content"].as_str().unwrap().starts_with("enc_rs_"), "{reasoning}");
    assert_eq!(reasoning["content"][0]["text"], "need a tool");
    // A continuation sends it again, from the stored turn.
    h.upstream.push(Script::text(&["Yes."]));
    let (status, next) = h.post(json!({"model":"m","previous_response_id":body["id"],"input":"sure?"})).await;
    assert_eq!(status, 200, "{next}");
    let input = h.upstream.requests()[2].body["input"].clone();
    assert_eq!(input[1], *reasoning, "the same item, from the stored transcript");
    // Without the include, the upstream is not asked for encrypted content.
    h.upstream.push(Script::text(&["ok"]));
    h.post(json!({"model":"m","input":"x"})).await;
    assert!(h.upstream.requests()[3].body.get("include").is_none());
}

/// A `store: false` client (as Codex) replays the output items itself: the reasoning item
/// the client got carries the upstream's `encrypted_content` (asked for by `include`), and
/// goes back to the upstream with it; without the include the item has none.
#[tokio::test]
async fn replayed_reasoning_items_go_back_with_their_encrypted_content() {
    let h = on_responses().await;
    let tools = json!([{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]);
    h.upstream.push(Script::tool_call("get_weather", r#"{"city":"Paris"}"#).reasoning(&["need ", "weather"]));
    let s = h.stream(json!({"model":"m","input":"weather?","store":false,"include":["reasoning.encrypted_content"],"tools":tools})).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    let first = s.response.clone();
    assert_eq!(types(&first), ["reasoning", "function_call"]);
    let reasoning = first["output"][0].clone();
    let encrypted = reasoning["encrypted_content"].as_str().unwrap().to_string();
    assert!(encrypted.starts_with("enc_rs_"), "{reasoning}");
    assert!(reasoning["id"].as_str().unwrap().starts_with("rs_"));
    let done = s.of_type("response.output_item.done").into_iter().find(|e| e["item"]["type"] == "reasoning").unwrap().clone();
    assert_eq!(done["item"]["encrypted_content"], encrypted.as_str(), "streamed on the item's done event");
    // The replay: the output items, then the call's output.
    let call = first["output"][1].clone();
    let mut input: Vec<Value> = vec![json!({"role":"user","content":"weather?"})];
    input.extend(first["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"type":"function_call_output","call_id":call["call_id"],"output":"sunny"}));
    h.upstream.push(Script::text(&["Sunny."]));
    let (status, second) = h.post(json!({"model":"m","input":input,"store":false,"include":["reasoning.encrypted_content"],"tools":tools})).await;
    assert_eq!(status, 200, "{second}");
    let up = h.upstream.requests()[1].body["input"].clone();
    let kinds: Vec<&str> = up.as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "reasoning", "function_call", "function_call_output"], "{up}");
    assert_eq!(up[1]["encrypted_content"], encrypted.as_str());
    assert_eq!(up[1]["content"][0]["text"], "need weather");
    assert!(up[1].get("status").is_none(), "only the reasoning's own fields: {}", up[1]);
    // Without the include: no encrypted content on the client's item.
    h.upstream.push(Script::text(&["ok"]).reasoning(&["hm"]));
    let (_, plain) = h.post(json!({"model":"m","input":"x","store":false})).await;
    assert!(plain["output"][0].get("encrypted_content").is_none(), "{plain}");
}

/// A call the model wrote as text comes back as a call on a Responses upstream too (the
/// same round reads both upstreams' text), and goes back to that upstream as a
/// `function_call` item with its output.
#[tokio::test]
async fn a_call_written_as_text_is_recovered_on_a_responses_upstream() {
    let h = on_responses().await;
    let tools = json!([{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]);
    h.upstream.push(Script::text(&["<tool_call>{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Oslo\"}}</tool_call>"]));
    let s = h.stream(json!({"model":"m","input":"weather?","tools":tools,"store":true})).await;
    assert_eq!(types(&s.response), ["function_call"], "{}", s.response);
    assert_eq!(s.response["output"][0]["arguments"], r#"{"city":"Oslo"}"#);
    let answer = json!([{"type":"function_call_output","call_id":s.response["output"][0]["call_id"],"output":"sunny"}]);
    h.upstream.push(Script::text(&["Sunny."]));
    let (status, body) = h.post(json!({"model":"m","input":answer,"tools":tools,"previous_response_id":s.response["id"]})).await;
    assert_eq!(status, 200, "{body}");
    let up = h.upstream.requests().pop().unwrap().body;
    let call = up["input"].as_array().unwrap().iter().find(|i| i["type"] == "function_call").cloned().unwrap_or_default();
    assert_eq!((call["name"].as_str(), call["arguments"].as_str()), (Some("get_weather"), Some(r#"{"city":"Oslo"}"#)), "{up}");
}
