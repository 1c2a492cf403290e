//! Calls the model wrote as text (issue 17: a server whose tool parser failed): Hermes/Qwen,
//! Mistral, Llama 3 and bare JSON markup naming a declared tool becomes a real call, removed
//! from the message, streamed or not; other text is neither changed nor held.

use scripted_upstream::Script;
use serde_json::{json, Value};

use crate::common::{items_without_ids, Checked, Harness};

fn weather() -> Value {
    json!({"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}})
}

fn request(tools: Value) -> Value {
    json!({"model":"m","input":"weather?","tools":tools,"store":false})
}

/// `(type, arguments or text)` of each output item.
fn summary(response: &Value) -> Vec<(String, String)> {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let ty = i["type"].as_str().unwrap().to_string();
            let what = match ty.as_str() {
                "function_call" => i["arguments"].as_str().unwrap().to_string(),
                "message" => i["content"][0]["text"].as_str().unwrap().to_string(),
                "custom_tool_call" => i["input"].as_str().unwrap().to_string(),
                _ => i["output"].as_str().unwrap_or_default().to_string(),
            };
            (ty, what)
        })
        .collect()
}

/// Streams `script` (through the stream checker), then runs it again without streaming:
/// the same items both ways. Returns the stream.
async fn both_ways(h: &Harness, script: Script, request: &Value) -> Checked {
    h.upstream.push(script.clone());
    let s = h.stream(request.clone()).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    h.upstream.push(script);
    let (status, body) = h.post(request.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(items_without_ids(&body), items_without_ids(&s.response));
    s
}

fn call(arguments: &str) -> (String, String) {
    ("function_call".to_string(), arguments.to_string())
}

/// Hermes/Qwen `<tool_call>` markup split across deltas is a `function_call` (no message),
/// and the next turn replays it to the model as a real call.
#[tokio::test]
async fn hermes_markup_is_a_call() {
    let h = Harness::start().await;
    let script = Script::text(&["<tool_", "call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_", "call>"]);
    let s = both_ways(&h, script, &request(json!([weather()]))).await;
    assert_eq!(summary(&s.response), [call(r#"{"city":"Oslo"}"#)]);
    assert_eq!(s.response["output"][0]["name"], "get_weather");
    assert_eq!(s.response["output"][0]["status"], "completed");
    assert!(!s.raw.contains("tool_call>"), "the markup never reaches the client: {}", s.raw);
    // The client answers the call; the model sees a real call and its result.
    let mut input = vec![json!({"role":"user","content":"weather?"})];
    input.extend(s.response["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"type":"function_call_output","call_id":s.response["output"][0]["call_id"],"output":"sunny"}));
    h.upstream.push(Script::text(&["Sunny in Oslo."]));
    let (status, body) = h.post(json!({"model":"m","input":input,"tools":[weather()],"store":false})).await;
    assert_eq!(status, 200, "{body}");
    let sent = h.upstream.requests().pop().unwrap().body;
    let assistant = sent["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap().clone();
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], r#"{"city":"Oslo"}"#);
    assert!(!assistant.to_string().contains("tool_call>"), "{assistant}");
}

/// Text before the markup stays a message (`commentary`, as before any call); Mistral's
/// array gives two calls; Llama 3's python tag and a bare or fenced JSON answer give one.
#[tokio::test]
async fn each_syntax_is_recovered() {
    let h = Harness::start().await;
    let req = request(json!([weather()]));
    let s = both_ways(&h, Script::text(&["Let me check. ", "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}</tool_call>"]), &req).await;
    assert_eq!(summary(&s.response), [("message".to_string(), "Let me check. ".to_string()), call(r#"{"city":"Oslo"}"#)]);
    assert_eq!(s.response["output"][0]["phase"], "commentary");
    type Case<'a> = (&'a [&'a str], Vec<(String, String)>);
    let cases: [Case<'_>; 4] = [
        (
            &["[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}, {\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Bern\"}}]"],
            vec![call(r#"{"city":"Rome"}"#), call(r#"{"city":"Bern"}"#)],
        ),
        (&["<|python_tag|>", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Kyiv\"}}"], vec![call(r#"{"city":"Kyiv"}"#)]),
        (&["{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Lima\"}}"], vec![call(r#"{"city":"Lima"}"#)]),
        (&["```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Quito\"}}\n", "```"], vec![call(r#"{"city":"Quito"}"#)]),
    ];
    for (pieces, want) in cases {
        let s = both_ways(&h, Script::text(pieces), &req).await;
        assert_eq!(summary(&s.response), want, "{pieces:?}");
    }
}

/// A recovered call of a gateway tool is executed like any other: its items, then the answer.
#[tokio::test]
async fn a_recovered_gateway_call_is_executed() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["<tool_call>{\"name\": \"package_version\", \"arguments\": {\"input\": \"axum\"}}</tool_call>"]));
    h.upstream.push(Script::text(&["axum is installed."]));
    let s = h.stream(request(json!([{"type":"custom","name":"package_version"}]))).await;
    assert_eq!(s.terminal_type(), "response.completed");
    // The stream's progress message first (streams only), then the call, its output, the answer.
    let types: Vec<String> = summary(&s.response).into_iter().map(|(t, _)| t).collect();
    assert_eq!(types, ["message", "custom_tool_call", "custom_tool_call_output", "message"], "{}", s.response);
    let out = s.response["output"].as_array().unwrap();
    assert!(out[0]["id"].as_str().unwrap().starts_with("msg_progress"), "{}", out[0]);
    assert_eq!(out[1]["input"], "axum");
    assert!(out[2]["output"].as_str().unwrap().starts_with("axum 0.8"), "{}", out[2]);
    assert_eq!(out[3]["content"][0]["text"], "axum is installed.");
    let sent = h.upstream.requests().pop().unwrap().body;
    assert_eq!(sent["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count(), 1);
}

/// JSON that is more than the answer, a bare JSON answer the client asked for
/// (`text.format`), and any markup when the request has no tools stay text.
#[tokio::test]
async fn other_markup_stays_text() {
    let h = Harness::start().await;
    let json_answer = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}";
    let cases = [
        (request(json!([weather()])), format!("{json_answer} is how a call looks.")),
        (json!({"model":"m","input":"x","tools":[weather()],"store":false,"text":{"format":{"type":"json_object"}}}), json_answer.to_string()),
        (json!({"model":"m","input":"x","store":false}), "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>".to_string()),
    ];
    for (req, text) in cases {
        let s = both_ways(&h, Script::text(&[&text[..9], &text[9..]]), &req).await;
        assert_eq!(summary(&s.response), [("message".to_string(), text.clone())]);
        assert_eq!(s.response["output"][0]["phase"], "final_answer");
    }
}

/// Call markup is never a `completed` answer (issue 28): markup naming no declared tool,
/// or broken markup, ends the turn `incomplete` (`content_filter`), streamed or not; the
/// text is kept as the model wrote it.
#[tokio::test]
async fn markup_that_is_not_a_call_ends_the_turn_incomplete() {
    let h = Harness::start().await;
    for text in [
        "<tool_call>{\"name\": \"launch\", \"arguments\": {}}</tool_call>",
        "Let me check. <tool_call>[{\"name\": \"get_weather\", \"arg",
        "[TOOL_CALLS] get_weather(city=Oslo)",
    ] {
        h.upstream.push(Script::text(&[&text[..9], &text[9..]]));
        let s = h.stream(request(json!([weather()]))).await;
        assert_eq!(s.terminal_type(), "response.incomplete", "{text}: {}", s.raw);
        assert_eq!(s.response["incomplete_details"]["reason"], "content_filter");
        assert_eq!(summary(&s.response), [("message".to_string(), text.to_string())]);
        h.upstream.push(Script::text(&[text]));
        let (status, body) = h.post(request(json!([weather()]))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["status"], "incomplete", "{body}");
    }
}

/// In the last round (sent without tools) a call written as text is dropped like any call
/// of that round, whatever tool it names: with nothing else said, the turn ends
/// `incomplete`; with an answer besides it, the answer is the text, without the markup.
#[tokio::test]
async fn markup_in_the_last_round_is_never_the_answer() {
    let h = Harness::start_with(|c| c.tools.max_rounds = 1).await;
    let markup = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>";
    h.upstream.push(Script::text(&[markup]));
    let s = h.stream(request(json!([weather()]))).await;
    assert_eq!(s.terminal_type(), "response.incomplete", "{}", s.raw);
    assert!(!s.raw.contains("tool_call>"), "the markup is not shown: {}", s.raw);
    h.upstream.push(Script::text(&["It is sunny. ", markup]));
    let s = h.stream(request(json!([weather()]))).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    assert_eq!(summary(&s.response), [("message".to_string(), "It is sunny. ".to_string())]);
}

/// Ordinary text (with `<` and `[` in it) streams in the deltas it came in: nothing is held
/// but an end that may begin a marker.
#[tokio::test]
async fn ordinary_text_is_not_held_back() {
    let h = Harness::start().await;
    let pieces = ["Use <b>", "bold</b> or [links]", "(x) and <", "tool> tags."];
    h.upstream.push(Script::text(&pieces));
    let s = h.stream(request(json!([weather()]))).await;
    let deltas: Vec<&str> = s.of_type("response.output_text.delta").iter().map(|e| e["delta"].as_str().unwrap()).collect();
    assert_eq!(deltas, ["Use <b>", "bold</b> or [links]", "(x) and ", "<tool> tags."]);
}

/// A round cut short while markup is held: the held text is the message's, as written (no
/// call is recovered from a failed round), and the stream ends with one `response.failed`.
#[tokio::test]
async fn held_markup_of_a_cut_round_is_text() {
    let h = Harness::start().await;
    let script = Script::text(&["Checking. <tool_", "call>{\"name\": \"get_weather\""]).fault(scripted_upstream::Fault::Disconnect { after_chunks: 3 });
    h.upstream.push(script);
    let s = h.stream(request(json!([weather()]))).await;
    assert_eq!(s.terminal_type(), "response.failed", "{}", s.raw);
    assert_eq!(summary(&s.response), [("message".to_string(), "Checking. <tool_call>{\"name\": \"get_weather\"".to_string())]);
    assert_eq!(s.response["output"][0]["status"], "incomplete");
}
