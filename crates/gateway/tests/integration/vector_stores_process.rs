//! A real `responses-gateway` process killed with SIGKILL while it ingests a large file into
//! the embedded vector store: after a restart on the same data directory the file is still
//! there, byte for byte, and its attachment is ingested again to `completed` (issue 5).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use scripted_upstream::ScriptedUpstream;
use serde_json::{json, Value};

/// A gateway process (killed on drop) and everything it wrote to stderr.
struct Gateway {
    child: Child,
    base: String,
    log: Arc<Mutex<String>>,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Gateway {
    fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// Starts `responses-gateway serve` with `data_dir`; waits for "listening on".
fn spawn(data_dir: &std::path::Path, upstream: &ScriptedUpstream) -> Gateway {
    let mut child = Command::new(env!("CARGO_BIN_EXE_responses-gateway"))
        .args(["serve", "--listen", "127.0.0.1:0", "--upstream-url"])
        .arg(upstream.base_url())
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the gateway");
    let stderr = child.stderr.take().expect("stderr");
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(pos) = line.find("listening on http://") {
                let rest = &line[pos + "listening on ".len()..];
                let _ = tx.send(rest.split_whitespace().next().unwrap_or_default().to_string());
            }
            if let Ok(mut l) = sink.lock() {
                l.push_str(&line);
                l.push('\n');
            }
        }
    });
    let base = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(b) => b,
        Err(_) => {
            let _ = child.kill();
            panic!("gateway did not start:\n{}", log.lock().map(|l| l.clone()).unwrap_or_default());
        }
    };
    Gateway { child, base, log }
}

async fn get(client: &reqwest::Client, g: &Gateway, path: &str) -> (u16, Value) {
    let resp = client.get(format!("{}{path}", g.base)).send().await.expect("send");
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

async fn post(client: &reqwest::Client, g: &Gateway, path: &str, body: Value) -> (u16, Value) {
    let resp = client.post(format!("{}{path}", g.base)).json(&body).send().await.expect("send");
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

/// About 10 MB of varied text ending with a unique marker word.
fn big_text() -> Vec<u8> {
    let mut s = String::with_capacity(10_500_000);
    let mut i = 0u64;
    while s.len() < 10_000_000 {
        s.push_str(&format!("Record {i}: the harbour pilot {} guided vessel {} past buoy {} at dawn.\n", i * 7919 % 100_003, i % 977, i % 53));
        i += 1;
    }
    s.push_str("Final entry: zebracrossing observed.\n");
    s.into_bytes()
}

#[tokio::test]
async fn sigkill_during_ingestion_loses_no_file() {
    responses_gateway::install_crypto();
    let dir = std::env::temp_dir().join(format!("rg-vs-kill-{}-{:08x}", std::process::id(), rand::random::<u32>()));
    let up = ScriptedUpstream::start().await.expect("upstream");
    let client = reqwest::Client::builder().timeout(Duration::from_secs(120)).build().expect("client");
    let bytes = big_text();

    let g = spawn(&dir, &up);
    let form = reqwest::multipart::Form::new()
        .text("purpose", "assistants")
        .part("file", reqwest::multipart::Part::bytes(bytes.clone()).file_name("harbour.log.txt"));
    let resp = client.post(format!("{}/v1/files", g.base)).multipart(form).send().await.expect("upload");
    assert_eq!(resp.status().as_u16(), 200);
    let file: Value = resp.json().await.expect("file json");
    let file_id = file["id"].as_str().unwrap_or_default().to_string();
    let (_, vs) = post(&client, &g, "/v1/vector_stores", json!({"name": "harbour"})).await;
    let vs_id = vs["id"].as_str().unwrap_or_default().to_string();
    let (s, att) = post(&client, &g, &format!("/v1/vector_stores/{vs_id}/files"), json!({"file_id": file_id})).await;
    assert_eq!(s, 200, "{att}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, now) = get(&client, &g, &format!("/v1/vector_stores/{vs_id}/files/{file_id}")).await;
    assert_eq!(now["status"], "in_progress", "ingestion finished before the kill: make the file bigger");
    drop(g); // SIGKILL (Child::kill) mid-ingestion.

    let g = spawn(&dir, &up);
    let (s, f) = get(&client, &g, &format!("/v1/files/{file_id}")).await;
    assert_eq!((s, f["bytes"].as_u64()), (200, Some(bytes.len() as u64)), "{f}");
    let resp = client.get(format!("{}/v1/files/{file_id}/content", g.base)).send().await.expect("content");
    assert!(resp.bytes().await.expect("bytes").as_ref() == bytes.as_slice(), "the file's bytes survived");
    let deadline = Instant::now() + Duration::from_secs(300);
    let done = loop {
        let (_, f) = get(&client, &g, &format!("/v1/vector_stores/{vs_id}/files/{file_id}")).await;
        if f["status"] != "in_progress" || Instant::now() > deadline {
            break f;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(done["status"], "completed", "{done}\n{}", g.log());
    assert!(g.log().contains("re-ingesting files left in progress"), "{}", g.log());
    let (s, page) = post(&client, &g, &format!("/v1/vector_stores/{vs_id}/search"), json!({"query": "zebracrossing"})).await;
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["data"][0]["file_id"], file_id.as_str(), "{page}");
    let (_, store) = get(&client, &g, &format!("/v1/vector_stores/{vs_id}")).await;
    assert_eq!(store["file_counts"]["completed"], 1, "{store}");
    drop(g);
    let _ = std::fs::remove_dir_all(&dir);
}
