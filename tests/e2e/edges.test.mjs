// Server edges: what one client or one odd file can do to everyone else.
// A SKILL.md replaced by a FIFO, the skills root deleted and made again,
// keep-alive answers during a SIGTERM drain, the task store filled by one
// client, secrets on the command line, and authentication on every surface
// that serves skill content.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { startServer, post, raw, poll, indexerSettled, BIN, FIXTURES, TEST_TIMEOUT } from './lib/harness.mjs';
import { sleep } from './lib/procs.mjs';
import { startRedis } from './lib/redis.mjs';

const servers = [];
const tmpDirs = [];
after(async () => {
  for (const s of servers) { try { await s.stop(); } catch { /* reported by its test */ } }
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});
async function start(opts) {
  const s = await startServer(opts);
  servers.push(s);
  return s;
}
let nextId = 1;
const toolCall = (url, name, args, headers = {}) =>
  post(url, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } }, headers);
const textOf = (r) => r.json?.result?.content?.[0]?.text ?? '';

/** Resolves to true when the server process exits within ms. */
function exitsWithin(s, ms) {
  if (s.exited) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    s.proc.once('exit', () => { clearTimeout(t); resolve(true); });
  });
}

test('a SKILL.md replaced by a FIFO is refused at once, and SIGTERM still ends the server',
  { timeout: TEST_TIMEOUT }, async () => {
    const s = await start({ args: ['--shutdown-timeout', '2'] });
    // Settled first, so that no rescan drops the skill before load_skill
    // meets the FIFO itself.
    await indexerSettled(s);
    const md = path.join(s.skills, 'git-helper', 'SKILL.md');
    fs.rmSync(md);
    execFileSync('mkfifo', [md]);
    const t0 = Date.now();
    const r = await toolCall(s.url, 'load_skill', { name: 'git-helper' });
    assert.ok(Date.now() - t0 < 3000, 'load_skill must not wait on a FIFO');
    assert.equal(r.json.result.isError, true, JSON.stringify(r.json));
    assert.match(textOf(r), /not a regular file/);
    // Other skills are served as before.
    const ok = await toolCall(s.url, 'load_skill', { name: 'csv-profile' });
    assert.notEqual(ok.json.result.isError, true);
    process.kill(s.proc.pid, 'SIGTERM');
    assert.ok(await exitsWithin(s, 10_000), 'the server must exit after SIGTERM');
  });

const listNames = async (url) => {
  const r = await toolCall(url, 'list_skills', {});
  const sc = r.json?.result?.structuredContent;
  return (sc?.skills ?? []).map((k) => k.qualified_name ?? k.name);
};

test('a skills root deleted and made again is served within one refresh interval',
  { timeout: TEST_TIMEOUT }, async () => {
    const s = await start({ refresh: 0.2 });
    assert.ok((await listNames(s.url)).includes('git-helper'));
    fs.rmSync(s.skills, { recursive: true, force: true });
    assert.ok(await poll(async () => (await listNames(s.url)).length === 0, 10_000, 50),
      'the deleted root empties the list');
    await sleep(500);       // settle: the missing root is what the index watches now
    const tmp = `${s.skills}.new`;
    fs.mkdirSync(path.join(tmp, 'phoenix'), { recursive: true });
    fs.writeFileSync(path.join(tmp, 'phoenix', 'SKILL.md'),
      '---\nname: phoenix\ndescription: Rises again from a deleted skills root.\n---\n\n# Phoenix\n');
    fs.renameSync(tmp, s.skills);
    const t0 = Date.now();
    const seen = await poll(async () => (await listNames(s.url)).includes('phoenix'), 5000, 50);
    const took = Date.now() - t0;
    assert.ok(seen, 'the recreated root is never served');
    assert.ok(took < 1500, `the recreated root took ${took} ms to be served (refresh 0.2 s)`);
  });

