//! `loadgen`: the benchmark's load generator and reporter.
//!
//! * `loadgen run` sends N requests at concurrency C to the gateway (`POST /v1/responses`)
//!   or to the direct upstream (`POST /v1/chat/completions`), checks every answer is
//!   complete, and prints one JSON object: TTFT and latency percentiles, requests/s,
//!   errors, and (with `--server-pid`) the server's CPU time and peak RSS over the
//!   measured requests only (warm-up excluded).
//! * `loadgen wait` polls a URL until it answers 200 (the bench script has no curl).
//! * `loadgen report` reads the per-scenario JSON files of one bench run, prints the
//!   comparison table and writes the combined JSON.
//!
//! Nothing here needs more than coreutils around it: `bench/run.sh` drives it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Deserialize;
use serde_json::{json, Value};

mod fixture_server;
mod report;
mod search_fixture;
mod tool_loop;
mod vector_fixture;

#[derive(Parser, Debug)]
#[command(name = "loadgen", version, about = "Benchmark load generator for responses-gateway")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one measurement and print its JSON result.
    Run(RunArgs),
    /// Wait until GET <URL> answers 200.
    Wait {
        /// URL to poll, e.g. http://127.0.0.1:8080/healthz.
        url: String,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 15.0)]
        timeout_s: f64,
    },
    /// Combine the scenario results of one bench run into a table and a JSON file.
    Report(report::ReportArgs),
    /// Serve a SearXNG-shaped search backend that answers at once (web_search scenarios).
    SearchFixture {
        /// Address to listen on (port 0: any free port; the URL is printed).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
    },
    /// A client tool loop over SSE or the WebSocket (issue 27): wall and gateway CPU per loop.
    ToolLoop(tool_loop::ToolLoopArgs),
    /// Serve a remote vector store (OpenAI API shape) that answers at once (file_search scenarios).
    VectorFixture {
        /// Address to listen on (port 0: any free port; the URL is printed).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Target {
    /// The gateway: POST {base}/responses with a Responses API body.
    Gateway,
    /// The direct upstream: POST {base}/chat/completions with the equivalent body.
    Upstream,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Expect {
    /// A text answer (streamed: text deltas; complete: a message / content).
    Text,
    /// A function call (gateway: a `function_call` output item; upstream: `tool_calls`).
    FunctionCall,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Which server (and so which API shape) is measured.
    #[arg(long, value_enum)]
    target: Target,
    /// OpenAI base URL including /v1, e.g. http://127.0.0.1:8080/v1.
    #[arg(long)]
    base_url: String,
    /// Measured requests.
    #[arg(long, default_value_t = 1000)]
    requests: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Warm-up requests before the measured ones (not counted) [default: max(100, 4 × concurrency)].
    #[arg(long)]
    warmup: Option<usize>,
    /// Stream the answer (SSE) instead of asking for one JSON answer.
    #[arg(long)]
    stream: bool,
    /// Offer the client-owned function tool `get_weather`.
    #[arg(long)]
    tool: bool,
    /// Replace the generated request body with this file's JSON (sent as is).
    #[arg(long, value_name = "FILE")]
    body_file: Option<PathBuf>,
    /// What a complete answer holds [default: function-call with --tool, else text].
    #[arg(long, value_enum)]
    expect: Option<Expect>,
    /// Streamed text answers carry this many tokens: from the upstream exactly this many
    /// text chunks; from the gateway 1 to this many text deltas (text that arrived together
    /// is one delta) whose text adds up to `response.output_text.done`'s.
    #[arg(long)]
    expect_deltas: Option<usize>,
    /// Scripted-upstream origin (http://127.0.0.1:PORT) for --push-script.
    #[arg(long)]
    control_url: Option<String>,
    /// Script JSON (one object, or an array: the scripts one request consumes) that is
    /// queued on the scripted upstream once per request (warm-up included) before the run.
    #[arg(long, value_name = "JSON")]
    push_script: Option<String>,
    /// PID of the server whose CPU time (utime+stime) and peak RSS are recorded.
    #[arg(long)]
    server_pid: Option<u32>,
    /// PIDs of the other benchmark processes (the scripted upstream): their CPU time is
    /// not counted as foreign load in `machine.other_cpu_pct`.
    #[arg(long = "bench-pid")]
    bench_pids: Vec<u32>,
    /// Clock ticks per second of /proc/<pid>/stat (`getconf CLK_TCK`).
    #[arg(long, default_value_t = 100)]
    clk_tck: u64,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 30.0)]
    timeout_s: f64,
    /// Tokio worker threads (1: a current-thread runtime, the least overhead).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Scenario name, echoed in the result.
    #[arg(long)]
    scenario: Option<String>,
    /// Target: gateway CPU ms per request (echoed for the report).
    #[arg(long)]
    target_cpu_ms: Option<f64>,
    /// Target: added TTFT p50 in ms (echoed for the report).
    #[arg(long)]
    target_added_ttft_p50_ms: Option<f64>,
    /// Target: gateway peak RSS in MiB (echoed for the report).
    #[arg(long)]
    target_rss_mib: Option<f64>,
}

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => {
            let rt = if args.threads <= 1 {
                tokio::runtime::Builder::new_current_thread().enable_all().build()?
            } else {
                tokio::runtime::Builder::new_multi_thread().worker_threads(args.threads).enable_all().build()?
            };
            let out = rt.block_on(run(args))?;
            println!("{}", serde_json::to_string_pretty(&out)?);
            Ok(())
        }
        Command::Wait { url, timeout_s } => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(wait(&url, timeout_s))
        }
        Command::Report(args) => report::report(args),
        Command::ToolLoop(args) => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let out = rt.block_on(tool_loop::run(args))?;
            println!("{}", serde_json::to_string(&out)?);
            Ok(())
        }
        Command::SearchFixture { listen } => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(search_fixture::serve(&listen))
        }
        Command::VectorFixture { listen } => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(vector_fixture::serve(&listen))
        }
    }
}

