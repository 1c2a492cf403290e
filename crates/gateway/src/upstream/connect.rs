//! The upstream of `[upstream]` as a [`ModelClient`]: its registration point, where each
//! wire API's adapter is chosen.

use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::upstream::chat::ChatCompletions;
use crate::upstream::{ModelClient, UpstreamApi, UpstreamCaps};

/// Builds the configured upstream. Errors: `upstream.url` unset or not a URL, the key's
/// variable named but unset, or the HTTP client could not be built.
pub fn connect(config: &Config) -> anyhow::Result<Arc<dyn ModelClient>> {
    let u = &config.upstream;
    let url = u.url.clone().ok_or_else(|| anyhow::anyhow!("upstream.url is not set"))?;
    let caps = UpstreamCaps { api: UpstreamApi::ChatCompletions, native_tools: u.native_tools.clone() };
    let chat = ChatCompletions::new(
        &url,
        config.upstream_api_key()?,
        Duration::from_millis(u.idle_timeout_ms),
        Duration::from_millis(u.connect_timeout_ms),
        Duration::from_millis(u.pool_idle_timeout_ms),
    )?
    .with_caps(caps);
    Ok(Arc::new(chat))
}