const TOKEN = 'smcp_edges-test-token-0123456789abcdefghijklmnopq';
const TOKEN_B = 'smcp_edges-test-token-bob-0123456789abcdefghijklm';
function tokenFile() {
  const sha = (t) => execFileSync('sha256sum', { input: t }).toString().split(' ')[0];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-edges-tok-'));
  tmpDirs.push(dir);
  const f = path.join(dir, 'tokens');
  fs.writeFileSync(f, `alice ${sha(TOKEN)}\nbob ${sha(TOKEN_B)}\n`, { mode: 0o600 });
  return f;
}
const BEARER = { authorization: `Bearer ${TOKEN}` };
const BEARER_B = { authorization: `Bearer ${TOKEN_B}` };
const get = (s, p, headers = {}) => raw(`http://127.0.0.1:${s.port}${p}`, { method: 'GET', headers });
const IDX = '/.well-known/agent-skills/index.json';

/** `skill-mcp fetch` run without blocking this process (it serves the index). */
function fetchCli(args, env = {}) {
  return new Promise((resolve) => {
    const p = spawn(BIN, ['fetch', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    p.stdout.on('data', (c) => { out += c; });
    p.stderr.on('data', (c) => { err += c; });
    p.on('exit', (code) => resolve({ code, stdout: out, stderr: err }));
  });
}

test('with --auth-tokens the discovery index, its archives and /metrics need the token; /healthz and /readyz stay open',
  { timeout: TEST_TIMEOUT }, async () => {
    const s = await start({ args: ['--auth-tokens', tokenFile()] });
    const idx = await get(s, IDX);
    assert.equal(idx.status, 401, 'the index without a token');
    assert.match(idx.headers['www-authenticate'] ?? '', /^Bearer realm="skill-mcp"/);
    assert.equal((await get(s, IDX, { authorization: 'Bearer smcp_wrong' })).status, 401);
    const ok = await get(s, IDX, BEARER);
    assert.equal(ok.status, 200);
    const entries = JSON.parse(ok.text).skills;
    assert.ok(entries.length > 0);
    const archive = `/.well-known/agent-skills/${entries[0].url}`;
    assert.equal((await get(s, archive)).status, 401, 'an archive without a token');
    assert.equal((await get(s, archive, BEARER)).status, 200);
    assert.equal((await get(s, '/.well-known/agent-skills/deploy-runner.tar.gz')).status, 401,
      'a skill with scripts and hooks: no archive without a token');
    assert.equal((await get(s, '/metrics')).status, 401, '/metrics without a token');
    assert.equal((await get(s, '/metrics', BEARER)).status, 200);
    assert.equal((await get(s, '/healthz')).status, 200);
    assert.equal((await get(s, '/readyz')).status, 200);
    assert.equal((await toolCall(s.url, 'list_skills', {})).status, 401, '/mcp without a token');
  });

test('--public-index and --metrics-public open those surfaces only; /mcp still needs the token',
  { timeout: TEST_TIMEOUT }, async () => {
    const s = await start({ args: ['--auth-tokens', tokenFile(), '--public-index', '--metrics-public'] });
    assert.equal((await get(s, IDX)).status, 200);
    assert.equal((await get(s, '/.well-known/agent-skills/git-helper/SKILL.md')).status, 200);
    assert.equal((await get(s, '/metrics')).status, 200);
    assert.equal((await toolCall(s.url, 'list_skills', {})).status, 401);
    assert.equal((await toolCall(s.url, 'list_skills', {}, BEARER)).status, 200);
  });

test('skill-mcp fetch from an authenticated index: refused without a token, works with SKILL_MCP_FETCH_TOKEN',
  { timeout: 40_000 }, async () => {
    const s = await start({ args: ['--auth-tokens', tokenFile()] });
    const origin = `http://127.0.0.1:${s.port}`;
    const local = ['--allow-http', '--allow-address', `127.0.0.1:${s.port}`];
    const into = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-edges-fetch-'));
    try {
      const no = await fetchCli([origin, ...local, '--into', into, '--name', 'git-helper']);
      assert.notEqual(no.code, 0);
      assert.match(no.stderr, /HTTP status 401: the server wants a token \(set SKILL_MCP_FETCH_TOKEN/);
      const yes = await fetchCli([origin, ...local, '--into', into, '--name', 'git-helper'],
        { SKILL_MCP_FETCH_TOKEN: TOKEN });
      assert.equal(yes.code, 0, yes.stderr);
      assert.ok(fs.existsSync(path.join(into, 'git-helper', 'SKILL.md')));
    } finally {
      fs.rmSync(into, { recursive: true, force: true });
    }
  });

test('skill-mcp fetch sends SKILL_MCP_FETCH_TOKEN to the first origin only, never after a redirect to another',
  { timeout: 40_000 }, async () => {
    const seen = [];
    const listen = (handler) => new Promise((resolve) => {
      const srv = http.createServer(handler);
      srv.listen(0, '127.0.0.1', () => resolve(srv));
    });
    const other = await listen((req, res) => {
      seen.push({ at: 'other', auth: req.headers.authorization ?? null });
      res.writeHead(404).end();
    });
    const first = await listen((req, res) => {
      seen.push({ at: 'first', auth: req.headers.authorization ?? null });
      res.writeHead(302, { location: `http://127.0.0.1:${other.address().port}${req.url}` }).end();
    });
    const into = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-edges-fetch-'));
    try {
      const r = await fetchCli([`http://127.0.0.1:${first.address().port}`, '--into', into, '--allow-http',
        '--allow-address', `127.0.0.1:${first.address().port}`, '--allow-address', `127.0.0.1:${other.address().port}`],
      { SKILL_MCP_FETCH_TOKEN: TOKEN });
      assert.notEqual(r.code, 0);
      assert.deepEqual(seen, [{ at: 'first', auth: `Bearer ${TOKEN}` }, { at: 'other', auth: null }],
        'the token went to the first origin and not past the redirect');
    } finally {
      first.close();
      other.close();
      fs.rmSync(into, { recursive: true, force: true });
    }
  });

/** A local HTTP server that answers by routes and records who sent what. */
async function recorder(routes) {
  const seen = [];
  const srv = http.createServer((req, res) => {
    seen.push({ url: req.url, authorization: req.headers.authorization ?? null });
    const r = routes[req.url];
    if (!r) { res.writeHead(404); res.end(); return; }
    res.writeHead(r.status ?? 200, r.headers ?? { 'content-type': 'application/json' });
    res.end(r.body ?? '');
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = srv.address().port;
  return { seen, routes, port, origin: `http://127.0.0.1:${port}`, close: () => new Promise((r) => srv.close(r)) };
}

test('SKILL_MCP_FETCH_TOKEN goes to the index URL\'s origin only: not to an artifact elsewhere, nor to where the index was redirected',
  { timeout: 40_000 }, async () => {
    const WK = '/.well-known/agent-skills/index.json';
    const index = (url) => JSON.stringify({
      $schema: 'https://schemas.agentskills.io/discovery/0.2.0/schema.json',
      skills: [{ name: 'probe', type: 'skill-md', description: 'A probe.', url, digest: `sha256:${'0'.repeat(64)}` }],
    });
    const other = await recorder({});
    const home = await recorder({});
    other.routes['/moved/index.json'] = { body: index('/probe/SKILL.md') };
    home.routes[WK] = { body: index(`${other.origin}/probe/SKILL.md`) };
    home.routes['/r/index.json'] = { status: 302, headers: { location: `${other.origin}/moved/index.json` } };
    const into = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-edges-tok-'));
    try {
      const local = ['--allow-http', '--allow-address', `127.0.0.1:${home.port}`,
        '--allow-address', `127.0.0.1:${other.port}`, '--into', into];
      // an index entry whose URL is on another origin
      let r = await fetchCli([home.origin, ...local], { SKILL_MCP_FETCH_TOKEN: TOKEN });
      assert.ok(home.seen.some((x) => x.url === WK && x.authorization === `Bearer ${TOKEN}`),
        `the index's own origin gets the token: ${JSON.stringify(home.seen)}`);
      assert.ok(other.seen.some((x) => x.url === '/probe/SKILL.md'), `the artifact was asked for: ${r.stderr}`);
      // an index redirected to another origin, with an entry URL relative to it
      r = await fetchCli([`${home.origin}/r/index.json`, ...local], { SKILL_MCP_FETCH_TOKEN: TOKEN });
      assert.ok(other.seen.some((x) => x.url === '/moved/index.json'), `the redirect was followed: ${r.stderr}`);
      assert.equal(other.seen.filter((x) => x.url === '/probe/SKILL.md').length, 2, r.stderr);
      assert.deepEqual(other.seen.filter((x) => x.authorization !== null), [],
        'another origin never sees the token');
    } finally {
      fs.rmSync(into, { recursive: true, force: true });
      await other.close();
      await home.close();
    }
  });

// Walks up from the script's parent, printing every ancestor's command line
// and environment it can read.
const PEEK = `#!/bin/sh
p=$PPID
n=0
while [ "$p" -gt 1 ] && [ $n -lt 12 ]; do
  tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null; echo
  tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null; echo
  p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2)
  n=$((n+1))
done
echo "walked $n"
`;
function addPeek(skills) {
  const d = path.join(skills, 'peek');
  fs.mkdirSync(path.join(d, 'scripts'), { recursive: true });
  fs.writeFileSync(path.join(d, 'SKILL.md'), '---\nname: peek\ndescription: Reads its ancestors.\n---\n\n# Peek\n');
  fs.writeFileSync(path.join(d, 'scripts', 'peek.sh'), PEEK, { mode: 0o755 });
}
const procText = (pid, what) => fs.readFileSync(`/proc/${pid}/${what}`).toString('latin1');

test('the Redis password is never in the command line or environment of the server or what its scripts can read',
  { timeout: 40_000 }, async () => {
    const PW = `pw-${process.pid}-edges-secret`;
    const r = await startRedis({ password: PW });
    try {
      // 1. On the command line: obeyed, warned about, scrubbed.
      const a = await start({ setup: addPeek, args: ['--enable-tasks', '--tasks-redis', `redis://:${PW}@127.0.0.1:${r.port}/4`] });
      assert.match(a.log, new RegExp(`tasks: records in redis at 127\\.0\\.0\\.1:${r.port}`), 'the password still reaches Redis');
      assert.match(a.log, /the Redis password is on the command line \(--tasks-redis\)/);
      assert.ok(!procText(a.proc.pid, 'cmdline').includes(PW), '/proc/PID/cmdline shows the password');
      assert.match(procText(a.proc.pid, 'cmdline'), /redis:\/\/:\*+@127\.0\.0\.1/);
      const peek = await toolCall(a.url, 'run_skill_script', { name: 'peek', script: 'scripts/peek.sh' });
      const out = JSON.stringify(peek.json);
      assert.match(out, /walked [1-9]/, out.slice(0, 400));
      assert.ok(out.includes('--tasks-redis'), 'the script read the server\'s command line');
      assert.ok(!out.includes(PW), 'a script read the password from an ancestor');

      // 2. From the environment: scrubbed from /proc/PID/environ, not inherited.
      process.env.SKILL_MCP_TASKS_REDIS = `redis://:${PW}@127.0.0.1:${r.port}/4`;
      process.env.EDGES_ENV_MARK = 'edges-env-mark';
      let b;
      try {
        b = await start({ setup: addPeek, args: ['--enable-tasks'] });
      } finally {
        delete process.env.SKILL_MCP_TASKS_REDIS;
        delete process.env.EDGES_ENV_MARK;
      }
      assert.match(b.log, new RegExp(`tasks: records in redis at 127\\.0\\.0\\.1:${r.port}`));
      assert.doesNotMatch(b.log, /password is on the command line/);
      assert.ok(!procText(b.proc.pid, 'environ').includes(PW), '/proc/PID/environ shows the password');
      const peek2 = JSON.stringify((await toolCall(b.url, 'run_skill_script', { name: 'peek', script: 'scripts/peek.sh' })).json);
      assert.match(peek2, /walked [1-9]/);
      // A root server runs scripts as nobody, who cannot read its environ
      // (the direct /proc check above covers it); as the same user it can.
      if (process.getuid() !== 0) assert.ok(peek2.includes('edges-env-mark'), 'the script read the server\'s environment');
      assert.ok(!peek2.includes(PW), 'a script read the password from the environment');

      // Without --enable-tasks the variable is not used (the server starts),
      // and still scrubbed.
      process.env.SKILL_MCP_TASKS_REDIS = `redis://:${PW}@127.0.0.1:${r.port}/4`;
      let d;
      try {
        d = await start({ args: [] });
      } finally {
        delete process.env.SKILL_MCP_TASKS_REDIS;
      }
      assert.ok(!procText(d.proc.pid, 'environ').includes(PW), 'an unused variable is scrubbed too');

      // 3. From a file.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-edges-redis-'));
      tmpDirs.push(dir);
      const f = path.join(dir, 'redis-url');
      fs.writeFileSync(f, `redis://:${PW}@127.0.0.1:${r.port}/4\n`, { mode: 0o600 });
      const c = await start({ args: ['--enable-tasks', '--tasks-redis-file', f] });
      assert.match(c.log, new RegExp(`tasks: records in redis at 127\\.0\\.0\\.1:${r.port}`));
      assert.ok(!procText(c.proc.pid, 'cmdline').includes(PW));
      for (const s of [a, b, c]) assert.ok(!s.log.includes(PW), 'the log shows the password');
    } finally {
      await r.stop();
    }
  });

// ---- the task store ----------------------------------------------------------

const rpcAs = (url, method, params, headers, agent) => new Promise((resolve, reject) => {
  const u = new URL(url);
  const body = JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });
  const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => { const t = Buffer.concat(chunks).toString(); try { resolve(JSON.parse(t)); } catch { resolve({ text: t, status: res.statusCode }); } });
  });
  req.on('error', reject);
  req.end(body);
});
// A task that ends before anything runs: the skill does not exist.
const unknownTask = { name: 'run_skill_script', arguments: { name: 'no-such-skill', script: 'scripts/x.sh' }, task: {} };

