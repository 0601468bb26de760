// Shared helpers for the skill-mcp end-to-end tests.
//
// Every test file starts its own server (build/skill-mcp, or $SKILL_MCP_BIN)
// on --port 0 over a temporary COPY of fixtures/skills, reads the real port
// from the "listening on http://127.0.0.1:PORT/mcp" log line, and kills it by
// PID when done (stop(), called from an after() hook; a process 'exit' hook is
// the last resort so no server outlives the test run).

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const E2E_DIR = path.resolve(HERE, '..');
export const REPO = path.resolve(E2E_DIR, '..', '..');
export const FIXTURES = path.join(E2E_DIR, 'fixtures', 'skills');
export const BIN = process.env.SKILL_MCP_BIN
  ? path.resolve(process.env.SKILL_MCP_BIN)
  : path.join(REPO, 'build', 'skill-mcp');

export const MODERN = '2026-07-28';

// (the contract document decides what the tests expect).
export const TEST_TIMEOUT = 20_000; // hard per-test ceiling (node:test `timeout`)

const live = new Set();
process.on('exit', () => {
  for (const p of live) {
    try { process.kill(p.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
});

/** Copy a skills tree (the fixture library by default) into a fresh temp dir; returns {dir, skills}. */
export function copyFixtures(from = FIXTURES) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-e2e-'));
  // A root server runs scripts as nobody, who must be able to read the copy.
  fs.chmodSync(dir, 0o755);
  const skills = path.join(dir, 'skills');
  fs.cpSync(from, skills, { recursive: true });
  return { dir, skills };
}

/**
 * Start a server.
 *   opts.setup(skillsDir, tmpDir)  runs on the temp copy before the server starts
 *   opts.refresh                   --refresh-interval (default 0: no timer)
 *   opts.args                      extra flags
 *   opts.skillsDirs                override the --skills list entirely
 *   opts.fixtures                  the skills tree to copy (default fixtures/skills)
 *   opts.env                       variables for the server's environment on top
 *                                  of this process's (undefined removes one)
 */
export async function startServer(opts = {}) {
  const { dir, skills } = copyFixtures(opts.fixtures);
  if (opts.setup) {
    try {
      await opts.setup(skills, dir);
    } catch (e) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw e;
    }
  }
  const roots = opts.skillsDirs ?? [skills];
  const args = [];
  for (const r of roots) args.push('--skills', r);
  args.push('--host', '127.0.0.1', '--port', '0',
    '--refresh-interval', String(opts.refresh ?? 0), ...(opts.args ?? []));
  let env;
  if (opts.env) {
    env = { ...process.env, ...opts.env };
    for (const [k, v] of Object.entries(opts.env)) if (v === undefined) delete env[k];
  }
  const proc = spawn(BIN, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
  live.add(proc);
  let log = '';
  let exited = null;
  proc.on('exit', (code, signal) => { exited = { code, signal }; live.delete(proc); });
  const url = await new Promise((resolve, reject) => {
    const fail = (e) => {
      try { process.kill(proc.pid, 'SIGKILL'); } catch { /* not started or gone */ }
      fs.rmSync(dir, { recursive: true, force: true });
      reject(e);
    };
    const timer = setTimeout(() => {
      fail(new Error(`server did not report "listening on" within 10 s; stderr:\n${log}`));
    }, 10_000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      log += chunk;
      const m = /listening on (https?:\/\/127\.0\.0\.1:(\d+)(\/[^\s)]*)?)/.exec(log);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`server exited early (code ${code}, signal ${signal}); stderr:\n${log}`));
    });
    proc.on('error', (e) => { clearTimeout(timer); fail(e); });
  });
  const u = new URL(url);
  const server = {
    url, port: Number(u.port), path: u.pathname, proc, dir, skills,
    get log() { return log; },
    get exited() { return exited; },
    async stop() {
      if (!exited) {
        const gone = new Promise((r) => proc.once('exit', r));
        try { process.kill(proc.pid, 'SIGTERM'); } catch { /* gone */ }
        const t = setTimeout(() => { try { process.kill(proc.pid, 'SIGKILL'); } catch { /* gone */ } }, 3000);
        await gone;
        clearTimeout(t);
      }
      live.delete(proc);
      fs.rmSync(dir, { recursive: true, force: true });
      // Under ASan/UBSan (make asan) a report on stderr fails the file, and a
      // server that died of a signal other than the SIGTERM we sent is a crash.
      const m = /(ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:|SUMMARY: \w+Sanitizer)[^]{0,1500}/.exec(log);
      if (m) throw new Error(`server sanitizer report:\n${m[0]}`);
      const ex = exited;
      if (ex && ex.signal && ex.signal !== 'SIGTERM' && ex.signal !== 'SIGKILL') {
        throw new Error(`server died of ${ex.signal}; stderr tail:\n${log.slice(-1500)}`);
      }
    },
  };
  return server;
}

