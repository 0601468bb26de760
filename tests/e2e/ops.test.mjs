// Operations endpoints: GET /healthz, /readyz and /metrics never go through
// the MCP path; /metrics describes what the server has done.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { TEST_TIMEOUT, connect, raw, startServer } from './lib/harness.mjs';

let srv;
let client;
let base;

before(async () => {
  srv = await startServer();
  client = await connect(srv.url);
  base = srv.url.replace(/\/mcp$/, '');
});
after(async () => {
  await client?.close();
  await srv?.stop();
});

test('/healthz and /readyz answer plain text', { timeout: TEST_TIMEOUT }, async () => {
  const h = await raw(`${base}/healthz`, { method: 'GET' });
  assert.equal(h.status, 200);
  assert.equal(h.text, 'ok\n');
  const r = await raw(`${base}/readyz`, { method: 'GET', headers: { host: '10.1.2.3:8000' } });
  assert.equal(r.status, 200, 'probes from a load balancer carry any Host');
  assert.equal(r.text, 'ready\n');
});

test('/metrics counts requests, tool calls and the index', { timeout: TEST_TIMEOUT }, async () => {
  const value = (text, line) => {
    const m = text.split('\n').find((l) => l.startsWith(line + ' '));
    return m ? Number(m.slice(line.length + 1)) : 0;
  };
  const before0 = (await raw(`${base}/metrics`, { method: 'GET' })).text;
  await client.callTool({ name: 'list_skills', arguments: { query: 'csv' } });
  await client.callTool({ name: 'load_skill', arguments: { name: 'no-such-skill' } });
  const m = await raw(`${base}/metrics`, { method: 'GET' });
  assert.equal(m.status, 200);
  assert.match(m.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  const after0 = m.text;
  assert.equal(value(after0, 'skill_mcp_up'), 1);
  assert.ok(value(after0, 'skill_mcp_skills') > 0);
  assert.ok(value(after0, 'skill_mcp_index_generation') >= 1);
  const calls = (t, k) => value(t, `skill_mcp_tool_calls_total{tool="${k}",outcome="ok"}`);
  const errs = (t, k) => value(t, `skill_mcp_tool_calls_total{tool="${k}",outcome="error"}`);
  assert.equal(calls(after0, 'list_skills') - calls(before0, 'list_skills'), 1);
  assert.equal(errs(after0, 'load_skill') - errs(before0, 'load_skill'), 1);
  const req = (t) => value(t, 'skill_mcp_requests_total{method="tools/call",status="200"}');
  assert.equal(req(after0) - req(before0), 2);
  assert.match(after0, /skill_mcp_tool_duration_seconds_bucket\{tool="list_skills",le="\+Inf"\} \d+/);
  assert.match(after0, /skill_mcp_scripts_live 0/);
});

test('/metrics is refused to a foreign Host (DNS rebinding)', { timeout: TEST_TIMEOUT }, async () => {
  const m = await raw(`${base}/metrics`, { method: 'GET', headers: { host: 'evil.example' } });
  assert.equal(m.status, 403);
});

test('other GET paths are 404 and GET on the endpoint is 405', { timeout: TEST_TIMEOUT }, async () => {
  assert.equal((await raw(`${base}/nope`, { method: 'GET' })).status, 404);
  assert.equal((await raw(srv.url, { method: 'GET' })).status, 405);
});

test('per-skill usage in /metrics and skill_server_stats', { timeout: TEST_TIMEOUT }, async () => {
  const names = (await client.callTool({ name: 'list_skills', arguments: {} })).structuredContent.skills;
  const skill = (names[0].qualified_name ?? names[0].name);
  await client.callTool({ name: 'load_skill', arguments: { name: skill } });
  await client.callTool({ name: 'load_skill', arguments: { name: skill, section: 'no such section' } });
  const st = (await client.callTool({ name: 'skill_server_stats', arguments: {} })).structuredContent;
  assert.ok(st.skills[skill].calls >= 2);
  assert.ok(st.skills[skill].errors >= 1);
  const m = (await raw(`${base}/metrics`, { method: 'GET' })).text;
  assert.match(m, new RegExp(`skill_mcp_skill_uses_total\\{skill="${skill.replace('/', '\\/')}",kind="call"\\} [1-9]`));
  assert.match(m, new RegExp(`skill_mcp_skill_uses_total\\{skill="${skill.replace('/', '\\/')}",kind="error"\\} [1-9]`));
});
