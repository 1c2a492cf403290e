//! Gateway-owned calls at the end of a round: validation against the tool's schema, then
//! parallel execution (bounded, each with its own timeout) with their items and events.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use protocol::output::ItemStatus;
use serde_json::Value;

use crate::events::emitter::Emitter;
use crate::executors::ServerTool;
use crate::tools::{custom, ToolEntry};

/// A validated gateway call, ready to run.
#[derive(Debug, Clone)]
pub struct GatewayCall {
    pub call_id: String,
    pub name: String,
    /// The raw input (for custom tools, the decoded `input` string).
    pub input: String,
    pub executor: Arc<dyn ServerTool>,
}

/// What the model reads back for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
}

/// Validates a gateway call's arguments: valid JSON that matches the tool's parameter
/// schema. `Err` is the message the model receives instead of an execution.
pub fn validate(entry: &ToolEntry, arguments: &str) -> Result<String, String> {
    let args: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("error: the arguments of '{}' are not valid JSON ({e}). Call it again with a JSON object.", entry.name))?;
    let validator = jsonschema::validator_for(&entry.upstream.parameters)
        .map_err(|e| format!("error: the tool's schema is invalid: {e}"))?;
    if let Some(problem) = validator.iter_errors(&args).next() {
        return Err(format!(
            "error: the arguments of '{}' do not match its schema: {problem} (at '{}'). Call it again with valid arguments.",
            entry.name,
            problem.instance_path()
        ));
    }
    Ok(match args.get(custom::INPUT_PARAM) {
        Some(Value::String(s)) if entry.kind.is_custom() => s.clone(),
        _ => arguments.to_string(),
    })
}

/// Runs `calls`: each gets its progress message (streams only) and its `custom_tool_call`
/// item first; then they execute in parallel (at most `max_parallel`, each bounded by
/// `timeout`) and each result is recorded, in call order, as the call's `done` plus a
/// `custom_tool_call_output`. A failure or timeout is an output starting `error: ` with
/// `status: "incomplete"`, never an empty success.
pub async fn run_calls(calls: Vec<GatewayCall>, emitter: &mut Emitter, max_parallel: usize, timeout: Duration) -> Vec<ToolResult> {
    let mut indices = Vec::with_capacity(calls.len());
    for c in &calls {
        emitter.progress(&c.executor.progress(&c.input));
        let idx = emitter.custom_call_start(c.call_id.clone(), c.name.clone(), None);
        emitter.call_delta(idx, c.input.clone());
        indices.push(idx);
    }
    let futures: Vec<BoxFuture<'static, (String, ItemStatus)>> = calls
        .iter()
        .map(|c| {
            let (executor, input) = (c.executor.clone(), c.input.clone());
            let fut: BoxFuture<'static, (String, ItemStatus)> = Box::pin(async move {
                match tokio::time::timeout(timeout, executor.run(&input)).await {
                    Ok(Ok(out)) => (out, ItemStatus::Completed),
                    Ok(Err(e)) => (format!("error: {e}"), ItemStatus::Incomplete),
                    Err(_) => (format!("error: the tool timed out after {} ms", timeout.as_millis()), ItemStatus::Incomplete),
                }
            });
            fut
        })
        .collect();
    let runs = futures_util::stream::iter(futures).buffered(max_parallel.max(1));
    futures_util::pin_mut!(runs);
    let mut results = Vec::with_capacity(calls.len());
    let mut i = 0;
    while let Some((output, status)) = runs.next().await {
        let (call, idx) = (&calls[i], indices[i]);
        emitter.call_done(idx, call.input.clone(), ItemStatus::Completed);
        emitter.custom_call_output(call.call_id.clone(), output.clone(), status);
        results.push(ToolResult { call_id: call.call_id.clone(), content: output });
        i += 1;
    }
    results
}
