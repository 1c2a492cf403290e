//! The `compaction` item's summary (issue 29; contract 2026 §W2.3): sealed into the item's
//! `encrypted_content` ([`Purpose::Compaction`]) and, when the item comes back as input,
//! opened and given to the model in place of everything before it, as one user message
//! that starts with [`SUMMARY_INTRO`].

use serde::{Deserialize, Serialize};

use super::{Entry, UserPart};
use crate::seal::{OpenError, Purpose, Sealer};

/// How the summary is introduced to the model: the first line of the user message that
/// stands for the compacted history (docs/behaviour.md "Compaction").
pub const SUMMARY_INTRO: &str = "[Summary of the earlier conversation, written when it was compacted. The messages it summarizes are no longer shown.]";

/// The sealed plaintext: JSON `{"summary": text}` (versioned by the blob's prefix).
#[derive(Serialize, Deserialize)]
struct Sealed {
    summary: String,
}

/// Seals `summary` as a compaction item's `encrypted_content` (a `rgs1.` blob).
pub fn seal_summary(sealer: &Sealer, summary: &str) -> String {
    let plain = serde_json::to_vec(&Sealed { summary: summary.to_string() }).unwrap_or_default();
    sealer.seal(Purpose::Compaction, &plain)
}

/// Opens a compaction item's `encrypted_content`. Errors: [`OpenError`] (not this
/// gateway's, changed, sealed with another key or for another purpose, or not a summary).
pub fn open_summary(sealer: &Sealer, blob: &str) -> Result<String, OpenError> {
    let plain = sealer.open(Purpose::Compaction, blob)?;
    serde_json::from_slice::<Sealed>(&plain).map(|s| s.summary).map_err(|_| OpenError::Tampered)
}

/// The transcript entry that stands for the compacted history.
pub fn summary_entry(summary: &str) -> Entry {
    Entry::User(vec![UserPart::Text(format!("{SUMMARY_INTRO}\n\n{summary}"))])
}

/// True for the entry [`summary_entry`] made (it is not one of the user's messages).
pub fn is_summary(entry: &Entry) -> bool {
    matches!(entry, Entry::User(parts) if matches!(parts.first(), Some(UserPart::Text(t)) if t.starts_with(SUMMARY_INTRO)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_opens_and_a_changed_or_reasoning_blob_does_not() {
        let sealer = Sealer::new(&[7u8; 32]);
        let blob = seal_summary(&sealer, "the user wants X");
        assert_eq!(open_summary(&sealer, &blob).unwrap(), "the user wants X");
        let mut changed = blob.clone();
        let last = changed.pop().unwrap();
        changed.push(if last == 'A' { 'B' } else { 'A' });
        assert!(open_summary(&sealer, &changed).is_err());
        let reasoning = sealer.seal(Purpose::Reasoning, br#"{"summary":"x"}"#);
        assert_eq!(open_summary(&sealer, &reasoning), Err(OpenError::Tampered));
        assert_eq!(open_summary(&Sealer::new(&[8u8; 32]), &blob), Err(OpenError::Tampered));
        assert_eq!(open_summary(&sealer, "gAAAAforeign"), Err(OpenError::Foreign));
        assert!(is_summary(&summary_entry("s")));
        assert!(!is_summary(&Entry::User(vec![UserPart::Text("hello".into())])));
    }
}
