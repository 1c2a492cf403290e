//! `context_management: [{"type": "compaction", "compact_threshold": N}]` (contract 2026
//! §W2.4; issue 29): compaction inside a turn. Before each upstream round the transcript's
//! size is estimated; once it passes the threshold the gateway compacts it in-line (the
//! summary call of [`super::compact`]), emits the `compaction` output item and goes on with
//! the compacted transcript: the summary, then the user's last message. At most once per
//! turn, so it never loops.
//!
//! The estimate is the larger of the last round's `input_tokens + output_tokens` (the
//! upstream's own count, exact for what it covers but blind to the tool results added
//! since) and the transcript's JSON length / 4 (a character heuristic: within about a third
//! for English text, lower for code and non-Latin scripts, where it undercounts).

use protocol::output::OutputItem;
use protocol::response::Usage;
use protocol::ApiError;
use serde_json::Value;

use crate::events::Emitter;
use crate::seal::Sealer;
use crate::transcript::compaction::{is_summary, summary_entry};
use crate::transcript::{Entry, Transcript};
use crate::upstream::ModelClient;

/// The smallest `compact_threshold` (as at OpenAI).
pub const MIN_THRESHOLD: u64 = 1000;

/// `context_management` checked: the compaction threshold (tokens), `None` when no entry
/// asks for compaction or none gives a threshold (then nothing is compacted). Errors (400
/// naming the entry): not a list, an entry that is not an object, a `type` other than
/// `compaction`, a threshold that is not an integer of at least [`MIN_THRESHOLD`].
pub fn threshold(value: Option<&Value>) -> Result<Option<u64>, ApiError> {
    let list = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(ApiError::invalid(Some("context_management".to_string()), "Invalid 'context_management': expected a list.").with_code("invalid_type")),
    };
    let mut found = None;
    for (i, entry) in list.iter().enumerate() {
        let param = format!("context_management[{i}]");
        if entry.get("type").and_then(Value::as_str) != Some("compaction") {
            return Err(ApiError::invalid(format!("{param}.type"), format!("Invalid '{param}.type': expected 'compaction'.")).with_code("invalid_value"));
        }
        match entry.get("compact_threshold") {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_u64() {
                Some(n) if n >= MIN_THRESHOLD => found = Some(n),
                _ => {
                    return Err(ApiError::invalid(
                        format!("{param}.compact_threshold"),
                        format!("Invalid '{param}.compact_threshold': expected an integer of at least {MIN_THRESHOLD}."),
                    )
                    .with_code("invalid_value"))
                }
            },
        }
    }
    Ok(found)
}

/// One turn's automatic compaction state.
#[derive(Debug)]
pub struct AutoCompact {
    threshold: Option<u64>,
    done: bool,
    last_round: Option<Usage>,
}

impl AutoCompact {
    /// For a turn with this threshold (`None`: never compacts).
    pub fn new(threshold: Option<u64>) -> Self {
        AutoCompact { threshold, done: false, last_round: None }
    }

    /// Records a finished round's usage (the next estimate's first half).
    pub fn round_done(&mut self, usage: &Usage) {
        self.last_round = Some(*usage);
    }

    /// The transcript's estimated size in tokens (see the module's doc).
    pub fn estimate(&self, t: &Transcript) -> u64 {
        let chars = serde_json::to_string(&t.entries).map_or(0, |s| s.len()) as u64;
        let counted = self.last_round.map_or(0, |u| u.input_tokens + u.output_tokens);
        counted.max(chars / 4)
    }

    /// Before a round: compacts `transcript` when its estimate passes the threshold and
    /// this turn has not compacted yet; emits the `compaction` item and returns the summary
    /// call's usage. A failed summary call is logged and the turn goes on uncompacted.
    pub async fn before_round(&mut self, upstream: &dyn ModelClient, model: &str, transcript: &mut Transcript, sealer: Option<&Sealer>, emitter: &mut Emitter) -> Option<Usage> {
        let (Some(threshold), Some(sealer)) = (self.threshold, sealer) else { return None };
        if self.done || self.estimate(transcript) < threshold {
            return None;
        }
        self.done = true;
        let compacted = match super::compact::compact(upstream, model, transcript, sealer).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e.error.message, "automatic compaction failed; the turn goes on uncompacted");
                return None;
            }
        };
        let last_user = transcript.entries.iter().rev().find(|e| matches!(e, Entry::User(_)) && !is_summary(e)).cloned();
        transcript.entries = vec![summary_entry(&compacted.summary)];
        transcript.entries.extend(last_user);
        let item = compacted.output.last().and_then(|i| Some((i.get("id")?.as_str()?.to_string(), i.get("encrypted_content")?.as_str()?.to_string())));
        if let Some((id, encrypted_content)) = item {
            let item = OutputItem::Compaction { id, encrypted_content };
            emitter.add_done_item(item.clone(), item);
        }
        tracing::info!(threshold, summary_chars = compacted.summary.chars().count(), "compacted the transcript inside a turn");
        Some(compacted.usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_is_checked() {
        assert_eq!(threshold(None).unwrap(), None);
        assert_eq!(threshold(Some(&serde_json::json!([{"type":"compaction","compact_threshold":5000}]))).unwrap(), Some(5000));
        assert_eq!(threshold(Some(&serde_json::json!([{"type":"compaction"}]))).unwrap(), None);
        let e = threshold(Some(&serde_json::json!([{"type":"compaction","compact_threshold":999}]))).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("context_management[0].compact_threshold"));
        let e = threshold(Some(&serde_json::json!([{"type":"truncation"}]))).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("context_management[0].type"));
        assert!(threshold(Some(&serde_json::json!({"type":"compaction"}))).is_err());
    }
}
