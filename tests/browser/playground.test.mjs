// The playground page end to end in Debian's headless Chromium: the real gateway binary on
// scripted-upstream and the SearXNG-shaped fixture. Every test saves a screenshot in
// target/browser-shots (BROWSER_SHOTS_DIR).

import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Upstream, startSearch, startGateway, startMcpServer, MCP_LOOPBACK_ENV, launchBrowser, shot } from './harness.mjs';

// What the search fixture (scripts/real_model/searxng_fixture.py) returns and the gateway keeps.
const WIKI = 'https://en.wikipedia.org/wiki/2025_Tour_de_France';
const LETOUR = 'https://www.letour.fr/en/rankings';
const QUERY = 'tour de france 2025 winner';
// Astral and non-ASCII characters before the cited span: code points != UTF-16 units != bytes.
const CITED_SPAN = `([Wikipedia](${WIKI}))`;
const SEARCH_ANSWER = `🚴 Tadej Pogačar won the 2025 Tour 🏆 ${CITED_SPAN}. Rankings: ${LETOUR}`;

const chunks = (text, n = 9) => {
  const cps = [...text];
  const out = [];
  for (let i = 0; i < cps.length; i += n) out.push(cps.slice(i, i + n).join(''));
  return out;
};
// An answer in Markdown, with a cited link and a cited bare URL inside list items.
const MD_ANSWER = [
  '## Tour de France 2025',
  '',
  `- Winner: **Tadej Pogačar** ([Wikipedia](${WIKI}))`,
  `- Rankings: ${LETOUR}`,
  '- Rules: [the rules](https://example.org/rules)',
  '',
  '| Rank | Rider |',
  '| ---: | --- |',
  '| 1 | Pogačar |',
  '| 2 | Vingegaard |',
  '',
  '```',
  'const winner = "<b>Pogačar</b>";',
  '```',
].join('\n');
// Model text that tries to run script in the page, in every way Markdown and HTML offer.
const XSS_ANSWER = [
  'Hi <img src=x onerror="window.__pwned=1"> there.',
  '<script>window.__pwned=1</script>',
  '[click](javascript:window.__pwned=1) [upper](JaVaScRiPt:window.__pwned=1) <javascript:window.__pwned=1>',
  '[data](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX19wd25lZD0xPC9zY3JpcHQ+) ![img](x" onerror="window.__pwned=1)',
  '<a href="javascript:window.__pwned=1" onclick="window.__pwned=1">raw link</a> <svg onload="window.__pwned=1"></svg>',
  '<iframe src="javascript:window.__pwned=1"></iframe>',
  '<p id="prompt" style="color:red" onmouseover="window.__pwned=1">clobber</p>',
  '[safe](https://example.org/safe)',
].join('\n\n');
const HANDBOOK = '# Zürich cafés\n\nCafé Schober opened in 1842 and is the oldest café in Zürich.\n';
const searchCall = { name: 'web_search', arguments: JSON.stringify({ query: QUERY }) };

let upstream;
let search;
let gateway;
let browser;

before(async () => {
  upstream = await Upstream.start();
  search = await startSearch();
  gateway = await startGateway({ upstream, search });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  await search?.stop();
  await upstream?.stop();
});

beforeEach(async () => {
  await upstream.reset();
});

/** A fresh page on the playground (of `on`, default the main gateway), with the POST bodies
 * it sends to /v1/responses. */
async function openPage({ width = 1100, height = 900, on = gateway } = {}) {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width, height });
  const posts = [];
  const consoleErrors = [];
  page.on('request', (req) => {
    if (req.method() === 'POST' && new URL(req.url()).pathname === '/v1/responses') posts.push(JSON.parse(req.postData() || 'null'));
  });
  page.on('console', (msg) => { if (msg.type() === 'error') consoleErrors.push(msg.text()); });
  page.on('pageerror', (err) => consoleErrors.push(String(err)));
  await page.goto(`${on.url}/`);
  await page.waitForSelector('body[data-ready="true"]');
  return { page, posts, consoleErrors };
}

/** Types into the message box and sends with Enter; waits until the turn (and its browser rounds) ends. */
async function ask(page, text) {
  await page.evaluate(() => { delete document.body.dataset.idle; });
  await page.fill('#prompt', text);
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('body[data-idle="true"]', { timeout: 30_000 });
}

/** The text of chat messages (string or content parts). */
const textOf = (m) => (typeof m.content === 'string' ? m.content : (m.content || []).map((p) => p.text || '').join(''));

