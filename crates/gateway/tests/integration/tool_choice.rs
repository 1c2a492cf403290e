//! A forcing `tool_choice` the upstream ignored (issue 17, point 4; many chat templates
//! ignore it): an answer without a call is asked again once, with the choice and a short
//! instruction; a second one ends the turn `incomplete`. Streamed or not.

use scripted_upstream::Script;
use serde_json::{json, Value};

use crate::common::{items_without_ids, Checked, Harness};

fn weather() -> Value {
    json!({"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}})
}

fn request(choice: Value) -> Value {
    json!({"model":"m","input":"weather in Oslo?","tools":[weather()],"tool_choice":choice,"store":false})
}

/// `(type, phase or arguments)` of each output item.
fn summary(response: &Value) -> Vec<(String, String)> {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let what = match i["type"].as_str().unwrap() {
                "function_call" => i["arguments"].as_str().unwrap().to_string(),
                _ => format!("{} {}", i["phase"].as_str().unwrap_or(""), i["content"][0]["text"].as_str().unwrap_or("")),
            };
            (i["type"].as_str().unwrap().to_string(), what)
        })
        .collect()
}

/// Streams `scripts` (stream checker), then runs them again without streaming: the same
/// items and status both ways. Returns the stream.
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

fn last_user_message(body: &Value) -> String {
    let m = body["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "user").unwrap();
    m["content"].as_str().map(str::to_string).unwrap_or_else(|| m["content"].to_string())
}

/// `required` ignored once: the first answer stays visible as `commentary`, the model is
/// asked again with the same `tool_choice` and an instruction, and its call is returned.
#[tokio::test]
async fn an_ignored_required_choice_is_asked_again() {
    let h = Harness::start().await;
    let scripts = [Script::text(&["It is ", "sunny."]), Script::tool_call("get_weather", r#"{"city":"Oslo"}"#)];
    let s = both_ways(&h, &scripts, &request(json!("required"))).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    let want = [("message".to_string(), "commentary It is sunny.".to_string()), ("function_call".to_string(), r#"{"city":"Oslo"}"#.to_string())];
    assert_eq!(summary(&s.response), want);
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 4, "two rounds each way");
    assert_eq!(reqs[1].body["tool_choice"], "required", "the choice is sent again");
    assert_eq!(reqs[1].body["tool_choice"], reqs[0].body["tool_choice"]);
    let messages = reqs[1].body["messages"].as_array().unwrap();
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["content"], "It is sunny.", "the model sees its first answer");
    assert!(last_user_message(&reqs[1].body).contains("requires a tool call"), "{}", reqs[1].body);
}

/// A named tool ignored twice: the turn ends `incomplete` (`content_filter`), with both
/// answers shown, the last as the model's answer; no third round.
#[tokio::test]
async fn a_named_choice_ignored_twice_ends_the_turn_incomplete() {
    let h = Harness::start().await;
    let choice = json!({"type":"function","name":"get_weather"});
    let scripts = [Script::text(&["Sunny."]), Script::text(&["Still sunny."])];
    let s = both_ways(&h, &scripts, &request(choice)).await;
    assert_eq!(s.terminal_type(), "response.incomplete", "{}", s.raw);
    assert_eq!(s.response["incomplete_details"]["reason"], "content_filter");
    let want = [("message".to_string(), "commentary Sunny.".to_string()), ("message".to_string(), "final_answer Still sunny.".to_string())];
    assert_eq!(summary(&s.response), want);
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 4, "two rounds each way, no third");
    assert_eq!(reqs[1].body["tool_choice"]["function"]["name"], "get_weather");
    assert!(last_user_message(&reqs[1].body).contains("'get_weather'"), "{}", reqs[1].body);
}

/// `auto` (and a choice that a call honoured) is answered as before: one round.
#[tokio::test]
async fn an_answer_under_auto_or_a_call_under_required_is_one_round() {
    let h = Harness::start().await;
    let s = both_ways(&h, &[Script::text(&["Sunny."])], &request(json!("auto"))).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    assert_eq!(summary(&s.response), [("message".to_string(), "final_answer Sunny.".to_string())]);
    let s = both_ways(&h, &[Script::tool_call("get_weather", r#"{"city":"Oslo"}"#)], &request(json!("required"))).await;
    assert_eq!(summary(&s.response), [("function_call".to_string(), r#"{"city":"Oslo"}"#.to_string())]);
    assert_eq!(h.upstream.requests().len(), 4, "one round per turn");
}