/**
 * A server whose log is read only up to its "listening on" line: 20,000 log
 * lines kept in one string would cost the test more than the server.
 */
async function startQuiet(args) {
  const proc = spawn(BIN, ['--skills', FIXTURES, '--host', '127.0.0.1', '--port', '0',
    '--refresh-interval', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let head = '';
  const url = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no "listening on" in 10 s: ${head}`)), 10_000);
    const onData = (c) => {
      head += c;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(head);
      if (m) { clearTimeout(t); proc.stderr.off('data', onData); proc.stderr.resume(); resolve(m[1]); }
    };
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => { clearTimeout(t); reject(new Error(`server exited (${code}): ${head}`)); });
  });
  return {
    url,
    async stop() {
      const gone = new Promise((r) => proc.once('exit', (code, sig) => r({ code, sig })));
      process.kill(proc.pid, 'SIGTERM');
      const ex = await gone;
      assert.equal(ex.code, 0, `the server ended with ${JSON.stringify(ex)}`);
    },
  };
}

test('one client cannot fill the task store: 10,050 task calls by alice leave bob (and alice) served',
  { timeout: 120_000 }, async () => {
    const s = await startQuiet(['--enable-tasks', '--auth-tokens', tokenFile()]);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    try {
      let first;
      let next = 0;
      const worker = async () => {
        while (next < 10_050) {
          next++;
          const r = await rpcAs(s.url, 'tools/call', unknownTask, BEARER, agent);
          assert.ok(r.result?.task, JSON.stringify(r).slice(0, 300));
          first ??= r.result.task;
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      assert.ok(first.ttl <= 60_000, `a task that ended before it started is kept ${first.ttl} ms`);
      const b = await rpcAs(s.url, 'tools/call', unknownTask, BEARER_B, agent);
      assert.ok(b.result?.task, `bob after alice's flood: ${JSON.stringify(b).slice(0, 300)}`);
      const a = await rpcAs(s.url, 'tools/call', unknownTask, BEARER, agent);
      assert.ok(a.result?.task, `alice again: ${JSON.stringify(a).slice(0, 300)}`);
      // her oldest finished record made room; the newest is readable
      const gone = await rpcAs(s.url, 'tasks/get', { taskId: first.taskId }, BEARER, agent);
      assert.equal(gone.error?.code, -32602, JSON.stringify(gone));
      const kept = await rpcAs(s.url, 'tasks/get', { taskId: a.result.task.taskId }, BEARER, agent);
      assert.equal(kept.result?.taskId, a.result.task.taskId);
    } finally {
      agent.destroy();
      await s.stop();
    }
  });

