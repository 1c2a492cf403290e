//! Hosted tools declared natively to a Responses upstream (`upstream.native_tools`): the
//! upstream gets `{"type":"file_search"}` / `{"type":"web_search…"}` without the gateway's
//! backend settings, returns a typed call (`file_search_call` with `queries`,
//! `web_search_call` with `action.query`), the gateway runs the search exactly as for the
//! function form, and the result goes back as that type's continuation item. The client
//! sees the same items, events and annotations in both forms.

use crate::common::search_fixture::{searxng_page, Mode, SearchFixture};
use crate::common::vector_fixture::{VectorFixture, VsMode};
use crate::common::{items_without_ids, Harness};
use responses_gateway::config::{Config, UpstreamApiKind, WebSearchBackendKind};
use responses_gateway::executors::file_search::config::RemoteStoreConfig;
use scripted_upstream::{Script, ToolCallScript};
use serde_json::{json, Value};

const ZURICH: (&str, &str, f64, &str) = ("file-zurich", "zürich-cafés.md", 0.9, "Café Schober (1842) is the oldest café in Zürich.");

/// A gateway on a Responses upstream with a remote vector store (with a key) and a
/// SearXNG-shaped search backend; `native` lists the natively declared types.
async fn gateway(native: &[&str]) -> (Harness, VectorFixture, SearchFixture) {
    std::env::set_var("RG_NATIVE_TEST_STORE_KEY", "sk-store-secret-0123");
    let (vs, search) = (VectorFixture::start().await, SearchFixture::start().await);
    let (base, search_url) = (vs.base.clone(), format!("{}/search", search.origin));
    let native: Vec<String> = native.iter().map(|s| s.to_string()).collect();
    let h = Harness::start_with(move |c: &mut Config| {
        c.upstream.api = UpstreamApiKind::Responses;
        c.upstream.native_tools = native;
        c.file_search.remotes.insert("ogx".into(), RemoteStoreConfig { url: Some(base), api_key_env: Some("RG_NATIVE_TEST_STORE_KEY".into()) });
        c.file_search.default = "ogx".into();
        c.web_search.backend = Some(WebSearchBackendKind::Http);
        c.web_search.http.url = Some(search_url);
    })
    .await;
    (h, vs, search)
}

fn kinds(items: &Value) -> Vec<String> {
    items.as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap_or("?").to_string()).collect()
}

fn file_search_turn() -> Value {
    json!({"model": "m", "input": "Oldest café in Zürich?", "include": ["file_search_call.results"],
        "tools": [{"type": "file_search", "vector_store_ids": ["vs_remote_a"], "filters": {"type": "eq", "key": "store", "value": "vs_remote_a"}}]})
}

