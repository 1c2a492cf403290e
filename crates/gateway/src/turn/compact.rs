//! Compaction of a prepared window (issue 29; contract 2026 §W2): the gateway asks the
//! upstream, through the same [`ModelClient`], to summarize the transcript with its own
//! prompt ([`PROMPT`]), then answers the compacted output: the user's messages of the window,
//! then one `compaction` item whose `encrypted_content` seals the summary
//! ([`crate::transcript::compaction`]). Transport-neutral: `POST /v1/responses/compact` is a
//! thin adapter over [`crate::service::App::compact`].

use futures_util::StreamExt;
use protocol::response::Usage;
use serde_json::{json, Value};

use crate::error::GatewayError;
use crate::events::ids::new_id;
use crate::seal::Sealer;
use crate::transcript::compaction::{is_summary, seal_summary};
use crate::transcript::{Entry, Transcript, UserPart};
use crate::upstream::{ModelClient, RoundRequest, Sampling, ToolChoice, UpstreamEvent};

/// The request the gateway appends, as the last user message, to the window it asks the
/// model to summarize (docs/behaviour.md "Compaction").
pub const PROMPT: &str = "Stop here: the conversation above is about to be compacted. Write a summary that will replace \
everything above, so that the conversation can go on from it alone. Keep: the user's goals, requests and \
constraints; decisions made and why; facts learned, including tool results that still matter (names, numbers, \
paths, ids); work done; and what is still open or was about to happen next. Be concise and factual, write plain \
text notes, do not address the user, and do not add anything that is not in the conversation.";

/// What a compaction answers: `output` (the user's messages of the window, then the
/// `compaction` item) and the summary call's `usage`.
#[derive(Debug)]
pub struct Compacted {
    pub output: Vec<Value>,
    pub usage: Usage,
    /// The summary the model wrote (sealed in the compaction item; not sent to the client).
    pub summary: String,
}

/// Summarizes `transcript` (the window, with the request's `instructions`) on `model`,
/// without tools. Errors: 502 `upstream_error` when the upstream call fails or the model
/// writes nothing (message says it was the compaction's call; no credentials).
pub async fn compact(upstream: &dyn ModelClient, model: &str, transcript: &Transcript, sealer: &Sealer) -> Result<Compacted, GatewayError> {
    let mut window = transcript.clone();
    window.entries.push(Entry::User(vec![UserPart::Text(PROMPT.to_string())]));
    let sampling = Sampling::default();
    let req = RoundRequest { model, transcript: &window, tools: &[], tool_choice: &ToolChoice::None, sampling: &sampling };
    let failed = |why: String| GatewayError::bad_gateway(format!("Compaction failed: the upstream model's summary call failed: {why}"), "upstream_error");
    let mut stream = upstream.stream_round(&req).await.map_err(|e| failed(e.client_message()))?;
    let (mut summary, mut usage) = (String::new(), Usage::default());
    while let Some(ev) = stream.next().await {
        match ev.map_err(|e| failed(e.client_message()))? {
            UpstreamEvent::Text(t) => summary.push_str(&t),
            UpstreamEvent::Usage(u) => usage.add(&u),
            _ => {}
        }
    }
    let summary = summary.trim().to_string();
    if summary.is_empty() {
        return Err(failed("the model wrote no summary".to_string()));
    }
    let mut output = kept_user_messages(transcript);
    output.push(json!({"id": new_id("cmp"), "type": "compaction", "encrypted_content": seal_summary(sealer, &summary)}));
    Ok(Compacted { output, usage, summary })
}

/// The user's messages of the window as output items (`input_text` / `input_image`
/// parts), in order; the summary of an earlier compaction is not one of them.
fn kept_user_messages(t: &Transcript) -> Vec<Value> {
    t.entries
        .iter()
        .filter(|e| !is_summary(e))
        .filter_map(|e| match e {
            Entry::User(parts) => Some(parts),
            _ => None,
        })
        .map(|parts| {
            let content: Vec<Value> = parts
                .iter()
                .map(|p| match p {
                    UserPart::Text(text) => json!({"type": "input_text", "text": text}),
                    UserPart::Image { url, detail } => json!({"type": "input_image", "image_url": url, "detail": detail.as_deref().unwrap_or("auto")}),
                })
                .collect();
            json!({"id": new_id("msg"), "type": "message", "role": "user", "status": "completed", "content": content})
        })
        .collect()
}