describe('playground', () => {
  test('is served at / and /playground with embedded assets, and is off when configured so', async () => {
    for (const p of ['/', '/playground']) {
      const res = await fetch(`${gateway.url}${p}`);
      assert.equal(res.status, 200, p);
      assert.match(res.headers.get('content-type'), /^text\/html/);
      assert.match(res.headers.get('content-security-policy'), /connect-src 'self'/);
      assert.match(await res.text(), /<title>responses-gateway playground<\/title>/);
    }
    // The page's own modules (app.js imports the others).
    for (const file of ['app.js', 'api.js', 'conversation.js', 'dom.js', 'lib.js', 'markdown.js', 'mcp.js', 'settings.js', 'stream.js', 'transcript.js']) {
      const js = await fetch(`${gateway.url}/playground/${file}`);
      assert.equal(js.status, 200, file);
      assert.match(js.headers.get('content-type'), /javascript/, file);
    }
    assert.equal((await fetch(`${gateway.url}/playground/missing.js`)).status, 404);
    // The vendored Markdown libraries and their licences, from the binary itself.
    for (const [file, type, text] of [
      ['marked.esm.js', /javascript/, /marked v18\.2\.1/], ['purify.es.mjs', /javascript/, /DOMPurify 3\.5\.0/],
      ['marked.LICENSE.md', /text\/plain/, /MIT license/i], ['dompurify.LICENSE-MPL-2.0.txt', /text\/plain/, /Mozilla Public License/],
      ['dompurify.LICENSE-Apache-2.0.txt', /text\/plain/, /Apache License/],
    ]) {
      const res = await fetch(`${gateway.url}/playground/vendor/${file}`);
      assert.equal(res.status, 200, file);
      assert.match(res.headers.get('content-type'), type, file);
      assert.match(res.headers.get('content-security-policy'), /script-src 'self'/, file);
      assert.match(await res.text(), text, file);
    }
    assert.equal((await fetch(`${gateway.url}/playground/vendor/missing.js`)).status, 404);

    const off = await startGateway({ upstream, env: { RESPONSES_GATEWAY_SERVER__PLAYGROUND: 'false' }, name: 'gateway-playground-off' });
    try {
      for (const p of ['/', '/playground', '/playground/app.js', '/playground/vendor/marked.esm.js', '/favicon.ico', '/playground/favicon.svg']) {
        const res = await fetch(`${off.url}${p}`);
        assert.equal(res.status, 404, p);
        assert.equal((await res.json()).error.code, 'unknown_url');
      }
      assert.equal((await fetch(`${off.url}/healthz`)).status, 200, 'the API still serves');
      const page = await browser.context.newPage();
      await page.goto(`${off.url}/`);
      await shot(page, '00-playground-off-404');
      await page.close();
    } finally {
      await off.stop();
    }
  });

  test('the icon is served at /favicon.ico and linked by the page; the model picker says "Loading models…" until the list comes', async () => {
    for (const p of ['/favicon.ico', '/playground/favicon.svg']) {
      const res = await fetch(`${gateway.url}${p}`);
      assert.equal(res.status, 200, p);
      assert.equal(res.headers.get('content-type'), 'image/svg+xml', p);
      assert.match(await res.text(), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, p);
    }
    const page = await browser.context.newPage();
    const failed = [];
    page.on('response', (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`); });
    // Hold GET /v1/models until the page has been looked at.
    let release;
    const held = new Promise((r) => { release = r; });
    await page.route('**/v1/models', async (route) => { await held; await route.continue(); });
    await page.goto(`${gateway.url}/`);
    await page.waitForFunction(() => document.getElementById('tool-get_browser_time') !== null);
    assert.deepEqual(await page.$$eval('#model option', (os) => os.map((o) => [o.value, o.textContent])), [['', 'Loading models…']]);
    assert.equal(await page.isDisabled('#model'), true);
    assert.equal(await page.textContent('#model-note'), 'Loading models…');
    assert.equal(await page.getAttribute('body', 'data-ready'), null, 'not ready while the models load');
    await shot(page, '01a-models-loading');
    release();
    await page.waitForSelector('body[data-ready="true"]');
    assert.deepEqual(await page.$$eval('#model option', (os) => os.map((o) => o.value)), ['scripted-model']);
    assert.equal(await page.isDisabled('#model'), false);
    assert.equal(await page.textContent('#model-note'), '');
    // The icon the page links is the one served.
    const icon = await page.$eval('link[rel="icon"]', (l) => l.href);
    assert.equal(new URL(icon).pathname, '/playground/favicon.svg');
    assert.equal((await fetch(icon)).status, 200);
    // Nothing the page loaded failed (vector_stores lists fine, even when empty).
    assert.deepEqual(failed, []);
    await page.close();
  });

  test('a gateway tool without a backend is offered switched off, with the reason as its tooltip; the others are on offer', async () => {
    // This gateway has web_search (the fixture) and package_version, no [mcp]: the MCP switch is off.
    const tools = await (await fetch(`${gateway.url}/v1/gateway/tools`)).json();
    assert.deepEqual(tools.data.map((t) => [t.type, t.name ?? null, t.available]), [
      ['web_search', null, true], ['file_search', null, true], ['mcp', null, false], ['custom', 'package_version', true],
    ]);
    const mcpReason = tools.data.find((t) => t.type === 'mcp').reason;
    assert.match(mcpReason, /mcp\.allowed_urls/);
    const { page, posts } = await openPage();
    assert.equal(await page.isDisabled('#tool-web_search'), false);
    assert.equal(await page.getAttribute('label:has(#tool-web_search)', 'title'), null);
    assert.equal(await page.isDisabled('#tool-package_version'), false);
    assert.equal(await page.isDisabled('#tool-mcp'), true);
    assert.equal(await page.getAttribute('label:has(#tool-mcp)', 'title'), mcpReason);
    assert.equal(await page.textContent('label:has(#tool-mcp) small'), 'gateway · not configured');
    for (const id of ['#mcp-url', '#mcp-label', '#mcp-approval']) assert.equal(await page.isDisabled(id), true, id);
    assert.equal(await page.textContent('#mcp-note'), `mcp is unavailable: ${mcpReason}`);
    await page.close();

    // A gateway with no web_search backend, package_version turned off, no embedded vector
    // store: only the browser's own tool is on offer, and a message goes through.
    const bare = await startGateway({
      upstream,
      env: { RESPONSES_GATEWAY_SERVER_TOOLS__PACKAGE_VERSION__ENABLED: 'false', RESPONSES_GATEWAY_FILE_SEARCH__EMBEDDED__ENABLED: 'false' },
      name: 'gateway-bare',
    });
    try {
      const listed = await (await fetch(`${bare.url}/v1/gateway/tools`)).json();
      const reasons = Object.fromEntries(listed.data.map((t) => [t.type, t.reason]));
      assert.deepEqual(listed.data.map((t) => [t.type, t.available]), [['web_search', false], ['file_search', false], ['mcp', false]]);
      const bp = await openPage({ on: bare });
      for (const [tool, reason] of [
        ['web_search', reasons.web_search], ['file_search', reasons.file_search], ['mcp', reasons.mcp],
        ['package_version', 'This gateway has no server tool package_version ([server_tools.package_version] enabled = false).'],
      ]) {
        assert.equal(await bp.page.isDisabled(`#tool-${tool}`), true, tool);
        assert.equal(await bp.page.getAttribute(`label:has(#tool-${tool})`, 'title'), reason, tool);
      }
      assert.match(reasons.web_search, /\[web_search\]/);
      assert.match(reasons.file_search, /file_search\.embedded\.enabled/);
      assert.match(await bp.page.textContent('#stores-note'), /^file_search is unavailable: file_search is not configured/);
      for (const tool of ['web_search', 'package_version', 'file_search', 'mcp']) {
        assert.equal(await bp.page.textContent(`label:has(#tool-${tool}) small`), 'gateway · not configured', tool);
      }
      assert.equal(await bp.page.isDisabled('#tool-get_browser_time'), false);
      // Hovering shows the reason (the row's title); a click on a switched-off tool does nothing.
      await bp.page.hover('label:has(#tool-web_search)');
      await shot(bp.page, '01b-tools-not-configured');
      await bp.page.click('label:has(#tool-web_search)', { force: true });
      assert.equal(await bp.page.isChecked('#tool-web_search'), false);
      // Only "only get_browser_time" is a named choice.
      assert.deepEqual(await bp.page.$$eval('#tool-choice option', (os) => os.map((o) => o.value)), ['auto', 'required', 'none', 'tool:get_browser_time']);
      await upstream.push({ text: ['No tools needed.'] });
      await ask(bp.page, 'Hello');
      assert.equal(await bp.page.textContent('.answer .text'), 'No tools needed.');
      assert.deepEqual(bp.posts[0].tools.map((t) => t.type), ['function'], 'only the browser tool is declared');
      assert.equal(await bp.page.locator('.error').count(), 0);
      await bp.page.close();
    } finally {
      await bare.stop();
    }
    assert.deepEqual(posts, [], 'looking sends nothing');
  });

  test('a plain question streams an answer token by token; models and vector stores are listed', async () => {
    const { page, posts, consoleErrors } = await openPage();
    // The model picker is filled from GET /v1/models (the scripted upstream's list).
    assert.deepEqual(await page.$$eval('#model option', (os) => os.map((o) => o.value)), ['scripted-model']);
    // file_search degrades: no vector stores (or no endpoint) → switched off, with a note. (This
    // test runs before the file_search test creates the gateway's first store.)
    assert.equal(await page.isDisabled('#tool-file_search'), true);
    assert.match(await page.textContent('#stores-note'), /file_search is unavailable/);

    const words = ['Streaming', ' works', ' one', ' token', ' at', ' a', ' time', ' —', ' naïve', ' café', ' ☕.'];
    await upstream.push({ text: words, token_delay_ms: 150 });
    // Record every length the answer text goes through while it streams.
    await page.evaluate(() => {
      window.__lengths = [];
      new MutationObserver(() => {
        const t = document.querySelector('.answer .text');
        if (t) window.__lengths.push(t.textContent.length);
      }).observe(document.getElementById('log'), { subtree: true, childList: true, characterData: true });
    });
    await page.fill('#prompt', 'Say something');
    await page.press('#prompt', 'Enter');
    await page.waitForFunction(() => {
      const t = document.querySelector('.answer.streaming .text');
      return t && t.textContent.length > 0 && !t.textContent.endsWith('☕.');
    });
    await shot(page, '01-plain-streaming');
    await page.waitForSelector('body[data-idle="true"]');
    const full = words.join('');
    assert.equal(await page.textContent('.answer .text'), full);
    assert.equal(await page.$$eval('.answer.streaming', (a) => a.length), 0, 'streaming marker removed at the end');
    const lengths = [...new Set(await page.evaluate(() => window.__lengths))].filter((n) => n > 0);
    assert.ok(lengths.length >= 5, `the answer grew in steps: ${lengths}`);
    assert.deepEqual(lengths, [...lengths].sort((a, b) => a - b), 'it only grew');
    assert.equal(await page.textContent('.user .text'), 'Say something');
    // What the page sent, and what reached the model.
    assert.equal(posts.length, 1);
    assert.equal(posts[0].stream, true);
    assert.equal(posts[0].model, 'scripted-model');
    const [req] = await upstream.requests();
    assert.equal(textOf(req.messages.at(-1)), 'Say something');
    assert.deepEqual(req.tools.map((t) => t.function.name), ['get_browser_time'], 'the browser tool is on by default');
    await shot(page, '02-plain-answer');
    assert.deepEqual(consoleErrors.filter((e) => !/vector_stores|404/.test(e)), []);
    await page.close();
  });

  test('web_search shows a search item with its query and sources, and a cited link on the exact span', async () => {
    const { page, posts } = await openPage();
    await page.check('#tool-web_search');
    await upstream.push({ tool_calls: [searchCall] }, { text: chunks(SEARCH_ANSWER), token_delay_ms: 20 });
    await ask(page, 'Who won the Tour de France 2025?');

    assert.deepEqual(posts[0].tools.map((t) => t.type), ['web_search', 'function']);
    assert.deepEqual(posts[0].include, ['web_search_call.action.sources']);
    // Commentary (the gateway's progress) is shown apart from the answer, before the search item.
    const commentary = await page.textContent('.commentary');
    assert.match(commentary, /Searching the web for “tour de france 2025 winner”/);
    assert.equal(await page.$$eval('.answer', (a) => a.length), 1);
    assert.doesNotMatch(await page.textContent('.answer'), /Searching the web/);
    assert.ok(await page.$eval('.commentary', (c) => !!(c.compareDocumentPosition(document.querySelector('details.tool-web_search')) & Node.DOCUMENT_POSITION_FOLLOWING)));

    const item = page.locator('details.tool-web_search');
    assert.match(await item.locator('summary').textContent(), /“tour de france 2025 winner”.*completed · 3 sources/);
    await item.locator('summary').click();
    const sourceLinks = await item.locator('.sources a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(sourceLinks, [WIKI, LETOUR, 'https://www.cyclingnews.com/races/tour-de-france-2025/']);

    // The answer's citations: links whose href is the source URL, on the exact spans, as
    // Markdown shows them: the cited `([Wikipedia](…))` reads "(Wikipedia)", one link.
    const cites = await page.$$eval('.answer a.cite', (as) => as.map((a) => ({ href: a.getAttribute('href'), text: a.textContent })));
    assert.deepEqual(cites, [{ href: WIKI, text: '(Wikipedia)' }, { href: LETOUR, text: LETOUR }]);
    assert.equal(await page.textContent('.answer .text'), `${SEARCH_ANSWER.replace(CITED_SPAN, '(Wikipedia)[1]')}[2]`);
    assert.equal(await page.locator('.answer a a').count(), 0, 'no link inside a link');
    const notes = await page.$$eval('.answer .footnotes a', (as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(notes, [WIKI, LETOUR]);
    await shot(page, '03-web-search-citations');
    await page.close();
  });

  for (const mode of ['previous', 'replay']) {
    test(`browser tool round trip (${mode === 'previous' ? 'previous_response_id' : 'replayed history, store off'})`, async () => {
      const { page, posts } = await openPage();
      await page.selectOption('#history-mode', mode);
      const call = { name: 'get_browser_time', arguments: '{"time_zone":"Europe/Berlin"}' };
      await upstream.push({ tool_calls: [call] }, { text: chunks('In Berlin it is now evening.', 4), token_delay_ms: 20 });
      await ask(page, 'What time is it in Berlin?');

      // The page sent the tool's schema, saw the function_call, ran it, and resumed the turn.
      assert.equal(posts.length, 2);
      const fn = posts[0].tools.find((t) => t.type === 'function');
      assert.equal(fn.name, 'get_browser_time');
      assert.equal(fn.parameters.properties.time_zone.type, 'string');
      const entry = page.locator('details.tool-function_call');
      assert.match(await entry.locator('.badge').textContent(), /ran in the browser/);
      const outputItem = posts[1].input.find((i) => i.type === 'function_call_output');
      assert.ok(outputItem, JSON.stringify(posts[1]));
      const output = JSON.parse(outputItem.output);
      assert.equal(output.time_zone, 'Europe/Berlin');
      assert.ok(Math.abs(Date.parse(output.utc) - Date.now()) < 60_000, output.utc);
      if (mode === 'previous') {
        assert.equal(posts[1].store, true);
        assert.match(posts[1].previous_response_id, /^resp_/);
        assert.deepEqual(posts[1].input.map((i) => i.type), ['function_call_output']);
      } else {
        assert.equal(posts[1].store, false);
        assert.equal(posts[1].previous_response_id, undefined);
        const types = posts[1].input.map((i) => i.type);
        assert.deepEqual(types.filter((t) => t !== 'message'), ['function_call', 'function_call_output']);
        assert.equal(posts[1].input[0].role, 'user');
        const fc = posts[1].input.find((i) => i.type === 'function_call');
        assert.equal(fc.call_id, outputItem.call_id);
      }
      // The second turn's upstream request carries the function_call_output as the tool result.
      const reqs = await upstream.requests();
      assert.equal(reqs.length, 2);
      const [assistant] = reqs[1].messages.filter((m) => m.role === 'assistant' && m.tool_calls);
      assert.equal(assistant.tool_calls[0].function.name, 'get_browser_time');
      const tool = reqs[1].messages.find((m) => m.role === 'tool');
      assert.equal(tool.tool_call_id, assistant.tool_calls[0].id);
      assert.equal(textOf(tool), outputItem.output);
      // And the answer streamed after it.
      assert.equal(await page.locator('.answer .text').last().textContent(), 'In Berlin it is now evening.');
      await entry.locator('summary').click();
      await shot(page, `04-browser-tool-${mode}`);
      await page.close();
    });
  }

  test('a mixed round shows the server tool executed before the browser tool runs', async () => {
    const { page, posts } = await openPage();
    await page.check('#tool-package_version');
    // The tool_choice selector offers each switched-on tool by name.
    const choices = await page.$$eval('#tool-choice option', (os) => os.map((o) => o.value));
    assert.deepEqual(choices, ['auto', 'required', 'none', 'tool:package_version', 'tool:get_browser_time']);
    await upstream.push(
      { tool_calls: [{ name: 'package_version', arguments: '{"input":"axum"}' }, { name: 'get_browser_time', arguments: '{"time_zone":"UTC"}' }] },
      { text: ['Both tools answered.'] },
    );
    await ask(page, 'Which axum is installed, and what time is it?');

    const server = page.locator('details.tool-custom_tool_call');
    const browserTool = page.locator('details.tool-function_call');
    assert.match(await server.locator('.badge').textContent(), /executed on the gateway/);
    assert.match(await server.locator('.tool-output pre').textContent(), /^axum \d+\.\d+\.\d+/);
    assert.match(await browserTool.locator('.badge').textContent(), /ran in the browser/);
    // Render order: the gateway's output is on the page before the browser ran its tool.
    const serverSeq = Number(await server.locator('.tool-output').getAttribute('data-seq'));
    const browserSeq = Number(await browserTool.locator('.browser-run').getAttribute('data-seq'));
    assert.ok(serverSeq < browserSeq, `server output #${serverSeq}, browser run #${browserSeq}`);
    assert.ok(await server.evaluate((s, b) => !!(s.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING), await browserTool.elementHandle()));
    // The first response already held the executed server tool; only the browser call went back.
    assert.equal(posts.length, 2);
    assert.deepEqual(posts[1].input.map((i) => i.type), ['function_call_output']);
    const reqs = await upstream.requests();
    const tools = reqs[1].messages.filter((m) => m.role === 'tool').map(textOf);
    assert.equal(tools.length, 2);
    assert.match(tools[0], /axum \d/);
    assert.equal(JSON.parse(tools[1]).time_zone, 'UTC');
    assert.equal(await page.textContent('.answer .text'), 'Both tools answered.');
    await server.locator('summary').click();
    await browserTool.locator('summary').click();
    await shot(page, '05-mixed-round');
    await page.close();
  });

  test('file_search: a vector store from GET /v1/vector_stores, a search item with its results, a file citation', async () => {
    // A real file in a real vector store of the gateway's embedded index.
    const form = new FormData();
    form.append('purpose', 'assistants');
    form.append('file', new Blob([HANDBOOK], { type: 'text/markdown' }), 'zürich-handbook.md');
    const file = await (await fetch(`${gateway.url}/v1/files`, { method: 'POST', body: form })).json();
    assert.match(file.id, /^file-/, JSON.stringify(file));
    const created = await fetch(`${gateway.url}/v1/vector_stores`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'handbook', file_ids: [file.id] }),
    });
    const store = await created.json();
    for (let i = 0; i < 100; i++) {
      const s = await (await fetch(`${gateway.url}/v1/vector_stores/${store.id}`)).json();
      if (s.file_counts && s.file_counts.completed === 1) break;
      assert.notEqual(s.status, 'expired');
      await new Promise((r) => setTimeout(r, 100));
    }

    const { page, posts } = await openPage();
    assert.equal(await page.isDisabled('#tool-file_search'), false);
    assert.deepEqual(await page.$$eval('#vector-store option', (os) => os.map((o) => o.value)), [store.id]);
    await page.check('#tool-file_search');
    await page.selectOption('#tool-choice', 'tool:file_search');
    await upstream.push(
      { tool_calls: [{ name: 'file_search', arguments: JSON.stringify({ queries: ['oldest café'] }) }] },
      { text: ['Café Schober is the oldest', '【1】', ' café in Zürich.'] },
    );
    await ask(page, 'Which café is the oldest?');
    assert.deepEqual(posts[0].tools[0], { type: 'file_search', vector_store_ids: [store.id] });
    assert.deepEqual(posts[0].tool_choice, { type: 'file_search' });
    assert.deepEqual(posts[0].include, ['file_search_call.results']);

    const item = page.locator('details.tool-file_search');
    assert.match(await item.locator('summary').textContent(), /“oldest café”.*completed · 1 result/);
    await item.locator('summary').click();
    assert.match(await item.locator('.results li').first().textContent(), /zürich-handbook\.md.*Café Schober opened in 1842/s);
    // The file_citation (index = code point after "oldest") is a footnote marker at that point.
    assert.equal(await page.textContent('.answer .text'), 'Café Schober is the oldest[1] café in Zürich.');
    assert.match(await page.textContent('.answer .footnotes li'), /zürich-handbook\.md/);
    await shot(page, '06-file-search-citation');
    await page.close();
  });

  test('an answer renders as Markdown (heading, list, table, code block, links) while it streams; citations keep their spans', async () => {
    const { page, consoleErrors } = await openPage();
    await page.check('#tool-web_search');
    await upstream.push({ tool_calls: [searchCall] }, { text: chunks(MD_ANSWER, 6), token_delay_ms: 30 });
    await page.evaluate(() => { delete document.body.dataset.idle; });
    await page.fill('#prompt', 'Who won, in Markdown?');
    await page.press('#prompt', 'Enter');
    // Rendered while it streams: the list is there before the answer ends.
    await page.waitForSelector('.answer.streaming .text.markdown li', { timeout: 30_000 });
    await page.waitForSelector('body[data-idle="true"]', { timeout: 30_000 });

    const answer = page.locator('.answer .text');
    assert.equal(await answer.locator('h2').textContent(), 'Tour de France 2025');
    const items = answer.locator('ul > li');
    assert.equal(await items.count(), 3);
    // The cited markdown link inside a list item: one link to the source on "(Wikipedia)",
    // with its footnote reference; the bold text before it stays bold.
    const first = items.nth(0);
    assert.equal(await first.locator('strong').textContent(), 'Tadej Pogačar');
    assert.deepEqual(await first.locator('a.cite').evaluate((a) => [a.getAttribute('href'), a.textContent, a.target, a.rel]),
      [WIKI, '(Wikipedia)', '_blank', 'noopener noreferrer']);
    assert.equal(await first.textContent(), 'Winner: Tadej Pogačar (Wikipedia)[1]');
    assert.equal(await first.locator('sup.ref a').getAttribute('href'), await page.locator('.answer .footnotes li').first().evaluate((li) => `#${li.id}`));
    // A cited bare URL: the autolink and the citation are one link.
    assert.deepEqual(await items.nth(1).locator('a').evaluateAll((as) => as.map((a) => [a.className, a.getAttribute('href'), a.textContent])),
      [['cite', LETOUR, LETOUR], ['', '#' + await page.locator('.answer .footnotes li').nth(1).getAttribute('id'), '[2]']]);
    // A plain (uncited) Markdown link opens in a new tab, without opener or referrer.
    const rules = items.nth(2).locator('a');
    assert.deepEqual(await rules.evaluate((a) => [a.getAttribute('href'), a.textContent, a.target, a.rel, a.className]),
      ['https://example.org/rules', 'the rules', '_blank', 'noopener noreferrer', '']);
    // The table, with its column alignment.
    assert.deepEqual(await answer.locator('table thead th').allTextContents(), ['Rank', 'Rider']);
    assert.equal(await answer.locator('table thead th').first().getAttribute('align'), 'right');
    assert.deepEqual(await answer.locator('table tbody tr').evaluateAll((rows) => rows.map((r) => [...r.cells].map((c) => c.textContent))),
      [['1', 'Pogačar'], ['2', 'Vingegaard']]);
    // The code block keeps its text, markup included, as text.
    assert.equal(await answer.locator('pre > code').textContent(), 'const winner = "<b>Pogačar</b>";\n');
    assert.equal(await answer.locator('b').count(), 0);
    // No Markdown syntax left over, no nested links; the footnotes list both sources.
    const shown = await answer.textContent();
    for (const raw of ['](', '**', '| ---', '```', '## ']) assert.ok(!shown.includes(raw), `"${raw}" is rendered, not shown`);
    assert.equal(await page.locator('.answer a a').count(), 0);
    assert.deepEqual(await page.$$eval('.answer .footnotes a', (as) => as.map((a) => a.getAttribute('href'))), [WIKI, LETOUR]);
    assert.deepEqual(consoleErrors.filter((e) => !/vector_stores|404/.test(e)), []);
    await shot(page, '06b-markdown-answer');
    await page.close();
  });

  test('model text cannot inject HTML or script: <img onerror>, <script>, javascript: links stay inert', async () => {
    const { page } = await openPage();
    // Everything ever inserted into the transcript (also while it streams), and any CSP
    // violation (which an inline handler or a javascript: URL that got through would cause).
    await page.evaluate(() => {
      window.__bad = [];
      window.__csp = [];
      document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
      const check = (node) => {
        if (node.nodeType !== 1) return;
        for (const e of [node, ...node.querySelectorAll('*')]) {
          if (/^(SCRIPT|IMG|SVG|IFRAME|OBJECT|EMBED|FORM|INPUT|STYLE|LINK|META|BASE)$/i.test(e.tagName)) window.__bad.push(`<${e.tagName}>`);
          for (const a of e.attributes) {
            if (/^on/i.test(a.name) || a.name === 'style' || a.name === 'id' && e.closest('.text')) window.__bad.push(`${e.tagName} ${a.name}=${a.value}`);
            if ((a.name === 'href' || a.name === 'src') && !/^(https?:|mailto:|#note-)/.test(a.value)) window.__bad.push(`${e.tagName} ${a.name}=${a.value}`);
          }
        }
      };
      new MutationObserver((records) => records.forEach((r) => r.addedNodes.forEach(check)))
        .observe(document.getElementById('log'), { subtree: true, childList: true });
    });
    await upstream.push({ text: chunks(XSS_ANSWER, 7), token_delay_ms: 5 });
    await ask(page, 'Try to break the page');
    const answer = page.locator('.answer .text');
    assert.ok(!(await answer.textContent()).includes('[safe]('), 'the answer is rendered as Markdown');
    // Nothing ran, and nothing that could run was ever in the page.
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.deepEqual(await page.evaluate(() => window.__bad), []);
    assert.equal(await page.locator('.answer :is(script, img, svg, iframe, form, input, style)').count(), 0);
    assert.equal(await page.locator('.answer [onerror], .answer [onclick], .answer [onload], .answer [onmouseover], .answer [style]').count(), 0);
    // Raw HTML is shown as text; the page's own elements keep their ids.
    const shown = await answer.textContent();
    assert.ok(shown.includes('<img src=x onerror="window.__pwned=1">'), shown);
    assert.ok(shown.includes('<script>window.__pwned=1</script>'), shown);
    assert.equal(await page.evaluate(() => document.getElementById('prompt').tagName), 'TEXTAREA');
    // javascript: and data: links lose their address; the https one is a link to a new tab.
    const links = await answer.locator('a').evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute('href')]));
    for (const [label, href] of links) {
      if (label === 'safe') assert.equal(href, 'https://example.org/safe');
      else assert.equal(href, null, `${label} has no address`);
    }
    assert.deepEqual(links.map((l) => l[0]).sort(), ['click', 'data', 'javascript:window.__pwned=1', 'safe', 'upper'].sort());
    assert.deepEqual(await answer.locator('a[href^="https:"]').evaluate((a) => [a.target, a.rel]), ['_blank', 'noopener noreferrer']);
    // Clicking them does nothing: no script, no navigation.
    const url = page.url();
    for (const label of ['click', 'upper', 'data', 'javascript:window.__pwned=1']) await answer.locator('a', { hasText: label }).first().click();
    await answer.getByText('clobber').hover();
    await page.waitForTimeout(300);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(page.url(), url);
    assert.deepEqual(await page.evaluate(() => window.__csp), []);
    await shot(page, '06c-markdown-xss-inert');
    await page.close();
  });

  test('citations through Markdown, edge cases: a span across paragraphs, inside a link, a marker inside an address, forged markers', async () => {
    const { page } = await openPage();
    // The page's own module, as served (under the page's CSP), on annotations the gateway
    // would not make itself but an upstream's annotations might.
    const out = await page.evaluate(async () => {
      const { renderMarkdown } = await import('./playground/markdown.js');
      const cp = (text, s) => [...text.slice(0, text.indexOf(s))].length;
      const render = (text, annotations) => {
        const div = document.createElement('div');
        const { fragment, notes } = renderMarkdown(text, annotations, 'x');
        div.append(fragment);
        return {
          html: div.innerHTML,
          text: div.textContent,
          cites: [...div.querySelectorAll('.cite')].map((e) => [e.tagName, e.textContent]),
          nested: div.querySelectorAll('a a').length,
          refs: [...div.querySelectorAll('sup.ref')].map((r) => [r.textContent, r.previousSibling && r.previousSibling.textContent]),
          notes: notes.length,
          markers: /[\uE100-\uE3FF]|%EE%8/i.test(div.innerHTML),
        };
      };
      const across = 'First part is cited.\n\nSecond part too.';
      const inLink = '[see the docs](https://x.example/docs) now';
      const inAddress = '[docs](https://x.example/docs) here';
      const url = (text, s, u) => ({ type: 'url_citation', start_index: cp(text, s), end_index: cp(text, s) + [...s].length, url: u, title: u });
      return {
        across: render(across, [url(across, 'cited.\n\nSecond', 'https://a.example/')]),
        inLink: render(inLink, [url(inLink, 'the docs', 'https://b.example/'), { type: 'file_citation', index: cp(inLink, ']('), file_id: 'f1' }]),
        inAddress: render(inAddress, [{ type: 'file_citation', index: cp(inAddress, 'x.example'), file_id: 'f2' }]),
        forged: render('a \uE100b\uE200 c \uE300', []),
      };
    });
    // Across two paragraphs: each piece marked, the reference after the last one.
    assert.deepEqual(out.across.cites, [['MARK', 'cited.'], ['MARK', 'Second']], out.across.html);
    assert.deepEqual(out.across.refs, [['[1]', 'Second']]);
    assert.equal(out.across.text, 'First part is cited.Second[1] part too.');
    // Inside the model's own link: <mark>, and the references after that link, never inside it.
    assert.deepEqual(out.inLink.cites, [['MARK', 'the docs']], out.inLink.html);
    assert.equal(out.inLink.nested, 0, out.inLink.html);
    assert.deepEqual(out.inLink.refs.map((r) => r[0]), ['[1]', '[2]']);
    assert.equal(out.inLink.text, 'see the docs[1][2] now');
    // A marker inside an address is dropped: the link keeps its address, the note its footnote.
    assert.match(out.inAddress.html, /<a href="https:\/\/x\.example\/docs" target="_blank" rel="noopener noreferrer">docs<\/a>/);
    assert.equal(out.inAddress.notes, 1);
    // Marker characters the model wrote are not markers.
    assert.equal(out.forged.text, 'a \uFFFDb\uFFFD c \uFFFD');
    for (const r of Object.values(out)) assert.equal(r.markers, false, r.html);
    await page.close();
  });

  test('errors: an upstream failure (response.failed) and an HTTP error are shown', async () => {
    const { page } = await openPage();
    await upstream.push({ http_status: 500 }, { http_status: 500 });
    await ask(page, 'This will fail');
    const failed = await page.textContent('.error');
    assert.match(failed, /failed|error/i);
    assert.match(failed, /500|upstream/i);
    await shot(page, '07-upstream-failure');

    // A stored response, deleted behind the page's back: the continuation is an HTTP error.
    await upstream.reset();
    await upstream.push({ text: ['First answer.'] });
    await ask(page, 'Remember this');
    const id = (await page.textContent('.response:last-of-type .meta')).match(/resp_\w+/)[0];
    assert.equal((await fetch(`${gateway.url}/v1/responses/${id}`, { method: 'DELETE' })).status, 200);
    await ask(page, 'And now?');
    const errors = await page.$$eval('.error', (es) => es.map((e) => e.textContent));
    assert.equal(errors.length, 2);
    assert.match(errors[1], /^HTTP 4\d\d: .*(not found|previous_response)/i);
    await shot(page, '08-http-error');
    await page.close();
  });

  test('keyboard only: Tab and Enter toggle a tool and send a message', async () => {
    const { page } = await openPage();
    await upstream.push({ tool_calls: [searchCall] }, { text: chunks(SEARCH_ANSWER) });
    const tabTo = async (id) => {
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Tab');
        if (await page.evaluate((want) => document.activeElement && document.activeElement.id === want, id)) return;
      }
      assert.fail(`Tab never reached #${id}`);
    };
    await tabTo('tool-web_search');
    assert.equal(await page.isChecked('#tool-web_search'), false);
    await page.keyboard.press('Enter');
    assert.equal(await page.isChecked('#tool-web_search'), true);
    await tabTo('prompt');
    await page.keyboard.type('Who won? (typed)');
    await shot(page, '09-keyboard-before-send');
    await page.evaluate(() => { delete document.body.dataset.idle; });
    await page.keyboard.press('Enter');
    await page.waitForSelector('body[data-idle="true"]');
    assert.equal(await page.textContent('.user .text'), 'Who won? (typed)');
    const [first] = await upstream.requests();
    assert.deepEqual(first.tools.map((t) => t.function.name), ['web_search', 'get_browser_time']);
    assert.equal(await page.locator('details.tool-web_search').count(), 1);
    // Collapsible entries open from the keyboard too.
    await page.focus('details.tool-web_search summary');
    await page.keyboard.press('Enter');
    assert.equal(await page.$eval('details.tool-web_search', (d) => d.open), true);
    assert.equal(await page.evaluate(() => document.activeElement.closest('details') !== null), true);
    await shot(page, '10-keyboard-after-send');
    await page.close();
  });

  test('390 px wide: no horizontal scrolling, with tool entries open, long links, a table and a code block', async () => {
    const { page } = await openPage({ width: 390, height: 844 });
    assert.equal(await page.$eval('#settings', (d) => d.open), false, 'settings start folded on a phone');
    await page.click('#settings summary');
    await page.check('#tool-web_search');
    await page.check('#tool-package_version');
    await upstream.push(
      { tool_calls: [searchCall, { name: 'package_version', arguments: '{"input":"axum"}' }] },
      { text: chunks(`${SEARCH_ANSWER} See also https://www.cyclingnews.com/races/tour-de-france-2025/ for results.\n\n`
        + '| Stage | Result |\n| --- | --- |\n| 1 | https://www.cyclingnews.com/races/tour-de-france-2025/stage-1/results/and/more/ |\n\n'
        + '```\nconst aVeryLongIdentifierThatDoesNotBreak = "https://example.org/a/very/long/path/that/does/not/break/anywhere";\n```') },
    );
    await ask(page, 'A long answer with long links, please: https://example.org/a/very/long/path/that/does/not/break/anywhere/at/all');
    await page.$$eval('details', (ds) => ds.forEach((d) => { d.open = true; }));
    const overflow = await page.evaluate(() => {
      const root = document.documentElement;
      const wide = [...document.querySelectorAll('body *')]
        .filter((e) => !e.closest('.skip, .visually-hidden'))
        .filter((e) => e.getBoundingClientRect().right > root.clientWidth + 0.5)
        .map((e) => `${e.tagName}.${e.className}`);
      return { scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, bodyScroll: document.body.scrollWidth, wide };
    });
    assert.equal(overflow.clientWidth, 390);
    assert.ok(overflow.scrollWidth <= overflow.clientWidth, JSON.stringify(overflow));
    assert.ok(overflow.bodyScroll <= overflow.clientWidth, JSON.stringify(overflow));
    assert.deepEqual(overflow.wide, []);
    assert.equal(await page.locator('.answer table').count(), 1);
    assert.equal(await page.locator('.answer pre code').count(), 1);
    await shot(page, '11-phone-390px');
    await page.close();
  });
});

