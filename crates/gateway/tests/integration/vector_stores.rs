//! The embedded Files + Vector Stores API end to end over HTTP (contract §10, issue 5):
//! upload, attach (status in_progress → completed/failed), search with filters and scores
//! in 0..1, delete, limits (413/404/400), non-ASCII text, PDF/HTML/JSON, restart.


use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{error_of, Harness};
use serde_json::{json, Value};

/// Polls the attachment until it leaves `in_progress` (30 s at most).
async fn wait_done(h: &Harness, vs: &str, file: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (s, f) = h.get(&format!("/v1/vector_stores/{vs}/files/{file}")).await;
        assert_eq!(s, 200, "{f}");
        if f["status"] != "in_progress" || Instant::now() > deadline {
            return f;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn upload(h: &Harness, name: &str, bytes: &[u8]) -> String {
    let (s, f) = h.upload(name, bytes.to_vec(), "assistants").await;
    assert_eq!(s, 200, "{f}");
    assert_eq!(f["object"], "file");
    assert_eq!(f["bytes"], bytes.len());
    assert_eq!(f["filename"], name);
    let id = f["id"].as_str().unwrap_or_default().to_string();
    assert!(id.starts_with("file-"), "{id}");
    id
}

async fn new_store(h: &Harness, name: &str) -> String {
    let (s, vs) = h.post_to("/v1/vector_stores", json!({"name": name, "metadata": {"team": "docs"}})).await;
    assert_eq!(s, 200, "{vs}");
    assert_eq!(vs["object"], "vector_store");
    let id = vs["id"].as_str().unwrap_or_default().to_string();
    assert!(id.starts_with("vs_"), "{id}");
    id
}

async fn attach(h: &Harness, vs: &str, file: &str, attributes: Value) -> Value {
    let (s, f) = h.post_to(&format!("/v1/vector_stores/{vs}/files"), json!({"file_id": file, "attributes": attributes})).await;
    assert_eq!(s, 200, "{f}");
    assert_eq!(f["object"], "vector_store.file");
    // Ingestion may already have ended (a file type refused at once is `failed`).
    assert!(["in_progress", "completed", "failed"].contains(&f["status"].as_str().unwrap_or_default()), "{f}");
    wait_done(h, vs, file).await
}

async fn search(h: &Harness, vs: &str, body: Value) -> Vec<Value> {
    let (s, page) = h.post_to(&format!("/v1/vector_stores/{vs}/search"), body).await;
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["object"], "vector_store.search_results.page");
    let data = page["data"].as_array().cloned().unwrap_or_default();
    for d in &data {
        let score = d["score"].as_f64().unwrap_or(-1.0);
        assert!((0.0..=1.0).contains(&score), "score {score}");
        assert_eq!(d["content"][0]["type"], "text");
    }
    data
}

/// A one-page PDF; `text` is drawn with Helvetica, or the page is empty when `None`.
fn pdf(text: Option<&str>) -> Vec<u8> {
    let content = text.map(|t| format!("BT /F1 18 Tf 72 720 Td ({t}) Tj ET")).unwrap_or_default();
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_string(),
        format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len() + 1),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_string(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend(format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes());
    out
}

#[tokio::test]
async fn upload_attach_search_and_filters() {
    let h = Harness::start().await;
    let text = "# Fahrzeugpflege\n\nDas Auto braucht regelmäßige Ölwechsel. Ünïcödé bleibt erhalten: 日本語 🚗.\n";
    let fr = upload(&h, "pflege.md", text.as_bytes()).await;
    let other = upload(&h, "garden.txt", b"Roses need water and sunlight in the garden.").await;
    let vs = new_store(&h, "Handbuch").await;
    let f = attach(&h, &vs, &fr, json!({"lang": "de", "year": 2024, "public": true})).await;
    assert_eq!(f["status"], "completed", "{f}");
    assert_eq!(f["last_error"], Value::Null);
    assert_eq!(f["chunking_strategy"], json!({"type":"static","static":{"max_chunk_size_tokens":800,"chunk_overlap_tokens":400}}));
    assert!(f["usage_bytes"].as_i64().unwrap_or(0) >= text.len() as i64, "{f}");
    assert_eq!(attach(&h, &vs, &other, json!({"lang": "en", "year": 2020})).await["status"], "completed");

    let (_, store) = h.get(&format!("/v1/vector_stores/{vs}")).await;
    assert_eq!(store["file_counts"], json!({"in_progress":0,"completed":2,"failed":0,"cancelled":0,"total":2}));
    assert_eq!(store["status"], "completed");
    assert_eq!(store["name"], "Handbuch");
    assert_eq!(store["metadata"], json!({"team": "docs"}));
    assert!(store["usage_bytes"].as_i64().unwrap_or(0) > text.len() as i64);

    // Keyword search; diacritics fold ("olwechsel" finds "Ölwechsel"); non-ASCII round-trips.
    let hits = search(&h, &vs, json!({"query": "olwechsel auto"})).await;
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["file_id"], fr.as_str());
    assert_eq!(hits[0]["filename"], "pflege.md");
    assert_eq!(hits[0]["content"][0]["text"], text);
    assert_eq!(hits[0]["attributes"], json!({"lang": "de", "year": 2024, "public": true}));
    assert!(hits[0]["score"].as_f64().unwrap_or(0.0) > 0.0);
    assert!(search(&h, &vs, json!({"query": "quantum chromodynamics"})).await.is_empty());
    let both = search(&h, &vs, json!({"query": ["auto", "roses"], "max_num_results": 5})).await;
    assert_eq!(both.len(), 2);
    assert!(search(&h, &vs, json!({"query": "auto", "ranking_options": {"score_threshold": 0.9999}})).await.is_empty());

    // Filters on attributes.
    let q = |f: Value| json!({"query": ["auto", "roses"], "filters": f});
    let only = |hits: Vec<Value>| hits.iter().map(|x| x["filename"].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>();
    assert_eq!(only(search(&h, &vs, q(json!({"type":"eq","key":"lang","value":"en"}))).await), ["garden.txt"]);
    assert_eq!(only(search(&h, &vs, q(json!({"type":"gte","key":"year","value":2021}))).await), ["pflege.md"]);
    let compound = json!({"type":"or","filters":[{"type":"eq","key":"public","value":true},{"type":"in","key":"lang","value":["fr"]}]});
    assert_eq!(only(search(&h, &vs, q(compound)).await), ["pflege.md"]);
    assert!(search(&h, &vs, q(json!({"type":"nin","key":"lang","value":["de","en"]}))).await.is_empty());

    // Attribute update applies to later searches.
    let (s, u) = h.post_to(&format!("/v1/vector_stores/{vs}/files/{other}"), json!({"attributes": {"lang": "fr"}})).await;
    assert_eq!((s, &u["attributes"]), (200, &json!({"lang": "fr"})));
    assert_eq!(only(search(&h, &vs, q(json!({"type":"eq","key":"lang","value":"fr"}))).await), ["garden.txt"]);

    // Content, lists.
    let resp = h.client.get(format!("{}/v1/files/{fr}/content", h.base)).send().await.expect("content");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.bytes().await.expect("bytes").as_ref(), text.as_bytes());
    let (_, files) = h.get("/v1/files?limit=1&order=asc").await;
    assert_eq!(files["object"], "list");
    assert_eq!((files["data"][0]["id"].as_str(), files["has_more"].as_bool()), (Some(fr.as_str()), Some(true)));
    let (_, next) = h.get(&format!("/v1/files?limit=1&order=asc&after={fr}")).await;
    assert_eq!((next["data"][0]["id"].as_str(), next["has_more"].as_bool()), (Some(other.as_str()), Some(false)));
    let (_, vfiles) = h.get(&format!("/v1/vector_stores/{vs}/files?filter=completed")).await;
    assert_eq!(vfiles["data"].as_array().map(Vec::len), Some(2));
    let (_, stores) = h.get("/v1/vector_stores").await;
    assert_eq!(stores["data"][0]["id"], vs.as_str());
    let (_, chunks) = h.get(&format!("/v1/vector_stores/{vs}/files/{fr}/content")).await;
    assert_eq!(chunks["data"][0]["text"], text);
    h.stop().await;
}

