//! Store benchmark (issue 6): what storing adds to a turn, and rebuilding a 20-turn chain.
//!
//!   cargo run --release -p responses-gateway --example store_bench -- [sqlite|postgres|both] [TURNS]
//!
//! Per backend:
//! - per stored turn: the store work a `store: true` turn adds over `store: false` — the
//!   `SELECT 1` check in `turn::prepare` plus `persist::commit` (progress stripping, JSON,
//!   one transaction with the response row) — as latency p50/p99 (ms) and process CPU per
//!   turn (ms, from /proc/self/stat: the gateway's threads incl. SQLite's, not the
//!   PostgreSQL server's);
//! - chain rebuild: `turn::prepare` of turn 21 with `previous_response_id` = turn 20
//!   (parse, load the one stored transcript, build the upstream transcript), p50/p99 (ms).
//!
//! PostgreSQL: a database created (and dropped) on `$RESPONSES_GATEWAY_TEST_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/postgres`). SQLite: a file in a temp dir.

use std::sync::Arc;
use std::time::Instant;

use protocol::output::{ItemStatus, OutputContent, OutputItem, Phase};
use protocol::response::Usage;
use responses_gateway::executors::Registry;
use responses_gateway::store::sql::{SqlStore, Target};
use responses_gateway::store::{Store, StoreConfig};
use responses_gateway::turn::persist::{self, Persist};
use responses_gateway::turn::{self as state, Context};
use responses_gateway::transcript::{Entry, Transcript, UserPart};
use responses_gateway::turn::{parse_request, Outcome};
use serde_json::json;
use sqlx::Connection;

const CHAIN: usize = 20;
const USER_TEXT: &str = "Please summarise the trade-offs between the two approaches we discussed, in three bullet points.";

fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0) + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    ticks * 10.0 // CLK_TCK = 100
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn answer(n: usize) -> String {
    format!("Turn {n}: - one: it is simpler to operate. - two: it scales further. - three: it costs more to run, because every replica needs the shared database.")
}

/// A finished one-round turn as `turn::run` would return it.
fn outcome(id: &str, base: &Transcript, n: usize) -> anyhow::Result<Outcome> {
    let mut transcript = base.clone();
    transcript.entries.push(Entry::User(vec![UserPart::Text(USER_TEXT.into())]));
    transcript.push_assistant(answer(n), Vec::new());
    let base_response = serde_json::from_value::<protocol::Response>(json!({
        "id": id, "object": "response", "created_at": 1_700_000_000u64, "status": "completed", "background": false,
        "completed_at": 1_700_000_001u64, "error": null, "incomplete_details": null, "instructions": "Be brief.",
        "max_output_tokens": null, "max_tool_calls": null, "model": "m", "output": [], "parallel_tool_calls": true,
        "previous_response_id": null, "prompt_cache_key": null, "prompt_cache_retention": null,
        "reasoning": {"effort": null, "summary": null}, "safety_identifier": null, "service_tier": "default",
        "store": true, "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto", "tools": [], "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled",
        "usage": null, "user": null, "metadata": {}, "frequency_penalty": 0.0, "presence_penalty": 0.0
    }))?;
    let mut response = base_response;
    response.output.push(OutputItem::Message {
        id: format!("msg_{id}"),
        role: "assistant".into(),
        status: ItemStatus::Completed,
        content: vec![OutputContent::OutputText { annotations: vec![], logprobs: vec![], text: answer(n) }],
        phase: Some(Phase::FinalAnswer),
    });
    response.usage = Some(Usage { input_tokens: 120, output_tokens: 40, total_tokens: 160, ..Usage::default() });
    Ok(Outcome { response, transcript, upstream_error: None })
}

fn plan(store: &Arc<dyn Store>, previous: Option<String>) -> Persist {
    let body = json!({"model": "m", "input": USER_TEXT}).to_string();
    Persist {
        store: store.clone(),
        project: "default".into(),
        store_response: true,
        input_items: responses_gateway::store::items::input_resources(body.as_bytes()),
        previous_response_id: previous,
        conversation: None,
    }
}

