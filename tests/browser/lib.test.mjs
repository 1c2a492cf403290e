// Unit tests of the playground's pure helpers (crates/gateway/assets/playground/lib.js), run
// by node itself: the SSE parser across chunk boundaries, annotation spans in code points,
// citation markers through the vendored Markdown parser (markdown.js; its sanitizing half
// needs a DOM and is tested in the browser), the request's tool declarations, the gateway's
// configured tools and the browser tool.

import test from 'node:test';
import assert from 'node:assert/strict';
import {
  SseParser, segmentText, codePointOffsets, toolSettings, replayable, pendingFunctionCalls,
  getBrowserTime, runBrowserTool, errorMessage, safeUrl, safeLinkUrl, markCitations,
  MARK_START, MARK_END, MARK_POINT, mcpTool, pendingApprovals, approvalResponses, mcpErrorText, gatewayTools,
} from '../../crates/gateway/assets/playground/lib.js';
import { markdownHtml } from '../../crates/gateway/assets/playground/markdown.js';

/** Marker characters shown as {s0}, {e0}, {p0} (start, end, point of mark 0). */
const showMarks = (s) => s.replace(/[\uE100-\uE3FF]/g, (c) => {
  const code = c.charCodeAt(0);
  const kind = code >= MARK_POINT ? 'p' : code >= MARK_END ? 'e' : 's';
  return `{${kind}${code - (kind === 'p' ? MARK_POINT : kind === 'e' ? MARK_END : MARK_START)}}`;
});

test('SSE: events split at every byte boundary parse the same', () => {
  const body = 'event: response.created\ndata: {"type":"response.created","n":1}\n\n'
    + ': keep-alive\n\n'
    + 'event: response.output_text.delta\r\ndata: {"type":"response.output_text.delta",\r\ndata: "delta":"é☕"}\r\n\r\n'
    + 'data: {"type":"response.completed"}';
  for (let cut = 0; cut <= body.length; cut++) {
    const p = new SseParser();
    const events = [...p.push(body.slice(0, cut)), ...p.push(body.slice(cut)), ...p.end()];
    assert.deepEqual(events.map((e) => e.event), ['response.created', 'response.output_text.delta', 'message'], `cut ${cut}`);
    assert.deepEqual(JSON.parse(events[1].data), { type: 'response.output_text.delta', delta: 'é☕' });
    assert.equal(JSON.parse(events[2].data).type, 'response.completed');
  }
});

test('annotations: code-point offsets become UTF-16 spans (astral characters before the link)', () => {
  const text = '🚴 Pogačar won 🏆 ([Wikipedia](https://en.wikipedia.org/wiki/X)). Bare: https://a.example/y';
  const cps = [...text];
  const span = '([Wikipedia](https://en.wikipedia.org/wiki/X))';
  const start = cps.join('').indexOf(span); // UTF-16 index
  const cpStart = [...text.slice(0, start)].length; // code-point index
  assert.notEqual(start, cpStart, 'the text must have astral characters before the span');
  const bareCp = [...text].length - 'https://a.example/y'.length;
  const { segments, notes } = segmentText(text, [
    { type: 'url_citation', start_index: cpStart, end_index: cpStart + [...span].length, url: 'https://en.wikipedia.org/wiki/X', title: 'X' },
    { type: 'url_citation', start_index: bareCp, end_index: [...text].length, url: 'https://a.example/y', title: 'Y' },
  ]);
  const cites = segments.filter((s) => s.kind === 'cite');
  assert.deepEqual(cites.map((c) => c.text), [span, 'https://a.example/y']);
  assert.deepEqual(notes.map((n) => [n.n, n.url]), [[1, 'https://en.wikipedia.org/wiki/X'], [2, 'https://a.example/y']]);
  assert.equal(segments.map((s) => s.text || '').join(''), text, 'no text lost or duplicated');
});