/** An official SDK client connected (legacy initialize handshake) to url. */
export async function connect(url, name = 'skill-mcp-e2e') {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return client;
}

/** tools/call; returns the raw CallToolResult. */
export async function call(client, name, args = {}) {
  return client.callTool({ name, arguments: args });
}

/** tools/call that must succeed: checks the text block equals structuredContent. */
export async function callOk(assert, client, name, args = {}) {
  const r = await call(client, name, args);
  assert.notEqual(r.isError, true, `${name} failed: ${r.content?.[0]?.text}`);
  assert.ok(r.structuredContent && typeof r.structuredContent === 'object',
    `${name}: structuredContent missing`);
  assert.equal(r.content?.[0]?.type, 'text');
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent,
    `${name}: content[0].text must be the same JSON as structuredContent`);
  return r.structuredContent;
}

/** tools/call that must come back as a tool error: returns its text. */
export async function callErr(assert, client, name, args = {}) {
  const r = await call(client, name, args);
  assert.equal(r.isError, true, `${name}(${JSON.stringify(args).slice(0, 200)}) should be isError, got ${JSON.stringify(r).slice(0, 400)}`);
  assert.equal(r.structuredContent, undefined, 'an isError result carries no structuredContent');
  assert.equal(r.content?.[0]?.type, 'text');
  assert.ok(r.content[0].text.length > 0, 'isError text must not be empty');
  return r.content[0].text;
}

/**
 * Raw HTTP request with full control over headers (Host included) and body.
 * Returns {status, headers, text, json}.
 */
export function raw(url, { method = 'POST', headers = {}, body } = {}) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname + u.search, method,
      headers: { ...headers },
      timeout: 10_000,
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.on('timeout', () => req.destroy(new Error('raw request timed out')));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

export const JSON_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

/** POST one JSON-RPC message (object or string) on the legacy path. */
export function post(url, msg, headers = {}) {
  return raw(url, {
    headers: { ...JSON_HEADERS, ...headers },
    body: typeof msg === 'string' || Buffer.isBuffer(msg) ? msg : JSON.stringify(msg),
  });
}

/** _meta for a modern (2026-07-28) request. */
export function modernMeta(extra = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'skill-mcp-e2e', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': {},
    ...extra,
  };
}

/** POST a modern-era request with matching MCP-Protocol-Version / Mcp-Method / Mcp-Name. */
export function postModern(url, method, params = {}, { id = 1, headers = {}, meta } = {}) {
  const p = { ...params, _meta: meta ?? modernMeta() };
  const h = { ...JSON_HEADERS, 'mcp-protocol-version': MODERN, 'mcp-method': method };
  const nm = params.name ?? params.uri;
  if (nm !== undefined && ['tools/call', 'resources/read', 'prompts/get'].includes(method)) h['mcp-name'] = nm;
  return post(url, { jsonrpc: '2.0', id, method, params: p }, { ...h, ...headers });
}

/** Poll fn() until it returns a truthy value or ms elapse; returns the last value. */
export async function poll(fn, ms = 5000, every = 100) {
  const end = Date.now() + ms;
  let v;
  for (;;) {
    v = await fn();
    if (v || Date.now() >= end) return v;
    await new Promise((r) => setTimeout(r, every));
  }
}

/** A loopback TCP port that was free a moment ago (for a helper that takes no port 0). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

/** Run the binary to completion (CLI tests). */
export function runCli(args, timeout = 10_000) {
  const r = spawnSync(BIN, args, { encoding: 'utf8', timeout });
  return { code: r.status, signal: r.signal, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/**
 * `skill-mcp token add NAME --file FILE [--rpm N]`: the new client's bearer
 * token; throws with the command's stderr when it fails.
 */
export function addToken(file, name, { rpm } = {}) {
  const args = ['token', 'add', name, '--file', file];
  if (rpm !== undefined) args.push('--rpm', String(rpm));
  const r = runCli(args);
  if (r.code !== 0) throw new Error(`token add ${name} exited ${r.code}: ${r.stderr}`);
  return r.stdout.trim();
}

/** The JSON-RPC messages of an SSE body's `message` events, in order. */
export function sseMessages(text) {
  return text.split('\n\n').filter((b) => b.startsWith('event: message'))
    .map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)));
}

