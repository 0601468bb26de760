// --stdio: the same server on stdin/stdout, newline-delimited JSON-RPC, as
// Claude Desktop, Cursor and Claude Code start it. First through the
// official SDK's StdioClientTransport (every tool, progress, cancellation,
// resources, prompts, skills/list); then over a raw pipe, byte by byte:
// malformed and over-long lines, EOF while a script runs, signals, and
// stdout carrying nothing but JSON-RPC lines.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  PromptListChangedNotificationSchema, ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import { BIN, E2E_DIR, MODERN, TEST_TIMEOUT, copyFixtures, poll } from './lib/harness.mjs';

const RUNNER_FIXTURES = path.join(E2E_DIR, 'fixtures', 'runner-skills');
const live = new Set();
const tmpDirs = [];
process.on('exit', () => {
  for (const p of live) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }
});

let fx;          // the copied fixture library
let client;      // SDK client over StdioClientTransport
let transport;
let sdkLog = '';

function baseArgs(extra = []) {
  return ['--stdio', '--skills', fx.skills, '--skills', RUNNER_FIXTURES, '--refresh-interval', '0',
    ...extra];
}

before(async () => {
  fx = copyFixtures();
  tmpDirs.push(fx.dir);
  transport = new StdioClientTransport({ command: BIN, args: baseArgs(), stderr: 'pipe' });
  transport.stderr.on('data', (d) => { sdkLog += d.toString(); });
  client = new Client({ name: 'skill-mcp-e2e-stdio', version: '1.0.0' });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
  for (const p of live) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

async function callOk(name, args = {}, opts) {
  const r = await client.callTool({ name, arguments: args }, undefined, opts);
  assert.notEqual(r.isError, true, `${name} failed: ${r.content?.[0]?.text}`);
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
  return r.structuredContent;
}

// ---- the official SDK client ------------------------------------------------

test('SDK: initialize negotiates the legacy era and lists the six tools', { timeout: TEST_TIMEOUT }, async () => {
  assert.equal(client.getServerVersion()?.name, 'skill-mcp');
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(tools, ['list_skills', 'load_skill', 'read_skill_file', 'reload_skills',
    'run_skill_script', 'skill_server_stats']);
  // The server may answer on stdout before this process has read the
  // line it logged on stderr, or before it logs it: wait for the line.
  assert.ok(await poll(() => /serving MCP on stdin\/stdout/.test(sdkLog), 5000, 20), sdkLog);
  assert.doesNotMatch(sdkLog, /listening on http/);
});

test('SDK: every tool answers', { timeout: TEST_TIMEOUT }, async () => {
  const list = await callOk('list_skills');
  const names = list.skills.map((k) => k.qualified_name ?? k.name);
  assert.ok(names.includes('csv-profile') && names.includes('runner-basics'), names.join(','));
  const found = await callOk('list_skills', { query: 'csv profile statistics' });
  assert.equal(found.skills[0].qualified_name ?? found.skills[0].name, 'csv-profile');
  const load = await callOk('load_skill', { name: 'csv-profile' });
  assert.match(JSON.stringify(load), /csv/i);
  const file = await callOk('read_skill_file', { name: 'csv-profile', path: 'references/format.md' });
  assert.ok(JSON.stringify(file).length > 50);
  const stats = await callOk('skill_server_stats');
  assert.ok(stats && typeof stats === 'object');
  const reload = await callOk('reload_skills');
  assert.ok(reload && typeof reload === 'object');
  const run = await callOk('run_skill_script', { name: 'runner-basics', script: 'scripts/hello.sh' });
  assert.equal(run.status, 'ok');
  assert.ok(run.stdout.length > 0);
});

test('SDK: a script with progress streams its stderr before the result', { timeout: TEST_TIMEOUT }, async () => {
  const seen = [];
  const r = await client.callTool({ name: 'run_skill_script',
    arguments: { name: 'runner-timing', script: 'scripts/heartbeat.py' } }, undefined,
  { onprogress: (p) => seen.push(p), timeout: 15_000 });
  assert.ok(seen.length >= 3, `expected several progress notifications, got ${seen.length}`);
  seen.forEach((p, i) => {
    assert.match(p.message, /^heartbeat \d+$/);
    if (i) assert.ok(p.progress > seen[i - 1].progress);
  });
  // its 2 s ceiling ends it: an isError result, after the notifications
  assert.equal(r.isError, true);
  assert.equal(JSON.parse(r.content[0].text).status, 'timeout');
});

test('SDK: cancelling a call stops its script', { timeout: TEST_TIMEOUT }, async () => {
  const ac = new AbortController();
  const t0 = Date.now();
  const p = client.callTool({ name: 'run_skill_script',
    arguments: { name: 'runner-timing', script: 'scripts/slow.py' } }, undefined, { signal: ac.signal });
  // slow.py prints for 30 s under a 16 s ceiling: only a cancel ends it early
  // it runs before the cancel is sent: a cancel for a call the server has
  // not read yet names no call
  assert.ok(await poll(async () => (await callOk('skill_server_stats')).scripts.live === 1, 10_000, 50), 'slow.py runs');
  ac.abort('test');
  await assert.rejects(p);
  const stopped = await poll(() => /slow\.py: failed in \d+ ms/.test(sdkLog), 8000, 50);
  assert.ok(stopped, `the script was not stopped; log:\n${sdkLog.slice(-2000)}`);
  assert.ok(Date.now() - t0 < 10_000);
  // the session goes on
  assert.equal((await callOk('list_skills')).skills.length > 0, true);
});

test('SDK: resources/list and resources/read', { timeout: TEST_TIMEOUT }, async () => {
  const res = await client.listResources();
  assert.ok(res.resources.some((r) => r.uri === 'skill://csv-profile/SKILL.md'));
  const r = await client.readResource({ uri: 'skill://csv-profile/SKILL.md' });
  assert.match(r.contents[0].text, /^---/);
  await assert.rejects(client.readResource({ uri: 'skill://no-such-skill/SKILL.md' }));
});

test('SDK: prompts/list and prompts/get', { timeout: TEST_TIMEOUT }, async () => {
  const pl = await client.listPrompts();
  assert.ok(pl.prompts.some((p) => p.name === 'csv-profile'));
  const g = await client.getPrompt({ name: 'csv-profile' });
  assert.ok(g.messages.length > 0);
  assert.match(JSON.stringify(g.messages), /csv/i);
});

test('SDK: skills/list (the Skills extension)', { timeout: TEST_TIMEOUT }, async () => {
  const r = await client.request({ method: 'skills/list', params: {} },
    z.object({ skills: z.array(z.object({ uri: z.string() }).passthrough()) }).passthrough());
  assert.ok(r.skills.some((k) => k.uri === 'skill://csv-profile/SKILL.md' && k.frontmatter?.name === 'csv-profile'),
    JSON.stringify(r).slice(0, 300));
});

// ---- a raw pipe -------------------------------------------------------------

/**
 * The binary with a pipe on stdin and stdout: every stdout line is parsed
 * (a line that is not one JSON-RPC object fails the test that reads it).
 */
function spawnRaw(args, opts = {}) {
  const proc = spawn(BIN, args, { stdio: ['pipe', 'pipe', 'pipe'], ...opts });
  live.add(proc);
  const s = { proc, msgs: [], bad: [], log: '', exit: null };
  let pending = '';
  proc.stdout.on('data', (d) => {
    pending += d.toString('utf8');
    let i;
    while ((i = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      try {
        const m = JSON.parse(line);
        if (m === null || typeof m !== 'object' || Array.isArray(m) || m.jsonrpc !== '2.0') s.bad.push(line);
        else s.msgs.push(m);
      } catch { s.bad.push(line.slice(0, 300)); }
    }
  });
  proc.stderr.on('data', (d) => { s.log += d.toString(); });
  s.exited = new Promise((resolve) => proc.on('exit', (code, signal) => {
    live.delete(proc);
    if (pending) s.bad.push(`unterminated: ${pending.slice(0, 300)}`);
    s.exit = { code, signal };
    resolve(s.exit);
  }));
  s.send = (x) => proc.stdin.write(typeof x === 'string' || Buffer.isBuffer(x) ? x : `${JSON.stringify(x)}\n`);
  s.reply = async (id, ms = 10_000) => {
    const got = await poll(() => s.msgs.find((m) => m.id === id && !m.method), ms, 20);
    assert.ok(got, `no answer to id ${JSON.stringify(id)}; stdout ${JSON.stringify(s.msgs).slice(0, 500)}; log ${s.log.slice(-1500)}`);
    return got;
  };
  s.ready = () => poll(() => /serving MCP on stdin\/stdout/.test(s.log), 10_000, 20);
  return s;
}

const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });

test('raw: bad lines get errors with id null and the session goes on', { timeout: TEST_TIMEOUT }, async () => {
  const s = spawnRaw(baseArgs());
  s.send('this is not json\n');
  s.send('{"jsonrpc":"2.0","id":1,"method":"ping"\n');   // cut short
  s.send('[{"jsonrpc":"2.0","id":2,"method":"ping"}]\n'); // a batch
  s.send('\n   \r\n');                                     // blank lines: not messages
  s.send('{"jsonrpc":"2.0","id":3,"method":"ping"}\r\n'); // CRLF
  s.send(ping(4));
  const r4 = await s.reply(4);
  assert.deepEqual(r4.result, {});
  assert.deepEqual((await s.reply(3)).result, {});
  const errs = s.msgs.filter((m) => m.error);
  assert.deepEqual(errs.map((m) => [m.id, m.error.code]), [[null, -32700], [null, -32700], [null, -32600]]);
  assert.equal(s.msgs.length, 5, 'one answer per message, none for blank lines');
  s.proc.stdin.end();
  assert.deepEqual(await s.exited, { code: 0, signal: null });
  assert.deepEqual(s.bad, []);
});

test('raw: a 10 MB line over --max-body is refused without being buffered, then the next line is read',
  { timeout: 30_000 }, async () => {
    const s = spawnRaw(baseArgs());
    await s.ready();
    const hwm = () => {
      const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${s.proc.pid}/status`, 'utf8'));
      return Number(m[1]) * 1024;
    };
    const before = hwm();
    const big = `{"jsonrpc":"2.0","id":77,"method":"ping","params":{"pad":"${'x'.repeat(10 * 1024 * 1024)}"}}\n`;
    s.send(big);
    s.send(ping(78));
    const r = await s.reply(78, 20_000);
    assert.deepEqual(r.result, {});
    const refused = s.msgs.filter((m) => m.error);
    assert.equal(refused.length, 1);
    assert.equal(refused[0].id, null);
    assert.equal(refused[0].error.code, -32600);
    assert.match(refused[0].error.message, /--max-body \(1048576 bytes\)/);
    assert.equal(s.msgs.find((m) => m.id === 77), undefined, 'the refused line is not also answered');
    const grew = hwm() - before;
    assert.ok(grew < 6 * 1024 * 1024, `peak memory grew by ${grew} bytes reading a refused 10 MB line`);
    s.proc.stdin.end();
    assert.equal((await s.exited).code, 0);
    assert.deepEqual(s.bad, []);
  });

test('raw: with --max-body 16 MiB a 10 MB line is one message', { timeout: 30_000 }, async () => {
  const s = spawnRaw(baseArgs(['--max-body', String(16 << 20)]));
  s.send(`{"jsonrpc":"2.0","id":5,"method":"ping","params":{"pad":"${'y'.repeat(10 * 1024 * 1024)}"}}\n`);
  assert.deepEqual((await s.reply(5, 20_000)).result, {});
  s.proc.stdin.end();
  assert.equal((await s.exited).code, 0);
  assert.deepEqual(s.bad, []);
});

test('raw: EOF while a script runs: it still answers, then exit 0', { timeout: TEST_TIMEOUT }, async () => {
  const s = spawnRaw(baseArgs());
  s.send({ jsonrpc: '2.0', id: 'eof-1', method: 'tools/call',
    params: { name: 'run_skill_script', arguments: { name: 'runner-basics', script: 'scripts/sleep.py', args: ['1.5'] } } });
  s.proc.stdin.end();
  const ex = await s.exited;
  assert.deepEqual(ex, { code: 0, signal: null }, s.log.slice(-1500));
  const r = s.msgs.find((m) => m.id === 'eof-1');
  assert.ok(r, `no answer before exit; log ${s.log.slice(-1500)}`);
  assert.equal(r.result.structuredContent.status, 'ok');
  assert.match(r.result.structuredContent.stdout, /slept 1.5/);
  assert.match(s.log, /stdin closed: draining/);
  assert.deepEqual(s.bad, []);
});

test('raw: SIGTERM drains a running script, answers it and exits 0', { timeout: TEST_TIMEOUT }, async () => {
  const s = spawnRaw(baseArgs());
  await s.ready();
  s.send({ jsonrpc: '2.0', id: 8, method: 'tools/call',
    params: { name: 'run_skill_script', arguments: { name: 'runner-basics', script: 'scripts/sleep.py', args: ['1'] } } });
  // lines are read in order: once the ping is answered the script call was taken in
  s.send(ping(9));
  await s.reply(9);
  s.proc.kill('SIGTERM');
  const ex = await s.exited;
  assert.deepEqual(ex, { code: 0, signal: null });
  assert.equal(s.msgs.find((m) => m.id === 8)?.result?.structuredContent?.status, 'ok', s.log.slice(-1500));
  assert.match(s.log, /SIGTERM: draining/);
  assert.deepEqual(s.bad, []);
});

test('raw: a client that stops reading stdout cannot hold the server past the drain', { timeout: TEST_TIMEOUT }, async () => {
  const proc = spawn(BIN, baseArgs(['--shutdown-timeout', '1']), { stdio: ['pipe', 'pipe', 'pipe'] });
  live.add(proc);
  // stdout is never read: once node's buffer and the pipe are full, every
  // answer the server writes waits on the pipe
  proc.stdout.pause();
  let log = '';
  proc.stderr.on('data', (d) => { log += d.toString(); });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => { live.delete(proc); resolve({ code, signal }); }));
  proc.stdin.on('error', () => {});
  for (let i = 0; i < 4000; i++) {
    proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'list_skills', arguments: {} } })}\n`);
  }
  assert.ok(await poll(() => /serving MCP on stdin\/stdout/.test(log), 10_000, 20), log);
  await new Promise((r) => setTimeout(r, 1500));
  proc.kill('SIGTERM');
  const t0 = Date.now();
  const ex = await Promise.race([exited, new Promise((r) => setTimeout(() => r('hung'), 8000))]);
  assert.notEqual(ex, 'hung', `still running 8 s after SIGTERM (--shutdown-timeout 1); log ${log.slice(-1000)}`);
  assert.equal(ex.signal, null);
  assert.ok(Date.now() - t0 < 8000);
});

