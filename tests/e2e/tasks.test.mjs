// --enable-tasks: run_skill_script as an MCP task (docs/scripts.md "Tasks").
//
// The 2025-11-25 `tasks` capability is driven with the official SDK client
// (client.experimental.tasks); the 2026-07-28 io.modelcontextprotocol/tasks
// extension with raw requests (SDK 1.32.2 speaks only the legacy era).
// Fixture: fixtures/task-skills (task-long/scripts/long.py SECONDS MARKER
// ticks every second with a child process that carries MARKER; fail.py
// exits 3; task-hooked has a pre hook that copies its input to
// $HOOK_TRACE_DIR). The Redis tests start their own redis-server on a free
// loopback port and stop it by PID.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  E2E_DIR, MODERN, addToken, connect, modernMeta, poll, post, postModern, runCli, startServer,
} from './lib/harness.mjs';
import { alive, markedPids, sleep, waitGone } from './lib/procs.mjs';
import { startRedis } from './lib/redis.mjs';

const SKILLS = path.join(E2E_DIR, 'fixtures', 'task-skills');
const TRACE = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-tasks-'));
fs.chmodSync(TRACE, 0o777);  // a root server's hooks run as nobody and write their trace here
process.env.HOOK_TRACE_DIR = TRACE;
const servers = [];
after(async () => {
  for (const s of servers) await s.stop().catch(() => {});
  fs.rmSync(TRACE, { recursive: true, force: true });
});

async function start(args = [], more = {}) {
  const s = await startServer({ skillsDirs: [SKILLS], args: ['--enable-tasks', ...args], ...more });
  servers.push(s);
  return s;
}

async function stop(s) {
  servers.splice(servers.indexOf(s), 1);
  await s.stop();
}

