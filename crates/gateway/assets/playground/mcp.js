// MCP in the page: the note and marks on the MCP server fields (a problem found before
// sending, or the gateway refusing the server), and the transcript entries of MCP items:
// the tool listing, the calls, and the approval requests with Approve / Deny (enabled once
// their response has ended; the answers are sent by conversation.js).

import { errorMessage, mcpErrorText } from './lib.js';
import { $, el, stamp, pretty, plural } from './dom.js';

// ---------------------------------------------------------------- the MCP server fields

const MCP_NOTE = "The gateway's operator must allow the server's URL ([mcp] in its configuration). An empty URL means a server the operator configured under this label.";
let mcpNote = MCP_NOTE;

/** Sets the usual note under the MCP fields: what this gateway's [mcp] offers
 * (`GET /v1/gateway/tools`): request URLs, and the labels of the operator's servers. */
export function mcpOffered({ serverUrls, labels }) {
  const urls = serverUrls ? MCP_NOTE : 'This gateway accepts no server URL from requests: leave the URL empty and name a server the operator configured by its label.';
  mcpNote = labels.length ? `${urls} Configured here: ${labels.join(', ')}.` : urls;
  const note = $('mcp-note');
  if (!note.classList.contains('warn')) note.textContent = mcpNote;
}

/** Shows a problem with the MCP fields under them and marks the field ('url' or 'label'). */
export function mcpProblem(message, field) {
  const note = $('mcp-note');
  note.textContent = message;
  note.classList.add('warn');
  for (const id of ['mcp-url', 'mcp-label']) $(id).removeAttribute('aria-invalid');
  if (field) $(field === 'label' ? 'mcp-label' : 'mcp-url').setAttribute('aria-invalid', 'true');
}

/** Puts the usual note back once the fields change. */
export function mcpProblemCleared() {
  const note = $('mcp-note');
  if (!note.classList.contains('warn')) return;
  note.textContent = mcpNote;
  note.classList.remove('warn');
  for (const id of ['mcp-url', 'mcp-label']) $(id).removeAttribute('aria-invalid');
}

/** A 400 naming the request's mcp tool (`tools[i]…`, e.g. a server_url the operator does not
 * allow, or a label without server_url that no operator server has) is also shown under the
 * MCP fields. */
export function mcpRefusal(detail, body) {
  const param = detail && detail.error && typeof detail.error.param === 'string' ? detail.error.param : '';
  const m = /^tools\[(\d+)\](?:\.(\w+))?/.exec(param);
  const tool = m && Array.isArray(body.tools) ? body.tools[Number(m[1])] : null;
  if (!tool || tool.type !== 'mcp') return;
  mcpProblem(`The gateway refused the MCP server: ${errorMessage(detail, 'refused')}`, m[2] === 'server_label' ? 'label' : 'url');
}

// ---------------------------------------------------------------- transcript entries
// Each takes the ResponseView (transcript.js) of the item's response.

/** An `mcp_list_tools` item: the tools' names and descriptions, or the error. */
export function mcpListTools(response, item) {
  const label = item.server_label || 'mcp';
  const e = response.entry('mcp_list_tools', `listing the tools of ${label}…`, 'in_progress');
  const view = {
    status(s) {
      e.badge.textContent = s;
      e.details.classList.toggle('failed', s === 'failed');
    },
    update(it) {
      const tools = Array.isArray(it.tools) ? it.tools.filter((t) => t && typeof t === 'object') : [];
      const failed = it.error !== null && it.error !== undefined && it.error !== '';
      e.details.classList.toggle('failed', failed);
      e.details.classList.toggle('executed', !failed);
      if (failed) {
        e.title.textContent = `Could not list the tools of ${label}`;
        e.badge.textContent = 'failed';
        e.body.replaceChildren(el('p', { class: 'label', text: 'Error' }), el('pre', { class: 'tool-error', text: mcpErrorText(it.error) }));
        return;
      }
      e.title.textContent = `Listed ${plural(tools.length, 'tool')} from ${label}`;
      e.badge.textContent = 'completed';
      if (!tools.length) {
        e.body.replaceChildren(el('p', { class: 'note', text: 'The server has no tools (or none is allowed).' }));
        return;
      }
      e.body.replaceChildren(el('ul', { class: 'mcp-tools' }, ...tools.map((t) => {
        const a = t.annotations && typeof t.annotations === 'object' ? t.annotations : {};
        const readOnly = a.read_only === true || a.readOnlyHint === true;
        return el('li', {},
          el('code', { class: 'mcp-tool-name', text: String(t.name || '') }),
          readOnly ? el('span', { class: 'badge', text: 'read-only' }) : null,
          t.description ? el('span', { class: 'mcp-tool-description', text: String(t.description) }) : null);
      })));
    },
  };
  return view;
}

