//! Embeddings for hybrid file search: the `openai` backend against a real local HTTP server
//! (its error paths, and with the `minilm` feature vectors computed by the real MiniLM), and
//! the real all-MiniLM-L6-v2 (`--features minilm`, model directory in `MINILM_DIR`, e.g.
//! `MINILM_DIR=$(bash scripts/minilm.sh)`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use responses_gateway::executors::embeddings::openai::OpenAiEmbedder;
use responses_gateway::executors::embeddings::Embedder;
use serde_json::{json, Value};

const KEY: &str = "sk-test-embeddings-4f1c9a";

/// How the local `/v1/embeddings` server answers. The modes with vectors are used only with
/// the `minilm` feature (the vectors come from the real model).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[cfg_attr(not(feature = "minilm"), allow(dead_code))]
enum Mode {
    /// Real vectors (MiniLM), scaled by 2.5 and listed in reverse order with their `index`.
    Real,
    /// Like `Real` but one vector too few.
    MissingOne,
    /// Like `Real` but the second request's vectors are cut to 100 dimensions.
    ShorterLater,
    /// 401 echoing the presented key, as some providers do.
    Unauthorized,
    /// 500 echoing the key inside `error.message`.
    ServerError,
    /// 200 with a body that is not an embeddings list.
    Malformed,
    /// Answers after 3 s.
    Slow,
}

/// One request as the server saw it: the size of its `input` array and its Authorization header.
type Seen = (usize, Option<String>);

#[derive(Clone)]
struct Server {
    mode: Mode,
    seen: Arc<Mutex<Vec<Seen>>>,
    embedder: Option<Arc<dyn Embedder>>,
}

async fn embeddings(State(s): State<Server>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    let input: Vec<String> = body["input"].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default();
    let call_no = {
        let mut seen = s.seen.lock().unwrap();
        seen.push((input.len(), auth.clone()));
        seen.len()
    };
    assert_eq!(body["model"], "all-MiniLM-L6-v2", "the configured model is sent");
    match s.mode {
        Mode::Unauthorized => {
            let presented = auth.unwrap_or_default();
            return (StatusCode::UNAUTHORIZED, Json(json!({"error": {"message": format!("Incorrect API key provided: {presented}")}})))
                .into_response();
        }
        Mode::ServerError => {
            return (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": {"message": format!("backend crashed while using {KEY}")}})))
                .into_response();
        }
        Mode::Malformed => return Json(json!({"data": "not a list"})).into_response(),
        Mode::Slow => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            return Json(json!({"data": []})).into_response();
        }
        Mode::Real | Mode::MissingOne | Mode::ShorterLater => {}
    }
    let Some(embedder) = &s.embedder else {
        return (StatusCode::SERVICE_UNAVAILABLE, "no model").into_response();
    };
    let vectors = match embedder.embed(&input).await {
        Ok(v) => v,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    };
    let mut data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let mut v: Vec<f32> = v.into_iter().map(|x| x * 2.5).collect();
            if s.mode == Mode::ShorterLater && call_no > 1 {
                v.truncate(100);
            }
            json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    data.reverse();
    if s.mode == Mode::MissingOne {
        data.pop();
    }
    Json(json!({"object": "list", "model": "all-MiniLM-L6-v2", "data": data})).into_response()
}

/// A local OpenAI-compatible embeddings server; returns its `/v1` base URL.
async fn serve(mode: Mode, embedder: Option<Arc<dyn Embedder>>) -> (String, Server) {
    let state = Server { mode, seen: Arc::new(Mutex::new(Vec::new())), embedder };
    let app = Router::new().route("/v1/embeddings", post(embeddings)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), state)
}

fn client(base: &str, key: Option<&str>, timeout_ms: u64) -> OpenAiEmbedder {
    OpenAiEmbedder::new(base, "all-MiniLM-L6-v2", key.map(str::to_string), Duration::from_millis(timeout_ms)).unwrap()
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn rejected_key_is_reported_without_the_key() {
    let (base, server) = serve(Mode::Unauthorized, None).await;
    let e = client(&base, Some(KEY), 5_000).embed(&texts(&["hello"])).await.unwrap_err();
    assert!(e.contains("rejected the key") && e.contains("401") && e.contains("api_key_env"), "{e}");
    assert!(!e.contains(KEY), "the key leaked: {e}");
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen, vec![(1, Some(format!("Bearer {KEY}")))], "the key is sent as a Bearer token");

    let e = client(&base, None, 5_000).embed(&texts(&["hello"])).await.unwrap_err();
    assert!(e.contains("wants a key") && e.contains("api_key_env"), "{e}");
    assert_eq!(server.seen.lock().unwrap()[1].1, None, "no Authorization header without a key");
}

