// Session affinity for --stateful behind a balancer (docs/deploy.md#sessions---stateful):
// two --stateful instances behind real HAProxy and real nginx, configured with
// the commented --stateful lines of the shipped deploy/ files (uncommented
// here), so the files say what works. Every request of every session must
// reach the instance that minted it, and new sessions must spread over both.
// A control run shows why hashing the request's Mcp-Session-Id alone is not
// affinity: the initialize that mints an id carries none.
//
// Skipped when /usr/sbin/nginx or /usr/sbin/haproxy is missing
// (tests/deps.sh test installs both).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO, TEST_TIMEOUT, freePort, post, raw, startServer } from './lib/harness.mjs';
import { HAPROXY, NGINX, startNginx, startProxy, stopProxy } from './lib/nginx.mjs';

const SESSIONS = 20;
const INIT = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'affinity', version: '1' } },
};
const V = { 'mcp-protocol-version': '2025-11-25' };

const servers = [];
const procs = [];             // balancers we started: { proc, dir }

/** The commented lines of a shipped deploy file that match re, uncommented. */
function shippedLines(file, re) {
  const text = fs.readFileSync(path.join(REPO, 'deploy', file), 'utf8');
  const lines = text.split('\n').map((l) => l.replace(/^\s*#\s?/, '')).filter((l) => re.test(l));
  assert.ok(lines.length > 0, `deploy/${file} has no commented ${re} lines`);
  return lines.map((l) => l.trim());
}

async function nginxWith(upstreamLines) {
  const p = await startNginx((dir, port) => `
    upstream skill_mcp {
        ${upstreamLines.join('\n        ')}
${servers.map((s) => `        server 127.0.0.1:${s.port};`).join('\n')}
        keepalive 16;
    }
    server {
        listen 127.0.0.1:${port};
        location / {
            proxy_pass http://skill_mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host localhost;
            proxy_buffering off;
        }
    }`);
  procs.push(p);
  return p;
}

async function haproxyWith(backendLines) {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-affinity-'));
  const cfg = `
global
    log stderr format raw local0 err
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend mcp
    bind 127.0.0.1:${port}
    http-request set-header Host localhost
    default_backend skill_mcp
backend skill_mcp
    balance roundrobin
    ${backendLines.join('\n    ')}
${servers.map((s, i) => `    server s${i} 127.0.0.1:${s.port}`).join('\n')}
`;
  fs.writeFileSync(path.join(dir, 'haproxy.cfg'), cfg);
  const p = await startProxy(HAPROXY, ['-f', path.join(dir, 'haproxy.cfg')], dir, port);
  procs.push(p);
  return p;
}

async function created() {
  const out = [];
  for (const s of servers) {
    const m = await raw(`http://127.0.0.1:${s.port}/metrics`, { method: 'GET' });
    out.push(Number(/skill_mcp_sessions_total\{event="created"\} (\d+)/.exec(m.text)[1]));
  }
  return out;
}

/** SESSIONS sessions through url, each with 3 pings; returns {missed, perInstance}. */
async function drive(url) {
  const before0 = await created();
  let missed = 0;
  for (let i = 0; i < SESSIONS; i++) {
    const r = await post(url, INIT);
    assert.equal(r.status, 200);
    const sid = r.headers['mcp-session-id'];
    assert.match(sid ?? '', /^[0-9a-f]{32}$/);
    for (let k = 0; k < 3; k++) {
      const p = await post(url, { jsonrpc: '2.0', id: 2 + k, method: 'ping' }, { ...V, 'mcp-session-id': sid });
      if (p.status !== 200) { assert.equal(p.status, 404); missed++; }
    }
  }
  const after0 = await created();
  return { missed, perInstance: after0.map((n, i) => n - before0[i]) };
}

before(async () => {
  const missing = [NGINX, HAPROXY].filter((b) => !fs.existsSync(b));
  assert.deepEqual(missing, [], `${missing.join(', ')} not installed (tests/deps.sh test installs them)`);
  for (let i = 0; i < 2; i++) servers.push(await startServer({ args: ['--stateful'] }));
});
after(async () => {
  for (const p of procs) { try { await stopProxy(p); } catch { /* reported by the test */ } }
  for (const s of servers) await s.stop();
});

test('HAProxy with the shipped stick-table lines keeps every session on its instance',
  { timeout: TEST_TIMEOUT * 2 }, async () => {
    const lines = shippedLines('haproxy/skill-mcp.cfg', /^stick/);
    assert.equal(lines.length, 3);
    const h = await haproxyWith(lines);
    const { missed, perInstance } = await drive(h.url);
    assert.equal(missed, 0, 'no request of a session reached the other instance');
    assert.ok(perInstance.every((n) => n > 0), `new sessions spread: ${perInstance}`);
    assert.equal(perInstance.reduce((a, b) => a + b), SESSIONS);
  });

test('nginx with the shipped affinity line keeps every session on its instance',
  { timeout: TEST_TIMEOUT * 2 }, async () => {
    const lines = shippedLines('nginx/skill-mcp.conf', /^hash /);
    assert.deepEqual(lines, ['hash $binary_remote_addr consistent;']);
    const n = await nginxWith(lines);
    const { missed, perInstance } = await drive(n.url);
    assert.equal(missed, 0);
    // One client address: all its sessions on one instance, by design.
    assert.deepEqual(perInstance.slice().sort(), [0, SESSIONS]);
  });

test('control: hashing the request Mcp-Session-Id alone sends sessions astray',
  { timeout: TEST_TIMEOUT * 2 }, async () => {
    const n = await nginxWith(['hash $http_mcp_session_id consistent;']);
    const { missed } = await drive(n.url);
    // Each session's id hashes to either instance, whichever minted it: with
    // 20 sessions, all landing right by chance is about one in a million.
    assert.ok(missed > 0, 'some session requests must reach an instance that does not know them');
  });
