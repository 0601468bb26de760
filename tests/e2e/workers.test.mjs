// Multi-worker deployment (docs/operations.md): --workers N under a
// supervising master that shares one listening socket, restarts crashed
// workers, forwards SIGHUP and drains every worker on SIGTERM; instance-wide
// counters and script cap in shared memory; graceful drain up to
// --shutdown-timeout, also in a single process.
//
// Each test starts its own server over a temp copy of fixtures/worker-skills
// (worker-hold: a script that sleeps with a marked child process;
// worker-notes: a plain skill the convergence test rewrites). Requests that
// must spread over the workers go on fresh connections (Connection: close),
// so the kernel hands each to whichever worker accepts it.
//
// Linux only: processes are inspected through /proc.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { startServer, E2E_DIR, poll } from './lib/harness.mjs';
import { alive, childPids, sleep } from './lib/procs.mjs';

const WORKER_FIXTURES = path.join(E2E_DIR, 'fixtures', 'worker-skills');
const opts = { timeout: 25_000 };
const PROTO = '2025-11-25';

// ---- processes (/proc) ------------------------------------------------------------

/** Live processes whose command line contains marker. */
function procsWith(marker) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(marker) && alive(Number(d))) out.push({ pid: Number(d), cmd });
    } catch { /* gone */ }
  }
  return out;
}

// Observations of one test that a regression test below checks.
let firstRestartGapMs = NaN;
let shutdownAnswer;

// ---- servers ---------------------------------------------------------------------

const started = new Set();
const everyWorker = new Set();   // every worker pid seen, for the last-resort cleanup

/** A server over a copy of fixtures/worker-skills. */
async function startW({ args = [], refresh = 0, setup } = {}) {
  const s = await startServer({
    refresh,
    args,
    fixtures: WORKER_FIXTURES,
    setup,
  });
  started.add(s);
  s.master = s.proc.pid;
  return s;
}

/** Workers of s (children of the master), remembered for cleanup. */
function workers(s) {
  const w = childPids(s.master);
  for (const p of w) everyWorker.add(p);
  return w;
}

/** Resolves with {code, signal} once the master exits, or null after ms. */
function waitExit(s, ms) {
  if (s.exited) return Promise.resolve(s.exited);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(null), ms);
    s.proc.once('exit', (code, signal) => { clearTimeout(t); resolve({ code, signal }); });
  });
}

async function stopAll(s) {
  if (!s) return;
  const w = s.exited ? [] : workers(s);
  started.delete(s);
  await s.stop();
  // The harness signals only the master; a worker must not outlive it.
  const left = await poll(() => w.every((p) => !alive(p)) || null, 3000, 50);
  for (const p of w) if (alive(p)) { try { process.kill(p, 'SIGKILL'); } catch { /* gone */ } }
  assert.ok(left, `workers ${w.filter(alive).join(', ')} outlived their master`);
}

after(async () => {
  for (const s of [...started]) { try { await s.stop(); } catch { /* reported by its test */ } }
  for (const p of everyWorker) if (alive(p)) { try { process.kill(p, 'SIGKILL'); } catch { /* gone */ } }
});

// ---- HTTP ------------------------------------------------------------------------

/**
 * One request on a connection of its own (no agent, Connection: close), or on
 * opts.agent. Resolves {status, text, json}; rejects on a connection error.
 */
function request(port, { method = 'POST', path: p = '/mcp', body, agent, timeout = 15_000 } = {}) {
  return new Promise((resolve, reject) => {
    const headers = { host: `127.0.0.1:${port}` };
    if (!agent) headers.connection = 'close';
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers.accept = 'application/json, text/event-stream';
      headers['mcp-protocol-version'] = PROTO;
    }
    const req = http.request({ host: '127.0.0.1', port, path: p, method, headers, agent: agent ?? false, timeout },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json;
          try { json = JSON.parse(text); } catch { json = undefined; }
          resolve({ status: res.statusCode, text, json });
        });
        res.on('error', reject);
      });
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    if (body !== undefined) req.write(typeof body === 'string' ? body : JSON.stringify(body));
    req.end();
  });
}

