//! Stored responses on both backends (SQLite and PostgreSQL): `previous_response_id`
//! chains rebuild exactly what the model saw, retrieve / delete / input_items, failed and
//! incomplete turns, streams committed before their terminal event, disconnects, restarts
//! and two replicas on one database.


use std::sync::Arc;

use crate::common::{error_of, Harness, TestDb, TestTool};
use scripted_upstream::{Script, ToolCallScript};
use crate::on_both_backends;
use serde_json::{json, Value};

fn weather_tool() -> Value {
    json!({"type":"function","name":"get_weather","description":"Weather for a city",
           "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}})
}

async fn start(db: Arc<TestDb>) -> Harness {
    Harness::start_on(db, |_| {}, |_| {}).await
}

/// A gateway whose web_search runs on a SearXNG-shaped fixture (kept alive by the caller).
async fn start_with_searxng(db: Arc<TestDb>) -> (Harness, crate::common::search_fixture::SearchFixture) {
    use crate::common::search_fixture::{searxng_page, Mode, SearchFixture};
    let fx = SearchFixture::start().await;
    fx.set(Mode::Ok(searxng_page()));
    let url = format!("{}/search", fx.origin);
    let h = Harness::start_on(
        db,
        move |c| {
            c.web_search.backend = Some(responses_gateway::config::WebSearchBackendKind::Http);
            c.web_search.http.url = Some(url);
        },
        |_| {},
    )
    .await;
    (h, fx)
}

fn roles(messages: &Value) -> Vec<String> {
    messages.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap().to_string()).collect()
}

/// Turn 1 returns a client call, turn 2 answers it by `previous_response_id`, turn 3
/// continues: each upstream request holds the whole chain in order, without earlier
/// `instructions`.
async fn chain_of_three_with_a_tool_round_trip(db: Arc<TestDb>) {
    let h = start(db).await;
    h.upstream.push(Script::text(&["Let me check."]).with_tool(ToolCallScript::new("get_weather", r#"{"city":"Paris"}"#).id("call_w1")));
    let (s, r1) = h.post(json!({"model":"m","instructions":"Be brief.","input":"weather in Paris?","tools":[weather_tool()]})).await;
    assert_eq!(s, 200, "{r1}");
    let cid = r1["output"][1]["call_id"].as_str().unwrap().to_string();
    assert!(cid.starts_with("call_") && cid != "call_w1", "the gateway's own call id");
    h.upstream.push(Script::text(&["Sunny, 18C."]));
    let (s, r2) = h
        .post(json!({"model":"m","instructions":"Answer in English.","previous_response_id":r1["id"],"tools":[weather_tool()],
            "input":[{"type":"function_call_output","call_id":cid,"output":"18C and sunny"}]}))
        .await;
    assert_eq!(s, 200, "{r2}");
    assert_eq!(r2["previous_response_id"], r1["id"]);
    h.upstream.push(Script::text(&["You asked about Paris."]));
    let (s, r3) = h.post(json!({"model":"m","previous_response_id":r2["id"],"input":"what did I ask?"})).await;
    assert_eq!(s, 200, "{r3}");
    assert_eq!(r3["output"][0]["content"][0]["text"], "You asked about Paris.");

    let reqs = h.upstream.requests();
    let m2 = &reqs[1].body["messages"];
    assert_eq!(roles(m2), ["system", "user", "assistant", "tool"]);
    assert_eq!(m2[0]["content"], "Answer in English.", "instructions are not carried over");
    assert_eq!(m2[2]["tool_calls"][0]["id"], cid.as_str());
    assert_eq!(m2[2]["tool_calls"][0]["function"]["arguments"], r#"{"city":"Paris"}"#);
    assert_eq!(m2[3], json!({"role":"tool","tool_call_id":cid,"content":"18C and sunny"}));
    let m3 = &reqs[2].body["messages"];
    assert_eq!(roles(m3), ["user", "assistant", "tool", "assistant", "user"], "{m3}");
    assert_eq!(m3[0]["content"], "weather in Paris?");
    assert_eq!(m3[1]["content"], "Let me check.");
    assert_eq!(m3[2]["content"], "18C and sunny");
    assert_eq!(m3[3]["content"], "Sunny, 18C.");
    assert_eq!(m3[4]["content"], "what did I ask?");
}

/// A gateway tool's output reaches the continuation exactly as the model saw it.
async fn gateway_tool_results_are_replayed(db: Arc<TestDb>) {
    let tool = TestTool::new("lookup", 0, false);
    let h = Harness::start_on(db, |_| {}, move |r| r.register(tool)).await;
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("lookup", r#"{"input":"axum"}"#).id("call_l1")));
    h.upstream.push(Script::text(&["axum it is."]));
    let (s, r1) = h.post(json!({"model":"m","input":"which?","tools":[{"type":"custom","name":"lookup"}]})).await;
    assert_eq!(s, 200, "{r1}");
    h.upstream.push(Script::text(&["ok"]));
    let (s, _) = h.post(json!({"model":"m","previous_response_id":r1["id"],"input":"and?","tools":[{"type":"custom","name":"lookup"}]})).await;
    assert_eq!(s, 200);
    let m = &h.upstream.requests()[2].body["messages"];
    assert_eq!(roles(m), ["user", "assistant", "tool", "assistant", "user"], "{m}");
    assert_eq!(m[1]["tool_calls"][0]["function"]["name"], "lookup");
    let cid = r1["output"][0]["call_id"].as_str().unwrap();
    assert_eq!(m[2], json!({"role":"tool","tool_call_id":cid,"content":"lookup:axum"}));
    assert_eq!(m[3]["content"], "axum it is.");
}

/// Web search results are private (not on the wire): a `previous_response_id`
/// continuation still gives the model exactly the tool message it saw, results included.
async fn search_results_are_replayed_exactly(db: Arc<TestDb>) {
    let (h, _fx) = start_with_searxng(db).await;
    h.upstream.push(Script::tool_call("web_search", r#"{"query":"berlin art week"}"#));
    h.upstream.push(Script::text(&["It runs in September."]));
    let (s, r1) = h.post(json!({"model":"m","input":"When is Berlin Art Week?","tools":[{"type":"web_search"}]})).await;
    assert_eq!(s, 200, "{r1}");
    let seen = h.upstream.requests()[1].body["messages"].clone();
    let tool_msg = seen.as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap().clone();
    assert!(tool_msg["content"].as_str().unwrap().len() > 100, "the model saw the results: {tool_msg}");
    h.upstream.push(Script::text(&["ok"]));
    let (s, _) = h.post(json!({"model":"m","previous_response_id":r1["id"],"input":"Thanks","tools":[{"type":"web_search"}]})).await;
    assert_eq!(s, 200);
    let m = h.upstream.requests()[2].body["messages"].clone();
    let replayed: Vec<&Value> = m.as_array().unwrap().iter().filter(|x| x["role"] == "tool").collect();
    assert_eq!(replayed, vec![&tool_msg], "the same results, not a lossy rebuild");
    assert_eq!(m.as_array().unwrap().len(), seen.as_array().unwrap().len() + 2);

    // Replaying the turn's items instead (as the Agents SDK does) restores them too, also in
    // a store:false request; once the response is deleted, the rebuild from the query is all.
    let mut input = vec![json!({"role":"user","content":"When is Berlin Art Week?"})];
    input.extend(r1["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"role":"user","content":"Thanks"}));
    for store in [true, false] {
        h.upstream.push(Script::text(&["ok"]));
        let (s, r) = h.post(json!({"model":"m","input":input,"tools":[{"type":"web_search"}],"store":store})).await;
        assert_eq!(s, 200, "{r}");
        let m = h.upstream.requests().last().unwrap().body["messages"].clone();
        let replayed: Vec<&Value> = m.as_array().unwrap().iter().filter(|x| x["role"] == "tool").map(|x| &x["content"]).collect();
        assert_eq!(replayed, vec![&tool_msg["content"]], "stored results restored for a replayed item (store: {store})");
    }
    let (s, _) = h.delete(&format!("/v1/responses/{}", r1["id"].as_str().unwrap())).await;
    assert_eq!(s, 200);
    h.upstream.push(Script::text(&["ok"]));
    let (s, _) = h.post(json!({"model":"m","input":input,"tools":[{"type":"web_search"}],"store":false})).await;
    assert_eq!(s, 200);
    let m = h.upstream.requests().last().unwrap().body["messages"].clone();
    let tool = m.as_array().unwrap().iter().find(|x| x["role"] == "tool").unwrap().clone();
    assert!(tool["content"].as_str().unwrap().contains("results not kept"), "{tool}");
}

/// Each replayed `web_search_call` gets its own search's results, also when calls of the
/// same round produced no item (invalid arguments); a replayed item whose query was changed
/// gets the lossy rebuild, not the stored results.
async fn replayed_searches_get_their_own_results(db: Arc<TestDb>) {
    let (h, _fx) = start_with_searxng(db).await;
    h.upstream.push(
        Script::default()
            .with_tool(ToolCallScript::new("web_search", r#"{"query":"mu"}"#))
            .with_tool(ToolCallScript::new("web_search", r#"{"query":""}"#))
            .with_tool(ToolCallScript::new("web_search", r#"{"query":"nu"}"#)),
    );
    h.upstream.push(Script::text(&["done"]));
    let (s, r1) = h.post(json!({"model":"m","input":"x","tools":[{"type":"web_search"}]})).await;
    assert_eq!(s, 200, "{r1}");
    let ws: Vec<Value> = r1["output"].as_array().unwrap().iter().filter(|i| i["type"] == "web_search_call").cloned().collect();
    assert_eq!(ws.len(), 2, "the invalid call has no item: {r1}");
    let mut input = vec![json!({"role":"user","content":"x"})];
    input.extend(r1["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"role":"user","content":"and?"}));
    h.upstream.push(Script::text(&["ok"]));
    let (s, _) = h.post(json!({"model":"m","input":input,"store":false})).await;
    assert_eq!(s, 200);
    let m = h.upstream.requests().last().unwrap().body["messages"].clone();
    let tool = |id: &Value| m.as_array().unwrap().iter().find(|x| x["role"] == "tool" && x["tool_call_id"] == *id).unwrap()["content"].clone();
    for (item, query) in ws.iter().zip(["mu", "nu"]) {
        let content = tool(&item["id"]);
        assert!(content.as_str().unwrap().starts_with(&format!("Web search results for \"{query}\"")), "{query}: {content}");
    }
    // The same item asking something else is not given the stored results.
    let mut changed = input.clone();
    let i = changed.iter().position(|x| x["id"] == ws[0]["id"]).unwrap();
    changed[i]["action"]["query"] = json!("beta");
    changed[i]["action"]["queries"] = json!(["beta"]);
    h.upstream.push(Script::text(&["ok"]));
    let (s, _) = h.post(json!({"model":"m","input":changed,"store":false})).await;
    assert_eq!(s, 200);
    let m = h.upstream.requests().last().unwrap().body["messages"].clone();
    let content = m.as_array().unwrap().iter().find(|x| x["role"] == "tool" && x["tool_call_id"] == ws[0]["id"]).unwrap()["content"].clone();
    assert_eq!(content, json!("Web search for \"beta\" (earlier turn; results not kept)."));
}

/// Unknown, deleted and `store: false` ids: 400 `previous_response_not_found` naming the id.
async fn unknown_deleted_and_unstored_ids_are_400(db: Arc<TestDb>) {
    let h = start(db).await;
    let check = |body: &Value, id: &str| {
        let e = error_of(body);
        assert_eq!(e["type"], "invalid_request_error");
        assert_eq!(e["code"], "previous_response_not_found");
        assert_eq!(e["param"], "previous_response_id");
        assert!(e["message"].as_str().unwrap().contains(id), "{e}");
    };
    let (s, body) = h.post(json!({"model":"m","previous_response_id":"resp_nope","input":"x"})).await;
    assert_eq!(s, 400);
    check(&body, "resp_nope");
    h.upstream.push(Script::text(&["a"]));
    let (_, unstored) = h.post(json!({"model":"m","input":"x","store":false})).await;
    let id = unstored["id"].as_str().unwrap();
    assert_eq!(h.get(&format!("/v1/responses/{id}")).await.0, 404, "store:false writes nothing");
    let (s, body) = h.post(json!({"model":"m","previous_response_id":id,"input":"x"})).await;
    assert_eq!(s, 400);
    check(&body, id);
    h.upstream.push(Script::text(&["b"]));
    let (_, stored) = h.post(json!({"model":"m","input":"x"})).await;
    let id = stored["id"].as_str().unwrap();
    let (s, del) = h.delete(&format!("/v1/responses/{id}")).await;
    assert_eq!(s, 200);
    assert_eq!(del, json!({"id": id, "object": "response", "deleted": true}));
    let (s, body) = h.post(json!({"model":"m","previous_response_id":id,"input":"x"})).await;
    assert_eq!(s, 400);
    check(&body, id);
    let (s, body) = h.delete(&format!("/v1/responses/{id}")).await;
    assert_eq!(s, 404);
    error_of(&body);
    let (s, body) = h.post(json!({"model":"m","previous_response_id":"resp_x","conversation":"conv_y","input":"x"})).await;
    assert_eq!(s, 400, "previous_response_id with conversation");
    assert_eq!(error_of(&body)["type"], "invalid_request_error");
}

/// GET returns the stored Response: the same as the non-streamed answer, and for a stream
/// the `response.completed` payload without progress messages. The stream's terminal
/// event is sent only after the commit, so the GET right after it finds the row.
async fn retrieve_returns_what_was_answered(db: Arc<TestDb>) {
    let tool = TestTool::new("lookup", 0, false);
    let h = Harness::start_on(db, |_| {}, move |r| r.register(tool)).await;
    h.upstream.push(Script::text(&["Hello"]));
    let (_, body) = h.post(json!({"model":"m","input":"hi","metadata":{"k":"v"}})).await;
    let (s, got) = h.get(&format!("/v1/responses/{}", body["id"].as_str().unwrap())).await;
    assert_eq!(s, 200);
    assert_eq!(got, body);
    let (s, got) = h.get(&format!("/v1/responses/{}?stream=false&include[]=file_search_call.results", body["id"].as_str().unwrap())).await;
    assert_eq!((s, &got), (200, &body));
    // `stream=true` replays the events: a valid stream whose terminal Response is the stored one.
    let url = format!("{}/v1/responses/{}?stream=true", h.base, body["id"].as_str().unwrap());
    let raw = h.client.get(&url).send().await.unwrap();
    assert_eq!(raw.headers()["content-type"], "text/event-stream");
    let replayed = crate::common::check_stream(&raw.text().await.unwrap());
    assert_eq!(replayed.terminal_type(), "response.completed");
    assert_eq!(replayed.response, body);
    let deltas: String = replayed.of_type("response.output_text.delta").iter().map(|e| e["delta"].as_str().unwrap()).collect();
    assert_eq!(deltas, "Hello");
    // The replay is numbered anew (one delta per text): resuming by a live sequence number
    // would skip events, so `starting_after` is refused.
    let (s, err) = h.get(&format!("/v1/responses/{}?stream=true&starting_after=3", body["id"].as_str().unwrap())).await;
    assert_eq!((s, error_of(&err)["param"].as_str()), (400, Some("starting_after")));
    // `stream` is a boolean and `include` takes the values `POST` takes, checked the same way.
    let id = body["id"].as_str().unwrap();
    for (query, param) in [
        ("stream=maybe", "stream"),
        ("include=zzz", "include[0]"),
        ("include[]=file_search_call.results&include[]=zzz", "include[1]"),
    ] {
        let (s, err) = h.get(&format!("/v1/responses/{id}?{query}")).await;
        assert_eq!((s, error_of(&err)["param"].as_str()), (400, Some(param)), "{query}: {err}");
    }
    let (s, got) = h.get(&format!("/v1/responses/{id}?stream=FALSE&include=message.output_text.logprobs")).await;
    assert_eq!((s, &got), (200, &body));
    let (s, missing) = h.get("/v1/responses/resp_missing").await;
    assert_eq!(s, 404);
    assert_eq!(error_of(&missing)["type"], "invalid_request_error");

    h.upstream.push(Script::default().with_tool(ToolCallScript::new("lookup", r#"{"input":"z"}"#)));
    h.upstream.push(Script::text(&["done"]));
    let st = h.stream(json!({"model":"m","input":"go","tools":[{"type":"custom","name":"lookup"}]})).await;
    assert_eq!(st.terminal_type(), "response.completed");
    let streamed = st.response.clone();
    let progress = |r: &Value| r["output"].as_array().unwrap().iter().filter(|i| i["id"].as_str().unwrap().starts_with("msg_progress_")).count();
    assert!(progress(&streamed) > 0, "the stream carries progress");
    let (s, got) = h.get(&format!("/v1/responses/{}", streamed["id"].as_str().unwrap())).await;
    assert_eq!(s, 200);
    assert_eq!(progress(&got), 0, "stored responses never carry progress");
    let mut expected = streamed.clone();
    expected["output"].as_array_mut().unwrap().retain(|i| !i["id"].as_str().unwrap().starts_with("msg_progress_"));
    assert_eq!(got, expected);
}

/// `input_items`: this request's items with ids; `limit` 1–100, `order`, `after`.
async fn input_items_paginate(db: Arc<TestDb>) {
    let h = start(db).await;
    h.upstream.push(Script::text(&["ok"]));
    let input = json!([
        {"role":"developer","content":"rules"},
        {"role":"user","content":"one"},
        {"type":"message","role":"user","content":[{"type":"input_text","text":"two"}],"id":"msg_given"},
        {"role":"user","content":"three"}
    ]);
    let (_, body) = h.post(json!({"model":"m","input":input})).await;
    let id = body["id"].as_str().unwrap();
    let (s, all) = h.get(&format!("/v1/responses/{id}/input_items?order=asc")).await;
    assert_eq!(s, 200, "{all}");
    assert_eq!(all["object"], "list");
    let data = all["data"].as_array().unwrap();
    assert_eq!(data.len(), 4);
    assert_eq!(data[1]["content"], json!([{"type":"input_text","text":"one"}]));
    assert_eq!(data[2]["id"], "msg_given");
    assert!(data.iter().all(|i| i["type"] == "message" && i["id"].is_string()));
    assert_eq!(all["first_id"], data[0]["id"]);
    assert_eq!(all["last_id"], data[3]["id"]);
    assert_eq!(all["has_more"], false);
    let (_, page) = h.get(&format!("/v1/responses/{id}/input_items?limit=2")).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 2);
    assert_eq!(page["data"][0]["id"], data[3]["id"], "default order is desc");
    assert_eq!(page["has_more"], true);
    let (_, next) = h.get(&format!("/v1/responses/{id}/input_items?limit=2&after={}", page["last_id"].as_str().unwrap())).await;
    assert_eq!(next["data"][0]["id"], data[1]["id"]);
    assert_eq!(next["data"][1]["id"], data[0]["id"]);
    assert_eq!(next["has_more"], false);
    for (query, param) in [("after=msg_nope", "after"), ("limit=0", "limit"), ("limit=101", "limit"), ("order=sideways", "order")] {
        let (s, e) = h.get(&format!("/v1/responses/{id}/input_items?{query}")).await;
        assert_eq!(s, 400, "{query}");
        assert_eq!(error_of(&e)["param"], param);
    }
    assert_eq!(h.get("/v1/responses/resp_nope/input_items").await.0, 404);
}

/// Failed and incomplete turns are stored with their status.
async fn failed_and_incomplete_turns_are_stored(db: Arc<TestDb>) {
    let h = start(db).await;
    h.upstream.push(Script::http_error(500, "boom"));
    let st = h.stream(json!({"model":"m","input":"x"})).await;
    assert_eq!(st.terminal_type(), "response.failed");
    let (s, got) = h.get(&format!("/v1/responses/{}", st.response["id"].as_str().unwrap())).await;
    assert_eq!(s, 200);
    assert_eq!(got["status"], "failed");
    h.upstream.push(Script::text(&["cut"]).finish("length"));
    let (_, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(body["status"], "incomplete");
    let (_, got) = h.get(&format!("/v1/responses/{}", body["id"].as_str().unwrap())).await;
    assert_eq!(got["status"], "incomplete");
    assert_eq!(got["incomplete_details"]["reason"], "max_output_tokens");
}

/// Restart: a stored response survives the process; the new one continues it.
async fn restart_keeps_responses(db: Arc<TestDb>) {
    let h = start(db.clone()).await;
    h.upstream.push(Script::text(&["first"]));
    let (_, r1) = h.post(json!({"model":"m","input":"remember 42"})).await;
    h.stop().await;
    let h = start(db).await;
    let (s, got) = h.get(&format!("/v1/responses/{}", r1["id"].as_str().unwrap())).await;
    assert_eq!(s, 200);
    assert_eq!(got, r1, "ids and content are stable across restart");
    h.upstream.push(Script::text(&["42"]));
    let (s, r2) = h.post(json!({"model":"m","previous_response_id":r1["id"],"input":"what number?"})).await;
    assert_eq!(s, 200, "{r2}");
    let m = &h.upstream.requests()[0].body["messages"];
    assert_eq!(m[0]["content"], "remember 42");
    assert_eq!(m[1]["content"], "first");
}

/// Two replicas on one database: A returns a client call, B continues it.
async fn two_replicas_continue_each_other(db: Arc<TestDb>) {
    let a = start(db.clone()).await;
    let b = start(db).await;
    a.upstream.push(Script::default().with_tool(ToolCallScript::new("get_weather", r#"{"city":"Oslo"}"#).id("call_o1")));
    let (_, r1) = a.post(json!({"model":"m","input":"Oslo weather?","tools":[weather_tool()]})).await;
    assert_eq!(r1["output"][0]["type"], "function_call");
    let cid = r1["output"][0]["call_id"].as_str().unwrap().to_string();
    b.upstream.push(Script::text(&["Oslo: 3C, snow."]));
    let (s, r2) = b
        .post(json!({"model":"m","previous_response_id":r1["id"],"tools":[weather_tool()],
            "input":[{"type":"function_call_output","call_id":cid,"output":"3C snow"}]}))
        .await;
    assert_eq!(s, 200, "{r2}");
    assert_eq!(r2["output"][0]["content"][0]["text"], "Oslo: 3C, snow.");
    let m = &b.upstream.requests()[0].body["messages"];
    assert_eq!(roles(m), ["user", "assistant", "tool"]);
    assert_eq!(m[1]["tool_calls"][0]["id"], cid.as_str());
    assert_eq!(m[1]["tool_calls"][0]["function"]["arguments"], r#"{"city":"Oslo"}"#);
    assert_eq!(m[2], json!({"role":"tool","tool_call_id":cid,"content":"3C snow"}));
    assert!(a.upstream.requests().len() == 1, "A saw only turn 1");
    let (s, _) = a.get(&format!("/v1/responses/{}", r2["id"].as_str().unwrap())).await;
    assert_eq!(s, 200, "A reads what B stored");
}

/// A client that disconnects stops a stored foreground turn (issue 28): its running tool
/// and its rounds stop, and it is stored `incomplete` with the output it had, which a
/// continuation can build on.
async fn disconnected_stored_turn_is_stored_incomplete(db: Arc<TestDb>) {
    use futures_util::StreamExt;
    let slow = TestTool::new("slow", 5_000, false);
    let probe = slow.clone();
    let h = Harness::start_on(db, |_| {}, move |r| r.register(slow)).await;
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("slow", r#"{"input":"z"}"#)));
    h.upstream.push(Script::text(&["never sent"]));
    let body = json!({"model":"m","input":"x","stream":true,"tools":[{"type":"custom","name":"slow"}]});
    let resp = h.client.post(format!("{}/v1/responses", h.base)).json(&body).send().await.unwrap();
    let mut stream = resp.bytes_stream();
    let mut seen = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if seen.contains("custom_tool_call") {
            break;
        }
    }
    drop(stream);
    let id = seen.split("\"id\":\"").nth(1).and_then(|s| s.split('"').next()).unwrap().to_string();
    assert!(id.starts_with("resp_"), "{id}");
    let mut got = Value::Null;
    for _ in 0..400 {
        let (s, body) = h.get(&format!("/v1/responses/{id}")).await;
        if s == 200 {
            got = body;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(got["status"], "incomplete", "{got}");
    let types: Vec<&str> = got["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["custom_tool_call", "custom_tool_call_output"], "{got}");
    assert_eq!(got["output"][1]["status"], "incomplete");
    assert_eq!(probe.completed.load(std::sync::atomic::Ordering::SeqCst), 0, "the tool was stopped");
    assert_eq!(h.upstream.requests().len(), 1, "no round after the disconnect");
    // What was stored is kept: the next turn continues from it.
    let (s, next) = h.post(json!({"model":"m","input":"go on","previous_response_id":id})).await;
    assert_eq!(s, 200, "{next}");
    let sent = h.upstream.requests().pop().unwrap().body;
    assert!(sent["messages"].to_string().contains("stopped before this call finished"), "{sent}");
}

/// The database goes away: stored turns and lookups get 503 from prepare (before any
/// stream starts); `store: false` turns still work.
async fn store_down_is_503_and_store_false_still_works(db: Arc<TestDb>) {
    let h = Harness::start_on(db.clone(), |c| c.store.acquire_timeout_ms = 1000, |_| {}).await;
    h.upstream.push(Script::text(&["kept"]));
    let (_, r1) = h.post(json!({"model":"m","input":"x"})).await;
    db.take_away(&h.store).await;
    for body in [json!({"model":"m","input":"x"}), json!({"model":"m","input":"x","stream":true}), json!({"model":"m","input":"x","previous_response_id":r1["id"]})] {
        let (s, e) = h.post(body.clone()).await;
        assert_eq!(s, 503, "{body} → {e}");
        let e = error_of(&e);
        assert_eq!(e["type"], "server_error");
        assert_eq!(e["code"], "store_unavailable");
    }
    assert_eq!(h.get(&format!("/v1/responses/{}", r1["id"].as_str().unwrap())).await.0, 503);
    assert_eq!(h.upstream.requests().len(), 1, "no upstream call for a turn that could not be stored");
    h.upstream.push(Script::text(&["still here"]));
    let (s, body) = h.post(json!({"model":"m","input":"x","store":false})).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["output"][0]["content"][0]["text"], "still here");
}

/// A corrupt or oversized row: a clear 500, no panic, no other row's content.
async fn corrupt_and_oversized_rows_are_500(db: Arc<TestDb>) {
    let h = Harness::start_on(db, |c| c.store.max_row_chars = 4000, |_| {}).await;
    h.upstream.push(Script::text(&["good"]));
    let (_, good) = h.post(json!({"model":"m","input":"x"})).await;
    h.upstream.push(Script::text(&["bad"]));
    let (_, bad) = h.post(json!({"model":"m","input":"x"})).await;
    let bad_id = bad["id"].as_str().unwrap();
    sqlx::query("UPDATE responses SET response = $1, transcript = $1 WHERE id = $2")
        .bind("{\"secret_fragment\": ")
        .bind(bad_id)
        .execute(h.store.pool())
        .await
        .unwrap();
    let (s, e) = h.get(&format!("/v1/responses/{bad_id}")).await;
    assert_eq!(s, 500);
    let err = error_of(&e);
    assert_eq!(err["type"], "server_error");
    assert!(err["message"].as_str().unwrap().contains(bad_id), "{err}");
    assert!(!e.to_string().contains("secret_fragment"), "{e}");
    let (s, _) = h.post(json!({"model":"m","previous_response_id":bad_id,"input":"x"})).await;
    assert_eq!(s, 500, "continuing a corrupt transcript");
    let big = format!("\"{}\"", "x".repeat(5000));
    sqlx::query("UPDATE responses SET response = $1 WHERE id = $2").bind(&big).bind(bad_id).execute(h.store.pool()).await.unwrap();
    let (s, e) = h.get(&format!("/v1/responses/{bad_id}")).await;
    assert_eq!(s, 500);
    assert!(error_of(&e)["message"].as_str().unwrap().contains("too large"), "{e}");
    assert!(!e.to_string().contains("xxxxxxxxxx"));
    let (s, got) = h.get(&format!("/v1/responses/{}", good["id"].as_str().unwrap())).await;
    assert_eq!(s, 200, "other rows are unaffected");
    assert_eq!(got, good);
}

on_both_backends!(
    chain_of_three_with_a_tool_round_trip,
    gateway_tool_results_are_replayed,
    search_results_are_replayed_exactly,
    replayed_searches_get_their_own_results,
    unknown_deleted_and_unstored_ids_are_400,
    retrieve_returns_what_was_answered,
    input_items_paginate,
    failed_and_incomplete_turns_are_stored,
    restart_keeps_responses,
    two_replicas_continue_each_other,
    disconnected_stored_turn_is_stored_incomplete,
    store_down_is_503_and_store_false_still_works,
    corrupt_and_oversized_rows_are_500,
);