test('raw: stdout carries nothing but JSON-RPC lines, whatever is logged', { timeout: TEST_TIMEOUT }, async () => {
  const s = spawnRaw(baseArgs(['--log-level', 'debug']));
  s.send({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run_skill_script',
    arguments: { name: 'runner-timing', script: 'scripts/heartbeat.py' }, _meta: { progressToken: 'hb' } } });
  s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'load_skill', arguments: { name: 'nope' } } });
  s.send({ jsonrpc: '2.0', id: 4, method: 'no/such/method' });
  s.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'reload_skills', arguments: {} } });
  await s.reply(2, 15_000);
  s.proc.stdin.end();
  assert.equal((await s.exited).code, 0);
  assert.deepEqual(s.bad, [], 'every stdout line must be one JSON-RPC message');
  assert.ok(s.log.length > 0, 'the logs went to stderr');
  assert.equal(s.msgs.find((m) => m.id === 1).result.protocolVersion, '2025-11-25');
  assert.ok(s.msgs.filter((m) => m.method === 'notifications/progress').length >= 3);
  assert.equal(s.msgs.find((m) => m.id === 4).error.code, -32601);
  // notifications/initialized has no answer: ids 1..5 and the progress notes only
  assert.deepEqual(s.msgs.filter((m) => m.id !== undefined).map((m) => m.id).sort(), [1, 2, 3, 4, 5]);
});