const RUN = 'run_skill_script';
const long = (secs, marker) => ({ name: RUN, arguments: { name: 'task-long', script: 'scripts/long.py', args: [String(secs), marker] } });
const uniq = (tag) => `${tag}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

/** A legacy JSON-RPC request on a fresh connection (so any worker may answer). */
let nextId = 1000;
async function rpc(url, method, params = {}, headers = {}) {
  const r = await post(url, { jsonrpc: '2.0', id: nextId++, method, params }, { connection: 'close', ...headers });
  assert.ok(r.json, `${method}: no JSON body (HTTP ${r.status}): ${r.text.slice(0, 300)}`);
  return r;
}

async function createTask(url, params, headers = {}) {
  const r = await rpc(url, 'tools/call', { ...params, task: params.task ?? {} }, headers);
  assert.ok(r.json.result?.task, `tools/call as a task: ${r.text.slice(0, 400)}`);
  return r.json.result.task;
}

const TASKS_EXT = { 'io.modelcontextprotocol/tasks': {} };
const extMeta = () => modernMeta({ 'io.modelcontextprotocol/clientCapabilities': { extensions: TASKS_EXT } });
const modernTask = (url, method, taskId, meta = extMeta()) =>
  postModern(url, method, { taskId }, { headers: { 'mcp-name': taskId }, meta });

// ---- the 2025-11-25 capability, with the SDK client -------------------------------------

test('a 20 s script runs as a task: created at once, polled to completion, result through tasks/result', { timeout: 90_000 }, async () => {
  const s = await start();
  const client = await connect(s.url);
  try {
    const caps = client.getServerCapabilities();
    assert.deepEqual(caps.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await client.listTools();
    const run = tools.find((t) => t.name === RUN);
    assert.deepEqual(run.execution, { taskSupport: 'optional' }, 'run_skill_script may run as a task');
    assert.equal(tools.find((t) => t.name === 'list_skills').execution, undefined, 'other tools may not');

    const marker = uniq('t20');
    const t0 = Date.now();
    const seen = [];
    let created;
    let result;
    for await (const m of client.experimental.tasks.callToolStream(long(20, marker), CallToolResultSchema, { task: { ttl: 600000 } })) {
      seen.push(m.type);
      if (m.type === 'taskCreated') {
        created = m.task;
        assert.ok(Date.now() - t0 < 5000, 'the task is created at once, not after the script');
        assert.equal(m.task.status, 'working');
        assert.match(m.task.taskId, /^[0-9a-f]{32}$/, 'a 128-bit hex id');
        assert.equal(m.task.ttl, 600000, 'the requested ttl (under --task-ttl) is kept');
        assert.ok(m.task.pollInterval > 0);
        assert.ok(!Number.isNaN(Date.parse(m.task.createdAt)));
      }
      if (m.type === 'taskStatus' && m.task.status === 'working' && seen.filter((x) => x === 'taskStatus').length === 3) {
        // while it runs, the script and its child are alive
        assert.equal(markedPids(marker).length, 2, 'the script and its child run while the task is working');
      }
      if (m.type === 'error') assert.fail(`the stream ended in an error: ${m.error.message}`);
      if (m.type === 'result') result = m.result;
    }
    assert.ok(Date.now() - t0 >= 19_000, 'the result came after the script ran its 20 s');
    assert.ok(seen.filter((x) => x === 'taskStatus').length >= 5, `polled while working: ${seen.join(',')}`);
    assert.ok(result, 'a result');
    assert.equal(result.structuredContent.status, 'ok');
    assert.match(result.structuredContent.stdout, /tick 1\n[^]*tick 19\n[^]*done 20/);
    assert.equal(result._meta['io.modelcontextprotocol/related-task'].taskId, created.taskId);
    assert.deepEqual(markedPids(marker), [], 'nothing of the script is left');

    const got = await client.experimental.tasks.getTask(created.taskId);
    assert.equal(got.status, 'completed');
    assert.equal(got.pollInterval, undefined, 'a finished task suggests no more polling');
    const list = await client.experimental.tasks.listTasks();
    assert.ok(list.tasks.some((t) => t.taskId === created.taskId && t.status === 'completed'));
  } finally {
    await client.close();
    await stop(s);
  }
});

test('tasks/cancel mid-run: the task is cancelled at once and the script\'s process group dies', { timeout: 30_000 }, async () => {
  const s = await start();
  const client = await connect(s.url);
  try {
    const marker = uniq('cancel');
    const { task } = await client.request({ method: 'tools/call', params: { ...long(30, marker), task: {} } }, CreateTaskResultSchema);
    const pids = await poll(() => { const p = markedPids(marker); return p.length === 2 ? p : null; }, 8000, 50);
    assert.ok(pids, 'the script and its child started');
    const c = await client.experimental.tasks.cancelTask(task.taskId);
    assert.equal(c.status, 'cancelled', 'the answer already says cancelled');
    // asked at once, before the killed run has handed in its result: the
    // answer waits for that result instead of an error
    const early = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(early.isError, true);
    assert.match(early.structuredContent.hint, /cancelled/);
    assert.equal(c.statusMessage, 'The task was cancelled by request.');
    for (const p of pids) assert.ok(await waitGone(p, 5000), `pid ${p} of the cancelled task is still alive`);
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
    // the killed run's result is kept for tasks/result
    const r = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(r.isError, true);
    assert.match(r.structuredContent.hint, /cancelled/);
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'cancelled', 'a cancelled task stays cancelled');
    await assert.rejects(client.experimental.tasks.cancelTask(task.taskId),
      (e) => e.code === -32602 && /terminal status 'cancelled'/.test(e.message));
    assert.match(s.log, new RegExp(`task ${task.taskId}: cancel requested`));
  } finally {
    await client.close();
    await stop(s);
  }
});

test('a failing script ends its task as failed; tasks/result returns its isError result; hooks see mode "task"', { timeout: 30_000 }, async () => {
  const s = await start();
  const client = await connect(s.url);
  try {
    const { task } = await client.request({ method: 'tools/call', params: { name: RUN, arguments: { name: 'task-long', script: 'scripts/fail.py' }, task: {} } }, CreateTaskResultSchema);
    const end = await poll(async () => {
      const t = await client.experimental.tasks.getTask(task.taskId);
      return t.status !== 'working' ? t : null;
    }, 10_000, 100);
    assert.equal(end.status, 'failed', '2025-11-25: a tool result with isError fails the task');
    assert.match(end.statusMessage, /status failed/);
    const r = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.exit_code, 3);
    assert.match(r.structuredContent.stderr, /broken/);

    // an argument error: the task exists and is over at once
    const bad = await client.request({ method: 'tools/call', params: { name: RUN, arguments: { name: 'no-such-skill', script: 'x.py' }, task: {} } }, CreateTaskResultSchema);
    assert.equal(bad.task.status, 'failed');
    const br = await client.experimental.tasks.getTaskResult(bad.task.taskId, CallToolResultSchema);
    assert.equal(br.isError, true);
    assert.match(br.content[0].text, /Unknown skill 'no-such-skill'/);

    // the hooks' input says how the script runs
    const trace = path.join(TRACE, 'task-hooked-pre.json');
    fs.rmSync(trace, { force: true });
    const h = await client.request({ method: 'tools/call', params: { name: RUN, arguments: { name: 'task-hooked', script: 'scripts/echo.sh', args: ['a'] }, task: {} } }, CreateTaskResultSchema);
    const hr = await client.experimental.tasks.getTaskResult(h.task.taskId, CallToolResultSchema);
    assert.equal(hr.structuredContent.stdout, 'hooked a\n');
    assert.equal(JSON.parse(fs.readFileSync(trace, 'utf8')).mode, 'task');
    const sync = await client.callTool({ name: RUN, arguments: { name: 'task-hooked', script: 'scripts/echo.sh', args: ['b'] } });
    assert.equal(sync.structuredContent.stdout, 'hooked b\n', 'without task metadata the call is answered as before');
    assert.equal(JSON.parse(fs.readFileSync(trace, 'utf8')).mode, 'sync');
  } finally {
    await client.close();
    await stop(s);
  }
});

test('bad task requests: unknown or malformed ids, tools that cannot run as tasks, bad params', { timeout: 20_000 }, async () => {
  const s = await start();
  try {
    for (const m of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const r = await rpc(s.url, m, { taskId: '0123456789abcdef0123456789abcdef' });
      assert.equal(r.json.error?.code, -32602, `${m}: ${r.text}`);
      assert.match(r.json.error.message, /Task not found or expired/);
      const odd = await rpc(s.url, m, { taskId: '../../etc/passwd' });
      assert.equal(odd.json.error?.code, -32602, `${m} with a malformed id: ${odd.text}`);
      const none = await rpc(s.url, m, {});
      assert.equal(none.json.error?.code, -32602);
      assert.match(none.json.error.message, /taskId/);
    }
    const ls = await rpc(s.url, 'tools/call', { name: 'list_skills', arguments: {}, task: {} });
    assert.equal(ls.json.error?.code, -32601, `a tool without taskSupport: ${ls.text}`);
    assert.match(ls.json.error.message, /cannot run as a task/);
    const bt = await rpc(s.url, 'tools/call', { ...long(1, 'x'), task: 'yes' });
    assert.equal(bt.json.error?.code, -32602);
    const bttl = await rpc(s.url, 'tools/call', { ...long(1, 'x'), task: { ttl: 'soon' } });
    assert.equal(bttl.json.error?.code, -32602);
    assert.equal((await rpc(s.url, 'tasks/list', { cursor: 'abc' })).json.error?.code, -32602);
    assert.equal((await rpc(s.url, 'tasks/update', { taskId: 'x' })).json.error?.code, -32601, 'tasks/update is 2026-07-28 only');
    // nothing was created by the refused calls
    assert.deepEqual((await rpc(s.url, 'tasks/list')).json.result.tasks, []);
    // a requested ttl above --task-ttl is lowered to it
    const t = await createTask(s.url, { name: RUN, arguments: { name: 'task-long', script: 'scripts/fail.py' }, task: { ttl: 1e12 } });
    assert.equal(t.ttl, 3600 * 1000);
  } finally {
    await stop(s);
  }
  // without --enable-tasks the methods do not exist and task metadata is ignored
  const plain = await startServer({ skillsDirs: [SKILLS] });
  servers.push(plain);
  try {
    const r = await rpc(plain.url, 'tasks/get', { taskId: '0123456789abcdef0123456789abcdef' });
    assert.equal(r.json.error?.code, -32601);
    const call = await rpc(plain.url, 'tools/call', { ...long(0.2, 'plain'), task: {} });
    assert.equal(call.json.result?.structuredContent?.status, 'ok', 'answered as an ordinary call');
    const init = await rpc(plain.url, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } });
    assert.equal(init.json.result.capabilities.tasks, undefined);
  } finally {
    await stop(plain);
  }
});

test('finished tasks expire after --task-ttl; live tasks per client are bounded', { timeout: 30_000 }, async () => {
  const s = await start(['--task-ttl', '1', '--max-tasks-per-client', '2']);
  try {
    const quick = await createTask(s.url, { name: RUN, arguments: { name: 'task-long', script: 'scripts/fail.py' } });
    assert.equal(quick.ttl, 1000);
    const done = await poll(async () => (await rpc(s.url, 'tasks/get', { taskId: quick.taskId })).json.result?.status === 'failed', 5000, 100);
    assert.ok(done, 'the quick task finished');
    const gone = await poll(async () => (await rpc(s.url, 'tasks/get', { taskId: quick.taskId })).json.error?.code === -32602, 10_000, 200);
    assert.ok(gone, 'a finished task is gone after its ttl');

    const m1 = uniq('bound');
    const a = await createTask(s.url, long(20, m1));
    const b = await createTask(s.url, long(20, m1));
    const third = await rpc(s.url, 'tools/call', { ...long(20, m1), task: {} });
    assert.equal(third.json.error?.code, -32602, `a third live task: ${third.text}`);
    assert.match(third.json.error.message, /Too many live tasks: .*2 tasks working/);
    // a live task never expires under its ttl
    await sleep(1500);
    assert.equal((await rpc(s.url, 'tasks/get', { taskId: a.taskId })).json.result?.status, 'working');
    assert.equal((await rpc(s.url, 'tasks/cancel', { taskId: a.taskId })).json.result?.status, 'cancelled');
    const c = await createTask(s.url, long(20, m1));
    assert.equal(c.status, 'working', 'a cancelled task frees its place');
    for (const t of [b, c]) await rpc(s.url, 'tasks/cancel', { taskId: t.taskId });
    const left = await poll(() => markedPids(m1).length === 0, 8000, 100);
    assert.ok(left, `every cancelled script is gone: ${markedPids(m1)}`);
  } finally {
    await stop(s);
  }
});

test('tasks/list pages through a client\'s tasks with nextCursor', { timeout: 60_000 }, async () => {
  const s = await start(['--max-tasks-per-client', '100']);
  try {
    const ids = [];
    for (let i = 0; i < 25; i++) {
      const t = await createTask(s.url, { name: RUN, arguments: { name: 'task-long', script: 'scripts/fail.py' } });
      ids.push(t.taskId);
    }
    const p1 = (await rpc(s.url, 'tasks/list')).json.result;
    assert.equal(p1.tasks.length, 20);
    assert.ok(p1.nextCursor, 'a second page');
    const p2 = (await rpc(s.url, 'tasks/list', { cursor: p1.nextCursor })).json.result;
    assert.equal(p2.tasks.length, 5);
    assert.equal(p2.nextCursor, undefined);
    assert.deepEqual([...p1.tasks, ...p2.tasks].map((t) => t.taskId), ids, 'every task once, oldest first');
  } finally {
    await stop(s);
  }
});

test('--auth-tokens: a task is visible only to the client that created it', { timeout: 30_000 }, async () => {
  const file = path.join(TRACE, 'tokens');
  const alice = { authorization: `Bearer ${addToken(file, 'alice')}` };
  const bob = { authorization: `Bearer ${addToken(file, 'bob')}` };
  const s = await start(['--auth-tokens', file]);
  try {
    const m = uniq('auth');
    const t = await createTask(s.url, long(20, m), alice);
    assert.equal((await rpc(s.url, 'tasks/get', { taskId: t.taskId }, alice)).json.result?.status, 'working');
    for (const meth of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const r = await rpc(s.url, meth, { taskId: t.taskId }, bob);
      assert.equal(r.json.error?.code, -32602, `${meth} by another client: ${r.text}`);
      assert.match(r.json.error.message, /not found/);
    }
    assert.deepEqual((await rpc(s.url, 'tasks/list', {}, bob)).json.result.tasks, []);
    assert.equal((await rpc(s.url, 'tasks/list', {}, alice)).json.result.tasks.length, 1);
    assert.equal((await rpc(s.url, 'tasks/get', { taskId: t.taskId }, alice)).json.result?.status, 'working', 'bob\'s cancel did nothing');
    assert.equal((await rpc(s.url, 'tasks/cancel', { taskId: t.taskId }, alice)).json.result?.status, 'cancelled');
    assert.ok(await poll(() => markedPids(m).length === 0, 8000, 100));
  } finally {
    await stop(s);
  }
});

// ---- the 2026-07-28 extension, raw -----------------------------------------------------

test('2026-07-28: the io.modelcontextprotocol/tasks extension (resultType task, tasks/get inlines the result)', { timeout: 30_000 }, async () => {
  const s = await start();
  try {
    const d = await postModern(s.url, 'server/discover', {}, { meta: extMeta() });
    assert.deepEqual(d.json.result.capabilities.extensions['io.modelcontextprotocol/tasks'], {});
    assert.equal(d.json.result.capabilities.tasks, undefined, 'the 2025-11-25 field is not a 2026-07-28 capability');

    // without the extension declared, the call is answered as before
    const sync = await postModern(s.url, 'tools/call', long(0.2, 'sync'));
    assert.equal(sync.json.result.resultType, 'complete');
    assert.equal(sync.json.result.structuredContent.status, 'ok');

    const marker = uniq('modern');
    const c = await postModern(s.url, 'tools/call', long(2, marker), { meta: extMeta() });
    assert.equal(c.status, 200);
    const t = c.json.result;
    assert.equal(t.resultType, 'task');
    assert.match(t.taskId, /^[0-9a-f]{32}$/);
    assert.equal(t.status, 'working');
    assert.equal(t.ttlMs, 3600 * 1000);
    assert.ok(t.pollIntervalMs > 0);
    assert.equal(t.task, undefined, 'flat, not wrapped in "task"');
    assert.equal(t.result, undefined);
    const end = await poll(async () => {
      const g = await modernTask(s.url, 'tasks/get', t.taskId);
      assert.equal(g.status, 200, g.text);
      assert.equal(g.json.result.resultType, 'complete');
      return g.json.result.status === 'working' ? null : g.json.result;
    }, 10_000, 200);
    assert.equal(end.status, 'completed');
    assert.equal(end.result.structuredContent.status, 'ok');
    assert.match(end.result.structuredContent.stdout, /done 2/);

    // a tool error is a completed task whose result says isError
    const f = (await postModern(s.url, 'tools/call', { name: RUN, arguments: { name: 'task-long', script: 'scripts/fail.py' } }, { meta: extMeta() })).json.result;
    const fe = await poll(async () => {
      const g = (await modernTask(s.url, 'tasks/get', f.taskId)).json.result;
      return g.status === 'working' ? null : g;
    }, 10_000, 100);
    assert.equal(fe.status, 'completed');
    assert.equal(fe.result.isError, true);

    // cancel: an empty acknowledgement, then the process group dies
    const m2 = uniq('modern-cancel');
    const k = (await postModern(s.url, 'tools/call', long(30, m2), { meta: extMeta() })).json.result;
    const pids = await poll(() => { const p = markedPids(m2); return p.length === 2 ? p : null; }, 8000, 50);
    assert.ok(pids);
    const ack = await modernTask(s.url, 'tasks/cancel', k.taskId);
    assert.equal(ack.status, 200, ack.text);
    assert.equal(ack.json.result.resultType, 'complete');
    assert.equal(ack.json.result.status, undefined, 'an empty acknowledgement');
    for (const p of pids) assert.ok(await waitGone(p, 5000), `pid ${p} survived tasks/cancel`);
    assert.equal((await modernTask(s.url, 'tasks/get', k.taskId)).json.result.status, 'cancelled');

    // scripts never ask for input
    const u = await postModern(s.url, 'tasks/update', { taskId: k.taskId, inputResponses: {} }, { headers: { 'mcp-name': k.taskId }, meta: extMeta() });
    assert.equal(u.json.error?.code, -32602);
    assert.match(u.json.error.message, /never asks for input/);
    // the extension must be declared on every tasks request
    const nodecl = await modernTask(s.url, 'tasks/get', k.taskId, modernMeta());
    assert.equal(nodecl.status, 400);
    assert.equal(nodecl.json.error.code, -32021);
    assert.deepEqual(nodecl.json.error.data, { requiredCapabilities: { extensions: TASKS_EXT } });
    // Mcp-Name must repeat the task id
    const wrong = await postModern(s.url, 'tasks/get', { taskId: k.taskId }, { headers: { 'mcp-name': 'other' }, meta: extMeta() });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.json.error.code, -32020);
    // tasks/list and tasks/result are not in this era
    for (const m of ['tasks/list', 'tasks/result']) {
      const r = await postModern(s.url, m, { taskId: k.taskId }, { headers: { 'mcp-name': k.taskId }, meta: extMeta() });
      assert.equal(r.status, 404, `${m}: ${r.text}`);
      assert.equal(r.json.error.code, -32601);
    }
    const unknown = await modernTask(s.url, 'tasks/get', '0123456789abcdef0123456789abcdef');
    assert.equal(unknown.json.error?.code, -32602);
  } finally {
    await stop(s);
  }
});

// ---- start-up checks ----------------------------------------------------------------------

test('start-up refuses task settings that cannot work', { timeout: 20_000 }, () => {
  const w = runCli(['--enable-tasks', '--workers', '2', '--port', '0', '--skills', SKILLS]);
  assert.equal(w.code, 2);
  assert.match(w.stderr, /--enable-tasks with --workers 2 needs --tasks-redis/);
  const u = runCli(['--enable-tasks', '--tasks-redis', 'http://x', '--port', '0', '--skills', SKILLS]);
  assert.equal(u.code, 2);
  assert.match(u.stderr, /invalid value 'http:\/\/x' for --tasks-redis/);
  // without an '@' nothing marks where a password ends: the message hides all after the ':'
  const pw = runCli(['--enable-tasks', '--tasks-redis', 'redis://:s3cr3t-no-at', '--port', '0', '--skills', SKILLS]);
  assert.equal(pw.code, 2);
  assert.match(pw.stderr, /invalid value 'redis:\/\/:\*\*\*' for --tasks-redis/);
  assert.equal(pw.stderr.includes('s3cr3t'), false, pw.stderr);
  const n = runCli(['--tasks-redis', 'redis://127.0.0.1:1', '--port', '0', '--skills', SKILLS]);
  assert.equal(n.code, 2);
  assert.match(n.stderr, /--tasks-redis needs --enable-tasks/);
  const ns = runCli(['--enable-tasks', '--no-scripts', '--port', '0', '--skills', SKILLS]);
  assert.equal(ns.code, 2);
});

// ---- Redis: several workers ----------------------------------------------------------------

/** The worker tag ("w0", "w1") that logged "task ID: created". */
const creator = (s, id) => new RegExp(` (w\\d) task ${id}: created`).exec(s.log)?.[1];

test('--workers 2 with Redis: created through one worker, polled, cancelled and fetched through the other', { timeout: 60_000 }, async () => {
  const r = await startRedis();
  const s = await start(['--workers', '2', '--tasks-redis', r.url]);
  try {
    const t = await createTask(s.url, long(4, uniq('w2')));
    const w = await poll(() => creator(s, t.taskId), 10_000, 50);
    assert.ok(w, 'the creating worker logged the task');
    // fresh connections until the other worker has answered a tasks/get
    const other = w === 'w0' ? 'w1' : 'w0';
    const re = new RegExp(` ${other} tasks/get  200`);
    let n = 0;
    while (!re.test(s.log) && n < 60) {
      const g = await rpc(s.url, 'tasks/get', { taskId: t.taskId });
      assert.equal(g.json.result?.taskId, t.taskId, g.text);
      n++;
      await sleep(20);
    }
    assert.match(s.log, re, `${other} never answered tasks/get in ${n} tries`);
    // the result, from whichever worker
    const res = await rpc(s.url, 'tasks/result', { taskId: t.taskId });
    assert.equal(res.json.result?.structuredContent?.status, 'ok', res.text);
    assert.equal(res.json.result._meta['io.modelcontextprotocol/related-task'].taskId, t.taskId);

    // a cancel through the worker that does not run the script still kills
    // it: the owner sees the record change. Which worker takes a connection
    // is the kernel's choice, so try until one cancel crossed over.
    let crossed = 0;
    for (let i = 0; i < 25 && !crossed; i++) {
      const m = uniq('w2-cancel');
      const k = await createTask(s.url, long(30, m));
      const kw = await poll(() => creator(s, k.taskId), 3000, 50);
      const pids = await poll(() => { const p = markedPids(m); return p.length === 2 ? p : null; }, 8000, 50);
      assert.ok(pids, 'the script and its child started');
      const c = await rpc(s.url, 'tasks/cancel', { taskId: k.taskId });
      assert.equal(c.json.result?.status, 'cancelled', c.text);
      for (const p of pids) assert.ok(await waitGone(p, 5000), `pid ${p} survived a cancel`);
      const who = await poll(() => new RegExp(` (w\\d) task ${k.taskId}: cancel requested`).exec(s.log)?.[1], 2000, 50);
      if (who && who !== kw) crossed++;
      assert.equal((await rpc(s.url, 'tasks/get', { taskId: k.taskId })).json.result.status, 'cancelled');
    }
    assert.ok(crossed, 'no cancel landed on the other worker in 25 tries');
    assert.ok((await rpc(s.url, 'tasks/list')).json.result.tasks.length >= 2, 'tasks/list reads Redis');
  } finally {
    await stop(s);
    await r.stop();
  }
});

test('--tasks-redis with a password and a database number; a wrong password is a clear error', { timeout: 30_000 }, async () => {
  const r = await startRedis({ password: 'pw-secret' });
  try {
    const ok = await start(['--tasks-redis', `redis://:pw-secret@127.0.0.1:${r.port}/5`]);
    try {
      const t = await createTask(ok.url, long(0.2, uniq('pw')));
      const done = await poll(async () => (await rpc(ok.url, 'tasks/get', { taskId: t.taskId })).json.result?.status === 'completed', 5000, 100);
      assert.ok(done, 'a task through an authenticated connection');
      assert.match(ok.log, new RegExp(`tasks: records in redis at 127\\.0\\.0\\.1:${r.port}`));
    } finally {
      await stop(ok);
    }
    const bad = await start(['--tasks-redis', `redis://:wrong@127.0.0.1:${r.port}/5`]);
    try {
      assert.match(bad.log, /tasks: redis at .*AUTH failed: .*; tasks are unavailable until it answers/);
      const g = await rpc(bad.url, 'tasks/get', { taskId: '0123456789abcdef0123456789abcdef' });
      assert.equal(g.json.error?.code, -32603);
      assert.match(g.json.error.message, new RegExp(`^tasks unavailable: redis at 127\\.0\\.0\\.1:${r.port}: AUTH failed: `));
      assert.ok(!g.json.error.message.includes('wrong'), 'the password is never echoed');
      const ls = await rpc(bad.url, 'tools/call', { name: 'list_skills', arguments: {} });
      assert.ok(ls.json.result?.structuredContent?.skills?.length >= 2);
    } finally {
      await stop(bad);
    }
  } finally {
    await r.stop();
  }
});

