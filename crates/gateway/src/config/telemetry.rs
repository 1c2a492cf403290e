//! `[log]` (the log's format) and `[otel]` (OpenTelemetry traces, with the `otel` cargo
//! feature). Documented in `docs/configuration.md` "Traces and logs".

use serde::{Deserialize, Serialize};

/// `log.format` (`--log-format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable lines (colored on a terminal).
    #[default]
    Text,
    /// One JSON object per line (tracing-subscriber's JSON formatter).
    Json,
}

/// `[log]`: what the process writes to stderr. Which lines is `RUST_LOG` (default `info`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `text` (default) or `json`; `--log-format` overrides it.
    pub format: LogFormat,
}

/// `[otel]`: OpenTelemetry traces over OTLP/HTTP (protobuf). Only a gateway built with the
/// `otel` cargo feature exports; another one warns at start when `enabled` is set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OtelConfig {
    /// Export traces. Also on, with this false, when `OTEL_EXPORTER_OTLP_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and `OTEL_SDK_DISABLED` is not `true`).
    pub enabled: bool,
    /// The collector's OTLP/HTTP base URL, e.g. `http://127.0.0.1:4318` (`/v1/traces` is
    /// appended). Unset: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is), then
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended), then `http://localhost:4318`.
    pub endpoint: Option<String>,
    /// `service.name` of the traces. Unset: `OTEL_SERVICE_NAME`, then `responses-gateway`.
    pub service_name: Option<String>,
    /// Timeout of one export request, in milliseconds. Default 10000.
    pub timeout_ms: u64,
}

impl Default for OtelConfig {
    fn default() -> Self {
        OtelConfig { enabled: false, endpoint: None, service_name: None, timeout_ms: 10_000 }
    }
}

impl OtelConfig {
    /// True when traces are to be exported: `enabled`, `endpoint` set, or one of the standard
    /// endpoint variables set (non-empty), unless `OTEL_SDK_DISABLED=true` or
    /// `OTEL_TRACES_EXPORTER=none`.
    pub fn wanted(&self) -> bool {
        let env = |k: &str| std::env::var(k).ok().map(|v| v.trim().to_ascii_lowercase()).filter(|v| !v.is_empty());
        if env("OTEL_SDK_DISABLED").as_deref() == Some("true") || env("OTEL_TRACES_EXPORTER").as_deref() == Some("none") {
            return false;
        }
        self.enabled
            || self.endpoint.as_deref().is_some_and(|e| !e.trim().is_empty())
            || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
            || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
    }
}
