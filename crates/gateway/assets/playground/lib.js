// Pure helpers of the playground page (no DOM): SSE parsing, request building, annotation
// spans and citation markers, the browser-side tool. Imported by the page's other modules in
// the browser and by the node unit tests in tests/browser.

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

/** What an MCP `server_label` may be (the gateway's rule). */
export const MCP_LABEL_RE = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The `{"type":"mcp"}` declaration of the page's MCP fields {url, label, approval}: `{tool}`,
 * or `{error, field}` (a sentence for the page; field 'url' or 'label') when the URL is not
 * http(s) or the label is not one the gateway takes. An empty URL declares the server by
 * `server_label` alone (no `server_url`): a server the gateway's operator configured under
 * that label (`[mcp.servers.<label>]`). An empty label is "mcp". `approval` (ask before each
 * call) is `require_approval: "always"`, else "never". Whether the gateway may reach the URL,
 * or has a server under the label, is its operator's choice: it answers 400 when not.
 */
export function mcpTool({ url, label, approval } = {}) {
  const address = typeof url === 'string' ? url.trim() : '';
  if (address) {
    let parsed;
    try {
      parsed = new URL(address);
    } catch {
      return { error: `The MCP server URL is not a URL: ${address}`, field: 'url' };
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      return { error: `The MCP server URL must start with http:// or https:// (not ${parsed.protocol}).`, field: 'url' };
    }
  }
  const name = (typeof label === 'string' ? label.trim() : '') || 'mcp';
  if (!MCP_LABEL_RE.test(name)) {
    return { error: 'The MCP server label may only hold letters, digits, _ and - (at most 64).', field: 'label' };
  }
  const tool = { type: 'mcp', server_label: name };
  if (address) tool.server_url = address;
  tool.require_approval = approval ? 'always' : 'never';
  return { tool };
}

/**
 * The `tools`, `include` and `tool_choice` of a request from the page's switches:
 * {webSearch, packageVersion, fileSearch, vectorStoreIds, mcp, browserTime, toolChoice};
 * mcp is null (switched off) or the MCP fields (see mcpTool); when they are not valid, the
 * tool is left out and `mcpError` is {message, field}.
 * toolChoice is 'auto' | 'required' | 'none' | 'tool:<name>'; 'tool:mcp' is
 * `{"type":"mcp","server_label"}` (any tool of that server).
 */