test('Redis stopped mid-run: tasks calls fail with a clear error, everything else keeps working', { timeout: 60_000 }, async () => {
  const r = await startRedis();
  const s = await start(['--workers', '2', '--tasks-redis', r.url]);
  try {
    const m = uniq('redis-down');
    const t = await createTask(s.url, long(3, m));
    assert.ok(await poll(() => markedPids(m).length === 2, 8000, 50));
    await r.stop();
    const want = new RegExp(`^tasks unavailable: redis at 127\\.0\\.0\\.1:${r.port}: `);
    for (let i = 0; i < 4; i++) {
      const g = await rpc(s.url, 'tasks/get', { taskId: t.taskId });
      assert.equal(g.json.error?.code, -32603, g.text);
      assert.match(g.json.error.message, want);
    }
    const c = await rpc(s.url, 'tools/call', { ...long(1, uniq('x')), task: {} });
    assert.match(c.json.error?.message ?? '', want, 'no task is created without its store');
    const l = await rpc(s.url, 'tasks/list');
    assert.match(l.json.error?.message ?? '', want);
    for (let i = 0; i < 4; i++) {
      const ls = await rpc(s.url, 'tools/call', { name: 'list_skills', arguments: {} });
      assert.ok(ls.json.result?.structuredContent?.skills?.length >= 2, ls.text);
    }
    const sync = await rpc(s.url, 'tools/call', long(0.3, uniq('sync')));
    assert.equal(sync.json.result?.structuredContent?.status, 'ok', 'a plain run_skill_script still runs');
    // the running task's script ends normally: the loss is the record, not the process
    assert.ok(await poll(() => markedPids(m).length === 0, 10_000, 100));
    const kept = await poll(() => /cannot store its result yet: redis at/.test(s.log), 5000, 100);
    assert.ok(kept, 'the finished task\'s result waits for Redis (logged)');
  } finally {
    await stop(s);
  }
});

