// --sse: every 200 reply to a client that accepts text/event-stream is one
// `event: message` stream (then the stream ends); a client that accepts only
// JSON gets JSON; notifications stay 202 and refusals stay JSON. The SDK
// client must work for every tool through it.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import {
  E2E_DIR, FIXTURES, JSON_HEADERS, TEST_TIMEOUT, callOk, connect, post,
  postModern, raw, startServer,
} from './lib/harness.mjs';

const RUNNER_FIXTURES = path.join(E2E_DIR, 'fixtures', 'runner-skills');
const V = { 'mcp-protocol-version': '2025-11-25' };
let srv;
let client;

before(async () => {
  srv = await startServer({ skillsDirs: [FIXTURES, RUNNER_FIXTURES], args: ['--sse'] });
  client = await connect(srv.url);
});
after(async () => {
  await client?.close();
  await srv?.stop();
});

/** Splits an SSE body into events: [{event, data}] (data lines joined with \n). */
function parseSse(text) {
  assert.ok(text.endsWith('\n\n'), 'the stream ends after a complete event');
  return text.slice(0, -2).split('\n\n').map((block) => {
    const ev = { event: undefined, data: [] };
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) ev.event = line.slice(7);
      else if (line.startsWith('data: ')) ev.data.push(line.slice(6));
      else assert.fail(`unexpected SSE line ${JSON.stringify(line)}`);
    }
    return { event: ev.event, data: ev.data.join('\n') };
  });
}

/** Asserts a one-event SSE reply and returns its JSON-RPC message and raw data. */
function oneEvent(r) {
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'text/event-stream');
  assert.equal(r.headers['x-accel-buffering'], 'no');
  assert.equal(r.headers['cache-control'], 'no-cache');
  const evs = parseSse(r.text);
  assert.equal(evs.length, 1, `one event, got ${evs.length}`);
  assert.equal(evs[0].event, 'message');
  return { msg: JSON.parse(evs[0].data), data: evs[0].data };
}

test('the SDK client works for every tool, and for lists, resources and prompts', { timeout: TEST_TIMEOUT }, async () => {
  const tools = await client.listTools();
  const names = tools.tools.map((t) => t.name);
  for (const t of ['list_skills', 'load_skill', 'read_skill_file', 'skill_server_stats', 'reload_skills'])
    assert.ok(names.includes(t), t);
  const list = await callOk(assert, client, 'list_skills', {});
  assert.ok(list.skills.some((s) => s.name === 'csv-profile'));
  const ranked = await callOk(assert, client, 'list_skills', { query: 'csv profile', limit: 2 });
  assert.equal(ranked.skills[0].name, 'csv-profile');
  const loaded = await callOk(assert, client, 'load_skill', { name: 'csv-profile' });
  assert.ok(loaded.content.includes('# CSV profile'));
  const file = await callOk(assert, client, 'read_skill_file', { name: 'csv-profile', path: 'references/format.md' });
  assert.ok(file.content.length > 0);
  const stats = await callOk(assert, client, 'skill_server_stats', {});
  assert.ok(stats.tools.list_skills.calls >= 2);
  await callOk(assert, client, 'reload_skills', {});
  assert.ok(names.includes('run_skill_script'));
  const run = await callOk(assert, client, 'run_skill_script', { name: 'runner-basics', script: 'scripts/hello.sh' });
  assert.equal(run.status, 'ok');
  assert.match(run.stdout, /hello from bash/);
  const bad = await client.callTool({ name: 'load_skill', arguments: { name: 'no-such-skill' } });
  assert.equal(bad.isError, true);
  assert.ok((await client.listResources()).resources.length > 0);
  assert.ok((await client.listPrompts()).prompts.length > 0);
  await client.ping();
});

test('raw: a reply is one event: message with the same bytes JSON would carry', { timeout: TEST_TIMEOUT }, async () => {
  const req = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_skills', arguments: {} } };
  const sse = await post(srv.url, req, V);
  const { msg, data } = oneEvent(sse);
  assert.equal(msg.id, 7);
  assert.ok(msg.result.structuredContent.skills.length > 0);
  const json = await post(srv.url, req, { ...V, accept: 'application/json' });
  assert.equal(json.status, 200);
  assert.match(json.headers['content-type'], /^application\/json/);
  assert.equal(data, json.text, 'the pre-rendered list goes out framed, byte for byte');
  const list = oneEvent(await post(srv.url, { jsonrpc: '2.0', id: 8, method: 'tools/list' }, V)).msg;
  assert.ok(list.result.tools.length >= 5);
});

