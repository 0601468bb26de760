// Completion of pending calls under hostile clients: a client that goes
// away mid-script (plain JSON and SSE), a cancel of a running script, a
// batch, two calls with one id, SIGTERM mid-script, and tasks/result waits
// that lose their client. Each script is marked, so that what survives its
// run can be seen in /proc; under ASan the server's stop() fails the file
// on any report.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { JSON_HEADERS, MODERN, modernMeta, poll, post, raw, startServer } from './lib/harness.mjs';
import { markedPids } from './lib/procs.mjs';
import { startRedis } from './lib/redis.mjs';

const servers = [];
const redises = [];
after(async () => {
  for (const s of servers) await s.stop();
  for (const r of redises) await r.stop();
});

let seq = 0;
const uniq = (p) => `${p}-${process.pid}-${Date.now()}-${seq++}`;

async function start(args = []) {
  const s = await startServer({
    args,
    setup: (skills) => {
      const sk = path.join(skills, 'slowpoke');
      fs.mkdirSync(path.join(sk, 'scripts'), { recursive: true });
      fs.writeFileSync(path.join(sk, 'SKILL.md'), '---\nname: slowpoke\ndescription: Sleeps as long as it is told\n---\n# Slowpoke\n');
      // argv: seconds marker; sleeps with the marker in its command line
      fs.writeFileSync(path.join(sk, 'scripts', 'nap.sh'),
        'echo "start $2" >&2\nsleep "$1" "$2" 2>/dev/null || sleep "$1" &\nexec -a "nap-$2" sleep "$1"\n');
    },
  });
  servers.push(s);
  return s;
}

const napArgs = (secs, marker) => ({ name: 'slowpoke', script: 'nap.sh', args: [String(secs), marker] });

/** A POST that the test can abort; resolves {status, text} or {aborted}. */
function openPost(url, msg, headers = {}) {
  const u = new URL(url);
  let req;
  const done = new Promise((resolve) => {
    req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
      headers: { ...JSON_HEADERS, ...headers } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString() }));
      res.on('error', () => resolve({ aborted: true }));
      res.on('aborted', () => resolve({ aborted: true }));
    });
    req.on('error', () => resolve({ aborted: true }));
    req.end(JSON.stringify(msg));
  });
  return { done, abort: () => req.destroy() };
}

const callMsg = (id, args, meta) => ({ jsonrpc: '2.0', id, method: 'tools/call',
  params: { name: 'run_skill_script', arguments: args, ...(meta ? { _meta: meta } : {}) } });

async function alive(s) {
  const r = await post(s.url, { jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} });
  assert.equal(r.status, 200, r.text);
}

async function gone(marker, ms = 10_000) {
  const left = await poll(() => markedPids(marker).length === 0, ms, 50);
  assert.ok(left, `processes of ${marker} outlived their call: ${markedPids(marker)}`);
}

async function started(marker) {
  assert.ok(await poll(() => markedPids(marker).length > 0, 8000, 50), `${marker} never started`);
}

test('a client that disconnects mid-script (plain JSON) ends its script; the server keeps serving', { timeout: 30_000 }, async () => {
  const s = await start();
  const m = uniq('json');
  const p = openPost(s.url, callMsg(1, napArgs(30, m)));
  await started(m);
  p.abort();
  await gone(m);
  await alive(s);
});

test('a client that disconnects mid-script (SSE, progress) ends its script', { timeout: 30_000 }, async () => {
  const s = await start();
  const m = uniq('sse');
  const p = openPost(s.url, callMsg(2, napArgs(30, m), { progressToken: 'tok' }));
  await started(m);
  p.abort();
  await gone(m);
  await alive(s);
});

test('the same on the 2026-07-28 era', { timeout: 30_000 }, async () => {
  const s = await start();
  const m = uniq('modern');
  const p = openPost(s.url, callMsg(3, napArgs(30, m), modernMeta({ progressToken: 7 })),
    { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'run_skill_script' });
  await started(m);
  p.abort();
  await gone(m);
  await alive(s);
});

