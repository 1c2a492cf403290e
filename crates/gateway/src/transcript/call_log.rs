//! The calls of a transcript being built and whether an output answered each: what the
//! checks on calls, outputs and approval responses look up.

use std::collections::HashMap;

use protocol::ApiError;

/// Records a replayed call's `call_id` in `calls`; false when it repeats a call of the stored
/// transcript (its first `stored` entries: a client that sends the call again with its
/// output), which is then not added twice. Errors (400 naming `{param}.call_id`): an empty
/// `call_id`, or one that an earlier item of this input already used.
pub(super) fn new_call(calls: &mut CallLog, stored: usize, call_id: &str, param: &str) -> Result<bool, ApiError> {
    if call_id.trim().is_empty() {
        return Err(empty_call_id(param));
    }
    match calls.index.get(call_id) {
        Some(&pos) if pos < stored => Ok(false),
        Some(_) => Err(ApiError::invalid(
            format!("{param}.call_id"),
            format!("Duplicate call_id {call_id}: each tool call in the input needs its own call_id."),
        )),
        None => {
            calls.index.insert(call_id.to_string(), calls.ids.len());
            calls.ids.push((call_id.to_string(), false));
            Ok(true)
        }
    }
}

/// Every call's id and whether an output answered it, in order, with an index by id (a long
/// replayed history must not cost a scan per item).
pub(super) struct CallLog {
    pub(super) ids: Vec<(String, bool)>,
    pub(super) index: HashMap<String, usize>,
}

impl CallLog {
    pub(super) fn new(ids: Vec<(String, bool)>) -> Self {
        let index = ids.iter().enumerate().map(|(i, (id, _))| (id.clone(), i)).collect();
        CallLog { ids, index }
    }
}

pub(super) fn empty_call_id(param: &str) -> ApiError {
    ApiError::invalid(format!("{param}.call_id"), format!("Invalid '{param}.call_id': empty string.")).with_code("empty_string")
}