let rpcId = 0;
/** tools/call on a fresh connection; returns structuredContent (asserts a non-error result). */
async function tool(port, name, args = {}, { retry = false, allowError = false } = {}) {
  const body = { jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name, arguments: args } };
  let r;
  try {
    r = await request(port, { body });
  } catch (e) {
    if (!retry) throw e;
    r = await request(port, { body });   // the first try may have hit a dying worker
  }
  assert.equal(r.status, 200, `${name}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  const res = r.json?.result;
  assert.ok(res?.structuredContent, `${name}: no structuredContent: ${r.text.slice(0, 300)}`);
  if (!allowError) assert.notEqual(res.isError, true, `${name} failed: ${r.text.slice(0, 400)}`);
  return res.structuredContent;
}

const listSkills = (port, o) => tool(port, 'list_skills', {}, o).then((r) => r.skills);
const runHold = (port, secs, marker) =>
  tool(port, 'run_skill_script', { name: 'worker-hold', script: 'scripts/hold.py', args: [String(secs), marker] },
    { allowError: true });

/** /metrics as a lookup: metric(text, 'name{labels}') -> number (0 when absent). */
async function scrape(port) {
  const r = await request(port, { method: 'GET', path: '/metrics' });
  assert.equal(r.status, 200, `/metrics: HTTP ${r.status}`);
  return r.text;
}
function metric(text, line) {
  const m = text.split('\n').find((l) => l.startsWith(line + ' '));
  return m ? Number(m.slice(line.length + 1)) : 0;
}
const TOOLS_CALL_200 = 'skill_mcp_requests_total{method="tools/call",status="200"}';

// ---- tests -------------------------------------------------------------------------

test('--workers 3: three workers under the master; counters and /metrics are instance-wide', opts, async () => {
  const s = await startW({ args: ['--workers', '3'] });
  try {
    assert.match(s.log, /master skill-mcp .* listening on .*\(3 worker\(s\) x \d+ threads/);
    const w = await poll(() => { const x = workers(s); return x.length === 3 ? x : null; }, 3000, 50);
    assert.ok(w, `expected 3 workers under master ${s.master}, found ${childPids(s.master)}`);

    let toolCalls = 0;
    let lsCalls = 0;
    for (let batch = 0; batch < 3; batch++) {
      for (let i = 0; i < 10; i++) {
        const skills = await listSkills(s.port);
        assert.ok(skills.some((k) => k.name === 'worker-notes'), 'list_skills lists the fixture');
        toolCalls++; lsCalls++;
      }
      // Requests are counted once answered, so a scrape may race the last
      // answer by a moment: poll until every scrape (from whichever worker
      // answers) agrees with what was made.
      for (let k = 0; k < 4; k++) {
        let text = '';
        const ok = await poll(async () => {
          text = await scrape(s.port);
          return metric(text, TOOLS_CALL_200) === toolCalls &&
            metric(text, 'skill_mcp_tool_calls_total{tool="list_skills",outcome="ok"}') === lsCalls;
        }, 2000, 20);
        assert.ok(ok, `after ${toolCalls} tools/call (${lsCalls} list_skills) /metrics says ` +
          `${metric(text, TOOLS_CALL_200)} tools/call and ` +
          `${metric(text, 'skill_mcp_tool_calls_total{tool="list_skills",outcome="ok"}')} list_skills`);
      }
    }
    for (let k = 0; k < 6; k++) {
      const st = await tool(s.port, 'skill_server_stats');
      toolCalls++;
      assert.equal(st.tools.list_skills.calls, lsCalls, 'skill_server_stats counts list_skills instance-wide');
      assert.equal(st.tools.skill_server_stats.calls >= k, true);
    }
    // The answers came from more than one worker (each logs its requests under its tag).
    const tags = new Set([...s.log.matchAll(/ (w\d) tools\/call tool=list_skills/g)].map((m) => m[1]));
    assert.ok(tags.size >= 2, `30 fresh connections were all answered by ${[...tags]}; expected several workers`);
  } finally {
    await stopAll(s);
  }
});

test('a SIGKILLed worker is restarted and the server keeps answering', opts, async () => {
  const s = await startW({ args: ['--workers', '2'] });
  try {
    const before = await poll(() => { const x = workers(s); return x.length === 2 ? x : null; }, 3000, 50);
    assert.ok(before, 'two workers');
    const victim = before[0];
    process.kill(victim, 'SIGKILL');
    const t0 = Date.now();
    let replaced = null;
    let answered = 0;
    while (Date.now() - t0 < 6000) {
      const skills = await listSkills(s.port, { retry: true });
      assert.ok(skills.length > 0);
      answered++;
      const now = workers(s);
      if (now.length === 2 && !now.includes(victim)) { replaced = now; break; }
      await sleep(50);
    }
    assert.ok(replaced, `no new worker within 6 s (children now: ${childPids(s.master)}); log:\n${s.log}`);
    const took = Date.now() - t0;
    assert.ok(took < 5000, `the worker came back after ${took} ms`);
    assert.ok(answered > 0);
    assert.match(s.log, new RegExp(`master worker \\d \\(pid ${victim}\\) killed by signal 9`));
    // The master logs the restart just after the fork: the new pid can show up first.
    assert.ok(await poll(() => /master worker \d restarted \(pid \d+\)/.test(s.log), 2000, 20),
      `no restart line in the log:\n${s.log}`);
    const at = (re) => Date.parse(re.exec(s.log)?.[1]);
    firstRestartGapMs = at(/(\S+) info  master worker \d restarted/) -
      at(/(\S+) error master worker \d \(pid \d+\) killed by signal 9/);
    for (let i = 0; i < 10; i++) assert.ok((await listSkills(s.port)).length > 0);
  } finally {
    await stopAll(s);
  }
});

test('SIGHUP to the master reaches every worker', opts, async () => {
  const s = await startW({ args: ['--workers', '3'], refresh: 0 });
  try {
    assert.ok(await poll(() => workers(s).length === 3, 3000, 50), 'three workers');
    // Every worker has its index (and no timer): the new skill is unknown everywhere.
    for (let i = 0; i < 10; i++) {
      assert.ok(!(await listSkills(s.port)).some((k) => k.name === 'worker-late'));
    }
    fs.mkdirSync(path.join(s.skills, 'worker-late'));
    fs.writeFileSync(path.join(s.skills, 'worker-late', 'SKILL.md'),
      '---\nname: worker-late\ndescription: Added while the server runs.\n---\n\n# Late\n');
    process.kill(s.master, 'SIGHUP');
    // Poll until 20 answers in a row (fresh connections) all include it.
    let streak = 0;
    const ok = await poll(async () => {
      const has = (await listSkills(s.port)).some((k) => k.name === 'worker-late');
      streak = has ? streak + 1 : 0;
      return streak >= 20;
    }, 5000, 0);
    assert.ok(ok, `worker-late not served by every worker within 5 s; log:\n${s.log}`);
    // Logged before each rescan, but stderr and the answers reach this
    // process in either order.
    const logged = ['master SIGHUP: forwarded to 3 workers', 'w0 SIGHUP: rescanning skills',
      'w1 SIGHUP: rescanning skills', 'w2 SIGHUP: rescanning skills'];
    assert.ok(await poll(() => logged.every((l) => s.log.includes(l)), 5000, 20), s.log);
  } finally {
    await stopAll(s);
  }
});

test('workers converge on an edit within one --refresh-interval, without SIGHUP', opts, async () => {
  const s = await startW({ args: ['--workers', '2'], refresh: 1 });
  try {
    assert.ok(await poll(() => workers(s).length === 2, 3000, 50), 'two workers');
    const desc = async () => (await listSkills(s.port)).find((k) => k.name === 'worker-notes')?.description;
    assert.equal(await desc(), 'Notes fixture, version one.');
    const file = path.join(s.skills, 'worker-notes', 'SKILL.md');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('version one', 'version two'));
    const t0 = Date.now();
    let streak = 0;
    const ok = await poll(async () => {
      streak = (await desc()) === 'Notes fixture, version two.' ? streak + 1 : 0;
      return streak >= 20;
    }, 4000, 0);
    assert.ok(ok, 'every worker serves the new description within ~3 s');
    assert.ok(Date.now() - t0 < 4000);
  } finally {
    await stopAll(s);
  }
});

/**
 * Keep-alive connections, one per agent, each opened with an MCP request
 * (the server closes the connection after /healthz and /readyz, so those
 * cannot open one).
 */
async function keepAliveProbes(port, n) {
  const agents = [];
  for (let i = 0; i < n; i++) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const r = await request(port, {
      agent, body: { jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name: 'list_skills', arguments: {} } },
    });
    assert.equal(r.status, 200);
    agents.push(agent);
  }
  return agents;
}
/** /readyz again over each agent: 'status text' or 'error CODE'. */
async function probeAgain(port, agents) {
  return Promise.all(agents.map((agent) =>
    request(port, { method: 'GET', path: '/readyz', agent, timeout: 2000 })
      .then((r) => `${r.status} ${r.text.trim()}`, (e) => `error ${e.code ?? e.message}`)));
}

test('SIGTERM drains: a running script completes, /readyz says 503, the master exits 0', opts, async (t) => {
  const s = await startW({ args: ['--workers', '2'] });
  const marker = `drain-${process.pid}-${Date.now()}`;
  let agents = [];
  try {
    const w = await poll(() => { const x = workers(s); return x.length === 2 ? x : null; }, 3000, 50);
    assert.ok(w, 'two workers');
    agents = await keepAliveProbes(s.port, 4);
    const t0 = Date.now();
    const callP = runHold(s.port, 2, marker);
    assert.ok(await poll(() => procsWith(`hold.py 2 ${marker}`).length > 0, 3000, 20), 'the script started');
    process.kill(s.master, 'SIGTERM');
    // Probe once both workers have begun to drain (a worker logs that line
    // after /readyz turns 503), not after a fixed nap: under load a worker
    // may take longer than any nap to be scheduled.
    const drainLines = () => new Set([...s.log.matchAll(/ (w\d) SIGTERM: draining/g)].map((m) => m[1])).size;
    assert.ok(await poll(() => drainLines() === 2, 5000, 10), `both workers drain; log:\n${s.log}`);
    const probes = await probeAgain(s.port, agents);
    t.diagnostic(`/readyz over kept-alive connections during the drain: ${probes.join(', ')}`);
    // A connection held by a worker that has no request in flight closes as
    // soon as that worker has drained; one held by the worker running the
    // script is still served, and must say 503.
    for (const p of probes) {
      assert.ok(/^503 draining$/.test(p) || /^error /.test(p), `/readyz during the drain: ${p}`);
    }
    const r = await callP;
    assert.equal(r.status, 'ok', `the in-flight call finishes: ${JSON.stringify(r)}`);
    assert.match(r.stdout, /held 2/);
    const ex = await waitExit(s, 5000);
    assert.ok(ex, 'the master exits within a few seconds of the script');
    assert.deepEqual(ex, { code: 0, signal: null });
    assert.ok(Date.now() - t0 < 2000 + 5000);
    assert.ok(await poll(() => w.every((p) => !alive(p)), 2000, 50), 'no worker left');
    assert.deepEqual(procsWith(marker), [], 'no script process left');
    assert.match(s.log, /master SIGTERM: draining 2 workers/);
    assert.match(s.log, /w\d SIGTERM: draining \(up to 30s\)/);
  } finally {
    for (const a of agents) a.destroy();
    await stopAll(s);
  }
});

test('--shutdown-timeout 1 stops a long script: the master exits within seconds, nothing left', opts, async (t) => {
  const s = await startW({ args: ['--workers', '2', '--shutdown-timeout', '1'] });
  const marker = `cut-${process.pid}-${Date.now()}`;
  try {
    const w = await poll(() => { const x = workers(s); return x.length === 2 ? x : null; }, 3000, 50);
    assert.ok(w, 'two workers');
    const callP = runHold(s.port, 10, marker).then((r) => ({ answer: r }), (e) => ({ error: e }));
    const procs = await poll(() => { const p = procsWith(marker); return p.length >= 2 ? p : null; }, 3000, 20);
    assert.ok(procs, 'the script and its child are running');
    const t0 = Date.now();
    process.kill(s.master, 'SIGTERM');
    const ex = await waitExit(s, 6000);
    const took = Date.now() - t0;
    assert.ok(ex, 'the master exits within 6 s');
    assert.deepEqual(ex, { code: 0, signal: null });
    assert.ok(took >= 900, `the drain waited for --shutdown-timeout (took ${took} ms)`);
    const out = await callP;
    t.diagnostic(`master exited ${took} ms after SIGTERM; the in-flight call got ` +
      (out.answer ? `an answer: status ${out.answer.status}, signal ${out.answer.signal}, hint "${out.answer.hint}"`
        : `a connection error: ${out.error?.code ?? out.error}`));
    // Observed: the call is answered (HTTP 200, a tool result) with the script
    // stopped by SIGTERM; a closed connection is accepted too.
    if (out.answer) {
      assert.notEqual(out.answer.status, 'ok');
      assert.equal(out.answer.exit_code, null);
      assert.equal(out.answer.signal, 'SIGTERM');
    } else {
      assert.match(String(out.error?.code ?? out.error), /ECONNRESET|socket hang up|EPIPE/);
    }
    assert.ok(await poll(() => w.every((p) => !alive(p)), 2000, 50), 'no worker left');
    assert.deepEqual(procsWith(marker), [], 'the script and its child are gone');
    assert.match(s.log, /w\d 1 request\(s\) still in flight; stopping them/);
    shutdownAnswer = out.answer ?? null;
  } finally {
    await stopAll(s);
  }
});

test('the script cap holds for the whole instance, across workers', opts, async (t) => {
  const s = await startW({
    args: ['--workers', '2', '--max-script-concurrency', '2', '--script-queue-timeout', '30'],
  });
  try {
    assert.ok(await poll(() => workers(s).length === 2, 3000, 50), 'two workers');
    // The kernel gives a burst of connections on a shared socket to whichever
    // worker wakes first, often all to one: calls are started 100 ms apart,
    // and the burst is repeated (up to 3 times) until both workers ran scripts.
    let okRuns = 0;
    for (let burst = 1; ; burst++) {
      const logFrom = s.log.length;
      let maxLive = 0;
      let samples = 0;
      let done = false;
      const sampler = (async () => {
        while (!done) {
          try {
            const st = await tool(s.port, 'skill_server_stats');
            maxLive = Math.max(maxLive, st.scripts.live);
            samples++;
            assert.equal(st.scripts.max_concurrency, 2);
          } catch (e) {
            if (e instanceof assert.AssertionError) throw e;
          }
          await sleep(50);
        }
      })();
      const t0 = Date.now();
      const marker = `cap-${process.pid}-${Date.now()}`;
      const calls = [];
      for (let i = 0; i < 6; i++) {
        calls.push(runHold(s.port, 1, `${marker}-${i}`));
        await sleep(100);
      }
      const results = await Promise.all(calls);
      const took = Date.now() - t0;
      done = true;
      await sampler;
      for (const r of results) assert.equal(r.status, 'ok', JSON.stringify(r).slice(0, 300));
      okRuns += 6;
      assert.ok(samples >= 10, `only ${samples} samples`);
      assert.ok(maxLive >= 1 && maxLive <= 2, `burst ${burst}: scripts.live peaked at ${maxLive} (cap 2)`);
      assert.ok(took >= 2900, `burst ${burst}: 6 one-second scripts on 2 slots took only ${took} ms`);
      const tags = new Set([...s.log.slice(logFrom).matchAll(/ (w\d) run r-\S+ worker-hold\/scripts\/hold\.py: ok/g)]
        .map((m) => m[1]));
      t.diagnostic(`burst ${burst}: ${took} ms, live peaked at ${maxLive} over ${samples} samples, scripts ran on ${[...tags].sort()}`);
      if (tags.size === 2) break;
      assert.ok(burst < 3, `three bursts all ran on one worker (${[...tags]}); the cap was not tested across workers`);
    }
    const m = await scrape(s.port);
    assert.equal(metric(m, 'skill_mcp_scripts_total{outcome="ok"}'), okRuns);
    assert.equal(metric(m, 'skill_mcp_scripts_live'), 0);
    assert.equal(metric(m, 'skill_mcp_scripts_queued'), 0);
  } finally {
    await stopAll(s);
  }
});

test('a single process (--workers 1, the default) drains the same way', opts, async () => {
  const s = await startW();
  const marker = `single-${process.pid}-${Date.now()}`;
  let agents = [];
  try {
    assert.match(s.log, /listening on .*\(1 worker\(s\) x \d+ threads/);
    assert.deepEqual(childPids(s.master), [], 'no worker processes');
    agents = await keepAliveProbes(s.port, 1);
    const callP = runHold(s.port, 1.5, marker);
    assert.ok(await poll(() => procsWith(`hold.py 1.5 ${marker}`).length > 0, 3000, 20), 'the script started');
    const t0 = Date.now();
    process.kill(s.master, 'SIGTERM');
    await sleep(150);
    // One process: the kept-alive connection is served by the draining server.
    assert.deepEqual(await probeAgain(s.port, agents), ['503 draining']);
    // The listening socket is closed: a new connection is refused.
    await assert.rejects(request(s.port, { method: 'GET', path: '/healthz', timeout: 2000 }),
      (e) => e.code === 'ECONNREFUSED');
    const r = await callP;
    assert.equal(r.status, 'ok');
    const ex = await waitExit(s, 5000);
    assert.deepEqual(ex, { code: 0, signal: null });
    assert.ok(Date.now() - t0 < 1500 + 4000);
    assert.deepEqual(procsWith(marker), []);
    assert.match(s.log, /SIGTERM: draining \(up to 30s\)/);
  } finally {
    for (const a of agents) a.destroy();
    await stopAll(s);
  }
});

// ---- regressions: each of these once failed ------------------------------------------

test('during a --workers drain a new connection is refused, not left hanging', {
  ...opts,
  timeout: 60_000,
}, async () => {
  const s = await startW({ args: ['--workers', '2'] });
  const marker = `hang-${process.pid}-${Date.now()}`;
  try {
    assert.ok(await poll(() => workers(s).length === 2, 3000, 50), 'two workers');
    const callP = runHold(s.port, 2, marker);
    assert.ok(await poll(() => procsWith(marker).length > 0, 3000, 20), 'the script started');
    process.kill(s.master, 'SIGTERM');
    await sleep(200);
    const t0 = Date.now();
    const got = await request(s.port, { method: 'GET', path: '/readyz', timeout: 1000 })
      .then((r) => `${r.status}`, (e) => `error ${e.code ?? e.message}`);
    await callP;
    assert.ok(got === 'error ECONNREFUSED' || got === '503',
      `a new connection during the drain got "${got}" after ${Date.now() - t0} ms`);
  } finally {
    await stopAll(s);
  }
});

test('a worker killed while its script runs frees the slot and takes the script down', {
  ...opts,
  timeout: 60_000,
}, async () => {
  const s = await startW({
    args: ['--workers', '2', '--max-script-concurrency', '1', '--script-queue-timeout', '3'],
  });
  const marker = `orphan-${process.pid}-${Date.now()}`;
  try {
    assert.ok(await poll(() => workers(s).length === 2, 3000, 50), 'two workers');
    const callP = runHold(s.port, 4, marker).catch(() => null);
    const script = await poll(() => procsWith(`hold.py 4 ${marker}`)[0], 3000, 20);
    assert.ok(script, 'the script started');
    const stat = fs.readFileSync(`/proc/${script.pid}/stat`, 'utf8');
    const owner = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    assert.ok(workers(s).includes(owner), 'the script is a worker\'s child');
    process.kill(owner, 'SIGKILL');
    await callP;   // the connection drops with the worker
    const gone = await poll(() => procsWith(marker).length === 0, 1500, 50);
    // Let the orphan finish either way, then the cap must be free again.
    await poll(() => procsWith(marker).length === 0, 8000, 100);
    const r = await runHold(s.port, 0.1, `${marker}-after`);
    assert.ok(gone, 'the dead worker\'s script (and its child) must be stopped with it');
    assert.equal(r.status, 'ok', `after the worker died the cap is still taken: ${r.status}`);
  } finally {
    for (const p of procsWith(marker)) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }
    await stopAll(s);
  }
});

test('the first restart of a crashed worker waits 1 s (backoff starts at 1 s)', {
  timeout: 60_000,
}, () => {
  assert.ok(Number.isFinite(firstRestartGapMs), 'needs the restart test\'s log');
  assert.ok(firstRestartGapMs < 1500, `the first restart came ${firstRestartGapMs} ms after the crash`);
});

test('a script stopped by --shutdown-timeout says so (not "reached its ceiling")', {
  timeout: 60_000,
}, () => {
  assert.ok(shutdownAnswer, 'needs the --shutdown-timeout test\'s answer');
  assert.match(shutdownAnswer.hint, /shut|stop|drain/i,
    `status ${shutdownAnswer.status}, hint: ${shutdownAnswer.hint}`);
  assert.doesNotMatch(shutdownAnswer.hint, /ceiling/);
});

test('SIGTERM to the whole process group (Ctrl-C, systemd KillMode=control-group) still drains', {
  ...opts,
  timeout: 60_000,
}, async () => {
  const s = await startW({ args: ['--workers', '2'] });
  const marker = `group-${process.pid}-${Date.now()}`;
  try {
    const w = await poll(() => { const x = workers(s); return x.length === 2 ? x : null; }, 3000, 50);
    assert.ok(w, 'two workers');
    const callP = runHold(s.port, 1.5, marker);
    assert.ok(await poll(() => procsWith(marker).length > 0, 3000, 20), 'the script started');
    // As a tty's Ctrl-C or systemd would: every process gets the signal (the
    // workers a moment before the master here, so the two never coalesce).
    for (const p of w) process.kill(p, 'SIGTERM');
    await sleep(100);
    process.kill(s.master, 'SIGTERM');
    const r = await callP;
    assert.equal(r.status, 'ok', `the running script was cut off: status ${r.status}`);
    assert.doesNotMatch(s.log, /second signal: stopping now/);
  } finally {
    await stopAll(s);
  }
});
