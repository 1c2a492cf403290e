//! Conversations on both backends: the Conversations API, turns that prepend the
//! conversation's items and append their input and output, the lease that answers a racing
//! turn with 409, and a commit that fails after the stream started (`response.failed`).


use std::sync::Arc;

use crate::common::{error_of, Harness, TestDb};
use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use responses_gateway::executors::ServerTool;
use scripted_upstream::{Script, ToolCallScript};
use crate::on_both_backends;
use serde_json::{json, Value};

/// A server tool that waits until the test opens its gate: keeps a turn running.
#[derive(Debug, Default)]
struct Gate {
    open: tokio::sync::Notify,
}

impl ServerTool for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> String {
        "waits".into()
    }
    fn progress(&self, _: &str) -> String {
        "waiting".into()
    }
    fn run<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            self.open.notified().await;
            Ok("opened".into())
        })
    }
}

async fn start(db: Arc<TestDb>) -> Harness {
    Harness::start_on(db, |_| {}, |_| {}).await
}

async fn start_gated(db: Arc<TestDb>) -> (Harness, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let g = gate.clone();
    (Harness::start_on(db, |_| {}, move |r| r.register(g)).await, gate)
}

fn ids(list: &Value) -> Vec<String> {
    list["data"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_string()).collect()
}

fn texts(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| match i["type"].as_str().unwrap() {
            "message" => i["content"][0]["text"].as_str().unwrap_or_default().to_string(),
            t => t.to_string(),
        })
        .collect()
}

/// Starts a streamed turn and reads until `marker`; returns the rest-of-stream reader.
async fn stream_until(h: &Harness, body: Value, marker: &str) -> (String, impl futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin) {
    let resp = h.client.post(format!("{}/v1/responses", h.base)).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let mut stream = resp.bytes_stream();
    let mut seen = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if seen.contains(marker) {
            break;
        }
    }
    (seen, stream)
}

async fn rest(mut seen: String, mut stream: impl futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin) -> String {
    while let Some(Ok(chunk)) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    seen
}

