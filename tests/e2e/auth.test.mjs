// --auth-tokens: bearer tokens checked against SHA-256 hashes in a file,
// per-client rate limits (429 + Retry-After + RateLimit-*), a per-client
// script cap, revocation by editing the file, and a start that fails closed.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { BIN, E2E_DIR, TEST_TIMEOUT, addToken, poll, post, runCli, startServer } from './lib/harness.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-auth-'));
const file = path.join(dir, 'tokens');
let srv;
let alice;
let bob;

function newToken(name, rpm) {
  const token = addToken(file, name, { rpm });
  assert.match(token, /^smcp_/);
  return token;
}

before(async () => {
  alice = newToken('alice');
  bob = newToken('bob', 3);
  srv = await startServer({
    skillsDirs: [path.join(E2E_DIR, 'fixtures', 'runner-skills')],
    args: ['--auth-tokens', file, '--max-scripts-per-client', '1', '--max-script-concurrency', '4'],
  });
});
after(async () => {
  await srv?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const ping = { jsonrpc: '2.0', id: 1, method: 'ping', params: {} };

test('the token file keeps hashes only, mode 0600', { timeout: TEST_TIMEOUT }, () => {
  const text = fs.readFileSync(file, 'utf8');
  assert.ok(!text.includes(alice) && !text.includes(bob), 'no token in clear');
  assert.match(text, /^alice [0-9a-f]{64}$/m);
  assert.match(text, /^bob [0-9a-f]{64} 3$/m);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  assert.notEqual(runCli(["token", "add", "alice", "--file", file]).code, 0, "duplicate refused");
});

test('no token or a wrong one: 401 with WWW-Authenticate', { timeout: TEST_TIMEOUT }, async () => {
  const none = await post(srv.url, ping);
  assert.equal(none.status, 401);
  assert.match(none.headers['www-authenticate'], /^Bearer realm="skill-mcp"/);
  const wrong = await post(srv.url, ping, { authorization: 'Bearer smcp_nope' });
  assert.equal(wrong.status, 401);
  assert.match(wrong.headers['www-authenticate'], /error="invalid_token"/);
  const basic = await post(srv.url, ping, { authorization: `Basic ${alice}` });
  assert.equal(basic.status, 401);
});

test('the official SDK client connects with its token', { timeout: TEST_TIMEOUT }, async () => {
  const client = new Client({ name: 'auth-e2e', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), {
    requestInit: { headers: { authorization: `Bearer ${alice}` } },
  }));
  const r = await client.callTool({ name: 'list_skills', arguments: {} });
  assert.ok(r.structuredContent.total > 0);
  await client.close();
});

test('rpm: the 4th request in a minute gets 429 with Retry-After and RateLimit-*', { timeout: TEST_TIMEOUT }, async () => {
  const h = { authorization: `Bearer ${bob}` };
  const ok = [];
  for (let i = 0; i < 3; i++) ok.push(await post(srv.url, ping, h));
  for (const r of ok) assert.equal(r.status, 200);
  assert.equal(ok[0].headers['ratelimit-limit'], '3');
  assert.equal(ok[2].headers['ratelimit-remaining'], '0');
  const limited = await post(srv.url, ping, h);
  assert.equal(limited.status, 429);
  assert.ok(Number(limited.headers['retry-after']) >= 1);
  // alice has no rpm: not limited, and not slowed by bob
  const a = await post(srv.url, ping, { authorization: `Bearer ${alice}` });
  assert.equal(a.status, 200);
  assert.equal(a.headers['ratelimit-limit'], undefined);
});

test('one client cannot take every script slot', { timeout: TEST_TIMEOUT }, async () => {
  const h = { authorization: `Bearer ${alice}` };
  const call = () => post(srv.url, { jsonrpc: '2.0', id: 2, method: 'tools/call',
    params: { name: 'run_skill_script', arguments: { name: 'runner-basics', script: 'scripts/sleep.py', args: ['1'] } } }, h);
  const [a, b] = await Promise.all([call(), call()]);
  const st = [a, b].map((r) => r.json.result.structuredContent.status).sort();
  assert.deepEqual(st, ['busy', 'ok'], 'the second call of the same client is busy');
  const busy = [a, b].find((r) => r.json.result.structuredContent.status === 'busy');
  assert.equal(busy.json.result.isError, true);
  assert.match(busy.json.result.structuredContent.hint, /max-scripts-per-client/);
  // and the slot comes back
  const again = await call();
  assert.equal(again.json.result.structuredContent.status, 'ok');
});

test('revoking a client in the file takes effect without a restart', { timeout: TEST_TIMEOUT }, async () => {
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => !l.startsWith('alice '));
  fs.writeFileSync(file, lines.join('\n'));
  const gone = await poll(async () => (await post(srv.url, ping, { authorization: `Bearer ${alice}` })).status === 401, 6000, 200);
  assert.ok(gone, 'alice is refused within a few seconds');
});

test('a malformed token file stops the start with a clear message', { timeout: TEST_TIMEOUT }, () => {
  const bad = path.join(dir, 'bad');
  fs.writeFileSync(bad, 'carol not-a-hash\n');
  const r = runCli(['--auth-tokens', bad, '--port', '0', '--skills', E2E_DIR]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /bad:1: .*64 hex digits/);
  void BIN;
});
