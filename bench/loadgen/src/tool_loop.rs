//! `loadgen tool-loop`: a client tool loop through the gateway (issue 27's benchmark): the
//! model calls the client's `get_weather` `--calls` times, each call answered at once by the
//! client, then answers. Over SSE each turn is one `POST /v1/responses` (`stream: true`) on a
//! kept-alive connection, continued by `previous_response_id` (`store: true`) or by replaying
//! the whole history (`store: false`: nothing to continue from); over the WebSocket each turn
//! is one `response.create` on one connection, continued by `previous_response_id` either way.
//! Prints the wall time per loop and the gateway's CPU time per loop (`/proc/<pid>/stat`).

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::{Args, ValueEnum};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    Sse,
    Ws,
}

#[derive(Args, Debug)]
pub struct ToolLoopArgs {
    /// The gateway's OpenAI base URL including /v1.
    #[arg(long)]
    base_url: String,
    /// Scripted-upstream origin (http://127.0.0.1:PORT): each loop's scripts are queued there.
    #[arg(long)]
    control_url: String,
    #[arg(long, value_enum)]
    transport: Transport,
    /// `store` of every request.
    #[arg(long)]
    store: bool,
    /// Measured loops.
    #[arg(long, default_value_t = 50)]
    loops: usize,
    /// Warm-up loops (not counted).
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Tool calls per loop.
    #[arg(long, default_value_t = 20)]
    calls: usize,
    /// The gateway's PID (its CPU time is read before and after the measured loops).
    #[arg(long)]
    server_pid: Option<u32>,
    /// Clock ticks per second of /proc/<pid>/stat.
    #[arg(long, default_value_t = 100)]
    clk_tck: u64,
}

