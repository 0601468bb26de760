// CORS for --allowed-origins, HEAD and GET /: header-level checks over raw
// HTTP, then a real headless Chromium (Debian's chromium-headless-shell, or
// chromium) loading a page from an allowed origin (a static server on
// another loopback port) that does what a web client does -- preflight, POST
// initialize, tools/call list_skills, a 401 whose WWW-Authenticate it must be
// able to read -- and the same page from a disallowed origin, which fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { TEST_TIMEOUT, addToken, poll, post, raw, startServer } from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-cors-'));
const tokens = path.join(dir, 'tokens');
const accessLog = path.join(dir, 'access.log');
const ALLOW_HEADERS = ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'mcp-method',
  'mcp-name', 'last-event-id', 'authorization'];
const EXPOSE = ['mcp-session-id', 'www-authenticate', 'mcp-protocol-version'];

let pages;          // the static server: {port, reports: Map, waiters: Map}
let origin;         // http://127.0.0.1:<pages.port>, listed in --allowed-origins
let evil;           // http://evil.test:<pages.port>, mapped to 127.0.0.1 in Chromium only
let srv;            // --allowed-origins origin
let authed;         // the same, with --auth-tokens
let token;

const PAGE = `<!doctype html><meta charset="utf-8"><title>skill-mcp from a page</title>
<script type="module">
const q = new URLSearchParams(location.search);
const out = { origin: location.origin };
const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25' };
const rpc = (url, id, method, params, extra = {}) => fetch(url, { method: 'POST',
  headers: { ...headers, ...extra }, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) });
try {
  const init = await rpc(q.get('mcp'), 1, 'initialize', { protocolVersion: '2025-11-25',
    capabilities: {}, clientInfo: { name: 'browser-page', version: '1.0.0' } });
  out.initStatus = init.status;
  out.init = await init.json();
  const list = await rpc(q.get('mcp'), 2, 'tools/call', { name: 'list_skills', arguments: {} });
  out.listStatus = list.status;
  out.list = await list.json();
  if (q.get('auth')) {
    const no = await rpc(q.get('auth'), 3, 'tools/list', {});
    out.noTokenStatus = no.status;
    out.challenge = no.headers.get('www-authenticate');
    const yes = await rpc(q.get('auth'), 4, 'tools/list', {}, { authorization: 'Bearer ' + q.get('token') });
    out.tokenStatus = yes.status;
  }
} catch (e) {
  out.error = String(e);
}
await fetch('/report?id=' + q.get('id'), { method: 'POST', body: JSON.stringify(out) });
</script>`;

function startPages() {
  const reports = new Map();
  const waiters = new Map();
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    if (req.method === 'GET' && u.pathname === '/page.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(PAGE);
    }
    if (req.method === 'POST' && u.pathname === '/report') {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        const id = u.searchParams.get('id');
        reports.set(id, JSON.parse(body));
        waiters.get(id)?.();
        res.writeHead(204);
        res.end();
      });
      return undefined;
    }
    res.writeHead(404);
    return res.end();
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port, reports, waiters }));
  });
}

function chromiumBinary() {
  for (const b of ['/usr/bin/chromium-headless-shell', '/usr/bin/chromium']) {
    if (fs.existsSync(b)) return b;
  }
  return null;
}

