// --stateful: Mcp-Session-Id sessions on the legacy era. initialize mints
// one; every later legacy message must carry it (missing: 400, unknown or
// ended: 404); DELETE ends it; an idle session expires; a full table evicts
// the least recently used; logging/setLevel is kept per session and decides
// whether script stderr reaches the client. The 2026-07-28 era ignores the
// header. Without --stateful nothing of this exists.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  E2E_DIR, FIXTURES, TEST_TIMEOUT, addToken, callOk, post, postModern, raw, runCli,
  startServer,
} from './lib/harness.mjs';

const RUNNER_FIXTURES = path.join(E2E_DIR, 'fixtures', 'runner-skills');
const INIT = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const V = { 'mcp-protocol-version': '2025-11-25' };

let srv;
const clients = [];

before(async () => {
  srv = await startServer({ skillsDirs: [FIXTURES, RUNNER_FIXTURES], args: ['--stateful'] });
});
after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await srv?.stop();
});

async function sdk(url, logs) {
  const client = new Client({ name: 'session-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  if (logs) client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

async function initRaw(url) {
  const r = await post(url, INIT);
  assert.equal(r.status, 200);
  const sid = r.headers['mcp-session-id'];
  assert.match(sid ?? '', /^[0-9a-f]{32}$/, 'initialize mints a 128-bit hex session id');
  return sid;
}

const ping = (id = 2) => ({ jsonrpc: '2.0', id, method: 'ping' });

test('the SDK client gets a session id and every tool call works inside it', { timeout: TEST_TIMEOUT }, async () => {
  const { client, transport } = await sdk(srv.url);
  assert.match(transport.sessionId ?? '', /^[0-9a-f]{32}$/);
  const list = await callOk(assert, client, 'list_skills', {});
  assert.ok(list.skills.length > 0);
  const tools = await client.listTools();
  assert.ok(tools.tools.some((t) => t.name === 'load_skill'));
  await client.ping();
});

test('two initializes get two different sessions', { timeout: TEST_TIMEOUT }, async () => {
  const a = await initRaw(srv.url);
  const b = await initRaw(srv.url);
  assert.notEqual(a, b);
  assert.equal((await post(srv.url, ping(), { ...V, 'mcp-session-id': a })).status, 200);
  assert.equal((await post(srv.url, ping(), { ...V, 'mcp-session-id': b })).status, 200);
});

test('terminateSession() sends DELETE; the ended session answers 404', { timeout: TEST_TIMEOUT }, async () => {
  const { transport } = await sdk(srv.url);
  const sid = transport.sessionId;
  assert.equal((await post(srv.url, ping(), { ...V, 'mcp-session-id': sid })).status, 200);
  await transport.terminateSession();
  const r = await post(srv.url, ping(3), { ...V, 'mcp-session-id': sid });
  assert.equal(r.status, 404);
  assert.equal(r.json.error.code, -32001);
  assert.equal(r.json.id, 3, 'the error carries the request id');
  const again = await raw(srv.url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  assert.equal(again.status, 404, 'a second DELETE finds nothing to end');
  const notif = await post(srv.url, { jsonrpc: '2.0', method: 'notifications/initialized' },
    { ...V, 'mcp-session-id': sid });
  assert.equal(notif.status, 404, 'notifications on an ended session are refused too');
});

test('missing, unknown and malformed session ids', { timeout: TEST_TIMEOUT }, async () => {
  const missing = await post(srv.url, ping(4), V);
  assert.equal(missing.status, 400);
  assert.equal(missing.json.id, 4);
  assert.match(missing.json.error.message, /Mcp-Session-Id/);
  const notif = await post(srv.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, V);
  assert.equal(notif.status, 400, 'a notification without the header is refused, not accepted');
  for (const bad of ['0'.repeat(32), 'not-a-session', 'A'.repeat(32), 'f'.repeat(33), ' ']) {
    const r = await post(srv.url, ping(5), { ...V, 'mcp-session-id': bad });
    assert.equal(r.status, 404, `id ${JSON.stringify(bad)}`);
    assert.equal(r.json.error.code, -32001);
  }
  const tool = await post(srv.url, { jsonrpc: '2.0', id: 6, method: 'tools/call',
    params: { name: 'list_skills', arguments: {} } }, { ...V, 'mcp-session-id': 'e'.repeat(32) });
  assert.equal(tool.status, 404, 'a tool call on an unknown session runs nothing');
});

test('DELETE without a session id is 400, with an unknown one 404; GET needs a session; PUT is 405',
  { timeout: TEST_TIMEOUT }, async () => {
    const none = await raw(srv.url, { method: 'DELETE' });
    assert.equal(none.status, 400);
    assert.match(none.json.error.message, /Mcp-Session-Id/);
    const unknown = await raw(srv.url, { method: 'DELETE', headers: { 'mcp-session-id': 'a'.repeat(32) } });
    assert.equal(unknown.status, 404);
    const get = await raw(srv.url, { method: 'GET', headers: { accept: 'text/event-stream' } });
    assert.equal(get.status, 400, 'the GET stream (notify.test.mjs) belongs to a session');
    const put = await raw(srv.url, { method: 'PUT', headers: { accept: 'text/event-stream' } });
    assert.equal(put.status, 405);
    assert.equal(put.headers.allow, 'GET, HEAD, POST, DELETE');
    const sid = await initRaw(srv.url);
    const del = await raw(srv.url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
  });

test('the 2026-07-28 era ignores Mcp-Session-Id: never required, never minted or echoed',
  { timeout: TEST_TIMEOUT }, async () => {
    const plain = await postModern(srv.url, 'tools/list');
    assert.equal(plain.status, 200);
    assert.ok(plain.json.result.tools.length > 0);
    assert.equal(plain.headers['mcp-session-id'], undefined);
    const junk = await postModern(srv.url, 'tools/list', {}, { headers: { 'mcp-session-id': 'nope' } });
    assert.equal(junk.status, 200, 'an unknown id on a modern request is not a 404');
    assert.equal(junk.headers['mcp-session-id'], undefined);
    const disc = await postModern(srv.url, 'server/discover');
    assert.equal(disc.status, 200);
    assert.equal(disc.headers['mcp-session-id'], undefined);
    const init = await postModern(srv.url, 'initialize', { protocolVersion: '2025-11-25' });
    assert.equal(init.status, 404, 'initialize is no modern method, even with --stateful');
    assert.equal(init.headers['mcp-session-id'], undefined);
  });

test('logging/setLevel is kept per session: script stderr reaches only the session that asked',
  { timeout: TEST_TIMEOUT }, async () => {
    const hello = { name: 'runner-basics', script: 'scripts/hello.sh' };
    const logsA = [], logsB = [], logsC = [];
    const a = await sdk(srv.url, logsA);
    const b = await sdk(srv.url, logsB);
    const c = await sdk(srv.url, logsC);
    await a.client.setLoggingLevel('debug');
    await b.client.setLoggingLevel('error');
    for (const { client } of [a, b, c]) {
      const r = await callOk(assert, client, 'run_skill_script', hello);
      assert.equal(r.exit_code, 0);
    }
    assert.ok(logsA.some((m) => m.level === 'info' && m.data === 'to stderr' && m.logger === 'run_skill_script'),
      `debug session gets the stderr line: ${JSON.stringify(logsA)}`);
    assert.deepEqual(logsB, [], 'an error-level session gets no info lines');
    assert.deepEqual(logsC, [], 'a session that never set a level gets none');
    // A level change takes effect for the next call.
    await b.client.setLoggingLevel('info');
    await callOk(assert, b.client, 'run_skill_script', hello);
    assert.ok(logsB.some((m) => m.data === 'to stderr'));
    const bad = await post(srv.url, { jsonrpc: '2.0', id: 9, method: 'logging/setLevel',
      params: { level: 'loud' } }, { ...V, 'mcp-session-id': a.transport.sessionId });
    assert.equal(bad.json.error.code, -32602);
  });

test('sessions expire when idle; one in use stays', { timeout: TEST_TIMEOUT }, async () => {
  const s = await startServer({ args: ['--stateful', '--session-idle-timeout', '2'] });
  try {
    const idle = await initRaw(s.url);
    const busy = await initRaw(s.url);
    const headed = await initRaw(s.url);
    for (let i = 0; i < 8; i++) {
      await new Promise((r) => setTimeout(r, 500));
      assert.equal((await post(s.url, ping(), { ...V, 'mcp-session-id': busy })).status, 200,
        'a session used every 0.5 s never expires');
      await raw(s.url, { method: 'HEAD', headers: { accept: 'text/event-stream', 'mcp-session-id': headed } });
    }
    const r = await post(s.url, ping(), { ...V, 'mcp-session-id': idle });
    assert.equal(r.status, 404, 'idle for 4 s with a 2 s timeout: gone');
    const h = await post(s.url, ping(), { ...V, 'mcp-session-id': headed });
    assert.equal(h.status, 404, 'HEAD asks about a session without using it');
    const m = await raw(`http://127.0.0.1:${s.port}/metrics`, { method: 'GET' });
    assert.match(m.text, /skill_mcp_sessions_total\{event="expired"\} 2\n/);
    assert.match(m.text, /skill_mcp_sessions 1\n/);
  } finally {
    await s.stop();
  }
});

test('a full table evicts the least recently used session', { timeout: TEST_TIMEOUT }, async () => {
  const s = await startServer({ args: ['--stateful', '--max-sessions', '2'] });
  try {
    const a = await initRaw(s.url);
    const b = await initRaw(s.url);
    assert.equal((await post(s.url, ping(), { ...V, 'mcp-session-id': a })).status, 200);
    const c = await initRaw(s.url);     // b is now the least recently used
    assert.equal((await post(s.url, ping(), { ...V, 'mcp-session-id': b })).status, 404);
    assert.equal((await post(s.url, ping(), { ...V, 'mcp-session-id': a })).status, 200);
    assert.equal((await post(s.url, ping(), { ...V, 'mcp-session-id': c })).status, 200);
    const m = await raw(`http://127.0.0.1:${s.port}/metrics`, { method: 'GET' });
    assert.match(m.text, /skill_mcp_sessions_total\{event="evicted"\} 1\n/);
    assert.match(m.text, /skill_mcp_sessions 2\n/);
  } finally {
    await s.stop();
  }
});

test('without --stateful: no session id, DELETE is 405, the header is ignored', { timeout: TEST_TIMEOUT }, async () => {
  const s = await startServer();
  try {
    const r = await post(s.url, INIT);
    assert.equal(r.status, 200);
    assert.equal(r.headers['mcp-session-id'], undefined);
    assert.equal((await post(s.url, ping(), V)).status, 200);
    assert.equal((await post(s.url, ping(), { ...V, 'mcp-session-id': 'whatever' })).status, 200);
    const del = await raw(s.url, { method: 'DELETE', headers: { 'mcp-session-id': 'whatever' } });
    assert.equal(del.status, 405);
    assert.equal(del.headers.allow, 'POST');
  } finally {
    await s.stop();
  }
});

test('--stateful with several workers on one port is refused at start', { timeout: TEST_TIMEOUT }, () => {
  const r = runCli(['--stateful', '--workers', '2', '--port', '0', '--skills', FIXTURES]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--stateful .*--workers 2/);
  assert.match(r.stderr, /Mcp-Session-Id/);
});

test('with --auth-tokens a session belongs to the client that started it', { timeout: TEST_TIMEOUT }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-session-auth-'));
  const file = path.join(dir, 'tokens');
  const alice = { authorization: `Bearer ${addToken(file, 'alice')}` };
  const bob = { authorization: `Bearer ${addToken(file, 'bob')}` };
  const s = await startServer({ args: ['--stateful', '--auth-tokens', file] });
  try {
    const init = await post(s.url, INIT, alice);
    assert.equal(init.status, 200);
    const sid = init.headers['mcp-session-id'];
    assert.match(sid ?? '', /^[0-9a-f]{32}$/);
    assert.equal((await post(s.url, ping(), { ...V, ...alice, 'mcp-session-id': sid })).status, 200);
    const stolen = await post(s.url, ping(), { ...V, ...bob, 'mcp-session-id': sid });
    assert.equal(stolen.status, 404, "another client's session id is unknown to it");
    const del = await raw(s.url, { method: 'DELETE', headers: { ...bob, 'mcp-session-id': sid } });
    assert.equal(del.status, 404, 'nor can it end it');
    assert.equal((await post(s.url, ping(), { ...V, ...alice, 'mcp-session-id': sid })).status, 200,
      'the owner still uses it');
    const anon = await raw(s.url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
    assert.equal(anon.status, 401, 'authentication comes before the session');
  } finally {
    await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
