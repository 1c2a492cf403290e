//! `POST /v1/responses/compact` in the service (issue 29): admission, the window prepared as
//! a create request is, and the summary call of [`turn::compact`].

use serde_json::Value;

use super::{App, Caller, Origin, Refusal};
use crate::error::GatewayError;
use crate::turn::{self, continuation::Previous};

/// The fields of a `POST /v1/responses/compact` body (contract 2026 §W2.1) that shape the
/// window; the others (`prompt_cache_*`, `service_tier`, `image`) are accepted and ignored.
const COMPACT_FIELDS: [&str; 5] = ["model", "input", "instructions", "previous_response_id", "tools"];

impl App {
    /// `POST /v1/responses/compact` (contract 2026 §W2; issue 29): the window (`input`
    /// and/or `previous_response_id`, with `instructions` and `tools` as on create) is
    /// prepared as a `store: false` create request would be (the same checks and 400s),
    /// then summarized by the upstream ([`turn::compact::compact`]). Answers the
    /// `response.compaction` object `{id, object, created_at, output, usage}`; nothing is
    /// stored. Errors: 400 for a body that is not a JSON object, a missing `model`
    /// (`missing_required_parameter`), neither `input` nor `previous_response_id`; the
    /// create request's 4xx; `[limits]` refusals; 502 when the summary call fails.
    pub async fn compact(&self, caller: Caller<'_>, body: &[u8]) -> Result<serde_json::Value, Refusal> {
        if !caller.rate_counted {
            self.admission.request(caller.key).map_err(Refusal::Limited)?;
        }
        let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
            return Err(GatewayError::bad_request(None, "The request body must be a JSON object.").with_code("invalid_body").into());
        };
        if fields.get("model").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(GatewayError::bad_request(Some("model".to_string()), "Missing required parameter: 'model'.").with_code("missing_required_parameter").into());
        }
        let present = |k: &str| fields.get(k).is_some_and(|v| !v.is_null());
        if !present("input") && !present("previous_response_id") {
            return Err(GatewayError::bad_request(Some("input".to_string()), "Missing required parameter: provide 'input', 'previous_response_id', or both.")
                .with_code("missing_required_parameter")
                .into());
        }
        let mut create: serde_json::Map<String, Value> = fields.into_iter().filter(|(k, v)| COMPACT_FIELDS.contains(&k.as_str()) && !v.is_null()).collect();
        create.insert("store".to_string(), Value::Bool(false));
        let create_body = serde_json::to_vec(&create).unwrap_or_default();
        let parsed = turn::parse_request(&create_body).map_err(GatewayError::from)?;
        let _upstream_slot = self.admission.upstream().await.map_err(Refusal::Limited)?;
        let ctx = self.context(caller.project, Origin::Request, Previous::Store);
        let prepared = Box::pin(turn::prepare(parsed, &create_body, &ctx)).await?;
        let compacted = turn::compact::compact(self.upstream.as_ref(), &prepared.upstream_model, &prepared.transcript, &self.sealer).await?;
        tracing::info!(model = %prepared.upstream_model, summary_chars = compacted.summary.chars().count(), "compacted a window");
        let created_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Ok(serde_json::json!({
            "id": crate::events::ids::new_id("resp"),
            "object": "response.compaction",
            "created_at": created_at,
            "output": compacted.output,
            "usage": compacted.usage,
        }))
    }
}
