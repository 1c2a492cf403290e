// The playground on a gateway that wants an API key ([auth]): the page asks for the key,
// sends it as a Bearer key on every API call, keeps it for the tab only (sessionStorage, so
// a new tab asks again), and asks again after a wrong one.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Upstream, startGateway, launchBrowser, shot } from './harness.mjs';

const KEY = 'sk-browser-test-key-42';
let upstream;
let gateway;
let browser;
let dir;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'rg-keys-'));
  writeFileSync(path.join(dir, 'keys'), `playground ${KEY}\n`);
  upstream = await Upstream.start();
  gateway = await startGateway({ upstream, env: { RESPONSES_GATEWAY_AUTH__KEYS_FILE: path.join(dir, 'keys') }, name: 'gateway-auth' });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  await upstream?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the page asks for a key, uses it for the tab only, and asks again after a wrong one', async () => {
  const page = await browser.context.newPage();
  const auths = [];
  page.on('request', (req) => {
    if (new URL(req.url()).pathname.startsWith('/v1/')) auths.push(req.headers().authorization || null);
  });
  await page.goto(`${gateway.url}/`);
  await page.waitForSelector('body[data-ready="true"]');
  // GET /v1/models answered 401: the key form is shown.
  await page.waitForSelector('#key-form:not([hidden])');
  assert.match(await page.textContent('#key-note'), /needs an API key/);
  assert.equal(await page.getAttribute('#api-key', 'type'), 'password');
  await shot(page, '40-auth-asks-for-key');

  // A wrong key: refused, the form comes back and says so.
  await page.fill('#api-key', 'sk-wrong');
  await page.press('#api-key', 'Enter');
  await page.waitForSelector('#key-form:not([hidden])');
  await page.waitForFunction(() => /refused/.test(document.getElementById('key-note').textContent));

  await page.fill('#api-key', KEY);
  await page.click('#key-save');
  // The models are listed (until then the picker says "Loading models…", with no value).
  await page.waitForFunction(() => [...document.querySelectorAll('#model option')].some((o) => o.value !== ''));
  assert.equal(await page.isHidden('#key-form'), true);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('responses-gateway-api-key')), KEY);
  assert.equal(await page.evaluate(() => localStorage.length), 0, 'nothing kept beyond the tab');

  await upstream.push({ text: ['Keyed', ' answer.'] });
  await page.evaluate(() => { delete document.body.dataset.idle; });
  await page.fill('#prompt', 'hello');
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('body[data-idle="true"]', { timeout: 30_000 });
  assert.equal(await page.textContent('.answer .text'), 'Keyed answer.');
  assert.equal(auths.at(-1), `Bearer ${KEY}`, 'the POST carried the key');
  assert.ok(auths.includes('Bearer sk-wrong'));
  await shot(page, '41-auth-answer-with-key');

  // Another tab has its own sessionStorage: it asks again.
  const other = await browser.context.newPage();
  await other.goto(`${gateway.url}/`);
  await other.waitForSelector('#key-form:not([hidden])');
  await other.close();
  await page.close();
});
