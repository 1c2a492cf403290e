//! `turn::run`: the agent loop over upstream rounds (DESIGN.md "Pipeline"). Text and
//! client-call deltas go straight to the emitter; at the end of a round the calls are
//! classified by owner. The last round the budget allows goes upstream without tools.

use protocol::output::{ItemStatus, Phase};
use protocol::response::Usage;
use protocol::Response;

use crate::events::emitter::{Emitter, Terminal};
use crate::tools::custom::{self, InputDecoder};
use crate::tools::{Owner, ToolChoice, ToolKind};
use crate::turn::transcript::Call;
use crate::turn::Prepared;
use crate::upstream::{ChatCompletions, FinishReason, RoundRequest, UpstreamError, UpstreamEvent};

/// Loop bounds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Upstream rounds per turn (default 8); the last one has no tools.
    pub max_rounds: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_rounds: 8 }
    }
}

/// How the turn ended, with the folded Response.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub response: Response,
    /// Set when the turn failed because of the upstream (non-streaming → HTTP 502).
    pub upstream_error: Option<UpstreamError>,
}

/// A call being received in the current round.
#[derive(Debug, Default)]
struct PendingCall {
    index: usize,
    call_id: String,
    name: String,
    arguments: String,
    /// Set once a client-owned call has been added to the output (its deltas stream).
    output_index: Option<usize>,
    decoder: Option<InputDecoder>,
}

/// State of one round.
#[derive(Debug, Default)]
struct Round {
    message: Option<usize>,
    calls: Vec<PendingCall>,
    finish: Option<FinishReason>,
}

/// Runs the turn to its terminal event and returns the folded Response.
pub async fn run(turn: Prepared, upstream: &ChatCompletions, emitter: &mut Emitter, limits: Limits) -> Outcome {
    let Prepared { upstream_model, mut transcript, tools, mut sampling, max_output_tokens, .. } = turn;
    let mut usage = Usage::default();
    emitter.start();
    let choice = tools.choice.clone();
    let max_rounds = limits.max_rounds.max(1);
    for round_no in 0..max_rounds {
        let last = round_no + 1 == max_rounds;
        if let Some(cap) = max_output_tokens {
            let left = cap.saturating_sub(usage.output_tokens);
            if left == 0 {
                return finish(emitter, Terminal::Incomplete("max_output_tokens".into()), usage, None);
            }
            sampling.max_tokens = Some(left);
        }
        let declared = if last { Vec::new() } else { tools.upstream_tools(&choice) };
        let req = RoundRequest {
            model: &upstream_model,
            transcript: &transcript,
            tools: &declared,
            tool_choice: if last { &ToolChoice::None } else { &choice },
            sampling: &sampling,
        };
        let mut round = Round::default();
        let failure = match upstream.stream(&req).await {
            Err(e) => Some(e),
            Ok(mut stream) => loop {
                match stream.next().await {
                    None => break None,
                    Some(Err(e)) => break Some(e),
                    Some(Ok(ev)) => on_event(ev, &mut round, &tools, emitter, &mut usage),
                }
            },
        };
        if let Some(err) = failure {
            close_all(&mut round, emitter, ItemStatus::Incomplete);
            let terminal = Terminal::Failed { code: err.code().into(), message: err.to_string() };
            return finish(emitter, terminal, usage, Some(err));
        }
        let truncated = match round.finish {
            Some(FinishReason::Length) => Some("max_output_tokens"),
            Some(FinishReason::ContentFilter) => Some("content_filter"),
            _ => None,
        };
        if let Some(reason) = truncated {
            close_all(&mut round, emitter, ItemStatus::Incomplete);
            return finish(emitter, Terminal::Incomplete(reason.into()), usage, None);
        }
        let has_calls = !round.calls.is_empty();
        let text = match round.message {
            Some(idx) => {
                let phase = if has_calls { Phase::Commentary } else { Phase::FinalAnswer };
                let text = emitter.message_text(idx);
                emitter.message_done(idx, phase, ItemStatus::Completed);
                text
            }
            None => String::new(),
        };
        if !has_calls {
            return finish(emitter, Terminal::Completed, usage, None);
        }
        // Classify by owner: client calls end the turn; unknown names are answered with an
        // error the model can read and never appear in `output`.
        let mut client_calls = 0;
        let mut transcript_calls = Vec::new();
        let mut rejected = Vec::new();
        for call in &mut round.calls {
            if call.call_id.is_empty() {
                call.call_id = crate::events::ids::new_id("call");
            }
            match tools.lookup(&call.name) {
                Some(entry) if entry.owner == Owner::Client => {
                    client_calls += 1;
                    let idx = match call.output_index {
                        Some(idx) => idx,
                        None => start_client_item(call, entry.kind.clone(), entry.name.clone(), entry.namespace.clone(), emitter),
                    };
                    let final_text = match entry.kind {
                        ToolKind::Function => call.arguments.clone(),
                        ToolKind::Custom => custom::input_from_arguments(&call.arguments),
                    };
                    emitter.call_done(idx, final_text, ItemStatus::Completed);
                }
                _ => {
                    rejected.push((call.call_id.clone(), format!(
                        "error: there is no tool named '{}'. Use one of the declared tools or answer directly.",
                        call.name
                    )));
                }
            }
            transcript_calls.push(Call { call_id: call.call_id.clone(), name: call.name.clone(), arguments: call.arguments.clone() });
        }
        if client_calls > 0 {
            return finish(emitter, Terminal::Completed, usage, None);
        }
        transcript.push_assistant(text, transcript_calls);
        for (call_id, content) in rejected {
            transcript.push_tool_result(call_id, content);
        }
        if emitter.client_gone() {
            tracing::debug!("client gone between rounds");
        }
    }
    finish(emitter, Terminal::Completed, usage, None)
}

