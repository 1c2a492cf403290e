//! Input checks of issue 28: the `reasoning` echo, penalty ranges and short numbers in
//! messages, nested duplicate keys, and conversation items checked as input items are.

use scripted_upstream::Script;
use serde_json::{json, Value};

use crate::common::{error_of, Harness};

/// `reasoning` is echoed as `{effort, summary}` whatever subset was sent.
#[tokio::test]
async fn reasoning_is_echoed_whole() {
    let h = Harness::start().await;
    for (sent, want) in [
        (json!({}), json!({"effort": null, "summary": null})),
        (json!({"effort": "low"}), json!({"effort": "low", "summary": null})),
        (json!({"summary": "auto"}), json!({"effort": null, "summary": "auto"})),
        (Value::Null, json!({"effort": null, "summary": null})),
    ] {
        h.upstream.push(Script::text(&["ok"]));
        let (status, body) = h.post(json!({"model":"m","input":"x","reasoning":sent,"store":false})).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["reasoning"], want, "{sent}");
    }
}

/// Penalties are checked to [-2, 2]; a huge number in a message is written short.
#[tokio::test]
async fn penalties_are_ranged_and_numbers_short() {
    let h = Harness::start().await;
    for (param, value) in [("presence_penalty", json!(2.5)), ("frequency_penalty", json!(-3)), ("presence_penalty", json!(1e300)), ("temperature", json!(1e300))] {
        let (status, body) = h.post(json!({"model":"m","input":"x",param:value})).await;
        assert_eq!(status, 400, "{body}");
        let e = error_of(&body);
        assert_eq!(e["param"], param);
        assert!(e["message"].as_str().unwrap().len() < 120, "{e}");
    }
    let (_, body) = h.post(json!({"model":"m","input":"x","max_output_tokens":1e300})).await;
    let message = error_of(&body)["message"].as_str().unwrap().to_string();
    assert!(!message.contains("0000000000000000000"), "{message}");
    // Integers past u64 arrive as floats with an exponent: written with one exponent.
    for raw in [r#"{"model":"m","input":"x","max_output_tokens":18446744073709551617}"#, r#"{"model":"m","input":"x","max_output_tokens":123456789012345678901234567890}"#] {
        let (status, body) = h.post_raw(raw).await;
        assert_eq!(status, 400, "{body}");
        let message = error_of(&body)["message"].as_str().unwrap().to_string();
        let number = message.split('`').nth(1).unwrap_or_default();
        assert!(number.parse::<f64>().is_ok_and(|n| n > 1e19), "{message}");
    }
    h.upstream.push(Script::text(&["ok"]));
    let (status, body) = h.post(json!({"model":"m","input":"x","presence_penalty":-2,"frequency_penalty":2})).await;
    assert_eq!(status, 200, "{body}");
    assert!(h.upstream.requests().len() == 1, "only the valid request reached the upstream");
}

/// A key repeated inside the body is refused as a repeated top-level field is: 400 naming
/// its path, on `/v1/responses` and on the JSON endpoints.
#[tokio::test]
async fn nested_duplicate_keys_are_refused() {
    let h = Harness::start().await;
    for (body, param) in [
        (r#"{"model":"m","model":"n","input":"x"}"#, "model"),
        (r#"{"model":"m","input":[{"role":"user","content":"x","role":"system"}]}"#, "input[0].role"),
        (r#"{"model":"m","input":"x","metadata":{"a":"1","a":"2"}}"#, "metadata.a"),
        (r#"{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object","type":"string"}}]}"#, "tools[0].parameters.type"),
    ] {
        let (status, e) = h.post_raw(body).await;
        assert_eq!(status, 400, "{body}: {e}");
        assert_eq!(error_of(&e)["param"], param, "{body}");
        assert!(error_of(&e)["message"].as_str().unwrap().contains("duplicate field"), "{e}");
    }
    let resp = h
        .client
        .post(format!("{}/v1/conversations", h.base))
        .header("content-type", "application/json")
        .body(r#"{"items":[{"role":"user","content":"x","content":"y"}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let e: Value = resp.json().await.unwrap();
    assert_eq!(error_of(&e)["param"], "items[0].content");
    assert!(h.upstream.requests().is_empty());
}

/// Conversation items are checked as input items are: an unknown type, a reasoning item
/// whose `summary` is not a list of parts, a key with a control character are 400s naming
/// the item; nothing of such a request is stored.
#[tokio::test]
async fn conversation_items_are_checked() {
    let h = Harness::start().await;
    let (_, conv) = h.post_to("/v1/conversations", json!({"items":[{"role":"user","content":"kept"}]})).await;
    let id = conv["id"].as_str().unwrap().to_string();
    for (item, param) in [
        (json!({"type":"AAA"}), "items[1].type"),
        (json!({"type":"reasoning","id":"rs_1","summary":{}}), "items[1].summary"),
        (json!({"type":"reasoning","id":"rs_1","summary":[{"type":"x"}]}), "items[1].summary"),
        (json!({"role":"user","content":"x","\u{0}":1}), "items[1]"),
        (json!({"role":"user","content":[{"type":"input_text","text":"x","extra":{"a\nb":1}}]}), "items[1].content[0].extra"),
        (json!({"role":"nobody","content":"x"}), "items[1]"),
        // The content checks of an input item (`POST /v1/responses` names `input[i]…`).
        (json!({"type":"message","role":"user","content":[{"type":"input_image","image_url":"javascript:alert(1)"}]}), "items[1].content[0].image_url"),
        (json!({"role":"user","content":[{"type":"input_text","text":"x"},{"type":"input_file","file_id":"file_unknown"}]}), "items[1].content[1].file_id"),
        (json!({"role":"assistant","content":[{"type":"input_image","image_url":"https://example.com/a.png"}]}), "items[1].content[0]"),
        (json!({"type":"function_call_output","call_id":"c1","output":[{"type":"input_image","image_url":"ftp://x/y.png"}]}), "items[1].output[0].image_url"),
    ] {
        let (status, e) = h.post_to(&format!("/v1/conversations/{id}/items"), json!({"items":[{"role":"user","content":"ok"}, item]})).await;
        assert_eq!(status, 400, "{item}: {e}");
        assert_eq!(error_of(&e)["param"], param, "{item}");
        let (status, e) = h.post_to("/v1/conversations", json!({"items":[{"role":"user","content":"ok"}, item]})).await;
        assert_eq!((status, error_of(&e)["param"].as_str()), (400, Some(param)), "{item}");
    }
    let (_, items) = h.get(&format!("/v1/conversations/{id}/items")).await;
    assert_eq!(items["data"].as_array().unwrap().len(), 1, "nothing was added: {items}");
    let (status, _) = h.post_to(&format!("/v1/conversations/{id}/items"), json!({"items":[{"type":"reasoning","id":"rs_2","summary":[{"type":"summary_text","text":"t"}]}]})).await;
    assert_eq!(status, 200, "a well-formed reasoning item is kept");
    // The conversation still takes turns: nothing refused was stored.
    h.upstream.push(Script::text(&["ok"]));
    let (status, body) = h.post(json!({"model":"m","input":"next","conversation":id})).await;
    assert_eq!(status, 200, "{body}");
}
