//! Thinking models through the tool loop (issue 30), on a scripted chat upstream that acts as
//! DeepSeek (or vLLM, with its `reasoning` field) and refuses tool rounds sent back without
//! their reasoning: gateway tools (web search, file search, MCP) and a client function
//! replayed with `store: false`; the same turns with the hand-back off fail as that server
//! fails them; sealed reasoning across turns, tampered blobs dropped.

use crate::common::search_fixture::{searxng_page, Mode, SearchFixture};
use crate::common::vector_fixture::{VectorFixture, VsMode};
use crate::common::{error_of, Harness};
use responses_gateway::config::{ReasoningHandback, WebSearchBackendKind};
use responses_gateway::executors::file_search::config::RemoteStoreConfig;
use scripted_upstream::Script;
use serde_json::{json, Value};

/// DeepSeek's answer to a tool round without its reasoning.
const DEEPSEEK_400: &str = "The `reasoning_content` in the thinking mode must be passed back to the API.";

struct Setup {
    h: Harness,
    search: SearchFixture,
    vectors: VectorFixture,
    mcp_url: String,
}

/// A gateway with web search (SearXNG), file search (a remote store) and MCP allowed, on a
/// chat upstream that wants `field` back (`None`: no check).
async fn setup(field: Option<&str>, handback: ReasoningHandback) -> Setup {
    let search = SearchFixture::start().await;
    search.set(Mode::Ok(searxng_page()));
    let vectors = VectorFixture::start().await;
    vectors.set(VsMode::OpenAi(vec![("file-1", "notes.md", 0.9, "Schober opens at 8.")]));
    let (mcp_url, _) = crate::mcp::mcp_server().await;
    let (search_url, vs_base) = (format!("{}/search", search.origin), vectors.base.clone());
    let h = Harness::start_with(move |c| {
        c.web_search.backend = Some(WebSearchBackendKind::Http);
        c.web_search.http.url = Some(search_url);
        c.file_search.remotes.insert("ogx".into(), RemoteStoreConfig { url: Some(vs_base), api_key_env: None });
        c.file_search.default = "ogx".into();
        c.mcp.allowed_urls = vec!["http://127.0.0.1:".into()];
        c.mcp.allow_private = true;
        c.upstream.reasoning_handback = handback;
    })
    .await;
    h.upstream.require_reasoning_back(field);
    Setup { h, search, vectors, mcp_url }
}

/// The assistant messages of the `n`-th upstream request.
fn assistants(h: &Harness, n: usize) -> Vec<Value> {
    let reqs = h.upstream.requests();
    reqs[n].body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "assistant").cloned().collect()
}

