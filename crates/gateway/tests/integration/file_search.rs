//! `file_search` owned by the gateway, against a remote OpenAI-compatible vector store
//! (OpenAI's and OGX's page shapes): lifecycle events, results, `file_citation` markers
//! removed from the streamed text, failures, validation before any model call, replay.


use crate::common::vector_fixture::{VectorFixture, VsMode};
use crate::common::{error_of, items_without_ids, Harness};
use responses_gateway::executors::file_search::config::RemoteStoreConfig;
use scripted_upstream::Script;
use serde_json::{json, Value};

async fn with_remote_key(key_env: Option<&str>) -> (Harness, VectorFixture) {
    let fx = VectorFixture::start().await;
    let base = fx.base.clone();
    let key_env = key_env.map(str::to_string);
    let h = Harness::start_with(move |c| {
        c.file_search.remotes.insert("ogx".into(), RemoteStoreConfig { url: Some(base), api_key_env: key_env });
        c.file_search.default = "ogx".into();
        c.file_search.timeout_ms = 700;
    })
    .await;
    (h, fx)
}

async fn with_remote() -> (Harness, VectorFixture) {
    with_remote_key(None).await
}

fn search_call(queries: &[&str]) -> Script {
    Script::tool_call("file_search", json!({"queries": queries}).to_string())
}

fn tools(ids: &[&str]) -> Value {
    json!([{"type": "file_search", "vector_store_ids": ids}])
}

fn tool_messages(body: &Value) -> Vec<String> {
    body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap_or_default().to_string()).collect()
}

fn item<'a>(response: &'a Value, kind: &str) -> &'a Value {
    response["output"].as_array().unwrap().iter().find(|i| i["type"] == kind).unwrap_or_else(|| panic!("no {kind} in {response}"))
}

const ZURICH: (&str, &str, f64, &str) = ("file-zurich", "zürich-cafés.md", 1.8, "Café Schober (1842) is the oldest café in Zürich.");
const HOURS: (&str, &str, f64, &str) = ("file-hours", "hours.txt", 0.42, "Schober opens at 8 every day.");

