//! `x-request-id`: every answer carries one (a 200, a stream, a 401 of the key check, a 404
//! of no route, a 400): the client's when it sent 1 to 128 visible ASCII characters, else a
//! generated UUID (v4), a new one for each request.

use scripted_upstream::Script;
use serde_json::json;

use crate::common::Harness;

fn is_uuid_v4(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && b.iter().enumerate().all(|(i, c)| [8, 13, 18, 23].contains(&i) || matches!(c, b'0'..=b'9' | b'a'..=b'f'))
        && b[14] == b'4'
        && matches!(b[19], b'8' | b'9' | b'a' | b'b')
}

/// The `x-request-id` of the answer to `path` (POST with `body` when given) sent with `id`.
async fn id_of(h: &Harness, path: &str, body: Option<serde_json::Value>, id: Option<&[u8]>, auth: Option<&str>) -> (u16, String) {
    let mut req = match &body {
        Some(b) => h.client.post(format!("{}{path}", h.base)).json(b),
        None => h.client.get(format!("{}{path}", h.base)),
    };
    if let Some(id) = id {
        req = req.header("x-request-id", reqwest::header::HeaderValue::from_bytes(id).unwrap());
    }
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let ids: Vec<_> = resp.headers().get_all("x-request-id").iter().map(|v| v.to_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), 1, "{path}: one x-request-id: {ids:?}");
    let _ = resp.text().await;
    (status, ids[0].clone())
}

#[tokio::test]
async fn every_answer_carries_the_clients_id_or_a_generated_one() {
    let h = Harness::start().await;
    h.upstream.push(Script::text(&["hi"]));
    let ask = json!({"model":"m","input":"hi"});
    assert_eq!(id_of(&h, "/v1/responses", Some(ask.clone()), Some(b"client-id-1"), None).await, (200, "client-id-1".to_string()));
    let (status, a) = id_of(&h, "/v1/responses", Some(ask.clone()), None, None).await;
    assert_eq!(status, 200);
    let (_, b) = id_of(&h, "/healthz", None, None, None).await;
    assert!(is_uuid_v4(&a) && is_uuid_v4(&b) && a != b, "{a} {b}");
    let longest = "x".repeat(128);
    assert_eq!(id_of(&h, "/v1/models", None, Some(longest.as_bytes()), None).await.1, longest);
    assert_eq!(id_of(&h, "/healthz", None, Some(b"!\"#id~"), None).await.1, "!\"#id~");
    // Refused: too long, a space or a tab, not ASCII, empty: replaced by a fresh id.
    for bad in ["y".repeat(129).as_bytes(), b"two words", b"tab\there", b"caf\xc3\xa9", b""] {
        let (_, id) = id_of(&h, "/healthz", None, Some(bad), None).await;
        assert!(is_uuid_v4(&id), "{:?} → {id}", String::from_utf8_lossy(bad));
    }
    // Errors carry it too: no route (404), a bad body (400), a stream.
    assert_eq!(id_of(&h, "/v1/no-such-route", None, Some(b"r404"), None).await, (404, "r404".to_string()));
    assert_eq!(id_of(&h, "/v1/responses", Some(json!({"model":"m"})), Some(b"r400"), None).await, (400, "r400".to_string()));
    h.upstream.push(Script::text(&["streamed"]));
    let (status, id) = id_of(&h, "/v1/responses", Some(json!({"model":"m","input":"hi","stream":true})), Some(b"rs"), None).await;
    assert_eq!((status, id.as_str()), (200, "rs"));
    h.stop().await;
}

#[tokio::test]
async fn a_refused_key_is_answered_with_an_id() {
    let file = std::env::temp_dir().join(format!("rg-it-ids-keys-{}-{:x}", std::process::id(), rand::random::<u64>()));
    std::fs::write(&file, "sk-request-ids-key-1\n").unwrap();
    let h = Harness::start_with(move |c| c.auth.keys_file = Some(file)).await;
    assert_eq!(id_of(&h, "/v1/models", None, Some(b"r401"), Some("Bearer wrong")).await, (401, "r401".to_string()));
    let (status, id) = id_of(&h, "/v1/models", None, None, None).await;
    assert!(status == 401 && is_uuid_v4(&id), "{status} {id}");
    assert_eq!(id_of(&h, "/v1/models", None, Some(b"r200"), Some("Bearer sk-request-ids-key-1")).await, (200, "r200".to_string()));
    h.stop().await;
}
