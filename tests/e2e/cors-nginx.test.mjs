// The shipped deploy/nginx/skill-mcp.conf under real nginx (Debian package),
// its upstream pointed at one test instance: /.well-known/ and / are served
// through it (byte-identical discovery index), the MCP request headers and a
// browser's Origin reach skill-mcp, and the CORS and WWW-Authenticate
// headers come back. Loopback only; nginx is stopped by its PID.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { MODERN, REPO, addToken, modernMeta, raw, startServer } from './lib/harness.mjs';
import { NGINX, startNginx, stopProxy } from './lib/nginx.mjs';

const ORIGIN = 'https://chat.example.com';
const opts = { timeout: 30_000 };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-cors-nginx-'));
let srv;
let nginx;
let base;
let token;

before(async () => {
  assert.ok(fs.existsSync(NGINX), `${NGINX} is not installed (tests/deps.sh test installs nginx)`);
  const tokens = path.join(dir, 'tokens');
  token = addToken(tokens, 'web');
  srv = await startServer({ args: ['--allowed-origins', ORIGIN, '--auth-tokens', tokens, '--public-index'] });
  // The shipped file, with its three upstream instances replaced by ours.
  let site = fs.readFileSync(path.join(REPO, 'deploy', 'nginx', 'skill-mcp.conf'), 'utf8');
  const servers = site.match(/^\s*server 127\.0\.0\.1:800\d .*;$/gm);
  assert.equal(servers?.length, 3, 'the shipped upstream lists three instances');
  site = site.replace(servers[0], `    server 127.0.0.1:${srv.port};`);
  for (const l of servers.slice(1)) site = site.replace(`${l}\n`, '');
  assert.match(site, /listen 127\.0\.0\.1:8080;/);
  nginx = await startNginx((prefix, port) => {
    fs.writeFileSync(path.join(prefix, 'site.conf'), site.replace('listen 127.0.0.1:8080;', `listen 127.0.0.1:${port};`));
    return `    include ${prefix}/site.conf;`;
  }, { workerConnections: 64 });
  base = nginx.base;
});

after(async () => {
  if (nginx) await stopProxy(nginx);
  await srv?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('nginx serves /.well-known/ (the same bytes) and GET / (HEAD too)', opts, async () => {
  const p = '/.well-known/agent-skills/index.json';
  const via = await raw(`${base}${p}`, { method: 'GET' });
  const direct = await raw(`http://127.0.0.1:${srv.port}${p}`, { method: 'GET' });
  assert.equal(via.status, 200, via.text.slice(0, 300));
  assert.equal(via.text, direct.text);
  const root = await raw(`${base}/`, { method: 'GET' });
  assert.equal(root.status, 200);
  assert.equal(root.json.mcp_endpoint, '/mcp');
  const head = await raw(`${base}/`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.text, '');
});

test('through nginx: preflight, MCP headers in, CORS and WWW-Authenticate out', opts, async () => {
  const pre = await raw(`${base}/mcp`, { method: 'OPTIONS', headers: {
    origin: ORIGIN, 'access-control-request-method': 'POST',
    'access-control-request-headers': 'content-type,mcp-protocol-version,mcp-method,mcp-name,authorization',
  } });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers['access-control-allow-origin'], ORIGIN);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'list_skills', arguments: {}, _meta: modernMeta() } });
  // The 2026-07-28 era refuses a request whose MCP-Protocol-Version,
  // Mcp-Method and Mcp-Name headers do not match the body: a 200 means they
  // arrived.
  const headers = { origin: ORIGIN, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'list_skills' };
  const ok = await raw(`${base}/mcp`, { headers: { ...headers, authorization: `Bearer ${token}` }, body });
  assert.equal(ok.status, 200, ok.text.slice(0, 300));
  assert.ok(ok.json.result.structuredContent.skills.length > 0);
  assert.equal(ok.headers['access-control-allow-origin'], ORIGIN);
  const no = await raw(`${base}/mcp`, { headers, body });
  assert.equal(no.status, 401);
  assert.match(String(no.headers['www-authenticate']), /^Bearer/);
  assert.equal(no.headers['access-control-allow-origin'], ORIGIN);
  assert.match(String(no.headers['access-control-expose-headers']), /WWW-Authenticate/);
});