// ---------------------------------------------------------------- MCP (issue 18, point 7)

// The MCP tests use a real MCP server (tests/python/mcp_server.py, the official Python SDK:
// tools echo, slow, fail, nested) and a gateway whose [mcp] allows it (127.0.0.1, any port).
// The model is the scripted upstream: it calls `demo__echo` (the model-visible name is
// `{server_label}__{tool}`), then answers.
const MCP_LABEL = 'demo';
const echoCall = (text) => ({ name: `${MCP_LABEL}__echo`, arguments: JSON.stringify({ text }) });

/** Turns the MCP switch on and fills its fields. */
async function switchMcp(page, { url, label = MCP_LABEL, approval }) {
  await page.check('#tool-mcp');
  await page.fill('#mcp-url', url);
  await page.fill('#mcp-label', label);
  if (approval !== undefined) await page.setChecked('#mcp-approval', approval);
}

/** The text of each `tools/call` the MCP server received (the echo argument). */
async function mcpCalls(mcp) {
  return (await mcp.requests()).filter((r) => r.rpc === 'tools/call').map((r) => JSON.parse(r.body).params);
}

describe('playground: the URL field of the MCP switch', () => {
  // A gateway whose [mcp] allows one other server: the switch is on offer (a gateway with no
  // [mcp] offers it switched off), and neither the label "mcp" nor 127.0.0.1:9 is allowed.
  let allowing;

  before(async () => {
    allowing = await startGateway({ upstream, env: { RESPONSES_GATEWAY_MCP__ALLOWED_URLS: '["https://mcp.example.com/"]' }, name: 'gateway-mcp-other' });
  });

  after(async () => {
    await allowing?.stop();
  });

  test('mcp: an empty URL sends the label alone and shows the 400 of a label no operator configured; a non-http(s) URL is checked before sending; a URL the gateway does not allow shows its 400', async () => {
    const { page, posts } = await openPage({ on: allowing });
    assert.match(await page.textContent('#mcp-note'), /An empty URL means a server the operator configured under this label/);
    // An empty URL: the mcp tool names the server by its label alone. This gateway's operator
    // configured no server "mcp": the gateway's 400 names the tool's server_url; the page shows
    // it, also under the MCP fields.
    await page.check('#tool-mcp');
    await ask(page, 'Use my MCP server');
    assert.equal(posts.length, 1);
    assert.deepEqual(posts[0].tools[0], { type: 'mcp', server_label: 'mcp', require_approval: 'always' });
    const unknown = await page.textContent('.error');
    assert.match(unknown, /^HTTP 400: /);
    assert.match(unknown, /server_url/);
    assert.match(unknown, /no server labelled 'mcp' is configured/);
    assert.equal(await page.textContent('#mcp-note'), `The gateway refused the MCP server: ${unknown.replace(/^HTTP 400: /, '')}`);
    assert.equal(await page.getAttribute('#mcp-url', 'aria-invalid'), 'true');
    assert.deepEqual(await upstream.requests(), [], 'refused before any model call');
    // Not an http(s) URL: nothing is sent, the message stays, the URL field says why and has focus.
    await page.fill('#mcp-url', 'ftp://files.example.org/mcp');
    assert.equal(await page.getAttribute('#mcp-note', 'class'), 'note', 'typing clears the warning');
    assert.equal(await page.getAttribute('#mcp-url', 'aria-invalid'), null);
    await page.fill('#prompt', 'Use my MCP server');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector('#mcp-note.warn');
    assert.match(await page.textContent('#mcp-note'), /must start with http:\/\/ or https:\/\//);
    assert.equal(await page.getAttribute('#mcp-url', 'aria-invalid'), 'true');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'mcp-url');
    assert.equal(await page.inputValue('#prompt'), 'Use my MCP server');
    assert.equal(posts.length, 1, 'nothing more was sent');
    // A well-formed URL this gateway's operator did not allow (its [mcp] allows another): the gateway's
    // 400 names the tool's server_url; the page shows it, also under the MCP fields.
    await page.fill('#mcp-url', 'http://127.0.0.1:9/mcp');
    await page.uncheck('#mcp-approval');
    await ask(page, 'Use my MCP server');
    assert.equal(posts.length, 2);
    assert.deepEqual(posts[1].tools[0], { type: 'mcp', server_label: 'mcp', server_url: 'http://127.0.0.1:9/mcp', require_approval: 'never' });
    const error = await page.locator('.error').last().textContent();
    assert.match(error, /^HTTP 400: /);
    assert.match(error, /server_url|not allowed|MCP/i);
    const note = await page.textContent('#mcp-note');
    assert.match(note, /^The gateway refused the MCP server: /);
    assert.ok(note.includes(error.replace(/^HTTP 400: /, '')), `${note} | ${error}`);
    assert.equal(await page.getAttribute('#mcp-url', 'aria-invalid'), 'true');
    assert.deepEqual(await upstream.requests(), [], 'refused before any model call');
    await shot(page, '12-mcp-url-refused');
    await page.close();
  });
});