#[tokio::test]
async fn bad_input_is_rejected_in_the_openai_shape() {
    let h = Harness::start().await;
    let vs = new_store(&h, "s").await;
    let file = upload(&h, "a.txt", b"alpha beta").await;
    // Unknown filter operator → 400 naming it.
    let (s, e) = h.post_to(&format!("/v1/vector_stores/{vs}/search"), json!({"query":"a","filters":{"type":"like","key":"k","value":"v"}})).await;
    assert_eq!(s, 400);
    let err = error_of(&e);
    assert_eq!(err["param"], "filters");
    assert!(err["message"].as_str().unwrap_or_default().contains("'like'"), "{err}");
    let (s, e) = h.post_to(&format!("/v1/vector_stores/{vs}/search"),
        json!({"query":"a","filters":{"type":"and","filters":[{"type":"regex","key":"k","value":"v"}]}})).await;
    assert_eq!(s, 400, "{e}");
    for (body, param) in [
        (json!({"query":"a","max_num_results":0}), "max_num_results"),
        (json!({"query":"a","max_num_results":51}), "max_num_results"),
        (json!({"query":7}), "query"),
        (json!({}), "query"),
        (json!({"query":"a","ranking_options":{"ranker":"fancy"}}), "ranking_options.ranker"),
        (json!({"query":"a","ranking_options":{"score_threshold":1.5}}), "ranking_options.score_threshold"),
    ] {
        let (s, e) = h.post_to(&format!("/v1/vector_stores/{vs}/search"), body.clone()).await;
        assert_eq!(s, 400, "{body}: {e}");
        assert_eq!(error_of(&e)["param"], param, "{body}");
    }
    // Unknown ids → 404.
    let (s, e) = h.post_to("/v1/vector_stores/vs_nope/search", json!({"query":"a"})).await;
    assert_eq!(s, 404);
    assert!(error_of(&e)["message"].as_str().unwrap_or_default().contains("vs_nope"));
    let (s, e) = h.post_to(&format!("/v1/vector_stores/{vs}/files"), json!({"file_id":"file-missing"})).await;
    assert_eq!(s, 404);
    assert!(error_of(&e)["message"].as_str().unwrap_or_default().contains("file-missing"));
    assert_eq!(h.post_to("/v1/vector_stores/vs_nope/files", json!({"file_id": file})).await.0, 404);
    assert_eq!(h.get("/v1/files/file-nope").await.0, 404);
    assert_eq!(h.delete("/v1/files/file-nope").await.0, 404);
    assert_eq!(h.get("/v1/vector_stores/vs_nope").await.0, 404);
    assert_eq!(h.get(&format!("/v1/vector_stores/{vs}/files/{file}")).await.0, 404, "not attached");
    let (s, e) = h.post_to("/v1/vector_stores", json!({"file_ids": ["file-missing"]})).await;
    assert_eq!(s, 404, "{e}");
    // Bad attach/create bodies → 400.
    let (s, e) = h.post_to(&format!("/v1/vector_stores/{vs}/files"), json!({})).await;
    assert_eq!((s, error_of(&e)["param"].as_str()), (400, Some("file_id")));
    let bad_chunking = json!({"file_id": file, "chunking_strategy": {"type":"static","static":{"max_chunk_size_tokens":200,"chunk_overlap_tokens":150}}});
    let (s, e) = h.post_to(&format!("/v1/vector_stores/{vs}/files"), bad_chunking).await;
    assert_eq!((s, error_of(&e)["param"].as_str()), (400, Some("chunking_strategy")));
    let (s, e) = h.post_to(&format!("/v1/vector_stores/{vs}/files"), json!({"file_id": file, "attributes": {"k": {"nested": 1}}})).await;
    assert_eq!((s, error_of(&e)["param"].as_str()), (400, Some("attributes")));
    let (s, e) = h.post_to("/v1/vector_stores", json!({"metadata": {"k": 1}})).await;
    assert_eq!((s, error_of(&e)["param"].as_str()), (400, Some("metadata")));
    // Uploads: purpose missing or wrong, not multipart.
    let (s, e) = h.upload("a.txt", b"x".to_vec(), "homework").await;
    assert_eq!((s, error_of(&e)["param"].as_str()), (400, Some("purpose")));
    let form = reqwest::multipart::Form::new().part("file", reqwest::multipart::Part::bytes(b"x".to_vec()).file_name("a.txt"));
    let resp = h.client.post(format!("{}/v1/files", h.base)).multipart(form).send().await.expect("send");
    assert_eq!(resp.status().as_u16(), 400);
    // Not multipart: 415 (issue 28), before the body is read.
    let (s, e) = h.post_to("/v1/files", json!({"file": "x"})).await;
    assert_eq!(s, 415, "{e}");
    assert_eq!(error_of(&e)["code"], "unsupported_media_type");
    let (s, e) = h.get("/v1/files?limit=0").await;
    assert_eq!((s, error_of(&e)["param"].as_str()), (400, Some("limit")));
    let (s, e) = h.get("/v1/files?after=file-nope").await;
    assert_eq!((s, error_of(&e)["param"].as_str()), (400, Some("after")));
    h.stop().await;
}