test('Accept without text/event-stream falls back to JSON; absent Accept too', { timeout: TEST_TIMEOUT }, async () => {
  for (const accept of ['application/json', '*/*', undefined]) {
    const headers = { 'content-type': 'application/json', ...V };
    if (accept) headers.accept = accept;
    const r = await raw(srv.url, { headers, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }) });
    assert.equal(r.status, 200, `accept ${accept}`);
    assert.match(r.headers['content-type'], /^application\/json/, `accept ${accept}`);
    assert.deepEqual(r.json, { jsonrpc: '2.0', id: 9, result: {} });
  }
});

test('notifications stay 202 without a body; refusals stay JSON', { timeout: TEST_TIMEOUT }, async () => {
  const n = await post(srv.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, V);
  assert.equal(n.status, 202);
  assert.equal(n.text, '');
  assert.notEqual(n.headers['content-type'], 'text/event-stream');
  const parse = await post(srv.url, '{not json', V);
  assert.equal(parse.status, 400);
  assert.match(parse.headers['content-type'], /^application\/json/);
  assert.equal(parse.json.error.code, -32700);
  const modern404 = await postModern(srv.url, 'no/such/method');
  assert.equal(modern404.status, 404);
  assert.match(modern404.headers['content-type'], /^application\/json/);
  const ct = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'content-type': 'text/plain' });
  assert.equal(ct.status, 415);
  assert.match(ct.headers['content-type'], /^application\/json/);
});

test('a JSON-RPC error answered with 200 streams like a result', { timeout: TEST_TIMEOUT }, async () => {
  const r = await post(srv.url, { jsonrpc: '2.0', id: 10, method: 'tools/call',
    params: { name: 'no_such_tool', arguments: {} } }, V);
  const { msg } = oneEvent(r);
  assert.equal(msg.id, 10);
  assert.equal(msg.error.code, -32602);
  const legacy404 = oneEvent(await post(srv.url, { jsonrpc: '2.0', id: 11, method: 'no/such' }, V)).msg;
  assert.equal(legacy404.error.code, -32601);
});

test('the 2026-07-28 era streams too', { timeout: TEST_TIMEOUT }, async () => {
  const r = await postModern(srv.url, 'tools/call', { name: 'list_skills', arguments: {} }, { id: 12 });
  const { msg } = oneEvent(r);
  assert.equal(msg.id, 12);
  assert.equal(msg.result.resultType, 'complete');
});

test('a script call streams its result alone, without a progressToken', { timeout: TEST_TIMEOUT }, async () => {
  const r = await post(srv.url, { jsonrpc: '2.0', id: 13, method: 'tools/call',
    params: { name: 'run_skill_script', arguments: { name: 'runner-basics', script: 'scripts/hello.sh' } } }, V);
  const { msg } = oneEvent(r);
  assert.equal(msg.id, 13);
  assert.equal(msg.result.structuredContent.status, 'ok');
  const json = await post(srv.url, { jsonrpc: '2.0', id: 14, method: 'tools/call',
    params: { name: 'run_skill_script', arguments: { name: 'runner-basics', script: 'scripts/hello.sh' } } },
  { ...V, accept: 'application/json' });
  assert.match(json.headers['content-type'], /^application\/json/);
  assert.equal(json.json.result.structuredContent.status, 'ok');
});

test('--sse with --stateful: the initialize stream carries Mcp-Session-Id', { timeout: TEST_TIMEOUT }, async () => {
  const s = await startServer({ args: ['--sse', '--stateful'] });
  try {
    const r = await post(s.url, { jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
    { ...JSON_HEADERS });
    const { msg } = oneEvent(r);
    assert.equal(msg.result.protocolVersion, '2025-11-25');
    assert.match(r.headers['mcp-session-id'] ?? '', /^[0-9a-f]{32}$/);
    const c = await connect(s.url);
    try {
      const l = await callOk(assert, c, 'list_skills', {});
      assert.ok(l.skills.length > 0);
    } finally {
      await c.close();
    }
  } finally {
    await s.stop();
  }
});
