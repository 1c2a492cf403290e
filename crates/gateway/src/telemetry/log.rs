//! The log: the process's `tracing` subscriber ([`init`]: text or JSON lines on stderr,
//! filtered by `RUST_LOG`, plus the OpenTelemetry layer with the `otel` feature) and the
//! line each finished turn writes ([`TurnLog`], a turn observer).

use std::time::Duration;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::telemetry::{LogFormat, OtelConfig};
use crate::turn::observer::{TurnInfo, TurnObserver, TurnReport};

/// The target of the per-turn line (`RUST_LOG=responses_gateway::turn=warn` hides it).
pub const TURN_TARGET: &str = "responses_gateway::turn";

/// Logs one line per finished turn (INFO, target [`TURN_TARGET`], message `turn`):
/// `response_id`, `model` (the upstream's), `status`, `stream`, `rounds`, `duration_ms`,
/// `upstream_ms`, `tool_ms` (milliseconds, fractional), `input_tokens`, `output_tokens`.
/// Written in the turn's span, so the request's `request_id` goes with it.
#[derive(Debug, Clone, Copy, Default)]
pub struct TurnLog;

/// Milliseconds with microsecond precision.
pub fn millis(d: Duration) -> f64 {
    d.as_micros() as f64 / 1000.0
}

impl TurnObserver for TurnLog {
    fn turn_done(&self, turn: &TurnInfo, report: &TurnReport) {
        tracing::info!(
            target: TURN_TARGET,
            response_id = %turn.response_id,
            model = %turn.model,
            status = report.status.as_str(),
            stream = turn.streamed,
            rounds = report.rounds,
            duration_ms = millis(report.duration),
            upstream_ms = millis(report.upstream_time),
            tool_ms = millis(report.tool_time),
            input_tokens = report.usage.input_tokens,
            output_tokens = report.usage.output_tokens,
            "turn"
        );
    }
}

/// What keeps the subscriber's exporter running (with the `otel` feature and traces
/// wanted); [`LogGuard::shutdown`] exports what is left.
#[derive(Debug, Default)]
pub struct LogGuard {
    #[cfg(feature = "otel")]
    tracing: Option<super::otel::Tracing>,
}

impl LogGuard {
    /// True when traces are exported.
    pub fn exports_traces(&self) -> bool {
        #[cfg(feature = "otel")]
        return self.tracing.is_some();
        #[cfg(not(feature = "otel"))]
        false
    }

    /// Exports the traces still queued (blocks; call it after the runtime's `block_on` and
    /// before the runtime is dropped). No-op without traces.
    pub fn shutdown(&self) {
        #[cfg(feature = "otel")]
        if let Some(t) = &self.tracing {
            t.shutdown();
        }
    }
}

/// `RUST_LOG`, else `info`; the MCP SDK's own lines are off unless `RUST_LOG` names `rmcp`
/// (they hold a request's `server_url` whole, query values included; the gateway logs MCP
/// failures itself, redacted).
fn env_filter() -> EnvFilter {
    let given = std::env::var("RUST_LOG").ok().filter(|v| !v.trim().is_empty());
    let filter = given.as_deref().map_or_else(|| EnvFilter::new("info"), EnvFilter::new);
    match (given.as_deref().is_some_and(|v| v.contains("rmcp")), "rmcp=off".parse()) {
        (false, Ok(off)) => filter.add_directive(off),
        _ => filter,
    }
}

/// The stderr layer in `format`: text (colored on a terminal), or one JSON object per line
/// with the event's fields at the top level, `span` (the current span's fields) and `spans`
/// (every enclosing span's, outermost first).
fn fmt_layer<S>(format: LogFormat) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    match format {
        // Colored on a terminal; else the same layout written lean (`telemetry::text`).
        LogFormat::Text if std::io::IsTerminal::is_terminal(&std::io::stderr()) => layer.with_ansi(true).boxed(),
        LogFormat::Text => layer.with_ansi(false).event_format(super::text::LeanText).fmt_fields(super::text::LeanFields).boxed(),
        LogFormat::Json => layer.json().flatten_event(true).with_current_span(true).with_span_list(true).boxed(),
    }
}

/// Installs the process's subscriber: the log in `format` on stderr (filtered by `RUST_LOG`,
/// default `info`), and with `traces` (`[otel]` and the runtime its exports run on) and the
/// `otel` feature, when [`OtelConfig::wanted`], the trace exporter. Without the feature, a
/// set `[otel]` is a warning. Errors: a subscriber is already installed; the exporter could
/// not be built (e.g. an invalid `OTEL_EXPORTER_OTLP_ENDPOINT`).
pub fn init(format: LogFormat, traces: Option<(&OtelConfig, &tokio::runtime::Handle)>) -> anyhow::Result<LogGuard> {
    let traces = traces.filter(|(otel, _)| otel.wanted());
    #[cfg(feature = "otel")]
    if let Some((otel, rt)) = traces {
        let tracing = super::otel::Tracing::new(super::otel::provider(otel, rt.clone())?);
        // Each layer its own filter: the log follows RUST_LOG, the traces their own.
        tracing_subscriber::registry()
            .with(fmt_layer(format).with_filter(env_filter()))
            .with(super::otel::layer(tracing.provider()))
            .try_init()?;
        return Ok(LogGuard { tracing: Some(tracing) });
    }
    tracing_subscriber::registry().with(env_filter()).with(fmt_layer(format)).try_init()?;
    #[cfg(not(feature = "otel"))]
    if traces.is_some_and(|(otel, _)| otel.enabled || otel.endpoint.is_some()) {
        tracing::warn!("[otel] is set, but this build has no OpenTelemetry support (cargo feature `otel`): no traces are exported");
    }
    Ok(LogGuard::default())
}