#[tokio::test]
async fn ogx_search_lifecycle_results_and_citations_in_stream_and_non_stream() {
    let (h, fx) = with_remote().await;
    fx.set(VsMode::Ogx(vec![ZURICH, HOURS]));
    let body = json!({"model": "m", "input": "Oldest café in Zürich?", "tools": tools(&["vs_remote_a"]), "include": ["file_search_call.results"]});
    h.upstream.push(search_call(&["oldest café Zürich"]));
    h.upstream.push(Script::text(&["Zürich's oldest café is Schober【", "1】. It opens at 8【2", "】【9】. Done【1:0】."]));
    let s = h.stream(body.clone()).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);

    // lifecycle: added with queries [] and results null → in_progress → searching → completed → done
    let added: Vec<&Value> = s.of_type("response.output_item.added").into_iter().filter(|e| e["item"]["type"] == "file_search_call").collect();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0]["item"]["queries"], json!([]));
    assert!(added[0]["item"]["results"].is_null());
    assert_eq!(added[0]["item"]["status"], "in_progress");
    assert!(added[0]["item"]["id"].as_str().unwrap().starts_with("fs_"));
    let t = s.types();
    let p = |name: &str| t.iter().position(|x| x == name).unwrap_or_else(|| panic!("missing {name}"));
    assert!(p("response.file_search_call.in_progress") < p("response.file_search_call.searching"));
    assert!(p("response.file_search_call.searching") < p("response.file_search_call.completed"));
    let fs = item(&s.response, "file_search_call");
    assert_eq!(fs["status"], "completed");
    assert_eq!(fs["queries"], json!(["oldest café Zürich"]));
    let results = fs["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["file_id"], "file-zurich", "OGX: the real id is attributes.file_id");
    assert_eq!(results[0]["filename"], "zürich-cafés.md");
    assert_eq!(results[0]["score"], 1.0, "scores above 1 are clamped");
    assert_eq!(results[1]["score"], 0.42);
    assert_eq!(results[0]["text"], ZURICH.3);

    // markers never reach the client, not even split over deltas
    let streamed: String = s.of_type("response.output_text.delta").iter().filter_map(|e| e["delta"].as_str()).collect();
    assert!(!streamed.contains('【') && !streamed.contains('】'), "{streamed}");
    let msg = s.response["output"].as_array().unwrap().iter().rev().find(|i| i["type"] == "message").unwrap();
    let text = msg["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "Zürich's oldest café is Schober. It opens at 8. Done.");
    assert!(streamed.ends_with(text), "the deltas add up to the text");
    let anns = msg["content"][0]["annotations"].as_array().unwrap();
    assert_eq!(
        anns,
        &vec![
            json!({"type": "file_citation", "file_id": "file-zurich", "filename": "zürich-cafés.md", "index": 31}),
            json!({"type": "file_citation", "file_id": "file-hours", "filename": "hours.txt", "index": 46}),
            json!({"type": "file_citation", "file_id": "file-zurich", "filename": "zürich-cafés.md", "index": 52}),
        ],
        "code-point insertion points; 【9】 names no chunk: dropped without annotation"
    );
    let chars: Vec<char> = text.chars().collect();
    assert_eq!(chars[31], '.');
    let added_anns = s.of_type("response.output_text.annotation.added");
    assert_eq!(added_anns.len(), 3);
    assert_eq!(added_anns[2]["annotation_index"], 2);
    let part_done = s.of_type("response.content_part.done").into_iter().last().unwrap();
    assert_eq!(part_done["part"]["annotations"].as_array().unwrap().len(), 3);

    // what the model saw: numbered chunks as untrusted data, told to cite as 【N】
    let reqs = h.upstream.requests();
    let tool = &tool_messages(&reqs[1].body)[0];
    assert!(tool.contains("【1†zürich-cafés.md】\nCafé Schober"), "{tool}");
    assert!(tool.contains("【2†hours.txt】"), "{tool}");
    assert!(tool.contains("untrusted") && tool.contains("【1】"), "{tool}");
    // what the store got
    let seen = fx.seen();
    assert_eq!(seen[0]["store"], "vs_remote_a");
    assert_eq!(seen[0]["body"]["query"], "oldest café Zürich");
    assert_eq!(seen[0]["body"]["max_num_results"], 20);
    // the declaration's defaults are echoed
    assert_eq!(s.response["tools"][0]["max_num_results"], 20);
    assert_eq!(s.response["tools"][0]["ranking_options"]["ranker"], "auto");

    // non-streaming: the same items
    h.upstream.push(search_call(&["oldest café Zürich"]));
    h.upstream.push(Script::text(&["Zürich's oldest café is Schober【", "1】. It opens at 8【2", "】【9】. Done【1:0】."]));
    let (status, full) = h.post(body).await;
    assert_eq!(status, 200, "{full}");
    let streamed_items: Vec<Value> = items_without_ids(&s.response).into_iter().filter(|i| !i.to_string().contains("Searching files")).collect();
    assert_eq!(items_without_ids(&full), streamed_items);
}

#[tokio::test]
async fn results_are_null_without_include_and_an_empty_healthy_page_is_zero_results() {
    let (h, fx) = with_remote().await;
    fx.set(VsMode::EmptyHealthy);
    h.upstream.push(search_call(&["nothing here"]));
    h.upstream.push(Script::text(&["No files mention it."]));
    let s = h.stream(json!({"model": "m", "input": "x", "tools": tools(&["vs_remote_a"])})).await;
    let fs = item(&s.response, "file_search_call");
    assert_eq!(fs["status"], "completed");
    assert!(fs["results"].is_null(), "results only with include");
    let tool = &tool_messages(&h.upstream.requests()[1].body)[0];
    assert!(tool.contains("No results."), "{tool}");
    assert!(!tool.starts_with("error"));
}

/// Each failure is a failed item (no `.completed` event) plus a tool output the model reads.
#[tokio::test]
async fn backend_failures_are_failed_items_the_model_can_read() {
    let var = "RG_TEST_OGX_KEY";
    std::env::set_var(var, "sk-ogx-secret-789");
    let (h, fx) = with_remote_key(Some(var)).await;
    let cases: Vec<(VsMode, &str)> = vec![
        (VsMode::EmptyBroken, "health check failed"),
        (VsMode::Status(401), "RG_TEST_OGX_KEY is wrong"),
        (VsMode::Status(403), "HTTP 403"),
        (VsMode::Malformed, "malformed"),
        (VsMode::Hang, "timed out"),
        (VsMode::Status(500), "HTTP 500"),
    ];
    for (mode, expect) in cases {
        fx.set(mode.clone());
        h.upstream.reset();
        h.upstream.push(search_call(&["q"]));
        h.upstream.push(Script::text(&["Sorry."]));
        let s = h.stream(json!({"model": "m", "input": "x", "tools": tools(&["vs_remote_a"])})).await;
        assert_eq!(s.terminal_type(), "response.completed", "{mode:?}");
        let fs = item(&s.response, "file_search_call");
        assert_eq!(fs["status"], "failed", "{mode:?}");
        assert!(s.of_type("response.file_search_call.completed").is_empty(), "{mode:?}: no .completed for a failure");
        assert!(!s.of_type("response.file_search_call.searching").is_empty());
        let tool = &tool_messages(&h.upstream.requests()[1].body)[0];
        assert!(tool.starts_with("error: file search failed") && tool.contains(expect), "{mode:?}: {tool}");
        assert!(!s.raw.contains("sk-ogx-secret-789") && !tool.contains("sk-ogx-secret-789"), "the key never leaks");
    }
    let auth = fx.seen()[0]["authorization"].as_str().unwrap().to_string();
    assert_eq!(auth, "Bearer sk-ogx-secret-789", "the key goes to the store only");
}

#[tokio::test]
async fn unreachable_store_is_a_failed_item() {
    let h = Harness::start_with(|c| {
        c.file_search.remotes.insert("ogx".into(), RemoteStoreConfig { url: Some("http://127.0.0.1:9/v1".into()), api_key_env: None });
        c.file_search.default = "ogx".into();
    })
    .await;
    h.upstream.push(search_call(&["q"]));
    h.upstream.push(Script::text(&["Sorry."]));
    let (status, body) = h.post(json!({"model": "m", "input": "x", "tools": tools(&["vs_any"])})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(item(&body, "file_search_call")["status"], "failed");
    let tool = &tool_messages(&h.upstream.requests()[1].body)[0];
    assert!(tool.contains("unreachable"), "{tool}");
}

#[tokio::test]
async fn bad_declarations_unknown_stores_and_missing_config_are_400s_before_any_model_call() {
    let (h, _fx) = with_remote().await;
    let cases = vec![
        (json!([{"type": "file_search", "vector_store_ids": ["vs_nope"]}]), "tools[0].vector_store_ids", "vs_nope"),
        (json!([{"type": "file_search", "vector_store_ids": ["vs_ogx_unknown"]}]), "tools[0].vector_store_ids", "vs_ogx_unknown"),
        (json!([{"type": "file_search", "vector_store_ids": ["vs_remote_a", "vs_missing"]}]), "tools[0].vector_store_ids", "vs_missing"),
        (json!([{"type": "file_search", "vector_store_ids": []}]), "tools[0].vector_store_ids", "non-empty"),
        (json!([{"type": "file_search"}]), "tools[0].vector_store_ids", "Missing"),
        (json!([{"type": "file_search", "vector_store_ids": ["vs_remote_a"], "max_num_results": 51}]), "tools[0].max_num_results", "1 to 50"),
        (json!([{"type": "file_search", "vector_store_ids": ["vs_remote_a"], "filters": {"type": "regex", "key": "a", "value": "x"}}]), "tools[0].filters", "regex"),
        (json!([{"type": "file_search", "vector_store_ids": ["vs_remote_a"], "ranking_options": {"score_threshold": 2}}]), "tools[0].ranking_options.score_threshold", "0 to 1"),
    ];
    for (tools, param, needle) in cases {
        let (status, body) = h.post(json!({"model": "m", "input": "x", "tools": tools})).await;
        assert_eq!(status, 400, "{tools}: {body}");
        let e = error_of(&body);
        assert_eq!(e["type"], "invalid_request_error");
        assert_eq!(e["param"], param, "{body}");
        assert!(e["message"].as_str().unwrap().contains(needle), "{body}");
    }
    assert!(h.upstream.requests().is_empty(), "no model call");

    // a remote whose key variable is unset: 400 naming the setting
    let h2 = Harness::start_with(|c| {
        c.file_search.remotes.insert("ogx".into(), RemoteStoreConfig { url: Some("http://127.0.0.1:9/v1".into()), api_key_env: Some("RG_TEST_UNSET_OGX_KEY".into()) });
        c.file_search.stores.insert("vs_team".into(), "ogx".into());
    })
    .await;
    let (status, body) = h2.post(json!({"model": "m", "input": "x", "tools": tools(&["vs_team"])})).await;
    assert_eq!(status, 400, "{body}");
    let msg = error_of(&body)["message"].as_str().unwrap().to_string();
    assert!(msg.contains("RG_TEST_UNSET_OGX_KEY") && msg.contains("file_search.remotes.ogx.api_key_env"), "{msg}");
    assert_eq!(error_of(&body)["code"], "tool_not_configured");
    // an id that no executor serves (default embedded, no such embedded store)
    let (status, body) = h2.post(json!({"model": "m", "input": "x", "tools": tools(&["vs_elsewhere"])})).await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body)["message"].as_str().unwrap().contains("vs_elsewhere"));
    assert!(h2.upstream.requests().is_empty());
}

