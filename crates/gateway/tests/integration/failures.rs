//! Upstream failures, truncation and keep-alive: every stream still satisfies the
//! invariants and ends in exactly one terminal event.


use crate::common::{error_of, Harness};
use scripted_upstream::{Fault, Script, ToolCallScript};
use serde_json::json;

fn assert_failed_stream(s: &crate::common::Checked) {
    assert_eq!(s.terminal_type(), "response.failed", "{}", s.raw);
    let types = s.types();
    let n = types.len();
    assert_eq!(types[n - 2], "error", "error event right before response.failed");
    let err = &s.events[n - 2];
    assert!(err["message"].is_string(), "flat message: {err}");
    assert!(err["error"]["message"].is_string(), "nested error object: {err}");
    assert_eq!(err["error"]["message"], err["message"]);
    assert!(s.response["error"]["message"].is_string(), "response.error set");
    assert!(s.response["error"]["code"].is_string());
}

#[tokio::test]
async fn upstream_http_500() {
    let h = Harness::start().await;
    h.upstream.push(Script::http_error(500, r#"{"error":{"message":"engine crashed"}}"#));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502);
    let e = error_of(&body);
    assert_eq!(e["type"], "server_error");
    assert!(e["message"].as_str().unwrap().contains("500"));
    h.upstream.push(Script::http_error(500, "oops"));
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_failed_stream(&s);
}

/// The upstream refusing the request (its 400) is the same error streamed or not: the
/// stream's `error` event carries the non-streamed body's code; a plain-text error body is
/// the message. `response.error.code` is `invalid_prompt` (an SDK code that clients such as
/// Codex CLI do not retry); a context-length refusal is `context_length_exceeded`.
#[tokio::test]
async fn upstream_rejection_has_one_code_streamed_or_not() {
    let h = Harness::start().await;
    for (body, code) in [
        (r#"{"error":{"message":"unknown field: foo"}}"#, "upstream_rejected_request"),
        // vLLM / OpenAI and llama.cpp wordings
        (r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}}"#, "context_length_exceeded"),
        (r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#, "context_length_exceeded"),
    ] {
        h.upstream.push(Script::http_error(400, body));
        let (status, resp) = h.post(json!({"model":"m","input":"x"})).await;
        assert_eq!(status, 400, "{resp}");
        assert_eq!(error_of(&resp)["code"], code, "{resp}");
        assert_eq!(error_of(&resp)["type"], "invalid_request_error");
        h.upstream.push(Script::http_error(400, body));
        let s = h.stream(json!({"model":"m","input":"x"})).await;
        assert_failed_stream(&s);
        let err = s.of_type("error");
        assert_eq!(err[0]["code"], code);
        assert_eq!(err[0]["error"]["type"], "invalid_request_error", "the type a non-streamed body has");
        assert_eq!(err[0]["message"], error_of(&resp)["message"]);
        assert_eq!(s.response["error"]["code"], "invalid_prompt", "one of the SDK's fixed codes, not retried");
    }
    // vLLM's and Ollama's answers to an unknown model (no [models] table): the client's 404
    // naming `model`, as with a table; a 404 that does not name the model is a wrong upstream
    // URL, the gateway's 502.
    for body in [
        r#"{"object":"error","message":"The model `gpt-4o` does not exist.","type":"NotFoundError","param":null,"code":404}"#,
        r#"{"error":{"message":"model \"gpt-4o\" not found, try pulling it first","type":"api_error"}}"#,
    ] {
        h.upstream.push(Script::http_error(404, body));
        let (status, resp) = h.post(json!({"model":"gpt-4o","input":"x"})).await;
        assert_eq!((status, &error_of(&resp)["code"], &error_of(&resp)["param"]), (404, &json!("model_not_found"), &json!("model")), "{resp}");
        assert!(error_of(&resp)["message"].as_str().unwrap().contains("gpt-4o"), "{resp}");
        h.upstream.push(Script::http_error(404, body));
        let s = h.stream(json!({"model":"gpt-4o","input":"x"})).await;
        assert_failed_stream(&s);
        let err = &s.of_type("error")[0];
        assert_eq!((&err["code"], &err["param"], &err["error"]["type"]), (&json!("model_not_found"), &json!("model"), &json!("invalid_request_error")));
        assert_eq!(s.response["error"]["code"], "invalid_prompt");
    }
    // The same error sent inside a 200 answer (`code: 404`) is classified the same way.
    let inside = r#"{"error":{"message":"The model `gpt-4o` does not exist.","code":404}}"#;
    h.upstream.push(Script::http_error(200, inside));
    let (status, resp) = h.post(json!({"model":"gpt-4o","input":"x"})).await;
    assert_eq!((status, &error_of(&resp)["code"], &error_of(&resp)["param"]), (404, &json!("model_not_found"), &json!("model")), "{resp}");
    h.upstream.push(Script::http_error(200, inside));
    let s = h.stream(json!({"model":"gpt-4o","input":"x"})).await;
    assert_eq!(s.of_type("error")[0]["code"], "model_not_found");
    for body in [r#"{"detail":"Not Found"}"#, r#"{"error":{"message":"Route /v1/chat/completions not found. Did you mean /v1/models?"}}"#] {
        h.upstream.push(Script::http_error(404, body));
        let (status, resp) = h.post(json!({"model":"m1","input":"x"})).await;
        assert_eq!((status, &error_of(&resp)["code"]), (502, &json!("upstream_error")), "{resp}");
    }
    h.upstream.push(Script::http_error(429, r#"{"error":{"message":"slow down"}}"#));
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_eq!(s.of_type("error")[0]["error"]["type"], "rate_limit_error");
    assert_eq!(s.response["error"]["code"], "rate_limit_exceeded", "an SDK code: kept on response.error");
    h.upstream.push(Script::http_error(503, "model is loading"));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502);
    assert!(error_of(&body)["message"].as_str().unwrap().contains("model is loading"), "{body}");
    h.upstream.push(Script::http_error(503, "model is loading"));
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_eq!(s.response["error"]["code"], "server_error", "a server failure may be retried");
}

/// Image or audio input that the model cannot take (llama.cpp without `--mmproj` answers 500,
/// vLLM 400, Ollama 500 or 400) is the client's 400 `invalid_request_error`
/// (`unsupported_input`, param `input`) saying so, not a 502; streamed, the `error` event
/// and `response.failed` carry it.
#[tokio::test]
async fn input_the_model_cannot_take_is_a_400() {
    let h = Harness::start().await;
    let image = json!([{"role":"user","content":[{"type":"input_text","text":"what is this?"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}]);
    for (status, body, kind) in [
        (500, r#"{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}"#, "image"),
        (500, r#"{"error":{"code":500,"message":"image input is not supported by this server","type":"server_error"}}"#, "image"),
        (500, r#"{"error":{"code":500,"message":"audio input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}"#, "audio"),
        (400, r#"{"object":"error","message":"Qwen2ForCausalLM is not a multimodal model","type":"BadRequestError","param":null,"code":400}"#, "image or audio"),
        (400, r#"{"object":"error","message":"At most 0 image(s) may be provided in one prompt.","type":"BadRequestError","param":null,"code":400}"#, "image"),
        (500, r#"{"error":{"message":"this model is missing data required for image input","type":"api_error"}}"#, "image"),
    ] {
        h.upstream.push(Script::http_error(status, body));
        let (got, resp) = h.post(json!({"model":"m","input":image})).await;
        let e = error_of(&resp);
        assert_eq!((got, &e["type"], &e["code"], &e["param"]), (400, &json!("invalid_request_error"), &json!("unsupported_input"), &json!("input")), "{body}: {resp}");
        let message = e["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("The model does not accept {kind} input")), "{message}");
        h.upstream.push(Script::http_error(status, body));
        let s = h.stream(json!({"model":"m","input":image})).await;
        assert_failed_stream(&s);
        let err = &s.of_type("error")[0];
        assert_eq!((&err["code"], &err["param"], &err["error"]["type"]), (&json!("unsupported_input"), &json!("input"), &json!("invalid_request_error")), "{body}");
        assert_eq!(err["message"].as_str(), Some(message), "the same message streamed or not");
        assert_eq!(s.response["error"]["code"], "invalid_prompt", "one of the SDK's codes, not retried");
    }
    // Another 500 is still the gateway's 502.
    h.upstream.push(Script::http_error(500, r#"{"error":{"message":"failed to load image decoder"}}"#));
    let (got, resp) = h.post(json!({"model":"m","input":image})).await;
    assert_eq!((got, &error_of(&resp)["code"]), (502, &json!("upstream_error")), "{resp}");
}

#[tokio::test]
async fn upstream_unreachable_never_leaks_credentials() {
    let var = "RG_TEST_KEY_UNREACHABLE";
    std::env::set_var(var, "sk-very-secret-123");
    let h = Harness::start_with(|c| {
        c.upstream.url = Some("http://user:hunter2@127.0.0.1:9/v1".into());
        c.upstream.api_key_env = Some(var.into());
    })
    .await;
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502);
    let text = body.to_string();
    assert!(!text.contains("hunter2") && !text.contains("sk-very-secret-123") && !text.contains("user:"), "{text}");
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_failed_stream(&s);
    assert!(!s.raw.contains("hunter2") && !s.raw.contains("sk-very-secret"));
}

#[tokio::test]
async fn upstream_error_body_echoing_the_key_is_redacted() {
    let var = "RG_TEST_KEY_ECHO";
    std::env::set_var(var, "sk-echoed-456");
    let h = Harness::start_with(|c| c.upstream.api_key_env = Some(var.into())).await;
    h.upstream.push(Script::http_error(401, r#"{"error":{"message":"bad key sk-echoed-456"}}"#));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502);
    assert!(!body.to_string().contains("sk-echoed-456"), "{body}");
    // What the upstream says about the gateway's key (often a masked copy) is not passed on.
    h.upstream.push(Script::http_error(403, r#"{"error":{"message":"Incorrect API key provided: sk-ech***456"}}"#));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502);
    let msg = error_of(&body)["message"].as_str().unwrap().to_string();
    assert!(!msg.contains("sk-ech") && msg.contains("refused the gateway's credentials"), "{msg}");
    assert_eq!(h.upstream.requests()[0].authorization.as_deref(), Some("Bearer sk-echoed-456"), "the key is sent upstream");
    // Any other status: the message is passed on, the key in none of its forms (percent-encoded
    // in either case, or the Base64 of an echoed header).
    h.upstream.push(Script::http_error(500, r#"{"error":{"message":"key sk%2Dechoed-456 / sk-echoed%2d456 / c2stZWNob2VkLTQ1Ng== broke"}}"#));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502);
    let msg = error_of(&body)["message"].as_str().unwrap().to_string();
    assert_eq!(msg, "upstream returned HTTP 500: key [redacted] / [redacted] / [redacted] broke");
}

#[tokio::test]
async fn mid_stream_disconnect_closes_open_items_and_fails() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["a", "b", "c", "d", "e"]).fault(Fault::Disconnect { after_chunks: 3 }));
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_failed_stream(&s);
    let msg = &s.response["output"][0];
    assert_eq!(msg["status"], "incomplete", "{msg}");
    h.upstream.push(Script::text(&["a", "b", "c", "d", "e"]).fault(Fault::Disconnect { after_chunks: 3 }));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 502, "{body}");
}

/// vLLM's `finish_reason: "abort"` (the server gave up on the generation) is a failure,
/// never a completed answer: streamed, the partial message closes `incomplete`.
#[tokio::test]
async fn an_aborted_generation_fails() {
    let h = Harness::start().await;
    let aborted = || Script { finish_reason: Some("abort".into()), ..Script::text(&["partial", " answer"]) };
    h.upstream.push(aborted());
    let s = h.stream(json!({"model":"m","input":"x","store":false})).await;
    assert_failed_stream(&s);
    assert_eq!(s.response["output"][0]["status"], "incomplete");
    assert!(s.response["error"]["message"].as_str().unwrap_or("").contains("aborted"), "{}", s.response);
    h.upstream.push(aborted());
    let (status, body) = h.post(json!({"model":"m","input":"x","store":false})).await;
    assert_eq!(status, 502, "{body}");
    h.upstream.push(Script { finish_reason: Some("error".into()), ..Script::text(&["partial"]) });
    let (status, body) = h.post(json!({"model":"m","input":"x","store":false})).await;
    assert_eq!(status, 502, "{body}");
}

#[tokio::test]
async fn malformed_chunk_fails_cleanly() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["a", "b", "c"]).fault(Fault::Malformed { after_chunks: 2 }));
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_failed_stream(&s);
    h.upstream.push(Script::text(&["a", "b", "c"]).fault(Fault::Malformed { after_chunks: 2 }));
    assert_eq!(h.post(json!({"model":"m","input":"x"})).await.0, 502);
}

#[tokio::test]
async fn stall_longer_than_idle_timeout_fails_with_keepalives_meanwhile() {
    let h = Harness::start_with(|c| {
        c.upstream.idle_timeout_ms = 700;
        c.server.keepalive_interval_ms = 100;
    })
    .await;
    h.upstream.push(Script::text(&["a", "b", "c"]).fault(Fault::Stall { after_chunks: 2, stall_ms: 3000 }));
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_failed_stream(&s);
    assert_eq!(s.response["error"]["code"], "server_error", "one of the SDK's fixed codes");
    let err = s.of_type("error");
    assert_eq!(err[0]["code"], "upstream_timeout");
    assert!(s.keepalives >= 3, "keep-alive comments while waiting: {}", s.keepalives);
    // a stall shorter than the idle timeout is fine
    h.upstream.push(Script::text(&["a", "b", "c"]).fault(Fault::Stall { after_chunks: 2, stall_ms: 400 }));
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_eq!(s.terminal_type(), "response.completed");
}

#[tokio::test]
async fn length_in_the_middle_of_a_call_is_incomplete() {
    let h = Harness::start().await;
    let tools = json!([{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]);
    let cut = ToolCallScript::new("get_weather", r#"{"city":"Pa"#).fragment_chars(4);
    h.upstream.push(Script::default().with_tool(cut.clone()).finish("length"));
    let s = h.stream(json!({"model":"m","input":"x","tools":tools})).await;
    assert_eq!(s.terminal_type(), "response.incomplete");
    assert_eq!(s.response["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(s.response["output"][0]["type"], "function_call");
    assert_eq!(s.response["output"][0]["status"], "incomplete");
    h.upstream.push(Script::default().with_tool(cut).finish("length"));
    let (status, body) = h.post(json!({"model":"m","input":"x","tools":tools})).await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "incomplete");
    assert_eq!(body["output"][0]["status"], "incomplete");
    h.upstream.push(Script::text(&["bad"]).finish("content_filter"));
    let (_, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(body["status"], "incomplete");
    assert_eq!(body["incomplete_details"]["reason"], "content_filter");
    h.upstream.push(Script::text(&["long text"]).finish("length"));
    let s = h.stream(json!({"model":"m","input":"x"})).await;
    assert_eq!(s.terminal_type(), "response.incomplete");
    assert_eq!(s.response["output"][0]["status"], "incomplete");
}

#[tokio::test]
async fn upstream_request_errors_map_to_client_statuses() {
    let h = Harness::start().await;
    for (up, want) in [(400u16, 400u16), (413, 400), (429, 429), (401, 502), (503, 502)] {
        h.upstream.push(Script::http_error(up, r#"{"error":{"message":"upstream says no"}}"#));
        let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
        assert_eq!(status, want, "upstream {up}: {body}");
        // A 401 is about the gateway's key: its text is not passed on.
        let passed_on = error_of(&body)["message"].as_str().unwrap().contains("upstream says no");
        assert_eq!(passed_on, up != 401, "upstream {up}: {body}");
    }
}

#[tokio::test]
async fn reused_upstream_call_ids_get_unique_gateway_ids() {
    let h = Harness::start().await;
    let tools = json!([{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}]);
    let call = ToolCallScript::new("f", "{}").id("call_0");
    h.upstream.push(Script::default().with_tool(call.clone()).with_tool(ToolCallScript::new("f", "{}").id("call_0")));
    let (_, first) = h.post(json!({"model":"m","input":"x","tools":tools,"store":false})).await;
    let ids: Vec<&str> = first["output"].as_array().unwrap().iter().map(|i| i["call_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    let mut input = vec![json!({"role":"user","content":"x"})];
    input.extend(first["output"].as_array().unwrap().iter().cloned());
    for id in &ids {
        input.push(json!({"type":"function_call_output","call_id":id,"output":"ok"}));
    }
    h.upstream.push(Script::default().with_tool(call));
    let (status, second) = h.post(json!({"model":"m","input":input,"tools":tools,"store":false})).await;
    assert_eq!(status, 200, "{second}");
    let new_id = second["output"][0]["call_id"].as_str().unwrap();
    assert!(!ids.contains(&new_id), "a reused upstream id never collides with earlier calls");
}

/// A client that declares a body and stops sending it is answered 408 once
/// `server.request_read_timeout_ms` passes without a byte, and its connection is freed; one
/// that stops inside the request's head, or sends nothing at all, has its connection closed.
#[tokio::test]
async fn a_stalled_request_body_times_out() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let h = Harness::start_with(|c| c.server.request_read_timeout_ms = 300).await;
    for path in ["/v1/responses", "/v1/conversations"] {
        let mut conn = tokio::net::TcpStream::connect(h.base.trim_start_matches("http://")).await.unwrap();
        let head = format!("POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"model\"");
        conn.write_all(head.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        tokio::time::timeout(std::time::Duration::from_secs(10), conn.read_to_end(&mut answer)).await.expect("answered, then closed").unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
        assert!(answer.contains(r#""type":"invalid_request_error""#) && answer.contains("request_timeout"), "{path}: {answer}");
    }
    let mut conn = tokio::net::TcpStream::connect(h.base.trim_start_matches("http://")).await.unwrap();
    conn.write_all(b"POST /v1/responses HTTP/1.1\r\nhost: localhost\r\n").await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), conn.read_to_end(&mut answer)).await.expect("closed").ok();
    // A connection that never sends a byte is closed too (hyper's own timer starts with the
    // first byte).
    let mut silent = tokio::net::TcpStream::connect(h.base.trim_start_matches("http://")).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), silent.read_to_end(&mut answer)).await.expect("a silent connection is closed").ok();
    assert!(answer.is_empty());
    // An upload that stalls inside its file part.
    let mut conn = tokio::net::TcpStream::connect(h.base.trim_start_matches("http://")).await.unwrap();
    let part = "--XX\r\ncontent-disposition: form-data; name=\"purpose\"\r\n\r\nassistants\r\n--XX\r\ncontent-disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhel";
    let head = format!("POST /v1/files HTTP/1.1\r\nhost: localhost\r\ncontent-type: multipart/form-data; boundary=XX\r\ncontent-length: 900\r\n\r\n{part}");
    conn.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), conn.read_to_end(&mut answer)).await.expect("answered, then closed").unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408") && answer.contains("request_timeout"), "upload: {answer}");
    h.upstream.push(Script::text(&["ok"]));
    assert_eq!(h.post(json!({"model":"m","input":"x"})).await.0, 200, "a whole body is unaffected");
}

#[tokio::test]
async fn non_openai_errors_are_openai_shaped() {
    let h = Harness::start_with(|c| c.server.max_body_bytes = 1024).await;
    let big = json!({"model":"m","input":"x".repeat(4096)});
    let (status, body) = h.post(big).await;
    assert_eq!(status, 413);
    assert_eq!(error_of(&body)["code"], "request_too_large");
    let resp = h.client.get(format!("{}/v1/responses", h.base)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(error_of(&body)["code"], "method_not_allowed");
    // Every endpoint's extractor rejections are in the OpenAI shape too: bodies over the
    // limit (plain and chunked) and a multipart form without a boundary.
    let (_, conv) = h.post_to("/v1/conversations", json!({})).await;
    let conv = conv["id"].as_str().unwrap().to_string();
    for path in ["/v1/conversations".to_string(), format!("/v1/conversations/{conv}/items"), "/v1/vector_stores".to_string()] {
        let (status, body) = h.post_to(&path, json!({"metadata": {"k": "x".repeat(4096)}})).await;
        assert_eq!(status, 413, "{path}: {body}");
        assert_eq!(error_of(&body)["code"], "request_too_large", "{path}");
        let chunks = futures_util::stream::iter((0..8).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 512]))));
        let resp = h.client.post(format!("{}{path}", h.base)).header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(chunks)).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 413, "{path} chunked");
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(error_of(&body)["type"], "invalid_request_error", "{path} chunked");
    }
    // A declared length over the limit is refused before the body arrives: the client that
    // sends a few bytes and waits gets its 413 instead of a connection held open.
    for path in ["/v1/responses", "/v1/conversations", "/v1/files"] {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut conn = tokio::net::TcpStream::connect(h.base.trim_start_matches("http://")).await.unwrap();
        let kind = if path == "/v1/files" { "multipart/form-data; boundary=XX" } else { "application/json" };
        let head = format!("POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: {kind}\r\ncontent-length: 999999999\r\n\r\n{{}}");
        conn.write_all(head.as_bytes()).await.unwrap();
        let mut answer = vec![0u8; 4096];
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), conn.read(&mut answer)).await.expect("answered at once").unwrap();
        let answer = String::from_utf8_lossy(&answer[..n]);
        assert!(answer.starts_with("HTTP/1.1 413") && answer.contains("request_too_large"), "{path}: {answer}");
    }
    let resp = h.client.post(format!("{}/v1/files", h.base)).header("content-type", "multipart/form-data").body("x").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(error_of(&body)["type"], "invalid_request_error", "{body}");
}

/// An upstream that drops the first connection after reading the request (as a server
/// closing a reused keep-alive connection does) gets the request once more; a second drop
/// is a 502.
#[tokio::test]
async fn a_connection_dropped_before_any_response_byte_is_retried_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let drops = Arc::new(AtomicUsize::new(1));
    let (a, d) = (accepted.clone(), drops.clone());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            let mut buf = vec![0u8; 65536];
            let mut got = Vec::new();
            // Read until the JSON body is complete (it ends with `}` after the headers).
            while let Ok(n) = sock.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got);
                if let Some(i) = text.find("\r\n\r\n") {
                    if text[i..].trim_end().ends_with('}') {
                        break;
                    }
                }
            }
            if d.load(Ordering::SeqCst) > 0 {
                d.fetch_sub(1, Ordering::SeqCst);
                drop(sock);
                continue;
            }
            let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\n\
                        data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.write_all(body.as_bytes()).await;
        }
    });
    let h = Harness::start_with(move |c| c.upstream.url = Some(format!("http://{addr}/v1"))).await;
    let (status, body) = h.post(json!({"model":"m","input":"x","store":false})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"][0]["content"][0]["text"], "hello");
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "one drop, one retry");

    drops.store(2, Ordering::SeqCst);
    let (status, body) = h.post(json!({"model":"m","input":"x","store":false})).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(accepted.load(Ordering::SeqCst), 4, "retried once, not more");
}

/// An error inside the 200 stream (`{"error":{…}}`, or vLLM's top-level
/// `{"object":"error",…}`) is classified like the same error as an HTTP answer, and the
/// credentials it may echo are redacted.
#[tokio::test]
async fn in_stream_error_chunks_are_classified_and_redacted() {
    use responses_gateway::upstream::chat::RoundStream;
    use responses_gateway::upstream::UpstreamError;
    let secret = std::sync::Arc::new(responses_gateway::upstream::redact::Secrets::new(["sk-stream-secret-9".to_string()]));
    for chunk in [
        r#"{"error":{"message":"This model's maximum context length is 4096 tokens (key sk-stream-secret-9)","code":400}}"#,
        r#"{"object":"error","message":"This model's maximum context length is 4096 tokens (key sk-stream-secret-9)","type":"BadRequestError","code":400}"#,
    ] {
        let text = format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"a\"}}}}]}}\n\ndata: {chunk}\n\n");
        let stream = futures_util::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from(text))]);
        let mut rs = RoundStream::new(stream, std::time::Duration::from_secs(5)).with_secrets(secret.clone());
        assert!(matches!(rs.next().await, Some(Ok(_))), "the text before the error");
        let err = match rs.next().await {
            Some(Err(e)) => e,
            other => panic!("expected the upstream's error, got {other:?}"),
        };
        assert!(matches!(err, UpstreamError::Status { status: 400, .. }), "{err:?}");
        assert_eq!(err.code(), "context_length_exceeded");
        let msg = err.to_string();
        assert!(!msg.contains("sk-stream-secret-9") && msg.contains("[redacted]"), "{msg}");
    }
}

