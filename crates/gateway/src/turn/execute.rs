//! Gateway-owned calls at the end of a round: validation against the tool's schema, then
//! the bound invocations run in parallel (bounded, each with its own timeout), their items
//! and events encoded by their tool types (`tools::duties`), in call order.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use protocol::response::Usage;
use serde_json::Value;
use tokio::time::Instant;
use tracing::Instrument;

use crate::events::citations::Source;
use crate::events::emitter::Emitter;
use crate::events::file_citations::FileSources;
use crate::tools::{Invocation, Ran, RunStatus, ToolEntry};
use crate::turn::observer::{ToolOutcome, ToolReport, TurnInfo, TurnObserver};

/// What the model reads back for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
    /// The typed continuation item of a natively declared hosted tool's call.
    pub continuation: Option<Value>,
}

/// The results of one round's gateway calls.
#[derive(Debug, Default)]
pub struct Executed {
    pub results: Vec<ToolResult>,
    /// Sources found by searches (for `url_citation`s).
    pub sources: Vec<Source>,
    /// Usage of private upstream calls made by executors.
    pub usage: Usage,
    /// `(item id, call id, key)` of each private result of the round (web search results
    /// by the search's item, keyed by its query).
    pub private: Vec<(String, String, String)>,
    /// Declarations the round's searches loaded (issue 31).
    pub loads: Vec<Value>,
}

/// Validates a gateway call's arguments: valid JSON that matches the tool's parameter
/// schema. Returns the parsed arguments; `Err` is the message the model receives instead of
/// an execution.
pub fn validate(entry: &ToolEntry, arguments: &str) -> Result<Value, String> {
    let args: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("error: the arguments of '{}' are not valid JSON ({e}). Call it again with a JSON object.", entry.name))?;
    let validator = validator_for(&entry.upstream.parameters)?;
    if let Some(problem) = validator.iter_errors(&args).next() {
        return Err(format!(
            "error: the arguments of '{}' do not match its schema: {problem} (at '{}'). Call it again with valid arguments.",
            entry.name,
            problem.instance_path()
        ));
    }
    Ok(args)
}

/// Compiled parameter schemas, by their JSON text: a gateway tool's schema is the same on
/// every request, so it is compiled once (bounded; cleared when full).
static VALIDATORS: LazyLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = LazyLock::new(Default::default);

fn validator_for(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
    let key = schema.to_string();
    let mut cache = VALIDATORS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(v) = cache.get(&key) {
        return Ok(v.clone());
    }
    let v = Arc::new(jsonschema::validator_for(schema).map_err(|e| format!("error: the tool's schema is invalid: {e}"))?);
    if cache.len() >= 256 {
        cache.clear();
    }
    cache.insert(key, v.clone());
    Ok(v)
}

/// Who is told of each finished call.
#[derive(Clone, Copy)]
pub struct Observed<'a> {
    pub observer: &'a dyn TurnObserver,
    pub info: &'a TurnInfo,
}

/// Runs `calls`, each with the name the model called it by. Each is first started (its
/// progress message, streams only, and its item); then they run in parallel (at most
/// `max_parallel`, each bounded by `timeout`) and each is finished in call order. A failure
/// or timeout is visible in the item and in the text the model reads; it is never an empty
/// success. File-search chunks are numbered on from `files` (the turn's earlier chunks) and
/// appended to it. Each call runs in a `tool_call` span (DEBUG, a child of the current span):
/// `tool_type`, `name`, `call_id`, `item_id`, `executor`, and at its end `outcome` (`ok`,
/// `error`, `timeout`; not `ok`: `otel.status_code = "error"`).
pub async fn run_calls(
    calls: Vec<(String, Box<dyn Invocation>)>,
    emitter: &mut Emitter,
    max_parallel: usize,
    timeout: Duration,
    files: &mut FileSources,
    observed: Observed<'_>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Executed {
    let mut spans = Vec::with_capacity(calls.len());
    let calls: Vec<Box<dyn Invocation>> = calls
        .into_iter()
        .map(|(name, mut c)| {
            c.start(emitter);
            let (tool_type, executor) = c.labels();
            // The call's item is the last one its `start` added.
            spans.push(tracing::debug_span!(
                "tool_call",
                tool_type,
                name = %name,
                call_id = c.call_id(),
                item_id = %emitter.last_item_id(),
                executor = %executor,
                outcome = tracing::field::Empty,
                otel.status_code = tracing::field::Empty,
            ));
            c
        })
        .collect();
    // The futures own what they need ('static): the calls stay free to be finished. A
    // cancelled turn (shutdown, a cancelled background response) stops its running calls:
    // each fails with a message the model would read.
    let runs: Vec<_> = calls
        .iter()
        .zip(&spans)
        .map(|(c, span)| {
            let run = c.run(timeout);
            let cancel = cancel.clone();
            async move {
                let began = Instant::now();
                let ran: Ran = tokio::select! {
                    ran = run => ran,
                    () = cancel.cancelled() => Ran { content: "error: the response was stopped before this call finished".into(), ..Ran::default() },
                };
                (ran, began.elapsed())
            }
            .instrument(span.clone())
        })
        .collect();
    let mut runs = futures_util::stream::iter(runs).buffered(max_parallel.max(1));
    let mut out = Executed::default();
    // In call order, each as soon as it (and those before it) ran.
    let mut calls = calls.into_iter().zip(spans);
    while let Some((ran, duration)) = runs.next().await {
        let Some((call, span)) = calls.next() else { break };
        let (tool_type, executor) = call.labels();
        let outcome = match ran.status {
            RunStatus::Ok => ToolOutcome::Ok,
            RunStatus::Error => ToolOutcome::Error,
            RunStatus::Timeout => ToolOutcome::Timeout,
        };
        span.record("outcome", outcome.as_str());
        if outcome != ToolOutcome::Ok {
            span.record("otel.status_code", "error");
        }
        observed.observer.tool_done(observed.info, &ToolReport { tool_type, executor, outcome, duration });
        let call_id = call.call_id().to_string();
        let finished = call.finish(ran, emitter, files);
        if let Some(u) = &finished.usage {
            out.usage.add(u);
        }
        for s in finished.sources {
            if !out.sources.iter().any(|k| k.url == s.url) {
                out.sources.push(s);
            }
        }
        if let Some((item_id, key)) = finished.private {
            out.private.push((item_id, call_id.clone(), key));
        }
        out.loads.extend(finished.loads);
        out.results.push(ToolResult { call_id, content: finished.content, continuation: finished.continuation });
    }
    out
}