export function toolSettings(s) {
  const tools = [];
  const include = [];
  const named = {};
  let mcpError = null;
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
  if (s.mcp) {
    const m = mcpTool(s.mcp);
    if (m.tool) {
      tools.push(m.tool);
      named.mcp = { type: 'mcp', server_label: m.tool.server_label };
    } else {
      mcpError = { message: m.error, field: m.field };
      named.mcp = { type: 'mcp' }; // offered while the fields are being filled; not sent
    }
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
  return { tools, include, toolChoice, named: Object.keys(named), mcpError };
}

/**
 * Which gateway tools have a backend, from the body of `GET /v1/gateway/tools`
 * ({data: [{type, name?, available, reason?, server_urls?, server_labels?}]}): {webSearch,
 * fileSearch, packageVersion, mcp}, each {available, reason}; mcp also {serverUrls, labels}.
 * A body that is not such a list (a gateway without the route, an error) offers every tool,
 * as the page did before it asked; a tool the list leaves out is unavailable.
 */
export function gatewayTools(body) {
  const everything = { available: true, reason: '' };
  const data = body && Array.isArray(body.data) ? body.data.filter((t) => t && typeof t.type === 'string') : null;
  if (!data) return { webSearch: everything, fileSearch: everything, packageVersion: everything, mcp: { ...everything, serverUrls: true, labels: [] } };
  const pick = (match, missing) => {
    const t = data.find(match);
    if (!t) return { available: false, reason: missing };
    return { available: t.available === true, reason: typeof t.reason === 'string' && t.reason ? t.reason : 'not configured on this gateway' };
  };
  const mcpEntry = data.find((t) => t.type === 'mcp') || {};
  return {
    webSearch: pick((t) => t.type === 'web_search', 'This gateway does not execute web_search.'),
    fileSearch: pick((t) => t.type === 'file_search', 'This gateway does not execute file_search.'),
    packageVersion: pick((t) => t.type === 'custom' && t.name === 'package_version',
      'This gateway has no server tool package_version ([server_tools.package_version] enabled = false).'),
    mcp: {
      ...pick((t) => t.type === 'mcp', 'This gateway does not execute mcp tools.'),
      serverUrls: mcpEntry.server_urls === true,
      labels: Array.isArray(mcpEntry.server_labels) ? mcpEntry.server_labels.filter((l) => typeof l === 'string') : [],
    },
  };
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

/** MCP approval requests of a finished response, but those whose id is in `answered`. */
export function pendingApprovals(output, answered = new Set()) {
  return (output || []).filter((i) => i && i.type === 'mcp_approval_request' && typeof i.id === 'string' && !answered.has(i.id));
}

/** The `mcp_approval_response` input items of decisions [{id, approve}], in that order. */
export function approvalResponses(decisions) {
  return decisions.map((d) => ({ type: 'mcp_approval_response', approval_request_id: d.id, approve: d.approve === true }));
}

/** The text of an `mcp_call`'s error: null, a string, or an object
 * {type, code?, message?, content?: [{type:"text", text}]}. */
export function mcpErrorText(error) {
  if (error === null || error === undefined) return '';
  if (typeof error === 'string') return error;
  if (typeof error !== 'object') return String(error);
  const parts = [];
  if (typeof error.message === 'string' && error.message) parts.push(error.message);
  if (Array.isArray(error.content)) {
    for (const c of error.content) if (c && typeof c.text === 'string' && c.text) parts.push(c.text);
  }
  const kind = [error.type, error.code].filter((x) => x !== undefined && x !== null && x !== '').join(' ');
  if (!parts.length) return kind || JSON.stringify(error);
  return kind ? `${parts.join('\n')} (${kind})` : parts.join('\n');
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

/** Only http(s) and mailto URLs become links in a rendered answer. */
export function safeLinkUrl(url) {
  if (typeof url !== 'string') return null;
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'mailto:' ? u.href : null;
  } catch {
    return null;
  }
}

/**
 * The annotations of `text` as non-overlapping marks in text order, {start, end, note} in
 * UTF-16 offsets (end === start for a point), and the footnotes [{n, type, url?, title?,
 * file_id?, filename?}] they refer to, numbered in text order (one number per distinct
 * source). Spans (`start_index`/`end_index`, code points, end exclusive) wrap text; points
 * (`index`, e.g. file_citation) mark a place. Overlapping or out-of-range spans are dropped,
 * never reordered.
 */
export function annotationMarks(text, annotations) {
  const map = codePointOffsets(text);
  const last = map.length - 1;
  const at = (cp) => map[Math.max(0, Math.min(last, cp | 0))];
  const found = [];
  for (const a of annotations || []) {
    if (!a || typeof a !== 'object') continue;
    if (Number.isInteger(a.start_index) && Number.isInteger(a.end_index)) {
      if (a.start_index < 0 || a.end_index > last || a.end_index <= a.start_index) continue;
      found.push({ start: at(a.start_index), end: at(a.end_index), a });
    } else if (Number.isInteger(a.index)) {
      if (a.index < 0 || a.index > last) continue;
      const p = at(a.index);
      found.push({ start: p, end: p, a });
    }
  }
  found.sort((x, y) => x.start - y.start || x.end - y.end);
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
  const marks = [];
  let pos = 0;
  for (const m of found) {
    if (m.start < pos) continue; // overlaps the previous span
    marks.push({ start: m.start, end: m.end, note: noteFor(m.a) });
    pos = m.end;
  }
  return { marks, notes };
}

/**
 * Splits `text` at its annotations into segments:
 *   {kind:'text', text} | {kind:'cite', text, note} | {kind:'marker', note}
 * and the footnotes they refer to (see annotationMarks). Used for text shown as it is
 * (commentary, refusals); answers go through markCitations and Markdown.
 */
export function segmentText(text, annotations) {
  const { marks, notes } = annotationMarks(text, annotations);
  const segments = [];
  let pos = 0;
  for (const m of marks) {
    if (m.start > pos) segments.push({ kind: 'text', text: text.slice(pos, m.start) });
    if (m.end > m.start) segments.push({ kind: 'cite', text: text.slice(m.start, m.end), note: m.note });
    else segments.push({ kind: 'marker', note: m.note });
    pos = m.end;
  }
  if (pos < text.length) segments.push({ kind: 'text', text: text.slice(pos) });
  return { segments, notes };
}

// Citation markers for Markdown. An answer's annotations index its *source* text, and Markdown
// rendering moves and drops characters (`[label](url)` becomes "label"), so the offsets cannot
// be applied to the rendered page. Instead markCitations puts one private-use character at
// each annotation's start, end or point in the source before it is parsed: mark k (0-based)
// starts at U+E100+k, ends at U+E200+k, or is a point at U+E300+k. Markdown passes such
// characters through as text, so after rendering (and sanitizing) the page finds them in the
// DOM and wraps what lies between a start and its end (markdown.js). The characters were
// chosen because models do not write them and Markdown gives them no meaning; any the model
// did write are replaced by U+FFFD first (same length), so text cannot forge a marker.
export const MARK_START = 0xe100;
export const MARK_END = 0xe200;
export const MARK_POINT = 0xe300;
/** At most this many marks per message are placed in the text (the rest stay footnotes). */
export const MAX_MARKS = 0x100;
/** Any marker character (and nothing else). */
export const MARKER_RE = /[\uE100-\uE3FF]/g;

/** Where a marker at `p` goes: a marker at the start of a line moves past the line's block
 * syntax (list bullet or number, heading #, quote >, table |, indentation), which it would
 * otherwise turn into text; never past `limit`. */
function pastBlockSyntax(text, p, limit) {
  if (p !== 0 && text[p - 1] !== '\n') return p;
  const m = /^(?:[ \t]*(?:[-*+][ \t]+|\d{1,9}[.)][ \t]+|#{1,6}[ \t]+|>[ \t]?|\|[ \t]*))*[ \t]*/.exec(text.slice(p, limit));
  return p + (m ? m[0].length : 0);
}

/**
 * `text` with citation markers at its annotations (see above), the marks [{k, note, span}]
 * (span: false for a point) and the footnotes. A span's end moves back before trailing
 * whitespace, so its end marker never starts the next line.
 */
export function markCitations(text, annotations) {
  const { marks, notes } = annotationMarks(text, annotations);
  const clean = text.replace(MARKER_RE, '\uFFFD');
  const cites = [];
  const inserts = []; // [offset, marker], in offset order
  for (const m of marks.slice(0, MAX_MARKS)) {
    const k = cites.length;
    let end = m.end;
    while (end > m.start && /\s/.test(clean[end - 1])) end--;
    const start = pastBlockSyntax(clean, m.start, end);
    if (end > start) {
      inserts.push([start, String.fromCharCode(MARK_START + k)], [end, String.fromCharCode(MARK_END + k)]);
      cites.push({ k, note: m.note, span: true });
    } else {
      const p = m.end > m.start ? end : pastBlockSyntax(clean, m.start, clean.length);
      inserts.push([p, String.fromCharCode(MARK_POINT + k)]);
      cites.push({ k, note: m.note, span: false });
    }
  }
  inserts.sort((x, y) => x[0] - y[0]); // stable: a moved point stays before a later span
  let source = '';
  let pos = 0;
  for (const [at, marker] of inserts) {
    source += clean.slice(pos, at) + marker;
    pos = at;
  }
  source += clean.slice(pos);
  return { source, cites, notes };
}

/** The message of an error body or event, whatever its shape (nested or flat). */
export function errorMessage(value, fallback = 'unknown error') {
  if (!value || typeof value !== 'object') return typeof value === 'string' && value ? value : fallback;
  const e = value.error && typeof value.error === 'object' ? value.error : value;
  const message = typeof e.message === 'string' && e.message ? e.message : fallback;
  const code = e.code || e.type;
  return code ? `${message} (${code})` : message;
}