/// `user:password@` and a query string in the upstream URL: the query stays at the end of
/// every path, the pair goes as Basic auth (no key configured), and neither the password,
/// the pair (plain or Base64) nor a query value reaches a client in an echoed error, decoded
/// or percent-encoded as written in the URL (servers echo the request line).
#[tokio::test]
async fn upstream_url_credentials_and_query_are_used_and_never_echoed() {
    let h = Harness::start_with(|c| {
        let base = c.upstream.url.take().expect("url");
        c.upstream.url = Some(format!("{}?token=qtoken-777&sig=ab%2Bcd%3D%3D", base.replace("http://", "http://alice:pw%21secret@")));
    })
    .await;
    h.upstream.push(Script::text(&["ok"]));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 200, "{body}");
    let basic = {
        use base64::Engine as _;
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("alice:pw!secret"))
    };
    assert_eq!(h.upstream.requests()[0].authorization.as_deref(), Some(basic.as_str()));
    let echo = format!(
        r#"{{"error":{{"message":"denied: pw!secret / alice:pw!secret / {basic} / qtoken-777 / POST /v1/chat/completions?token=qtoken-777&sig=ab%2Bcd%3D%3D / ab+cd== / alice:pw%21secret / ab%2bcd%3d%3d / ab+cd%3D= / YWIrY2Q9PQ"}}}}"#
    );
    h.upstream.push(Script::http_error(400, &echo));
    let (status, body) = h.post(json!({"model":"m","input":"x"})).await;
    assert_eq!(status, 400, "{body}");
    let msg = error_of(&body)["message"].as_str().unwrap().to_string();
    for secret in ["pw!secret", "pw%21secret", "cHchc2VjcmV0", "qtoken-777", "YWxpY2U6cHchc2VjcmV0", "ab%2Bcd", "ab+cd", "ab%2bcd", "YWIrY2Q9PQ"] {
        assert!(!msg.contains(secret), "{secret} in {msg}");
    }
    assert!(msg.starts_with("upstream returned HTTP 400: denied:"), "{msg}");
}

