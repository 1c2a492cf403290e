//! API keys (`[auth]`): with keys configured every `/v1/*` route needs a Bearer key (401
//! `invalid_api_key` before the body is read or anything reaches the upstream); `/healthz`,
//! `/readyz` and the playground stay open; with none configured nothing changes.

use scripted_upstream::Script;
use serde_json::{json, Value};

use crate::common::{error_of, Harness};

const KEY: &str = "sk-integration-test-key-1";

async fn keyed() -> Harness {
    let file = std::env::temp_dir().join(format!("rg-it-keys-{}-{:x}", std::process::id(), rand::random::<u64>()));
    std::fs::write(&file, format!("team-a {KEY}\n")).unwrap();
    Harness::start_with(move |c| c.auth.keys_file = Some(file)).await
}

async fn send(h: &Harness, method: reqwest::Method, path: &str, auth: Option<&str>) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut req = h.client.request(method.clone(), format!("{}{path}", h.base));
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    if method == reqwest::Method::POST {
        req = req.json(&json!({"model":"m","input":"hi"}));
    }
    let resp = req.send().await.unwrap();
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)), headers)
}

#[tokio::test]
async fn every_api_route_needs_a_configured_key() {
    let h = keyed().await;
    let get = reqwest::Method::GET;
    for path in ["/v1/models", "/v1/vector_stores", "/v1/files", "/v1/responses/resp_x", "/v1/conversations/conv_x", "/v1/no-such-route"] {
        for auth in [None, Some("Bearer wrong"), Some("Basic c2staW50ZWdyYXRpb24="), Some("Bearer ")] {
            let (status, body, headers) = send(&h, get.clone(), path, auth).await;
            assert_eq!(status, 401, "{path} {auth:?}: {body}");
            let e = error_of(&body);
            assert_eq!(e["code"], "invalid_api_key", "{body}");
            assert_eq!(e["type"], "invalid_request_error", "{body}");
            assert!(e["param"].is_null(), "{body}");
            assert_eq!(headers.get("www-authenticate").unwrap(), "Bearer");
        }
    }
    h.upstream.push(Script::text(&["never"]));
    let (status, body, _) = send(&h, reqwest::Method::POST, "/v1/responses", Some("Bearer sk-integration-test-key-")).await;
    assert_eq!(status, 401, "{body}");
    assert!(h.upstream.requests().is_empty(), "a refused request reached the upstream");
    assert!(!body.to_string().contains("sk-integration"), "the key is echoed: {body}");

    let (status, body, _) = send(&h, reqwest::Method::POST, "/v1/responses", Some(&format!("Bearer {KEY}"))).await;
    assert_eq!(status, 200, "{body}");
    let id = body["id"].as_str().unwrap().to_string();
    let (status, _, _) = send(&h, get.clone(), &format!("/v1/responses/{id}"), Some(&format!("Bearer {KEY}"))).await;
    assert_eq!(status, 200);
    for path in ["/healthz", "/readyz", "/", "/playground/app.js"] {
        let (status, body, _) = send(&h, get.clone(), path, None).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
}

#[tokio::test]
async fn without_keys_the_api_is_open() {
    let h = Harness::start().await;
    let (status, body, _) = send(&h, reqwest::Method::GET, "/v1/models", Some("Bearer anything")).await;
    assert_eq!(status, 200, "{body}");
    let (status, body, _) = send(&h, reqwest::Method::GET, "/v1/vector_stores", None).await;
    assert_eq!(status, 200, "{body}");
}