/// One turn per gateway tool: the call's round carries its reasoning, the answer its own;
/// the second request has the first round's reasoning back on its tool-call message.
#[tokio::test]
async fn gateway_tools_hand_the_reasoning_back_to_a_server_that_wants_it() {
    let s = setup(Some("reasoning_content"), ReasoningHandback::ToolRounds).await;
    let h = &s.h;
    let turns = [
        (json!([{"type": "web_search"}]), Script::tool_call("web_search", r#"{"query":"cafes"}"#)),
        (json!([{"type": "file_search", "vector_store_ids": ["vs_remote_a"]}]), Script::tool_call("file_search", r#"{"queries":["hours"]}"#)),
        (json!([{"type": "mcp", "server_label": "demo", "server_url": s.mcp_url, "require_approval": "never"}]), Script::tool_call("demo__echo", r#"{"text":"hi"}"#)),
    ];
    for (i, (tools, call)) in turns.into_iter().enumerate() {
        h.upstream.reset();
        h.upstream.push(call.reasoning(&["I should ", "look it up."]));
        h.upstream.push(Script::text(&["Found it."]).reasoning(&["Now answer."]));
        let streamed = i % 2 == 0;
        let response = if streamed {
            let st = h.stream(json!({"model": "m", "input": "q", "tools": tools})).await;
            st.response
        } else {
            let (status, body) = h.post(json!({"model": "m", "input": "q", "tools": tools})).await;
            assert_eq!(status, 200, "{body}");
            body
        };
        assert_eq!(response["status"], "completed", "turn {i}: {response}");
        let sent = assistants(h, 1);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0]["reasoning_content"], "I should look it up.", "turn {i}");
        assert!(sent[0].get("reasoning").is_none());
        let reasoning: Vec<&Value> = response["output"].as_array().unwrap().iter().filter(|o| o["type"] == "reasoning").collect();
        assert_eq!(reasoning.len(), 2, "{response}");
        assert!(reasoning[0].get("encrypted_content").is_none(), "not asked for");
    }
    assert!(!s.search.seen().is_empty() && !s.vectors.seen().is_empty());
}

/// A client function round trip replayed with `store: false` and the sealed reasoning: the
/// upstream gets the reasoning back in the field it used (vLLM's `reasoning` here, DeepSeek's
/// `reasoning_content` with the same code), and a tampered or foreign blob never reaches it.
#[tokio::test]
async fn a_stateless_client_hands_the_sealed_reasoning_back() {
    for field in ["reasoning", "reasoning_content"] {
        let s = setup(Some(field), ReasoningHandback::ToolRounds).await;
        let h = &s.h;
        let tools = json!([{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
        h.upstream.push(Script::tool_call("get_weather", r#"{"city":"Paris"}"#).reasoning(&["Weather needs ", "a call."]).reasoning_field(field));
        let first = json!({"model": "m", "input": "Weather in Paris?", "tools": tools, "store": false, "include": ["reasoning.encrypted_content"]});
        let (status, turn1) = h.post(first).await;
        assert_eq!(status, 200, "{turn1}");
        let output = turn1["output"].as_array().unwrap().clone();
        let reasoning = output.iter().find(|o| o["type"] == "reasoning").unwrap();
        let blob = reasoning["encrypted_content"].as_str().unwrap().to_string();
        assert!(blob.starts_with("rgs1."), "{blob}");
        assert!(!blob.contains("Weather"), "sealed, not readable");
        assert_eq!(reasoning["content"][0]["text"], "Weather needs a call.");
        let call = output.iter().find(|o| o["type"] == "function_call").unwrap();
        let mut input = vec![json!({"role": "user", "content": "Weather in Paris?"})];
        input.extend(output.iter().cloned());
        input.push(json!({"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}));
        h.upstream.push(Script::text(&["Sunny."]).reasoning(&["Easy."]).reasoning_field(field));
        let second = json!({"model": "m", "input": input, "tools": tools, "store": false, "include": ["reasoning.encrypted_content"]});
        let (status, turn2) = h.post(second.clone()).await;
        assert_eq!(status, 200, "{field}: {turn2}");
        let sent = assistants(h, 1);
        assert_eq!(sent[0][field], "Weather needs a call.", "{field}: {sent:?}");
        assert_eq!(sent[0]["tool_calls"][0]["id"], call["call_id"]);
        let other = if field == "reasoning" { "reasoning_content" } else { "reasoning" };
        assert!(sent[0].get(other).is_none());
        // A changed blob (or another server's) is dropped: the server then refuses the round,
        // as it refuses any tool round without its reasoning.
        let mut tampered = second.clone();
        let at = tampered["input"].as_array().unwrap().iter().position(|i| i["type"] == "reasoning").unwrap();
        let mut changed = blob.clone().into_bytes();
        let k = changed.len() - 5;
        changed[k] = if changed[k] == b'A' { b'B' } else { b'A' };
        tampered["input"][at]["encrypted_content"] = json!(String::from_utf8(changed).unwrap());
        let (status, refused) = h.post(tampered).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(error_of(&refused)["code"], "upstream_rejected_request");
        assert!(error_of(&refused)["message"].as_str().unwrap().contains(&format!("The `{field}` in the thinking mode must be passed back")), "{refused}");
        let last = h.upstream.requests().last().unwrap().body.clone();
        assert!(!last.to_string().contains("Weather needs"), "no unauthenticated reasoning reaches the model: {last}");
    }
}

/// With the hand-back off, the same turns fail the way the server fails them: 400 with its
/// message when not streamed, `error` + `response.failed` (with the usage so far) when
/// streamed.
#[tokio::test]
async fn with_the_hand_back_off_the_server_refuses_the_tool_round() {
    let s = setup(Some("reasoning_content"), ReasoningHandback::Never).await;
    let h = &s.h;
    let tools = json!([{"type": "web_search"}]);
    h.upstream.push(Script::tool_call("web_search", r#"{"query":"cafes"}"#).reasoning(&["think"]).usage(7, 3));
    let (status, body) = h.post(json!({"model": "m", "input": "q", "tools": tools})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_of(&body)["code"], "upstream_rejected_request");
    assert!(error_of(&body)["message"].as_str().unwrap().contains(DEEPSEEK_400), "{body}");
    assert!(assistants(h, 1)[0].get("reasoning_content").is_none());
    h.upstream.push(Script::tool_call("web_search", r#"{"query":"cafes"}"#).reasoning(&["think"]).usage(7, 3));
    let st = h.stream(json!({"model": "m", "input": "q", "tools": tools})).await;
    assert_eq!(st.terminal_type(), "response.failed");
    assert!(st.of_type("error")[0]["message"].as_str().unwrap().contains(DEEPSEEK_400));
    assert_eq!(st.response["usage"]["input_tokens"], 7, "the first round's usage: {}", st.response);
    assert_eq!(st.response["usage"]["output_tokens"], 3);
}

/// Stored chains keep the reasoning: a continuation by `previous_response_id` sends the
/// earlier turn's tool round back with it; a plain chat turn's reasoning is left out.
#[tokio::test]
async fn stored_chains_keep_the_reasoning_of_tool_rounds_only() {
    let s = setup(Some("reasoning_content"), ReasoningHandback::ToolRounds).await;
    let h = &s.h;
    h.upstream.push(Script::text(&["Hello."]).reasoning(&["Greet."]));
    let (_, chat) = h.post(json!({"model": "m", "input": "hi"})).await;
    h.upstream.push(Script::tool_call("web_search", r#"{"query":"x"}"#).reasoning(&["Search."]));
    h.upstream.push(Script::text(&["Done."]));
    let (status, tooled) = h.post(json!({"model": "m", "input": "look up x", "tools": [{"type": "web_search"}], "previous_response_id": chat["id"]})).await;
    assert_eq!(status, 200, "{tooled}");
    h.upstream.push(Script::text(&["Bye."]));
    let (status, last) = h.post(json!({"model": "m", "input": "thanks", "previous_response_id": tooled["id"]})).await;
    assert_eq!(status, 200, "{last}");
    let sent = assistants(h, 3);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent[0].get("reasoning_content").is_none(), "a chat turn's reasoning stays out: {:?}", sent[0]);
    assert_eq!(sent[1]["reasoning_content"], "Search.");
    assert_eq!(sent[2]["reasoning_content"], "", "the answer of a tool turn that came without reasoning");
    // `always` would send the chat turn's too.
    let a = setup(None, ReasoningHandback::Always).await;
    a.h.upstream.push(Script::text(&["Hello."]).reasoning(&["Greet."]));
    let (_, chat) = a.h.post(json!({"model": "m", "input": "hi"})).await;
    a.h.upstream.push(Script::text(&["Bye."]));
    a.h.post(json!({"model": "m", "input": "bye", "previous_response_id": chat["id"]})).await;
    assert_eq!(assistants(&a.h, 1)[0]["reasoning_content"], "Greet.");
}