test('a worker that stops with live tasks marks them failed; a task whose owner died reads as failed', { timeout: 60_000 }, async () => {
  const r = await startRedis();
  try {
    const s1 = await start(['--tasks-redis', r.url]);
    const t = await createTask(s1.url, long(30, uniq('shutdown')));
    await sleep(500);
    await stop(s1);
    const s2 = await start(['--tasks-redis', r.url]);
    try {
      const g = await rpc(s2.url, 'tasks/get', { taskId: t.taskId });
      assert.equal(g.json.result?.status, 'failed', g.text);
      assert.match(g.json.result.statusMessage, /server shut down before the task finished/);
      const res = await rpc(s2.url, 'tasks/result', { taskId: t.taskId });
      assert.equal(res.json.error?.code, -32603);
      assert.match(res.json.error.message, /shut down/);

      // a worker killed outright leaves its task working in Redis; once its
      // heartbeat lapses, any worker reports the task failed
      const s3 = await start(['--workers', '2', '--tasks-redis', r.url]);
      try {
        const m = uniq('crash');
        const k = await createTask(s3.url, long(30, m));
        const w = await poll(() => creator(s3, k.taskId), 3000, 50);
        assert.ok(w);
        // the worker's pid: the parent of the script
        const sp = await poll(() => { const p = markedPids(m); return p.length === 2 ? p : null; }, 8000, 50);
        assert.ok(sp);
        const parents = sp.map((p) => {
          const st = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
          return Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
        });
        const ppid = parents.find((p) => !sp.includes(p));
        assert.ok(ppid > 1, `the worker running the script: ${parents}`);
        process.kill(ppid, 'SIGKILL');
        const failed = await poll(async () => {
          const g2 = await rpc(s3.url, 'tasks/get', { taskId: k.taskId });
          return g2.json.result?.status === 'failed' ? g2.json.result : null;
        }, 15_000, 500);
        assert.ok(failed, 'the dead worker\'s task reads as failed');
        assert.match(failed.statusMessage, /stopped \(a worker restart or crash\)/);
      } finally {
        await stop(s3);
      }
    } finally {
      await stop(s2);
    }
  } finally {
    await r.stop();
  }
});

test('MODERN is the version the extension speaks', () => assert.equal(MODERN, '2026-07-28'));