async fn bench(name: &str, store: SqlStore, turns: usize) -> anyhow::Result<()> {
    let store: Arc<dyn Store> = Arc::new(store);
    // Warm up the pool and the statement caches.
    for i in 0..50 {
        let o = outcome(&format!("resp_warm{i}"), &Transcript::default(), i)?;
        persist::commit(plan(&store, None), &o.response, o.transcript).await?;
    }
    let mut lat = Vec::with_capacity(turns);
    let outcomes = (0..turns).map(|i| outcome(&format!("resp_b{i}"), &Transcript::default(), i)).collect::<anyhow::Result<Vec<_>>>()?;
    let cpu0 = cpu_ms();
    let wall0 = Instant::now();
    for o in outcomes {
        let t = Instant::now();
        store.ping().await?;
        persist::commit(plan(&store, None), &o.response, o.transcript).await?;
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let wall = wall0.elapsed().as_secs_f64() * 1000.0;
    let cpu = cpu_ms() - cpu0;
    lat.sort_by(f64::total_cmp);
    println!(
        "{name:8} per stored turn: p50 {:.3} ms, p99 {:.3} ms, mean {:.3} ms, CPU {:.3} ms/turn ({turns} turns, {:.0} ms wall)",
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        wall / turns as f64,
        cpu / turns as f64,
        wall
    );

    // A 20-turn chain, each turn stored with the transcript so far.
    let mut transcript = Transcript::default();
    let mut previous: Option<String> = None;
    for n in 0..CHAIN {
        let id = format!("resp_chain{n}_{}", rand::random::<u32>());
        let o = outcome(&id, &transcript, n)?;
        persist::commit(plan(&store, previous.clone()), &o.response, o.transcript.clone()).await?;
        transcript = o.transcript;
        previous = Some(id);
    }
    let registry = Arc::new(Registry::default());
    let caps = Default::default();
    let ctx = Context { models: None, reject_unknown: false, registry: &registry, caps: &caps, store: &store, project: "default", lease_ttl_ms: 30_000, sizes: Default::default(), ping_store: true, worker: false, previous: Default::default(), sealer: None };
    let body = json!({"model":"m","previous_response_id": previous, "input": "And a fourth point?", "store": false}).to_string();
    let mut lat = Vec::new();
    for i in 0..500 {
        let t = Instant::now();
        let req = parse_request(body.as_bytes()).map_err(|e| anyhow::anyhow!("parse: {}", e.message))?;
        let prepared = state::prepare(req, body.as_bytes(), &ctx).await.map_err(|e| anyhow::anyhow!("prepare: {}", e.error.message))?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(prepared.transcript.entries.len() == 2 * CHAIN + 1, "the chain was not rebuilt whole");
        if i >= 20 {
            lat.push(ms);
        }
    }
    lat.sort_by(f64::total_cmp);
    println!("{name:8} 20-turn chain rebuild (turn::prepare): p50 {:.3} ms, p99 {:.3} ms", pct(&lat, 0.5), pct(&lat, 0.99));
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map(String::as_str).unwrap_or("both");
    let turns: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let config = StoreConfig::default();
    if which == "sqlite" || which == "both" {
        let dir = std::env::temp_dir().join(format!("rg-store-bench-{}", std::process::id()));
        let store = SqlStore::connect(&config, Target::Sqlite(&dir.join("store.sqlite3"))).await?;
        bench("sqlite", store, turns).await?;
        let _ = std::fs::remove_dir_all(&dir);
    }
    if which == "postgres" || which == "both" {
        let admin = std::env::var("RESPONSES_GATEWAY_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let name = format!("rg_bench_{}", std::process::id());
        let mut conn = sqlx::postgres::PgConnection::connect(&admin).await?;
        sqlx::query(&format!("CREATE DATABASE \"{name}\"")).execute(&mut conn).await?;
        let mut url = reqwest::Url::parse(&admin)?;
        url.set_path(&format!("/{name}"));
        let store = SqlStore::connect(&config, Target::Postgres(url.as_str())).await?;
        bench("postgres", store.clone(), turns).await?;
        store.close().await;
        sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).execute(&mut conn).await?;
    }
    Ok(())
}
