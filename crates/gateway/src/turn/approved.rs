//! The calls a request approved (issue 18 "Approvals"), run before the first round: each
//! one as its tool's item under its approval request (`approval_request_id`), its result put
//! in place of the placeholder the transcript's build left. A call whose tool this request
//! does not offer, or whose arguments no longer fit its schema, is not run: the model reads why.

use crate::events::emitter::Emitter;
use crate::events::file_citations::FileSources;
use crate::tools::{BindCtx, ToolSet};
use crate::transcript::Transcript;
use crate::turn::execute::{self, Executed, Observed};

/// How the approved calls run: the loop's bounds, who is told, and the turn's cancel.
#[derive(Clone, Copy)]
pub struct Running<'a> {
    /// `[tools] max_parallel`.
    pub max_parallel: usize,
    /// `[tools] call_timeout_ms`.
    pub call_timeout: std::time::Duration,
    pub observed: Observed<'a>,
    pub cancel: &'a tokio_util::sync::CancellationToken,
}

/// Runs `transcript.approved` (emptied). Returns how many calls ran and what they gave
/// (their results are in the transcript already).
pub async fn run(
    transcript: &mut Transcript,
    tools: &ToolSet,
    bind_ctx: BindCtx<'_>,
    emitter: &mut Emitter,
    files: &mut FileSources,
    running: Running<'_>,
) -> (u64, Executed) {
    let Running { max_parallel, call_timeout, observed, cancel } = running;
    let mut bound = Vec::new();
    for (id, _) in std::mem::take(&mut transcript.approved) {
        let Some(call) = transcript.call(&id).cloned() else { continue };
        let Some(entry) = tools.lookup(&call.name) else {
            let text = format!("error: the approved call of '{}' could not run: this request does not offer that tool.", call.name);
            transcript.set_tool_result(&id, text);
            continue;
        };
        let bound_call = execute::validate(entry, &call.arguments).and_then(|args| entry.tool.bind(&id, &args, &BindCtx { native: false, ..bind_ctx }));
        match bound_call {
            Ok(mut invocation) => {
                invocation.under_approval(&id);
                bound.push((call.name.clone(), invocation));
            }
            Err(text) => {
                transcript.set_tool_result(&id, text);
            }
        }
    }
    let ran = bound.len() as u64;
    if bound.is_empty() {
        return (0, Executed::default());
    }
    let done = execute::run_calls(bound, emitter, max_parallel, call_timeout, files, observed, cancel).await;
    for r in &done.results {
        transcript.set_tool_result(&r.call_id, r.content.clone());
    }
    (ran, done)
}