test('raw: a 2026-07-28 request needs no headers on stdio; its body is still checked',
  { timeout: TEST_TIMEOUT }, async () => {
    const s = spawnRaw(baseArgs());
    const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN,
      'io.modelcontextprotocol/clientCapabilities': {} };
    s.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } });
    s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call',
      params: { name: 'list_skills', arguments: {}, _meta: meta } });
    s.send({ jsonrpc: '2.0', id: 3, method: 'tools/list',
      params: { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } });
    s.send({ jsonrpc: '2.0', id: 4, method: 'tools/list',
      params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN } } });
    const d = await s.reply(1);
    assert.ok(d.result.supportedVersions.includes(MODERN));
    assert.equal((await s.reply(2)).result.resultType, 'complete');
    assert.equal((await s.reply(3)).error.code, -32022);
    assert.equal((await s.reply(4)).error.code, -32602);
    s.proc.stdin.end();
    assert.equal((await s.exited).code, 0);
    assert.deepEqual(s.bad, []);
  });

test('raw: a script never reads the server\'s stdin', { timeout: TEST_TIMEOUT }, async () => {
  const s = spawnRaw(baseArgs());
  s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_skill_script',
    arguments: { name: 'runner-basics', script: 'scripts/read_stdin.py' } } });
  // what follows on the pipe is the client's next message, not the script's input
  s.send(ping(2));
  const r = await s.reply(1);
  const out = JSON.parse(r.result.structuredContent.stdout);
  assert.equal(out.stdin, '', 'the script read the server\'s input');
  assert.ok(out.read_s < 1, `the script waited ${out.read_s}s on its stdin`);
  assert.deepEqual((await s.reply(2)).result, {});
  s.proc.stdin.end();
  assert.equal((await s.exited).code, 0);
  assert.deepEqual(s.bad, []);
});

