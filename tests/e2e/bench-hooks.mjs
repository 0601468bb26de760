// What a pre+post hook pair costs a run_skill_script call (docs/hooks.md).
//
//   node tests/e2e/bench-hooks.mjs            # build/skill-mcp, 200 calls per case
//   SKILL_MCP_BIN=... BENCH_N=500 node tests/e2e/bench-hooks.mjs
//
// Starts its own server on 127.0.0.1 (port 0) over a temp library of two
// skills with the same trivial script (scripts/true.sh, ":"): bench-plain has
// no hooks, bench-hooked has hooks/pre.sh and hooks/post.sh ("exit 0"), and
// bench-pyhooked hooks/pre.py and hooks/post.py ("pass"). Then,
// sequentially, one request at a time, with plain fetch POSTs (keep-alive):
// N calls of each, interleaved one by one (so load from elsewhere hits every
// case alike), after a warm-up. For reference it also times spawning `bash -c true` and
// `bash true.sh` from node (spawn to exit), which is what the server's own
// spawns cost at the least. Prints p50/p90 per case and the server's
// overhead per hook: (hooked - plain) / 2 - spawn(bash). Stops the server
// (by pid) and removes the temp dir. Not a test: it asserts nothing about
// time, only that every call succeeded.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const BIN = process.env.SKILL_MCP_BIN ? path.resolve(process.env.SKILL_MCP_BIN) : path.join(REPO, 'build', 'skill-mcp');
const N = Number(process.env.BENCH_N ?? 200);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-bench-hooks-'));
fs.chmodSync(tmp, 0o755);  // a root server's scripts run as nobody
for (const name of ['bench-plain', 'bench-hooked', 'bench-pyhooked']) {
  fs.mkdirSync(path.join(tmp, 'lib', name, 'scripts'), { recursive: true });
  fs.writeFileSync(path.join(tmp, 'lib', name, 'SKILL.md'), `---\nname: ${name}\ndescription: benchmark skill\n---\n\n# ${name}\n`);
  fs.writeFileSync(path.join(tmp, 'lib', name, 'scripts', 'true.sh'), ':\n');
}
fs.mkdirSync(path.join(tmp, 'lib', 'bench-hooked', 'hooks'));
fs.writeFileSync(path.join(tmp, 'lib', 'bench-hooked', 'hooks', 'pre.sh'), 'exit 0\n');
fs.writeFileSync(path.join(tmp, 'lib', 'bench-hooked', 'hooks', 'post.sh'), 'exit 0\n');
fs.mkdirSync(path.join(tmp, 'lib', 'bench-pyhooked', 'hooks'));
fs.writeFileSync(path.join(tmp, 'lib', 'bench-pyhooked', 'hooks', 'pre.py'), 'pass\n');
fs.writeFileSync(path.join(tmp, 'lib', 'bench-pyhooked', 'hooks', 'post.py'), 'pass\n');

const proc = spawn(BIN, ['--skills', path.join(tmp, 'lib'), '--host', '127.0.0.1', '--port', '0',
  '--refresh-interval', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
let log = '';
let exited = false;
proc.on('exit', () => { exited = true; });
const cleanup = () => {
  if (!exited) { try { process.kill(proc.pid, 'SIGKILL'); } catch { /* gone */ } }
  fs.rmSync(tmp, { recursive: true, force: true });
};
process.on('exit', cleanup); // last resort (an exception): no server outlives the run

// The default log level (info): one log line per process run is part of the cost.
let listening = false;
const url = await new Promise((resolve, reject) => {
  const t = setTimeout(() => reject(new Error(`no "listening on" within 10 s:\n${log}`)), 10_000);
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (c) => {
    if (listening) return; // keep draining, stop collecting
    log += c;
    const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/\S*)/.exec(log);
    if (m) { listening = true; clearTimeout(t); resolve(m[1]); }
  });
  proc.once('exit', (code) => { clearTimeout(t); reject(new Error(`server exited (${code}):\n${log}`)); });
});

let id = 0;
async function runScript(name) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call',
      params: { name: 'run_skill_script', arguments: { name, script: 'scripts/true.sh' } } }),
  });
  const j = await res.json();
  const sc = j.result?.structuredContent;
  if (sc?.status !== 'ok') throw new Error(`${name}: not ok: ${JSON.stringify(j).slice(0, 400)}`);
  return sc;
}

function spawnOnce(cmd, args) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const p = spawn(cmd, args, { stdio: 'ignore' });
    p.on('error', reject);
    p.on('exit', () => resolve(Number(process.hrtime.bigint() - t0) / 1e6));
  });
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

// The floor without node in the way: bench/spawn.c (posix_spawn + waitpid,
// as the server does), when built (make bench, or bench/scripts.sh).
const C_SPAWN = path.join(REPO, 'build', 'bench', 'spawn');
const haveC = fs.existsSync(C_SPAWN);
const PY = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : null;
function cSpawn(n, argv = ['/bin/bash', '-c', 'true']) {
  return new Promise((resolve, reject) => {
    let out = '';
    const p = spawn(C_SPAWN, [String(n), ...argv], { stdio: ['ignore', 'pipe', 'ignore'] });
    p.stdout.on('data', (c) => { out += c; });
    p.on('error', reject);
    p.on('exit', () => resolve(Number.parseFloat(out)));
  });
}

