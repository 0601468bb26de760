// Live progress of run_skill_script: stderr lines stream as SSE notifications
// before the result when the client sends a progressToken (legacy) or a
// logLevel (2026-07-28) and accepts text/event-stream; otherwise the reply
// stays plain JSON. A client that closes the stream cancels the script.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';

import {
  E2E_DIR, JSON_HEADERS, MODERN, TEST_TIMEOUT, connect, modernMeta, poll, post, sseMessages, startServer,
} from './lib/harness.mjs';

const RUNNER_FIXTURES = path.join(E2E_DIR, 'fixtures', 'runner-skills');
let srv;
let client;

before(async () => {
  srv = await startServer({ skillsDirs: [RUNNER_FIXTURES] });
  client = await connect(srv.url);
});
after(async () => {
  await client?.close();
  await srv?.stop();
});

const heartbeat = { name: 'runner-timing', script: 'scripts/heartbeat.py' };

test('progressToken + SSE accept: stderr lines arrive as notifications/progress before the result',
  { timeout: TEST_TIMEOUT }, async () => {
    const r = await post(srv.url, {
      jsonrpc: '2.0', id: 41, method: 'tools/call',
      params: { name: 'run_skill_script', arguments: heartbeat, _meta: { progressToken: 'p-1' } },
    });
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'], /^text\/event-stream/);
    const ev = sseMessages(r.text);
    const progress = ev.filter((e) => e.method === 'notifications/progress');
    assert.ok(progress.length >= 3, `expected several progress events, got ${progress.length}`);
    progress.forEach((p, i) => {
      assert.equal(p.params.progressToken, 'p-1');
      assert.match(p.params.message, /^heartbeat \d+$/);
      if (i) assert.ok(p.params.progress > progress[i - 1].params.progress, 'progress must increase');
    });
    const last = ev[ev.length - 1];
    assert.equal(last.id, 41, 'the response is the last event');
    assert.equal(last.result.structuredContent.status, 'timeout');
    assert.ok(ev.indexOf(progress[0]) < ev.length - 1);
  });

test('without a progressToken the reply is plain JSON', { timeout: TEST_TIMEOUT }, async () => {
  const r = await post(srv.url, {
    jsonrpc: '2.0', id: 42, method: 'tools/call',
    params: { name: 'run_skill_script', arguments: { name: 'runner-basics', script: 'scripts/hello.sh' } },
  });
  assert.equal(r.status, 200);
  assert.match(r.headers['content-type'], /^application\/json/);
  assert.equal(r.json.id, 42);
});

test('a progressToken without text/event-stream in Accept still gets plain JSON',
  { timeout: TEST_TIMEOUT }, async () => {
    const r = await post(srv.url, {
      jsonrpc: '2.0', id: 43, method: 'tools/call',
      params: { name: 'run_skill_script', arguments: heartbeat, _meta: { progressToken: 7 } },
    }, { accept: 'application/json' });
    assert.match(r.headers['content-type'], /^application\/json/);
    assert.equal(r.json.result.structuredContent.status, 'timeout');
  });

test('2026-07-28 logLevel streams stderr as notifications/message', { timeout: TEST_TIMEOUT }, async () => {
  const params = { name: 'run_skill_script', arguments: heartbeat,
    _meta: modernMeta({ 'io.modelcontextprotocol/logLevel': 'info' }) };
  const r = await post(srv.url, { jsonrpc: '2.0', id: 44, method: 'tools/call', params }, {
    'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'run_skill_script',
  });
  const ev = sseMessages(r.text);
  const logs = ev.filter((e) => e.method === 'notifications/message');
  assert.ok(logs.length >= 3);
  assert.equal(logs[0].params.level, 'info');
  assert.match(logs[0].params.data, /^heartbeat/);
  assert.equal(ev[ev.length - 1].result.resultType, 'complete');
});

test('the SDK client receives progress through onprogress', { timeout: TEST_TIMEOUT }, async () => {
  const seen = [];
  const res = await client.callTool({ name: 'run_skill_script', arguments: heartbeat }, undefined, {
    onprogress: (p) => seen.push(p),
  });
  assert.equal(res.structuredContent.status, 'timeout');
  assert.ok(seen.length >= 3, `onprogress called ${seen.length} times`);
  assert.match(seen[0].message, /^heartbeat/);
});

test('closing the stream cancels the script', { timeout: TEST_TIMEOUT }, async () => {
  const stats = async () =>
    (await client.callTool({ name: 'skill_server_stats', arguments: {} })).structuredContent.scripts;
  const s0 = await stats();
  await new Promise((resolve) => {
    const u = new URL(srv.url);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
      headers: JSON_HEADERS }, (res) => {
      res.once('data', () => { req.destroy(); resolve(); });   // first heartbeat, then hang up
    });
    req.on('error', () => resolve());
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 45, method: 'tools/call',
      params: { name: 'run_skill_script', arguments: heartbeat, _meta: { progressToken: 'c' } } }));
  });
  // heartbeat.py would run into its 2 s ceiling (a timeout); cancelled, it ends as failed.
  const s1 = await poll(async () => {
    const s = await stats();
    return s.started > s0.started && s.live === 0 ? s : null;
  }, 8000, 50);
  assert.ok(s1, 'the script should have ended');
  assert.equal(s1.failed - s0.failed, 1, 'cancelled run counts as failed');
  assert.equal(s1.timeout - s0.timeout, 0, 'it must not have run to its ceiling');
});

test('notifications/cancelled stops the script of that call, and only that one', { timeout: TEST_TIMEOUT }, async () => {
  const call = (id) => post(srv.url, { jsonrpc: '2.0', id, method: 'tools/call',
    params: { name: 'run_skill_script', arguments: heartbeat } });
  const t0 = Date.now();
  let targetMs = 0;
  const target = call(9001).then((r) => { targetMs = Date.now() - t0; return r; });
  const other = call(9002);
  // Both scripts run before the cancel is sent: a cancel that arrives before
  // its call is known names no call and is dropped.
  const live = async () =>
    (await client.callTool({ name: 'skill_server_stats', arguments: {} })).structuredContent.scripts.live;
  assert.ok(await poll(async () => await live() === 2, 10_000, 20), 'both scripts run');
  const n = await post(srv.url, { jsonrpc: '2.0', method: 'notifications/cancelled',
    params: { requestId: 9001, reason: 'user pressed stop' } });
  assert.equal(n.status, 202);
  const [a, b] = await Promise.all([target, other]);
  const sa = a.json.result.structuredContent;
  const sb = b.json.result.structuredContent;
  assert.equal(sa.status, 'failed');
  assert.match(sa.hint, /cancelled/);
  assert.ok(targetMs < 1900, `cancelled before its 2 s ceiling (answered after ${targetMs} ms)`);
  assert.equal(sb.status, 'timeout', 'the other call ran to its ceiling');
});