/** An `mcp_call` item: its arguments, then its output or error. */
export function mcpCall(response, item) {
  const label = item.server_label || 'mcp';
  const e = response.entry('mcp_call', `${label} · ${item.name || ''}`, 'calling on the gateway');
  const approved = el('p', { class: 'note', hidden: true });
  const args = el('pre', { class: 'tool-input', text: item.arguments ? pretty(item.arguments) : '' });
  const result = el('div', { class: 'tool-output-slot' });
  e.body.append(approved, el('p', { class: 'label', text: 'Arguments' }), args, result);
  const view = {
    append(delta) { args.textContent += delta; },
    setArguments(a) { if (typeof a === 'string') args.textContent = pretty(a); },
    status(s) {
      e.badge.textContent = s === 'in_progress' ? 'calling on the gateway' : s;
      e.details.classList.toggle('failed', s === 'failed');
      e.details.classList.toggle('executed', s === 'completed');
    },
    update(it) {
      e.title.textContent = `${it.server_label || label} · ${it.name || ''}`;
      if (typeof it.arguments === 'string' && it.arguments) args.textContent = pretty(it.arguments);
      if (it.approval_request_id) {
        approved.hidden = false;
        approved.textContent = `Approved in this conversation (${it.approval_request_id}).`;
      }
      const failed = it.status === 'failed' || (it.error !== null && it.error !== undefined);
      const blocks = [];
      if (failed && it.error !== null && it.error !== undefined) {
        blocks.push(el('p', { class: 'label', text: 'Error' }), el('pre', { class: 'tool-error', text: mcpErrorText(it.error) }));
      }
      if (typeof it.output === 'string') {
        blocks.push(el('p', { class: 'label', text: 'Output (executed on the gateway)' }), el('pre', { class: 'tool-result', text: it.output }));
      }
      result.replaceChildren(...blocks);
      view.status(failed ? 'failed' : (it.status || 'completed'));
    },
  };
  return view;
}

/** An `mcp_approval_request` item: the tool, its arguments and Approve / Deny, off until `offer`. */
export function approvalRequest(response, item) {
  const label = item.server_label || 'mcp';
  const title = `${label} · ${item.name || ''}`;
  const badge = el('span', { class: 'badge', text: 'waiting' });
  const approve = el('button', { type: 'button', class: 'approve', disabled: true, text: 'Approve' });
  const deny = el('button', { type: 'button', class: 'deny secondary', disabled: true, text: 'Deny' });
  const args = el('pre', { class: 'tool-input', text: pretty(item.arguments || '') });
  const status = el('p', { class: 'note approval-status', role: 'status' });
  const box = stamp(el('div', { class: 'tool approval', role: 'group', 'aria-label': `Approval request: ${title}`, 'data-request-id': item.id },
    el('p', { class: 'approval-head' },
      el('span', { class: 'tool-kind', text: 'mcp_approval_request' }),
      el('span', { class: 'tool-title', text: title }),
      badge),
    el('p', { class: 'approval-question', text: `The model asks to call ${item.name || 'a tool'} on the MCP server ${label}. Run it?` }),
    el('p', { class: 'label', text: 'Arguments' }),
    args,
    el('div', { class: 'approval-buttons' }, approve, deny),
    status));
  response.section.append(box);
  const view = {
    box,
    update(it) {
      args.textContent = pretty(it.arguments || '');
    },
    /** Enables the buttons; `decide(approve)` is called once, on the first click. */
    offer(decide) {
      approve.disabled = false;
      deny.disabled = false;
      const click = (yes) => () => {
        if (box.dataset.decision) return;
        view.decided(yes);
        decide(yes);
      };
      approve.addEventListener('click', click(true));
      deny.addEventListener('click', click(false));
    },
    decided(yes) {
      approve.disabled = true;
      deny.disabled = true;
      (yes ? approve : deny).classList.add('chosen');
      (yes ? approve : deny).setAttribute('aria-pressed', 'true');
      box.dataset.decision = yes ? 'approved' : 'denied';
      badge.textContent = yes ? 'approved' : 'denied';
      box.classList.add(yes ? 'approved' : 'denied');
    },
    note(text) { status.textContent = text; },
    /** The conversation went on without an answer: the buttons stay off. */
    expire() {
      approve.disabled = true;
      deny.disabled = true;
      if (!box.dataset.decision) {
        box.dataset.decision = 'unanswered';
        badge.textContent = 'not answered';
        status.textContent = 'Not answered: the conversation went on.';
      }
    },
  };
  return view;
}
