//! `web_search` owned by the gateway: SearXNG/Degoog over the `http` backend, the `openai`
//! backend, lifecycle events, `url_citation`s, failures and replay.


use crate::common::search_fixture::{degoog_page, searxng_page, Mode, SearchFixture};
use crate::common::{error_of, Harness};
use responses_gateway::config::WebSearchBackendKind;
use scripted_upstream::{Script, ToolCallScript};
use serde_json::{json, Value};

async fn with_searxng() -> (Harness, SearchFixture) {
    let fx = SearchFixture::start().await;
    let url = format!("{}/search", fx.origin);
    let h = Harness::start_with(move |c| {
        c.web_search.backend = Some(WebSearchBackendKind::Http);
        c.web_search.http.url = Some(url);
        c.web_search.http.timeout_ms = 500;
    })
    .await;
    (h, fx)
}

fn search_call(query: &str) -> Script {
    Script::tool_call("web_search", json!({"query": query}).to_string())
}

fn tool_messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").cloned().collect()
}

fn slice(text: &str, start: u64, end: u64) -> String {
    text.chars().skip(start as usize).take((end - start) as usize).collect()
}

#[tokio::test]
async fn searxng_search_then_cited_answer() {
    let (h, fx) = with_searxng().await;
    fx.set(Mode::Ok(searxng_page()));
    h.upstream.push(search_call("berlin art week"));
    let answer = "Naïve – café note: Berlin Art Week runs Sept 10–14 ([wallpaper.com](https://www.wallpaper.com/art/berlin-art-week-2025)). See https://berlinartweek.de/en/ and https://unknown.example.com/x.";
    h.upstream.push(Script::text(&[&answer[..20], &answer[20..]]));
    let tools = json!([{"type":"web_search","user_location":{"type":"approximate","country":"DE"}}]);
    let s = h.stream(json!({"model":"m","input":"What is on at Berlin Art Week?","tools":tools,"include":["web_search_call.action.sources"]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    // lifecycle: added without action → in_progress → searching → completed → done with action
    let added: Vec<&Value> = s.of_type("response.output_item.added").into_iter().filter(|e| e["item"]["type"] == "web_search_call").collect();
    assert_eq!(added.len(), 1);
    assert!(added[0]["item"].get("action").is_none(), "{}", added[0]);
    let t = s.types();
    let p = |name: &str| t.iter().position(|x| x == name).unwrap_or_else(|| panic!("missing {name}"));
    assert!(p("response.web_search_call.in_progress") < p("response.web_search_call.searching"));
    assert!(p("response.web_search_call.searching") < p("response.web_search_call.completed"));
    let ws = s.response["output"].as_array().unwrap().iter().find(|i| i["type"] == "web_search_call").unwrap().clone();
    assert_eq!(ws["status"], "completed");
    assert_eq!(ws["action"]["type"], "search");
    assert_eq!(ws["action"]["query"], "berlin art week");
    assert_eq!(ws["action"]["queries"], json!(["berlin art week"]));
    let urls: Vec<&str> = ws["action"]["sources"].as_array().unwrap().iter().map(|s| s["url"].as_str().unwrap()).collect();
    assert_eq!(urls, vec!["https://www.wallpaper.com/art/berlin-art-week-2025", "https://berlinartweek.de/en/"], "deduplicated, unsafe URLs dropped");
    // citations: code-point spans, markdown link widened to its parentheses, unknown URL ignored
    let msg = s.response["output"].as_array().unwrap().iter().rev().find(|i| i["type"] == "message").unwrap().clone();
    let text = msg["content"][0]["text"].as_str().unwrap();
    let anns = msg["content"][0]["annotations"].as_array().unwrap();
    assert_eq!(anns.len(), 2, "{anns:?}");
    assert_eq!(slice(text, anns[0]["start_index"].as_u64().unwrap(), anns[0]["end_index"].as_u64().unwrap()), "([wallpaper.com](https://www.wallpaper.com/art/berlin-art-week-2025))");
    assert_eq!(anns[0]["title"], "What to see at Berlin Art Week");
    assert_eq!(slice(text, anns[1]["start_index"].as_u64().unwrap(), anns[1]["end_index"].as_u64().unwrap()), "https://berlinartweek.de/en/");
    let added_anns = s.of_type("response.output_text.annotation.added");
    assert_eq!(added_anns.len(), 2);
    assert_eq!(added_anns[1]["annotation_index"], 1);
    let pos_ann = s.events.iter().position(|e| e["type"] == "response.output_text.annotation.added").unwrap();
    let pos_done = s.events.iter().rposition(|e| e["type"] == "response.output_text.done").unwrap();
    assert!(pos_ann < pos_done, "annotations before output_text.done");
    // progress message in the stream
    assert!(s.response["output"][0]["content"][0]["text"].as_str().unwrap().starts_with("Searching the web for"));
    // what the search backend and the model saw
    let q = &fx.seen()[0]["query"];
    assert_eq!(q["q"], "berlin art week");
    assert_eq!(q["format"], "json");
    assert_eq!(q["language"], "de-DE");
    let tm = tool_messages(&h.upstream.requests()[1].body);
    let out = tm[0]["content"].as_str().unwrap();
    assert!(out.contains("untrusted"), "{out}");
    assert!(out.contains("<untrusted_search_results>") && out.contains("IGNORE PREVIOUS INSTRUCTIONS"));
    assert!(!out.contains("127.0.0.1") && !out.contains("javascript:"));
    let sys = h.upstream.requests()[1].body["messages"][0].to_string();
    assert!(!sys.contains("IGNORE PREVIOUS"), "search text only reaches the model as tool output");
    // the echo of the declaration
    assert_eq!(s.response["tools"][0]["search_context_size"], "medium");
    assert_eq!(s.response["tools"][0]["user_location"]["country"], "DE");
}

#[tokio::test]
async fn sources_only_with_include_and_domain_filter_and_context_size() {
    let (h, fx) = with_searxng().await;
    fx.set(Mode::Ok(searxng_page()));
    h.upstream.push(search_call("x"));
    h.upstream.push(Script::text(&["ok"]));
    let tools = json!([{"type":"web_search_preview","search_context_size":"low","filters":null}]);
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":tools})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tools"][0]["type"], "web_search_preview");
    assert!(body["output"][0]["action"].get("sources").is_none(), "no sources without include");
    h.upstream.push(search_call("x"));
    h.upstream.push(Script::text(&["ok"]));
    let tools = json!([{"type":"web_search","filters":{"allowed_domains":["berlinartweek.de"]}}]);
    let (_, _) = h.post(json!({"model":"m","input":"x","tools":tools})).await;
    let tm = tool_messages(&h.upstream.requests()[3].body);
    let out = tm[0]["content"].as_str().unwrap();
    assert!(out.contains("berlinartweek.de") && !out.contains("wallpaper.com"), "allowed_domains enforced: {out}");
}

#[tokio::test]
async fn degoog_with_bearer_key() {
    let fx = SearchFixture::start().await;
    fx.set(Mode::Ok(degoog_page()));
    std::env::set_var("RG_TEST_DEGOOG_KEY", "dg-secret");
    let url = format!("{}/api/search", fx.origin);
    let h = Harness::start_with(move |c| {
        c.web_search.backend = Some(WebSearchBackendKind::Http);
        c.web_search.http.url = Some(url);
        c.web_search.http.api_key_env = Some("RG_TEST_DEGOOG_KEY".into());
    })
    .await;
    h.upstream.push(search_call("cafe"));
    h.upstream.push(Script::text(&["Try [Café naïve](https://cafe.example.org/naive)."]));
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":[{"type":"web_search"}],"tool_choice":{"type":"web_search"}})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(fx.seen()[0]["authorization"], "Bearer dg-secret");
    assert_eq!(h.upstream.requests()[0].body["tool_choice"], json!({"type":"function","function":{"name":"web_search"}}));
    let msg = body["output"].as_array().unwrap().last().unwrap();
    let ann = &msg["content"][0]["annotations"][0];
    assert_eq!(ann["url"], "https://cafe.example.org/naive");
    assert_eq!(ann["title"], "Café naïve");
    let text = msg["content"][0]["text"].as_str().unwrap();
    assert_eq!(slice(text, ann["start_index"].as_u64().unwrap(), ann["end_index"].as_u64().unwrap()), "[Café naïve](https://cafe.example.org/naive)");
    assert!(!body.to_string().contains("dg-secret"));
}

#[tokio::test]
async fn backend_failures_are_failed_calls_not_empty_results() {
    let (h, fx) = with_searxng().await;
    let cases = vec![
        (Mode::Status(403, "Forbidden".into(), None), "search.formats"),
        (Mode::Status(500, r#"{"error":"search error"}"#.into(), None), "HTTP 500"),
        (Mode::Status(429, "slow down".into(), Some("30".into())), "retry after 30"),
        (Mode::NotJson, "not the expected JSON"),
        (Mode::WrongShape, "not the expected JSON"),
        (Mode::Hang, "timed out"),
    ];
    for (mode, needle) in cases {
        fx.set(mode.clone());
        h.upstream.reset();
        h.upstream.push(search_call("q"));
        h.upstream.push(Script::text(&["Search failed, sorry."]));
        let s = h.stream(json!({"model":"m","input":"x","tools":[{"type":"web_search"}]})).await;
        assert_eq!(s.terminal_type(), "response.completed", "{mode:?}");
        let ws = s.response["output"].as_array().unwrap().iter().find(|i| i["type"] == "web_search_call").unwrap().clone();
        assert_eq!(ws["status"], "failed", "{mode:?}");
        assert!(s.of_type("response.web_search_call.completed").is_empty(), "no .completed for a failed search");
        let tm = tool_messages(&h.upstream.requests()[1].body);
        let out = tm[0]["content"].as_str().unwrap();
        assert!(out.starts_with("error: web search failed") && out.contains(needle), "{mode:?}: {out}");
    }
    // unreachable backend
    let h2 = Harness::start_with(|c| {
        c.web_search.backend = Some(WebSearchBackendKind::Http);
        c.web_search.http.url = Some("http://127.0.0.1:9/search".into());
    })
    .await;
    h2.upstream.push(search_call("q"));
    h2.upstream.push(Script::text(&["no"]));
    let (_, body) = h2.post(json!({"model":"m","input":"x","tools":[{"type":"web_search"}]})).await;
    assert_eq!(body["output"][0]["status"], "failed");
    // a real empty result set is a completed call with no sources
    fx.set(Mode::Ok(json!({"results": []})));
    h.upstream.reset();
    h.upstream.push(search_call("nothing"));
    h.upstream.push(Script::text(&["Nothing found."]));
    let (_, body) = h.post(json!({"model":"m","input":"x","tools":[{"type":"web_search"}],"include":["web_search_call.action.sources"]})).await;
    assert_eq!(body["output"][0]["status"], "completed");
    assert_eq!(body["output"][0]["action"]["sources"], json!([]));
    assert!(tool_messages(&h.upstream.requests()[1].body)[0]["content"].as_str().unwrap().contains("No results."));
}

/// Codex, sandboxed, asks for cached results only (`external_web_access: false`): SearXNG
/// answers from its engines' indexes and the gateway fetches no page, so the search runs
/// as any other and the declaration is echoed as given (issue 31).
#[tokio::test]
async fn cache_only_search_runs_on_the_http_backend() {
    let (h, fx) = with_searxng().await;
    fx.set(Mode::Ok(searxng_page()));
    h.upstream.push(search_call("berlin art week"));
    h.upstream.push(Script::text(&["Art week."]));
    let (s, b) = h.post(json!({"model":"m","input":"x","tools":[{"type":"web_search","external_web_access":false}]})).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["tools"][0]["external_web_access"], false);
    assert_eq!(b["output"][0]["type"], "web_search_call");
    assert_eq!(b["output"][0]["status"], "completed");
    assert_eq!(fx.seen().len(), 1, "one search reached SearXNG");
}

#[tokio::test]
async fn missing_configuration_and_unsupported_options_are_400s_before_any_model_call() {
    let h = Harness::start().await;
    let (s, b) = h.post(json!({"model":"m","input":"x","tools":[{"type":"web_search"}]})).await;
    assert_eq!(s, 400);
    assert!(error_of(&b)["message"].as_str().unwrap().contains("[web_search]"), "{b}");
    let (h2, _fx) = with_searxng().await;
    let (s, b) = h2.post(json!({"model":"m","input":"x","tools":[{"type":"web_search"},{"type":"function","name":"web_search"}]})).await;
    assert_eq!(s, 400, "a client function named like the built-in: {b}");
    let (s, _) = h2.post(json!({"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"web_search"}})).await;
    assert_eq!(s, 400);
    std::env::remove_var("RG_TEST_UNSET_SEARCH_KEY");
    let h3 = Harness::start_with(|c| {
        c.web_search.backend = Some(WebSearchBackendKind::Http);
        c.web_search.http.url = Some("http://127.0.0.1:9/search".into());
        c.web_search.http.api_key_env = Some("RG_TEST_UNSET_SEARCH_KEY".into());
    })
    .await;
    let (s, b) = h3.post(json!({"model":"m","input":"x","tools":[{"type":"web_search"}]})).await;
    assert_eq!(s, 400);
    assert!(error_of(&b)["message"].as_str().unwrap().contains("RG_TEST_UNSET_SEARCH_KEY"));
    assert!(h.upstream.requests().is_empty() && h2.upstream.requests().is_empty() && h3.upstream.requests().is_empty());
}

#[tokio::test]
async fn openai_backend_uses_a_private_responses_call() {
    let fx = SearchFixture::start().await;
    fx.set(Mode::Ok(json!({
        "id": "resp_private", "object": "response", "status": "completed",
        "output": [
            {"type": "web_search_call", "id": "ws_x", "status": "completed", "action": {"type": "search", "query": "rust 2026", "sources": [{"type": "url", "url": "https://blog.rust-lang.org/"}]}},
            {"type": "message", "id": "msg_x", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Rust news.", "annotations": [
                {"type": "url_citation", "url": "https://www.rust-lang.org/news", "title": "Rust News", "start_index": 0, "end_index": 4}
            ]}]}
        ],
        "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 150}
    })));
    std::env::set_var("RG_TEST_OPENAI_SEARCH_KEY", "sk-search");
    let url = format!("{}/v1", fx.origin);
    let h = Harness::start_with(move |c| {
        c.web_search.backend = Some(WebSearchBackendKind::Openai);
        c.web_search.openai.url = Some(url);
        c.web_search.openai.model = Some("search-model".into());
        c.web_search.openai.api_key_env = Some("RG_TEST_OPENAI_SEARCH_KEY".into());
    })
    .await;
    h.upstream.push(search_call("rust 2026"));
    h.upstream.push(Script::text(&["See [news](https://www.rust-lang.org/news)."]).usage(10, 5));
    let tools = json!([{"type":"web_search","filters":{"allowed_domains":["rust-lang.org"]},"user_location":{"type":"approximate","country":"GB"}}]);
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":tools})).await;
    assert_eq!(status, 200, "{body}");
    let types: Vec<&str> = body["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, vec!["web_search_call", "message"], "the private call never appears");
    assert!(!body.to_string().contains("resp_private") && !body.to_string().contains("ws_x"));
    let sent = &fx.seen()[0];
    assert_eq!(sent["authorization"], "Bearer sk-search");
    assert_eq!(sent["body"]["tool_choice"], "required");
    assert_eq!(sent["body"]["model"], "search-model");
    assert_eq!(sent["body"]["tools"][0]["type"], "web_search");
    assert_eq!(sent["body"]["tools"][0]["filters"]["allowed_domains"], json!(["rust-lang.org"]));
    assert_eq!(sent["body"]["tools"][0]["user_location"]["country"], "GB");
    let ann = &body["output"][1]["content"][0]["annotations"][0];
    assert_eq!(ann["url"], "https://www.rust-lang.org/news");
    assert_eq!(ann["title"], "Rust News");
    assert_eq!(body["usage"]["input_tokens"], 120, "private usage summed: 10 + 10 + 100");
    // external_web_access:false is passed to the openai backend
    h.upstream.push(search_call("q"));
    h.upstream.push(Script::text(&["ok"]));
    let (status, _) = h.post(json!({"model":"m","input":"x","tools":[{"type":"web_search","external_web_access":false}]})).await;
    assert_eq!(status, 200);
    assert_eq!(fx.seen()[1]["body"]["tools"][0]["external_web_access"], false);
}

#[tokio::test]
async fn replayed_web_search_calls_rebuild_the_transcript() {
    let (h, _fx) = with_searxng().await;
    h.upstream.push(Script::text(&["fine"]));
    let input = json!([
        {"role":"user","content":"q1"},
        {"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"berlin","sources":[{"type":"url","url":"https://a.example/"}]}},
        {"type":"message","role":"assistant","content":"answer one"},
        {"role":"user","content":"q2"}
    ]);
    let (status, body) = h.post(json!({"model":"m","input":input,"tools":[{"type":"web_search"}],"store":false})).await;
    assert_eq!(status, 200, "{body}");
    let msgs = h.upstream.requests()[0].body["messages"].clone();
    assert_eq!(msgs[1]["tool_calls"][0]["function"]["name"], "web_search");
    assert_eq!(msgs[1]["tool_calls"][0]["function"]["arguments"], r#"{"query":"berlin"}"#);
    assert_eq!(msgs[2]["role"], "tool");
    assert!(msgs[2]["content"].as_str().unwrap().contains("https://a.example/"));
    let _ = ToolCallScript::new("x", "{}");
}

/// The `web_search_call` items of a response's output.
fn searches(response: &Value) -> Vec<Value> {
    response["output"].as_array().unwrap().iter().filter(|i| i["type"] == "web_search_call").cloned().collect()
}

/// Two searches in one round: each streams its own full lifecycle and both results reach the model.
#[tokio::test]
async fn two_searches_in_one_round_each_have_a_full_lifecycle() {
    let (h, fx) = with_searxng().await;
    fx.set(Mode::Ok(searxng_page()));
    h.upstream.push(
        Script::default()
            .with_tool(ToolCallScript::new("web_search", json!({"query": "berlin art week"}).to_string()).id("call_a"))
            .with_tool(ToolCallScript::new("web_search", json!({"query": "berlin galleries"}).to_string()).id("call_b")),
    );
    h.upstream.push(Script::text(&["See https://berlinartweek.de/en/ ."]));
    let s = h.stream(json!({"model":"m","input":"x","tools":[{"type":"web_search"}],"parallel_tool_calls":true,"include":["web_search_call.action.sources"]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let added: Vec<&Value> = s.of_type("response.output_item.added").into_iter().filter(|e| e["item"]["type"] == "web_search_call").collect();
    assert_eq!(added.len(), 2);
    let ids: Vec<&str> = added.iter().map(|e| e["item"]["id"].as_str().unwrap()).collect();
    let idxs: Vec<u64> = added.iter().map(|e| e["output_index"].as_u64().unwrap()).collect();
    assert_ne!(ids[0], ids[1], "distinct ids");
    assert_ne!(idxs[0], idxs[1], "distinct output_index");
    let mut queries = Vec::new();
    for (id, idx) in ids.iter().zip(&idxs) {
        let own: Vec<&Value> = s.events.iter().filter(|e| e["output_index"].as_u64() == Some(*idx)).collect();
        let types: Vec<&str> = own.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            vec!["response.output_item.added", "response.web_search_call.in_progress", "response.web_search_call.searching", "response.web_search_call.completed", "response.output_item.done"],
            "lifecycle of {id}"
        );
        assert!(own[0]["item"].get("action").is_none(), "added without action: {}", own[0]);
        assert!(own[1..4].iter().all(|e| e["item_id"] == *id), "{own:?}");
        let done = &own[4]["item"];
        assert_eq!((done["id"].as_str().unwrap(), &done["status"]), (*id, &json!("completed")));
        assert_eq!(done["action"]["type"], "search");
        assert_eq!(done["action"]["queries"], json!([done["action"]["query"]]));
        assert!(!done["action"]["sources"].as_array().unwrap().is_empty());
        queries.push(done["action"]["query"].as_str().unwrap().to_string());
    }
    queries.sort();
    assert_eq!(queries, vec!["berlin art week", "berlin galleries"]);
    // in parallel: both are searching before either completes
    let t = s.types();
    let last_searching = t.iter().rposition(|x| x == "response.web_search_call.searching").unwrap();
    let first_completed = t.iter().position(|x| x == "response.web_search_call.completed").unwrap();
    assert!(last_searching < first_completed, "{t:?}");
    assert_eq!(searches(&s.response).len(), 2);
    // two GETs, one per query
    let mut seen: Vec<String> = fx.seen().iter().map(|r| r["query"]["q"].as_str().unwrap().to_string()).collect();
    seen.sort();
    assert_eq!(seen, vec!["berlin art week", "berlin galleries"]);
    // the second round carries both calls and both results
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    let asst = msgs.iter().find(|m| m["role"] == "assistant" && m["tool_calls"].is_array()).unwrap();
    let calls = asst["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "one assistant message with both calls: {asst}");
    let tm = tool_messages(&reqs[1].body);
    assert_eq!(tm.len(), 2, "{msgs:?}");
    let mut answered = Vec::new();
    for (call, t) in calls.iter().zip(&tm) {
        assert_eq!(t["tool_call_id"], call["id"], "each result answers its own call");
        let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        let q = args["query"].as_str().unwrap().to_string();
        assert!(t["content"].as_str().unwrap().contains(&format!("Web search results for \"{q}\"")), "{t}");
        answered.push(q);
    }
    answered.sort();
    assert_eq!(answered, vec!["berlin art week", "berlin galleries"]);
    assert_ne!(calls[0]["id"], calls[1]["id"]);
}

/// A SearXNG page with `n` distinct results whose snippets are 1000 non-ASCII characters.
fn long_page(n: usize) -> Value {
    let results: Vec<Value> = (0..n)
        .map(|i| json!({"url": format!("https://site{i}.example.com/page"), "title": format!("Result {i}"), "content": format!("R{i:02}:{}", "é".repeat(1000)), "engine": "x", "engines": ["x"], "score": 1.0}))
        .collect();
    json!({"query": "q", "results": results, "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []})
}

/// Snippets the model read (the line after each `URL:` line) in a tool message.
fn snippets(tool_output: &str) -> Vec<String> {
    let lines: Vec<&str> = tool_output.lines().collect();
    lines.iter().enumerate().filter(|(_, l)| l.starts_with("URL: ")).map(|(i, _)| lines[i + 1].to_string()).collect()
}

/// `search_context_size` medium (the default) and high give 5 and 10 results cut to 400 and 800 characters; the default echo matches the contract.
#[tokio::test]
async fn search_context_size_limits_results_and_snippets() {
    let (h, fx) = with_searxng().await;
    fx.set(Mode::Ok(long_page(12)));
    for (decl, count, chars) in [(json!({"type":"web_search"}), 5, 400), (json!({"type":"web_search","search_context_size":"medium"}), 5, 400), (json!({"type":"web_search","search_context_size":"high"}), 10, 800)] {
        h.upstream.reset();
        h.upstream.push(search_call("q"));
        h.upstream.push(Script::text(&["ok"]));
        let (status, body) = h.post(json!({"model":"m","input":"x","tools":[decl.clone()],"include":["web_search_call.action.sources"]})).await;
        assert_eq!(status, 200, "{body}");
        let out = tool_messages(&h.upstream.requests()[1].body)[0]["content"].as_str().unwrap().to_string();
        let snips = snippets(&out);
        assert_eq!(snips.len(), count, "{decl}: {out}");
        for (i, sn) in snips.iter().enumerate() {
            let full = format!("R{i:02}:{}", "é".repeat(1000));
            let kept: String = full.chars().take(chars - 1).collect();
            assert_eq!(sn.trim_end_matches('…'), kept, "{decl}: snippet {i} cut to {chars} characters");
            assert_eq!(sn.chars().count(), chars, "{decl}: the ellipsis is within the limit");
        }
        assert_eq!(searches(&body)[0]["action"]["sources"].as_array().unwrap().len(), count, "{decl}");
    }
    let (_, body) = {
        h.upstream.reset();
        h.upstream.push(Script::text(&["ok"]));
        h.post(json!({"model":"m","input":"x","tools":[{"type":"web_search"}]})).await
    };
    assert_eq!(
        body["tools"][0],
        json!({"type":"web_search","filters":null,"search_context_size":"medium","user_location":{"type":"approximate","city":null,"country":"US","region":null,"timezone":null}}),
        "default echo per contract §2"
    );
}

/// The dated variants are accepted, echoed with their declared type and run a search.
#[tokio::test]
async fn dated_variants_are_accepted_echoed_and_search() {
    let (h, fx) = with_searxng().await;
    fx.set(Mode::Ok(searxng_page()));
    let us = json!({"type":"approximate","city":null,"country":"US","region":null,"timezone":null});
    let cases = [
        ("web_search_2025_08_26", json!({"type":"web_search_2025_08_26","filters":null,"search_context_size":"medium","user_location":us})),
        ("web_search_preview_2025_03_11", json!({"type":"web_search_preview_2025_03_11","search_context_size":"medium","user_location":us})),
    ];
    for (i, (kind, echo)) in cases.into_iter().enumerate() {
        let query = format!("dated {kind}");
        h.upstream.push(search_call(&query));
        h.upstream.push(Script::text(&["ok"]));
        let s = h.stream(json!({"model":"m","input":"x","tools":[{"type":kind}]})).await;
        assert_eq!(s.terminal_type(), "response.completed", "{kind}");
        assert_eq!(s.response["tools"][0], echo, "{kind}");
        let ws = searches(&s.response);
        assert_eq!(ws.len(), 1, "{kind}");
        assert_eq!(ws[0]["status"], "completed", "{kind}");
        assert_eq!(ws[0]["action"]["query"], query.as_str());
        assert_eq!(s.of_type("response.web_search_call.completed").len(), 1, "{kind}");
        assert_eq!(fx.seen()[i]["query"]["q"], query.as_str(), "{kind}: the backend was searched");
        assert_eq!(h.upstream.requests()[2 * i].body["tools"][0]["function"]["name"], "web_search", "{kind}");
    }
}

/// openai backend: a URL found only in the private call's `web_search_call.action.sources` is a source the answer can cite.
#[tokio::test]
async fn openai_backend_action_sources_become_citable_sources() {
    let fx = SearchFixture::start().await;
    fx.set(Mode::Ok(json!({
        "id": "resp_private", "object": "response", "status": "completed",
        "output": [
            {"type": "web_search_call", "id": "ws_x", "status": "completed", "action": {"type": "search", "query": "rust editions", "sources": [{"type": "url", "url": "https://doc.rust-lang.org/edition-guide/"}]}},
            {"type": "message", "id": "msg_x", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Rust news.", "annotations": [
                {"type": "url_citation", "url": "https://www.rust-lang.org/news", "title": "Rust News", "start_index": 0, "end_index": 4}
            ]}]}
        ]
    })));
    let url = format!("{}/v1", fx.origin);
    let h = Harness::start_with(move |c| {
        c.web_search.backend = Some(WebSearchBackendKind::Openai);
        c.web_search.openai.url = Some(url);
        c.web_search.openai.model = Some("search-model".into());
    })
    .await;
    h.upstream.push(search_call("rust editions"));
    let answer = "Editions: [guide](https://doc.rust-lang.org/edition-guide/) and https://www.rust-lang.org/news";
    h.upstream.push(Script::text(&[answer]));
    let s = h.stream(json!({"model":"m","input":"x","tools":[{"type":"web_search"}],"include":["web_search_call.action.sources"]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let ws = searches(&s.response);
    let urls: Vec<&str> = ws[0]["action"]["sources"].as_array().unwrap().iter().map(|s| s["url"].as_str().unwrap()).collect();
    assert!(urls.contains(&"https://doc.rust-lang.org/edition-guide/"), "{urls:?}");
    let out = tool_messages(&h.upstream.requests()[1].body)[0]["content"].as_str().unwrap().to_string();
    assert!(out.contains("URL: https://doc.rust-lang.org/edition-guide/"), "the model reads it: {out}");
    let msg = s.response["output"].as_array().unwrap().iter().rev().find(|i| i["type"] == "message").unwrap().clone();
    let text = msg["content"][0]["text"].as_str().unwrap();
    let anns = msg["content"][0]["annotations"].as_array().unwrap();
    let ann = anns.iter().find(|a| a["url"] == "https://doc.rust-lang.org/edition-guide/").unwrap_or_else(|| panic!("not cited: {anns:?}"));
    assert_eq!(ann["type"], "url_citation");
    assert_eq!(slice(text, ann["start_index"].as_u64().unwrap(), ann["end_index"].as_u64().unwrap()), "[guide](https://doc.rust-lang.org/edition-guide/)");
    assert!(anns.iter().any(|a| a["url"] == "https://www.rust-lang.org/news"), "annotation sources still count: {anns:?}");
    assert_eq!(s.of_type("response.output_text.annotation.added").len(), 2);
}

/// An unreachable backend (a closed port) is a failed call with no `.completed` event, and the model reads that the search failed.
#[tokio::test]
async fn unreachable_backend_is_a_failed_call_the_model_is_told_about() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let h = Harness::start_with(move |c| {
        c.web_search.backend = Some(WebSearchBackendKind::Http);
        c.web_search.http.url = Some(format!("http://127.0.0.1:{port}/search"));
    })
    .await;
    h.upstream.push(search_call("closed port"));
    h.upstream.push(Script::text(&["The search failed."]));
    let s = h.stream(json!({"model":"m","input":"x","tools":[{"type":"web_search"}],"include":["web_search_call.action.sources"]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let ws = searches(&s.response);
    assert_eq!(ws.len(), 1);
    assert_eq!(ws[0]["status"], "failed");
    let id = ws[0]["id"].as_str().unwrap();
    assert!(s.of_type("response.web_search_call.completed").iter().all(|e| e["item_id"] != id), "no .completed for a failed search");
    assert_eq!(s.of_type("response.web_search_call.searching").len(), 1);
    let done: Vec<&Value> = s.of_type("response.output_item.done").into_iter().filter(|e| e["item"]["id"] == id).collect();
    assert_eq!(done[0]["item"]["status"], "failed");
    let out = tool_messages(&h.upstream.requests()[1].body)[0]["content"].as_str().unwrap().to_string();
    assert!(out.starts_with("error: web search failed") && out.contains("unreachable"), "{out}");
    assert!(!out.contains("No results"), "not an empty result: {out}");
}

/// A source link matches its source when one of the two forms is percent-encoded: the model
/// writes `zürich` for a result's `z%C3%BCrich`, or `%C3%A9` for a result's `é`. Each gets a
/// `url_citation` naming the result's URL.
#[tokio::test]
async fn percent_encoded_links_are_cited() {
    let (h, fx) = with_searxng().await;
    let encoded = "https://weather.example.org/z%C3%BCrich-weather";
    let plain = "https://news.example.org/caf\u{e9}-guide";
    let hit = |url: &str, title: &str| json!({"url": url, "title": title, "content": "x", "engine": "ddg", "engines": ["ddg"], "score": 1.0});
    fx.set(Mode::Ok(json!({"results": [hit(encoded, "Zürich weather"), hit(plain, "Café guide")]})));
    h.upstream.push(search_call("zurich weather"));
    h.upstream.push(Script::text(&["Rain ([w](https://weather.example.org/zürich-weather)); cafés: https://news.example.org/caf%C3%A9-guide."]));
    let s = h.stream(json!({"model":"m","input":"weather in Zürich?","tools":[{"type":"web_search"}]})).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let msg = s.response["output"].as_array().unwrap().iter().rev().find(|i| i["type"] == "message").unwrap().clone();
    let text = msg["content"][0]["text"].as_str().unwrap();
    let anns = msg["content"][0]["annotations"].as_array().unwrap();
    let cited: Vec<(String, &str)> = anns
        .iter()
        .map(|a| (slice(text, a["start_index"].as_u64().unwrap(), a["end_index"].as_u64().unwrap()), a["url"].as_str().unwrap()))
        .collect();
    assert_eq!(
        cited,
        [
            ("([w](https://weather.example.org/zürich-weather))".to_string(), encoded),
            ("https://news.example.org/caf%C3%A9-guide".to_string(), plain),
        ]
    );
}