/// Create (metadata, up to 20 items), retrieve, update, items add/list/get/delete, delete.
async fn conversations_api(db: Arc<TestDb>) {
    let h = start(db).await;
    let (s, c) = h
        .post_to("/v1/conversations", json!({"metadata":{"topic":"demo"},"items":[
            {"role":"developer","content":"Be terse."},
            {"type":"message","role":"user","content":[{"type":"input_text","text":"Hello"}]}
        ]}))
        .await;
    assert_eq!(s, 200, "{c}");
    let id = c["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("conv_"));
    assert_eq!(c["object"], "conversation");
    assert_eq!(c["metadata"], json!({"topic":"demo"}));
    assert!(c["created_at"].as_i64().unwrap() > 0);
    assert_eq!(h.get(&format!("/v1/conversations/{id}")).await.1, c);
    let (s, empty) = h.post_to("/v1/conversations", json!({})).await;
    assert_eq!(s, 200);
    assert_eq!(empty["metadata"], json!({}));

    let (s, u) = h.post_to(&format!("/v1/conversations/{id}"), json!({"metadata":{"topic":"new"}})).await;
    assert_eq!(s, 200);
    assert_eq!(u["metadata"], json!({"topic":"new"}));

    let (s, added) = h
        .post_to(&format!("/v1/conversations/{id}/items"), json!({"items":[
            {"role":"assistant","content":"Hi"}, {"role":"user","content":"three"}, {"role":"user","content":"four"}
        ]}))
        .await;
    assert_eq!(s, 200, "{added}");
    assert_eq!(added["object"], "list");
    assert_eq!(texts(&added), ["Hi", "three", "four"]);
    assert_eq!(added["data"][0]["content"][0]["type"], "output_text");

    let (_, all) = h.get(&format!("/v1/conversations/{id}/items?order=asc")).await;
    assert_eq!(texts(&all), ["Be terse.", "Hello", "Hi", "three", "four"]);
    let (_, desc) = h.get(&format!("/v1/conversations/{id}/items?limit=2")).await;
    assert_eq!(texts(&desc), ["four", "three"]);
    assert_eq!(desc["has_more"], true);
    let (_, next) = h.get(&format!("/v1/conversations/{id}/items?limit=2&after={}", desc["last_id"].as_str().unwrap())).await;
    assert_eq!(texts(&next), ["Hi", "Hello"]);
    let (_, last) = h.get(&format!("/v1/conversations/{id}/items?limit=2&after={}", next["last_id"].as_str().unwrap())).await;
    assert_eq!(texts(&last), ["Be terse."]);
    assert_eq!(last["has_more"], false);

    let item_id = ids(&all)[2].clone();
    let (s, item) = h.get(&format!("/v1/conversations/{id}/items/{item_id}")).await;
    assert_eq!(s, 200);
    assert_eq!(item, all["data"][2]);
    let (s, conv) = h.delete(&format!("/v1/conversations/{id}/items/{item_id}")).await;
    assert_eq!(s, 200);
    assert_eq!(conv["id"], id.as_str());
    assert_eq!(conv["object"], "conversation");
    assert_eq!(h.get(&format!("/v1/conversations/{id}/items/{item_id}")).await.0, 404);
    assert_eq!(h.delete(&format!("/v1/conversations/{id}/items/{item_id}")).await.0, 404);

    let (s, d) = h.delete(&format!("/v1/conversations/{id}")).await;
    assert_eq!(s, 200);
    assert_eq!(d, json!({"id": id, "object": "conversation.deleted", "deleted": true}));
    for path in [format!("/v1/conversations/{id}"), format!("/v1/conversations/{id}/items"), format!("/v1/conversations/{id}/items/{item_id}")] {
        let (s, e) = h.get(&path).await;
        assert_eq!(s, 404, "{path}");
        error_of(&e);
    }
}

/// Bad input: more than 20 items, an invalid item, bad metadata, unknown cursor → 400.
async fn conversations_bad_input(db: Arc<TestDb>) {
    let h = start(db).await;
    let many: Vec<Value> = (0..21).map(|i| json!({"role":"user","content":format!("m{i}")})).collect();
    let (s, e) = h.post_to("/v1/conversations", json!({"items": many})).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&e)["param"], "items");
    let (s, e) = h.post_to("/v1/conversations", json!({"items":[{"type":"function_call","name":"f"}]})).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&e)["param"], "items[0]");
    let long: String = "v".repeat(513);
    let (s, e) = h.post_to("/v1/conversations", json!({"metadata":{"k": long}})).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&e)["param"], "metadata");
    let (_, c) = h.post_to("/v1/conversations", json!({"items":[{"role":"user","content":"a","id":"msg_a"}]})).await;
    let id = c["id"].as_str().unwrap();
    let (s, e) = h.post_to(&format!("/v1/conversations/{id}/items"), json!({"items":[{"role":"user","content":"b","id":"msg_a"}]})).await;
    assert_eq!(s, 400, "an id already in the conversation: {e}");
    let (s, e) = h.get(&format!("/v1/conversations/{id}/items?after=msg_nope")).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&e)["param"], "after");
    let (s, e) = h.post_to(&format!("/v1/conversations/{id}"), json!({})).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&e)["param"], "metadata");
    let (s, e) = h.post(json!({"model":"m","input":"x","conversation":"conv_nope"})).await;
    assert_eq!(s, 404);
    assert_eq!(error_of(&e)["param"], "conversation");
    let (s, _) = h.post(json!({"model":"m","input":"x","conversation":42})).await;
    assert_eq!(s, 400);
}