#[tokio::test]
async fn oversized_upload_gets_413_with_the_limit_and_keeps_nothing() {
    let h = Harness::start_with(|c| c.file_search.embedded.max_upload_bytes = 1000).await;
    let (s, e) = h.upload("big.txt", vec![b'a'; 5000], "assistants").await;
    assert_eq!(s, 413, "{e}");
    let err = error_of(&e);
    assert!(err["message"].as_str().unwrap_or_default().contains("1000"), "{err}");
    assert_eq!(err["type"], "invalid_request_error");
    let (_, files) = h.get("/v1/files").await;
    assert_eq!(files["data"], json!([]));
    assert_eq!(h.upload("ok.txt", vec![b'a'; 1000], "assistants").await.0, 200, "exactly the limit is fine");
    h.stop().await;
    // Uploads follow max_upload_bytes, not the (smaller) JSON body limit.
    let h = Harness::start_with(|c| {
        c.server.max_body_bytes = 1000;
        c.file_search.embedded.max_upload_bytes = 100_000;
    })
    .await;
    let (s, f) = h.upload("mid.txt", vec![b'b'; 50_000], "user_data").await;
    assert_eq!((s, f["bytes"].as_u64()), (200, Some(50_000)), "{f}");
    h.stop().await;
}

#[tokio::test]
async fn unsupported_and_image_only_files_fail_with_last_error() {
    let h = Harness::start().await;
    let vs = new_store(&h, "s").await;
    let png = upload(&h, "photo.png", b"\x89PNG\r\n\x1a\n\x00\x00").await;
    let f = attach(&h, &vs, &png, json!({})).await;
    assert_eq!(f["status"], "failed", "{f}");
    assert_eq!(f["last_error"]["code"], "unsupported_file");
    let scan = upload(&h, "scan.pdf", &pdf(None)).await;
    let f = attach(&h, &vs, &scan, json!({})).await;
    assert_eq!(f["status"], "failed", "{f}");
    assert_eq!(f["last_error"]["code"], "invalid_file");
    assert!(f["last_error"]["message"].as_str().unwrap_or_default().contains("No text"), "{f}");
    // A PDF with text, HTML (text only) and JSON are indexed.
    let doc = upload(&h, "manual.pdf", &pdf(Some("Carburetor maintenance schedule"))).await;
    assert_eq!(attach(&h, &vs, &doc, json!({})).await["status"], "completed");
    let page = upload(&h, "page.html", b"<html><head><script>var secretscript=1;</script></head><body><p>Brake <b>pads</b> wear out.</p></body></html>").await;
    assert_eq!(attach(&h, &vs, &page, json!({})).await["status"], "completed");
    let data = upload(&h, "data.json", br#"{"part": "alternator", "price": 120}"#).await;
    assert_eq!(attach(&h, &vs, &data, json!({})).await["status"], "completed");
    let (_, store) = h.get(&format!("/v1/vector_stores/{vs}")).await;
    assert_eq!(store["file_counts"], json!({"in_progress":0,"completed":3,"failed":2,"cancelled":0,"total":5}));
    let hit = |q: &'static str| {
        let h = &h;
        let vs = vs.clone();
        async move { search(h, &vs, json!({"query": q})).await.iter().map(|x| x["filename"].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>() }
    };
    assert_eq!(hit("carburetor").await, ["manual.pdf"]);
    assert_eq!(hit("brake").await, ["page.html"]);
    assert!(hit("secretscript").await.is_empty(), "script text is not indexed");
    assert_eq!(hit("alternator").await, ["data.json"]);
    let (_, failed) = h.get(&format!("/v1/vector_stores/{vs}/files?filter=failed")).await;
    assert_eq!(failed["data"].as_array().map(Vec::len), Some(2));
    h.stop().await;
}

#[tokio::test]
async fn deleting_a_file_removes_its_chunks_from_every_store() {
    let h = Harness::start().await;
    let file = upload(&h, "shared.txt", b"The lighthouse keeper logs every ship.").await;
    let keep = upload(&h, "keep.txt", b"The lighthouse stands on the cliff.").await;
    let (a, b) = (new_store(&h, "a").await, new_store(&h, "b").await);
    for vs in [&a, &b] {
        assert_eq!(attach(&h, vs, &file, json!({})).await["status"], "completed");
    }
    assert_eq!(attach(&h, &a, &keep, json!({})).await["status"], "completed");
    assert_eq!(search(&h, &a, json!({"query": "lighthouse"})).await.len(), 2);
    assert_eq!(search(&h, &b, json!({"query": "lighthouse"})).await.len(), 1);
    let (s, d) = h.delete(&format!("/v1/files/{file}")).await;
    assert_eq!((s, d), (200, json!({"id": file, "object": "file", "deleted": true})));
    assert_eq!(search(&h, &a, json!({"query": "lighthouse"})).await.len(), 1);
    assert!(search(&h, &b, json!({"query": "lighthouse"})).await.is_empty());
    let (_, sb) = h.get(&format!("/v1/vector_stores/{b}")).await;
    assert_eq!((sb["file_counts"]["total"].as_i64(), sb["usage_bytes"].as_i64()), (Some(0), Some(0)));
    assert_eq!(h.get(&format!("/v1/files/{file}/content")).await.0, 404);
    // Detaching keeps the file; deleting a store keeps its files.
    let (s, d) = h.delete(&format!("/v1/vector_stores/{a}/files/{keep}")).await;
    assert_eq!((s, d["object"].as_str()), (200, Some("vector_store.file.deleted")));
    assert!(search(&h, &a, json!({"query": "lighthouse"})).await.is_empty());
    assert_eq!(h.get(&format!("/v1/files/{keep}")).await.0, 200);
    let (s, d) = h.delete(&format!("/v1/vector_stores/{a}")).await;
    assert_eq!((s, d), (200, json!({"id": a, "object": "vector_store.deleted", "deleted": true})));
    assert_eq!(h.get(&format!("/v1/vector_stores/{a}")).await.0, 404);
    h.stop().await;
}

#[tokio::test]
async fn static_chunking_and_update() {
    let h = Harness::start().await;
    let text: String = (0..600).map(|i| format!("sentence number {i} about ferries. ")).collect();
    let file = upload(&h, "long.txt", text.as_bytes()).await;
    let (s, vs) = h
        .post_to("/v1/vector_stores", json!({"name": "c", "file_ids": [file], "chunking_strategy": {"type":"static","static":{"max_chunk_size_tokens":100,"chunk_overlap_tokens":50}}}))
        .await;
    assert_eq!(s, 200, "{vs}");
    assert_eq!(vs["file_counts"]["total"], 1);
    let vs = vs["id"].as_str().unwrap_or_default().to_string();
    let f = wait_done(&h, &vs, &file).await;
    assert_eq!(f["chunking_strategy"]["static"], json!({"max_chunk_size_tokens":100,"chunk_overlap_tokens":50}));
    let (_, chunks) = h.get(&format!("/v1/vector_stores/{vs}/files/{file}/content")).await;
    let n = chunks["data"].as_array().map(Vec::len).unwrap_or(0);
    assert!(n > 20, "{n} chunks");
    let hits = search(&h, &vs, json!({"query": "sentence 599", "max_num_results": 3})).await;
    assert_eq!(hits.len(), 3);
    assert!(hits[0]["content"][0]["text"].as_str().unwrap_or_default().contains("number 599"), "{:?}", hits[0]);
    let (s, up) = h.post_to(&format!("/v1/vector_stores/{vs}"), json!({"name": "renamed", "metadata": {"k": "v"}})).await;
    assert_eq!((s, &up["name"], &up["metadata"]), (200, &json!("renamed"), &json!({"k": "v"})));
    h.stop().await;
}

#[tokio::test]
async fn the_index_survives_a_restart() {
    let h = Harness::start().await;
    let db = h.db.clone();
    let file = upload(&h, "notes.txt", "Ñandú migration notes: the rhea crosses the pampa.".as_bytes()).await;
    let vs = new_store(&h, "persist").await;
    assert_eq!(attach(&h, &vs, &file, json!({"k": "v"})).await["status"], "completed");
    h.stop().await;
    let h = Harness::start_on(db, |_| {}, |_| {}).await;
    let (s, store) = h.get(&format!("/v1/vector_stores/{vs}")).await;
    assert_eq!(s, 200, "{store}");
    assert_eq!(store["file_counts"]["completed"], 1);
    let hits = search(&h, &vs, json!({"query": "nandu pampa"})).await;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["content"][0]["text"], "Ñandú migration notes: the rhea crosses the pampa.");
    assert_eq!(hits[0]["attributes"], json!({"k": "v"}));
    h.stop().await;
}