async function capCase(args) {
  const s = await start({ args: ['--enable-tasks', '--auth-tokens', tokenFile(), '--max-tasks-per-client', '2',
    '--max-task-records-per-client', '5', ...args] });
  const ids = [];
  for (let i = 0; i < 12; i++) {
    const r = await rpcAs(s.url, 'tools/call', unknownTask, BEARER);
    assert.ok(r.result?.task, JSON.stringify(r).slice(0, 300));
    ids.push(r.result.task.taskId);
  }
  const list = await rpcAs(s.url, 'tasks/list', {}, BEARER);
  const listed = list.result.tasks.map((t) => t.taskId).sort();
  assert.deepEqual(listed, ids.slice(-5).sort(), 'alice keeps her 5 newest records');
  for (const id of ids.slice(0, 7)) {
    assert.equal((await rpcAs(s.url, 'tasks/get', { taskId: id }, BEARER)).error?.code, -32602);
  }
  const b = await rpcAs(s.url, 'tools/call', unknownTask, BEARER_B);
  assert.ok(b.result?.task);
  assert.equal((await rpcAs(s.url, 'tasks/list', {}, BEARER_B)).result.tasks.length, 1);
  return s;
}

test('--max-task-records-per-client: the oldest finished records of that client go first (memory store)',
  { timeout: TEST_TIMEOUT }, async () => {
    await capCase([]);
    const bad = spawnSync(BIN, ['--enable-tasks', '--max-tasks-per-client', '8', '--max-task-records-per-client', '4', '--port', '0'], { encoding: 'utf8', timeout: 5000 });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--max-task-records-per-client \(4\) must be at least --max-tasks-per-client \(8\)/);
  });