/// `GET /v1/models` rebuilds the upstream's list in the OpenAI shape: an upstream that
/// echoes the gateway's key (or anything else) in its 200 body shows neither to the client.
#[tokio::test]
async fn the_upstream_model_list_is_rebuilt_without_the_key() {
    use axum::http::HeaderMap;
    let app = axum::Router::new().route(
        "/v1/models",
        axum::routing::get(|headers: HeaderMap| async move {
            let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            axum::Json(json!({"object":"list","data":[
                {"id":"m1","object":"model","created":1700000000,"owned_by":auth,"meta":{"key":auth}},
                {"id":"m2","created":"soon"},
                {"object":"model"}
            ],"models":[{"name":auth}]}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let var = "RG_TEST_KEY_MODELS_ECHO";
    std::env::set_var(var, "sk-listed-789");
    let h = Harness::start_with(|c| {
        c.upstream.url = Some(format!("http://{addr}/v1"));
        c.upstream.api_key_env = Some(var.into());
    })
    .await;
    let (status, body) = h.get("/v1/models").await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.to_string().contains("sk-listed-789"), "{body}");
    assert_eq!(
        body,
        json!({"object":"list","data":[
            {"id":"m1","object":"model","created":1700000000,"owned_by":"Bearer [redacted]"},
            {"id":"m2","object":"model","created":0,"owned_by":"upstream"}
        ]})
    );
    let (status, one) = h.get("/v1/models/m1").await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["owned_by"], "Bearer [redacted]");
}