/// Many attachments ingesting at once (background jobs racing for the SQLite writer) all
/// complete, and the store's counts follow.
#[tokio::test]
async fn many_files_ingest_concurrently() {
    let h = Harness::start().await;
    let mut ids = Vec::new();
    for i in 0..40 {
        ids.push(upload(&h, &format!("doc{i}.txt"), format!("Document {i} mentions the keyword harbour{}.", i % 4).as_bytes()).await);
    }
    let (s, vs) = h.post_to("/v1/vector_stores", json!({"name": "many", "file_ids": ids[..20]})).await;
    assert_eq!(s, 200, "{vs}");
    let vs = vs["id"].as_str().unwrap_or_default().to_string();
    let path = format!("/v1/vector_stores/{vs}/files");
    let attaches = ids[20..].iter().map(|id| h.post_to(&path, json!({"file_id": id})));
    for (s, f) in futures_util::future::join_all(attaches).await {
        assert_eq!(s, 200, "{f}");
    }
    for id in &ids {
        assert_eq!(wait_done(&h, &vs, id).await["status"], "completed", "{id}");
    }
    let (_, store) = h.get(&format!("/v1/vector_stores/{vs}")).await;
    assert_eq!(store["file_counts"], json!({"in_progress":0,"completed":40,"failed":0,"cancelled":0,"total":40}));
    assert_eq!(search(&h, &vs, json!({"query": "harbour3", "max_num_results": 50})).await.len(), 10);
    let (_, page) = h.get(&format!("/v1/vector_stores/{vs}/files?limit=100")).await;
    assert_eq!(page["data"].as_array().map(Vec::len), Some(40));
    h.stop().await;
}