test('--max-task-records-per-client: the oldest finished records of that client go first (Redis store)',
  { timeout: 40_000 }, async () => {
    const r = await startRedis({ password: 'edges-cap' });
    try {
      await capCase(['--tasks-redis', `redis://:edges-cap@127.0.0.1:${r.port}/6`]);
    } finally {
      await r.stop();
    }
  });

// ---- the drain -----------------------------------------------------------------

/**
 * A raw keep-alive connection that sends ping after ping, each after the
 * last answer, until stop.at, and records every request: when its bytes
 * were fully written, and the answer (complete or not, and its Connection
 * header). The records so far are the promise's `reqs`.
 */
function pinger(port, stop, msg) {
  const sock = net.connect(port, '127.0.0.1');
  const reqs = [];
  let buf = Buffer.alloc(0);
  let cur = null;
  let closed = false;
  const send = () => {
    if (closed || Date.now() > stop.at) { sock.end(); return; }
    const body = JSON.stringify({ jsonrpc: '2.0', id: nextId++, ...msg });
    cur = { sentAt: null, complete: false, close: false, bytes: 0 };
    reqs.push(cur);
    const r = cur;
    sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Accept: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    () => { r.sentAt = Date.now(); });
  };
  sock.on('connect', send);
  sock.on('data', (c) => {
    buf = Buffer.concat([buf, c]);
    cur.bytes += c.length;
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = buf.subarray(0, end).toString();
    const len = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? -1);
    if (len < 0 || buf.length < end + 4 + len) return;
    cur.complete = /^HTTP\/1\.1 200/.test(head) && /"result"/.test(buf.subarray(end + 4, end + 4 + len).toString());
    cur.close = /\r\nconnection: *close/i.test(head);
    buf = buf.subarray(end + 4 + len);
    if (cur.close) { sock.end(); return; }
    send();
  });
  const done = new Promise((resolve) => {
    sock.on('close', () => { closed = true; resolve(reqs); });
    sock.on('error', () => { /* reported through the records */ });
  });
  done.reqs = reqs;
  return done;
}

