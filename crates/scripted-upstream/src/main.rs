//! `scripted-upstream`: the scripted chat-completions server as a process.
//!
//! Prints `LISTENING http://127.0.0.1:PORT` once bound, then serves until killed.
//! Scripts are queued over HTTP with `POST /_control/scripts`.

use std::io::Write;
use std::net::SocketAddr;

use clap::Parser;
use scripted_upstream::{Script, ScriptedUpstream};

/// A scripted OpenAI-compatible chat-completions model server.
#[derive(Debug, Parser)]
#[command(
    name = "scripted-upstream",
    version,
    after_help = "Control endpoints (on the same address):
  POST /_control/scripts   queue answers, one per future chat request (FIFO): a script
                           object or an array of them, e.g.
                           {\"text\":[\"Hel\",\"lo\"],\"token_delay_ms\":50}
                           {\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]}
                           fields: text, reasoning_content, reasoning_field, summary, refusal,
                           tool_calls, failed, failed_beside, finish_reason,
                           token_delay_ms, usage, http_status, error_body, fault
                           (see crates/scripted-upstream/src/script.rs)
  GET  /_control/requests  every chat request received, in order
  POST /_control/reset     empty the queue and the recorded requests
  POST /_control/require_reasoning  {\"field\":\"reasoning_content\"|\"reasoning\"|null}: refuse
                           tool rounds sent back without their reasoning, as DeepSeek does
When the queue is empty the default answer (--default-tokens, --token-delay-ms) is used."
)]
struct Args {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Text chunks of the default answer (used when no script is queued).
    #[arg(long, default_value_t = 64)]
    default_tokens: usize,
    /// Pause between chunks of the default answer, in milliseconds.
    #[arg(long, default_value_t = 0)]
    token_delay_ms: u64,
    /// Do not record requests (keeps memory flat in long benchmark runs).
    #[arg(long)]
    no_record: bool,
    /// Refuse chat requests whose tool rounds lack their reasoning in this field
    /// (`reasoning_content`: DeepSeek's 400; `reasoning`: vLLM's error shape).
    #[arg(long, value_name = "FIELD")]
    require_reasoning_back: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let default = Script::sentence(args.default_tokens).delay_ms(args.token_delay_ms);
    let upstream = ScriptedUpstream::start_on(args.listen, default).await?;
    upstream.set_recording(!args.no_record);
    upstream.require_reasoning_back(args.require_reasoning_back.as_deref());
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "LISTENING {}", upstream.origin())?;
    stdout.flush()?;
    drop(stdout);
    tokio::select! {
        _ = upstream.wait() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