/** Loads pageUrl in a fresh headless Chromium; resolves with what the page reported. */
async function runPage(pageUrl, id) {
  const bin = chromiumBinary();
  assert.ok(bin, 'no Chromium: tests/deps.sh test installs chromium-headless-shell');
  const profile = fs.mkdtempSync(path.join(dir, 'profile-'));
  const reported = new Promise((resolve) => pages.waiters.set(id, resolve));
  // Its own process group, so the browser's helpers go with it.
  const proc = spawn(bin, ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--no-default-browser-check', '--disable-background-networking', '--disable-component-update',
    '--disable-dev-shm-usage', `--user-data-dir=${profile}`,
    '--host-resolver-rules=MAP evil.test 127.0.0.1', pageUrl],
  { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (c) => { err += c; });
  const exited = new Promise((r) => proc.once('exit', r));
  let timer;
  const timeout = new Promise((r) => { timer = setTimeout(() => r('timeout'), 12_000); });
  try {
    const how = await Promise.race([reported.then(() => 'reported'), exited.then(() => 'exited'), timeout]);
    assert.equal(how, 'reported', `the page did not report (${how}); chromium stderr:\n${err.slice(-2000)}`);
    return pages.reports.get(id);
  } finally {
    clearTimeout(timer);
    try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
    await exited;
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

before(async () => {
  pages = await startPages();
  origin = `http://127.0.0.1:${pages.port}`;
  evil = `http://evil.test:${pages.port}`;
  token = addToken(tokens, 'web');
  srv = await startServer({ args: ['--allowed-origins', `https://other.example, ${origin}`,
    '--access-log', accessLog] });
  authed = await startServer({ args: ['--allowed-origins', origin, '--auth-tokens', tokens] });
});
after(async () => {
  await srv?.stop();
  await authed?.stop();
  pages?.server.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const preflight = (url, from, method = 'POST', extra = {}) => raw(url, {
  method: 'OPTIONS',
  headers: { origin: from, 'access-control-request-method': method,
    'access-control-request-headers': 'content-type,mcp-protocol-version,authorization', ...extra },
});

function listOf(v) {
  return String(v ?? '').toLowerCase().split(',').map((x) => x.trim()).filter(Boolean);
}

function assertCors(r, from) {
  assert.equal(r.headers['access-control-allow-origin'], from, 'the origin echoed, never *');
  assert.ok(listOf(r.headers.vary).includes('origin'), `Vary: Origin (got ${r.headers.vary})`);
  assert.equal(r.headers['access-control-allow-credentials'], undefined);
}

function assertNoCors(r) {
  for (const h of Object.keys(r.headers)) assert.ok(!h.startsWith('access-control-'), `no ${h} header`);
}

test('preflight from an allowed origin: 204 with methods, headers, max-age', opts, async () => {
  const r = await preflight(srv.url, origin);
  assert.equal(r.status, 204);
  assertCors(r, origin);
  assert.deepEqual(listOf(r.headers['access-control-allow-methods']), ['post']);
  const allowed = listOf(r.headers['access-control-allow-headers']);
  for (const h of ALLOW_HEADERS) assert.ok(allowed.includes(h), `Allow-Headers has ${h}: ${allowed}`);
  assert.ok(Number(r.headers['access-control-max-age']) > 0);
  assert.equal(r.text, '');
  const pna = await preflight(srv.url, origin, 'POST', { 'access-control-request-private-network': 'true' });
  assert.equal(pna.headers['access-control-allow-private-network'], 'true');
});

test('a disallowed origin: the 403 refusal, no CORS headers', opts, async () => {
  const p = await preflight(srv.url, 'https://evil.example');
  assert.equal(p.status, 403);
  assertNoCors(p);
  const r = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: 'https://evil.example' });
  assert.equal(r.status, 403);
  assertNoCors(r);
});

test('a loopback origin that is not listed passes the Origin check but gets no CORS headers', opts, async () => {
  const p = await preflight(srv.url, 'http://localhost:9');
  assert.equal(p.status, 204);
  assertNoCors(p);
  const r = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: 'http://localhost:9' });
  assert.equal(r.status, 200);
  assertNoCors(r);
});

test('actual responses to an allowed origin carry Allow-Origin and Expose-Headers', opts, async () => {
  const plain = await raw(`http://127.0.0.1:${srv.port}/.well-known/agent-skills/index.json`, { method: 'GET' });
  assert.ok(listOf(plain.headers.vary).includes('origin'), 'Vary: Origin without an Origin too (caches)');
  const r = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin });
  assert.equal(r.status, 200);
  assertCors(r, origin);
  const exposed = listOf(r.headers['access-control-expose-headers']);
  for (const h of EXPOSE) assert.ok(exposed.includes(h), `Expose-Headers has ${h}: ${exposed}`);
  // a refusal too (415: wrong media type)
  const bad = await raw(srv.url, { headers: { origin, 'content-type': 'text/plain' }, body: 'x' });
  assert.equal(bad.status, 415);
  assertCors(bad, origin);
});

test('a 401 carries CORS headers, so a page can read WWW-Authenticate', opts, async () => {
  const p = await preflight(authed.url, origin);
  assert.equal(p.status, 204, 'no token needed for a preflight');
  assertCors(p, origin);
  const r = await post(authed.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin });
  assert.equal(r.status, 401);
  assertCors(r, origin);
  assert.ok(r.headers['www-authenticate'], 'a challenge');
  assert.ok(listOf(r.headers['access-control-expose-headers']).includes('www-authenticate'));
});

