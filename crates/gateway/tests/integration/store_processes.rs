//! Real processes on one database (both backends): two `responses-gateway` replicas
//! continue each other's turns, and a restarted process continues and retrieves what the
//! previous one stored.


use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use crate::common::TestDb;
use scripted_upstream::{Script, ScriptedUpstream, ToolCallScript};
use crate::on_both_backends;
use serde_json::{json, Value};

/// A gateway process; killed on drop.
struct Gateway {
    child: Child,
    base: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `responses-gateway serve` on `db` in front of `upstream`; waits for its
/// "listening on" line (the port is chosen by the OS).
fn spawn(db: &TestDb, upstream: &ScriptedUpstream) -> Gateway {
    spawn_with(db, upstream, &[])
}

/// As [`spawn`] with extra environment variables.
fn spawn_with(db: &TestDb, upstream: &ScriptedUpstream, envs: &[(&str, &str)]) -> Gateway {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_responses-gateway"));
    cmd.envs(envs.iter().copied());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--upstream-url"])
        .arg(upstream.base_url())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    match db {
        TestDb::Sqlite { .. } => {
            cmd.env("RESPONSES_GATEWAY_STORE__PATH", db.sqlite_path().unwrap_or_default());
        }
        TestDb::Postgres { url, .. } => {
            cmd.env("RESPONSES_GATEWAY_STORE__BACKEND", "postgres")
                .env("RESPONSES_GATEWAY_STORE__URL_ENV", "RG_PROCESS_TEST_DB_URL")
                .env("RG_PROCESS_TEST_DB_URL", url);
        }
    }
    let mut child = cmd.spawn().expect("spawn the gateway");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    let base = loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            panic!("gateway exited before listening:\n{seen}");
        };
        seen.push_str(&line);
        seen.push('\n');
        if let Some(pos) = line.find("listening on http://") {
            let rest = &line[pos + "listening on ".len()..];
            break rest.split_whitespace().next().unwrap_or_default().to_string();
        }
    };
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Gateway { child, base }
}

