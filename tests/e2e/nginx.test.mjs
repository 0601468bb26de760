// nginx in front of 3 skill-mcp instances (docs/deploy.md#deployment-files):
// real nginx (Debian package) with its own config and prefix in a temp dir,
// loopback only; load through it; one instance SIGKILLed mid-run. Checks that
// list/load calls keep succeeding (at most the calls in flight on the killed
// instance fail: "requests failed per kill"), that the killed instance's share
// moves to the other two (per-instance skill_mcp_requests_total from each
// instance's /metrics), and that no process is left. Also prints, as a
// diagnostic only, requests/s through nginx against direct.
//
// Skipped when /usr/sbin/nginx is missing (tests/deps.sh test installs it).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';

import { startServer, modernMeta, MODERN, poll } from './lib/harness.mjs';
import { NGINX, startNginx, stopProxy } from './lib/nginx.mjs';
import { alive } from './lib/procs.mjs';

const CALLS = 300;            // tools/call requests through nginx
const KILL_AT = 150;          // the victim is killed when this many have been sent
const CONCURRENCY = 4;

const servers = [];
let nginx = null;             // lib/nginx.mjs startNginx()

async function stopNginx() {
  if (!nginx) return;
  const pids = await stopProxy(nginx);
  nginx = null;
  return pids;
}

after(async () => {
  try { await stopNginx(); } catch { /* reported by the test */ }
  for (const s of servers) { try { await s.stop(); } catch { /* reported by the test */ } }
});

async function startBalancing(upstreamPorts) {
  nginx = await startNginx((dir, port) => `
    upstream skill_mcp {
${upstreamPorts.map((p) => `        server 127.0.0.1:${p} max_fails=1 fail_timeout=2s;`).join('\n')}
        keepalive 16;
    }
    server {
        listen 127.0.0.1:${port};
        location = /mcp {
            proxy_pass http://skill_mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host localhost;
            proxy_buffering off;
            proxy_read_timeout 700s;
            proxy_next_upstream error timeout;
        }
        location = /healthz {
            proxy_pass http://skill_mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }`);
  return nginx;
}

const agentFor = () => new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

/** One HTTP request; resolves {status, text}. */
function req(url, { method = 'POST', body, headers = {}, agent } = {}) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const r = http.request({ host: u.hostname, port: u.port, path: u.pathname, method, headers, agent, timeout: 10_000 }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    r.on('timeout', () => r.destroy(new Error('timed out')));
    r.on('error', reject);
    if (body !== undefined) r.write(body);
    r.end();
  });
}

/** A modern (stateless) tools/call body and headers. */
function toolCall(i) {
  const name = i % 2 ? 'load_skill' : 'list_skills';
  const args = i % 2 ? { name: 'csv-profile' } : {};
  return {
    body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name, arguments: args, _meta: modernMeta() } }),
    headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name,
    },
  };
}

/** A call succeeded: 200 and a JSON-RPC result that is not a tool error. */
async function callOnce(url, i, agent) {
  try {
    const { body, headers } = toolCall(i);
    const r = await req(url, { body, headers, agent });
    if (r.status !== 200) return `HTTP ${r.status}`;
    const j = JSON.parse(r.text);
    if (!j.result || j.result.isError) return `bad result ${r.text.slice(0, 200)}`;
    return null;
  } catch (e) { return String(e.message || e); }
}