test('raw: SIGHUP rescans the skills', { timeout: TEST_TIMEOUT }, async () => {
  const lib = copyFixtures();
  tmpDirs.push(lib.dir);
  const s = spawnRaw(['--stdio', '--skills', lib.skills, '--refresh-interval', '0']);
  await s.ready();
  const dir = path.join(lib.skills, 'late-arrival');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'SKILL.md'),
    '---\nname: late-arrival\ndescription: Added while the server runs, found on SIGHUP.\n---\n# Late\n');
  s.proc.kill('SIGHUP');
  let found = false;
  for (let i = 10; i < 110 && !found; i++) {
    s.send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'list_skills', arguments: {} } });
    const r = await s.reply(i);
    found = r.result.structuredContent.skills.some((k) => (k.qualified_name ?? k.name) === 'late-arrival');
    if (!found) await new Promise((res) => setTimeout(res, 100));
  }
  assert.ok(found, `late-arrival not listed after SIGHUP; log ${s.log.slice(-1000)}`);
  s.proc.stdin.end();
  assert.equal((await s.exited).code, 0);
  assert.deepEqual(s.bad, []);
});

/**
 * An SDK client, not yet connected, and its transport to a --stdio server
 * over a fresh copy of the fixtures that refreshes every 0.2 s: { lib, t, c,
 * log }, log being the server's stderr so far.
 */