test('notifications/cancelled stops a running script and its call still gets one answer', { timeout: 30_000 }, async () => {
  const s = await start();
  const m = uniq('cancel');
  const p = openPost(s.url, callMsg('c-1', napArgs(30, m)));
  await started(m);
  const n = await post(s.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c-1' } });
  assert.equal(n.status, 202, n.text);
  const r = await p.done;
  assert.ok(!r.aborted, 'the call was answered');
  await gone(m);
  await alive(s);
});

test('two calls with the same id both get their own answer', { timeout: 30_000 }, async () => {
  const s = await start();
  const m1 = uniq('dup1');
  const m2 = uniq('dup2');
  const a = openPost(s.url, callMsg(5, napArgs(1, m1)));
  const b = openPost(s.url, callMsg(5, napArgs(1, m2)));
  const [ra, rb] = await Promise.all([a.done, b.done]);
  for (const r of [ra, rb]) {
    assert.equal(r.status, 200, r.text);
    const j = JSON.parse(r.text);
    assert.equal(j.id, 5);
    assert.equal(j.result.structuredContent.status, 'ok', r.text);
  }
  await gone(m1);
  await gone(m2);
});

test('a batch holding a script call is answered (or refused) and leaves nothing running', { timeout: 30_000 }, async () => {
  const s = await start();
  const m = uniq('batch');
  const r = await post(s.url, [callMsg(1, napArgs(1, m)), { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }]);
  assert.ok(r.status >= 200 && r.status < 500, `${r.status} ${r.text}`);
  assert.ok(r.json, `a JSON answer: ${r.text}`);
  await gone(m);
  await alive(s);
});

test('SIGTERM mid-script: the server ends, the script dies, the call is answered or closed', { timeout: 30_000 }, async () => {
  const s = await start(['--shutdown-timeout', '2']);
  const m = uniq('term');
  const p = openPost(s.url, callMsg(1, napArgs(30, m)));
  const q = openPost(s.url, callMsg(2, napArgs(30, m + 'x'), { progressToken: 1 }));
  await started(m);
  await started(m + 'x');
  process.kill(s.proc.pid, 'SIGTERM');
  const [r1, r2] = await Promise.all([p.done, q.done]);
  await poll(() => s.exited, 8000, 50);
  assert.ok(s.exited, 'the server exited');
  assert.equal(s.exited.code, 0, s.log.slice(-1500));
  await gone(m);
  await gone(m + 'x');
  for (const r of [r1, r2]) if (!r.aborted) assert.ok(r.status === 200 || r.status === 503, r.text);
});

// ---- tasks ------------------------------------------------------------------

async function createTask(s, args) {
  const r = await post(s.url, { jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'run_skill_script', arguments: args, task: { ttl: 60000 } } });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.json.result?.task?.taskId, r.text);
  return r.json.result.task.taskId;
}

const taskReq = (method, taskId, id = 1) => ({ jsonrpc: '2.0', id, method, params: { taskId } });

async function cancelQueuedThenResult(s) {
  const mA = uniq('taskA');
  const mB = uniq('taskB');
  const a = await createTask(s, napArgs(30, mA));
  await started(mA);
  const b = await createTask(s, napArgs(30, mB));     // queued behind a: its run never starts
  const c = await post(s.url, taskReq('tasks/cancel', b));
  assert.equal(c.json.result?.status, 'cancelled', c.text);
  const t0 = Date.now();
  const r = await post(s.url, taskReq('tasks/result', b, 2));
  assert.ok(Date.now() - t0 < 8000, 'tasks/result of a cancelled queued task answers without waiting for the queue');
  assert.ok(r.json.result || r.json.error, r.text);
  if (r.json.result) assert.match(JSON.stringify(r.json.result), /cancel/, r.text);
  assert.deepEqual(markedPids(mB), [], 'the cancelled task never ran');
  const g = await post(s.url, taskReq('tasks/get', b, 3));
  assert.equal(g.json.result?.status, 'cancelled', g.text);
  await post(s.url, taskReq('tasks/cancel', a, 4));
  await gone(mA);
}

test('tasks/result right after tasks/cancel of a task whose run never started (memory store)', { timeout: 40_000 }, async () => {
  const s = await start(['--enable-tasks', '--max-script-concurrency', '1']);
  await cancelQueuedThenResult(s);
  await alive(s);
});

test('a tasks/result wait whose client hangs up, then the task ends: nothing leaks, the server keeps serving', { timeout: 40_000 }, async () => {
  const s = await start(['--enable-tasks']);
  const m = uniq('wait');
  const id = await createTask(s, napArgs(2, m));
  await started(m);
  const w = openPost(s.url, taskReq('tasks/result', id, 7));
  await new Promise((r) => setTimeout(r, 300));
  w.abort();
  // a second client asks for the same result and gets it
  const r = await post(s.url, taskReq('tasks/result', id, 8));
  assert.equal(r.json.result?.structuredContent?.status, 'ok', r.text);
  await gone(m);
  await alive(s);
});