#[tokio::test]
async fn a_native_file_search_call_is_run_by_the_gateway_and_goes_back_typed() {
    let (h, vs, _search) = gateway(&["file_search"]).await;
    vs.set(VsMode::Ogx(vec![ZURICH]));
    h.upstream.push(Script::default().with_tool(ToolCallScript::hosted("file_search", r#"{"queries":["oldest café Zürich"]}"#)));
    h.upstream.push(Script::text(&["Schober【1】."]));
    let s = h.stream(file_search_turn()).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);

    // The declaration the upstream received: native, without the gateway's filters, store
    // URL or key.
    let reqs = h.upstream.requests();
    let up = &reqs[0].body;
    assert_eq!(up["tools"], json!([{"type": "file_search", "vector_store_ids": ["vs_remote_a"], "max_num_results": 20}]));
    let sent = up.to_string();
    assert!(!sent.contains(&vs.base) && !sent.contains("sk-store-secret") && !sent.contains("filters"), "{sent}");

    // The gateway ran the search (with the declaration's filters).
    let seen = vs.seen();
    assert_eq!(seen.len(), 1, "one search on the store");
    assert_eq!(seen[0]["body"]["query"], "oldest café Zürich");
    assert_eq!(seen[0]["body"]["filters"]["key"], "store");

    // What the client sees: the canonical item and a file_citation.
    let out = &s.response["output"];
    let fs = out.as_array().unwrap().iter().find(|i| i["type"] == "file_search_call").unwrap();
    assert_eq!((fs["status"].as_str(), fs["queries"].clone()), (Some("completed"), json!(["oldest café Zürich"])));
    assert!(fs["id"].as_str().unwrap().starts_with("fs_"));
    assert_eq!(fs["results"][0]["file_id"], "file-zurich");
    let msg = out.as_array().unwrap().iter().rev().find(|i| i["type"] == "message").unwrap();
    assert_eq!(msg["content"][0]["text"], "Schober.");
    assert_eq!(msg["content"][0]["annotations"][0]["file_id"], "file-zurich");

    // The result went back as a typed `file_search_call` under the call's id (the gateway's
    // own, as for every call the upstream sees again), with the chunk as the function form
    // shows it; no function call or output.
    let input = &reqs[1].body["input"];
    assert_eq!(kinds(input), ["message", "file_search_call"], "{input}");
    let typed = &input[1];
    let call_id = typed["id"].as_str().unwrap();
    assert!(call_id.starts_with("call_") && call_id != fs["id"].as_str().unwrap(), "the call's id, not the item's: {typed}");
    assert_eq!((typed["status"].as_str(), typed["queries"].clone()), (Some("completed"), json!(["oldest café Zürich"])));
    assert_eq!(typed["results"][0]["file_id"], "file-zurich");
    assert_eq!(typed["results"][0]["filename"], "zürich-cafés.md");
    assert_eq!(typed["results"][0]["text"], format!("【1†zürich-cafés.md】\n{}", ZURICH.3));

    // The same turn with the function form gives the client the same items.
    let (f, fvs, _fs) = gateway(&[]).await;
    fvs.set(VsMode::Ogx(vec![ZURICH]));
    f.upstream.push(Script::tool_call("file_search", r#"{"queries":["oldest café Zürich"]}"#));
    f.upstream.push(Script::text(&["Schober【1】."]));
    let fs_form = f.stream(file_search_turn()).await;
    assert_eq!(f.upstream.requests()[0].body["tools"][0]["type"], "function");
    assert_eq!(items_without_ids(&fs_form.response), items_without_ids(&s.response));
    assert_eq!(fs_form.types(), s.types(), "the same events in both forms");

    // Not streamed: the same items again.
    h.upstream.push(Script::default().with_tool(ToolCallScript::hosted("file_search", r#"{"queries":["oldest café Zürich"]}"#)));
    h.upstream.push(Script::text(&["Schober【1】."]));
    let (status, full) = h.post(file_search_turn()).await;
    assert_eq!(status, 200, "{full}");
    let streamed: Vec<Value> = items_without_ids(&s.response).into_iter().filter(|i| !i.to_string().contains("Searching files")).collect();
    assert_eq!(items_without_ids(&full), streamed);
}

#[tokio::test]
async fn a_continuation_sends_the_stored_typed_item_again() {
    let (h, vs, _search) = gateway(&["file_search"]).await;
    vs.set(VsMode::Ogx(vec![ZURICH]));
    h.upstream.push(Script::default().with_tool(ToolCallScript::hosted("file_search", r#"{"queries":["cafés"]}"#)));
    h.upstream.push(Script::text(&["Schober【1】."]));
    let (status, first) = h.post(file_search_turn()).await;
    assert_eq!(status, 200, "{first}");
    h.upstream.push(Script::text(&["At 8."]));
    let mut next = file_search_turn();
    next["input"] = json!("When does it open?");
    next["previous_response_id"] = first["id"].clone();
    let (status, second) = h.post(next).await;
    assert_eq!(status, 200, "{second}");
    let input = &h.upstream.requests()[2].body["input"];
    assert_eq!(kinds(input), ["message", "file_search_call", "message", "message"], "{input}");
    assert_eq!(input[1]["results"][0]["text"], format!("【1†zürich-cafés.md】\n{}", ZURICH.3));
}

#[tokio::test]
async fn a_native_web_search_call_is_run_by_the_gateway_and_goes_back_typed() {
    let (h, _vs, search) = gateway(&["web_search"]).await;
    search.set(Mode::Ok(searxng_page()));
    h.upstream.push(Script::default().with_tool(ToolCallScript::hosted("web_search", r#"{"query":"berlin art week"}"#)));
    h.upstream.push(Script::text(&["See https://berlinartweek.de/en/ ."]));
    let tools = json!([{"type": "web_search_preview", "search_context_size": "low", "filters": {"allowed_domains": ["berlinartweek.de"]}}]);
    let s = h.stream(json!({"model": "m", "input": "Berlin Art Week?", "tools": tools, "tool_choice": {"type": "web_search_preview"}})).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    let reqs = h.upstream.requests();
    let up = &reqs[0].body;
    assert_eq!(up["tools"], json!([{"type": "web_search_preview", "search_context_size": "low"}]), "no domain filter or backend");
    assert_eq!(up["tool_choice"], json!({"type": "web_search_preview"}));
    assert!(!up.to_string().contains(&search.origin));
    // The gateway searched, with the declaration's domain filter applied to the hits.
    assert_eq!(search.seen()[0]["query"]["q"], "berlin art week");
    let out = s.response["output"].as_array().unwrap();
    let ws = out.iter().find(|i| i["type"] == "web_search_call").unwrap();
    assert_eq!((ws["status"].as_str(), ws["action"]["query"].as_str()), (Some("completed"), Some("berlin art week")));
    let msg = out.iter().rev().find(|i| i["type"] == "message").unwrap();
    assert_eq!(msg["content"][0]["annotations"][0]["url"], "https://berlinartweek.de/en/");
    // Back upstream: the typed item with its sources, under the call's id.
    let input = &reqs[1].body["input"];
    assert_eq!(kinds(input), ["message", "web_search_call"], "{input}");
    let typed = &input[1];
    assert!(typed["id"].as_str().unwrap().starts_with("call_") && typed["id"] != ws["id"], "{typed} / {ws}");
    assert_eq!(typed["status"], "completed");
    assert_eq!(typed["action"]["query"], "berlin art week");
    assert_eq!(typed["action"]["sources"], json!([{"type": "url", "url": "https://berlinartweek.de/en/"}]));
    // After the forced search the choice relaxes to auto.
    assert_eq!(reqs[1].body["tool_choice"], "auto");
}

/// A typed call of a hosted tool declared as a function (not natively) runs as that
/// function's call would; one of a hosted tool not declared at all is answered as any call of
/// a tool not offered, and the model answers in another round (never an empty success).
#[tokio::test]
async fn typed_calls_of_tools_not_declared_natively_are_calls_too() {
    let (h, vs, _search) = gateway(&[]).await;
    vs.set(VsMode::Ogx(vec![ZURICH]));
    h.upstream.push(Script::default().with_tool(ToolCallScript::hosted("file_search", r#"{"queries":["x"]}"#)));
    h.upstream.push(Script::text(&["Schober."]));
    let (status, body) = h.post(file_search_turn()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(vs.seen().len(), 1, "the search ran");
    assert_eq!(kinds(&body["output"]), ["file_search_call", "message"], "{body}");
    let input = &h.upstream.requests()[1].body["input"];
    assert_eq!(kinds(input), ["message", "function_call", "function_call_output"], "the function form, as declared: {input}");

    h.upstream.push(Script::default().with_tool(ToolCallScript::hosted("web_search", r#"{"query":"x"}"#)));
    h.upstream.push(Script::text(&["No search."]));
    let (status, body) = h.post(file_search_turn()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(kinds(&body["output"]), ["message"], "{body}");
    let reqs = h.upstream.requests();
    let output = reqs[3].body["input"].as_array().unwrap().iter().find(|i| i["type"] == "function_call_output").cloned().unwrap();
    assert!(output["output"].as_str().unwrap().contains("no tool named 'web_search'"), "{output}");
}

/// Typed items go back in the model's call order, a call the gateway refused (invalid
/// arguments) in its function form with the error the model reads.
#[tokio::test]
async fn typed_items_keep_the_models_call_order() {
    let (h, vs, search) = gateway(&["file_search", "web_search"]).await;
    vs.set(VsMode::Ogx(vec![ZURICH]));
    search.set(Mode::Ok(searxng_page()));
    let script = Script::default()
        .with_tool(ToolCallScript::hosted("web_search", r#"{"query":"a"}"#))
        .with_tool(ToolCallScript::hosted("file_search", r#"{"queries":[]}"#))
        .with_tool(ToolCallScript::hosted("web_search", r#"{"query":"b"}"#));
    h.upstream.push(script);
    h.upstream.push(Script::text(&["Done."]));
    let mut turn = file_search_turn();
    turn["tools"].as_array_mut().unwrap().push(json!({"type": "web_search"}));
    let (status, body) = h.post(turn).await;
    assert_eq!(status, 200, "{body}");
    let input = &h.upstream.requests()[1].body["input"];
    assert_eq!(kinds(input), ["message", "web_search_call", "function_call", "web_search_call", "function_call_output"], "{input}");
    assert_eq!((input[1]["action"]["query"].as_str(), input[3]["action"]["query"].as_str()), (Some("a"), Some("b")));
    assert!(input[4]["output"].as_str().unwrap().contains("do not match its schema"), "{}", input[4]);
}

#[test]
fn hosted_native_tools_need_a_responses_upstream_that_does_not_run_them_itself() {
    let mut c = Config::default();
    c.upstream.url = Some("http://127.0.0.1:8000/v1".into());
    c.upstream.native_tools = vec!["file_search".into()];
    let err = c.validate().unwrap_err().to_string();
    assert!(err.contains("only on a Responses upstream"), "{err}");
    c.upstream.api = UpstreamApiKind::Responses;
    c.validate().unwrap();
    for url in ["https://api.openai.com/v1", "https://my.openai.azure.com/openai/v1", "https://api.openai.com./v1", "https://eu.api.openai.com/v1"] {
        c.upstream.url = Some(url.into());
        let err = c.validate().unwrap_err().to_string();
        assert!(err.contains("executed by this upstream itself"), "{url}: {err}");
    }
    c.upstream.url = Some("https://notopenai.com/v1".into());
    c.validate().unwrap();
    c.upstream.native_tools = vec!["custom".into()];
    c.upstream.url = Some("https://api.openai.com/v1".into());
    c.validate().unwrap();
}