const cases = {
  'bash -c true (spawn from node)': [],
  'bash true.sh (spawn from node)': [],
  ...(haveC ? { 'bash -c true (posix_spawn from C, bench/spawn.c)': [] } : {}),
  ...(haveC && PY ? { 'python3 -E -s -B -c pass (posix_spawn from C)': [] } : {}),
  'run_skill_script, no hooks': [],
  'run_skill_script, pre + post hook': [],
  'run_skill_script, pre.py + post.py hook (python, "pass")': [],
};
const serverMs = { plain: [], hooked: [] };
const trueSh = path.join(tmp, 'lib', 'bench-plain', 'scripts', 'true.sh');
const time = async (fn) => {
  const t0 = process.hrtime.bigint();
  const v = await fn();
  return [Number(process.hrtime.bigint() - t0) / 1e6, v];
};

for (let i = 0; i < 20; i++) { // warm-up: page cache, the server's first spawns, fetch's connection
  await runScript('bench-plain');
  await runScript('bench-hooked');
  await runScript('bench-pyhooked');
  await spawnOnce('bash', ['-c', 'true']);
}
// Interleaved, one of each per iteration: load from elsewhere hits every case alike.
for (let i = 0; i < N; i++) {
  cases['bash -c true (spawn from node)'].push(await spawnOnce('bash', ['-c', 'true']));
  cases['bash true.sh (spawn from node)'].push(await spawnOnce('bash', [trueSh]));
  if (haveC) cases['bash -c true (posix_spawn from C, bench/spawn.c)'].push(await cSpawn(1));
  if (haveC && PY && i % 4 === 0) {
    cases['python3 -E -s -B -c pass (posix_spawn from C)'].push(await cSpawn(1, [PY, '-E', '-s', '-B', '-c', 'pass']));
  }
  let [ms, sc] = await time(() => runScript('bench-plain'));
  cases['run_skill_script, no hooks'].push(ms);
  serverMs.plain.push(sc.duration_ms);
  [ms, sc] = await time(() => runScript('bench-hooked'));
  cases['run_skill_script, pre + post hook'].push(ms);
  serverMs.hooked.push(sc.duration_ms);
  [ms] = await time(() => runScript('bench-pyhooked'));
  cases['run_skill_script, pre.py + post.py hook (python, "pass")'].push(ms);
}

const f = (x) => x.toFixed(2);
const p50 = Object.fromEntries(Object.entries(cases).map(([k, v]) => [k, pct(v, 50)]));
console.log(`skill-mcp ${BIN}; ${N} sequential calls per case; ${os.cpus().length} CPUs; node ${process.version}`);
console.log('');
console.log('| case | p50 ms | p90 ms |');
console.log('|---|---:|---:|');
for (const [k, v] of Object.entries(cases)) console.log(`| ${k} | ${f(pct(v, 50))} | ${f(pct(v, 90))} |`);
const plain = p50['run_skill_script, no hooks'];
const hooked = p50['run_skill_script, pre + post hook'];
const spawnTrue = p50['bash -c true (spawn from node)'];
const spawnC = p50['bash -c true (posix_spawn from C, bench/spawn.c)'];
const perHook = (hooked - plain) / 2;
console.log('');
console.log(`script's duration_ms (server-side) p50: no hooks ${f(pct(serverMs.plain, 50))}, with hooks ${f(pct(serverMs.hooked, 50))}`);
console.log(`pre + post hooks add ${f(hooked - plain)} ms (${f(hooked / plain)}x); per hook ${f(perHook)} ms`);
console.log(`server overhead per hook (per hook - bash -c true spawned from node): ${f(perHook - spawnTrue)} ms`);
if (haveC) console.log(`server overhead per hook (per hook - bash -c true posix_spawned from C): ${f(perHook - spawnC)} ms`);
const pyHook = (p50['run_skill_script, pre.py + post.py hook (python, "pass")'] - plain) / 2;
console.log(`a python hook ("pass") costs ${f(pyHook)} ms per hook` +
  (haveC && PY ? `; python3 start-up alone (C) ${f(p50['python3 -E -s -B -c pass (posix_spawn from C)'])} ms` : ''));
console.log(JSON.stringify({ n: N, p50, per_hook_ms: +f(perHook), per_python_hook_ms: +f(pyHook),
  overhead_per_hook_ms: +f(perHook - spawnTrue),
  ...(haveC ? { overhead_per_hook_vs_c_ms: +f(perHook - spawnC) } : {}) }));

// Stop the server (SIGTERM, by pid), wait for it, then leave.
const gone = new Promise((r) => (exited ? r() : proc.once('exit', r)));
process.kill(proc.pid, 'SIGTERM');
await gone;
process.exit(0);
