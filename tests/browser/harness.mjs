// Test harness for the playground browser tests: starts the real processes (scripted-upstream,
// the SearXNG-shaped fixture, the Python suite's MCP server, the responses-gateway binary) and
// Debian's Chromium through playwright-core, and saves screenshots.
//
// Environment: GATEWAY_BIN, UPSTREAM_BIN (default target/debug/…), CHROMIUM (default
// /usr/bin/chromium), BROWSER_SHOTS_DIR (default target/browser-shots), PYTHON (default python3),
// MCP_PYTHON (an interpreter with the `mcp` package; default target/py-venv/bin/python, the
// venv of tests/python/run.sh, which tests/browser/run.sh creates when it is missing).

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, createWriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TARGET = process.env.CARGO_TARGET_DIR ? path.resolve(ROOT, process.env.CARGO_TARGET_DIR) : path.join(ROOT, 'target');
export const GATEWAY_BIN = process.env.GATEWAY_BIN || path.join(TARGET, 'debug', 'responses-gateway');
export const UPSTREAM_BIN = process.env.UPSTREAM_BIN || path.join(TARGET, 'debug', 'scripted-upstream');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const SHOTS = path.resolve(ROOT, process.env.BROWSER_SHOTS_DIR || path.join(TARGET, 'browser-shots'));
const LOGS = path.join(SHOTS, 'logs');

/** Flags for a headless Chromium that stays off the (closed) network. */
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** A child process whose stdout and stderr go to a log file; `line(prefix)` waits for a line. */
class Proc {
  constructor(name, cmd, args, opts = {}) {
    mkdirSync(LOGS, { recursive: true });
    this.name = name;
    this.logPath = path.join(LOGS, `${name}.log`);
    this.log = createWriteStream(this.logPath, { flags: 'a' });
    this.child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    this.lines = [];
    this.waiters = [];
    this.exited = null;
    let partial = '';
    this.child.stdout.on('data', (buf) => {
      this.log.write(buf);
      const parts = (partial + buf.toString('utf8')).split('\n');
      partial = parts.pop();
      for (const l of parts) {
        this.lines.push(l);
        for (const w of this.waiters) w();
      }
    });
    this.child.stderr.on('data', (buf) => this.log.write(buf));
    this.child.on('exit', (code, signal) => {
      this.exited = { code, signal };
      for (const w of this.waiters) w();
    });
  }