fn finish(emitter: &mut Emitter, terminal: Terminal, usage: Usage, err: Option<UpstreamError>) -> Outcome {
    let failed = matches!(terminal, Terminal::Failed { .. });
    if failed {
        if let Terminal::Failed { code, message } = &terminal {
            emitter.error_event(code, message);
        }
    }
    let response = emitter.finish(terminal, usage);
    Outcome { response, upstream_error: err }
}

fn on_event(ev: UpstreamEvent, round: &mut Round, tools: &crate::tools::ToolSet, emitter: &mut Emitter, usage: &mut Usage) {
    match ev {
        UpstreamEvent::Text(delta) => {
            let idx = match round.message {
                Some(i) => i,
                None => {
                    let i = emitter.message_start();
                    round.message = Some(i);
                    i
                }
            };
            emitter.text_delta(idx, delta);
        }
        UpstreamEvent::ToolCall { index, id, name, arguments } => {
            let pos = match round.calls.iter().position(|c| c.index == index) {
                Some(p) => p,
                None => {
                    round.calls.push(PendingCall { index, ..Default::default() });
                    round.calls.len() - 1
                }
            };
            let call = &mut round.calls[pos];
            if let Some(id) = id.filter(|s| !s.is_empty()) {
                if call.call_id.is_empty() {
                    call.call_id = id;
                }
            }
            if let Some(n) = name {
                if call.output_index.is_none() {
                    call.name.push_str(&n);
                }
            }
            let piece = arguments.unwrap_or_default();
            call.arguments.push_str(&piece);
            match call.output_index {
                Some(idx) => stream_piece(call, idx, piece, emitter),
                None => {
                    // A client-owned call starts streaming as soon as its name is known.
                    if let Some(entry) = tools.lookup(&call.name).filter(|e| e.owner == Owner::Client) {
                        if call.call_id.is_empty() {
                            call.call_id = crate::events::ids::new_id("call");
                        }
                        let idx = start_client_item(call, entry.kind.clone(), entry.name.clone(), entry.namespace.clone(), emitter);
                        let so_far = call.arguments.clone();
                        stream_piece(call, idx, so_far, emitter);
                    }
                }
            }
        }
        UpstreamEvent::Finish(r) => round.finish = Some(r),
        UpstreamEvent::Usage(u) => usage.add(&u),
    }
}

fn start_client_item(call: &mut PendingCall, kind: ToolKind, name: String, namespace: Option<String>, emitter: &mut Emitter) -> usize {
    let idx = match kind {
        ToolKind::Function => emitter.function_call_start(call.call_id.clone(), name, namespace),
        ToolKind::Custom => {
            call.decoder = Some(InputDecoder::default());
            emitter.custom_call_start(call.call_id.clone(), name, namespace)
        }
    };
    call.output_index = Some(idx);
    idx
}

fn stream_piece(call: &mut PendingCall, idx: usize, piece: String, emitter: &mut Emitter) {
    let delta = match &mut call.decoder {
        Some(d) => d.feed(&piece),
        None => piece,
    };
    emitter.call_delta(idx, delta);
}

/// Closes every open item of the round (message and streamed calls) with `status`.
fn close_all(round: &mut Round, emitter: &mut Emitter, status: ItemStatus) {
    let has_calls = !round.calls.is_empty();
    if let Some(idx) = round.message.take() {
        let phase = if has_calls { Phase::Commentary } else { Phase::FinalAnswer };
        emitter.message_done(idx, phase, status);
    }
    for call in &round.calls {
        if let Some(idx) = call.output_index {
            let final_text = emitter.call_text(idx);
            emitter.call_done(idx, final_text, status);
        }
    }
}
