//! Test harness: the gateway in-process on an ephemeral port, in front of a
//! `scripted-upstream`, plus the reusable stream checker.
#![allow(dead_code)]

pub mod db;
pub mod search_fixture;
pub mod stream_check;
pub mod vector_fixture;

use std::time::Duration;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use responses_gateway::config::Config;
use responses_gateway::executors::{Registry, ServerTool};
use responses_gateway::http::AppState;
use responses_gateway::store::sql::SqlStore;
use scripted_upstream::ScriptedUpstream;
use serde_json::Value;

pub use db::TestDb;
pub use stream_check::{check_stream, Checked};

pub struct Harness {
    pub upstream: ScriptedUpstream,
    pub base: String,
    pub client: reqwest::Client,
    /// The database the gateway stores in (a fresh SQLite file unless given).
    pub db: Arc<TestDb>,
    /// The gateway's store (the same pool), for tests that look at or damage rows.
    pub store: SqlStore,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl Harness {
    pub async fn start() -> Harness {
        Harness::start_with(|_| {}).await
    }

    pub async fn start_with(edit: impl FnOnce(&mut Config)) -> Harness {
        Harness::start_full(edit, |_| {}).await
    }

    /// As `start_with`, and lets the test register extra server tools.
    pub async fn start_full(edit: impl FnOnce(&mut Config), tools: impl FnOnce(&mut Registry) + Send + 'static) -> Harness {
        Harness::start_on(Arc::new(TestDb::sqlite()), edit, tools).await
    }

    /// A gateway storing in `db` (several harnesses may share one: replicas, restarts).
    pub async fn start_on(
        db: Arc<TestDb>,
        edit: impl FnOnce(&mut Config),
        tools: impl FnOnce(&mut Registry) + Send + 'static,
    ) -> Harness {
        Harness::start_state(db, edit, move |state| tools(Arc::make_mut(&mut state.registry))).await
    }

    /// As `start_on`, and lets the test change the server's state (e.g. its turn observer).
    pub async fn start_state(
        db: Arc<TestDb>,
        edit: impl FnOnce(&mut Config),
        state_edit: impl FnOnce(&mut AppState),
    ) -> Harness {
        let upstream = ScriptedUpstream::start().await.expect("upstream");
        let mut config = Config::default();
        config.upstream.url = Some(upstream.base_url());
        config.server.keepalive_interval_ms = 200;
        config.store.backend = db.backend();
        // The embedded vector store lives beside the test database (shared by restarts).
        config.file_search.embedded.path = Some(match db.sqlite_path().and_then(|p| p.parent().map(|d| d.join("vector_stores"))) {
            Some(dir) => dir,
            None => std::env::temp_dir().join(format!("rg-vs-{}-{:016x}", std::process::id(), rand::random::<u64>())),
        });
        // The seal key is generated in the data dir: the test database's, never the user's.
        config.server.data_dir = Some(match db.sqlite_path().and_then(|p| p.parent().map(|d| d.to_path_buf())) {
            Some(dir) => dir,
            None => std::env::temp_dir().join(format!("rg-data-{}-{:016x}", std::process::id(), rand::random::<u64>())),
        });
        edit(&mut config);
        let store = db.open(&config.store).await.expect("open the test store");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let mut state = AppState::with_store(&config, Arc::new(store.clone())).expect("state");
        state_edit(&mut state);
        let server = tokio::spawn(async move {
            let shutdown = async {
                let _ = rx.await;
            };
            let app = responses_gateway::http::router(Arc::new(state), &config.server);
            let read_timeout = Duration::from_millis(config.server.request_read_timeout_ms);
            let drain = Duration::from_millis(config.server.shutdown_grace_ms) + Duration::from_secs(2);
            responses_gateway::http::serve::serve(listener, app, read_timeout, drain, shutdown).await;
        });
        responses_gateway::install_crypto();
        let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client");
        Harness { upstream, base, client, db, store, shutdown: Some(tx), server: Some(server) }
    }

    /// Stops the gateway (graceful shutdown) and closes its store: a restart starts a new
    /// harness on the same `db`.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        self.store.close().await;
    }