#[tokio::test]
async fn a_client_function_named_file_search_stays_a_client_function() {
    let (h, fx) = with_remote().await;
    h.upstream.push(search_call(&["q"]));
    let tools = json!([{"type": "function", "name": "file_search", "parameters": {"type": "object", "properties": {"queries": {"type": "array"}}}}]);
    let (status, body) = h.post(json!({"model": "m", "input": "x", "tools": tools})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"][0]["type"], "function_call");
    assert_eq!(body["output"][0]["name"], "file_search");
    assert!(!body.to_string().contains("file_search_call"));
    assert!(fx.seen().is_empty(), "never executed");
}

#[tokio::test]
async fn tool_choice_file_search_forces_the_search_then_relaxes() {
    let (h, fx) = with_remote().await;
    fx.set(VsMode::OpenAi(vec![HOURS]));
    h.upstream.push(search_call(&["hours"]));
    h.upstream.push(Script::text(&["8 am【1】."]));
    let (status, body) = h.post(json!({"model": "m", "input": "x", "tools": tools(&["vs_remote_a"]), "tool_choice": {"type": "file_search"}})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tool_choice"], json!({"type": "file_search"}));
    let reqs = h.upstream.requests();
    assert_eq!(reqs[0].body["tool_choice"], json!({"type": "function", "function": {"name": "file_search"}}));
    assert_eq!(reqs[1].body["tool_choice"], "auto", "relaxed after the search ran");
    let msg = body["output"].as_array().unwrap().iter().rev().find(|i| i["type"] == "message").unwrap();
    assert_eq!(msg["content"][0]["text"], "8 am.");
    assert_eq!(msg["content"][0]["annotations"][0]["file_id"], "file-hours");
    assert_eq!(msg["content"][0]["annotations"][0]["index"], 4);
}

#[tokio::test]
async fn a_file_search_call_cut_by_length_is_never_executed() {
    let (h, fx) = with_remote().await;
    h.upstream.push(search_call(&["q"]).finish("length"));
    let s = h.stream(json!({"model": "m", "input": "x", "tools": tools(&["vs_remote_a"])})).await;
    assert_eq!(s.terminal_type(), "response.incomplete");
    assert!(s.of_type("response.file_search_call.completed").is_empty());
    assert!(fx.seen().is_empty());
}

#[tokio::test]
async fn several_stores_fan_out_merge_by_score_and_apply_options() {
    let (h, fx) = with_remote().await;
    fx.set(VsMode::OpenAi(vec![("file-a", "a.md", 0.9, "alpha"), ("file-b", "b.md", 0.3, "beta"), ("file-c", "c.md", 0.6, "gamma")]));
    h.upstream.push(search_call(&["one", "two"]));
    h.upstream.push(Script::text(&["ok"]));
    let decl = json!([{"type": "file_search", "vector_store_ids": ["vs_remote_a", "vs_remote_b"], "max_num_results": 2,
        "ranking_options": {"score_threshold": 0.5, "hybrid_search": {"embedding_weight": 0.7, "text_weight": 0.3}},
        "filters": {"type": "eq", "key": "store", "value": "vs_remote_b"}}]);
    let (status, body) = h.post(json!({"model": "m", "input": "x", "tools": decl, "include": ["file_search_call.results"]})).await;
    assert_eq!(status, 200, "{body}");
    let seen = fx.seen();
    assert_eq!(seen.len(), 4, "2 queries x 2 stores");
    let stores: std::collections::BTreeSet<&str> = seen.iter().map(|s| s["store"].as_str().unwrap()).collect();
    assert_eq!(stores.len(), 2);
    assert_eq!(seen[0]["body"]["filters"]["type"], "eq");
    assert_eq!(seen[0]["body"]["ranking_options"]["score_threshold"], 0.5);
    assert_eq!(seen[0]["body"]["ranking_options"]["hybrid_search"]["embedding_weight"], 0.7);
    let fs = item(&body, "file_search_call");
    assert_eq!(fs["queries"], json!(["one", "two"]));
    let results = fs["results"].as_array().unwrap();
    let got: Vec<(&str, &str)> = results.iter().map(|r| (r["file_id"].as_str().unwrap(), r["attributes"]["store"].as_str().unwrap())).collect();
    assert_eq!(got, vec![("file-a", "vs_remote_b"), ("file-c", "vs_remote_b")], "threshold, gateway-side filter on attributes, merge by score, max 2");
}

#[tokio::test]
async fn replayed_file_search_calls_rebuild_the_call_and_what_the_model_saw() {
    let (h, _fx) = with_remote().await;
    h.upstream.push(Script::text(&["again【1】"]));
    let input = json!([
        {"role": "user", "content": "Oldest café?"},
        {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["oldest café"],
         "results": [{"file_id": "file-zurich", "filename": "zürich-cafés.md", "score": 0.9, "text": "Café Schober (1842).", "attributes": {}}]},
        {"type": "file_search_call", "id": "fs_2", "status": "completed", "queries": ["opening hours"], "results": null},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Schober.", "annotations": []}]},
        {"role": "user", "content": "And?"}
    ]);
    let (status, body) = h.post(json!({"model": "m", "input": input, "tools": tools(&["vs_remote_a"]), "store": false})).await;
    assert_eq!(status, 200, "{body}");
    let sent = &h.upstream.requests()[0].body;
    let calls: Vec<&Value> = sent["messages"].as_array().unwrap().iter().filter_map(|m| m["tool_calls"].as_array()).flatten().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["function"]["name"], "file_search");
    assert_eq!(serde_json::from_str::<Value>(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap(), json!({"queries": ["oldest café"]}));
    let tool = tool_messages(sent);
    assert!(tool[0].contains("【1†zürich-cafés.md】\nCafé Schober (1842)."), "{}", tool[0]);
    assert!(tool[1].contains("not kept") && tool[1].contains("opening hours"), "{}", tool[1]);
    // a citation of a replayed chunk resolves from the item's results
    assert_eq!(body["output"][0]["content"][0]["text"], "again");
    assert_eq!(body["output"][0]["content"][0]["annotations"][0]["file_id"], "file-zurich");
}

#[tokio::test]
async fn a_continuation_restores_the_exact_results() {
    let (h, fx) = with_remote().await;
    fx.set(VsMode::OpenAi(vec![HOURS]));
    h.upstream.push(search_call(&["hours"]));
    h.upstream.push(Script::text(&["At 8【1】."]));
    let (status, first) = h.post(json!({"model": "m", "input": "When?", "tools": tools(&["vs_remote_a"])})).await;
    assert_eq!(status, 200, "{first}");
    h.upstream.reset();
    h.upstream.push(Script::text(&["Yes【1】."]));
    let (status, body) = h.post(json!({"model": "m", "input": "Sure?", "previous_response_id": first["id"], "tools": tools(&["vs_remote_a"])})).await;
    assert_eq!(status, 200, "{body}");
    let tool = tool_messages(&h.upstream.requests()[0].body);
    assert!(tool[0].contains("Schober opens at 8 every day."), "{tool:?}");
    // the earlier turn's chunk keeps its number: the citation still resolves
    let text = &body["output"][0]["content"][0];
    assert_eq!(text["text"], "Yes.");
    assert_eq!(text["annotations"], json!([{"type": "file_citation", "file_id": "file-hours", "filename": "hours.txt", "index": 3}]));
    // a new search in the continuation numbers its chunks after the earlier ones
    fx.set(VsMode::OpenAi(vec![ZURICH]));
    h.upstream.push(search_call(&["oldest"]));
    h.upstream.push(Script::text(&["Schober【2】, at 8【1】."]));
    let (status, third) = h.post(json!({"model": "m", "input": "Oldest?", "previous_response_id": body["id"], "tools": tools(&["vs_remote_a"])})).await;
    assert_eq!(status, 200, "{third}");
    let tool = tool_messages(&h.upstream.requests()[2].body);
    assert!(tool.last().unwrap().contains("【2†zürich-cafés.md】"), "{tool:?}");
    let msg = third["output"].as_array().unwrap().iter().rev().find(|i| i["type"] == "message").unwrap();
    let ids: Vec<&str> = msg["content"][0]["annotations"].as_array().unwrap().iter().map(|a| a["file_id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["file-zurich", "file-hours"]);
}

/// A store without weighted hybrid search (OGX on faiss answers 400) is searched again
/// without the weights; another 400 is a failed item carrying the store's message.
#[tokio::test]
async fn hybrid_weights_are_dropped_where_the_store_cannot_honour_them() {
    let (h, fx) = with_remote().await;
    fx.set(VsMode::NoHybrid(vec![HOURS]));
    h.upstream.push(search_call(&["hours"]));
    h.upstream.push(Script::text(&["8【1】"]));
    let decl = json!([{"type": "file_search", "vector_store_ids": ["vs_remote_a"], "ranking_options": {"hybrid_search": {"embedding_weight": 1, "text_weight": 1}}}]);
    let (status, body) = h.post(json!({"model": "m", "input": "x", "tools": decl})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(item(&body, "file_search_call")["status"], "completed");
    let seen = fx.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen[0]["body"]["ranking_options"]["hybrid_search"].is_object());
    assert!(seen[1]["body"]["ranking_options"].get("hybrid_search").is_none(), "{}", seen[1]);
    fx.set(VsMode::Status(400));
    h.upstream.reset();
    h.upstream.push(search_call(&["hours"]));
    h.upstream.push(Script::text(&["?"]));
    let (_, body) = h.post(json!({"model": "m", "input": "x", "tools": tools(&["vs_remote_a"])})).await;
    assert_eq!(item(&body, "file_search_call")["status"], "failed");
    let tool = &tool_messages(&h.upstream.requests()[1].body)[0];
    assert!(tool.contains("HTTP 400") && tool.contains("denied"), "{tool}");
}