/** A redis-server for one test (stopped after the file); its URL. */
async function redisUrl() {
  const r = await startRedis();
  redises.push(r);
  return r.url;
}

test('tasks/result right after tasks/cancel of a task whose run never started (Redis store)', { timeout: 40_000 }, async () => {
  const url = await redisUrl();
  const s = await start(['--enable-tasks', '--tasks-redis', url, '--max-script-concurrency', '1']);
  await cancelQueuedThenResult(s);
  await alive(s);
});

test('tasks/result right after tasks/cancel of a running task (Redis store) waits for the killed run\'s result', { timeout: 40_000 }, async () => {
  const url = await redisUrl();
  const s = await start(['--enable-tasks', '--tasks-redis', url]);
  const m = uniq('rcancel');
  const id = await createTask(s, napArgs(30, m));
  await started(m);
  const c = await post(s.url, taskReq('tasks/cancel', id));
  assert.equal(c.json.result?.status, 'cancelled', c.text);
  const r = await post(s.url, taskReq('tasks/result', id, 2));
  assert.equal(r.json.result?.isError, true, r.text);
  assert.match(r.json.result.structuredContent.hint, /cancelled/, r.text);
  const again = await post(s.url, taskReq('tasks/result', id, 3));
  assert.equal(again.text.replace(/"id":3/, '"id":2'), r.text, 'the same result for every caller');
  await gone(m);
});

// ---- --stateful --------------------------------------------------------------

test('--stateful: a session ended (DELETE) or evicted while its script streams: the call still ends, the script too', { timeout: 40_000 }, async () => {
  const s = await start(['--stateful', '--max-sessions', '2']);
  const V = { 'mcp-protocol-version': '2025-11-25' };
  const init = async () => {
    const r = await post(s.url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: {
      protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    assert.equal(r.status, 200, r.text);
    const sid = r.headers['mcp-session-id'];
    assert.ok(sid);
    await post(s.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { ...V, 'mcp-session-id': sid });
    const l = await post(s.url, { jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'debug' } },
      { ...V, 'mcp-session-id': sid });
    assert.ok(l.json.result, l.text);
    return sid;
  };
  const sid = await init();
  const m = uniq('state');
  const p = openPost(s.url, callMsg(2, napArgs(2, m)), { ...V, 'mcp-session-id': sid });
  await started(m);
  const d = await raw(s.url, { method: 'DELETE', headers: { ...V, 'mcp-session-id': sid } });
  assert.ok(d.status === 200 || d.status === 204, `${d.status} ${d.text}`);
  // and a full table evicts whatever is left
  await init();
  await init();
  const r = await p.done;
  assert.ok(!r.aborted, 'the stream ended with its answer');
  assert.match(r.text, /"status":"ok"/, r.text.slice(-400));
  await gone(m);
  await alive2(s, V, await init());
});

async function alive2(s, V, sid) {
  const r = await post(s.url, { jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} }, { ...V, 'mcp-session-id': sid });
  assert.equal(r.status, 200, r.text);
}

test('40 parked script calls whose client dies at once: every script ends', { timeout: 40_000 }, async () => {
  const s = await start(['--max-script-concurrency', '48', '--max-connections-per-ip', '100']);
  const m = uniq('herd');
  const calls = [];
  for (let i = 0; i < 40; i++) calls.push(openPost(s.url, callMsg(i, napArgs(30, `${m}-${i}-`))));
  assert.ok(await poll(() => markedPids(m).length >= 40, 15000, 100), `started: ${markedPids(m).length}`);
  for (const c of calls) c.abort();
  await gone(m, 10000);
  await alive(s);
});

test('24 notifications/cancelled sent at once stop all 24 scripts', { timeout: 40_000 }, async () => {
  const s = await start(['--max-script-concurrency', '32', '--max-connections-per-ip', '100']);
  const m = uniq('burst');
  const calls = [];
  for (let i = 0; i < 24; i++) calls.push(openPost(s.url, callMsg(`b-${i}`, napArgs(30, `${m}-${i}-`))));
  assert.ok(await poll(() => markedPids(m).length >= 24, 15000, 100), `started: ${markedPids(m).length}`);
  await Promise.all(calls.map((_, i) => post(s.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: `b-${i}` } })));
  const answers = await Promise.all(calls.map((c) => c.done));
  for (const a of answers) assert.ok(!a.aborted && a.status === 200, JSON.stringify(a).slice(0, 300));
  await gone(m, 8000);
});
