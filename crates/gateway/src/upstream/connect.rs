//! The upstream of `[upstream]` as a [`ModelClient`]: its registration point, where each
//! wire API's adapter is chosen (`upstream.api`: `chat` or `responses`).

use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, UpstreamApiKind};
use crate::upstream::chat::ChatCompletions;
use crate::upstream::responses::Responses;
use crate::upstream::{ModelClient, UpstreamApi, UpstreamCaps};

/// Builds the configured upstream. Errors: `upstream.url` unset or not a URL, the key's
/// variable named but unset, or the HTTP client could not be built.
pub fn connect(config: &Config) -> anyhow::Result<Arc<dyn ModelClient>> {
    let u = &config.upstream;
    let url = u.url.clone().ok_or_else(|| anyhow::anyhow!("upstream.url is not set"))?;
    let (key, idle, connect, pool_idle) = (
        config.upstream_api_key()?,
        Duration::from_millis(u.idle_timeout_ms),
        Duration::from_millis(u.connect_timeout_ms),
        Duration::from_millis(u.pool_idle_timeout_ms),
    );
    Ok(match u.api {
        UpstreamApiKind::Chat => {
            let caps = UpstreamCaps { api: UpstreamApi::ChatCompletions, native_tools: u.native_tools.clone(), reasoning_handback: u.reasoning_handback };
            Arc::new(ChatCompletions::new(&url, key, idle, connect, pool_idle)?.with_caps(caps))
        }
        UpstreamApiKind::Responses => {
            let caps = UpstreamCaps { api: UpstreamApi::Responses, native_tools: u.native_tools.clone(), reasoning_handback: u.reasoning_handback };
            Arc::new(Responses::new(&url, key, idle, connect, pool_idle)?.with_caps(caps))
        }
    })
}