/// A stand-in embedder for the hybrid plumbing only (vector storage, cosine ranking, fusion,
/// weights, re-embedding): each text maps to counts over four hand-made concept groups.
/// Retrieval quality is tested with the real all-MiniLM-L6-v2 elsewhere.
#[derive(Debug)]
struct ConceptEmbedder;

impl responses_gateway::executors::embeddings::Embedder for ConceptEmbedder {
    fn model(&self) -> &str {
        "concept-test"
    }
    fn dims(&self) -> usize {
        4
    }
    fn embed<'a>(&'a self, texts: &'a [String]) -> futures_util::future::BoxFuture<'a, Result<Vec<Vec<f32>>, String>> {
        const GROUPS: [&[&str]; 3] = [
            &["car", "cars", "automobile", "vehicle", "mechanic", "repair", "fixing", "brake"],
            &["garden", "tomatoes", "roses", "soil"],
            &["bread", "soup", "cheese"],
        ];
        Box::pin(async move {
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = vec![0f32, 0.0, 0.0, 0.01];
                    for w in t.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
                        for (g, words) in GROUPS.iter().enumerate() {
                            if words.contains(&w) {
                                v[g] += 1.0;
                            }
                        }
                    }
                    v
                })
                .collect())
        })
    }
}

#[tokio::test]
async fn hybrid_search_fuses_vectors_and_keywords() {
    use responses_gateway::executors::file_search::config::EmbeddedConfig;
    use responses_gateway::executors::file_search::{FileSearchRequest, VectorStoreBackend};
    use responses_gateway::executors::local_index::{LocalIndex, NewStore};
    let dir = std::env::temp_dir().join(format!("rg-vs-hybrid-{}-{:08x}", std::process::id(), rand::random::<u32>()));
    let config = EmbeddedConfig { path: Some(dir.clone()), ..EmbeddedConfig::default() };
    // Indexed without embeddings first: re-opening with an embedder embeds the old chunks.
    let plain = LocalIndex::open(&config, &dir, None);
    let mut ids = Vec::new();
    for (name, text) in [("cars.txt", "Fixing cars: a mechanic replaces the brake pads."), ("garden.txt", "Tomatoes and roses grow in the garden soil.")] {
        let mut up = plain.begin_upload().await.expect("upload");
        up.write(text.as_bytes()).await.expect("write");
        ids.push(plain.create_file("default", up, name, "assistants", None).await.expect("file").id);
    }
    let store = plain.create_store("default", NewStore { name: Some("h".into()), file_ids: ids, ..NewStore::default() }).await.expect("store");
    let deadline = Instant::now() + Duration::from_secs(30);
    while plain.store("default", &store.id).await.expect("get").file_counts.completed < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let req = |q: &str, hybrid: Option<(f64, f64)>| FileSearchRequest { query: q.into(), max_num_results: 10, hybrid, ..FileSearchRequest::default() };
    assert!(plain.search_store(&store.id, &req("automobile", None)).await.expect("search").is_empty(), "no keyword overlap");
    plain.close().await;

    let hybrid = LocalIndex::open(&config, &dir, Some(Arc::new(ConceptEmbedder)));
    assert_eq!(hybrid.kind(), "embedded");
    assert_eq!(hybrid.has_store("default", &store.id).await, Ok(true));
    assert_eq!(hybrid.has_store("default", "vs_nope").await, Ok(false));
    let mut hits = Vec::new();
    while Instant::now() < deadline {
        hits = hybrid.search(&store.id, &req("automobile", None)).await.expect("search");
        // Both old chunks are embedded in the background: wait until both have a vector.
        if hits.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(hits.first().map(|h| h.filename.as_str()), Some("cars.txt"), "{hits:?}");
    assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    // A chunk first in both rankings scores 1; text weight only ignores the vectors.
    let both = hybrid.search(&store.id, &req("brake mechanic", None)).await.expect("search");
    assert_eq!(both[0].filename, "cars.txt");
    assert!((both[0].score - 1.0).abs() < 1e-9, "{both:?}");
    assert!(hybrid.search(&store.id, &req("automobile", Some((0.0, 1.0)))).await.expect("search").is_empty());
    let vec_only = hybrid.search(&store.id, &req("automobile", Some((1.0, 0.0)))).await.expect("search");
    assert_eq!(vec_only[0].filename, "cars.txt");
    assert!(hybrid.search("vs_nope", &req("x", None)).await.is_err());
    hybrid.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// In a tiny store BM25's inverse document frequency is near 0 for every word; the score
/// still says how much of the query a chunk holds, so a `score_threshold` stays usable.
#[tokio::test]
async fn scores_stay_meaningful_in_a_small_store() {
    let h = Harness::start().await;
    let vs = new_store(&h, "tiny").await;
    let a = upload(&h, "a.md", "The pineapple offsite code word is marmalade.".as_bytes()).await;
    let b = upload(&h, "b.md", "Lunch is served at noon in the pineapple room.".as_bytes()).await;
    attach(&h, &vs, &a, json!({})).await;
    attach(&h, &vs, &b, json!({})).await;
    let hits = search(&h, &vs, json!({"query": "pineapple offsite code word", "ranking_options": {"score_threshold": 0.4}})).await;
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["file_id"], a.as_str());
    assert!(hits[0]["score"].as_f64().unwrap_or(0.0) >= 0.5, "{hits:?}");
    let all = search(&h, &vs, json!({"query": "pineapple offsite code word"})).await;
    assert_eq!(all.len(), 2, "the weaker match (1 of 4 words) is still found: {all:?}");
    assert!(all[1]["score"].as_f64().unwrap_or(1.0) < 0.4);
}