test('SIGTERM with six keep-alive clients: every request sent before it is answered in full, every drain answer closes its connection, new connections are refused',
  { timeout: TEST_TIMEOUT }, async () => {
    const s = await start({
      args: ['--shutdown-timeout', '5'],
      setup(skills) {
        const d = path.join(skills, 'nap');
        fs.mkdirSync(path.join(d, 'scripts'), { recursive: true });
        fs.writeFileSync(path.join(d, 'SKILL.md'), '---\nname: nap\ndescription: Sleeps a little.\n---\n\n# Nap\n');
        fs.writeFileSync(path.join(d, 'scripts', 'nap.sh'), '#!/bin/sh\nsleep 0.03\necho rested\n', { mode: 0o755 });
      },
    });
    const stop = { at: Infinity };
    // Three clients ping, three run a short script: answers that take no
    // time and answers that take a while.
    const nap = { method: 'tools/call', params: { name: 'run_skill_script', arguments: { name: 'nap', script: 'scripts/nap.sh' } } };
    const clients = Array.from({ length: 6 }, (_, i) => pinger(s.port, stop, i % 2 ? nap : { method: 'ping' }));
    // Requests in flight when the signal comes, and enough before it.
    const answered = () => clients.reduce((n, c) => n + c.reqs.filter((r) => r.complete).length, 0);
    assert.ok(await poll(() => answered() > 20, 10_000, 10), `only ${answered()} answers before the SIGTERM`);
    const sigAt = Date.now();
    process.kill(s.proc.pid, 'SIGTERM');
    stop.at = sigAt + 3600;
    // A new connection is refused once the drain has begun.
    const refused = await poll(() => new Promise((resolve) => {
      const c = net.connect(s.port, '127.0.0.1');
      c.on('connect', () => { c.destroy(); resolve(false); });
      c.on('error', (e) => resolve(e.code === 'ECONNREFUSED'));
    }), 10_000, 5);
    assert.ok(refused, 'new connections are still accepted during the drain');
    const all = (await Promise.all(clients)).flat();
    assert.ok(await exitsWithin(s, 8000), 'the server exits');
    assert.equal(s.exited.code, 0);
    const before = all.filter((r) => r.sentAt !== null && r.sentAt < sigAt);
    assert.ok(before.length > 20, `only ${before.length} requests before the SIGTERM`);
    const lost = before.filter((r) => !r.complete);
    assert.equal(lost.length, 0, `${lost.length} request(s) sent before SIGTERM never answered in full`);
    assert.doesNotMatch(s.log, /client gone/, 'a request was processed and not answered');
    for (const r of all) if (r.bytes > 0) assert.ok(r.complete, 'an answer was cut off');
    assert.ok(all.some((r) => r.close), 'no drain answer said Connection: close');
  });
