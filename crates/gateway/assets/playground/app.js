// The playground page: settings, the streamed transcript and the browser-side tool loop.
// Talks only to this gateway's public API with relative URLs (works behind a path prefix).

import {
  SseParser, toolSettings, replayable, isCommentary, pendingFunctionCalls, runBrowserTool,
  segmentText, safeUrl, errorMessage, BROWSER_TOOLS, pendingApprovals, approvalResponses, mcpErrorText,
} from './lib.js';
import { renderMarkdown, citationRef } from './markdown.js';

const $ = (id) => document.getElementById(id);
const MAX_BROWSER_ROUNDS = 6;

const state = {
  history: [],          // items the page replays (store: false), also kept in previous_response_id mode
  lastResponseId: null, // the last stored response (previous_response_id mode)
  busy: false,
  controller: null,
  seq: 0,               // render order of transcript steps (data-seq), for readers and tests
  // MCP approval requests of the last response, waiting for Approve / Deny:
  // {requests: [{item, ui, approve: null|bool}], carry: [items sent with the answers], tools}.
  open: null,
  answered: new Set(),  // approval request ids already sent (the gateway refuses one twice)
};

// ---------------------------------------------------------------- small DOM helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function stamp(node) {
  node.dataset.seq = String(++state.seq);
  return node;
}

function announce(text) {
  $('announce').textContent = text;
}

function nearEnd() {
  return window.innerHeight + window.scrollY >= document.body.scrollHeight - 160;
}

function scrollToEnd() {
  const log = $('log');
  if (nearEnd()) window.scrollTo({ top: document.body.scrollHeight });
  return log;
}

/** Runs `change` (which may grow the page); a reader who was at the end stays there. */
function keepingEnd(change) {
  const follow = nearEnd();
  change();
  if (follow) window.scrollTo({ top: document.body.scrollHeight });
}

