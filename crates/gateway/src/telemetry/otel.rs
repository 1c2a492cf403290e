//! OpenTelemetry traces (the `otel` cargo feature, `[otel]`): the turn's `tracing` spans
//! (`request` → `turn` → `round` → `tool_call`) go through `tracing-opentelemetry` to a batch
//! span processor and out over OTLP/HTTP (protobuf). The core knows none of this: it makes
//! plain `tracing` spans. The HTTP client is the gateway's reqwest; its requests run on the
//! gateway's tokio runtime (the batch processor's own thread waits for them).

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::FilterFn;
use tracing_subscriber::Layer;

use crate::config::telemetry::OtelConfig;

/// The default `service.name` (when neither `otel.service_name` nor `OTEL_SERVICE_NAME` is set).
pub const SERVICE_NAME: &str = "responses-gateway";

/// What the traces get, whatever `RUST_LOG` says of the log: the gateway's own spans, DEBUG
/// and up (`round` and `tool_call` are DEBUG), and its events, INFO and up (as span events).
pub fn filter() -> FilterFn {
    FilterFn::new(traced as fn(&tracing::Metadata<'_>) -> bool)
}

fn traced(meta: &tracing::Metadata<'_>) -> bool {
    let floor = if meta.is_span() { tracing::Level::DEBUG } else { tracing::Level::INFO };
    meta.target().starts_with("responses_gateway") && *meta.level() <= floor
}

/// The `tracing` layer that turns spans into OpenTelemetry spans of `provider`'s tracer,
/// filtered by [`filter`].
pub fn layer<S>(provider: &SdkTracerProvider) -> impl Layer<S> + Send + Sync
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
{
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer(SERVICE_NAME))
        .with_threads(false)
        // No busy/idle times: they cost two clock reads each time a span is entered or left,
        // and the turn's span is entered on every poll of its task.
        .with_tracked_inactivity(false)
        .with_filter(filter())
}

/// A tracer provider exporting to the OTLP/HTTP collector of `config` (or of the standard
/// `OTEL_EXPORTER_OTLP_*` variables) in batches (`OTEL_BSP_*`), sampled as
/// `OTEL_TRACES_SAMPLER` says (default: the parent's decision, else every trace). Export
/// requests run on `rt`. Errors: an invalid endpoint or header variable.
pub fn provider(config: &OtelConfig, rt: tokio::runtime::Handle) -> anyhow::Result<SdkTracerProvider> {
    Ok(with_exporter(exporter(config, rt)?, config))
}

/// The OTLP/HTTP exporter of `config`, its requests on `rt`.
pub fn exporter(config: &OtelConfig, rt: tokio::runtime::Handle) -> anyhow::Result<SpanExporter> {
    crate::crypto::install();
    let timeout = Duration::from_millis(config.timeout_ms);
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| anyhow::anyhow!("the OTLP HTTP client: {}", e.without_url()))?;
    let mut builder = SpanExporter::builder()
        .with_http()
        .with_http_client(OnRuntime { client, rt })
        .with_protocol(Protocol::HttpBinary)
        .with_timeout(timeout);
    if let Some(base) = config.endpoint.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
        builder = builder.with_endpoint(traces_url(base));
    }
    // The error may quote the endpoint, which may hold credentials: not repeated.
    builder.build().map_err(|e| anyhow::anyhow!("[otel]: the OTLP exporter could not be built ({})", redact_error(&e.to_string())))
}

/// A provider exporting through `exporter` in batches, with the service name of `config`.
pub fn with_exporter(exporter: impl opentelemetry_sdk::trace::SpanExporter + 'static, config: &OtelConfig) -> SdkTracerProvider {
    let mut resource = Resource::builder();
    let from_env = std::env::var("OTEL_SERVICE_NAME").ok().filter(|s| !s.trim().is_empty());
    match (&config.service_name, from_env) {
        (Some(name), _) => resource = resource.with_service_name(name.clone()),
        (None, Some(_)) => {}
        (None, None) => resource = resource.with_service_name(SERVICE_NAME),
    }
    SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build()).build()
}

/// `{base}/v1/traces` (as the SDK does with `OTEL_EXPORTER_OTLP_ENDPOINT`).
fn traces_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

/// An error text without what looks like a URL's user info.
fn redact_error(text: &str) -> String {
    text.split(' ')
        .map(|word| match (word.find("://"), word.rfind('@')) {
            (Some(s), Some(at)) if at > s + 3 => format!("{}***@{}", &word[..s + 3], &word[at + 1..]),
            _ => word.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The exporter's HTTP client: reqwest on the gateway's runtime. The batch processor calls
/// it from its own thread (outside any runtime); the request is spawned on `rt` and
/// awaited from there. Errors never carry the URL (it may hold credentials).
#[derive(Debug, Clone)]
struct OnRuntime {
    client: reqwest::Client,
    rt: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let sent = self.rt.spawn(async move {
            let request = reqwest::Request::try_from(request).map_err(|e| e.without_url().to_string())?;
            let response = client.execute(request).await.map_err(|e| e.without_url().to_string())?;
            let status = response.status();
            // The collector's answer is small (a partial-success message at most).
            let body = response.bytes().await.map_err(|e| e.without_url().to_string())?;
            Response::builder().status(status).body(body).map_err(|e| e.to_string())
        });
        match sent.await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(message)) => Err(message.into()),
            Err(e) => Err(format!("the export task ended: {e}").into()),
        }
    }
}

/// What keeps the exporter running; [`Tracing::shutdown`] exports what is left.
#[derive(Debug, Clone)]
pub struct Tracing {
    provider: SdkTracerProvider,
}

impl Tracing {
    /// Wraps `provider`.
    pub fn new(provider: SdkTracerProvider) -> Tracing {
        Tracing { provider }
    }

    /// The tracer provider.
    pub fn provider(&self) -> &SdkTracerProvider {
        &self.provider
    }

    /// Exports the spans still queued and stops the exporter (blocks; call it outside the
    /// runtime, which must still be running). A failure is logged.
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "exporting the last traces failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_errors() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/base/"), "http://c:4318/base/v1/traces");
        assert_eq!(redact_error("invalid endpoint 'http://u:pw@h:1/x': bad"), "invalid endpoint 'http://***@h:1/x': bad");
    }
}
