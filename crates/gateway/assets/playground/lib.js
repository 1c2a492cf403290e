// Pure helpers of the playground page (no DOM): SSE parsing, request building, annotation
// spans, the browser-side tool. Loaded by app.js in the browser and by the node unit tests
// in tests/browser.

/** Incremental parser for a `text/event-stream` body read in arbitrary chunks. */
export class SseParser {
  constructor() {
    this.partial = '';
    this.event = '';
    this.data = [];
  }

  /** Feeds decoded text; returns the complete events it finished, as {event, data}. */
  push(text) {
    const out = [];
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop();
    for (let line of lines) {
      if (line.endsWith('\r')) line = line.slice(0, -1);
      this.line(line, out);
    }
    return out;
  }

  /** Ends the body: a last event without its blank line still counts. */
  end() {
    const out = [];
    if (this.partial) this.line(this.partial.replace(/\r$/, ''), out);
    this.partial = '';
    this.line('', out);
    return out;
  }

  line(line, out) {
    if (line === '') {
      if (this.data.length) out.push({ event: this.event || 'message', data: this.data.join('\n') });
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return; // comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
  }
}

/** The browser-side client tools the page declares as `function` tools. */
export const BROWSER_TOOLS = {
  get_browser_time: {
    declaration: {
      type: 'function',
      name: 'get_browser_time',
      description: "The current date and time in the user's browser, and its time zone.",
      parameters: {
        type: 'object',
        properties: {
          time_zone: {
            type: 'string',
            description: "An IANA time zone such as Europe/Berlin; default: the browser's own.",
          },
        },
        required: [],
        additionalProperties: false,
      },
    },
    run: getBrowserTime,
  },
};

/** Runs get_browser_time with its JSON arguments string; returns the output string. */
export function getBrowserTime(argumentsJson, now = new Date()) {
  let args = {};
  try {
    args = argumentsJson ? JSON.parse(argumentsJson) : {};
  } catch (e) {
    return JSON.stringify({ error: `arguments are not valid JSON: ${e.message}` });
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) args = {};
  const own = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  const zone = typeof args.time_zone === 'string' && args.time_zone ? args.time_zone : own;
  let local;
  try {
    local = new Intl.DateTimeFormat('en-CA', {
      timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false, weekday: 'long',
    }).format(now);
  } catch {
    return JSON.stringify({ error: `unknown time zone ${JSON.stringify(zone)}` });
  }
  return JSON.stringify({ utc: now.toISOString(), local, time_zone: zone });
}

/** Runs one client function call; unknown names get an error output the model can read. */
export function runBrowserTool(name, argumentsJson) {
  const tool = Object.prototype.hasOwnProperty.call(BROWSER_TOOLS, name) ? BROWSER_TOOLS[name] : null;
  if (!tool) return JSON.stringify({ error: `the browser has no tool named ${JSON.stringify(name)}` });
  try {
    return tool.run(argumentsJson);
  } catch (e) {
    return JSON.stringify({ error: String(e && e.message ? e.message : e) });
  }
}

/**
 * The `tools`, `include` and `tool_choice` of a request from the page's switches:
 * {webSearch, packageVersion, fileSearch, vectorStoreIds, browserTime, toolChoice}.
 * toolChoice is 'auto' | 'required' | 'none' | 'tool:<name>'.
 */
export function toolSettings(s) {
  const tools = [];
  const include = [];
  const named = {};
  if (s.webSearch) {
    tools.push({ type: 'web_search' });
    include.push('web_search_call.action.sources');
    named.web_search = { type: 'web_search' };
  }
  if (s.packageVersion) {
    tools.push({ type: 'custom', name: 'package_version' });
    named.package_version = { type: 'custom', name: 'package_version' };
  }
  if (s.fileSearch && s.vectorStoreIds && s.vectorStoreIds.length) {
    tools.push({ type: 'file_search', vector_store_ids: [...s.vectorStoreIds] });
    include.push('file_search_call.results');
    named.file_search = { type: 'file_search' };
  }
  if (s.browserTime) {
    tools.push(BROWSER_TOOLS.get_browser_time.declaration);
    named.get_browser_time = { type: 'function', name: 'get_browser_time' };
  }
  let toolChoice = s.toolChoice || 'auto';
  if (toolChoice.startsWith('tool:')) {
    // A named tool that is switched off falls back to auto rather than a 400.
    toolChoice = named[toolChoice.slice(5)] || 'auto';
  }
  return { tools, include, toolChoice, named: Object.keys(named) };
}

/** Output items worth replaying as history: everything but commentary (progress) messages. */
export function replayable(output) {
  return (output || []).filter((item) => !isCommentary(item));
}

/** A message shown apart from the answer: `phase: "commentary"` (the gateway's progress). */
export function isCommentary(item) {
  return !!item && item.type === 'message'
    && (item.phase === 'commentary' || String(item.id || '').startsWith('msg_progress_'));
}

/** Client function calls of a finished response that have no output yet. */
export function pendingFunctionCalls(output) {
  const answered = new Set((output || []).filter((i) => i.type === 'function_call_output').map((i) => i.call_id));
  return (output || []).filter((i) => i.type === 'function_call' && !answered.has(i.call_id));
}

/** UTF-16 offsets of every code-point offset 0..n of `text` (annotation indices are code points). */
export function codePointOffsets(text) {
  const map = [];
  let u = 0;
  for (const ch of text) {
    map.push(u);
    u += ch.length;
  }
  map.push(u);
  return map;
}

/** Only http(s) URLs become links. */
export function safeUrl(url) {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

/**
 * Splits `text` at its annotations into segments:
 *   {kind:'text', text} | {kind:'cite', text, note} | {kind:'marker', note}
 * and the footnotes [{n, type, url?, title?, file_id?, filename?}] they refer to, numbered in
 * text order (one number per distinct source). Spans (`start_index`/`end_index`, code points,
 * end exclusive) wrap text; points (`index`, e.g. file_citation) insert a marker. Overlapping
 * or out-of-range spans are dropped, never reordered.
 */
export function segmentText(text, annotations) {
  const map = codePointOffsets(text);
  const last = map.length - 1;
  const at = (cp) => map[Math.max(0, Math.min(last, cp | 0))];
  const marks = [];
  for (const a of annotations || []) {
    if (!a || typeof a !== 'object') continue;
    if (Number.isInteger(a.start_index) && Number.isInteger(a.end_index)) {
      if (a.start_index < 0 || a.end_index > last || a.end_index <= a.start_index) continue;
      marks.push({ start: at(a.start_index), end: at(a.end_index), a });
    } else if (Number.isInteger(a.index)) {
      if (a.index < 0 || a.index > last) continue;
      const p = at(a.index);
      marks.push({ start: p, end: p, a });
    }
  }
  marks.sort((x, y) => x.start - y.start || x.end - y.end);
  const notes = [];
  const byKey = new Map();
  const noteFor = (a) => {
    const key = a.type === 'url_citation' ? `u:${a.url}` : `f:${a.file_id || ''}:${a.filename || ''}`;
    if (!byKey.has(key)) {
      const note = { n: notes.length + 1, type: a.type, url: a.url, title: a.title, file_id: a.file_id, filename: a.filename };
      byKey.set(key, note);
      notes.push(note);
    }
    return byKey.get(key);
  };
  const segments = [];
  let pos = 0;
  for (const m of marks) {
    if (m.start < pos) continue; // overlaps the previous span
    if (m.start > pos) segments.push({ kind: 'text', text: text.slice(pos, m.start) });
    const note = noteFor(m.a);
    if (m.end > m.start) {
      segments.push({ kind: 'cite', text: text.slice(m.start, m.end), note });
      pos = m.end;
    } else {
      segments.push({ kind: 'marker', note });
      pos = m.start;
    }
  }
  if (pos < text.length) segments.push({ kind: 'text', text: text.slice(pos) });
  return { segments, notes };
}

/** The message of an error body or event, whatever its shape (nested or flat). */
export function errorMessage(value, fallback = 'unknown error') {
  if (!value || typeof value !== 'object') return typeof value === 'string' && value ? value : fallback;
  const e = value.error && typeof value.error === 'object' ? value.error : value;
  const message = typeof e.message === 'string' && e.message ? e.message : fallback;
  const code = e.code || e.type;
  return code ? `${message} (${code})` : message;
}
