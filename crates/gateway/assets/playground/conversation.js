// The conversation: the page's state, a turn (the user's message and the rounds that follow
// it: the browser runs its own tool calls and sends their outputs back), the MCP approvals
// offered at the end of a response and sent together once all are answered, and the one
// request in flight (Send off, Stop shown). History is kept for replay (store: false) and as
// the last stored response id (previous_response_id).

import {
  toolSettings, replayable, pendingFunctionCalls, runBrowserTool, pendingApprovals, approvalResponses,
} from './lib.js';
import { $, el, stamp, announce, pretty } from './dom.js';
import { currentSettings } from './settings.js';
import { mcpProblem } from './mcp.js';
import { ResponseView } from './transcript.js';
import { streamResponse } from './stream.js';

const MAX_BROWSER_ROUNDS = 6;

const state = {
  history: [],          // items the page replays (store: false), also kept in previous_response_id mode
  lastResponseId: null, // the last stored response (previous_response_id mode)
  busy: false,
  controller: null,
  // MCP approval requests of the last response, waiting for Approve / Deny:
  // {requests: [{item, ui, approve: null|bool}], carry: [items sent with the answers], tools}.
  open: null,
  answered: new Set(),  // approval request ids already sent (the gateway refuses one twice)
};

// ---------------------------------------------------------------- the request of a round

/** The request of one round: `tools` is the turn's {tools, include, toolChoice}. */
function requestBody(newItems, tools) {
  const mode = $('history-mode').value;
  const body = { model: $('model').value || undefined, stream: true };
  if (tools.tools.length) {
    body.tools = tools.tools;
    body.tool_choice = tools.toolChoice;
  }
  if (tools.include.length) body.include = tools.include;
  if (mode === 'previous' && state.lastResponseId) {
    body.previous_response_id = state.lastResponseId;
    body.input = newItems;
  } else {
    body.input = state.history.concat(newItems);
  }
  body.store = mode === 'previous';
  return body;
}

// ---------------------------------------------------------------- a turn, with the browser tool loop

/**
 * Sends `newItems` (a user message, tool outputs, approval answers) and the rounds that
 * follow: the browser runs its tool calls and sends their outputs, until a response has none
 * left. Every round declares the same `tools` ({tools, include, toolChoice}; rounds after the
 * first use tool_choice auto). A response that ends with MCP approval requests ends the turn
 * and offers Approve / Deny (offerApprovals).
 */
async function converse(newItems, tools, label) {
  let roundTools = tools;
  for (let round = 0; round <= MAX_BROWSER_ROUNDS; round++) {
    const body = requestBody(newItems, roundTools);
    const how = body.previous_response_id ? `previous_response_id ${body.previous_response_id}` : `${body.input.length} input item${body.input.length === 1 ? '' : 's'}${body.store ? '' : ', store: false'}`;
    const view = new ResponseView(round === 0 ? `${label} (${how})` : `Assistant, after the browser tool (${how})`);
    const controller = new AbortController();
    state.controller = controller;
    const response = await streamResponse(body, view, controller);
    if (!response || response.status === 'failed') return;
    const output = Array.isArray(response.output) ? response.output : [];
    state.history = state.history.concat(newItems, replayable(output));
    state.lastResponseId = body.store ? response.id || null : null;
    const pending = response.status === 'completed' ? pendingFunctionCalls(output) : [];
    const approvals = response.status === 'completed' ? pendingApprovals(output, state.answered) : [];
    if (!pending.length && !approvals.length) {
      announce('Answer complete.');
      return;
    }
    if (round === MAX_BROWSER_ROUNDS && !approvals.length) {
      view.error(`Stopped after ${MAX_BROWSER_ROUNDS} browser tool rounds.`);
      return;
    }
    // The model's turn ended with client calls: run them here, then resume with their outputs.
    newItems = runBrowserCalls(pending, view);
    roundTools = { ...tools, toolChoice: 'auto' };
    if (approvals.length) {
      // Their outputs go with the answers to the approval requests (or the next message).
      offerApprovals(view, approvals, newItems, roundTools);
      return;
    }
  }
}

/** Runs the browser's pending function calls of `view`'s response; returns their outputs. */
function runBrowserCalls(pending, view) {
  const outputs = [];
  for (const call of pending) {
    const slot = [...view.items.values()].find((v) => v.call_id === call.call_id);
    const out = runBrowserTool(call.name, call.arguments);
    const block = stamp(el('div', { class: 'tool-output browser-run' },
      el('p', { class: 'label', text: 'Output (ran in this browser)' }),
      el('pre', { text: pretty(out) })));
    if (slot) {
      slot.output.append(block);
      slot.entry.badge.textContent = 'ran in the browser';
      slot.entry.details.classList.add('executed');
    } else {
      view.section.append(block);
    }
    outputs.push({ type: 'function_call_output', call_id: call.call_id, output: out });
  }
  return outputs;
}