fn client(pool: usize, timeout: Duration) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .no_proxy()
        .http1_only()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(pool)
        .pool_idle_timeout(Duration::from_secs(600))
        .timeout(timeout)
        .build()?)
}

async fn wait(url: &str, timeout_s: f64) -> anyhow::Result<()> {
    let client = client(1, Duration::from_secs(2))?;
    let deadline = Instant::now() + Duration::from_secs_f64(timeout_s);
    loop {
        if let Ok(r) = client.get(url).send().await {
            if r.status().is_success() {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!("{url} did not answer 200 within {timeout_s} s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const TOOL_RESPONSES: &str = r#"{"type":"function","name":"get_weather","description":"Current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}"#;
const TOOL_CHAT: &str = r#"{"type":"function","function":{"name":"get_weather","description":"Current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}"#;

/// The request body: the Responses API shape for the gateway, the equivalent
/// chat-completions shape for the upstream.
fn body(args: &RunArgs) -> anyhow::Result<Bytes> {
    if let Some(path) = &args.body_file {
        let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_slice::<Value>(&text).with_context(|| format!("{} is not JSON", path.display()))?;
        return Ok(Bytes::from(text));
    }
    let mut v = match args.target {
        Target::Gateway => json!({"model": "m", "input": "hi", "stream": args.stream}),
        Target::Upstream => {
            let mut v = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": args.stream});
            if args.stream {
                v["stream_options"] = json!({"include_usage": true});
            }
            v
        }
    };
    if args.tool {
        let tool: Value = serde_json::from_str(match args.target {
            Target::Gateway => TOOL_RESPONSES,
            Target::Upstream => TOOL_CHAT,
        })?;
        v["tools"] = json!([tool]);
    }
    Ok(Bytes::from(serde_json::to_vec(&v)?))
}

/// Outcome of one request.
struct Sample {
    ttft: Duration,
    latency: Duration,
}

#[derive(Default)]
struct Collected {
    samples: Vec<Sample>,
    errors: usize,
    error_samples: Vec<String>,
}

struct Job {
    client: reqwest::Client,
    url: String,
    body: Bytes,
    target: Target,
    stream: bool,
    expect: Expect,
    expect_deltas: Option<usize>,
}

async fn run(args: RunArgs) -> anyhow::Result<Value> {
    let concurrency = args.concurrency.max(1);
    let warmup = args.warmup.unwrap_or_else(|| (4 * concurrency).max(100));
    let base = args.base_url.trim_end_matches('/');
    let url = match args.target {
        Target::Gateway => format!("{base}/responses"),
        Target::Upstream => format!("{base}/chat/completions"),
    };
    let expect = args.expect.unwrap_or(if args.tool { Expect::FunctionCall } else { Expect::Text });
    let timeout = Duration::from_secs_f64(args.timeout_s);
    let job = Arc::new(Job {
        client: client(concurrency, timeout)?,
        url,
        body: body(&args)?,
        target: args.target,
        stream: args.stream,
        expect,
        expect_deltas: args.expect_deltas,
    });

    if let Some(script) = &args.push_script {
        let control = args.control_url.as_deref().context("--push-script needs --control-url")?;
        push_scripts(control, script, warmup + args.requests).await?;
    }

    let warm = batch(&job, warmup, concurrency).await;
    if warm.errors > 0 {
        eprintln!("loadgen: {} of {warmup} warm-up requests failed, e.g. {:?}", warm.errors, warm.error_samples.first());
    }

    let own: Vec<u32> = args.server_pid.into_iter().chain(args.bench_pids.iter().copied()).collect();
    let machine_before = machine_ticks(&own)?;
    let cpu_before = args.server_pid.map(proc_cpu_ticks).transpose()?;
    let started = Instant::now();
    let got = batch(&job, args.requests, concurrency).await;
    let wall = started.elapsed();
    let cpu_after = args.server_pid.map(proc_cpu_ticks).transpose()?;
    let machine_after = machine_ticks(&own)?;

    let scripts_left = match (&args.push_script, &args.control_url) {
        (Some(_), Some(control)) => Some(queued_scripts(control).await?),
        _ => None,
    };

    let ok = got.samples.len();
    let mut ttft: Vec<Duration> = got.samples.iter().map(|s| s.ttft).collect();
    let mut lat: Vec<Duration> = got.samples.iter().map(|s| s.latency).collect();
    let mut out = json!({
        "scenario": args.scenario,
        "target": match args.target { Target::Gateway => "gateway", Target::Upstream => "upstream" },
        "url": job.url,
        "stream": args.stream,
        "tool": args.tool,
        "expect": match expect { Expect::Text => "text", Expect::FunctionCall => "function_call" },
        "requests": args.requests,
        "concurrency": concurrency,
        "warmup": warmup,
        "warmup_errors": warm.errors,
        "ok": ok,
        "errors": got.errors,
        "error_samples": got.error_samples,
        "wall_s": wall.as_secs_f64(),
        "rps": ok as f64 / wall.as_secs_f64(),
        "ttft_ms": stats(&mut ttft),
        "latency_ms": stats(&mut lat),
        "targets": {
            "cpu_ms_per_request": args.target_cpu_ms,
            "added_ttft_p50_ms": args.target_added_ttft_p50_ms,
            "peak_rss_mib": args.target_rss_mib,
        },
    });
    {
        // CPU time used on the machine by anything but this benchmark while measuring:
        // other work on the same cores skews every figure.
        let (busy, ours, cpus) = (
            machine_after.busy.saturating_sub(machine_before.busy),
            machine_after.ours.saturating_sub(machine_before.ours),
            machine_after.cpus,
        );
        let other_ms = busy.saturating_sub(ours) as f64 * 1000.0 / args.clk_tck as f64;
        let capacity_ms = wall.as_secs_f64() * 1000.0 * cpus as f64;
        out["machine"] = json!({
            "cpus": cpus,
            "busy_cpu_ms": busy as f64 * 1000.0 / args.clk_tck as f64,
            "bench_cpu_ms": ours as f64 * 1000.0 / args.clk_tck as f64,
            "other_cpu_ms": other_ms,
            "other_cpu_pct": (other_ms / capacity_ms * 1000.0).round() / 10.0,
        });
    }
    if let Some(left) = scripts_left {
        out["scripts_left_in_queue"] = json!(left);
    }
    if let (Some(pid), Some(before), Some(after)) = (args.server_pid, cpu_before, cpu_after) {
        let ms = (after - before) as f64 * 1000.0 / args.clk_tck as f64;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        out["server"] = json!({
            "pid": pid,
            "cpu_ms": ms,
            "cpu_ms_per_request": ms / args.requests.max(1) as f64,
            "clk_tck": args.clk_tck,
            "vm_hwm_kib": status_kib(&status, "VmHWM:"),
            "vm_rss_kib": status_kib(&status, "VmRSS:"),
            "threads": status_kib(&status, "Threads:"),
        });
    }
    Ok(out)
}

/// Runs `n` requests with `concurrency` in flight.
async fn batch(job: &Arc<Job>, n: usize, concurrency: usize) -> Collected {
    let next = Arc::new(AtomicUsize::new(0));
    let collected = Arc::new(Mutex::new(Collected { samples: Vec::with_capacity(n), ..Default::default() }));
    let mut workers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency.min(n.max(1)) {
        let job = job.clone();
        let next = next.clone();
        let collected = collected.clone();
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < n {
                let result = one(&job).await;
                let mut c = collected.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                match result {
                    Ok(s) => c.samples.push(s),
                    Err(e) => {
                        c.errors += 1;
                        if c.error_samples.len() < 5 {
                            c.error_samples.push(format!("{e:#}"));
                        }
                    }
                }
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    Arc::try_unwrap(collected)
        .ok()
        .map(|m| m.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()))
        .unwrap_or_default()
}

/// One request: TTFT, latency, and whether the answer is complete.
async fn one(job: &Job) -> anyhow::Result<Sample> {
    let start = Instant::now();
    let mut resp = job
        .client
        .post(&job.url)
        .header("content-type", "application/json")
        .body(job.body.clone())
        .send()
        .await?;
    let status = resp.status();
    if !status.is_success() {
        let text = resp.text().await.unwrap_or_default();
        bail!("HTTP {status}: {}", text.chars().take(300).collect::<String>());
    }
    if !job.stream {
        let body = resp.bytes().await?;
        let latency = start.elapsed();
        check_complete(job, &body)?;
        return Ok(Sample { ttft: latency, latency });
    }
    let mut sse = SseCheck::new(job.target);
    while let Some(chunk) = resp.chunk().await? {
        sse.feed(&chunk, start)?;
    }
    let latency = start.elapsed();
    sse.finish(job.expect, job.expect_deltas)?;
    let ttft = sse.first_delta.context("no text or argument delta in the stream")?;
    Ok(Sample { ttft, latency })
}

/// Checks a non-streamed answer.
fn check_complete(job: &Job, body: &[u8]) -> anyhow::Result<()> {
    let v: Value = serde_json::from_slice(body).context("answer is not JSON")?;
    match job.target {
        Target::Gateway => {
            if v["status"] != "completed" {
                bail!("response status {} (want completed)", v["status"]);
            }
            let want = match job.expect {
                Expect::Text => "message",
                Expect::FunctionCall => "function_call",
            };
            let items = v["output"].as_array().context("response has no output array")?;
            if !items.iter().any(|i| i["type"] == want) {
                bail!("response output has no {want} item");
            }
        }
        Target::Upstream => {
            let choice = &v["choices"][0];
            let finish = choice["finish_reason"].as_str().context("no finish_reason")?;
            match job.expect {
                Expect::Text if finish != "stop" => bail!("finish_reason {finish} (want stop)"),
                Expect::FunctionCall if finish != "tool_calls" => bail!("finish_reason {finish} (want tool_calls)"),
                Expect::FunctionCall if choice["message"]["tool_calls"].as_array().is_none_or(|a| a.is_empty()) => {
                    bail!("message has no tool_calls")
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// An incremental SSE reader that records the first delta and checks the end.
struct SseCheck {
    target: Target,
    buf: Vec<u8>,
    first_delta: Option<Duration>,
    text_deltas: usize,
    arg_deltas: usize,
    /// Gateway: `response.completed` seen; upstream: `[DONE]` seen.
    complete: bool,
    failure: Option<String>,
    /// Gateway: the event whose `data:` line comes next, when its text is measured.
    measure: Option<Measured>,
    /// Gateway: the JSON-escaped bytes of every text delta, and of `output_text.done`'s text.
    delta_bytes: usize,
    done_bytes: Option<usize>,
}

/// The gateway events whose text the check measures.
#[derive(Clone, Copy)]
enum Measured {
    Delta,
    Done,
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Vec<ChunkChoice<'a>>,
}
#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
}
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<serde::de::IgnoredAny>,
}

impl SseCheck {
    fn new(target: Target) -> Self {
        SseCheck {
            target,
            buf: Vec::with_capacity(16 * 1024),
            first_delta: None,
            text_deltas: 0,
            arg_deltas: 0,
            complete: false,
            failure: None,
            measure: None,
            delta_bytes: 0,
            done_bytes: None,
        }
    }

    fn feed(&mut self, chunk: &[u8], start: Instant) -> anyhow::Result<()> {
        self.buf.extend_from_slice(chunk);
        let mut pos = 0;
        while let Some(nl) = self.buf[pos..].iter().position(|&b| b == b'\n') {
            let end = pos + nl;
            let line = &self.buf[pos..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let (text, args) = match self.target {
                Target::Gateway => {
                    if let Some(m) = self.measure.take().filter(|_| line.starts_with(b"data:")) {
                        let (key, into): (&[u8], _) = match m {
                            Measured::Delta => (b"\"delta\":\"", &mut self.delta_bytes),
                            Measured::Done => (b"\"text\":\"", self.done_bytes.get_or_insert(0)),
                        };
                        *into += json_string_len(line, key);
                    }
                    if line == b"event: response.output_text.delta" {
                        self.measure = Some(Measured::Delta);
                    } else if line == b"event: response.output_text.done" {
                        self.measure = Some(Measured::Done);
                    }
                    gateway_line(line, &mut self.complete, &mut self.failure)
                }
                Target::Upstream => upstream_line(line, &mut self.complete)?,
            };
            if (text || args) && self.first_delta.is_none() {
                self.first_delta = Some(start.elapsed());
            }
            self.text_deltas += text as usize;
            self.arg_deltas += args as usize;
            pos = end + 1;
        }
        self.buf.drain(..pos);
        Ok(())
    }

    fn finish(&self, expect: Expect, expect_deltas: Option<usize>) -> anyhow::Result<()> {
        if let Some(f) = &self.failure {
            bail!("stream ended with {f}");
        }
        if !self.complete {
            bail!(
                "incomplete stream (no {})",
                if self.target == Target::Gateway { "response.completed" } else { "[DONE]" }
            );
        }
        match expect {
            Expect::Text => {
                // The upstream sends one chunk per token. The gateway sends text that arrived
                // together as one delta: 1 to N deltas, which add up to the done event's text
                // (a repeated or lost delta does not).
                if let Some(n) = expect_deltas {
                    if self.target == Target::Upstream && self.text_deltas != n {
                        bail!("{} text deltas (want {n})", self.text_deltas);
                    }
                    if self.target == Target::Gateway {
                        if self.text_deltas == 0 || self.text_deltas > n {
                            bail!("{} text deltas (want 1 to {n})", self.text_deltas);
                        }
                        if self.done_bytes != Some(self.delta_bytes) {
                            bail!("the deltas hold {} bytes of text, the done event {:?}", self.delta_bytes, self.done_bytes);
                        }
                    }
                } else if self.text_deltas == 0 {
                    bail!("no text deltas");
                }
            }
            Expect::FunctionCall if self.arg_deltas == 0 => bail!("no function call in the stream"),
            Expect::FunctionCall => {}
        }
        Ok(())
    }
}

/// The length in bytes, as written (escapes counted as written), of the JSON string that
/// follows `key` (which ends with the opening quote) in `line`; 0 without `key`.
fn json_string_len(line: &[u8], key: &[u8]) -> usize {
    let Some(at) = line.windows(key.len()).position(|w| w == key) else { return 0 };
    let rest = &line[at + key.len()..];
    let mut i = 0;
    while i < rest.len() && rest[i] != b'"' {
        i += if rest[i] == b'\\' { 2 } else { 1 };
    }
    i.min(rest.len())
}

/// One gateway SSE line: (text delta?, function-call argument delta?).
fn gateway_line(line: &[u8], complete: &mut bool, failure: &mut Option<String>) -> (bool, bool) {
    let Some(name) = line.strip_prefix(b"event: ") else { return (false, false) };
    match name {
        b"response.output_text.delta" => (true, false),
        b"response.function_call_arguments.delta" => (false, true),
        b"response.completed" => {
            *complete = true;
            (false, false)
        }
        b"response.failed" | b"response.incomplete" | b"error" => {
            *failure = Some(String::from_utf8_lossy(name).into_owned());
            (false, false)
        }
        _ => (false, false),
    }
}

/// One upstream SSE line: (non-empty content delta?, tool-call delta?).
fn upstream_line(line: &[u8], complete: &mut bool) -> anyhow::Result<(bool, bool)> {
    let Some(data) = line.strip_prefix(b"data:") else { return Ok((false, false)) };
    let data = data.strip_prefix(b" ").unwrap_or(data);
    if data == b"[DONE]" {
        *complete = true;
        return Ok((false, false));
    }
    let chunk: Chunk<'_> = serde_json::from_slice(data).context("upstream chunk is not JSON")?;
    let Some(delta) = chunk.choices.first().and_then(|c| c.delta.as_ref()) else { return Ok((false, false)) };
    let text = delta.content.as_ref().is_some_and(|c| !c.is_empty());
    Ok((text, delta.tool_calls.is_some()))
}

/// Percentiles in milliseconds (nearest rank).
fn stats(v: &mut [Duration]) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_unstable();
    let pick = |p: f64| {
        let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
        ms(v[rank.clamp(1, v.len()) - 1])
    };
    let mean = v.iter().map(|d| d.as_secs_f64()).sum::<f64>() / v.len() as f64 * 1000.0;
    json!({
        "p50": pick(50.0), "p90": pick(90.0), "p99": pick(99.0),
        "min": ms(v[0]), "max": ms(v[v.len() - 1]), "mean": (mean * 1000.0).round() / 1000.0,
    })
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1000.0
}

/// utime + stime of a process (all its threads, live and exited), in clock ticks.
fn proc_cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).with_context(|| format!("/proc/{pid}/stat"))?;
    // The command name (field 2) may contain spaces; fields after it start at `state` (3).
    let rest = &stat[stat.rfind(')').context("bad /proc stat")? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11).context("no utime")?.parse()?;
    let stime: u64 = fields.get(12).context("no stime")?.parse()?;
    Ok(utime + stime)
}

struct MachineTicks {
    /// utime+stime+cutime+cstime summed over every process: a process that exits
    /// between two readings moves its time into its parent's cutime/cstime, so the
    /// difference of two readings is the CPU time used in between.
    busy: u64,
    /// utime+stime of this process and the given benchmark processes.
    ours: u64,
    cpus: usize,
}

fn machine_ticks(pids: &[u32]) -> anyhow::Result<MachineTicks> {
    let mut busy = 0;
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some(close) = stat.rfind(')') else { continue };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // utime stime cutime cstime are fields 14-17, i.e. 11..=14 after the name.
        busy += (11..=14).filter_map(|i| fields.get(i)?.parse::<u64>().ok()).sum::<u64>();
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()).max(
        std::fs::read_to_string("/proc/stat")
            .map(|s| s.lines().filter(|l| l.starts_with("cpu") && !l.starts_with("cpu ")).count())
            .unwrap_or(1),
    );
    let mut ours = proc_cpu_ticks(std::process::id())?;
    for &pid in pids {
        ours += proc_cpu_ticks(pid).unwrap_or(0);
    }
    Ok(MachineTicks { busy, ours, cpus })
}

fn status_kib(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Queues `script` (an object, or an array consumed by one request) `times` times.
async fn push_scripts(control: &str, script: &str, times: usize) -> anyhow::Result<()> {
    let one: Value = serde_json::from_str(script).context("--push-script is not JSON")?;
    let per_request: Vec<Value> = match one {
        Value::Array(a) => a,
        v => vec![v],
    };
    let client = client(1, Duration::from_secs(60))?;
    let control = control.trim_end_matches('/');
    let reset = client.post(format!("{control}/_control/reset")).send().await?;
    if !reset.status().is_success() {
        bail!("{control}/_control/reset: HTTP {}", reset.status());
    }
    // In slices, to keep each control request small.
    let mut left = times;
    while left > 0 {
        let now = left.min(2000);
        let all: Vec<&Value> = (0..now).flat_map(|_| per_request.iter()).collect();
        let r = client.post(format!("{control}/_control/scripts")).json(&all).send().await?;
        if !r.status().is_success() {
            bail!("{control}/_control/scripts: HTTP {}: {}", r.status(), r.text().await.unwrap_or_default());
        }
        left -= now;
    }
    Ok(())
}

/// Scripts still queued on the scripted upstream (pushing an empty array reports it).
async fn queued_scripts(control: &str) -> anyhow::Result<u64> {
    let client = client(1, Duration::from_secs(10))?;
    let v: Value = client
        .post(format!("{}/_control/scripts", control.trim_end_matches('/')))
        .json(&json!([]))
        .send()
        .await?
        .json()
        .await?;
    v["queued"].as_u64().context("no `queued` in the control answer")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_string_is_measured_as_written() {
        let line = br#"data: {"type":"x","delta":"a \"q\" \\ b","n":1}"#;
        assert_eq!(json_string_len(line, b"\"delta\":\""), r#"a \"q\" \\ b"#.len());
        assert_eq!(json_string_len(line, b"\"text\":\""), 0);
    }

    /// Two deltas that add up to the done text pass; a repeated delta fails.
    #[test]
    fn gateway_deltas_must_add_up_to_the_done_text() {
        let stream = |deltas: &[&str]| {
            let mut sse = String::new();
            for d in deltas {
                sse += &format!("event: response.output_text.delta\ndata: {{\"delta\":\"{d}\"}}\n\n");
            }
            sse += "event: response.output_text.done\ndata: {\"text\":\"Hello\"}\n\nevent: response.completed\ndata: {}\n\n";
            let mut check = SseCheck::new(Target::Gateway);
            check.feed(sse.as_bytes(), Instant::now()).unwrap();
            check.finish(Expect::Text, Some(4))
        };
        assert!(stream(&["Hel", "lo"]).is_ok());
        assert!(stream(&["Hel", "lo", "lo"]).is_err());
        assert!(stream(&["H", "e", "l", "l", "o"]).is_err(), "more deltas than tokens");
    }
}