fn tool() -> Value {
    json!({"type":"function","name":"get_weather","description":"Weather of a city",
           "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}})
}

/// The scripts one loop consumes: `calls` tool calls, then a short answer.
fn scripts(calls: usize) -> Value {
    let mut s: Vec<Value> = (0..calls)
        .map(|i| json!({"tool_calls":[{"name":"get_weather","arguments":format!("{{\"city\":\"c{i}\"}}")}]}))
        .collect();
    s.push(json!({"text":["All"," done."]}));
    Value::Array(s)
}

/// One connection's way of sending a turn and getting its final Response.
enum Conn {
    Sse(reqwest::Client),
    Ws(Box<tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>>),
}

impl Conn {
    async fn open(args: &ToolLoopArgs) -> anyhow::Result<Conn> {
        Ok(match args.transport {
            Transport::Sse => Conn::Sse(
                reqwest::Client::builder().no_proxy().http1_only().tcp_nodelay(true).timeout(Duration::from_secs(60)).build()?,
            ),
            Transport::Ws => {
                let url = format!("{}/responses", args.base_url.replacen("http://", "ws://", 1));
                let (ws, _) = tokio_tungstenite::connect_async(url).await.context("websocket upgrade")?;
                Conn::Ws(Box::new(ws))
            }
        })
    }

    /// Sends one create body and returns the terminal event's Response.
    async fn turn(&mut self, base_url: &str, mut body: Value) -> anyhow::Result<Value> {
        match self {
            Conn::Sse(client) => {
                body["stream"] = Value::Bool(true);
                let resp = client.post(format!("{base_url}/responses")).json(&body).send().await?;
                if !resp.status().is_success() {
                    bail!("HTTP {}: {}", resp.status(), resp.text().await.unwrap_or_default());
                }
                let text = resp.text().await?;
                let data = text
                    .split("\n\n")
                    .filter_map(|f| f.split_once("\ndata: ").map(|(_, d)| d))
                    .last()
                    .ok_or_else(|| anyhow!("no event"))?;
                terminal(serde_json::from_str(data)?)
            }
            Conn::Ws(ws) => {
                body["type"] = Value::String("response.create".into());
                ws.send(Message::Text(body.to_string().into())).await?;
                loop {
                    match ws.next().await {
                        Some(Ok(Message::Text(t))) => {
                            // Only the terminal event is parsed: a client reads the others as they come.
                            if t.contains("\"type\":\"response.completed\"")
                                || t.contains("\"type\":\"response.failed\"")
                                || t.contains("\"type\":\"response.incomplete\"")
                                || t.starts_with("{\"type\":\"error\"")
                            {
                                let v: Value = serde_json::from_str(&t)?;
                                if v["type"] == "error" && v.get("sequence_number").is_some() {
                                    continue;
                                }
                                return terminal(v);
                            }
                        }
                        Some(Ok(_)) => {}
                        Some(Err(e)) => return Err(e.into()),
                        None => bail!("the connection closed"),
                    }
                }
            }
        }
    }
}

fn terminal(event: Value) -> anyhow::Result<Value> {
    match event["type"].as_str() {
        Some("response.completed") => Ok(event["response"].clone()),
        _ => bail!("not completed: {event}"),
    }
}

/// One loop: returns its wall time.
async fn one_loop(args: &ToolLoopArgs, conn: &mut Conn, http: &reqwest::Client) -> anyhow::Result<Duration> {
    let pushed = http.post(format!("{}/_control/scripts", args.control_url)).json(&scripts(args.calls)).send().await?;
    if !pushed.status().is_success() {
        bail!("pushing scripts: HTTP {}", pushed.status());
    }
    let start = Instant::now();
    let first_input = json!([{"type":"message","role":"user","content":"Check the weather in every city."}]);
    let mut history = first_input.as_array().cloned().unwrap_or_default();
    let mut resp = conn.turn(&args.base_url, json!({"model":"m","input":first_input,"tools":[tool()],"store":args.store})).await?;
    for i in 0..args.calls {
        let call = resp["output"].as_array().and_then(|o| o.iter().find(|it| it["type"] == "function_call")).cloned();
        let call = call.ok_or_else(|| anyhow!("call {i}: no function_call in {resp}"))?;
        let output = json!({"type":"function_call_output","call_id":call["call_id"],"output":format!("sunny {i}")});
        let body = if args.transport == Transport::Sse && !args.store {
            // Nothing stored to continue from: the whole history again, as Codex does.
            history.push(call.clone());
            history.push(output);
            json!({"model":"m","input":history,"tools":[tool()],"store":false})
        } else {
            json!({"model":"m","previous_response_id":resp["id"],"input":[output],"tools":[tool()],"store":args.store})
        };
        resp = conn.turn(&args.base_url, body).await?;
    }
    if !resp["output"].as_array().is_some_and(|o| o.iter().any(|it| it["type"] == "message")) {
        bail!("the loop did not end in an answer: {resp}");
    }
    Ok(start.elapsed())
}

fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let rest = stat.rsplit_once(')').map(|(_, r)| r).ok_or_else(|| anyhow!("bad stat"))?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Ok(f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0))
}

pub async fn run(args: ToolLoopArgs) -> anyhow::Result<Value> {
    let http = reqwest::Client::builder().no_proxy().build()?;
    let mut conn = Conn::open(&args).await?;
    for _ in 0..args.warmup {
        one_loop(&args, &mut conn, &http).await?;
    }
    let before = args.server_pid.map(cpu_ticks).transpose()?;
    let mut walls = Vec::with_capacity(args.loops);
    for _ in 0..args.loops {
        walls.push(one_loop(&args, &mut conn, &http).await?);
    }
    let after = args.server_pid.map(cpu_ticks).transpose()?;
    walls.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = walls.iter().map(|d| ms(*d)).sum::<f64>() / walls.len().max(1) as f64;
    let cpu = match (before, after) {
        (Some(b), Some(a)) => Some((a - b) as f64 * 1000.0 / args.clk_tck as f64 / args.loops.max(1) as f64),
        _ => None,
    };
    Ok(json!({
        "transport": format!("{:?}", args.transport).to_lowercase(),
        "store": args.store,
        "calls": args.calls,
        "loops": args.loops,
        "wall_ms_p50": walls.get(walls.len() / 2).map(|d| ms(*d)),
        "wall_ms_mean": mean,
        "gateway_cpu_ms_per_loop": cpu,
    }))
}