/**
 * A response ended with MCP approval requests: each gets Approve / Deny. Once every one has
 * an answer, the answers (`mcp_approval_response`) are sent together, with `carry` (the
 * browser's tool outputs of that response) and the same tools; each id is sent once.
 */
function offerApprovals(view, approvals, carry, tools) {
  const open = { requests: [], carry, tools };
  for (const item of approvals) {
    const ui = [...view.items.values()].find((v) => v.item && v.item.id === item.id && v.offer);
    if (!ui) continue;
    const request = { item, ui, approve: null };
    open.requests.push(request);
    ui.offer((approve) => {
      request.approve = approve;
      answerApprovals(open);
    });
  }
  if (!open.requests.length) return;
  state.open = open;
  const n = open.requests.length;
  announce(n === 1 ? 'The model asks to call an MCP tool: approve or deny it.' : `The model asks to call ${n} MCP tools: approve or deny each.`);
}

/** Sends the answers of `open` once each of its requests has one. */
function answerApprovals(open) {
  if (state.open !== open) return;
  const waiting = open.requests.filter((r) => r.approve === null);
  for (const r of open.requests) {
    if (r.approve === null) continue;
    r.ui.note(waiting.length
      ? `${r.approve ? 'Approved' : 'Denied'}; sent with the other answer${waiting.length === 1 ? '' : 's'} (${waiting.length} still open).`
      : `${r.approve ? 'Approved' : 'Denied'}; sent.`);
  }
  if (waiting.length) return;
  if (state.busy) return; // cannot happen: a new turn closes the open requests first
  state.open = null;
  const decisions = open.requests.filter((r) => !state.answered.has(r.item.id)).map((r) => ({ id: r.item.id, approve: r.approve }));
  for (const d of decisions) state.answered.add(d.id);
  const yes = decisions.filter((d) => d.approve).length;
  const what = yes === decisions.length ? 'the approval' : yes === 0 ? 'the denial' : 'the answers';
  busyWhile(() => converse(open.carry.concat(approvalResponses(decisions)), open.tools, `Assistant, after ${what}`));
}

/** Closes approval requests left unanswered (the user sent a message instead); returns the
 * items that were to go with their answers. */
function closeApprovals() {
  const open = state.open;
  state.open = null;
  if (!open) return [];
  for (const r of open.requests) r.ui.expire();
  return open.carry;
}

async function runTurn(text, tools) {
  const userItem = { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
  const carry = closeApprovals();
  $('log').append(stamp(el('div', { class: 'user' }, el('span', { class: 'label', text: 'You' }), el('p', { class: 'text', text }))));
  await converse(carry.concat([userItem]), tools, 'Assistant');
}

/** Runs `work` as the page's one request in flight: Send off, Stop shown. */
async function busyWhile(work) {
  state.busy = true;
  delete document.body.dataset.idle;
  $('send').disabled = true;
  $('stop').hidden = false;
  $('log').setAttribute('aria-busy', 'true');
  try {
    await work();
  } finally {
    state.busy = false;
    state.controller = null;
    $('send').disabled = false;
    $('stop').hidden = true;
    $('log').setAttribute('aria-busy', 'false');
    document.body.dataset.idle = 'true';
  }
}

export async function send() {
  const prompt = $('prompt');
  const text = prompt.value.trim();
  if (!text || state.busy) return;
  const tools = toolSettings(currentSettings());
  if (tools.mcpError) {
    // Nothing is sent: the message stays in its box, the field with the problem gets focus.
    mcpProblem(tools.mcpError.message, tools.mcpError.field);
    $('settings').open = true;
    $(tools.mcpError.field === 'label' ? 'mcp-label' : 'mcp-url').focus();
    announce(tools.mcpError.message);
    document.body.dataset.idle = 'true';
    return;
  }
  prompt.value = '';
  await busyWhile(() => runTurn(text, tools));
  prompt.focus();
}

/** Stop: aborts the request in flight. */
export function stop() {
  if (state.controller) state.controller.abort();
}

/** New conversation: aborts the request in flight, forgets the history and clears the log. */
export function newConversation() {
  if (state.controller) state.controller.abort();
  state.history = [];
  state.lastResponseId = null;
  state.open = null;
  state.answered = new Set();
  $('log').replaceChildren();
  announce('New conversation.');
  $('prompt').focus();
}
