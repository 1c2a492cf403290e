//! Integration tests of `POST /v1/responses` over a scripted chat-completions upstream.


use crate::common::{error_of, items_without_ids, Harness};
use scripted_upstream::{Script, ToolCallScript};
use serde_json::{json, Value};

fn weather_tool() -> Value {
    json!({"type":"function","name":"get_weather","description":"Weather for a city",
           "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}})
}

#[tokio::test]
async fn plain_text_non_stream_and_stream_agree() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["Hel", "lo", " wörld"]).usage(7, 3));
    let (status, body) = h.post(json!({"model":"m","input":"hi","instructions":"Be brief."})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["output"][0]["content"][0]["text"], "Hello wörld");
    assert_eq!(body["output"][0]["phase"], "final_answer");
    assert_eq!(body["usage"]["input_tokens"], 7);
    assert_eq!(body["usage"]["output_tokens"], 3);
    assert_eq!(body["usage"]["total_tokens"], 10);
    for key in ["temperature", "top_p", "tool_choice", "tools", "truncation", "parallel_tool_calls", "store", "background", "service_tier", "text", "metadata"] {
        assert!(!body[key].is_null(), "{key} must not be null");
    }
    assert_eq!(body["instructions"], "Be brief.");
    h.upstream.push(Script::text(&["Hel", "lo", " wörld"]).usage(7, 3));
    let s = h.stream(json!({"model":"m","input":"hi","instructions":"Be brief."})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    assert_eq!(items_without_ids(&s.response), items_without_ids(&body));
    // the added message has no phase; done carries it
    let added = s.of_type("response.output_item.added");
    assert!(added[0]["item"].get("phase").is_none(), "{}", added[0]);
    let reqs = h.upstream.requests();
    let msgs = &reqs[0].body["messages"];
    assert_eq!(msgs[0], json!({"role":"system","content":"Be brief."}));
    assert_eq!(msgs[1], json!({"role":"user","content":"hi"}));
    assert_eq!(reqs[0].body["stream"], true);
}

