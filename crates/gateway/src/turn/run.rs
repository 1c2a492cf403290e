//! `turn::run`: the agent loop over upstream rounds (DESIGN.md "Pipeline"). At the end
//! of a round the calls are classified by owner: gateway calls run (and are recorded)
//! first; client calls then end the turn; unknown names and invalid arguments are answered
//! with an error the model can read. The last round the budget allows has no tools.

use std::time::Duration;

use protocol::output::ItemStatus;
use protocol::request::TextFormat;
use protocol::response::Usage;
use protocol::Response;

use crate::turn::auto_compact::AutoCompact;
use crate::events::emitter::{Emitter, Terminal};
use crate::events::citations::Source;
use crate::events::file_citations::FileSources;
use std::sync::Arc;
use crate::tools::custom::arguments_from_input;
use crate::tools::{BindCtx, CallItem, Owner, ToolChoice, ToolEntry, ToolSet};
use crate::upstream::arguments;
use crate::turn::approved;
use crate::turn::repeats::Repeats;
use crate::upstream::leaked_calls;
use crate::turn::execute::{self, Observed, ToolResult};
use crate::turn::round::Round;
use crate::transcript::{Call, Entry, Thought, Transcript, UserPart};
use crate::turn::Prepared;
use crate::turn::observer::{NoObserver, RoundReport, TurnInfo, TurnObserver, TurnReport};
use crate::upstream::{FinishReason, ModelClient, RoundRequest, UpstreamError, UpstreamEvent};
use tokio::time::Instant;
use futures_util::StreamExt;
use tracing::Instrument;

/// The answer to a gateway call beyond `max_tool_calls`.
const MAX_TOOL_CALLS: &str = "error: max_tool_calls reached; this call was not executed. Answer with what you have.";

/// The answer to a client call not returned because another call of its round (of a
/// `strict` function) is asked again.
const NOT_RETURNED: &str = "error: this call was not returned because another call of this round had invalid arguments. Make it again if it is still needed.";

/// `incomplete_details.reason` of a turn whose output the gateway withheld because it broke
/// the request's constraints (a strict function's arguments invalid twice; a required tool
/// choice not honoured twice; an answer that is tool-call markup). The contract's reasons are `max_output_tokens` and
/// `content_filter`: the output was filtered, so `content_filter` is the closest.
const INVALID_REASON: &str = "content_filter";

/// Loop bounds (from `[tools]`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Upstream rounds per turn (default 8); the last one has no tools.
    pub max_rounds: usize,
    /// Gateway calls run at once (default 4).
    pub max_parallel: usize,
    /// Per gateway call (default 30 s).
    pub call_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_rounds: 8, max_parallel: 4, call_timeout: Duration::from_secs(30) }
    }
}

/// What every turn runs with: the upstream, the loop's bounds and the observer.
#[derive(Debug, Clone)]
pub struct Runner {
    pub upstream: Arc<dyn ModelClient>,
    pub limits: Limits,
    pub observer: Arc<dyn TurnObserver>,
}

impl Runner {
    /// `upstream` with `limits` and the no-op observer.
    pub fn new(upstream: Arc<dyn ModelClient>, limits: Limits) -> Runner {
        Runner { upstream, limits, observer: Arc::new(NoObserver) }
    }
}

/// How the turn ended, with the folded Response.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub response: Response,
    /// What the model saw, including this turn's output and the private gateway-tool
    /// results: a continuation (`previous_response_id`) starts from it.
    pub transcript: Transcript,
    /// Set when the turn failed because of the upstream (non-streaming → HTTP 502).
    pub upstream_error: Option<UpstreamError>,
}