describe('playground with an MCP server', () => {
  let mcp;
  let mcpGateway;

  before(async () => {
    mcp = await startMcpServer();
    mcpGateway = await startGateway({ upstream, env: MCP_LOOPBACK_ENV, name: 'gateway-mcp' });
  });

  after(async () => {
    await mcpGateway?.stop();
    await mcp?.stop();
  });

  beforeEach(async () => {
    await mcp.reset();
  });

  test('mcp: the switch adds the server; its tool listing and calls are collapsed entries that open to the tools and the output', async () => {
    const { page, posts, consoleErrors } = await openPage({ on: mcpGateway });
    assert.equal(await page.isChecked('#mcp-approval'), true, 'asking before each call is the default');
    await switchMcp(page, { url: mcp.url, approval: false });
    // "only mcp" in tool_choice forces a tool of that server.
    await page.selectOption('#tool-choice', 'tool:mcp');
    const ECHO = 'hello <b>from</b> the browser';
    await upstream.push(
      { tool_calls: [echoCall(ECHO), { name: `${MCP_LABEL}__fail`, arguments: JSON.stringify({ reason: 'the fixture fails on purpose' }) }] },
      { text: chunks('The server echoed it back; the other tool failed.', 6), token_delay_ms: 10 },
    );
    await ask(page, 'Echo this through MCP');

    // The request: the mcp tool from the switch and its fields, before the browser's function.
    assert.equal(posts.length, 1);
    assert.deepEqual(posts[0].tools.map((t) => t.type), ['mcp', 'function']);
    assert.deepEqual(posts[0].tools[0], { type: 'mcp', server_label: MCP_LABEL, server_url: mcp.url, require_approval: 'never' });
    assert.deepEqual(posts[0].tool_choice, { type: 'mcp', server_label: MCP_LABEL });
    // The model was offered the server's tools, and read the outputs.
    const reqs = await upstream.requests();
    assert.equal(reqs.length, 2);
    const offered = reqs[0].tools.map((t) => t.function.name);
    for (const t of ['echo', 'slow', 'fail', 'nested']) assert.ok(offered.includes(`${MCP_LABEL}__${t}`), offered.join());
    const results = reqs[1].messages.filter((m) => m.role === 'tool').map(textOf);
    assert.equal(results.length, 2);
    assert.ok(results[0].includes(ECHO), results[0]);
    assert.deepEqual((await mcpCalls(mcp)).map((p) => p.name).sort(), ['echo', 'fail'], 'both called (in parallel)');

    // The listing: one entry, collapsed, "Listed 4 tools from demo".
    const list = page.locator('details.tool-mcp_list_tools');
    assert.equal(await list.count(), 1);
    assert.equal(await list.locator('.tool-title').textContent(), `Listed 4 tools from ${MCP_LABEL}`);
    assert.equal(await list.locator('.badge').first().textContent(), 'completed');
    assert.equal(await list.evaluate((d) => d.open), false, 'collapsed by default');
    assert.equal(await list.locator('.mcp-tool-name').first().isVisible(), false);
    // The calls: one entry each, collapsed, "demo · echo" completed and "demo · fail" failed.
    const calls = page.locator('details.tool-mcp_call');
    assert.equal(await calls.count(), 2);
    const [echo, fail] = [calls.nth(0), calls.nth(1)];
    assert.equal(await echo.locator('.tool-title').textContent(), `${MCP_LABEL} · echo`);
    assert.equal(await echo.locator('.badge').textContent(), 'completed');
    assert.equal(await fail.locator('.tool-title').textContent(), `${MCP_LABEL} · fail`);
    assert.equal(await fail.locator('.badge').textContent(), 'failed');
    assert.equal(await fail.evaluate((d) => d.classList.contains('failed')), true);
    for (const c of [echo, fail]) assert.equal(await c.evaluate((d) => d.open), false, 'collapsed by default');
    assert.equal(await echo.locator('.tool-result').isVisible(), false);
    assert.ok(await list.evaluate((l, c) => !!(l.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING), await echo.elementHandle()),
      'the listing comes before the calls');
    assert.equal(await page.locator('.answer .text').textContent(), 'The server echoed it back; the other tool failed.');
    await shot(page, '13-mcp-collapsed');

    // Opened: the listed tools with their descriptions; the call's arguments and output (as
    // text: the markup in it is not HTML); the failed call's error.
    await list.locator('summary').click();
    assert.equal(await list.locator('.mcp-tool-name').first().isVisible(), true);
    assert.deepEqual((await list.locator('.mcp-tool-name').allTextContents()).sort(), ['echo', 'fail', 'nested', 'slow']);
    const echoTool = list.locator('li', { has: page.locator('.mcp-tool-name', { hasText: /^echo$/ }) });
    assert.equal(await echoTool.locator('.mcp-tool-description').textContent(), 'Return the given text unchanged.');
    await echo.locator('summary').click();
    assert.equal(await echo.locator('.tool-result').isVisible(), true);
    assert.equal(await echo.locator('.tool-result').textContent(), ECHO);
    assert.equal(await echo.locator('b').count(), 0, 'the output is text, not HTML');
    assert.deepEqual(JSON.parse(await echo.locator('.tool-input').textContent()), { text: ECHO });
    await fail.locator('summary').click();
    assert.match(await fail.locator('.tool-error').textContent(), /the fixture fails on purpose/);
    assert.deepEqual(consoleErrors.filter((e) => !/vector_stores|404/.test(e)), []);
    await shot(page, '14-mcp-expanded');
    await page.close();
  });

  test('mcp: an empty URL names a server the operator configured ([mcp.servers.ops]): the request has no server_url; its listing and call render', async () => {
    // A gateway with no allowed URLs, only the operator's server "ops" at the MCP server.
    const opsGateway = await startGateway({ upstream, env: { RESPONSES_GATEWAY_MCP__SERVERS__OPS__URL: mcp.url }, name: 'gateway-mcp-operator' });
    try {
      const { page, posts, consoleErrors } = await openPage({ on: opsGateway });
      await switchMcp(page, { url: '', label: 'ops', approval: false });
      await upstream.push(
        { tool_calls: [{ name: 'ops__echo', arguments: JSON.stringify({ text: 'via the operator' }) }] },
        { text: chunks('The operator server echoed it.', 6) },
      );
      await ask(page, 'Echo through the operator server');

      // The request: the tool named by its label alone.
      assert.equal(posts.length, 1);
      assert.deepEqual(posts[0].tools[0], { type: 'mcp', server_label: 'ops', require_approval: 'never' });
      assert.equal('server_url' in posts[0].tools[0], false);
      assert.equal(await page.locator('.error').count(), 0);
      assert.equal(await page.getAttribute('#mcp-note', 'class'), 'note', 'no warning under the fields');
      // The model was offered the server's tools; the server was called.
      const offered = (await upstream.requests())[0].tools.map((t) => t.function.name);
      for (const t of ['echo', 'slow', 'fail', 'nested']) assert.ok(offered.includes(`ops__${t}`), offered.join());
      assert.deepEqual((await mcpCalls(mcp)).map((p) => [p.name, p.arguments]), [['echo', { text: 'via the operator' }]]);
      // The entries: the listing and the call, under the label.
      const list = page.locator('details.tool-mcp_list_tools');
      assert.equal(await list.count(), 1);
      assert.equal(await list.locator('.tool-title').textContent(), 'Listed 4 tools from ops');
      assert.equal(await list.locator('.badge').first().textContent(), 'completed');
      const call = page.locator('details.tool-mcp_call');
      assert.equal(await call.count(), 1);
      assert.equal(await call.locator('.tool-title').textContent(), 'ops · echo');
      assert.equal(await call.locator('.badge').textContent(), 'completed');
      await list.locator('summary').click();
      assert.deepEqual((await list.locator('.mcp-tool-name').allTextContents()).sort(), ['echo', 'fail', 'nested', 'slow']);
      await call.locator('summary').click();
      assert.equal(await call.locator('.tool-result').textContent(), 'via the operator');
      assert.equal(await page.locator('.answer .text').textContent(), 'The operator server echoed it.');
      assert.deepEqual(consoleErrors.filter((e) => !/vector_stores|404/.test(e)), []);
      await shot(page, '14a-mcp-operator-server');
      await page.close();
    } finally {
      await opsGateway.stop();
    }
  });

  // Approvals: require_approval "always" (the page's default).
  for (const mode of ['previous', 'replay']) {
    test(`mcp approvals (${mode === 'previous' ? 'previous_response_id' : 'replayed history, store off'}): Approve sends mcp_approval_response; the call runs and the model answers`, async () => {
      const { page, posts, consoleErrors } = await openPage({ on: mcpGateway });
      await page.selectOption('#history-mode', mode);
      await switchMcp(page, { url: mcp.url, approval: true });
      await upstream.push({ tool_calls: [echoCall('approve me')] }, { text: chunks('Approved, and the server echoed it.', 6) });
      await ask(page, 'Echo with my approval');

      assert.equal(posts.length, 1);
      assert.equal(posts[0].tools[0].require_approval, 'always');
      // The approval request: tool and arguments, both buttons on; nothing called yet.
      const box = page.locator('.approval');
      assert.equal(await box.count(), 1);
      assert.equal(await box.locator('.tool-title').textContent(), `${MCP_LABEL} · echo`);
      assert.deepEqual(JSON.parse(await box.locator('.tool-input').textContent()), { text: 'approve me' });
      assert.equal(await box.locator('button.approve').isEnabled(), true);
      assert.equal(await box.locator('button.deny').isEnabled(), true);
      assert.equal(await page.locator('details.tool-mcp_call').count(), 0);
      assert.deepEqual(await mcpCalls(mcp), [], 'not called before the approval');
      const id = await box.getAttribute('data-request-id');
      assert.match(id, /^mcpr_/);
      await shot(page, `15-mcp-approval-request-${mode}`);

      await page.evaluate(() => { delete document.body.dataset.idle; });
      await box.locator('button.approve').click();
      await page.waitForSelector('body[data-idle="true"]', { timeout: 30_000 });

      // What the page sent: the approval, after the history or on the previous response.
      assert.equal(posts.length, 2);
      const answer = { type: 'mcp_approval_response', approval_request_id: id, approve: true };
      assert.deepEqual(posts[1].tools, posts[0].tools, 'the same tools');
      if (mode === 'previous') {
        assert.match(posts[1].previous_response_id, /^resp_/);
        assert.deepEqual(posts[1].input, [answer]);
      } else {
        assert.equal(posts[1].previous_response_id, undefined);
        assert.equal(posts[1].store, false);
        assert.deepEqual(posts[1].input.map((i) => i.type), ['message', 'mcp_list_tools', 'mcp_approval_request', 'mcp_approval_response']);
        assert.equal(posts[1].input[2].id, id);
        assert.deepEqual(posts[1].input[3], answer);
      }
      // The box says so and takes no second answer.
      assert.equal(await box.getAttribute('data-decision'), 'approved');
      assert.equal(await box.locator('.badge').textContent(), 'approved');
      assert.equal(await box.locator('button.approve').isDisabled(), true);
      assert.equal(await box.locator('button.deny').isDisabled(), true);
      assert.equal(await box.locator('button.approve').getAttribute('aria-pressed'), 'true');
      assert.equal(await box.locator('button.deny').getAttribute('aria-pressed'), null);
      // The call ran on the server, and is shown in the continuation with its output.
      assert.deepEqual((await mcpCalls(mcp)).map((p) => [p.name, p.arguments]), [['echo', { text: 'approve me' }]]);
      const call = page.locator('details.tool-mcp_call');
      assert.equal(await call.count(), 1);
      assert.equal(await call.locator('.badge').textContent(), 'completed');
      await call.locator('summary').click();
      assert.equal(await call.locator('.tool-result').textContent(), 'approve me');
      assert.match(await call.locator('.tool-body').textContent(), new RegExp(`Approved .*${id}`));
      assert.equal(await page.locator('.answer .text').last().textContent(), 'Approved, and the server echoed it.');
      assert.deepEqual(consoleErrors.filter((e) => !/vector_stores|404/.test(e)), []);
      await shot(page, `16-mcp-approved-${mode}`);
      await page.close();
    });
  }

  test('mcp approvals: Deny sends approve:false; nothing is called and the model answers (390 px wide)', async () => {
    const { page, posts } = await openPage({ on: mcpGateway, width: 390, height: 844 });
    await page.click('#settings summary');
    await switchMcp(page, { url: mcp.url });
    await upstream.push({ tool_calls: [echoCall('deny me')] }, { text: chunks('Understood, I will not call it.', 6) });
    await ask(page, 'Echo, if I allow it');
    const box = page.locator('.approval');
    const id = await box.getAttribute('data-request-id');
    await page.evaluate(() => { delete document.body.dataset.idle; });
    await box.locator('button.deny').click();
    await page.waitForSelector('body[data-idle="true"]', { timeout: 30_000 });

    assert.equal(posts.length, 2);
    assert.deepEqual(posts[1].input, [{ type: 'mcp_approval_response', approval_request_id: id, approve: false }]);
    assert.equal(await box.getAttribute('data-decision'), 'denied');
    assert.equal(await box.locator('.badge').textContent(), 'denied');
    assert.equal(await box.locator('button.approve').isDisabled(), true);
    assert.equal(await box.locator('button.deny').getAttribute('aria-pressed'), 'true');
    assert.deepEqual(await mcpCalls(mcp), [], 'nothing called');
    assert.equal(await page.locator('details.tool-mcp_call').count(), 0, 'no call entry');
    // The model was asked again (told of the denial) and its answer is shown.
    assert.equal((await upstream.requests()).length, 2);
    assert.equal(await page.locator('.answer .text').last().textContent(), 'Understood, I will not call it.');
    // At phone width, with the entries open, nothing sticks out.
    await page.$$eval('details', (ds) => ds.forEach((d) => { d.open = true; }));
    const wide = await page.evaluate(() => [...document.querySelectorAll('body *')]
      .filter((e) => !e.closest('.skip, .visually-hidden'))
      .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
      .map((e) => `${e.tagName}.${e.className}`));
    assert.deepEqual(wide, []);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth));
    await shot(page, '17-mcp-denied-390px');
    await page.close();
  });

  test('mcp approvals beside a browser tool call: the browser runs its tool at once, its output goes with the answer', async () => {
    const { page, posts } = await openPage({ on: mcpGateway });
    await switchMcp(page, { url: mcp.url });
    await upstream.push(
      { tool_calls: [echoCall('mixed'), { name: 'get_browser_time', arguments: '{"time_zone":"UTC"}' }] },
      { text: ['Echoed, and it is late.'] },
    );
    await ask(page, 'Echo, and what time is it?');
    // The turn stopped at the approval: the browser tool already ran, nothing was sent yet.
    assert.equal(posts.length, 1);
    assert.match(await page.locator('details.tool-function_call .badge').textContent(), /ran in the browser/);
    const box = page.locator('.approval');
    const id = await box.getAttribute('data-request-id');
    await page.evaluate(() => { delete document.body.dataset.idle; });
    await box.locator('button.approve').click();
    await page.waitForSelector('body[data-idle="true"]', { timeout: 30_000 });

    assert.equal(posts.length, 2);
    assert.deepEqual(posts[1].input.map((i) => i.type), ['function_call_output', 'mcp_approval_response']);
    assert.equal(JSON.parse(posts[1].input[0].output).time_zone, 'UTC');
    assert.deepEqual(posts[1].input[1], { type: 'mcp_approval_response', approval_request_id: id, approve: true });
    assert.deepEqual((await mcpCalls(mcp)).map((p) => p.arguments), [{ text: 'mixed' }]);
    // The model read both results.
    const reqs = await upstream.requests();
    assert.equal(reqs.length, 2);
    const results = reqs[1].messages.filter((m) => m.role === 'tool').map(textOf);
    assert.ok(results.some((r) => r.includes('mixed')), results.join(' | '));
    assert.ok(results.some((r) => r.includes('"time_zone":"UTC"')), results.join(' | '));
    assert.equal(await page.locator('.answer .text').last().textContent(), 'Echoed, and it is late.');
    await shot(page, '18a-mcp-approval-and-browser-tool');
    await page.close();
  });

  test('mcp approvals: two requests in one response are answered together, each once', async () => {
    const { page, posts } = await openPage({ on: mcpGateway });
    await switchMcp(page, { url: mcp.url });
    await upstream.push({ tool_calls: [echoCall('first'), echoCall('second')] }, { text: ['One ran, one did not.'] });
    await ask(page, 'Echo twice');
    const boxes = page.locator('.approval');
    assert.equal(await boxes.count(), 2);
    const ids = await boxes.evaluateAll((bs) => bs.map((b) => b.dataset.requestId));
    assert.notEqual(ids[0], ids[1]);
    // The first answer waits for the second.
    await boxes.nth(0).locator('button.approve').click();
    await page.waitForFunction(() => /1 still open/.test(document.querySelector('.approval .approval-status').textContent));
    assert.equal(posts.length, 1, 'nothing sent while an answer is missing');
    assert.equal(await boxes.nth(0).locator('button.deny').isDisabled(), true);
    assert.equal(await boxes.nth(1).locator('button.deny').isEnabled(), true);
    await page.evaluate(() => { delete document.body.dataset.idle; });
    await boxes.nth(1).locator('button.deny').click();
    await page.waitForSelector('body[data-idle="true"]', { timeout: 30_000 });

    assert.equal(posts.length, 2);
    assert.deepEqual(posts[1].input, [
      { type: 'mcp_approval_response', approval_request_id: ids[0], approve: true },
      { type: 'mcp_approval_response', approval_request_id: ids[1], approve: false },
    ]);
    assert.deepEqual((await mcpCalls(mcp)).map((p) => p.arguments), [{ text: 'first' }]);
    assert.equal(await page.locator('details.tool-mcp_call').count(), 1);
    assert.equal(await page.locator('.answer .text').last().textContent(), 'One ran, one did not.');
    // A new message afterwards carries no answer again.
    await upstream.push({ text: ['Fine.'] });
    await ask(page, 'Thanks');
    assert.equal(posts.length, 3);
    assert.deepEqual(posts[2].input.map((i) => i.type), ['message']);
    await shot(page, '18-mcp-two-approvals');
    await page.close();
  });
});