test('annotations: file_citation index inserts a marker; overlapping or out-of-range spans are dropped', () => {
  const text = 'naïve ☕ fact. Next.';
  const dot = [...text].indexOf('.');
  const { segments, notes } = segmentText(text, [
    { type: 'file_citation', index: dot, file_id: 'file-1', filename: 'a.pdf' },
    { type: 'file_citation', index: dot, file_id: 'file-1', filename: 'a.pdf' },
    { type: 'url_citation', start_index: 0, end_index: 99, url: 'https://x.example', title: 'x' },
    { type: 'url_citation', start_index: 0, end_index: 5, url: 'https://y.example', title: 'y' },
    { type: 'url_citation', start_index: 2, end_index: 7, url: 'https://z.example', title: 'z' },
  ]);
  assert.deepEqual(segments.map((s) => s.kind), ['cite', 'text', 'marker', 'marker', 'text']);
  assert.equal(segments[0].text, 'naïve');
  assert.equal(segments[1].text, ' ☕ fact');
  assert.deepEqual(notes.map((n) => n.filename || n.url), ['https://y.example', 'a.pdf'], 'one note per source');
  assert.deepEqual(codePointOffsets('a😀b'), [0, 1, 3, 4]);
});

test('citation markers: at code-point offsets, points and spans in text order, forged markers neutralized', () => {
  const wiki = 'https://en.wikipedia.org/wiki/X';
  const text = `🚴 Pogačar won 🏆 ([Wikipedia](${wiki})). Bare: https://a.example/y \uE100\uE200 end.`;
  const cps = [...text];
  const span = `([Wikipedia](${wiki}))`;
  const cpStart = [...text.slice(0, text.indexOf(span))].length;
  const bare = [...text.slice(0, text.indexOf('https://a.'))].length;
  const { source, cites, notes } = markCitations(text, [
    { type: 'url_citation', start_index: bare, end_index: bare + 'https://a.example/y'.length, url: 'https://a.example/y', title: 'Y' },
    { type: 'url_citation', start_index: cpStart, end_index: cpStart + [...span].length, url: wiki, title: 'X' },
    { type: 'file_citation', index: cps.indexOf('w'), file_id: 'file-1', filename: 'a.pdf' },
  ]);
  assert.equal(showMarks(source), `🚴 Pogačar {p0}won 🏆 {s1}${span}{e1}. Bare: {s2}https://a.example/y{e2} \uFFFD\uFFFD end.`);
  assert.deepEqual(cites.map((c) => [c.k, c.span, c.note.n]), [[0, false, 1], [1, true, 2], [2, true, 3]]);
  assert.deepEqual(notes.map((n) => n.filename || n.url), ['a.pdf', wiki, 'https://a.example/y']);
  assert.equal(source.replace(/[\uE100-\uE3FF]/g, '').length, text.length, 'the text itself keeps its length');
});

test('citation markers: never in front of a line\'s block syntax, never after a span\'s trailing newline', () => {
  const text = '- [Doc](https://d.example)\n# Title cites\n1. point\n| a | b |\ntext\n';
  const cp = (s) => [...text.slice(0, text.indexOf(s))].length;
  const { source } = markCitations(text, [
    { type: 'url_citation', start_index: 0, end_index: cp('\n# '), url: 'https://d.example', title: 'D' },
    { type: 'url_citation', start_index: cp('# Title'), end_index: cp('1. point'), url: 'https://t.example', title: 'T' },
    { type: 'file_citation', index: cp('1. point'), file_id: 'f' },
    { type: 'file_citation', index: cp('| a'), file_id: 'g' },
  ]);
  assert.equal(showMarks(source), '- {s0}[Doc](https://d.example){e0}\n# {s1}Title cites{e1}\n1. {p2}point\n| {p3}a | b |\ntext\n');
});

test('citation markers survive Markdown: beside links, bare URLs (autolinks end at a marker), code', () => {
  const text = 'See ([Wiki](https://w.example/a)) and https://b.example/x. Also `https://c.example/y`.\n\n- item https://d.example/z';
  const cp = (s) => [...text.slice(0, text.indexOf(s))].length;
  const ann = (s, url) => ({ type: 'url_citation', start_index: cp(s), end_index: cp(s) + [...s].length, url, title: url });
  const { source } = markCitations(text, [
    ann('([Wiki](https://w.example/a))', 'https://w.example/a'),
    ann('https://b.example/x', 'https://b.example/x'),
    ann('https://c.example/y', 'https://c.example/y'),
    ann('https://d.example/z', 'https://d.example/z'),
  ]);
  const html = showMarks(markdownHtml(source));
  assert.match(html, /\{s0\}\(<a href="https:\/\/w\.example\/a">Wiki<\/a>\)\{e0\}/);
  assert.match(html, /\{s1\}<a href="https:\/\/b\.example\/x">https:\/\/b\.example\/x<\/a>\{e1\}\./);
  assert.match(html, /<code>\{s2\}https:\/\/c\.example\/y\{e2\}<\/code>/);
  assert.match(html, /<li>item \{s3\}<a href="https:\/\/d\.example\/z">https:\/\/d\.example\/z<\/a>\{e3\}<\/li>/);
  assert.doesNotMatch(html, /%EE%/i, 'no marker inside an address');
});