/// Runs the turn to its one terminal event and returns the folded Response.
/// `runner` gives the upstream, the loop's bounds and the observer, which is told of each
/// round, the first token, each gateway call and the end. Runs in the turn's span (the
/// caller's current one, `turn::driver`): each round gets a `round` span under it, and the
/// turn's result is recorded on it.
pub async fn run(turn: Prepared, runner: &Runner, emitter: &mut Emitter) -> Outcome {
    let (upstream, limits, observer) = (&*runner.upstream, runner.limits, &*runner.observer);
    let started = Instant::now();
    let turn_span = tracing::Span::current();
    let info = TurnInfo { response_id: emitter.response().id.clone(), model: turn.upstream_model.clone(), streamed: emitter.has_sink() };
    observer.turn_started(&info);
    let mut first_token = false;
    let Prepared { upstream_model, mut transcript, mut tools, mut sampling, max_output_tokens, max_tool_calls, include, executors, cancel, cancelled_by_client, client_left, generate, sealer, compact_threshold, .. } = turn;
    let bind_ctx = BindCtx { executors: &executors, include: &include, native: false, tools: None };
    let observed = Observed { observer, info: &info };
    // Chunks shown in earlier turns keep their numbers; this turn's continue after them.
    let mut files = FileSources { enabled: tools.cites_files(), list: std::mem::take(&mut transcript.file_sources) };
    let mut sources: Vec<Source> = Vec::new();
    let mut usage = Usage::default();
    let mut executed: u64 = 0;
    emitter.start();
    if !generate {
        // A warm-up: prepared (validated, continuation loaded), no model call, no output.
        let ended = Ended { observer, info: &info, span: turn_span, started, rounds: 0, upstream_time: Duration::ZERO, tool_time: Duration::ZERO };
        return finish(&ended, emitter, transcript, &mut files, Terminal::Completed, usage, None);
    }
    // Tools known only now (MCP servers) are listed before the first round, each with its
    // item; a server that fails to list offers nothing and the turn goes on.
    Box::pin(tools.discover(emitter, &mut transcript.listings)).await;
    // Calls this request approved run first (their items lead the output).
    if !transcript.approved.is_empty() {
        let (ran, done) = Box::pin(approved::run(&mut transcript, &tools, bind_ctx, emitter, &mut files, approved::Running { max_parallel: limits.max_parallel, call_timeout: limits.call_timeout, observed, cancel: &cancel })).await;
        executed += ran;
        usage.add(&done.usage);
    }
    let mut choice = tools.choice.clone();
    let max_rounds = limits.max_rounds.max(1);
    let mut done_ctx = Ended { observer, info: &info, span: turn_span, started, rounds: 0, upstream_time: Duration::ZERO, tool_time: Duration::ZERO };
    // A strict function's invalid arguments are asked again once per turn.
    let mut strict_retried = false;
    // A forcing `tool_choice` the upstream ignored is asked again once per turn.
    let mut choice_retried = false;
    // Gateway calls made again with the same arguments are not run again (`repeats`).
    let mut repeats = Repeats::default();
    let has_tools = !tools.entries().is_empty();
    let mut compactor = AutoCompact::new(compact_threshold);
    for round_no in 0..max_rounds {
        // Cancelled between rounds (while gateway calls ran): no further round starts.
        if cancel.is_cancelled() {
            return finish(&done_ctx, emitter, transcript, &mut files, cut_short(&cancelled_by_client, &client_left), usage, None);
        }
        // `context_management`: compacted in-line once the transcript passes the threshold.
        if let Some(spent) = Box::pin(compactor.before_round(upstream, &upstream_model, &mut transcript, sealer.as_deref(), emitter)).await {
            usage.add(&spent);
        }
        // The last round the budget allows, or after repeated calls: without tools.
        let last = round_no + 1 == max_rounds || repeats.exhausted();
        if let Some(cap) = max_output_tokens {
            let left = cap.saturating_sub(usage.output_tokens);
            if left == 0 {
                return finish(&done_ctx, emitter, transcript, &mut files, Terminal::Incomplete("max_output_tokens".into()), usage, None);
            }
            sampling.max_tokens = Some(left);
        }
        // Once `max_tool_calls` gateway calls ran, the gateway's tools are no longer offered
        // (client tools still are), so the model answers instead of calling them again.
        let spent = max_tool_calls.is_some_and(|cap| executed >= cap);
        let mut declared = if last { Vec::new() } else { tools.upstream_tools(&choice) };
        if spent {
            declared.retain(|t| tools.lookup(&t.name).is_some_and(|e| e.owner == Owner::Client));
        }
        let round_choice = match &choice {
            _ if declared.is_empty() => ToolChoice::None,
            // A choice that forces a gateway tool (`max_tool_calls: 0`) is not kept.
            c if spent => c.clone().relaxed(),
            c => c.clone(),
        };
        let req = RoundRequest {
            model: &upstream_model,
            transcript: &transcript,
            tools: &declared,
            tool_choice: &round_choice,
            sampling: &sampling,
        };
        // Only the tools offered this round count: under `tool_choice: "none"` (and in the
        // last round) none, under `allowed_tools` a subset. A call of another tool is not
        // streamed as a client item and is answered as a call of an unknown tool (or, in
        // the last round, dropped).
        let mut restricted = tools.restricted_to(&declared);
        let offered = restricted.as_ref().unwrap_or(&tools);
        // With a `strict` client function offered, client calls are checked before any is
        // shown: they wait for the end of the round.
        let strict_offered = offered.entries().iter().any(is_strict);
        let mut round = Round::new(last, sampling.parallel_tool_calls == Some(false))
            .with_encrypted_reasoning(sampling.encrypted_reasoning)
            .with_sealer(sealer.clone())
            .with_held_calls(strict_offered);
        if !declared.is_empty() || has_tools {
            // A call the model writes as text (a server whose tool parser failed) is
            // recovered; a bare JSON answer only when the client did not ask for JSON. With
            // no tool offered (the last round), any call written as text is recovered, and
            // dropped as any call of that round is: it is never the answer.
            let json_answer = matches!(sampling.text_format, Some(TextFormat::JsonObject | TextFormat::JsonSchema { .. }));
            round = round.with_leak_recovery(!json_answer).recovering_any_name(declared.is_empty());
        }
        observer.round_started(&info, round_no);
        // From sending the round to the end of its gateway calls; DEBUG: a log at INFO
        // neither makes nor shows it (the traces do). Not entered while the upstream
        // streams (a span entered on every poll costs more than it tells): it is the parent
        // of the round's gateway calls.
        let round_span = tracing::debug_span!(
            "round",
            round = round_no,
            tools = declared.len(),
            calls = tracing::field::Empty,
            error = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        done_ctx.rounds = round_no + 1;
        let round_start = Instant::now();
        let mut round_usage = Usage::default();
        let streamed = async {
            match upstream.stream_round(&req).await {
                Err(e) => Some(e),
                Ok(mut stream) => loop {
                    match stream.next().await {
                        None => break None,
                        Some(Err(e)) => break Some(e),
                        Some(Ok(ev)) => {
                            if !first_token && is_output(&ev) {
                                first_token = true;
                                observer.first_token(&info, started.elapsed());
                            }
                            round.on_event(ev, offered, emitter, &mut round_usage, &files, &sources)
                        }
                    }
                },
            }
        };
        let failure = tokio::select! {
            f = streamed => f,
            () = cancel.cancelled() => {
                usage.add(&round_usage);
                let latency = round_start.elapsed();
                done_ctx.upstream_time += latency;
                let report = RoundReport { round: round_no, latency, usage: round_usage, error: Some("interrupted") };
                record_round(&round_span, &report);
                observer.round_done(&info, &report);
                close_cut_round(&mut round, offered, emitter, &files, &sources, &mut transcript);
                return finish(&done_ctx, emitter, transcript, &mut files, cut_short(&cancelled_by_client, &client_left), usage, None);
            }
        };
        usage.add(&round_usage);
        compactor.round_done(&round_usage);
        let error = failure.as_ref().map(UpstreamError::code);
        let latency = round_start.elapsed();
        done_ctx.upstream_time += latency;
        let report = RoundReport { round: round_no, latency, usage: round_usage, error };
        record_round(&round_span, &report);
        observer.round_done(&info, &report);
        round_span.record("calls", round.calls.len());
        if let Some(err) = failure {
            // Upstream messages never hold the URL's credentials or the key (`UpstreamError`).
            // Debug-quoted: an upstream message with line breaks cannot forge log lines.
            tracing::warn!(code = err.code(), error = ?err.to_string(), "turn failed on the upstream");
            close_cut_round(&mut round, offered, emitter, &files, &sources, &mut transcript);
            let terminal = Terminal::Failed { code: err.code().into(), message: err.client_message() };
            return finish(&done_ctx, emitter, transcript, &mut files, terminal, usage, Some(err));
        }
        // A truncated round is never executed: its calls are closed as incomplete.
        let truncated = match round.finish {
            Some(FinishReason::Length) => Some("max_output_tokens"),
            Some(FinishReason::ContentFilter) => Some("content_filter"),
            _ => None,
        };
        if let Some(reason) = truncated {
            close_cut_round(&mut round, offered, emitter, &files, &sources, &mut transcript);
            return finish(&done_ctx, emitter, transcript, &mut files, Terminal::Incomplete(reason.into()), usage, None);
        }
        // Call markup still held at the end of the text becomes calls (or text).
        round.end_text(offered, emitter, &files, &sources);
        // A forcing `tool_choice` the upstream ignored (many chat templates do): an answer
        // without any call is asked again once, with the choice and a short instruction;
        // its text, already shown, is `commentary`. A second such answer ends the turn
        // `incomplete`: it is never passed off as honouring the choice.
        let ignored = round.calls.is_empty() && !last && round_choice.forces();
        round.goes_on = ignored && !choice_retried;
        let text = round.close_message(emitter, ItemStatus::Completed, &sources);
        transcript.push_upstream_items(std::mem::take(&mut round.upstream_items));
        if ignored {
            push_text(&mut transcript, text, round.take_thought());
            if choice_retried {
                tracing::warn!("the upstream ignored a required tool_choice twice");
                return finish(&done_ctx, emitter, transcript, &mut files, Terminal::Incomplete(INVALID_REASON.into()), usage, None);
            }
            choice_retried = true;
            transcript.entries.push(Entry::User(vec![UserPart::Text(choice_instruction(&round_choice))]));
            continue;
        }
        // The last round went upstream without tools: a call the model writes anyway was
        // dropped as it came (neither executed nor returned), and the turn ends with its answer.
        if round.calls.is_empty() || last {
            // Call markup is never a completed answer (issue 28): markup left in the text
            // (naming no tool, or not a call), or calls the model wrote in the last round
            // with nothing else, end the turn `incomplete`.
            let leaked = has_tools && (leaked_calls::has_call_markup(&text) || (round.dropped_calls > 0 && text.trim().is_empty()));
            push_text(&mut transcript, text, round.take_thought());
            if leaked {
                tracing::warn!("the model's answer is tool-call markup; the turn ends incomplete");
                return finish(&done_ctx, emitter, transcript, &mut files, Terminal::Incomplete(INVALID_REASON.into()), usage, None);
            }
            return finish(&done_ctx, emitter, transcript, &mut files, Terminal::Completed, usage, None);
        }
        // Near-JSON arguments are repaired (a function's, a gateway tool's); a strict
        // function's are checked against its schema before any client call is shown.
        let invalid = decide_arguments(&mut round, offered);
        if !invalid.is_empty() {
            if strict_retried {
                tracing::warn!(calls = invalid.len(), "a strict function's arguments stayed invalid after a second attempt");
                push_text(&mut transcript, text, round.take_thought());
                return finish(&done_ctx, emitter, transcript, &mut files, Terminal::Incomplete(INVALID_REASON.into()), usage, None);
            }
            strict_retried = true;
        }
        // Client calls still open (or held back behind one) are done before any gateway
        // call's item is added: items never overlap. Not when the round is asked again.
        if invalid.is_empty() {
            round.close_streamed_calls(offered, emitter);
        }
        // A search of the deferred tools lists the deferred MCP servers first (their items
        // come before its own): their tools join the catalog.
        let searches = invalid.is_empty() && tools.has_lazy() && round.calls.iter().any(|c| offered.lookup(&c.name).is_some_and(|e| e.tool.searches_deferred()));
        if searches {
            Box::pin(tools.discover_lazy(emitter, &mut transcript.listings)).await;
            restricted = tools.restricted_to(&tools.upstream_tools(&choice));
        }
        let offered = restricted.as_ref().unwrap_or(&tools);
        let mut gateway = Vec::new();
        let mut answers: Vec<ToolResult> = Vec::new();
        let mut client = Vec::new();
        // Gateway calls that wait for the user's approval (issue 18): not run.
        let mut approvals = Vec::new();
        let mut transcript_calls = Vec::with_capacity(round.calls.len());
        // Function calls that came without arguments (llama.cpp, for a function without
        // parameters), or only whitespace: `{}` is added, so that clients and the replayed
        // history get JSON (a client call's item streams it as its last delta).
        for call in &mut round.calls {
            call.ensure_id();
            if call.arguments.trim().is_empty() && offered.lookup(&call.name).is_some_and(|e| e.call_item() == CallItem::Function) {
                call.arguments.push_str("{}");
            }
            // The history holds what the client gets: a client custom call's arguments are
            // re-encoded from its input (JSON whatever the model wrote; as a replay has them).
            if !call.closed && offered.lookup(&call.name).is_some_and(|e| e.owner == Owner::Client && e.is_custom()) {
                call.arguments = arguments_from_input(&call.final_text(true, emitter));
            }
            transcript_calls.push(Call { call_id: call.call_id.clone(), name: call.name.clone(), arguments: call.arguments.clone() });
            let reject = |content: String| ToolResult { call_id: call.call_id.clone(), content, continuation: None };
            match offered.lookup(&call.name) {
                None if spent && tools.lookup(&call.name).is_some_and(|e| e.owner == Owner::Gateway) => answers.push(reject(MAX_TOOL_CALLS.into())),
                None => answers.push(reject(format!(
                    "error: there is no tool named '{}'. Use one of the declared tools or answer directly.",
                    call.name
                ))),
                // A strict call with invalid arguments is asked again, with the error as its
                // result; the round's other client calls are not returned either (they may
                // be made again with it).
                Some(entry) if entry.owner == Owner::Client => match invalid.iter().find(|(id, _)| *id == call.call_id) {
                    Some((_, msg)) => answers.push(reject(msg.clone())),
                    None if !invalid.is_empty() => answers.push(reject(NOT_RETURNED.into())),
                    None => client.push(call.index),
                },
                Some(entry) => match execute::validate(entry, &call.arguments) {
                    Err(msg) => answers.push(reject(entry.tool.refused(&call.arguments, &msg, emitter).unwrap_or(msg))),
                    Ok(_) if entry.tool.needs_approval() => approvals.push(call.index),
                    Ok(_) if max_tool_calls.is_some_and(|cap| executed >= cap) => answers.push(reject(MAX_TOOL_CALLS.into())),
                    Ok(args) => match repeats.check(&call.name, &args, &call.call_id) {
                        Some(again) => answers.push(reject(again)),
                        None => match entry.tool.bind(&call.call_id, &args, &BindCtx { native: entry.upstream.is_native(), tools: Some(offered), ..bind_ctx }) {
                            Ok(invocation) => {
                                executed += 1;
                                gateway.push((call.name.clone(), invocation));
                            }
                            Err(msg) => answers.push(reject(entry.tool.refused(&call.arguments, &msg, emitter).unwrap_or(msg))),
                        },
                    },
                },
            }
        }
        let ran_gateway = !gateway.is_empty();
        let tools_start = Instant::now();
        let calls = execute::run_calls(gateway, emitter, limits.max_parallel, limits.call_timeout, &mut files, observed, &cancel);
        let done = Box::pin(calls.instrument(round_span.clone())).await;
        if ran_gateway {
            done_ctx.tool_time += tools_start.elapsed();
        }
        usage.add(&done.usage);
        transcript.private_results.extend(done.private);
        for s in done.sources {
            if !sources.iter().any(|k| k.url == s.url) {
                sources.push(s);
            }
        }
        // Approval requests and client calls surface after the gateway calls ran, in call
        // order; they end the turn. An approval request's id becomes its call's id, which
        // the client's approval response answers.
        let waiting = !client.is_empty() || !approvals.is_empty();
        for call in round.calls.iter_mut() {
            if approvals.contains(&call.index) {
                let Some(entry) = offered.lookup(&call.name) else { continue };
                match entry.tool.request_approval(&call.arguments, emitter) {
                    Some(id) => {
                        if let Some(c) = transcript_calls.iter_mut().find(|c| c.call_id == call.call_id) {
                            c.call_id.clone_from(&id);
                        }
                        transcript.approvals.push(id);
                    }
                    None => answers.push(ToolResult { call_id: call.call_id.clone(), content: "error: this call was not run.".into(), continuation: None }),
                }
            } else if client.contains(&call.index) {
                let Some(entry) = tools.lookup(&call.name) else { continue };
                if call.output_index.is_none() {
                    call.start_client_item(entry, emitter);
                }
                call.finish_item(entry.is_custom(), emitter);
            }
        }
        // Tools loaded this round, offered from the next one on: by a search, or called by
        // their exact name without one (the model skipped the search).
        let called: Vec<&str> = round.calls.iter().map(|c| c.name.as_str()).collect();
        let skipped = tools.load_called(&called);
        transcript.loaded.extend(skipped);
        if !done.loads.is_empty() {
            tools.load_declared(&done.loads);
            transcript.loaded.extend(done.loads);
        }
        transcript.push_assistant_with(text, transcript_calls, round.take_thought());
        // Results in the order the model made the calls.
        let mut all: Vec<ToolResult> = done.results.into_iter().chain(answers).collect();
        let order: Vec<String> = round.calls.iter().map(|c| c.call_id.clone()).collect();
        all.sort_by_key(|r| order.iter().position(|id| *id == r.call_id).unwrap_or(usize::MAX));
        for r in all {
            transcript.push_tool_result_with(r.call_id, r.content, r.continuation);
        }
        if waiting {
            return finish(&done_ctx, emitter, transcript, &mut files, Terminal::Completed, usage, None);
        }
        if ran_gateway {
            choice = choice.relaxed();
        }
    }
    finish(&done_ctx, emitter, transcript, &mut files, Terminal::Completed, usage, None)
}

/// Ends a round cut short (failure, truncation, cancel): text held as possible call markup
/// is text; its open items close `incomplete`; its text and the calls already done as
/// `completed` (the client may answer them) go into the history; the rest of its calls
/// never happened.
fn close_cut_round(round: &mut Round, tools: &ToolSet, emitter: &mut Emitter, files: &FileSources, sources: &[Source], transcript: &mut Transcript) {
    round.release_text(tools, emitter, files, sources);
    let calls = round.completed_calls();
    let text = round.close_all(emitter, ItemStatus::Incomplete, sources);
    transcript.push_upstream_items(std::mem::take(&mut round.upstream_items));
    if calls.is_empty() {
        push_text(transcript, text, round.take_thought());
    } else {
        transcript.push_assistant_with(text, calls, round.take_thought());
    }
}

/// How a cancelled turn ends: `cancelled` when its client cancelled a background response,
/// `incomplete` with reason `client_disconnected` when a foreground turn's client left, else
/// `incomplete` (shutdown).
fn cut_short(cancelled_by_client: &std::sync::atomic::AtomicBool, client_left: &std::sync::atomic::AtomicBool) -> Terminal {
    if cancelled_by_client.load(std::sync::atomic::Ordering::Acquire) {
        Terminal::Cancelled
    } else if client_left.load(std::sync::atomic::Ordering::Acquire) {
        Terminal::Incomplete(crate::events::emitter::CLIENT_DISCONNECTED.to_string())
    } else {
        Terminal::Interrupted
    }
}

/// The instruction that follows an answer which ignored a forcing `tool_choice`.
fn choice_instruction(choice: &ToolChoice) -> String {
    match choice {
        ToolChoice::Named(name) => format!("The request requires a call of the tool '{name}'. Call '{name}' now instead of answering in text."),
        _ => "The request requires a tool call. Call one of the offered tools now instead of answering in text.".to_string(),
    }
}

/// True for a client function declared with `strict: true`.
fn is_strict(entry: &ToolEntry) -> bool {
    entry.owner == Owner::Client && entry.call_item() == CallItem::Function && entry.upstream.strict == Some(true)
}

/// Decides each call's arguments at the end of its round: a function's (client or gateway)
/// and any gateway tool's near-JSON arguments are repaired ([`arguments::repair`]) where the
/// call's item is not done yet. A strict client function's are then checked against its
/// schema: returns `(call id, error for the model)` of each that is invalid.
fn decide_arguments(round: &mut Round, offered: &ToolSet) -> Vec<(String, String)> {
    let mut invalid = Vec::new();
    for call in round.calls.iter_mut().filter(|c| !c.closed) {
        let Some(entry) = offered.lookup(&call.name) else { continue };
        if entry.owner == Owner::Client && entry.is_custom() {
            continue;
        }
        if let Some(fixed) = arguments::repair(&call.arguments) {
            tracing::debug!(name = %call.name, "near-JSON arguments repaired");
            call.arguments = fixed;
        }
        if is_strict(entry) {
            call.ensure_id();
            let args = if call.arguments.trim().is_empty() { "{}" } else { call.arguments.as_str() };
            if let Err(msg) = execute::validate(entry, args) {
                invalid.push((call.call_id.clone(), msg));
            }
        }
    }
    invalid
}

/// Appends the round's answer (when it has text) with the round's reasoning.
fn push_text(transcript: &mut Transcript, text: String, thought: Option<Thought>) {
    if !text.is_empty() {
        transcript.push_assistant_with(text, Vec::new(), thought);
    }
}

/// What the end of a turn reports to the observer (and records on the turn's span).
struct Ended<'a> {
    observer: &'a dyn TurnObserver,
    info: &'a TurnInfo,
    span: tracing::Span,
    started: Instant,
    rounds: usize,
    upstream_time: Duration,
    tool_time: Duration,
}