function refreshingStdio(name) {
  const lib = copyFixtures();
  tmpDirs.push(lib.dir);
  const t = new StdioClientTransport({ command: BIN, args: ['--stdio', '--skills', lib.skills,
    '--refresh-interval', '0.2'], stderr: 'pipe' });
  const io = { lib, t, c: new Client({ name, version: '1.0.0' }), log: '' };
  t.stderr.on('data', (d) => { io.log += d.toString(); });
  return io;
}

test('SDK: an edit is announced as one list_changed of each kind, with listChanged declared',
  { timeout: TEST_TIMEOUT }, async () => {
    const io = refreshingStdio('skill-mcp-e2e-stdio-notify');
    const { lib, t, c } = io;
    const got = { resources: 0, prompts: 0 };
    c.setNotificationHandler(ResourceListChangedNotificationSchema, () => { got.resources++; });
    c.setNotificationHandler(PromptListChangedNotificationSchema, () => { got.prompts++; });
    await c.connect(t);
    try {
      const caps = c.getServerCapabilities();
      assert.equal(caps.resources.listChanged, true);
      assert.equal(caps.prompts.listChanged, true);
      assert.equal(caps.resources.subscribe, true);
      await new Promise((res) => setTimeout(res, 600));
      assert.deepEqual(got, { resources: 0, prompts: 0 }, 'nothing changed yet');
      // one change, made at once (a folder renamed in): one generation
      const stage = path.join(lib.dir, 'late-arrival');
      fs.mkdirSync(stage);
      fs.writeFileSync(path.join(stage, 'SKILL.md'),
        '---\nname: late-arrival\ndescription: Added while the server runs.\n---\n# Late\n');
      fs.renameSync(stage, path.join(lib.skills, 'late-arrival'));
      const seen = await poll(() => got.resources >= 1 && got.prompts >= 1, 10_000, 20);
      assert.ok(seen, `no list_changed after an edit: ${JSON.stringify(got)}; log ${io.log.slice(-800)}`);
      await new Promise((res) => setTimeout(res, 800));
      assert.deepEqual(got, { resources: 1, prompts: 1 }, 'one of each for one change');
      const r = await c.listResources();
      assert.ok(r.resources.some((x) => x.uri.includes('late-arrival')), 'the new skill is listed');
    } finally {
      await c.close();
    }
  });