test('every path: /.well-known, ops endpoints, 404s; OPTIONS there offers GET, HEAD', opts, async () => {
  const base = `http://127.0.0.1:${srv.port}`;
  for (const p of ['/', '/healthz', '/readyz', '/metrics', '/.well-known/agent-skills/index.json', '/nope']) {
    const r = await raw(`${base}${p}`, { method: 'GET', headers: { origin } });
    assert.equal(r.status, p === '/nope' ? 404 : 200, p);
    assertCors(r, origin);
  }
  const o = await preflight(`${base}/.well-known/agent-skills/index.json`, origin, 'GET');
  assert.equal(o.status, 204);
  assertCors(o, origin);
  assert.deepEqual(listOf(o.headers['access-control-allow-methods']), ['get', 'head']);
  assert.equal((await preflight(`${base}/nope`, origin)).status, 404);
});

test('--allowed-origins * echoes the origin, never *, and not the null origin', opts, async () => {
  const s = await startServer({ args: ['--allowed-origins', '*'] });
  try {
    const r = await post(s.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: 'https://a.example' });
    assertCors(r, 'https://a.example');
    const n = await post(s.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: 'null' });
    assertNoCors(n);
  } finally {
    await s.stop();
  }
});

test('HEAD wherever GET is served: same status and headers, no body', opts, async () => {
  const base = `http://127.0.0.1:${srv.port}`;
  for (const p of ['/', '/healthz', '/readyz', '/metrics', '/.well-known/agent-skills/index.json']) {
    const g = await raw(`${base}${p}`, { method: 'GET' });
    const h = await raw(`${base}${p}`, { method: 'HEAD' });
    assert.equal(h.status, g.status, p);
    assert.equal(h.text, '', `${p}: no body`);
    assert.equal(h.headers['content-type'], g.headers['content-type'], p);
    if (p !== '/metrics') assert.equal(h.headers['content-length'], g.headers['content-length'], p);
  }
  const mcp = await raw(srv.url, { method: 'HEAD' });
  assert.equal(mcp.status, 405, 'a stateless MCP path serves no GET');
  assert.equal(mcp.headers.allow, 'POST');
});

test('GET / names the MCP endpoint and the discovery index', opts, async () => {
  const r = await raw(`http://127.0.0.1:${srv.port}/`, { method: 'GET', headers: { host: 'anything.example' } });
  assert.equal(r.status, 200);
  assert.match(String(r.headers['content-type']), /^application\/json/);
  assert.equal(r.json.mcp_endpoint, '/mcp');
  assert.equal(r.json.discovery_index, '/.well-known/agent-skills/index.json');
  const s = await startServer({ args: ['--path', '/rpc/v1'] });
  try {
    const r2 = await raw(`http://127.0.0.1:${s.port}/`, { method: 'GET' });
    assert.equal(r2.json.mcp_endpoint, '/rpc/v1');
  } finally {
    await s.stop();
  }
});

test('Chromium: a page from an allowed origin initializes and lists skills', { timeout: 30_000 }, async () => {
  const q = new URLSearchParams({ id: 'ok', mcp: srv.url, auth: authed.url, token });
  const out = await runPage(`${origin}/page.html?${q}`, 'ok');
  assert.equal(out.error, undefined, `the page failed: ${out.error}`);
  assert.equal(out.initStatus, 200);
  assert.equal(out.init.result.serverInfo.name, 'skill-mcp');
  assert.equal(out.listStatus, 200);
  const skills = out.list.result.structuredContent.skills.map((k) => k.qualified_name ?? k.name);
  assert.ok(skills.length > 0, 'list_skills answered with skills');
  assert.equal(out.noTokenStatus, 401);
  assert.match(String(out.challenge), /^Bearer/, 'WWW-Authenticate readable by the page');
  assert.equal(out.tokenStatus, 200);
  // the browser did preflight (the page sends application/json and MCP headers)
  const log = await poll(() => {
    const t = fs.readFileSync(accessLog, 'utf8');
    return /method=OPTIONS path=\/mcp status=204/.test(t) ? t : null;
  }, 5000, 50);
  assert.ok(log, 'a preflight reached the server');
});

test('Chromium: the same page from a disallowed origin fails', { timeout: 30_000 }, async () => {
  const q = new URLSearchParams({ id: 'evil', mcp: srv.url });
  const out = await runPage(`${evil}/page.html?${q}`, 'evil');
  assert.equal(out.origin, evil);
  assert.match(String(out.error), /TypeError: Failed to fetch/);
  assert.equal(out.initStatus, undefined, 'no answer reached the page');
});