  /** The first stdout line starting with `prefix`, without the prefix. */
  line(prefix, timeoutMs = 30_000) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`${this.name}: no "${prefix}" line within ${timeoutMs} ms (log ${this.logPath})`)), timeoutMs);
      const check = () => {
        const hit = this.lines.find((l) => l.startsWith(prefix));
        if (hit !== undefined) done(null, hit.slice(prefix.length).trim());
        else if (this.exited) done(new Error(`${this.name} exited (${JSON.stringify(this.exited)}) before "${prefix}" (log ${this.logPath})`));
      };
      const done = (err, value) => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
        if (err) reject(err);
        else resolve(value);
      };
      this.waiters.push(check);
      check();
    });
  }

  /** SIGTERM, then SIGKILL after 5 s; resolves when the process is gone. */
  async stop() {
    if (!this.exited) {
      const gone = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(timer);
    }
    this.log.end();
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The scripted model server: queue scripts, read the recorded chat-completions requests. */
export class Upstream {
  static async start() {
    const proc = new Proc('scripted-upstream', UPSTREAM_BIN, ['--listen', '127.0.0.1:0', '--default-tokens', '12']);
    const origin = await proc.line('LISTENING ');
    return new Upstream(proc, origin);
  }

  constructor(proc, origin) {
    this.proc = proc;
    this.origin = origin;
  }

  async control(method, p, body) {
    const res = await fetch(`${this.origin}${p}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`scripted-upstream ${method} ${p}: HTTP ${res.status} ${await res.text()}`);
    return res.json();
  }

  /** Queues scripts, one per upstream request, in order. */
  push(...scripts) {
    return this.control('POST', '/_control/scripts', scripts);
  }

  /** Every recorded request body, oldest first. */
  async requests() {
    return (await this.control('GET', '/_control/requests')).map((r) => r.body);
  }

  reset() {
    return this.control('POST', '/_control/reset', {});
  }

  stop() {
    return this.proc.stop();
  }
}

/** scripts/real_model/searxng_fixture.py: a SearXNG-shaped search API. */
export async function startSearch() {
  const script = path.join(ROOT, 'scripts', 'real_model', 'searxng_fixture.py');
  const proc = new Proc('searxng-fixture', process.env.PYTHON || 'python3', [script, '--port', '0']);
  const url = await proc.line('LISTENING ');
  return { url, proc, stop: () => proc.stop() };
}

/**
 * tests/python/mcp_server.py: a real MCP server (the official Python SDK, streamable HTTP on
 * 127.0.0.1) with the tools echo, slow, fail and nested. `url` is its endpoint
 * (http://127.0.0.1:PORT/mcp); `requests()` what it received ({method, rpc, body, …}).
 */
export async function startMcpServer() {
  const python = process.env.MCP_PYTHON || path.join(TARGET, 'py-venv', 'bin', 'python');
  const script = path.join(ROOT, 'tests', 'python', 'mcp_server.py');
  const proc = new Proc('mcp-server', python, [script], { env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
  const url = await proc.line('MCP_LISTENING ', 60_000);
  const base = url.replace(/\/mcp$/, '');
  const control = async (method, p) => {
    const res = await fetch(`${base}${p}`, { method });
    if (!res.ok) throw new Error(`mcp-server ${method} ${p}: HTTP ${res.status} ${await res.text()}`);
    return res.json();
  };
  return {
    url,
    proc,
    requests: () => control('GET', '/_control/requests'),
    reset: () => control('POST', '/_control/reset'),
    stop: () => proc.stop(),
  };
}

/** Environment of a gateway whose `[mcp]` allows servers on 127.0.0.1 (any port). */
export const MCP_LOOPBACK_ENV = {
  RESPONSES_GATEWAY_MCP__ALLOWED_URLS: '["http://127.0.0.1:"]',
  RESPONSES_GATEWAY_MCP__ALLOW_PRIVATE: 'true',
};

/** The real gateway binary on a free port with a fresh data dir; resolves once /healthz answers. */
export async function startGateway({ upstream, search, env = {}, name = 'gateway' }) {
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const home = mkdtempSync(path.join(tmpdir(), 'rg-browser-'));
    const childEnv = {
      ...process.env,
      XDG_DATA_HOME: path.join(home, 'xdg-data'),
      XDG_CONFIG_HOME: path.join(home, 'xdg-config'),
      XDG_CACHE_HOME: path.join(home, 'xdg-cache'),
      RESPONSES_GATEWAY_SERVER__KEEPALIVE_INTERVAL_MS: '1000',
      RUST_LOG: process.env.RUST_LOG || 'info',
      ...(search ? { RESPONSES_GATEWAY_WEB_SEARCH__BACKEND: 'http', RESPONSES_GATEWAY_WEB_SEARCH__HTTP__URL: search.url } : {}),
      ...env,
    };
    const proc = new Proc(name, GATEWAY_BIN, [
      'serve', '--upstream-url', `${upstream.origin}/v1`, '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(home, 'data'),
    ], { env: childEnv, cwd: home });
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && !proc.exited) {
      try {
        const res = await fetch(`${url}/healthz`);
        if (res.ok) {
          return {
            url,
            proc,
            async stop() {
              await proc.stop();
              rmSync(home, { recursive: true, force: true });
            },
          };
        }
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    lastError = new Error(`gateway did not answer /healthz (${JSON.stringify(proc.exited)}); log ${proc.logPath}`);
    await proc.stop();
    rmSync(home, { recursive: true, force: true });
  }
  throw lastError;
}

/** Debian's Chromium with a fresh profile directory. */
export async function launchBrowser() {
  const profile = mkdtempSync(path.join(tmpdir(), 'rg-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1100, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Saves a full-page screenshot as SHOTS/<name>.png and returns its path. The sticky message
 * box is laid out in the flow meanwhile, so it does not cover the transcript in the image. */
export async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  const unstick = (on) => page.evaluate((flag) => {
    const c = document.getElementById('composer');
    if (c) c.style.position = flag ? 'static' : '';
  }, on);
  await unstick(true);
  try {
    await page.screenshot({ path: file, fullPage: true });
  } finally {
    await unstick(false);
  }
  return file;
}