    /// Any method on any path with an optional JSON body: status and JSON body.
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::DELETE, path, None).await
    }

    pub async fn post_to(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// POST /v1/responses (non-streaming): status and JSON body.
    pub async fn post(&self, body: Value) -> (u16, Value) {
        let resp = self.client.post(format!("{}/v1/responses", self.base)).json(&body).send().await.expect("send");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// POST raw bytes to /v1/responses.
    pub async fn post_raw(&self, body: &'static str) -> (u16, Value) {
        let resp = self
            .client
            .post(format!("{}/v1/responses", self.base))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("send");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// POST with `stream: true`; the whole SSE body goes through the stream checker.
    pub async fn stream(&self, mut body: Value) -> Checked {
        body["stream"] = Value::Bool(true);
        let resp = self.client.post(format!("{}/v1/responses", self.base)).json(&body).send().await.expect("send");
        assert_eq!(resp.status().as_u16(), 200, "stream status");
        let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        assert!(ct.starts_with("text/event-stream"), "content-type {ct}");
        let raw = resp.text().await.expect("sse body");
        check_stream(&raw)
    }

    /// `POST /v1/files` (multipart `file` named `filename`, `purpose`): status and JSON body.
    pub async fn upload(&self, filename: &str, bytes: Vec<u8>, purpose: &str) -> (u16, Value) {
        let part = reqwest::multipart::Part::bytes(bytes).file_name(filename.to_string());
        let form = reqwest::multipart::Form::new().text("purpose", purpose.to_string()).part("file", part);
        let resp = self.client.post(format!("{}/v1/files", self.base)).multipart(form).send().await.expect("send");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let resp = self.client.get(format!("{}{path}", self.base)).send().await.expect("send");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }
}

/// Asserts the OpenAI error shape and returns the error object.
pub fn error_of(body: &Value) -> &Value {
    let e = body.get("error").unwrap_or_else(|| panic!("no error object in {body}"));
    assert!(e["message"].is_string(), "message: {e}");
    assert!(e["type"].is_string(), "type: {e}");
    assert!(e.get("param").is_some(), "param key: {e}");
    assert!(e.get("code").is_some(), "code key: {e}");
    e
}

/// Output items with ids removed, for comparing streamed and non-streamed answers.
pub fn items_without_ids(response: &Value) -> Vec<Value> {
    response["output"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut i| {
            if let Some(o) = i.as_object_mut() {
                o.remove("id");
                o.remove("call_id");
            }
            i
        })
        .collect()
}

/// A test server tool: sleeps `delay_ms`, then answers `"<name>:<input>"`, or fails when
/// `fail` is set.
#[derive(Debug)]
pub struct TestTool {
    pub name: &'static str,
    pub delay_ms: u64,
    pub fail: bool,
    pub running: Arc<std::sync::atomic::AtomicUsize>,
    pub max_running: Arc<std::sync::atomic::AtomicUsize>,
    pub completed: Arc<std::sync::atomic::AtomicUsize>,
}

impl TestTool {
    pub fn new(name: &'static str, delay_ms: u64, fail: bool) -> Arc<TestTool> {
        Arc::new(TestTool { name, delay_ms, fail, running: Default::default(), max_running: Default::default(), completed: Default::default() })
    }
}

impl ServerTool for TestTool {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> String {
        format!("test tool {}", self.name)
    }
    fn progress(&self, input: &str) -> String {
        format!("Running {} on {input}", self.name)
    }
    fn run<'a>(&'a self, input: &'a str) -> BoxFuture<'a, Result<String, String>> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            let now = self.running.fetch_add(1, SeqCst) + 1;
            self.max_running.fetch_max(now, SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(self.delay_ms)).await;
            self.running.fetch_sub(1, SeqCst);
            self.completed.fetch_add(1, SeqCst);
            if self.fail {
                Err(format!("{} backend is down", self.name))
            } else {
                Ok(format!("{}:{input}", self.name))
            }
        })
    }
}
