// The transcript: one ResponseView per response, its items rendered as they stream (messages
// with their Markdown and citations, reasoning, web and file search, tool calls and their
// outputs; the MCP items by mcp.js). Items are kept by output_index so that the stream's
// events (stream.js) can update them.

import { isCommentary, segmentText, safeUrl, BROWSER_TOOLS } from './lib.js';
import { renderMarkdown, citationRef } from './markdown.js';
import { $, el, stamp, announce, scrollToEnd, keepingEnd, pretty, plural, link } from './dom.js';
import { mcpListTools, mcpCall, approvalRequest } from './mcp.js';

/** The view of one response: its items by output_index, in a <section>. */
export class ResponseView {
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
      case 'mcp_list_tools': view = mcpListTools(this, item); break;
      case 'mcp_call': view = mcpCall(this, item); break;
      case 'mcp_approval_request': view = approvalRequest(this, item); break;
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
