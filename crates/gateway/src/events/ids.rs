//! Item and response ids: a type prefix (`resp_`, `msg_`, `fc_`, `ctc_`, … as in contract §5)
//! and 32 random hex digits.

/// A new id with `prefix`, e.g. `new_id("msg")` → `msg_3f…`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{:032x}", rand::random::<u128>())
}

/// Id prefix of progress (commentary) messages that exist only in streams; a replayed
/// message with this prefix is dropped.
pub const PROGRESS_ID_PREFIX: &str = "msg_progress_";