/** tools/call requests counted by an instance's /metrics. */
async function toolCalls(s) {
  const r = await req(`http://127.0.0.1:${s.port}/metrics`, { method: 'GET', headers: { host: 'localhost' } });
  assert.equal(r.status, 200);
  let n = 0;
  for (const m of r.text.matchAll(/^skill_mcp_requests_total\{method="tools\/call"[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

/** Requests/s of `ms` of tools/call load with CONCURRENCY keep-alive connections. */
async function rate(url, ms) {
  const agent = agentFor();
  let n = 0; let errs = 0; const end = Date.now() + ms;
  await Promise.all(Array.from({ length: CONCURRENCY }, async (_, w) => {
    for (let i = w; Date.now() < end; i += CONCURRENCY) { if (await callOnce(url, i, agent)) errs++; n++; }
  }));
  agent.destroy();
  return { rps: n / (ms / 1000), errs };
}

test('nginx load-balances 3 instances and routes around a SIGKILLed one', { timeout: 60_000 }, async () => {
  assert.ok(fs.existsSync(NGINX), `${NGINX} is not installed (tests/deps.sh test installs nginx)`);
  for (let i = 0; i < 3; i++) servers.push(await startServer({ args: ['--threads', '2'] }));
  const { url } = await startBalancing(servers.map((s) => s.port));

  const base = await Promise.all(servers.map(toolCalls));
  const victim = servers[1];
  const survivors = [servers[0], servers[2]];
  const agent = agentFor();
  let sent = 0; let atKill = null; let killed = false;
  const failsBefore = []; const failsAfter = []; let okAfter = 0; let okStartedAfter = 0;
  let killing = null;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (sent < CALLS) {
      const i = sent++;
      if (i === KILL_AT) {
        killing = (async () => {
          // Survivors' counts just before the kill; then SIGKILL with calls in flight.
          atKill = { survivors: await Promise.all(survivors.map(toolCalls)), victim: await toolCalls(victim) };
          process.kill(victim.proc.pid, 'SIGKILL');
          killed = true;
        })();
      }
      // No new call starts while the counters are read and the victim is
      // killed: a call sent then could reach the victim after its snapshot
      // and would be counted nowhere.
      if (killing) await killing;
      const startedAfterKill = killed;
      const err = await callOnce(url, i, agent);
      // Calls that end after the kill began, the ones in flight included.
      const afterKill = killed || killing !== null;
      if (afterKill) { if (err) failsAfter.push(err); else { okAfter++; if (startedAfterKill) okStartedAfter++; } } else if (err) failsBefore.push(err);
    }
  }));
  await killing;
  agent.destroy();
  await poll(() => victim.exited, 10_000, 20);
  assert.ok(victim.exited, 'the victim did not die');

  const end = await Promise.all(survivors.map(toolCalls));
  const shareBefore = atKill.survivors.map((n, k) => n - base[k === 0 ? 0 : 2]);
  const victimBefore = atKill.victim - base[1];
  const shareAfter = end.map((n, k) => n - atKill.survivors[k]);
  console.log(`nginx: before the kill per instance [${shareBefore[0]}, ${victimBefore}, ${shareBefore[1]}]; ` +
    `after it [${shareAfter[0]}, killed, ${shareAfter[1]}]; ${okAfter} ok after the kill (${okStartedAfter} sent after it)`);
  console.log(`nginx: requests failed per kill: ${failsAfter.length}${failsAfter.length ? ` (${[...new Set(failsAfter)].join('; ')})` : ''}`);

  assert.deepEqual(failsBefore, [], 'no call fails before the kill');
  // Only the calls in flight on the dead instance may fail; nginx retries
  // a refused connection (proxy_next_upstream error) on the next instance.
  assert.ok(failsAfter.length <= CONCURRENCY, `at most ${CONCURRENCY} calls may fail per kill, got ${failsAfter.length}: ${failsAfter.join('; ')}`);
  assert.ok(okAfter + failsAfter.length >= CALLS - KILL_AT);
  // Before the kill every instance took a share (round robin).
  assert.ok(victimBefore > 0 && shareBefore.every((n) => n > 0), `round robin over all 3: ${shareBefore} / ${victimBefore}`);
  // Every call sent after the kill was answered by a survivor; besides
  // those, the survivors can only have answered calls that were in flight
  // when the counters were read (at most CONCURRENCY - 1 of them).
  const sum = shareAfter[0] + shareAfter[1];
  assert.ok(sum >= okStartedAfter && sum <= okStartedAfter + CONCURRENCY,
    `survivors answered ${sum}; ${okStartedAfter} calls sent after the kill succeeded (${okAfter} ended after it)`);
  assert.ok(shareAfter.every((n) => n > (CALLS - KILL_AT) / 4), `the killed instance's share moved to both survivors: ${shareAfter}`);

  // Diagnostic only (no assertion on speed): requests/s through nginx against
  // direct to one instance, same client, same concurrency.
  const direct = await rate(survivors[0].url, 1500);
  const proxied = await rate(url, 1500);
  console.log(`nginx-bench: direct ${direct.rps.toFixed(0)} req/s, through nginx (2 upstreams) ${proxied.rps.toFixed(0)} req/s, ` +
    `ratio ${(proxied.rps / direct.rps).toFixed(2)} (${os.cpus().length} cores shared by client, nginx and servers)`);
  assert.equal(direct.errs + proxied.errs, 0, 'benchmark calls fail');

  // Nothing is left running: nginx (master and worker) and the servers.
  const pids = await stopNginx();
  for (const s of survivors) await s.stop();
  const running = () => [...pids, ...servers.map((s) => s.proc.pid)].filter(alive);
  await poll(() => running().length === 0, 10_000, 50);
  const left = running();
  assert.deepEqual(left, [], `processes left running: ${left}`);
});
