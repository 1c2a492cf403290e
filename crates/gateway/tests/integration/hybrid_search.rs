//! Hybrid search (BM25 + vectors, reciprocal-rank fusion) in the embedded store with the
//! real all-MiniLM-L6-v2 (cargo feature `minilm`, model directory from `MINILM_DIR`, e.g.
//! `bash scripts/minilm.sh`): a query with no keyword in common with its document finds
//! it, and then a file_search turn cites it.
#![cfg(feature = "minilm")]


use std::time::{Duration, Instant};

use crate::common::Harness;
use responses_gateway::executors::file_search::config::EmbeddingsBackend;
use scripted_upstream::Script;
use serde_json::{json, Value};

const CAR: &str = "How to fix a car engine that will not start: check the battery terminals, test the spark plugs and replace a worn starter motor.";
const SOUP: &str = "A slow-cooked tomato soup: roast tomatoes with garlic, blend with basil and simmer with cream.";
const GARDEN: &str = "Pruning roses in late winter keeps the shrubs healthy; cut above an outward-facing bud.";

async fn store_with_docs(h: &Harness) -> (String, String) {
    let (_, vs) = h.post_to("/v1/vector_stores", json!({"name": "hybrid"})).await;
    let vs = vs["id"].as_str().unwrap().to_string();
    let mut car_id = String::new();
    for (name, text) in [("car.txt", CAR), ("soup.txt", SOUP), ("garden.txt", GARDEN)] {
        let (s, f) = h.upload(name, text.as_bytes().to_vec(), "assistants").await;
        assert_eq!(s, 200, "{f}");
        let id = f["id"].as_str().unwrap().to_string();
        if name == "car.txt" {
            car_id = id.clone();
        }
        let (s, a) = h.post_to(&format!("/v1/vector_stores/{vs}/files"), json!({"file_id": id})).await;
        assert_eq!(s, 200, "{a}");
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let (_, f) = h.get(&format!("/v1/vector_stores/{vs}/files/{id}")).await;
            if f["status"] != "in_progress" {
                assert_eq!(f["status"], "completed", "{f}");
                break;
            }
            assert!(Instant::now() < deadline, "ingestion did not finish");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    (vs, car_id)
}

fn minilm_dir() -> String {
    std::env::var("MINILM_DIR").unwrap_or_else(|_| panic!("set MINILM_DIR to the all-MiniLM-L6-v2 directory: MINILM_DIR=$(bash scripts/minilm.sh)"))
}

#[tokio::test]
async fn automobile_repair_finds_the_text_about_fixing_cars() {
    let dir = minilm_dir();
    let h = Harness::start_with(move |c| {
        c.file_search.embedded.embeddings.backend = EmbeddingsBackend::Minilm;
        c.file_search.embedded.embeddings.model_dir = Some(dir.into());
    })
    .await;
    let (vs, car_id) = store_with_docs(&h).await;
    // Vectors may be computed after ingestion: wait until the query finds its document.
    let deadline = Instant::now() + Duration::from_secs(120);
    let data: Vec<Value> = loop {
        let (s, page) = h.post_to(&format!("/v1/vector_stores/{vs}/search"), json!({"query": "automobile repair"})).await;
        assert_eq!(s, 200, "{page}");
        let data = page["data"].as_array().cloned().unwrap_or_default();
        if !data.is_empty() || Instant::now() > deadline {
            break data;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(!data.is_empty(), "hybrid search found nothing");
    assert_eq!(data[0]["file_id"], car_id.as_str(), "{data:?}");
    assert!(CAR.to_lowercase().split(|c: char| !c.is_alphanumeric()).all(|w| w != "automobile" && w != "repair"), "no keyword overlap");

    // Through a file_search turn: the model's query finds the car text and cites it.
    h.upstream.push(Script::tool_call("file_search", json!({"queries": ["automobile repair"]}).to_string()));
    h.upstream.push(Script::text(&["Check the battery first【1】."]));
    let (s, body) = h.post(json!({"model": "m", "input": "My automobile needs repair", "tools": [{"type": "file_search", "vector_store_ids": [vs]}], "include": ["file_search_call.results"]})).await;
    assert_eq!(s, 200, "{body}");
    let out = body["output"].as_array().unwrap();
    let fs = out.iter().find(|i| i["type"] == "file_search_call").unwrap();
    assert_eq!(fs["results"][0]["file_id"], car_id.as_str());
    let msg = out.iter().rev().find(|i| i["type"] == "message").unwrap();
    assert_eq!(msg["content"][0]["annotations"][0]["file_id"], car_id.as_str());
}

#[tokio::test]
async fn keyword_only_search_does_not_find_it() {
    let h = Harness::start().await;
    let (vs, _) = store_with_docs(&h).await;
    let (s, page) = h.post_to(&format!("/v1/vector_stores/{vs}/search"), json!({"query": "automobile repair"})).await;
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["data"].as_array().map(Vec::len), Some(0), "BM25 alone has no match: the hybrid test is meaningful");
}