async fn post(client: &reqwest::Client, g: &Gateway, body: Value) -> (u16, Value) {
    let resp = client.post(format!("{}/v1/responses", g.base)).json(&body).send().await.expect("send");
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

async fn get(client: &reqwest::Client, g: &Gateway, path: &str) -> (u16, Value) {
    let resp = client.get(format!("{}{path}", g.base)).send().await.expect("send");
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

fn weather_tool() -> Value {
    json!({"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}})
}

/// Turn 1 on replica A returns a client call; turn 2 on replica B answers it by
/// `previous_response_id`: B's upstream request holds the call and its output.
async fn two_replica_processes(db: Arc<TestDb>) {
    let (up_a, up_b) = (ScriptedUpstream::start().await.unwrap(), ScriptedUpstream::start().await.unwrap());
    let a = spawn(&db, &up_a);
    let b = spawn(&db, &up_b);
    responses_gateway::install_crypto();
    let client = reqwest::Client::new();
    up_a.push(Script::default().with_tool(ToolCallScript::new("get_weather", r#"{"city":"Lima"}"#).id("call_lima")));
    let (s, r1) = post(&client, &a, json!({"model":"m","input":"Lima?","tools":[weather_tool()]})).await;
    assert_eq!(s, 200, "{r1}");
    let cid = r1["output"][0]["call_id"].as_str().unwrap().to_string();
    assert!(cid.starts_with("call_") && cid != "call_lima", "the gateway's own call id");
    up_b.push(Script::text(&["Lima: 19C, cloudy."]));
    let (s, r2) = post(&client, &b, json!({"model":"m","previous_response_id":r1["id"],"tools":[weather_tool()],
        "input":[{"type":"function_call_output","call_id":cid,"output":"19C cloudy"}]})).await;
    assert_eq!(s, 200, "{r2}");
    assert_eq!(r2["output"][0]["content"][0]["text"], "Lima: 19C, cloudy.");
    let m = &up_b.requests()[0].body["messages"];
    assert_eq!(m[0], json!({"role":"user","content":"Lima?"}));
    assert_eq!(m[1]["tool_calls"][0]["id"], cid.as_str());
    assert_eq!(m[1]["tool_calls"][0]["function"]["arguments"], r#"{"city":"Lima"}"#);
    assert_eq!(m[2], json!({"role":"tool","tool_call_id":cid,"content":"19C cloudy"}));
    assert_eq!(up_a.requests().len(), 1);
    let (s, got) = get(&client, &a, &format!("/v1/responses/{}", r2["id"].as_str().unwrap())).await;
    assert_eq!(s, 200);
    assert_eq!(got, r2, "A serves what B stored");
}

/// Store, kill the process, start a new one: GET returns the same response and a
/// continuation sees it.
async fn restart_process(db: Arc<TestDb>) {
    let up = ScriptedUpstream::start().await.unwrap();
    responses_gateway::install_crypto();
    let client = reqwest::Client::new();
    let g = spawn(&db, &up);
    up.push(Script::text(&["Noted: 7."]));
    let (_, r1) = post(&client, &g, json!({"model":"m","input":"Remember 7."})).await;
    drop(g);
    let g = spawn(&db, &up);
    let (s, got) = get(&client, &g, &format!("/v1/responses/{}", r1["id"].as_str().unwrap())).await;
    assert_eq!(s, 200);
    assert_eq!(got, r1);
    up.push(Script::text(&["7"]));
    let (s, _) = post(&client, &g, json!({"model":"m","previous_response_id":r1["id"],"input":"Which number?"})).await;
    assert_eq!(s, 200);
    let m = &up.requests()[1].body["messages"];
    assert_eq!(m[0]["content"], "Remember 7.");
    assert_eq!(m[1]["content"], "Noted: 7.");
}

/// SIGTERM while a stored turn runs (its client already gone): the process waits the grace
/// period, ends the turn `incomplete`, stores it so, and exits; a new process serves it.
async fn shutdown_stores_a_running_turn_as_incomplete(db: Arc<TestDb>) {
    use futures_util::StreamExt;
    let up = ScriptedUpstream::start().await.unwrap();
    responses_gateway::install_crypto();
    let client = reqwest::Client::new();
    let mut g = spawn_with(&db, &up, &[("RESPONSES_GATEWAY_SERVER__SHUTDOWN_GRACE_MS", "300")]);
    let pieces: Vec<String> = (0..100).map(|i| format!("w{i} ")).collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    up.push(Script::text(&refs).delay_ms(100));
    let resp = client.post(format!("{}/v1/responses", g.base)).json(&json!({"model":"m","input":"long","stream":true})).send().await.unwrap();
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("response.output_text.delta") {
        let chunk = body.next().await.expect("stream open").expect("chunk");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(body);
    let id = seen.split("\"id\":\"").nth(1).and_then(|r| r.split('"').next()).expect("response id").to_string();
    assert!(id.starts_with("resp_"), "{id}");
    let pid = g.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(st) = g.child.try_wait().unwrap() {
            break st;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(15), "the gateway did not exit after SIGTERM");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    assert!(started.elapsed() < std::time::Duration::from_secs(9), "did not wait for the whole 10 s answer");
    drop(g);
    let g = spawn(&db, &up);
    let (s, got) = get(&client, &g, &format!("/v1/responses/{id}")).await;
    assert_eq!(s, 200, "{got}");
    assert_eq!(got["status"], "incomplete", "{got}");
    assert_eq!(got["output"][0]["status"], "incomplete");
    let text = got["output"][0]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("w0 ") && !text.contains("w99"), "{text}");
}

on_both_backends!(two_replica_processes, restart_process, shutdown_stores_a_running_turn_as_incomplete);

/// SIGTERM while a client holds a streamed answer open without reading it (its socket
/// buffers full): the process still exits after the grace period (it waited for the client).
#[tokio::test]
async fn shutdown_does_not_wait_for_a_client_that_stopped_reading() {
    use futures_util::StreamExt;
    let db = TestDb::sqlite();
    let up = ScriptedUpstream::start().await.unwrap();
    responses_gateway::install_crypto();
    let client = reqwest::Client::new();
    let mut g = spawn_with(&db, &up, &[("RESPONSES_GATEWAY_SERVER__SHUTDOWN_GRACE_MS", "300")]);
    let piece = "x".repeat(1000);
    let pieces: Vec<&str> = (0..4000).map(|_| piece.as_str()).collect();
    up.push(Script::text(&pieces));
    let resp = client
        .post(format!("{}/v1/responses", g.base))
        .json(&json!({"model":"m","input":"long","stream":true,"store":false}))
        .send()
        .await
        .unwrap();
    let mut body = resp.bytes_stream();
    body.next().await.expect("stream open").expect("chunk");
    // The client reads no more, and keeps the connection.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let pid = g.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let started = std::time::Instant::now();
    loop {
        if g.child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "the gateway waited for a client that does not read");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    drop(body);
}