/// Turns in a conversation: its items go first, each turn's input and output are
/// appended; a tool round trip works; an item added through the API is seen by the next
/// turn (the transcript is rebuilt from the items).
async fn turns_prepend_and_append(db: Arc<TestDb>) {
    let h = start(db).await;
    let (_, c) = h.post_to("/v1/conversations", json!({"items":[{"role":"user","content":"My name is Ada."}]})).await;
    let id = c["id"].as_str().unwrap().to_string();
    let tool = json!({"type":"function","name":"get_time","parameters":{"type":"object","properties":{}}});
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("get_time", "{}").id("call_t1")));
    let (s, r1) = h.post(json!({"model":"m","input":"What time is it?","conversation":{"id":id},"tools":[tool]})).await;
    assert_eq!(s, 200, "{r1}");
    assert_eq!(r1["conversation"], json!({"id": id}));
    // the gateway's own call id (the upstream's "call_t1" is never trusted to be unique)
    let call_id = r1["output"][0]["call_id"].as_str().unwrap().to_string();
    h.upstream.push(Script::text(&["It is noon, Ada."]));
    let (s, r2) = h
        .post(json!({"model":"m","conversation":id,"tools":[tool],
            "input":[{"type":"function_call_output","call_id":call_id,"output":"12:00"}]}))
        .await;
    assert_eq!(s, 200, "{r2}");
    let m = &h.upstream.requests()[1].body["messages"];
    assert_eq!(m[0]["content"], "My name is Ada.");
    assert_eq!(m[1]["content"], "What time is it?");
    assert_eq!(m[2]["tool_calls"][0]["id"], call_id.as_str());
    assert_eq!(m[3], json!({"role":"tool","tool_call_id":call_id,"content":"12:00"}));
    let (_, items) = h.get(&format!("/v1/conversations/{id}/items?order=asc")).await;
    assert_eq!(texts(&items), ["My name is Ada.", "What time is it?", "function_call", "function_call_output", "It is noon, Ada."]);
    assert_eq!(ids(&items)[2], r1["output"][0]["id"].as_str().unwrap(), "output items keep their ids");

    h.post_to(&format!("/v1/conversations/{id}/items"), json!({"items":[{"role":"user","content":"I live in Oslo."}]})).await;
    h.upstream.push(Script::text(&["Noted."]));
    let (s, _) = h.post(json!({"model":"m","conversation":id,"input":"Where do I live?"})).await;
    assert_eq!(s, 200);
    let m = &h.upstream.requests()[2].body["messages"];
    let contents: Vec<&str> = m.as_array().unwrap().iter().filter_map(|x| x["content"].as_str()).collect();
    assert_eq!(contents, ["My name is Ada.", "What time is it?", "", "12:00", "It is noon, Ada.", "I live in Oslo.", "Where do I live?"], "{m}");
    let (_, items) = h.get(&format!("/v1/conversations/{id}/items?order=asc")).await;
    assert_eq!(items["data"].as_array().unwrap().len(), 8);
}