test('SDK: resources/subscribe brings resources/updated for that file only; unsubscribe stops it',
  { timeout: TEST_TIMEOUT }, async () => {
    const io = refreshingStdio('skill-mcp-e2e-stdio-subscribe');
    const { lib, t, c } = io;
    const updated = [];
    let lists = 0;
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); });
    c.setNotificationHandler(ResourceListChangedNotificationSchema, () => { lists++; });
    await c.connect(t);
    try {
      assert.ok(await poll(() => /indexed the bodies of/.test(io.log), 20_000, 20), io.log);
      const uri = 'skill://csv-profile/references/format.md';
      assert.deepEqual(await c.subscribeResource({ uri }), {});
      await assert.rejects(c.subscribeResource({ uri: 'skill://no-such-skill/SKILL.md' }),
        (e) => e.code === -32602 && /Resource not found/.test(e.message));
      // another skill moves: list_changed, but no updated
      const gh = path.join(lib.skills, 'git-helper', 'SKILL.md');
      fs.writeFileSync(gh, fs.readFileSync(gh, 'utf8').replace(/description: .*/, 'description: Moved on stdio.'));
      assert.ok(await poll(() => lists >= 1, 10_000, 20), io.log.slice(-800));
      await new Promise((res) => setTimeout(res, 500));
      assert.deepEqual(updated, [], 'no updated for a file nobody subscribed to');
      const p = path.join(lib.skills, 'csv-profile', 'references', 'format.md');
      fs.writeFileSync(p, fs.readFileSync(p, 'utf8').replace('Line 001', 'LINE 001'));
      assert.ok(await poll(() => updated.length >= 1, 10_000, 20), io.log.slice(-800));
      await new Promise((res) => setTimeout(res, 500));
      assert.deepEqual(updated, [uri]);
      assert.deepEqual(await c.unsubscribeResource({ uri }), {});
      const l0 = lists;
      fs.writeFileSync(p, fs.readFileSync(p, 'utf8').replace('Line 002', 'LINE 002'));
      assert.ok(await poll(() => lists > l0, 10_000, 20), io.log.slice(-800));
      await new Promise((res) => setTimeout(res, 500));
      assert.deepEqual(updated, [uri], 'unsubscribed: no more updated');
    } finally {
      await c.close();
    }
  });

test('raw: without root, scripts run as the user who started the server; no port, no HTTP flag',
  { timeout: TEST_TIMEOUT }, async () => {
    // A root test run starts the server as nobody (an ordinary user).
    const asUser = process.getuid() === 0 ? { uid: 65534, gid: 65534 } : {};
    const want = asUser.uid ?? process.getuid();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-stdio-user-'));
    tmpDirs.push(dir);
    fs.chmodSync(dir, 0o755);
    const sk = path.join(dir, 'whoami', 'scripts');
    fs.mkdirSync(sk, { recursive: true });
    fs.writeFileSync(path.join(dir, 'whoami', 'SKILL.md'),
      '---\nname: whoami\ndescription: Prints the uid its script runs as.\n---\n# whoami\n');
    fs.writeFileSync(path.join(sk, 'uid.sh'), '#!/bin/sh\nid -u\n', { mode: 0o755 });
    for (const p of [path.join(dir, 'whoami'), sk]) fs.chmodSync(p, 0o755);
    const s = spawnRaw(['--stdio', '--skills', dir, '--refresh-interval', '0'], { ...asUser, cwd: dir });
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_skill_script',
      arguments: { name: 'whoami', script: 'scripts/uid.sh' } } });
    const r = await s.reply(1);
    assert.equal(r.result.structuredContent.status, 'ok', JSON.stringify(r).slice(0, 500));
    assert.equal(r.result.structuredContent.stdout.trim(), String(want));
    s.proc.stdin.end();
    assert.equal((await s.exited).code, 0);
    assert.doesNotMatch(s.log, /listening|port/i);
    assert.deepEqual(s.bad, []);
  });

test('--stdio refuses the HTTP-only options that change what it serves', { timeout: TEST_TIMEOUT }, () => {
  for (const [flags, name] of [[['--workers', '2'], '--workers'], [['--stateful'], '--stateful'],
    [['--auth-tokens', '/dev/null'], '--auth-tokens']]) {
    const r = spawnSync(BIN, ['--stdio', '--skills', fx.skills, ...flags], { encoding: 'utf8', input: '', timeout: 5000 });
    assert.equal(r.status, 2, `${flags.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`--stdio .*cannot be combined with ${name}`));
    assert.equal(r.stdout, '');
  }
});