test('Markdown: the model\'s raw HTML is text and images are links, before any sanitizing', () => {
  const html = markdownHtml('Hi <img src=x onerror="window.__pwned=1"> <script>x()</script>\n\n<div onclick="y()">\nblock\n</div>\n\n![pic](https://i.example/p.png) ![bad](javascript:z)');
  assert.doesNotMatch(html, /<(img|script|div)/);
  assert.match(html, /&lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;/);
  assert.match(html, /<a href="https:\/\/i\.example\/p\.png">pic<\/a>/);
  assert.doesNotMatch(html, /href="javascript/, 'an image with a javascript: address is only its text');
});

test('tools: each switch adds its standard declaration; a named choice of a tool that is off falls back to auto', () => {
  const all = toolSettings({
    webSearch: true, packageVersion: true, fileSearch: true, vectorStoreIds: ['vs_1'], browserTime: true, toolChoice: 'tool:package_version',
  });
  assert.deepEqual(all.tools.map((t) => t.type), ['web_search', 'custom', 'file_search', 'function']);
  assert.deepEqual(all.tools[1], { type: 'custom', name: 'package_version' });
  assert.deepEqual(all.tools[2], { type: 'file_search', vector_store_ids: ['vs_1'] });
  assert.equal(all.tools[3].name, 'get_browser_time');
  assert.deepEqual(all.include, ['web_search_call.action.sources', 'file_search_call.results']);
  assert.deepEqual(all.toolChoice, { type: 'custom', name: 'package_version' });
  const none = toolSettings({ fileSearch: true, vectorStoreIds: [], toolChoice: 'tool:web_search' });
  assert.deepEqual(none.tools, [], 'file_search without a store is not declared');
  assert.equal(none.toolChoice, 'auto');
  assert.deepEqual(toolSettings({ browserTime: true, toolChoice: 'required' }).toolChoice, 'required');
});

test('gateway tools: GET /v1/gateway/tools decides which switches are on offer; no list offers them all', () => {
  const tools = gatewayTools({ object: 'list', data: [
    { type: 'web_search', available: false, reason: 'web_search is not configured on this gateway: set `backend`' },
    { type: 'file_search', available: true, vector_store_api: true },
    { type: 'mcp', available: true, server_urls: false, server_labels: ['ops', 7, 'wiki'] },
    { type: 'custom', name: 'package_version', available: true },
  ] });
  assert.deepEqual(tools.webSearch, { available: false, reason: 'web_search is not configured on this gateway: set `backend`' });
  assert.equal(tools.fileSearch.available, true);
  assert.equal(tools.packageVersion.available, true);
  assert.deepEqual([tools.mcp.available, tools.mcp.serverUrls, tools.mcp.labels], [true, false, ['ops', 'wiki']]);
  // A tool the list leaves out (package_version disabled) is not offered; an entry without a
  // reason still gets one for its tooltip.
  const some = gatewayTools({ data: [{ type: 'web_search', available: false }, null, { type: 'mcp', available: false, reason: 'MCP is not configured' }] });
  assert.equal(some.packageVersion.available, false);
  assert.match(some.packageVersion.reason, /server_tools\.package_version/);
  assert.equal(some.webSearch.reason, 'not configured on this gateway');
  assert.deepEqual([some.mcp.available, some.mcp.reason, some.mcp.labels], [false, 'MCP is not configured', []]);
  assert.equal(some.fileSearch.available, false);
  // No list (an older gateway's 404, an error): every switch as before.
  for (const body of [null, { error: { message: 'x' } }, { data: 'x' }]) {
    const all = gatewayTools(body);
    assert.ok(all.webSearch.available && all.fileSearch.available && all.packageVersion.available && all.mcp.available, JSON.stringify(body));
    assert.equal(all.mcp.serverUrls, true);
  }
});

test('mcp: the switch adds one declaration from the URL, label and approval fields (an empty URL: the label alone); bad fields are errors, not tools', () => {
  const on = toolSettings({ mcp: { url: ' http://127.0.0.1:8123/mcp ', label: 'demo', approval: false }, browserTime: true, toolChoice: 'required' });
  assert.deepEqual(on.tools[0], { type: 'mcp', server_label: 'demo', server_url: 'http://127.0.0.1:8123/mcp', require_approval: 'never' });
  assert.equal(on.tools[1].name, 'get_browser_time');
  assert.equal(on.mcpError, null);
  assert.equal(on.toolChoice, 'required');
  assert.deepEqual(on.named, ['mcp', 'get_browser_time']);
  // "only mcp" forces a tool of that server.
  assert.deepEqual(toolSettings({ mcp: { url: 'https://mcp.example.com/mcp', label: 'docs' }, toolChoice: 'tool:mcp' }).toolChoice,
    { type: 'mcp', server_label: 'docs' });
  assert.equal(toolSettings({ mcp: null, toolChoice: 'tool:mcp' }).toolChoice, 'auto', 'switched off: auto');
  // Asking before each call is require_approval "always"; an empty label is "mcp".
  assert.deepEqual(mcpTool({ url: 'https://mcp.example.com/mcp', label: '', approval: true }).tool,
    { type: 'mcp', server_label: 'mcp', server_url: 'https://mcp.example.com/mcp', require_approval: 'always' });
  // An empty URL names a server the gateway's operator configured under the label: no server_url.
  for (const url of [undefined, '', '   ']) {
    assert.deepEqual(mcpTool({ url, label: ' ops ', approval: true }),
      { tool: { type: 'mcp', server_label: 'ops', require_approval: 'always' } }, JSON.stringify(url));
  }
  const byLabel = toolSettings({ mcp: { url: '', label: 'ops', approval: false }, toolChoice: 'tool:mcp' });
  assert.deepEqual(byLabel.tools, [{ type: 'mcp', server_label: 'ops', require_approval: 'never' }]);
  assert.deepEqual(byLabel.toolChoice, { type: 'mcp', server_label: 'ops' });
  assert.equal(byLabel.mcpError, null);
  for (const [fields, field, re] of [
    [{ url: 'mcp.example.com/mcp' }, 'url', /not a URL/],
    [{ url: 'ftp://mcp.example.com/' }, 'url', /http:\/\/ or https:\/\/ \(not ftp:\)/],
    [{ url: 'javascript:alert(1)' }, 'url', /not javascript:/],
    [{ url: 'https://mcp.example.com/', label: 'my server' }, 'label', /letters, digits/],
    [{ url: 'https://mcp.example.com/', label: 'x'.repeat(65) }, 'label', /at most 64/],
    [{ url: '', label: 'my server' }, 'label', /letters, digits/],
  ]) {
    const r = mcpTool(fields);
    assert.equal(r.tool, undefined, JSON.stringify(fields));
    assert.equal(r.field, field, JSON.stringify(fields));
    assert.match(r.error, re);
    const ts = toolSettings({ mcp: fields, toolChoice: 'auto' });
    assert.deepEqual(ts.tools, [], 'an invalid MCP server is not declared');
    assert.deepEqual(ts.mcpError, { message: r.error, field });
  }
  assert.equal(toolSettings({ mcp: null, toolChoice: 'auto' }).mcpError, null, 'switched off: no error');
});

test('mcp: approval requests pending until answered; answers as input items; error text of every shape', () => {
  const output = [
    { type: 'mcp_list_tools', id: 'mcpl_1', server_label: 'demo', tools: [] },
    { type: 'mcp_approval_request', id: 'mcpr_a', server_label: 'demo', name: 'echo', arguments: '{}' },
    { type: 'mcp_call', id: 'mcp_1', server_label: 'demo', name: 'echo', arguments: '{}', output: 'x' },
    { type: 'mcp_approval_request', id: 'mcpr_b', server_label: 'demo', name: 'fail', arguments: '{}' },
  ];
  assert.deepEqual(pendingApprovals(output).map((i) => i.id), ['mcpr_a', 'mcpr_b']);
  assert.deepEqual(pendingApprovals(output, new Set(['mcpr_a'])).map((i) => i.id), ['mcpr_b']);
  assert.deepEqual(replayable(output).map((i) => i.id), ['mcpl_1', 'mcpr_a', 'mcp_1', 'mcpr_b'], 'MCP items are replayed as they came');
  assert.deepEqual(approvalResponses([{ id: 'mcpr_a', approve: true }, { id: 'mcpr_b', approve: false }]), [
    { type: 'mcp_approval_response', approval_request_id: 'mcpr_a', approve: true },
    { type: 'mcp_approval_response', approval_request_id: 'mcpr_b', approve: false },
  ]);
  assert.equal(mcpErrorText(null), '');
  assert.equal(mcpErrorText('connection refused'), 'connection refused');
  assert.equal(mcpErrorText({ type: 'mcp_tool_execution_error', content: [{ type: 'text', text: 'boom' }] }), 'boom (mcp_tool_execution_error)');
  assert.equal(mcpErrorText({ type: 'mcp_protocol_error', code: -32001, message: 'timed out' }), 'timed out (mcp_protocol_error -32001)');
  assert.equal(mcpErrorText({ type: 'http_error' }), 'http_error');
  assert.equal(mcpErrorText({}), '{}');
});

test('history: commentary is not replayed; answered calls are not pending', () => {
  const output = [
    { type: 'message', id: 'msg_progress_1', phase: 'commentary', content: [] },
    { type: 'custom_tool_call', call_id: 'a', name: 'package_version', input: 'axum' },
    { type: 'function_call', call_id: 'b', name: 'get_browser_time', arguments: '{}' },
    { type: 'custom_tool_call_output', call_id: 'a', output: 'axum 0.8' },
    { type: 'function_call', call_id: 'c', name: 'x', arguments: '{}' },
    { type: 'function_call_output', call_id: 'c', output: 'done' },
  ];
  assert.deepEqual(replayable(output).map((i) => i.call_id), ['a', 'b', 'a', 'c', 'c']);
  assert.deepEqual(pendingFunctionCalls(output).map((i) => i.call_id), ['b']);
});

test('browser tool: time in a given zone, errors as readable outputs', () => {
  const now = new Date('2026-01-02T03:04:05Z');
  const out = JSON.parse(getBrowserTime('{"time_zone":"Asia/Tokyo"}', now));
  assert.equal(out.utc, '2026-01-02T03:04:05.000Z');
  assert.equal(out.time_zone, 'Asia/Tokyo');
  assert.match(out.local, /2026-01-02.*12:04:05/);
  assert.match(JSON.parse(getBrowserTime('{"time_zone":"Mars/Base"}', now)).error, /unknown time zone/);
  assert.match(JSON.parse(getBrowserTime('{not json', now)).error, /not valid JSON/);
  assert.match(JSON.parse(runBrowserTool('rm_rf', '{}')).error, /no tool named/);
  assert.match(JSON.parse(runBrowserTool('__proto__', '{}')).error, /no tool named/);
});

test('errors and URLs', () => {
  assert.equal(errorMessage({ error: { message: 'bad', code: 'x' } }), 'bad (x)');
  assert.equal(errorMessage({ type: 'error', message: 'flat', code: null }), 'flat (error)');
  assert.equal(errorMessage(null, 'fallback'), 'fallback');
  assert.equal(safeUrl('javascript:alert(1)'), null);
  assert.equal(safeUrl('https://a.example/x'), 'https://a.example/x');
  assert.equal(safeUrl('mailto:a@b.example'), null);
  assert.equal(safeLinkUrl('mailto:a@b.example'), 'mailto:a@b.example');
  for (const bad of ['javascript:alert(1)', ' JaVaScRiPt:alert(1)', 'java\tscript:alert(1)', 'data:text/html,x', '/relative', '#frag', '', null]) {
    assert.equal(safeLinkUrl(bad), null, String(bad));
  }
});
