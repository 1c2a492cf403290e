//! Client-owned calls as they stream: items follow one another, `parallel_tool_calls: false`
//! holds when the upstream ignores it, and a custom call's deltas add up to its input.

use scripted_upstream::{Script, ToolCallScript};
use serde_json::{json, Value};

use crate::common::{items_without_ids, Harness};

fn weather() -> Value {
    json!({"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}})
}

/// `(type, output_index)` of every `output_item.added` / `.done`, in stream order.
fn item_events(events: &[Value]) -> Vec<(String, u64)> {
    events
        .iter()
        .filter(|e| e["type"] == "response.output_item.added" || e["type"] == "response.output_item.done")
        .map(|e| (e["type"].as_str().unwrap_or("").trim_start_matches("response.output_item.").to_string(), e["output_index"].as_u64().unwrap_or(99)))
        .collect()
}

/// Text, then a call: the message is done (`commentary`) before the call's item is added,
/// as in OpenAI's streams, where one item closes before the next opens.
#[tokio::test]
async fn the_message_is_done_before_the_first_call_is_added() {
    let h = Harness::start().await;
    let script = || Script::text(&["Let me ", "check."]).with_tool_call("get_weather", r#"{"city":"Paris"}"#);
    let request = json!({"model":"m","input":"weather?","tools":[weather()],"store":false});
    h.upstream.push(script());
    let s = h.stream(request.clone()).await;
    let want = [("added".to_string(), 0), ("done".to_string(), 0), ("added".to_string(), 1), ("done".to_string(), 1)];
    assert_eq!(item_events(&s.events), want);
    assert_eq!(s.response["output"][0]["phase"], "commentary");
    assert_eq!(s.response["output"][0]["content"][0]["text"], "Let me check.");
    assert_eq!(s.response["output"][1]["arguments"], r#"{"city":"Paris"}"#);
    h.upstream.push(script());
    let (status, body) = h.post(request).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(items_without_ids(&body), items_without_ids(&s.response));
}

/// Parallel calls stream one after another, and each item is done before the next is added
/// (a new call index means the one before it is whole); a call without arguments gets `{}`
/// as its last delta when it closes early too.
#[tokio::test]
async fn parallel_calls_are_done_one_after_another() {
    let h = Harness::start().await;
    let script = || {
        Script::text(&["Checking."])
            .with_tool(ToolCallScript::new("get_weather", ""))
            .with_tool_call("get_weather", r#"{"city":"Rome"}"#)
            .with_tool(ToolCallScript::new("plain", r#"{"input":"x y"}"#))
    };
    let request = json!({"model":"m","input":"weather?","tools":[weather(),{"type":"custom","name":"plain"}],"store":false});
    h.upstream.push(script());
    let s = h.stream(request.clone()).await;
    let want: Vec<(String, u64)> = (0..4).flat_map(|i| [("added".to_string(), i), ("done".to_string(), i)]).collect();
    assert_eq!(item_events(&s.events), want);
    let out = s.response["output"].as_array().unwrap();
    assert_eq!((out[1]["arguments"].as_str(), out[2]["arguments"].as_str(), out[3]["input"].as_str()), (Some("{}"), Some(r#"{"city":"Rome"}"#), Some("x y")));
    let first: String = s.events.iter().filter(|e| e["type"] == "response.function_call_arguments.delta" && e["output_index"] == 1).map(|e| e["delta"].as_str().unwrap()).collect();
    assert_eq!(first, "{}");
    h.upstream.push(script());
    let (_, body) = h.post(request).await;
    assert_eq!(items_without_ids(&body), items_without_ids(&s.response));
}

/// `parallel_tool_calls: false` promises at most one call: a second one from an upstream
/// that ignores the flag is dropped (never returned, never replayed); by default both stay.
#[tokio::test]
async fn parallel_tool_calls_false_keeps_only_the_first_call() {
    let h = Harness::start().await;
    let two = || Script::default().with_tool_call("get_weather", r#"{"city":"Paris"}"#).with_tool_call("get_weather", r#"{"city":"Rome"}"#);
    let request = json!({"model":"m","input":"weather?","tools":[weather()],"store":false,"parallel_tool_calls":false});
    h.upstream.push(two());
    let (status, body) = h.post(request.clone()).await;
    assert_eq!(status, 200, "{body}");
    let out = body["output"].as_array().unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["arguments"], r#"{"city":"Paris"}"#);
    assert_eq!(h.upstream.requests().last().unwrap().body["parallel_tool_calls"], false);
    h.upstream.push(two());
    let s = h.stream(request.clone()).await;
    assert_eq!(items_without_ids(&s.response), items_without_ids(&body));
    assert!(!s.raw.contains("Rome"), "{}", s.raw);
    let mut parallel = request;
    parallel.as_object_mut().unwrap().remove("parallel_tool_calls");
    h.upstream.push(two());
    let (_, body) = h.post(parallel).await;
    assert_eq!(body["output"].as_array().unwrap().len(), 2, "{body}");
}

/// On a chat upstream a custom tool is a function with one `input` string: whatever the
/// model writes as arguments, the streamed input deltas add up to the call's `input`.
#[tokio::test]
async fn custom_call_deltas_add_up_to_the_input() {
    let h = Harness::start().await;
    let cases = [
        (r#"{"input":"a\nb"}"#, "a\nb"),
        (r#"{"input":"unterminated"#, "unterminated"),
        (r#"{"input": 5}"#, r#"{"input": 5}"#),
        ("not json at all", "not json at all"),
        (r#"{"query":"x"}"#, "x"),
    ];
    for (arguments, input) in cases {
        h.upstream.push(Script::default().with_tool(ToolCallScript::new("plain", arguments)));
        let s = h.stream(json!({"model":"m","input":"go","tools":[{"type":"custom","name":"plain"}],"store":false})).await;
        let deltas: String = s.of_type("response.custom_tool_call_input.delta").iter().map(|e| e["delta"].as_str().unwrap()).collect();
        assert_eq!(s.response["output"][0]["input"], input, "{arguments}");
        assert_eq!(deltas, input, "{arguments}");
        assert_eq!(s.of_type("response.custom_tool_call_input.done")[0]["input"], input, "{arguments}");
    }
}

/// Native custom calls (`{"type":"custom","custom":{…}}` chunks) followed by other calls:
/// each one's input is whole when the next begins, and the stored history replays them
/// as valid JSON arguments.
#[tokio::test]
async fn native_custom_calls_followed_by_other_calls_stay_whole() {
    let h = Harness::start().await;
    let custom = |input: &str| ToolCallScript { custom: true, ..ToolCallScript::new("run_sh", input) };
    h.upstream.push(Script::default().with_tool(custom("ls -la")).with_tool(custom("")).with_tool_call("get_weather", "{}"));
    let tools = json!([{"type":"custom","name":"run_sh"}, weather()]);
    let s = h.stream(json!({"model":"m","input":"go","tools":tools,"store":true})).await;
    let out = s.response["output"].as_array().unwrap();
    assert_eq!((out[0]["input"].as_str(), out[1]["input"].as_str(), out[2]["arguments"].as_str()), (Some("ls -la"), Some(""), Some("{}")), "{out:?}");
    let outputs: Vec<Value> = out
        .iter()
        .map(|c| {
            let kind = if c["type"] == "custom_tool_call" { "custom_tool_call_output" } else { "function_call_output" };
            json!({"type":kind,"call_id":c["call_id"],"output":"ok"})
        })
        .collect();
    h.upstream.push(Script::text(&["Done."]));
    let (status, body) = h.post(json!({"model":"m","input":outputs,"tools":tools,"previous_response_id":s.response["id"]})).await;
    assert_eq!(status, 200, "{body}");
    let sent = h.upstream.requests().pop().unwrap().body;
    let calls = sent["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap()["tool_calls"].clone();
    let args: Vec<Value> = calls.as_array().unwrap().iter().map(|c| serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).expect("JSON arguments")).collect();
    assert_eq!(args, [json!({"input":"ls -la"}), json!({"input":""}), json!({})]);

    // A custom call that ends its round, with arguments that are not JSON: the stored
    // history holds `{"input": …}` too.
    h.upstream.push(Script::tool_call("run_sh", "plain text not json"));
    let (status, first) = h.post(json!({"model":"m","input":"go","tools":tools})).await;
    assert_eq!((status, first["output"][0]["input"].as_str()), (200, Some("plain text not json")), "{first}");
    let answer = json!([{"type":"custom_tool_call_output","call_id":first["output"][0]["call_id"],"output":"ok"}]);
    h.upstream.push(Script::text(&["Done."]));
    let (status, body) = h.post(json!({"model":"m","input":answer,"tools":tools,"previous_response_id":first["id"]})).await;
    assert_eq!(status, 200, "{body}");
    let sent = h.upstream.requests().pop().unwrap().body;
    let call = &sent["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap()["tool_calls"][0];
    assert_eq!(call["function"]["arguments"], r#"{"input":"plain text not json"}"#);
}

/// A round cut by `max_output_tokens` after one whole call: that call is `completed` (the
/// client may answer it, and a continuation then accepts its output), the cut one
/// `incomplete`; replayed with store=false, the incomplete call needs no output.
#[tokio::test]
async fn a_cut_round_keeps_its_completed_calls_answerable() {
    let h = Harness::start().await;
    let cut = || Script {
        finish_reason: Some("length".into()),
        ..Script::text(&["Hmm"]).with_tool_call("get_weather", r#"{"city":"Paris"}"#).with_tool_call("get_weather", r#"{"city":"Ro"#)
    };
    h.upstream.push(cut());
    let s = h.stream(json!({"model":"m","input":"weather?","tools":[weather()],"store":true})).await;
    assert_eq!(s.terminal_type(), "response.incomplete");
    let out = s.response["output"].as_array().unwrap().clone();
    let statuses: Vec<&str> = out.iter().map(|i| i["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["completed", "completed", "incomplete"], "{out:?}");
    let answer = json!({"type":"function_call_output","call_id":out[1]["call_id"],"output":"sunny"});
    h.upstream.push(Script::text(&["Sunny in Paris."]));
    let (status, body) = h.post(json!({"model":"m","input":[answer],"tools":[weather()],"previous_response_id":s.response["id"]})).await;
    assert_eq!(status, 200, "{body}");
    let sent = serde_json::to_string(&h.upstream.requests().pop().unwrap().body["messages"]).unwrap();
    assert!(sent.contains("Paris") && sent.contains("sunny") && !sent.contains(r#"\"Ro"#), "{sent}");
    // store=false: the client replays the whole output and answers the completed call.
    let mut input = vec![json!({"role":"user","content":"weather?"})];
    input.extend(out.iter().cloned());
    input.push(answer);
    h.upstream.push(Script::text(&["Sunny in Paris."]));
    let (status, body) = h.post(json!({"model":"m","input":input.clone(),"tools":[weather()],"store":false})).await;
    assert_eq!(status, 200, "{body}");
    let sent = serde_json::to_string(&h.upstream.requests().pop().unwrap().body["messages"]).unwrap();
    assert!(!sent.contains(r#"\"Ro"#), "the incomplete call is left out: {sent}");
    // An output for the incomplete call matches no call, as with the stored turn: 400.
    input.push(json!({"type":"function_call_output","call_id":out[2]["call_id"],"output":"?"}));
    let (status, body) = h.post(json!({"model":"m","input":input,"tools":[weather()],"store":false})).await;
    assert_eq!(status, 400, "{body}");
}
