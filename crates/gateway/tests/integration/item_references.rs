//! `item_reference` input items (contract §4, issue 29 point 5): a reference resolves to the
//! stored item of that id (a stored response's input or output item, a conversation item)
//! of this project, on both backends; an unknown id is a 400 naming `input[i]`.

use std::sync::Arc;

use crate::common::{error_of, Harness, TestDb};
use crate::on_both_backends;
use scripted_upstream::{Script, ToolCallScript};
use serde_json::{json, Value};

fn weather_tool() -> Value {
    json!({"type":"function","name":"get_weather","description":"Weather for a city",
           "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}})
}

/// Turn 1 (stored) asks and gets a message and a client call; turn 2, stateless, names
/// the user message, the assistant message and the function call by reference and answers
/// the call: the upstream sees the whole exchange in order.
async fn references_to_a_message_and_a_function_call(db: Arc<TestDb>) {
    let h = Harness::start_on(db, |_| {}, |_| {}).await;
    h.upstream.push(Script::text(&["Let me check."]).with_tool(ToolCallScript::new("get_weather", r#"{"city":"Paris"}"#)));
    let (s, r1) = h.post(json!({"model":"m","input":"weather in Paris?","tools":[weather_tool()]})).await;
    assert_eq!(s, 200, "{r1}");
    let (s, inputs) = h.get(&format!("/v1/responses/{}/input_items", r1["id"].as_str().unwrap())).await;
    assert_eq!(s, 200, "{inputs}");
    let user_id = inputs["data"][0]["id"].as_str().unwrap().to_string();
    let msg_id = r1["output"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(r1["output"][1]["type"], "function_call");
    let fc_id = r1["output"][1]["id"].as_str().unwrap().to_string();
    let call_id = r1["output"][1]["call_id"].as_str().unwrap().to_string();

    h.upstream.push(Script::text(&["Sunny."]));
    let (s, r2) = h
        .post(json!({"model":"m","store":false,"tools":[weather_tool()],"input":[
            {"type":"item_reference","id":user_id},
            {"type":"item_reference","id":msg_id},
            {"type":"item_reference","id":fc_id},
            {"type":"function_call_output","call_id":call_id,"output":"18C"}]}))
        .await;
    assert_eq!(s, 200, "{r2}");
    let reqs = h.upstream.requests();
    let m = &reqs[1].body["messages"];
    let roles: Vec<&str> = m.as_array().unwrap().iter().map(|x| x["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool"], "{m}");
    assert_eq!(m[0]["content"], "weather in Paris?");
    assert_eq!(m[1]["content"], "Let me check.");
    assert_eq!(m[1]["tool_calls"][0]["function"]["arguments"], r#"{"city":"Paris"}"#);
    assert_eq!(m[2]["tool_call_id"], call_id.as_str());
    assert_eq!(m[2]["content"], "18C");
}

/// An id no stored item has is a 400 naming the reference's index, sent nowhere.
async fn unknown_reference_is_400_naming_the_item(db: Arc<TestDb>) {
    let h = Harness::start_on(db, |_| {}, |_| {}).await;
    let (s, body) = h
        .post(json!({"model":"m","input":[{"role":"user","content":"hi"},{"type":"item_reference","id":"msg_nope"}]}))
        .await;
    assert_eq!(s, 400, "{body}");
    let e = error_of(&body);
    assert_eq!(e["param"], "input[1]");
    assert_eq!(e["message"], "Item with id 'msg_nope' not found.");
    assert!(h.upstream.requests().is_empty());
}

/// A reference to a conversation's item resolves too.
async fn reference_to_a_conversation_item(db: Arc<TestDb>) {
    let h = Harness::start_on(db, |_| {}, |_| {}).await;
    let (s, conv) = h.post_to("/v1/conversations", json!({"items":[{"type":"message","role":"user","content":"remember: blue"}]})).await;
    assert_eq!(s, 200, "{conv}");
    let (s, items) = h.get(&format!("/v1/conversations/{}/items", conv["id"].as_str().unwrap())).await;
    assert_eq!(s, 200, "{items}");
    let id = items["data"][0]["id"].as_str().unwrap().to_string();
    h.upstream.push(Script::text(&["Blue."]));
    let (s, r) = h.post(json!({"model":"m","input":[{"type":"item_reference","id":id},{"role":"user","content":"which colour?"}]})).await;
    assert_eq!(s, 200, "{r}");
    let m = &h.upstream.requests()[0].body["messages"];
    assert_eq!(m[0]["content"], "remember: blue", "{m}");
    assert_eq!(m[1]["content"], "which colour?");
}

/// With `previous_response_id`, a reference to an item of the chain is not sent twice; one
/// to an item of another stored response is.
async fn reference_with_previous_response_id(db: Arc<TestDb>) {
    let h = Harness::start_on(db, |_| {}, |_| {}).await;
    h.upstream.push(Script::text(&["Other turn."]));
    let (s, other) = h.post(json!({"model":"m","input":"unrelated"})).await;
    assert_eq!(s, 200, "{other}");
    h.upstream.push(Script::text(&["Noted: Lyon."]));
    let (s, r1) = h.post(json!({"model":"m","input":"I live in Lyon."})).await;
    assert_eq!(s, 200, "{r1}");
    h.upstream.push(Script::text(&["Sure."]));
    let (s, r2) = h.post(json!({"model":"m","previous_response_id":r1["id"],"input":"Tea?"})).await;
    assert_eq!(s, 200, "{r2}");
    h.upstream.push(Script::text(&["Lyon."]));
    let (s, r3) = h
        .post(json!({"model":"m","previous_response_id":r2["id"],"input":[
            {"type":"item_reference","id":r1["output"][0]["id"]},
            {"type":"item_reference","id":other["output"][0]["id"]},
            {"role":"user","content":"Where?"}]}))
        .await;
    assert_eq!(s, 200, "{r3}");
    let m = &h.upstream.requests()[3].body["messages"];
    let texts: Vec<&str> = m.as_array().unwrap().iter().map(|x| x["content"].as_str().unwrap()).collect();
    // (Consecutive assistant messages join into one.)
    assert_eq!(texts, ["I live in Lyon.", "Noted: Lyon.", "Tea?", "Sure.\n\nOther turn.", "Where?"], "{m}");
}

on_both_backends!(
    references_to_a_message_and_a_function_call,
    unknown_reference_is_400_naming_the_item,
    reference_to_a_conversation_item,
    reference_with_previous_response_id,
);
