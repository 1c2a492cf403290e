//! The `responses-gateway` command: `serve` and `check-config`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use responses_gateway::config::telemetry::LogFormat;
use responses_gateway::config::{Config, Overrides};
use responses_gateway::telemetry::log::LogGuard;

/// The process's allocator: mimalloc. A tool request allocates ~275 times; glibc's malloc
/// spent ~19 % of its instructions there (callgrind, bench/instructions.sh).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// OpenAI-compatible Responses API gateway that owns tool execution.
#[derive(Parser, Debug)]
#[command(name = "responses-gateway", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the gateway.
    Serve(Common),
    /// Load and validate the configuration, print it (secrets are never printed), and exit.
    CheckConfig(Common),
}

#[derive(Args, Debug)]
struct Common {
    /// The upstream's OpenAI base URL including /v1, e.g. http://127.0.0.1:8000/v1.
    #[arg(long, value_name = "URL")]
    upstream_url: Option<String>,
    /// Name of the environment variable that holds the upstream API key.
    #[arg(long, value_name = "VAR")]
    upstream_api_key_env: Option<String>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Data directory [default: $XDG_DATA_HOME/responses-gateway].
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// TOML configuration file (see docs/config.example.toml).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Log format on stderr: `text`, or `json` (one object per line) [default: log.format, text].
    #[arg(long, value_name = "FORMAT")]
    log_format: Option<LogFormat>,
}

impl Common {
    fn load(&self) -> anyhow::Result<Config> {
        let overrides = Overrides {
            upstream_url: self.upstream_url.clone(),
            upstream_api_key_env: self.upstream_api_key_env.clone(),
            listen: self.listen,
            data_dir: self.data_dir.clone(),
            log_format: self.log_format,
        };
        Config::load(self.config.as_deref(), &overrides)
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let (Command::CheckConfig(common) | Command::Serve(common)) = &cli.command;
    let loaded = common.load();
    let format = common.log_format.or_else(|| loaded.as_ref().ok().map(|c| c.log.format)).unwrap_or_default();
    // `serve` runs on a runtime built before the log: the trace exporter sends from it.
    let rt = match &cli.command {
        Command::Serve(_) => match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
            Ok(rt) => Some(rt),
            Err(e) => return fail(format, &anyhow::anyhow!("the tokio runtime: {e}")),
        },
        Command::CheckConfig(_) => None,
    };
    let traces = match (&rt, &loaded) {
        (Some(rt), Ok(config)) => Some((&config.otel, rt.handle())),
        _ => None,
    };
    let guard = match responses_gateway::telemetry::log::init(format, traces) {
        Ok(g) => g,
        Err(e) => return fail(LogFormat::Text, &e),
    };
    // A panic caught inside a task (e.g. a PDF library on a hostile file, which then fails
    // that file only) is one log line, not a backtrace on stderr.
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
        tracing::error!(location = %at, "panic: {}", info.payload().downcast_ref::<&str>().copied().or_else(|| info.payload().downcast_ref::<String>().map(String::as_str)).unwrap_or("(no message)"));
    }));
    let result = match (&cli.command, rt) {
        (Command::CheckConfig(_), _) => loaded.and_then(|config| {
            config.check_start_secrets()?;
            responses_gateway::auth::ApiKeys::load(&config.auth)?;
            // A closed pipe (`check-config | head`) is not an error worth a panic.
            let _ = writeln!(std::io::stdout(), "{}", toml_string(&config));
            Ok(())
        }),
        (Command::Serve(_), Some(rt)) => loaded.and_then(|config| run(config, &rt, &guard)),
        (Command::Serve(_), None) => Ok(()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => fail(format, &e),
    }
}

/// Reports a fatal error (a JSON log line when the log is JSON) and gives exit code 2.
fn fail(format: LogFormat, e: &anyhow::Error) -> std::process::ExitCode {
    match format {
        LogFormat::Json if tracing::dispatcher::has_been_set() => tracing::error!("error: {e:#}"),
        _ => eprintln!("error: {e:#}"),
    }
    std::process::ExitCode::from(2)
}

/// The configuration as JSON, with credentials in every URL (`user:password@` and the values
/// of its query string, where keys such as `?token=` sit) masked: the upstream's, the search
/// backends', the remote vector stores', the embeddings endpoint's.
fn toml_string(config: &Config) -> String {
    let mut shown = serde_json::to_value(config).unwrap_or_default();
    mask_urls(&mut shown);
    serde_json::to_string_pretty(&shown).unwrap_or_default()
}

fn mask_urls(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            let Ok(mut u) = reqwest::Url::parse(s) else {
                // Not a valid URL (`serve` says so) but maybe meant as one: hide what could be
                // `user:password@`.
                if let (Some(start), Some(at)) = (s.find("://"), s.rfind('@')) {
                    if at > start + 3 {
                        s.replace_range(start + 3..at, "***:***");
                    }
                }
                return;
            };
            if !u.has_host() {
                return;
            }
            if !u.username().is_empty() || u.password().is_some() {
                let _ = u.set_username("***");
                let _ = u.set_password(Some("***"));
            }
            if u.query().is_some() {
                let keys: Vec<String> = u.query_pairs().map(|(k, _)| k.into_owned()).collect();
                u.query_pairs_mut().clear().extend_pairs(keys.iter().map(|k| (k.as_str(), "***")));
            }
            *s = u.to_string();
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(mask_urls),
        serde_json::Value::Object(o) => o.values_mut().for_each(mask_urls),
        _ => {}
    }
}

/// Serves until SIGINT or SIGTERM on `rt`, then exports the traces still queued (`guard`).
fn run(config: Config, rt: &tokio::runtime::Runtime, guard: &LogGuard) -> anyhow::Result<()> {
    // Fail at start, not at the first request, when a named key variable is unset.
    config.upstream_api_key()?;
    if guard.exports_traces() {
        tracing::info!("exporting traces (OTLP/HTTP)");
    }
    let served = rt.block_on(async move {
        let addr = config.server.listen;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        // SIGINT (Ctrl-C) and SIGTERM (systemd, containers) both drain gracefully:
        // streams in flight finish and stored turns are written.
        let shutdown = async {
            let term = async {
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(mut s) => {
                        s.recv().await;
                    }
                    Err(_) => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term => {}
            }
        };
        responses_gateway::serve_on(listener, &config, shutdown).await
    });
    // Outside `block_on`, with the runtime still running the export requests.
    guard.shutdown();
    served
}