#[tokio::test]
async fn server_error_message_is_kept_with_the_key_redacted() {
    let (base, _server) = serve(Mode::ServerError, None).await;
    let e = client(&base, Some(KEY), 5_000).embed(&texts(&["hello"])).await.unwrap_err();
    assert!(e.contains("HTTP 500") && e.contains("backend crashed while using [redacted]"), "{e}");
    assert!(!e.contains(KEY), "the key leaked: {e}");
}

#[tokio::test]
async fn malformed_page_is_an_error() {
    let (base, _server) = serve(Mode::Malformed, None).await;
    let e = client(&base, Some(KEY), 5_000).embed(&texts(&["hello"])).await.unwrap_err();
    assert!(e.contains("not an embeddings list"), "{e}");
    assert!(!e.contains(KEY), "{e}");
}

#[tokio::test]
async fn slow_endpoint_times_out() {
    let (base, _server) = serve(Mode::Slow, None).await;
    let started = Instant::now();
    let e = client(&base, Some(KEY), 300).embed(&texts(&["hello"])).await.unwrap_err();
    assert!(e.contains("timed out after 300 ms"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn unreachable_endpoint_is_an_error_without_the_url_credentials() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let base = format!("http://user:{KEY}@127.0.0.1:{port}/v1");
    let e = client(&base, Some(KEY), 2_000).embed(&texts(&["hello"])).await.unwrap_err();
    assert!(e.contains("unreachable"), "{e}");
    assert!(!e.contains(KEY), "{e}");
}

#[tokio::test]
async fn no_texts_make_no_request() {
    let (base, server) = serve(Mode::Malformed, None).await;
    let out = client(&base, None, 5_000).embed(&[]).await.unwrap();
    assert!(out.is_empty());
    assert!(server.seen.lock().unwrap().is_empty());
}

#[cfg(feature = "minilm")]
mod minilm {
    use std::sync::OnceLock;

    use responses_gateway::executors::embeddings::minilm::MiniLm;
    use responses_gateway::executors::embeddings::{from_config, Embedder};
    use responses_gateway::executors::file_search::config::{EmbeddingsBackend, EmbeddingsConfig};

    use super::*;

    fn model_dir() -> std::path::PathBuf {
        match std::env::var_os("MINILM_DIR") {
            Some(d) if !d.is_empty() => d.into(),
            _ => panic!(
                "MINILM_DIR is not set: the `minilm` feature's tests need the all-MiniLM-L6-v2 directory; \
                 run them as MINILM_DIR=$(bash scripts/minilm.sh) cargo test -p responses-gateway --features minilm --test integration embeddings::"
            ),
        }
    }

    /// The model, loaded once per test binary.
    fn model() -> MiniLm {
        static MODEL: OnceLock<MiniLm> = OnceLock::new();
        MODEL.get_or_init(|| MiniLm::load(&model_dir()).unwrap_or_else(|e| panic!("loading MiniLM: {e:#}"))).clone()
    }

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn words(s: &str) -> std::collections::BTreeSet<String> {
        s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    }

    const CAR: &str = "How to fix a car engine that will not start: check the battery, the spark plugs and the starter motor, then the fuel pump.";
    const UNRELATED: [&str; 4] = [
        "The cake needs two cups of flour, sugar, butter and fresh strawberries.",
        "Migratory birds fly south for the winter along ancient routes.",
        "Shares closed higher after the central bank kept interest rates unchanged.",
        "The poem describes a quiet evening by the sea under a full moon.",
    ];

    #[tokio::test]
    async fn automobile_repair_finds_the_text_about_fixing_cars() {
        let m = model();
        assert_eq!((m.model(), m.dims()), ("sentence-transformers/all-MiniLM-L6-v2", 384));
        let query = "automobile repair";
        assert!(words(query).is_disjoint(&words(CAR)), "the query must share no word with the document");
        let mut docs = texts(&[CAR]);
        docs.extend(texts(&UNRELATED));
        let started = Instant::now();
        let vectors = m.embed(&docs).await.unwrap();
        let per_text = started.elapsed() / docs.len() as u32;
        let q = m.embed(&texts(&[query])).await.unwrap().remove(0);
        eprintln!("MiniLM: {} texts in {:?} ({per_text:?} per text)", docs.len(), started.elapsed());
        assert_eq!(vectors.len(), docs.len());
        for v in vectors.iter().chain([&q]) {
            assert_eq!(v.len(), 384);
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "not unit length: {norm}");
        }
        let car = cos(&q, &vectors[0]);
        for (text, v) in UNRELATED.iter().zip(&vectors[1..]) {
            let other = cos(&q, v);
            eprintln!("cos(query, car) = {car:.4}, cos(query, {text:?}) = {other:.4}");
            assert!(car > other + 0.15, "car {car} vs {other} for {text:?}");
        }
        assert!(car > 0.25, "the car text should be clearly similar: {car}");
    }

    #[tokio::test]
    async fn padding_in_a_batch_does_not_change_a_vector() {
        let m = model();
        let short = "automobile repair".to_string();
        let long = format!("{CAR} {CAR} {CAR}");
        let alone = m.embed(std::slice::from_ref(&short)).await.unwrap().remove(0);
        let batch = m.embed(&[long.clone(), short.clone(), long]).await.unwrap();
        assert_eq!(batch.len(), 3);
        let diff = alone.iter().zip(&batch[1]).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(diff < 1e-4, "padding changed the vector by {diff}");
        assert!(cos(&batch[0], &batch[2]) > 0.9999, "same text, same vector");
        assert!(cos(&batch[0], &batch[1]) < 0.99, "different texts, different vectors");
    }

    #[tokio::test]
    async fn texts_longer_than_the_window_are_truncated_not_rejected() {
        let m = model();
        let long = "word ".repeat(2000);
        let v = m.embed(&[long, String::new()]).await.unwrap();
        assert_eq!(v.len(), 2);
        assert!(v.iter().all(|v| v.len() == 384 && v.iter().all(|x| x.is_finite())));
    }

    #[tokio::test]
    async fn config_builds_the_minilm_embedder() {
        let c = EmbeddingsConfig { backend: EmbeddingsBackend::Minilm, model_dir: Some(model_dir()), ..Default::default() };
        let e = from_config(&c).unwrap().expect("an embedder");
        assert_eq!(e.dims(), 384);
        let c = EmbeddingsConfig { model_dir: Some("/nonexistent/minilm".into()), ..c };
        let err = from_config(&c).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/minilm/config.json"), "{err}");
    }

    /// A measurement, not a timed test: prints the embed time per text for short queries and
    /// for chunk-sized texts (about 200 word pieces). Run with `-- --ignored --nocapture`.
    #[tokio::test]
    #[ignore]
    async fn embed_time_per_text() {
        let m = model();
        let short: Vec<String> = (0..64).map(|i| format!("{} #{i}", UNRELATED[i % 4])).collect();
        let chunk: Vec<String> = (0..64).map(|i| format!("{CAR} {} {CAR} {} {CAR} #{i}", UNRELATED[i % 4], UNRELATED[(i + 1) % 4]).repeat(2)).collect();
        for (name, texts) in [("short (~20 word pieces)", &short), ("chunk (~200 word pieces)", &chunk)] {
            m.embed(&texts[..4]).await.unwrap();
            let started = Instant::now();
            m.embed(texts).await.unwrap();
            let batched = started.elapsed() / texts.len() as u32;
            let started = Instant::now();
            for t in texts.iter().take(16) {
                m.embed(std::slice::from_ref(t)).await.unwrap();
            }
            let single = started.elapsed() / 16;
            eprintln!("MiniLM {name}: {batched:?} per text in batches of 64, {single:?} per text alone");
        }
    }

    #[tokio::test]
    async fn openai_backend_returns_the_servers_real_vectors_in_order_and_batched() {
        let m = model();
        let (base, server) = serve(Mode::Real, Some(Arc::new(m.clone()))).await;
        let e = client(&base, Some(KEY), 60_000);
        assert_eq!(e.dims(), 0, "unknown before the first answer");
        // 70 texts: two requests (64 + 6).
        let inputs: Vec<String> = (0..70).map(|i| if i == 7 { CAR.to_string() } else { format!("{} #{i}", UNRELATED[i % 4]) }).collect();
        let got = e.embed(&inputs).await.unwrap();
        let want = m.embed(&inputs).await.unwrap();
        assert_eq!(e.dims(), 384);
        assert_eq!(got.len(), 70);
        for (g, w) in got.iter().zip(&want) {
            let norm: f32 = g.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "normalized: {norm}");
            assert!(cos(g, w) > 0.9999, "in input order");
        }
        let sizes: Vec<usize> = server.seen.lock().unwrap().iter().map(|(n, _)| *n).collect();
        assert_eq!(sizes, vec![64, 6]);
        // The search the index will do: the query finds the car text among the others.
        let q = e.embed(&texts(&["automobile repair"])).await.unwrap().remove(0);
        let best = got.iter().enumerate().max_by(|a, b| cos(&q, a.1).total_cmp(&cos(&q, b.1))).map(|(i, _)| i);
        assert_eq!(best, Some(7));
    }

    #[tokio::test]
    async fn openai_backend_rejects_a_wrong_count_or_changed_dims() {
        let m: Arc<dyn Embedder> = Arc::new(model());
        let (base, _server) = serve(Mode::MissingOne, Some(m.clone())).await;
        let e = client(&base, Some(KEY), 60_000).embed(&texts(&["a", "b", "c"])).await.unwrap_err();
        assert!(e.contains("returned 2 vectors for 3 texts"), "{e}");

        let (base, _server) = serve(Mode::ShorterLater, Some(m)).await;
        let c = client(&base, None, 60_000);
        assert_eq!(c.embed(&texts(&["first"])).await.unwrap()[0].len(), 384);
        let e = c.embed(&texts(&["second"])).await.unwrap_err();
        assert!(e.contains("returned 100 dimensions where 384 were expected"), "{e}");
    }
}