/// A second turn while the first still runs gets 409 before any stream starts; the first
/// commits its items contiguously; the lease is free afterwards.
async fn racing_turn_gets_409(db: Arc<TestDb>) {
    let (h, gate) = start_gated(db).await;
    let (_, c) = h.post_to("/v1/conversations", json!({})).await;
    let id = c["id"].as_str().unwrap().to_string();
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("gate", r#"{"input":"x"}"#)));
    h.upstream.push(Script::text(&["first done"]));
    let body = json!({"model":"m","input":"first","conversation":id,"stream":true,"tools":[{"type":"custom","name":"gate"}]});
    let (seen, stream) = stream_until(&h, body, "custom_tool_call").await;
    let (s, e) = h.post(json!({"model":"m","input":"second","conversation":id})).await;
    assert_eq!(s, 409, "{e}");
    let e = error_of(&e);
    assert_eq!(e["code"], "conversation_locked");
    assert_eq!(e["param"], "conversation");
    let (s, _) = h.post(json!({"model":"m","input":"second","conversation":id,"stream":true})).await;
    assert_eq!(s, 409, "a streamed loser gets 409 too, before any stream starts");
    gate.open.notify_one();
    let all = rest(seen, Box::pin(stream)).await;
    assert!(all.contains("event: response.completed"), "{all}");
    h.upstream.push(Script::text(&["third done"]));
    let (s, _) = h.post(json!({"model":"m","input":"third","conversation":id})).await;
    assert_eq!(s, 200, "the lease was released by the commit");
    let (_, items) = h.get(&format!("/v1/conversations/{id}/items?order=asc&limit=100")).await;
    assert_eq!(texts(&items), ["first", "custom_tool_call", "custom_tool_call_output", "first done", "third", "third done"]);
}

/// Concurrent turns: each is 200 or 409, and every winner's items are contiguous.
async fn concurrent_turns_never_interleave(db: Arc<TestDb>) {
    let h = start(db).await;
    let (_, c) = h.post_to("/v1/conversations", json!({})).await;
    let id = c["id"].as_str().unwrap().to_string();
    h.upstream.set_default(Script::text(&["reply"]).delay_ms(2));
    let turns = (0..6).map(|i| h.post(json!({"model":"m","input":format!("q{i}"),"conversation":id})));
    let results = futures_util::future::join_all(turns).await;
    let won = results.iter().filter(|(s, _)| *s == 200).count();
    assert!(won >= 1);
    assert!(results.iter().all(|(s, _)| *s == 200 || *s == 409), "{results:?}");
    let (_, items) = h.get(&format!("/v1/conversations/{id}/items?order=asc&limit=100")).await;
    let t = texts(&items);
    assert_eq!(t.len(), 2 * won, "{t:?}");
    for pair in t.chunks(2) {
        assert!(pair[0].starts_with('q') && pair[1] == "reply", "{t:?}");
    }
}

/// A commit that fails after the stream started ends it with `response.failed`
/// (`server_error`): the conversation was deleted while the turn ran.
async fn failed_commit_ends_stream_with_response_failed(db: Arc<TestDb>) {
    let (h, gate) = start_gated(db).await;
    let (_, c) = h.post_to("/v1/conversations", json!({})).await;
    let id = c["id"].as_str().unwrap().to_string();
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("gate", r#"{"input":"x"}"#)));
    h.upstream.push(Script::text(&["never stored"]));
    let body = json!({"model":"m","input":"x","conversation":id,"stream":true,"tools":[{"type":"custom","name":"gate"}]});
    let (seen, stream) = stream_until(&h, body, "custom_tool_call").await;
    // The lease is lost meanwhile (it expired and another replica took it over).
    sqlx::query("UPDATE conversations SET lease_owner = 'lease_other_replica' WHERE id = $1")
        .bind(id.clone())
        .execute(h.store.pool())
        .await
        .unwrap();
    gate.open.notify_one();
    let raw = rest(seen, Box::pin(stream)).await;
    let checked = crate::common::check_stream(&raw);
    assert_eq!(checked.terminal_type(), "response.failed", "{raw}");
    assert_eq!(checked.response["error"]["code"], "server_error");
    assert!(!raw.contains("event: response.completed"));
    let (s, _) = h.get(&format!("/v1/responses/{}", checked.response["id"].as_str().unwrap())).await;
    assert_eq!(s, 404, "nothing was half-written");
}

/// `store: false` in a conversation: the conversation still gets the turn's items, the
/// response itself is not retrievable.
async fn store_false_turn_still_appends_to_the_conversation(db: Arc<TestDb>) {
    let h = start(db).await;
    let (_, c) = h.post_to("/v1/conversations", json!({})).await;
    let id = c["id"].as_str().unwrap().to_string();
    h.upstream.push(Script::text(&["ok"]));
    let (s, r) = h.post(json!({"model":"m","input":"x","conversation":id,"store":false})).await;
    assert_eq!(s, 200);
    assert_eq!(h.get(&format!("/v1/responses/{}", r["id"].as_str().unwrap())).await.0, 404);
    let (_, items) = h.get(&format!("/v1/conversations/{id}/items?order=asc")).await;
    assert_eq!(texts(&items), ["x", "ok"]);
    // A rejected turn (bad tool) releases the lease at once.
    let (s, _) = h.post(json!({"model":"m","input":"x","conversation":id,"tools":[{"type":"nonsense"}]})).await;
    assert_eq!(s, 400);
    h.upstream.push(Script::text(&["again"]));
    let (s, body) = h.post(json!({"model":"m","input":"y","conversation":id})).await;
    assert_eq!(s, 200, "{body}");
}

/// A lease left behind by a replica that died is taken over once it expired; an
/// unexpired one answers 409.
async fn expired_lease_is_taken_over(db: Arc<TestDb>) {
    let h = start(db).await;
    let (_, c) = h.post_to("/v1/conversations", json!({})).await;
    let id = c["id"].as_str().unwrap().to_string();
    let set = |until: i64| {
        sqlx::query("UPDATE conversations SET lease_owner = 'lease_dead_replica', lease_until = $1 WHERE id = $2")
            .bind(until)
            .bind(id.clone())
            .execute(h.store.pool())
    };
    set(i64::MAX).await.unwrap();
    let (s, _) = h.post(json!({"model":"m","input":"x","conversation":id})).await;
    assert_eq!(s, 409);
    set(1).await.unwrap();
    h.upstream.push(Script::text(&["took over"]));
    let (s, body) = h.post(json!({"model":"m","input":"x","conversation":id})).await;
    assert_eq!(s, 200, "{body}");
}

/// Deleting a conversation while a turn runs in it is 409 (the turn keeps its conversation
/// and commits); once the turn ended, the delete works.
async fn deleting_a_conversation_during_a_turn_is_409(db: Arc<TestDb>) {
    let (h, gate) = start_gated(db).await;
    let (_, c) = h.post_to("/v1/conversations", json!({})).await;
    let id = c["id"].as_str().unwrap().to_string();
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("gate", r#"{"input":"x"}"#)));
    h.upstream.push(Script::text(&["done"]));
    let body = json!({"model":"m","input":"first","conversation":id,"stream":true,"tools":[{"type":"custom","name":"gate"}]});
    let (seen, stream) = stream_until(&h, body, "custom_tool_call").await;
    let (s, e) = h.delete(&format!("/v1/conversations/{id}")).await;
    assert_eq!(s, 409, "{e}");
    assert_eq!(error_of(&e)["code"], "conversation_locked");
    gate.open.notify_one();
    let all = rest(seen, Box::pin(stream)).await;
    assert!(all.contains("event: response.completed"), "{all}");
    let (s, _) = h.get(&format!("/v1/conversations/{id}/items")).await;
    assert_eq!(s, 200, "the turn committed into its conversation");
    let (s, body) = h.delete(&format!("/v1/conversations/{id}")).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["deleted"], true);
    let (s, _) = h.delete(&format!("/v1/conversations/{id}")).await;
    assert_eq!(s, 404);
}

/// A turn's input item that reuses an id already in the conversation: the same item (a
/// replay) is not added twice; a different item is kept under a new id, never lost.
async fn reused_item_ids_never_lose_an_item(db: Arc<TestDb>) {
    let h = start(db).await;
    let first = json!({"type": "message", "id": "msg_fixed", "role": "user", "content": [{"type": "input_text", "text": "first"}]});
    let (_, c) = h.post_to("/v1/conversations", json!({"items": [first.clone()]})).await;
    let id = c["id"].as_str().unwrap().to_string();
    h.upstream.push(Script::text(&["a"]));
    let (s, b) = h.post(json!({"model":"m","conversation":id,"input":[first]})).await;
    assert_eq!(s, 200, "{b}");
    h.upstream.push(Script::text(&["b"]));
    let other = json!({"type": "message", "id": "msg_fixed", "role": "user", "content": [{"type": "input_text", "text": "second"}]});
    let (s, b) = h.post(json!({"model":"m","conversation":id,"input":[other]})).await;
    assert_eq!(s, 200, "{b}");
    let (_, items) = h.get(&format!("/v1/conversations/{id}/items?order=asc&limit=100")).await;
    assert_eq!(texts(&items), ["first", "a", "second", "b"]);
    let ids = ids(&items);
    assert_eq!(ids[0], "msg_fixed");
    assert!(ids[2].starts_with("msg_") && ids[2] != "msg_fixed", "{ids:?}");
}

/// Tool outputs that answer no call (or answer one twice) are refused when they are added,
/// so no item can make every later turn fail; an orphan left by deleting its call is named
/// in the turn's 400 with how to repair it, and the repair works.
async fn items_that_would_break_later_turns_are_refused(db: Arc<TestDb>) {
    let h = start(db).await;
    let call = json!({"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"});
    let output = json!({"type": "function_call_output", "call_id": "call_1", "output": "sunny"});
    let orphan = json!({"type": "function_call_output", "call_id": "call_nowhere", "output": "x"});
    // At creation: an output before its call, and an orphan.
    let (s, b) = h.post_to("/v1/conversations", json!({"items": [output.clone(), call.clone()]})).await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(error_of(&b)["param"], "items[0].call_id");
    let (s, b) = h.post_to("/v1/conversations", json!({"items": [orphan.clone()]})).await;
    assert_eq!(s, 400, "{b}");
    let (s, c) = h.post_to("/v1/conversations", json!({"items": [call.clone()]})).await;
    assert_eq!(s, 200, "{c}");
    let id = c["id"].as_str().unwrap().to_string();
    // Adding: an orphan is refused, the call's output is taken once, a second one refused.
    let (s, b) = h.post_to(&format!("/v1/conversations/{id}/items"), json!({"items": [orphan]})).await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(error_of(&b)["param"], "items[0].call_id");
    assert!(error_of(&b)["message"].as_str().unwrap().contains("call_nowhere"), "{b}");
    let (s, b) = h.post_to(&format!("/v1/conversations/{id}/items"), json!({"items": [output.clone()]})).await;
    assert_eq!(s, 200, "{b}");
    let output_id = b["data"][0]["id"].as_str().unwrap().to_string();
    let (s, b) = h.post_to(&format!("/v1/conversations/{id}/items"), json!({"items": [output]})).await;
    assert_eq!(s, 400, "{b}");
    assert!(error_of(&b)["message"].as_str().unwrap().contains("Duplicate"), "{b}");
    // The conversation still works.
    h.upstream.push(Script::text(&["fine"]));
    let (s, b) = h.post(json!({"model":"m","conversation":id,"input":"and now?"})).await;
    assert_eq!(s, 200, "{b}");
    // Deleting the call leaves its output orphaned: the turn's 400 names that item.
    let (_, items) = h.get(&format!("/v1/conversations/{id}/items?order=asc")).await;
    let call_id = ids(&items)[0].clone();
    let (s, _) = h.delete(&format!("/v1/conversations/{id}/items/{call_id}")).await;
    assert_eq!(s, 200);
    let (s, b) = h.post(json!({"model":"m","conversation":id,"input":"again"})).await;
    assert_eq!(s, 400, "{b}");
    let err = error_of(&b);
    assert_eq!(err["param"], "conversation");
    let message = err["message"].as_str().unwrap();
    assert!(message.contains(&output_id) && message.contains("DELETE"), "{message}");
    // Following the advice repairs the conversation.
    let (s, _) = h.delete(&format!("/v1/conversations/{id}/items/{output_id}")).await;
    assert_eq!(s, 200);
    h.upstream.push(Script::text(&["repaired"]));
    let (s, b) = h.post(json!({"model":"m","conversation":id,"input":"again"})).await;
    assert_eq!(s, 200, "{b}");
    // A stored call that nothing answers is named too, and this request can answer it.
    let (s, b) = h.post_to(&format!("/v1/conversations/{id}/items"), json!({"items": [{"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": "{}"}]})).await;
    assert_eq!(s, 200, "{b}");
    let call2 = b["data"][0]["id"].as_str().unwrap().to_string();
    let (s, b) = h.post(json!({"model":"m","conversation":id,"input":"and?"})).await;
    assert_eq!(s, 400, "{b}");
    let err = error_of(&b);
    assert_eq!(err["param"], "conversation");
    assert!(err["message"].as_str().unwrap().contains(&call2), "{b}");
    h.upstream.push(Script::text(&["answered"]));
    let (s, b) = h.post(json!({"model":"m","conversation":id,"input":[{"type":"function_call_output","call_id":"call_2","output":"rain"}]})).await;
    assert_eq!(s, 200, "{b}");
}

on_both_backends!(
    items_that_would_break_later_turns_are_refused,
    reused_item_ids_never_lose_an_item,
    deleting_a_conversation_during_a_turn_is_409,
    expired_lease_is_taken_over,
    conversations_api,
    conversations_bad_input,
    turns_prepend_and_append,
    racing_turn_gets_409,
    concurrent_turns_never_interleave,
    failed_commit_ends_stream_with_response_failed,
    store_false_turn_still_appends_to_the_conversation,
);
