// Unit tests of the playground's pure helpers (crates/gateway/assets/playground/lib.js), run
// by node itself: the SSE parser across chunk boundaries, annotation spans in code points,
// the request's tool declarations and the browser tool.

import test from 'node:test';
import assert from 'node:assert/strict';
import {
  SseParser, segmentText, codePointOffsets, toolSettings, replayable, pendingFunctionCalls,
  getBrowserTime, runBrowserTool, errorMessage, safeUrl,
} from '../../crates/gateway/assets/playground/lib.js';

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
});