function pretty(text) {
  if (typeof text !== 'string') return JSON.stringify(text, null, 2);
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function link(url, label) {
  const href = safeUrl(url);
  if (!href) return el('span', { text: label || url });
  return el('a', { href, target: '_blank', rel: 'noopener noreferrer', text: label || url });
}

// ---------------------------------------------------------------- settings

function currentSettings() {
  const store = $('vector-store');
  return {
    webSearch: $('tool-web_search').checked,
    packageVersion: $('tool-package_version').checked,
    fileSearch: $('tool-file_search').checked && !$('tool-file_search').disabled,
    vectorStoreIds: store.value ? [store.value] : [],
    mcp: $('tool-mcp').checked
      ? { url: $('mcp-url').value, label: $('mcp-label').value, approval: $('mcp-approval').checked }
      : null,
    browserTime: $('tool-get_browser_time').checked,
    toolChoice: $('tool-choice').value,
  };
}

const MCP_NOTE = "The gateway's operator must allow the server ([mcp] in its configuration).";

/** Shows a problem with the MCP fields under them and marks the field ('url' or 'label'). */
function mcpProblem(message, field) {
  const note = $('mcp-note');
  note.textContent = message;
  note.classList.add('warn');
  for (const id of ['mcp-url', 'mcp-label']) $(id).removeAttribute('aria-invalid');
  if (field) $(field === 'label' ? 'mcp-label' : 'mcp-url').setAttribute('aria-invalid', 'true');
}

function mcpProblemCleared() {
  const note = $('mcp-note');
  if (!note.classList.contains('warn')) return;
  note.textContent = MCP_NOTE;
  note.classList.remove('warn');
  for (const id of ['mcp-url', 'mcp-label']) $(id).removeAttribute('aria-invalid');
}

/** A 400 naming the request's mcp tool (`tools[i]…`, e.g. a server_url the operator does not
 * allow) is also shown under the MCP fields. */
function mcpRefusal(detail, body) {
  const param = detail && detail.error && typeof detail.error.param === 'string' ? detail.error.param : '';
  const m = /^tools\[(\d+)\](?:\.(\w+))?/.exec(param);
  const tool = m && Array.isArray(body.tools) ? body.tools[Number(m[1])] : null;
  if (!tool || tool.type !== 'mcp') return;
  mcpProblem(`The gateway refused the MCP server: ${errorMessage(detail, 'refused')}`, m[2] === 'server_label' ? 'label' : 'url');
}

/** Keeps the named entries of the tool_choice selector in step with the switched-on tools. */
function refreshToolChoice() {
  const select = $('tool-choice');
  const chosen = select.value;
  for (const opt of [...select.options]) if (opt.value.startsWith('tool:')) opt.remove();
  for (const name of toolSettings({ ...currentSettings(), toolChoice: 'auto' }).named) {
    select.append(el('option', { value: `tool:${name}`, text: `only ${name}` }));
  }
  select.value = [...select.options].some((o) => o.value === chosen) ? chosen : 'auto';
}

// ---------------------------------------------------------------- API key

// The gateway's API key, when it asks for one: kept for this tab only (sessionStorage).
const KEY_STORAGE = 'responses-gateway-api-key';

function apiKey() {
  try {
    return sessionStorage.getItem(KEY_STORAGE) || '';
  } catch {
    return '';
  }
}

/** `headers` with the Authorization header when a key is set. */
function withKey(headers) {
  const key = apiKey();
  return key ? { ...headers, authorization: `Bearer ${key}` } : headers;
}

/** Shows the key form after a 401: the gateway wants a key (or another one). */
function askForKey(body) {
  const form = $('key-form');
  const wrong = apiKey() !== '';
  $('key-note').textContent = wrong
    ? `The gateway refused this key (${errorMessage(body, 'invalid_api_key')}). Enter another one; it is kept in this tab only.`
    : 'This gateway needs an API key. It is kept in this tab only (sessionStorage).';
  form.hidden = false;
  $('api-key').focus();
}

async function getJson(path) {
  const res = await fetch(path, { headers: withKey({ accept: 'application/json' }) });
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (res.status === 401) askForKey(body);
  if (!res.ok) {
    const error = new Error(`HTTP ${res.status}: ${errorMessage(body, res.statusText || 'error')}`);
    error.status = res.status;
    throw error;
  }
  return body;
}

async function loadModels() {
  const select = $('model');
  const note = $('model-note');
  try {
    const body = await getJson('v1/models');
    const ids = (body && Array.isArray(body.data) ? body.data : []).map((m) => m && m.id).filter((id) => typeof id === 'string');
    select.replaceChildren(...ids.map((id) => el('option', { value: id, text: id })));
    note.textContent = ids.length ? '' : 'The gateway lists no models.';
  } catch (e) {
    note.textContent = `Could not load the models (${e.message}).`;
    note.classList.add('warn');
  }
}

async function loadVectorStores() {
  const box = $('tool-file_search');
  const select = $('vector-store');
  const note = $('stores-note');
  let stores = [];
  try {
    const body = await getJson('v1/vector_stores');
    stores = (body && Array.isArray(body.data) ? body.data : []).filter((s) => s && typeof s.id === 'string');
  } catch (e) {
    note.textContent = e.status === 404
      ? 'file_search is unavailable: this gateway has no vector store API (GET /v1/vector_stores: HTTP 404).'
      : `file_search is unavailable: the vector stores could not be listed (${e.message}).`;
    note.classList.add('warn');
    return;
  }
  if (!stores.length) {
    note.textContent = 'file_search is unavailable: there are no vector stores yet.';
    note.classList.add('warn');
    return;
  }
  select.replaceChildren(...stores.map((s) => el('option', { value: s.id, text: s.name ? `${s.name} (${s.id})` : s.id })));
  box.disabled = false;
  select.disabled = false;
  note.textContent = `${plural(stores.length, 'vector store')}.`;
  note.classList.remove('warn');
}

// ---------------------------------------------------------------- transcript rendering

/** The view of one response: its items by output_index, in a <section>. */
class ResponseView {
  constructor(label) {
    this.items = new Map();
    this.section = stamp(el('section', { class: 'response', 'aria-label': label }));
    this.meta = el('p', { class: 'meta', text: label });
    this.section.append(this.meta);
    $('log').append(this.section);
  }

  /** Shows an error; a later one of the same response (the terminal response.failed after an
   * `error` event) replaces it, so one failure is shown once. */
  error(message) {
    if (this.errorBox) {
      this.errorBox.textContent = message;
    } else {
      this.errorBox = stamp(el('div', { class: 'error', role: 'alert', text: message }));
      this.section.append(this.errorBox);
    }
    announce(`Error: ${message}`);
  }

  notice(message) {
    this.section.append(stamp(el('p', { class: 'notice', text: message })));
  }

  /** A tool entry: <details> with a summary line and a body. */
  entry(kind, title, badge) {
    const summary = el('summary', {},
      el('span', { class: 'tool-kind', text: kind }),
      el('span', { class: 'tool-title', text: title }),
      el('span', { class: 'badge', text: badge }));
    const body = el('div', { class: 'tool-body' });
    const details = stamp(el('details', { class: `tool tool-${kind}` }, summary, body));
    this.section.append(details);
    return { details, summary, body, badge: summary.querySelector('.badge'), title: summary.querySelector('.tool-title') };
  }

  added(index, item) {
    let view;
    switch (item.type) {
      case 'message': view = this.message(item); break;
      case 'reasoning': view = this.reasoning(item); break;
      case 'web_search_call': view = this.webSearch(item); break;
      case 'file_search_call': view = this.fileSearch(item); break;
      case 'custom_tool_call': view = this.customCall(item); break;
      case 'function_call': view = this.functionCall(item); break;
      case 'custom_tool_call_output':
      case 'function_call_output': view = this.callOutput(item); break;
      case 'mcp_list_tools': view = this.mcpListTools(item); break;
      case 'mcp_call': view = this.mcpCall(item); break;
      case 'mcp_approval_request': view = this.approvalRequest(item); break;
      default: {
        const e = this.entry(item.type || 'item', '', item.status || '');
        view = { item, update: (it) => { e.body.replaceChildren(el('pre', { text: JSON.stringify(it, null, 2) })); } };
        view.update(item);
      }
    }
    view.item = item;
    this.items.set(index, view);
    scrollToEnd();
  }

  get(index) {
    return this.items.get(index);
  }

  done(index, item) {
    const view = this.items.get(index);
    if (!view) {
      this.added(index, item);
      this.items.get(index).update(item);
    } else {
      view.item = item;
      view.update(item);
    }
  }

  // --- messages: commentary apart from the answer, text streamed token by token. An answer
  // is Markdown (markdown.js), rendered again from its whole text at most once per frame while
  // it streams and once more when it is done; commentary and refusals are shown as they are.
  message(item) {
    const commentary = isCommentary(item);
    const box = stamp(el('div', { class: commentary ? 'commentary' : 'answer' }));
    if (commentary) box.append(el('span', { class: 'label', text: 'commentary' }));
    const text = el('div', { class: 'text' });
    const notes = el('ol', { class: 'footnotes', hidden: true, 'aria-label': 'Sources' });
    box.append(text, notes);
    if (!commentary) box.classList.add('streaming');
    this.section.append(box);
    const view = {
      raw: '',
      annotations: [],
      refusal: false,
      box,
      frame: 0,
      markdown() {
        return box.classList.contains('answer') && !view.refusal;
      },
      append(delta) {
        view.raw += delta;
        if (view.markdown() || view.annotations.length || text.classList.contains('markdown')) view.schedule();
        else text.append(delta); // plain text token by token, no re-render
      },
      schedule() {
        if (!view.frame) view.frame = requestAnimationFrame(() => { view.frame = 0; keepingEnd(view.render); });
      },
      render() {
        if (view.frame) cancelAnimationFrame(view.frame);
        view.frame = 0;
        const scope = box.dataset.seq;
        let list;
        if (view.markdown()) {
          const rendered = renderMarkdown(view.raw, view.annotations, scope);
          text.classList.add('markdown');
          text.replaceChildren(rendered.fragment);
          list = rendered.notes;
        } else {
          const { segments, notes: plain } = segmentText(view.raw, view.annotations);
          text.classList.remove('markdown');
          text.replaceChildren(...segments.map((s) => renderSegment(s, scope)));
          list = plain;
        }
        notes.replaceChildren(...list.map((n) => renderNote(n, scope)));
        notes.hidden = list.length === 0;
      },
      update(it) {
        const part = (it.content || []).find((c) => c.type === 'output_text');
        const refusal = (it.content || []).find((c) => c.type === 'refusal');
        if (part) {
          view.raw = part.text || '';
          view.annotations = Array.isArray(part.annotations) ? part.annotations : [];
        } else if (refusal) {
          view.raw = refusal.refusal || '';
          view.refusal = true;
          box.classList.add('refusal');
        }
        if (isCommentary(it) && box.classList.contains('answer')) {
          box.className = 'commentary';
          box.prepend(el('span', { class: 'label', text: 'commentary' }));
        }
        view.render();
        if (it.status && it.status !== 'in_progress') box.classList.remove('streaming');
        if (it.status === 'incomplete') box.classList.add('incomplete');
      },
    };
    return view;
  }

  reasoning(item) {
    const e = this.entry('reasoning', 'Reasoning', item.status || '');
    const view = {
      text: '',
      append(delta) {
        view.text += delta;
        e.body.replaceChildren(el('p', { class: 'text', text: view.text }));
      },
      update(it) {
        const summary = (it.summary || []).map((s) => s.text).join('\n\n');
        const content = (it.content || []).map((c) => c.text).join('\n\n');
        view.text = summary || content || view.text;
        e.badge.textContent = it.status || 'done';
        e.body.replaceChildren(el('p', { class: 'text', text: view.text || '(no summary)' }));
      },
    };
    return view;
  }

  webSearch(item) {
    const e = this.entry('web_search', 'searching…', item.status || 'in_progress');
    const view = {
      status(s) { e.badge.textContent = s; },
      update(it) {
        const action = it.action || {};
        const query = action.query || (Array.isArray(action.queries) ? action.queries.join(' · ') : '');
        const sources = Array.isArray(action.sources) ? action.sources : [];
        e.title.textContent = query ? `“${query}”` : (action.url || action.type || '');
        e.badge.textContent = `${it.status}${sources.length ? ` · ${plural(sources.length, 'source')}` : ''}`;
        e.details.classList.toggle('failed', it.status === 'failed');
        const body = [el('p', {}, el('strong', { text: 'Query: ' }), query || '—')];
        if (sources.length) {
          body.push(el('ul', { class: 'sources' }, ...sources.map((s) => el('li', {}, link(s.url)))));
        } else if (it.status === 'completed') {
          body.push(el('p', { class: 'note', text: 'No sources reported.' }));
        }
        e.body.replaceChildren(...body);
      },
    };
    view.update(item);
    return view;
  }

  fileSearch(item) {
    const e = this.entry('file_search', 'searching files…', item.status || 'in_progress');
    const view = {
      status(s) { e.badge.textContent = s; },
      update(it) {
        const queries = Array.isArray(it.queries) ? it.queries : [];
        const results = Array.isArray(it.results) ? it.results : [];
        e.title.textContent = queries.length ? queries.map((q) => `“${q}”`).join(' · ') : 'file search';
        e.badge.textContent = `${it.status}${results.length ? ` · ${plural(results.length, 'result')}` : ''}`;
        e.details.classList.toggle('failed', it.status === 'failed');
        const body = [el('p', {}, el('strong', { text: 'Queries: ' }), queries.join(' · ') || '—')];
        if (results.length) {
          body.push(el('ol', { class: 'results' }, ...results.map((r) => el('li', {},
            el('strong', { text: r.filename || r.file_id || 'file' }),
            typeof r.score === 'number' ? el('span', { class: 'score', text: ` score ${r.score.toPrecision(3)}` }) : null,
            r.text ? el('blockquote', { text: r.text }) : null))));
        }
        e.body.replaceChildren(...body);
      },
    };
    view.update(item);
    return view;
  }

  customCall(item) {
    const e = this.entry('custom_tool_call', item.name || '', 'calling on the gateway');
    const input = el('pre', { class: 'tool-input', text: item.input || '' });
    const output = el('div', { class: 'tool-output-slot' });
    e.body.append(el('p', { class: 'label', text: 'Input' }), input, output);
    const view = {
      call_id: item.call_id,
      entry: e,
      output,
      append(delta) { input.textContent += delta; },
      update(it) {
        input.textContent = it.input || '';
        if (it.status === 'failed') e.badge.textContent = 'failed';
      },
    };
    return view;
  }

  functionCall(item) {
    const owner = Object.prototype.hasOwnProperty.call(BROWSER_TOOLS, item.name) ? 'browser tool' : 'client tool';
    const e = this.entry('function_call', item.name || '', `returned to the ${owner === 'browser tool' ? 'browser' : 'client'}`);
    e.details.classList.add('client');
    const args = el('pre', { class: 'tool-input', text: item.arguments || '' });
    const output = el('div', { class: 'tool-output-slot' });
    e.body.append(el('p', { class: 'label', text: 'Arguments' }), args, output);
    const view = {
      call_id: item.call_id,
      entry: e,
      output,
      append(delta) { args.textContent += delta; },
      update(it) { args.textContent = pretty(it.arguments || ''); },
    };
    return view;
  }

  // --- MCP: the listing and the calls are collapsible entries; an approval request is a box
  // with Approve / Deny (enabled once its response has ended, see offerApprovals).
  mcpListTools(item) {
    const label = item.server_label || 'mcp';
    const e = this.entry('mcp_list_tools', `listing the tools of ${label}…`, 'in_progress');
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

  mcpCall(item) {
    const label = item.server_label || 'mcp';
    const e = this.entry('mcp_call', `${label} · ${item.name || ''}`, 'calling on the gateway');
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

  approvalRequest(item) {
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
    this.section.append(box);
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

  /** Puts a tool output under its call's entry (or on its own when there is no such call). */
  callOutput(item) {
    const call = [...this.items.values()].find((v) => v.call_id && v.call_id === item.call_id);
    const block = stamp(el('div', { class: 'tool-output' },
      el('p', { class: 'label', text: item.type === 'custom_tool_call_output' ? 'Output (executed on the gateway)' : 'Output' }),
      el('pre', { text: typeof item.output === 'string' ? item.output : JSON.stringify(item.output, null, 2) })));
    if (call) {
      call.output.append(block);
      call.entry.badge.textContent = item.status === 'failed' ? 'failed on the gateway' : 'executed on the gateway';
      call.entry.details.classList.add('executed');
      call.entry.details.classList.toggle('failed', item.status === 'failed');
    } else {
      const e = this.entry(item.type, item.call_id || '', item.status || 'done');
      e.body.append(block);
    }
    return { update() {} };
  }
}

/** One segment of text shown as it is (commentary, refusals). */
function renderSegment(s, scope) {
  if (s.kind === 'text') return document.createTextNode(s.text);
  const ref = citationRef(s.note, scope);
  if (s.kind === 'marker') return ref;
  const href = s.note.type === 'url_citation' ? safeUrl(s.note.url) : null;
  const span = href
    ? el('a', { class: 'cite', href, target: '_blank', rel: 'noopener noreferrer', title: s.note.title || href, text: s.text })
    : el('mark', { class: 'cite', title: s.note.filename || '', text: s.text });
  const wrap = document.createDocumentFragment();
  wrap.append(span, ref);
  return wrap;
}

function renderNote(n, scope) {
  const li = el('li', { id: `note-${scope}-${n.n}`, value: n.n });
  if (n.type === 'url_citation') li.append(link(n.url, n.title || n.url), el('span', { class: 'url', text: ` ${n.url}` }));
  else li.append(el('span', { text: n.filename || n.file_id || 'file' }), n.file_id ? el('code', { text: ` ${n.file_id}` }) : '');
  return li;
}

// ---------------------------------------------------------------- one request

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

/** Sends one request and renders its stream; resolves to the terminal Response (or null). */
async function streamResponse(body, view) {
  const controller = new AbortController();
  state.controller = controller;
  let res;
  try {
    res = await fetch('v1/responses', {
      method: 'POST',
      headers: withKey({ 'content-type': 'application/json', accept: 'text/event-stream' }),
      body: JSON.stringify(body),
      signal: controller.signal,
    });
  } catch (e) {
    view.error(controller.signal.aborted ? 'Stopped.' : `The gateway could not be reached: ${e.message}`);
    return null;
  }
  if (!res.ok) {
    let detail = null;
    try {
      detail = await res.json();
    } catch {
      detail = null;
    }
    if (res.status === 401) askForKey(detail);
    if (res.status === 400) mcpRefusal(detail, body);
    view.error(`HTTP ${res.status}: ${errorMessage(detail, res.statusText || 'request failed')}`);
    return null;
  }
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  let terminal = null;
  const handle = (ev) => {
    let data;
    try {
      data = JSON.parse(ev.data);
    } catch {
      return;
    }
    const t = handleEvent(data, view);
    if (t) terminal = t;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const ev of parser.push(decoder.decode(value, { stream: true }))) handle(ev);
    }
    for (const ev of parser.push(decoder.decode())) handle(ev);
    for (const ev of parser.end()) handle(ev);
  } catch (e) {
    view.error(controller.signal.aborted ? 'Stopped.' : `The stream broke off: ${e.message}`);
    return null;
  }
  if (!terminal) view.error('The stream ended without a terminal event.');
  return terminal;
}

/** Applies one event to the view; returns the Response on a terminal event. */
function handleEvent(ev, view) {
  const type = ev.type || '';
  switch (type) {
    case 'response.created':
      view.responseId = ev.response && ev.response.id;
      view.meta.textContent = `${view.meta.textContent} · ${view.responseId || ''}`;
      return null;
    case 'response.output_item.added':
      view.added(ev.output_index, ev.item || {});
      return null;
    case 'response.output_item.done':
      view.done(ev.output_index, ev.item || {});
      return null;
    case 'response.refusal.delta': {
      const v = view.get(ev.output_index);
      if (v && 'refusal' in v) v.refusal = true; // shown as it is, not as Markdown
      if (v && v.append) v.append(ev.delta || '');
      scrollToEnd();
      return null;
    }
    case 'response.output_text.delta':
    case 'response.reasoning_summary_text.delta':
    case 'response.reasoning_text.delta':
    case 'response.function_call_arguments.delta':
    case 'response.custom_tool_call_input.delta':
    case 'response.mcp_call_arguments.delta': {
      const v = view.get(ev.output_index);
      if (v && v.append) v.append(ev.delta || '');
      scrollToEnd();
      return null;
    }
    case 'response.output_text.annotation.added': {
      const v = view.get(ev.output_index);
      if (v && v.annotations && ev.annotation) {
        v.annotations = v.annotations.concat([ev.annotation]);
        v.render();
      }
      return null;
    }
    case 'response.content_part.done': {
      const v = view.get(ev.output_index);
      if (v && v.render && ev.part && ev.part.type === 'output_text') {
        v.raw = ev.part.text || v.raw;
        v.annotations = Array.isArray(ev.part.annotations) ? ev.part.annotations : v.annotations;
        v.render();
      }
      return null;
    }
    case 'response.web_search_call.in_progress':
    case 'response.web_search_call.searching':
    case 'response.web_search_call.completed':
    case 'response.file_search_call.in_progress':
    case 'response.file_search_call.searching':
    case 'response.file_search_call.completed':
    case 'response.mcp_list_tools.in_progress':
    case 'response.mcp_list_tools.completed':
    case 'response.mcp_list_tools.failed':
    case 'response.mcp_call.in_progress':
    case 'response.mcp_call.completed':
    case 'response.mcp_call.failed': {
      const v = view.get(ev.output_index);
      if (v && v.status) v.status(type.split('.').pop());
      return null;
    }
    case 'response.mcp_call_arguments.done': {
      const v = view.get(ev.output_index);
      if (v && v.setArguments) v.setArguments(ev.arguments);
      return null;
    }
    case 'error':
      view.error(errorMessage(ev, 'stream error'));
      return null;
    case 'response.failed':
      view.error(`The response failed: ${errorMessage(ev.response && ev.response.error, 'no reason given')}`);
      return ev.response || {};
    case 'response.incomplete': {
      const reason = ev.response && ev.response.incomplete_details && ev.response.incomplete_details.reason;
      view.notice(`The response is incomplete${reason ? ` (${reason})` : ''}.`);
      return ev.response || {};
    }
    case 'response.completed':
      return ev.response || {};
    default:
      return null;
  }
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
    const response = await streamResponse(body, view);
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

async function send() {
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

// ---------------------------------------------------------------- wiring

function init() {
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    delete document.body.dataset.idle;
    send();
  });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  // Enter toggles a tool switch too (Space does natively).
  for (const box of document.querySelectorAll('input[type=checkbox]')) {
    box.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        box.click();
      }
    });
    box.addEventListener('change', refreshToolChoice);
  }
  $('vector-store').addEventListener('change', refreshToolChoice);
  for (const id of ['mcp-url', 'mcp-label']) $(id).addEventListener('input', mcpProblemCleared);
  $('tool-mcp').addEventListener('change', mcpProblemCleared);
  $('stop').addEventListener('click', () => state.controller && state.controller.abort());
  $('new-chat').addEventListener('click', () => {
    if (state.controller) state.controller.abort();
    state.history = [];
    state.lastResponseId = null;
    state.open = null;
    state.answered = new Set();
    $('log').replaceChildren();
    announce('New conversation.');
    $('prompt').focus();
  });
  $('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const key = $('api-key').value.trim();
    if (!key) return;
    try {
      sessionStorage.setItem(KEY_STORAGE, key);
    } catch {
      // storage refused (private mode): the key is not kept
    }
    $('api-key').value = '';
    $('key-form').hidden = true;
    announce('API key set for this tab.');
    Promise.all([loadModels(), loadVectorStores()]).finally(refreshToolChoice);
    $('prompt').focus();
  });
  if (window.matchMedia('(max-width: 640px)').matches) $('settings').open = false;
  refreshToolChoice();
  Promise.all([loadModels(), loadVectorStores()]).finally(() => {
    refreshToolChoice();
    document.body.dataset.ready = 'true';
  });
}

init();