/** Text a terminal shows as it is: no C0 control but the line ends, no DEL,
 * no C1 control, no bidirectional override. */
export function assertInert(text, what) {
  const bad = [...text].find((ch) => {
    const c = ch.codePointAt(0);
    return (c < 0x20 && ch !== '\n') || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e);
  });
  assert.equal(bad, undefined, `${what}: a raw U+${bad?.codePointAt(0).toString(16).padStart(4, '0')} in\n${text}`);
}

/** Every page of list_skills with the given args. */
export async function allPages(client, args, callOkFn) {
  const pages = [];
  let cursor;
  for (let i = 0; i < 100; i++) {
    const r = await callOkFn(client, 'list_skills', cursor ? { ...args, cursor } : args);
    pages.push(r);
    if (r.next_cursor === undefined) break;
    cursor = r.next_cursor;
  }
  return pages;
}

/**
 * A call that must be refused: an isError tool result (short text, no
 * structuredContent) or a JSON-RPC invalid-params error. "\u0000" inside a
 * string is valid JSON, so a NUL byte must be refused like any other bad
 * argument, not as a parse error. Returns how.
 */
export async function expectRefused(assert, client, tool, args) {
  const label = `${tool}(${JSON.stringify(args).slice(0, 100)})`;
  try {
    const r = await client.callTool({ name: tool, arguments: args });
    assert.equal(r.isError, true, `${label} should be refused, got ${JSON.stringify(r).slice(0, 300)}`);
    assert.equal(r.structuredContent, undefined, `${label}: isError result carries no structuredContent`);
    assert.ok(r.content?.[0]?.text?.length > 0, `${label}: isError needs a text`);
    assert.ok(r.content[0].text.length < 4096, `${label}: error text stays short`);
    return { isError: true, text: r.content[0].text };
  } catch (e) {
    if (e?.code === undefined) throw e;
    assert.equal(e.code, -32602, `${label}: expected isError or -32602, got error ${e.code}: ${e.message}`);
    return { code: e.code, message: e.message };
  }
}

/**
 * Waits until the server's background body index is published. That index
 * is published by a rescan, which also takes in any file changes made
 * before it: a test that asserts exactly what a later reload_skills reports
 * waits for it first. "subject" is a word of the fixture git-helper's body
 * only (not its name, tags or description).
 */
export async function bodyIndexReady(client, ms = 20000) {
  const ok = await poll(async () => {
    const r = await client.callTool({ name: 'list_skills', arguments: { query: 'subject' } });
    const sc = r.structuredContent;
    return !sc?.hint && sc?.skills?.[0]?.name === 'git-helper';
  }, ms, 50);
  if (!ok) throw new Error(`the body index was not published within ${ms} ms`);
}

/**
 * Resolves once each of `workers` body indexers has published (the server
 * logs it after the rescan that does). Until then that rescan may run at any
 * moment and pick up a file a test has just edited, which a test of what an
 * edit does before the next rescan must not race.
 */
export async function indexerSettled(srv, workers = 1, ms = 20000) {
  const done = () => (srv.log.match(/skills: indexed the bodies of/g) ?? []).length >= workers;
  if (!await poll(done, ms, 20)) throw new Error(`the body indexer did not finish within ${ms} ms; stderr:\n${srv.log}`);
}

/**
 * tests/fakeapi/fakeapi.py on a free loopback port: { proc, url }. The
 * caller stops it by its PID (proc.kill); it also exits after `lifetime` s.
 */
export function startFakeapi(lifetime = 120) {
  const proc = spawn('python3', [path.join(REPO, 'tests', 'fakeapi', 'fakeapi.py'), '--port', '0', '--lifetime', String(lifetime)],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error('fakeapi did not start')); }, 10_000);
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (c) => {
      out += c;
      const m = /^PORT (\d+)$/m.exec(out);
      if (m) { clearTimeout(timer); resolve({ proc, url: `http://127.0.0.1:${m[1]}` }); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`fakeapi exited (${code})`)); });
  });
}