#[tokio::test]
async fn sampling_and_format_are_passed_on_and_echoed() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["{}"]));
    let (status, body) = h
        .post(json!({"model":"m","input":"x","temperature":0.2,"top_p":0.9,"max_output_tokens":100,
            "metadata":{"k":"v"},"user":"u1","prompt_cache_key":"pk","safety_identifier":"s1","reasoning":{"effort":"low","summary":"auto"},
            "text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}}}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["max_output_tokens"], 100);
    assert_eq!(body["metadata"], json!({"k":"v"}));
    assert_eq!(body["user"], "u1");
    assert_eq!(body["prompt_cache_key"], "pk");
    assert_eq!(body["safety_identifier"], "s1");
    assert_eq!(body["text"]["format"]["type"], "json_schema");
    let up = &h.upstream.requests()[0].body;
    assert_eq!(up["temperature"], 0.2);
    assert_eq!(up["top_p"], 0.9);
    assert_eq!(up["max_tokens"], 100);
    assert_eq!(up["user"], "u1");
    assert_eq!(up["reasoning_effort"], "low", "reasoning.effort is passed on");
    assert_eq!(body["reasoning"]["effort"], "low");
    let (status, body) = h.post(json!({"model":"m","input":"x","reasoning":{"effort":"ultra"}})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_of(&body)["param"], "reasoning.effort");
    let (status, body) = h.post(json!({"model":"m","input":"x","reasoning":{"summary":"bogus"}})).await;
    assert_eq!((status, error_of(&body)["param"].as_str()), (400, Some("reasoning.summary")), "{body}");
    h.upstream.push(Script::text(&["ok"]));
    let (status, _) = h.post(json!({"model":"m","input":"x","reasoning":{"effort":null}})).await;
    assert_eq!(status, 200);
    assert!(h.upstream.requests().last().unwrap().body.get("reasoning_effort").is_none(), "no effort, no field");
    assert_eq!(up["response_format"], json!({"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}}));
}

#[tokio::test]
async fn function_call_streams_and_is_returned_to_the_client() {
    let h = Harness::start().await;
    let call = ToolCallScript::new("get_weather", r#"{"city":"Paris"}"#).fragment_chars(3).pretty(true).id("abc123XYZ");
    h.upstream.push(Script::text(&["Let me check."]).with_tool(call));
    let s = h.stream(json!({"model":"m","input":"weather?","tools":[weather_tool()]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let out = s.response["output"].as_array().unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["type"], "message");
    assert_eq!(out[0]["phase"], "commentary");
    assert_eq!(out[1]["type"], "function_call");
    let call_id = out[1]["call_id"].as_str().unwrap();
    assert!(call_id.starts_with("call_") && call_id != "abc123XYZ", "the gateway's own unique call id: {call_id}");
    assert_eq!(out[1]["status"], "completed");
    let args: Value = serde_json::from_str(out[1]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city":"Paris"}));
    assert!(s.of_type("response.function_call_arguments.delta").len() > 2, "arguments stream in pieces");
    let done = s.of_type("response.function_call_arguments.done");
    assert_eq!(done[0]["name"], "get_weather");
    let up = &h.upstream.requests()[0].body;
    assert_eq!(up["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(up["tool_choice"], "auto");
}

#[tokio::test]
async fn function_replay_with_store_false_rebuilds_the_transcript() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("get_weather", r#"{"city":"Paris"}"#));
    let (_, first) = h.post(json!({"model":"m","input":"weather?","tools":[weather_tool()],"store":false})).await;
    let call = first["output"][0].clone();
    assert_eq!(call["type"], "function_call");
    h.upstream.push(Script::text(&["Sunny."]));
    let input = json!([
        {"role":"user","content":"weather?"},
        call,
        {"type":"function_call_output","call_id":call["call_id"],"output":[{"type":"input_text","text":"18C"}]}
    ]);
    let (status, second) = h.post(json!({"model":"m","input":input,"tools":[weather_tool()],"store":false})).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["output"][0]["content"][0]["text"], "Sunny.");
    let msgs = h.upstream.requests()[1].body["messages"].clone();
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["tool_calls"][0]["id"], call["call_id"]);
    assert_eq!(msgs[1]["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(msgs[2], json!({"role":"tool","tool_call_id":call["call_id"],"content":"18C"}));
}

#[tokio::test]
async fn custom_tool_streams_raw_input() {
    let h = Harness::start().await;
    let tool = json!({"type":"custom","name":"run_sql","description":"Run SQL"});
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("run_sql", r#"{"input":"SELECT \"a\"\nFROM t"}"#).fragment_chars(2)));
    let s = h.stream(json!({"model":"m","input":"q","tools":[tool]})).await;
    let out = &s.response["output"][0];
    assert_eq!(out["type"], "custom_tool_call");
    assert_eq!(out["input"], "SELECT \"a\"\nFROM t");
    let deltas: String = s.of_type("response.custom_tool_call_input.delta").iter().map(|e| e["delta"].as_str().unwrap()).collect();
    assert_eq!(deltas, "SELECT \"a\"\nFROM t");
    let up = &h.upstream.requests()[0].body;
    let params = &up["tools"][0]["function"]["parameters"];
    assert_eq!(params["required"], json!(["input"]));
    assert_eq!(params["properties"].as_object().unwrap().len(), 1);
    // replay
    h.upstream.push(Script::text(&["1 row"]));
    let input = json!([{"role":"user","content":"q"}, out, {"type":"custom_tool_call_output","call_id":out["call_id"],"output":"a=1"}]);
    let (status, body) = h.post(json!({"model":"m","input":input,"tools":[tool]})).await;
    assert_eq!(status, 200, "{body}");
    let msgs = h.upstream.requests()[1].body["messages"].clone();
    assert_eq!(msgs[1]["tool_calls"][0]["function"]["arguments"], r#"{"input":"SELECT \"a\"\nFROM t"}"#);
    assert_eq!(msgs[2]["content"], "a=1");
}

#[tokio::test]
async fn namespace_members_are_declared_unambiguously_and_come_back_with_namespace() {
    let h = Harness::start().await;
    let ns = json!({"type":"namespace","name":"crm","description":"CRM tools","tools":[
        {"type":"function","name":"lookup","parameters":{"type":"object","properties":{"id":{"type":"string"}}}},
        {"type":"custom","name":"note"}]});
    h.upstream.push(Script::tool_call("crm__lookup", r#"{"id":"7"}"#));
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":[ns]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"][0]["name"], "lookup");
    assert_eq!(body["output"][0]["namespace"], "crm");
    let names: Vec<String> = h.upstream.requests()[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, vec!["crm__lookup", "crm__note"]);
    let about = h.upstream.requests()[0].body["tools"][0]["function"]["description"].clone();
    assert_eq!(about, "CRM tools", "the model sees the namespace's description");
    // replay with namespace
    h.upstream.push(Script::text(&["ok"]));
    let call = body["output"][0].clone();
    let input = json!([{"role":"user","content":"x"}, call, {"type":"function_call_output","call_id":call["call_id"],"output":"found"}]);
    let (status, _) = h.post(json!({"model":"m","input":input,"tools":[ns]})).await;
    assert_eq!(status, 200);
    assert_eq!(h.upstream.requests()[1].body["messages"][1]["tool_calls"][0]["function"]["name"], "crm__lookup");
}

#[tokio::test]
async fn tool_choice_variants_map_upstream() {
    let h = Harness::start().await;
    let other = json!({"type":"function","name":"other"});
    let cases = vec![
        (json!("none"), None, None),
        (json!("required"), Some(2), Some(json!("required"))),
        (json!({"type":"function","name":"other"}), Some(2), Some(json!({"type":"function","function":{"name":"other"}}))),
        (json!({"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"other"}]}), Some(1), Some(json!("auto"))),
    ];
    for (i, (choice, n_tools, up_choice)) in cases.into_iter().enumerate() {
        // A forcing choice is answered with a call (a text answer would be asked again).
        let forcing = matches!(i, 1 | 2);
        h.upstream.push(if forcing { Script::tool_call("other", "{}") } else { Script::text(&["ok"]) });
        let (status, body) = h.post(json!({"model":"m","input":"x","tools":[weather_tool(), other],"tool_choice":choice})).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["tool_choice"], choice, "echo");
        let up = &h.upstream.requests()[i].body;
        assert_eq!(up.get("tools").map(|t| t.as_array().unwrap().len()), n_tools, "case {i}: {up}");
        assert_eq!(up.get("tool_choice").cloned(), up_choice, "case {i}");
    }
}

#[tokio::test]
async fn bad_requests_get_openai_shaped_400s() {
    let h = Harness::start().await;
    let (s, b) = h.post_raw("{not json").await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&b)["type"], "invalid_request_error");
    let (s, b) = h.post(json!({"model":"m","input":"x","temperature":"hot"})).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&b)["param"], "temperature");
    let (s, b) = h.post(json!({"model":"m","input":"x","tools":[{"type":"telepathy"}]})).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&b)["param"], "tools[0].type");
    let (s, b) = h.post(json!({"model":"m","input":"x","tools":[weather_tool()],"tool_choice":{"type":"function","name":"nope"}})).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&b)["param"], "tool_choice");
    assert_eq!(error_of(&b)["message"], "Tool choice 'nope' not found in 'tools' parameter.");
    // `allowed_tools` entries are checked as a named choice is: by type and name.
    for allowed in [json!({"type":"custom","name":"get_weather"}), json!({"name":"get_weather"}), json!({"type":"web_search"})] {
        let choice = json!({"type":"allowed_tools","mode":"auto","tools":[allowed]});
        let (s, b) = h.post(json!({"model":"m","input":"x","tools":[weather_tool()],"tool_choice":choice})).await;
        assert_eq!((s, error_of(&b)["param"].as_str()), (400, Some("tool_choice")), "{allowed}: {b}");
    }
    let (s, b) = h.post(json!({"model":"m","input":"x","tools":[weather_tool(), weather_tool()]})).await;
    assert_eq!(s, 400, "duplicate names: {b}");
    let (s, b) = h.post(json!({"model":"m","input":"x","tools":[{"type":"custom","name":"c","format":{"type":"grammar","syntax":"regex","definition":"(unclosed"}}]})).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&b)["param"], "tools[0].format.definition");
    let (s, b) = h.post(json!({"model":"m","input":[{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}]})).await;
    assert_eq!(s, 400);
    assert!(error_of(&b)["message"].as_str().unwrap().contains("call_1"));
    let (s, b) = h.post(json!({"model":"m","input":[{"role":"user","content":[{"type":"input_file","filename":"x.pdf","file_data":"data:application/pdf;base64,JVBERi0="}]}]})).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&b)["code"], "unsupported_file");
    // Anything after the JSON value, or a body that is not an object.
    for raw in [r#"{"model":"m","input":"a"} xyz"#, r#"{"model":"m","input":"a"}}"#, r#"{"model":"m","input":"a"}{"model":"m"}"#] {
        let (s, b) = h.post_raw(raw).await;
        assert_eq!((s, &error_of(&b)["param"]), (400, &Value::Null), "{raw}: {b}");
    }
    let (s, b) = h.post_raw(r#"[{"model":"m"}]"#).await;
    assert_eq!((s, error_of(&b)["message"].as_str()), (400, Some("Invalid request body: expected a JSON object.")), "{b}");
    // Enumerated and bounded fields are checked, not echoed as given.
    for (field, value) in [("service_tier", json!("bogus")), ("prompt_cache_retention", json!("forever")), ("top_logprobs", json!(21))] {
        let (s, b) = h.post(json!({"model":"m","input":"x", field: value})).await;
        assert_eq!((s, &error_of(&b)["param"]), (400, &json!(field)), "{b}");
    }
    let (s, b) = h.post(json!({"model":"m","input":[{"type":"function_call_output","call_id":"c","output":null}]})).await;
    assert!(s == 400 && error_of(&b)["message"].as_str().unwrap().contains("'output' as a string or a list of content parts"), "{b}");
    // unknown top-level fields are ignored by default
    h.upstream.push(Script::text(&["ok"]));
    let (s, _) = h.post(json!({"model":"m","input":"x","frobnicate":1})).await;
    assert_eq!(s, 200);
    assert!(h.upstream.requests().len() == 1, "bad requests never reach the upstream");
}

/// The tier that served the request is echoed: `auto` is the gateway's one tier, `default`;
/// `fast` is reported as `priority` (contract §1.1).
#[tokio::test]
async fn service_tier_echoes_the_tier_used() {
    let h = Harness::start().await;
    for (asked, echoed) in [(None, "default"), (Some("auto"), "default"), (Some("fast"), "priority"), (Some("flex"), "flex")] {
        h.upstream.push(Script::text(&["ok"]));
        let mut body = json!({"model":"m","input":"x"});
        if let Some(t) = asked {
            body["service_tier"] = json!(t);
        }
        let (s, b) = h.post(body).await;
        assert_eq!((s, b["service_tier"].as_str()), (200, Some(echoed)), "{asked:?}: {b}");
    }
}

#[tokio::test]
async fn unknown_parameters_can_be_rejected() {
    let h = Harness::start_with(|c| c.server.reject_unknown_parameters = true).await;
    let (s, b) = h.post(json!({"model":"m","input":"x","frobnicate":1})).await;
    assert_eq!(s, 400);
    assert_eq!(error_of(&b)["code"], "unknown_parameter");
    assert_eq!(error_of(&b)["param"], "frobnicate");
}

#[tokio::test]
async fn models_table_maps_and_restricts() {
    let h = Harness::start_with(|c| c.models = Some([("public".to_string(), "internal".to_string())].into())).await;
    h.upstream.push(Script::text(&["ok"]));
    let (s, b) = h.post(json!({"model":"public","input":"x"})).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["model"], "public");
    assert_eq!(h.upstream.requests()[0].body["model"], "internal");
    let (s, b) = h.post(json!({"model":"other","input":"x"})).await;
    assert_eq!(s, 404);
    assert_eq!(error_of(&b)["code"], "model_not_found");
    let (s, b) = h.get("/v1/models").await;
    assert_eq!(s, 200);
    assert_eq!(b["data"][0]["id"], "public");
    let h = Harness::start_with(|c| {
        c.models = Some([("public".to_string(), "internal".to_string()), ("org/m-1".to_string(), "internal".to_string())].into())
    })
    .await;
    let (s, b) = h.get("/v1/models/org/m-1").await;
    assert_eq!((s, b["id"].as_str()), (200, Some("org/m-1")), "an id with a slash: {b}");
    let (s, b) = h.get("/v1/models/public").await;
    assert_eq!((s, b["id"].as_str(), b["object"].as_str()), (200, Some("public"), Some("model")), "{b}");
    let (s, b) = h.get("/v1/models/internal").await;
    assert_eq!(s, 404, "the upstream name is not a public model: {b}");
    assert_eq!(error_of(&b)["code"], "model_not_found");
    let plain = Harness::start().await;
    let (s, b) = plain.get("/v1/models").await;
    assert_eq!(s, 200);
    assert_eq!(b["data"][0]["id"], "scripted-model", "proxied from the upstream");
    let (s, b) = plain.get("/v1/models/scripted-model").await;
    assert_eq!((s, b["id"].as_str()), (200, Some("scripted-model")), "{b}");
    let (s, b) = plain.get("/v1/models/nope").await;
    assert_eq!(s, 404, "{b}");
    assert_eq!(error_of(&b)["param"], "model");
}

#[tokio::test]
async fn health_and_readiness() {
    let h = Harness::start().await;
    assert_eq!(h.get("/healthz").await.0, 200);
    assert_eq!(h.get("/readyz").await.0, 200);
    let down = Harness::start_with(|c| c.upstream.url = Some("http://127.0.0.1:9/v1".into())).await;
    assert_eq!(down.get("/healthz").await.0, 200);
    assert_eq!(down.get("/readyz").await.0, 503);
}

/// `include` takes the API's values only (e.g. Codex's `reasoning.encrypted_content`); an
/// unknown one is a 400 naming it, before any model call. The playground answers with a
/// trailing slash too.
#[tokio::test]
async fn include_values_are_checked_and_the_playground_has_a_trailing_slash_route() {
    let h = Harness::start().await;
    let (s, b) = h.post(json!({"model":"m","input":"x","include":["reasoning.encrypted_content","bogus.include"]})).await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(error_of(&b)["param"], "include[1]");
    assert!(error_of(&b)["message"].as_str().unwrap().contains("bogus.include"));
    assert!(h.upstream.requests().is_empty());
    h.upstream.push(Script::text(&["ok"]));
    let (s, b) = h.post(json!({"model":"m","input":"x","include":["reasoning.encrypted_content","file_search_call.results"]})).await;
    assert_eq!(s, 200, "{b}");
    // `/playground/` redirects to the page's own URL, from where its relative URLs resolve.
    let resp = h.client.get(format!("{}/playground/", h.base)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let page_url = resp.url().clone();
    let page = resp.text().await.unwrap();
    assert!(page.contains("<html"));
    for asset in ["playground/app.js", "playground/style.css", "playground/favicon.svg"] {
        assert!(page.contains(asset), "{asset}");
        let url = page_url.join(asset).unwrap();
        let status = h.client.get(url.clone()).send().await.unwrap().status().as_u16();
        assert_eq!(status, 200, "{url} (the page was at {page_url})");
    }
}

/// Streamed text is never held: with the model pausing between tokens, each delta reaches
/// the client while the next token is still being generated (the SSE body only joins
/// events that are produced together).
#[tokio::test]
async fn each_delta_is_delivered_before_the_next_token_exists() {
    use futures_util::StreamExt;
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["alpha ", "bravo ", "charlie"]).delay_ms(300));
    let resp = h
        .client
        .post(format!("{}/v1/responses", h.base))
        .json(&json!({"model": "m", "input": "hi", "stream": true, "store": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let mut stream = resp.bytes_stream();
    let mut seen = String::new();
    let mut when_alpha_arrived = None;
    let mut when_bravo_arrived = None;
    while let Some(Ok(chunk)) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if when_alpha_arrived.is_none() && seen.contains("\"delta\":\"alpha \"") {
            when_alpha_arrived = Some(seen.clone());
        }
        if when_bravo_arrived.is_none() && seen.contains("\"delta\":\"bravo \"") {
            when_bravo_arrived = Some(seen.clone());
        }
    }
    let alpha = when_alpha_arrived.expect("alpha delta");
    assert!(alpha.contains("response.created") && !alpha.contains("bravo"), "the first delta waited for the next token:\n{alpha}");
    let bravo = when_bravo_arrived.expect("bravo delta");
    assert!(!bravo.contains("charlie") && !bravo.contains("response.completed"), "the second delta waited:\n{bravo}");
    assert!(seen.contains("response.completed"));
}

/// Upstream reasoning (`reasoning_content`, or `reasoning` on newer servers) becomes a
/// `reasoning` item with a `reasoning_text` part, closed before the answer starts; the
/// non-streamed response has the same items; the next turn does not send it back.
#[tokio::test]
async fn upstream_reasoning_is_a_reasoning_item_before_the_answer() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["Paris", "."]).reasoning(&["The user", " asks."]).usage(5, 4));
    let s = h.stream(json!({"model":"m","input":"capital of France?","store":true})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let out = s.response["output"].as_array().unwrap();
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0]["type"], "reasoning");
    assert_eq!(out[0]["status"], "completed");
    assert_eq!(out[0]["summary"], json!([]));
    assert_eq!(out[0]["content"], json!([{"type":"reasoning_text","text":"The user asks."}]));
    assert!(out[0]["id"].as_str().unwrap().starts_with("rs_"));
    assert_eq!(out[1]["type"], "message");
    assert_eq!(out[1]["content"][0]["text"], "Paris.", "reasoning never leaks into the answer");
    assert_eq!(out[1]["phase"], "final_answer");
    let deltas: Vec<&str> = s.of_type("response.reasoning_text.delta").iter().map(|e| e["delta"].as_str().unwrap()).collect();
    assert_eq!(deltas, ["The user", " asks."]);
    // The reasoning item is done before the message is added.
    let types: Vec<&str> = s.events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let reasoning_done = types.iter().position(|t| *t == "response.output_item.done").unwrap();
    let message_added = types.iter().rposition(|t| *t == "response.output_item.added").unwrap();
    assert!(reasoning_done < message_added, "{types:?}");

    h.upstream.push(Script::text(&["Paris", "."]).reasoning(&["The user", " asks."]).usage(5, 4));
    let (status, body) = h.post(json!({"model":"m","input":"capital of France?"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(items_without_ids(&body), items_without_ids(&s.response));

    // The continuation sends the answer back, not the reasoning.
    h.upstream.push(Script::text(&["Yes."]));
    let (status, _) = h.post(json!({"model":"m","input":"sure?","previous_response_id":s.response["id"]})).await;
    assert_eq!(status, 200);
    let reqs = h.upstream.requests();
    let last = serde_json::to_string(&reqs.last().unwrap().body["messages"]).unwrap();
    assert!(last.contains("Paris.") && !last.contains("The user asks"), "{last}");
}

/// The model's refusal (`delta.refusal`) is a `refusal` content part with its own events
/// (`response.refusal.delta` / `.done`), after any text part; never `output_text`. The
/// non-streamed and stored responses fold the same parts, and the next turn sends it back.
#[tokio::test]
async fn upstream_refusal_is_a_refusal_part() {
    let h = Harness::start().await;
    h.upstream.push(Script::default().refusal(&["I can't", " help with that."]));
    let s = h.stream(json!({"model":"m","input":"something bad","store":true})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let out = s.response["output"].as_array().unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["content"], json!([{"type":"refusal","refusal":"I can't help with that."}]));
    assert_eq!(out[0]["phase"], "final_answer");
    let added = s.of_type("response.content_part.added");
    assert_eq!(added[0]["part"], json!({"type":"refusal","refusal":""}));
    let deltas: Vec<&str> = s.of_type("response.refusal.delta").iter().map(|e| e["delta"].as_str().unwrap()).collect();
    assert_eq!(deltas, ["I can't", " help with that."]);
    assert_eq!(s.of_type("response.refusal.done")[0]["refusal"], "I can't help with that.");
    assert!(s.of_type("response.output_text.delta").is_empty() && s.of_type("response.output_text.done").is_empty());

    // Text, then a refusal: the text's message is done (commentary) before the refusal's
    // is added, so neither items nor parts overlap.
    h.upstream.push(Script::text(&["Let me see."]).refusal(&["No."]));
    let s2 = h.stream(json!({"model":"m","input":"again","store":false})).await;
    let out2 = s2.response["output"].as_array().unwrap();
    assert_eq!(out2[0]["content"], json!([{"type":"output_text","text":"Let me see.","annotations":[],"logprobs":[]}]));
    assert_eq!((out2[0]["phase"].as_str(), out2[1]["phase"].as_str()), (Some("commentary"), Some("final_answer")));
    assert_eq!(out2[1]["content"], json!([{"type":"refusal","refusal":"No."}]));
    let first_done = s2.events.iter().position(|e| e["type"] == "response.output_item.done").unwrap();
    let second_added = s2.events.iter().rposition(|e| e["type"] == "response.output_item.added").unwrap();
    assert!(first_done < second_added, "{}", s2.raw);
    h.upstream.push(Script::text(&["Let me see."]).refusal(&["No."]));
    let (status, body) = h.post(json!({"model":"m","input":"again","store":false})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(items_without_ids(&body), items_without_ids(&s2.response));
    // Replayed (store=false), the two messages are one assistant turn, as the model wrote it.
    let mut input = vec![json!({"role":"user","content":"again"})];
    input.extend(body["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"role":"user","content":"why?"}));
    h.upstream.push(Script::text(&["Policy."]));
    let (status, _) = h.post(json!({"model":"m","input":input,"store":false})).await;
    assert_eq!(status, 200);
    let sent = h.upstream.requests().pop().unwrap().body["messages"].clone();
    assert_eq!(sent, json!([{"role":"user","content":"again"},{"role":"assistant","content":"Let me see.No."},{"role":"user","content":"why?"}]));

    // The stored response replays its refusal as events, and the next turn sends it back.
    let id = s.response["id"].as_str().unwrap();
    let raw = h.client.get(format!("{}/v1/responses/{id}?stream=true", h.base)).send().await.unwrap();
    let replayed = crate::common::check_stream(&raw.text().await.unwrap());
    assert_eq!(replayed.response, s.response);
    assert_eq!(replayed.of_type("response.refusal.delta")[0]["delta"], "I can't help with that.");
    h.upstream.push(Script::text(&["Fine."]));
    let (status, _) = h.post(json!({"model":"m","input":"ok","previous_response_id":id})).await;
    assert_eq!(status, 200);
    let last = serde_json::to_string(&h.upstream.requests().last().unwrap().body["messages"]).unwrap();
    assert!(last.contains("I can't help with that."), "{last}");
}

/// Reasoning cut by `max_output_tokens` closes `incomplete`; a call after reasoning
/// closes the reasoning item first.
#[tokio::test]
async fn reasoning_cut_by_length_is_incomplete_and_precedes_calls() {
    let h = Harness::start().await;
    h.upstream.push(Script::default().reasoning(&["Thinking", " more"]).finish("length"));
    let s = h.stream(json!({"model":"m","input":"x","max_output_tokens":16})).await;
    assert_eq!(s.terminal_type(), "response.incomplete");
    assert_eq!(s.response["output"][0]["type"], "reasoning");
    assert_eq!(s.response["output"][0]["status"], "incomplete");

    h.upstream.push(Script::tool_call("get_weather", r#"{"city":"Oslo"}"#).reasoning(&["Need weather."]));
    let s = h.stream(json!({"model":"m","input":"weather?","tools":[weather_tool()]})).await;
    let out = s.response["output"].as_array().unwrap();
    let kinds: Vec<&str> = out.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["reasoning", "function_call"]);
    assert_eq!(out[0]["status"], "completed");
}

/// Whitespace before any visible text (vLLM and DeepSeek send `"\n\n"` after the reasoning)
/// opens no message: a call that follows is not preceded by an empty commentary; visible
/// text that follows keeps it.
#[tokio::test]
async fn leading_whitespace_opens_no_message() {
    let h = Harness::start().await;
    h.upstream.push(Script::tool_call("get_weather", r#"{"city":"Oslo"}"#).reasoning(&["Need weather."]).with_text(&["\n", "\n"]));
    let s = h.stream(json!({"model":"m","input":"weather?","tools":[weather_tool()]})).await;
    let kinds: Vec<&str> = s.response["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["reasoning", "function_call"]);

    h.upstream.push(Script::text(&["\n\n", "Hi", "!"]).reasoning(&["Greet."]));
    let s = h.stream(json!({"model":"m","input":"hello"})).await;
    assert_eq!(s.response["output"][1]["content"][0]["text"], "\n\nHi!");

    h.upstream.push(Script::text(&[" ", "\n"]));
    let (status, body) = h.post(json!({"model":"m","input":"say nothing"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["output"], json!([]));
}

/// An upstream that ignores `stream: true` and answers one `chat.completion` JSON body (text,
/// or tool calls) gives the same answer as a streamed one, streamed to the client or not.
#[tokio::test]
async fn a_json_answer_to_a_streamed_request_is_read_as_one_chunk() {
    let h = Harness::start().await;
    let text = r#"{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}"#;
    h.upstream.push(Script::http_error(200, text));
    let (status, body) = h.post(json!({"model":"m","input":"capital?"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"][0]["content"][0]["text"], "Paris.");
    assert_eq!(body["usage"]["output_tokens"], 2);
    h.upstream.push(Script::http_error(200, text));
    let s = h.stream(json!({"model":"m","input":"capital?"})).await;
    assert_eq!(s.response["status"], "completed");
    assert_eq!(s.response["output"][0]["content"][0]["text"], "Paris.");
    let call = r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"x1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}"#;
    h.upstream.push(Script::http_error(200, call));
    let tools = json!([{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]);
    let (status, body) = h.post(json!({"model":"m","input":"weather?","tools":tools})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"][0]["type"], "function_call");
    assert_eq!(body["output"][0]["arguments"], r#"{"city":"Paris"}"#);
    // Not a completion: the upstream's error, or a garbled answer, still fail as such.
    h.upstream.push(Script::http_error(200, r#"{"error":{"message":"prompt too long","code":400}}"#));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body)["message"].as_str().unwrap().contains("prompt too long"), "{body}");
    h.upstream.push(Script::http_error(200, r#"{"choices":[{"message":"#));
    let (status, _) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502);
}

/// `input` is optional, as in OpenAI's API: `instructions` alone are a conversation; with
/// nothing at all for the model the request is a 400 on `input`.
#[tokio::test]
async fn input_is_optional_when_there_is_something_for_the_model() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["Hello."]));
    let (status, body) = h.post(json!({"model":"m","instructions":"Greet the user."})).await;
    assert_eq!(status, 200, "{body}");
    let sent = h.upstream.requests().pop().unwrap().body["messages"].clone();
    assert_eq!(sent, json!([{"role":"system","content":"Greet the user."}]));
    let (status, body) = h.post(json!({"model":"m"})).await;
    assert_eq!(status, 400, "{body}");
    let e = error_of(&body);
    assert_eq!((e["param"].as_str(), e["code"].as_str()), (Some("input"), Some("invalid_value")));
}

/// Chat templates want user and assistant turns to alternate: an input that ends with an
/// assistant message is continued by the model's answer as one assistant turn, in the
/// stored history too.
#[tokio::test]
async fn assistant_turns_never_follow_one_another_upstream() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["R1"]));
    let input = json!([{"role":"user","content":"hi"},{"role":"assistant","content":"A"},{"role":"assistant","content":"B"}]);
    let (status, first) = h.post(json!({"model":"m","input":input})).await;
    assert_eq!(status, 200, "{first}");
    h.upstream.push(Script::text(&["R2"]));
    let (status, body) = h.post(json!({"model":"m","input":"next","previous_response_id":first["id"]})).await;
    assert_eq!(status, 200, "{body}");
    let sent = h.upstream.requests().pop().unwrap().body["messages"].clone();
    assert_eq!(sent, json!([{"role":"user","content":"hi"},{"role":"assistant","content":"A\n\nB\n\nR1"},{"role":"user","content":"next"}]));
}