/// True for the events that are model output (the first one is the turn's first token).
fn is_output(ev: &UpstreamEvent) -> bool {
    matches!(ev, UpstreamEvent::Text(_) | UpstreamEvent::Reasoning(_) | UpstreamEvent::ReasoningSummary { .. } | UpstreamEvent::Refusal(_) | UpstreamEvent::ToolCall { .. })
}

fn finish(ended: &Ended<'_>, emitter: &mut Emitter, mut transcript: Transcript, files: &mut FileSources, terminal: Terminal, usage: Usage, err: Option<UpstreamError>) -> Outcome {
    transcript.file_sources = std::mem::take(&mut files.list);
    if let Terminal::Failed { code, message } = &terminal {
        emitter.error_event(code, message);
    }
    let response = emitter.finish(terminal, usage);
    let report = TurnReport {
        status: response.status,
        usage: response.usage.unwrap_or_default(),
        rounds: ended.rounds,
        duration: ended.started.elapsed(),
        upstream_time: ended.upstream_time,
        tool_time: ended.tool_time,
    };
    let span = &ended.span;
    span.record("status", response.status.as_str());
    span.record("rounds", ended.rounds);
    if let Some(e) = &response.error {
        span.record("error", e.code.as_str());
        span.record("otel.status_code", "error");
    }
    ended.observer.turn_done(ended.info, &report);
    Outcome { response, transcript, upstream_error: err }
}

/// Records a round's failure on its span.
fn record_round(span: &tracing::Span, report: &RoundReport) {
    if let Some(code) = report.error {
        span.record("error", code);
        span.record("otel.status_code", "error");
    }
}
