// run_skill_script end to end (docs/tools.md#run_skill_script, docs/scripts.md):
// results and hints, stalls and ceilings, the jail, the clean environment,
// process-group kills, output caps, the queue, and the stats counters.
//
// These tests run over their own skills tree (fixtures/runner-skills), copied
// to a temp dir per server; the shared fixtures/skills tree is not used.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  startServer, connect, callOk as callOkA, callErr as callErrA, E2E_DIR, poll,
} from './lib/harness.mjs';
import { pidGone, waitGone, runScript, scriptStats, sleep } from './lib/procs.mjs';

const RUNNER_FIXTURES = path.join(E2E_DIR, 'fixtures', 'runner-skills');
const opts = { timeout: 20_000 };
const callOk = (c, n, a) => callOkA(assert, c, n, a);
const callErr = (c, n, a) => callErrA(assert, c, n, a);

const BASICS = 'runner-basics';
const TIMING = 'runner-timing';
const SCRIPT_PATH = '/usr/local/bin:/usr/bin:/bin';
const NET_VARS = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy',
  'no_proxy', 'all_proxy', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE',
  'NODE_EXTRA_CA_CERTS'];

// ---- helpers -------------------------------------------------------------------

const startRunner = ({ env, args = [], setup } = {}) => startServer({ fixtures: RUNNER_FIXTURES, env, args, setup });

/** runScript, and the output counters every runner result has. */
async function run(client, name, script, extra = {}) {
  const sc = await runScript(client, name, script, extra);
  const label = `run_skill_script(${name}, ${script})`;
  for (const k of ['stdout_bytes', 'stderr_bytes']) {
    assert.ok(Number.isInteger(sc[k]), `${label}: ${k} must be an integer`);
  }
  assert.equal(typeof sc.truncated, 'boolean');
  return sc;
}

function delta(a, b) {
  const d = {};
  for (const k of ['started', 'ok', 'failed', 'stalled', 'timeout', 'denied', 'busy']) d[k] = b[k] - a[k];
  return d;
}

const tmpMarker = (tag) => path.join(os.tmpdir(), `skill-mcp-e2e-${tag}-${crypto.randomBytes(6).toString('hex')}`);

// ---- the main server --------------------------------------------------------------
// Its own environment carries a secret and a proxy; output is capped at 64 KiB.

let s;
let client;
let longRun; // the one ~16 s call, started early so it overlaps the other tests
before(async () => {
  s = await startRunner({
    env: { MY_API_KEY: 'server-secret', HTTPS_PROXY: 'http://proxy.example:3128' },
    // A budget large enough that shaping (tests/e2e/shaping.test.mjs) never
    // cuts these results: here the runner's own retention is under test.
    args: ['--max-output-bytes', '65536', '--context-tokens', '10000000', '--context-share', '1',
      '--max-result-chars', '10000000'],
    setup: (skills) => {
      const sd = path.join(skills, BASICS, 'scripts');
      fs.symlinkSync('../../other-skill/scripts/x.py', path.join(sd, 'escape.py'));
      fs.symlinkSync('/bin/sh', path.join(sd, 'evil.sh'));
      fs.symlinkSync('x.py', path.join(sd, 'alias.py')); // stays inside scripts/: allowed
      // A skill whose scripts/ folder itself is a symlink to another skill's.
      const linked = path.join(skills, 'linked-scripts');
      fs.mkdirSync(linked);
      fs.writeFileSync(path.join(linked, 'SKILL.md'),
        '---\nname: linked-scripts\ndescription: scripts/ is a symlink to another skill.\n---\n\n# Linked\n');
      fs.symlinkSync('../other-skill/scripts', path.join(linked, 'scripts'));
    },
  });
  client = await connect(s.url);
  await client.listTools(); // caches output schemas: the SDK then validates every result
  const t0 = Date.now();
  longRun = run(client, TIMING, 'scripts/slow.py')
    .then((r) => ({ r, wall: Date.now() - t0 }), (e) => ({ e }));
});
after(async () => {
  if (longRun) await longRun; // never leave a call in flight behind stop()
  try { await client?.close(); } finally { await s?.stop(); }
});

// ---- ok --------------------------------------------------------------------------

test('ok: a python script printing JSON', opts, async () => {
  const r = await run(client, BASICS, 'scripts/json_out.py');
  assert.equal(r.status, 'ok');
  assert.equal(r.exit_code, 0);
  assert.deepEqual(JSON.parse(r.stdout), { answer: 42, items: ['a', 'b'], ok: true });
  assert.equal(r.stderr, '');
  assert.equal(r.truncated, false);
  assert.equal(r.stdout_bytes, Buffer.byteLength(r.stdout));
  assert.equal(r.stderr_bytes, 0);
  assert.equal(r.hint, 'The script succeeded; stdout is its answer.');
  assert.equal(r.timeout, 10, 'the skill default timeout');
  assert.equal(r.stall_timeout, 5, 'the skill default stall_timeout');
  assert.ok(r.duration_ms > 0 && r.duration_ms < 10_000);
  for (const k of ['signal', 'silent_for', 'utf8_repaired']) assert.equal(r[k], undefined, `${k} absent on ok`);
});

test('ok: a bash script, stdout and stderr kept apart', opts, async () => {
  const r = await run(client, BASICS, 'scripts/hello.sh');
  assert.equal(r.status, 'ok');
  assert.equal(r.exit_code, 0);
  assert.match(r.stdout, /^hello from bash \d+\n$/);
  assert.equal(r.stderr, 'to stderr\n');
  assert.equal(r.stderr_bytes, 10);
});

test('ok: args are data, not shell (no substitution, spaces and quotes verbatim)', opts, async () => {
  const marker = tmpMarker('args');
  const args = [`$(touch ${marker})`, 'two words', `"double" and 'single'`, '', '; touch ' + marker,
    '`touch ' + marker + '`', '*', '~', '$HOME', 'ünïcødé ✓', '--flag=x y', 'a\nb'];
  const r = await run(client, BASICS, 'scripts/echo_args.py', { args });
  assert.equal(r.status, 'ok', r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), args, 'every argument must reach the script verbatim');
  assert.equal(fs.existsSync(marker), false, `${marker} must not be created: args went through a shell`);
});

// ---- failed --------------------------------------------------------------------

test('failed: exit code 3 with stderr, isError, stdout kept', opts, async () => {
  const r = await run(client, BASICS, 'scripts/fail3.py');
  assert.equal(r.status, 'failed');
  assert.equal(r.exit_code, 3);
  assert.equal(r.signal, undefined);
  assert.equal(r.stdout, 'partial answer\n');
  assert.equal(r.stderr, "error: bad input 'zzz'\n");
  assert.match(r.hint, /exited with code 3/);
  assert.match(r.hint, /stderr says why/);
});

test('failed: killed by a signal -> signal SIGSEGV, exit_code null (bash and python)', opts, async () => {
  for (const script of ['scripts/segv.sh', 'scripts/segv.py']) {
    const r = await run(client, BASICS, script);
    assert.equal(r.status, 'failed', script);
    assert.equal(r.signal, 'SIGSEGV', `${script}: signal`);
    assert.equal(r.exit_code, null, `${script}: exit_code must be null when killed by a signal`);
    assert.equal(r.stdout, 'about to crash\n', `${script}: output before the crash is kept`);
    assert.match(r.hint, /killed by SIGSEGV/);
  }
});

// ---- stalled / timeout -------------------------------------------------------------

test('stalled: silent after "waiting for upstream" -> stalled within ~1 s, last line in hint', opts, async () => {
  const t0 = Date.now();
  const r = await run(client, TIMING, 'scripts/stall.py');
  const wall = Date.now() - t0;
  assert.equal(r.status, 'stalled');
  assert.equal(r.timeout, 20);
  assert.equal(r.stall_timeout, 1);
  assert.ok(wall >= 900 && wall < 4500, `stalled after ${wall} ms; expected ~1-4 s (stall_timeout 1)`);
  assert.ok(r.duration_ms >= 950 && r.duration_ms < 4500, `duration_ms ${r.duration_ms}`);
  assert.equal(typeof r.silent_for, 'number', 'silent_for present when stalled');
  assert.ok(r.silent_for >= 1, `silent_for ${r.silent_for} must be >= stall_timeout (1)`);
  assert.ok(r.silent_for < 4.5, `silent_for ${r.silent_for}`);
  assert.equal(r.stdout, 'connecting to upstream\nwaiting for upstream\n', 'output before the kill is returned');
  assert.ok(r.hint.includes('"waiting for upstream"'), `hint must quote the last output line: ${r.hint}`);
  assert.match(r.hint, /printed nothing for \d+s/);
  assert.equal(r.exit_code, null);
  assert.equal(r.signal, 'SIGTERM', 'stopped with SIGTERM (python dies of it)');
});

test('timeout, not stalled: a stderr heartbeat keeps it alive until the 2 s ceiling; short-ceiling hint', opts, async () => {
  const t0 = Date.now();
  const r = await run(client, TIMING, 'scripts/heartbeat.py');
  const wall = Date.now() - t0;
  assert.equal(r.status, 'timeout', `a script printing every 0.2 s must not be taken for stalled (got ${r.status})`);
  assert.equal(r.timeout, 2);
  assert.equal(r.stall_timeout, 1);
  assert.ok(wall >= 1900 && wall < 6000, `ended after ${wall} ms; expected ~2 s`);
  assert.equal(r.silent_for, undefined, 'silent_for only when stalled');
  assert.equal(r.stdout, 'started\n');
  const beats = r.stderr.match(/^heartbeat \d+$/gm) ?? [];
  assert.ok(beats.length >= 4, `the heartbeats before the kill are returned (got ${beats.length})`);
  assert.ok(r.stderr.startsWith('heartbeat 1\n'));
  assert.match(r.hint, /should answer at once/);
  assert.doesNotMatch(r.hint, /slow, not stuck/);
  assert.equal(r.exit_code, null);
  assert.equal(r.signal, 'SIGTERM');
});

// ---- timeouts: the caller may only lower -------------------------------------------------

test('caller cannot raise the timeout, may lower it; stall_timeout 0 refused; server keeps serving', opts, async () => {
  let r = await run(client, BASICS, 'scripts/quick2.py', { timeout: 100 });
  assert.equal(r.status, 'ok');
  assert.equal(r.timeout, 2, 'a caller timeout above the skill\'s 2 s must not raise it');
  r = await run(client, BASICS, 'scripts/quick2.py', { timeout: 1 });
  assert.equal(r.timeout, 1, 'a lower caller timeout applies');
  r = await run(client, BASICS, 'scripts/quick2.py', { timeout: 0.5, stall_timeout: 100 });
  assert.equal(r.timeout, 0.5);
  assert.equal(r.stall_timeout, 2, 'a caller stall_timeout above the skill\'s must not raise it');
  r = await run(client, BASICS, 'scripts/quick2.py', { stall_timeout: 0.75 });
  assert.equal(r.stall_timeout, 0.75);

  const t = await callErr(client, 'run_skill_script', { name: BASICS, script: 'scripts/quick2.py', stall_timeout: 0 });
  assert.match(t, /stall_timeout/);
  assert.match(t, /cannot be switched off/);
  for (const bad of [{ timeout: 0 }, { timeout: -1 }, { timeout: '5' }, { stall_timeout: -2 }, { stall_timeout: 'x' }]) {
    const e = await callErr(client, 'run_skill_script', { name: BASICS, script: 'scripts/quick2.py', ...bad });
    assert.match(e, /timeout/, `refusal of ${JSON.stringify(bad)} names the argument`);
  }
  r = await run(client, BASICS, 'scripts/quick2.py');
  assert.equal(r.status, 'ok', 'the server keeps serving after refused calls');
  assert.equal(r.stdout, 'quick\n');
});

// ---- stdin --------------------------------------------------------------------------

test('stdin: given text is fed verbatim (also past a pipe buffer); none -> EOF at once', opts, async () => {
  const text = 'line one\nline "two" ünï ✓\n\ttabbed\n';
  let r = await run(client, BASICS, 'scripts/echo_stdin.py', { stdin: text });
  assert.equal(r.status, 'ok', r.stderr);
  assert.equal(r.stdout, text);

  const big = 'x'.repeat(199_999) + '\n'; // well past a 64 KiB pipe buffer
  r = await run(client, BASICS, 'scripts/read_stdin.py', { stdin: big });
  assert.equal(r.status, 'ok', r.stderr);
  assert.equal(r.truncated, true, 'the JSON echo of 200 KB exceeds the 64 KiB cap');
  assert.ok(r.stdout.startsWith('{"stdin": "xxxx'));
  assert.ok(r.stdout_bytes > big.length, `the script read all ${big.length} bytes (printed ${r.stdout_bytes})`);

  const t0 = Date.now();
  r = await run(client, BASICS, 'scripts/read_stdin.py');
  const wall = Date.now() - t0;
  assert.equal(r.status, 'ok', r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.stdin, '', 'without stdin the script reads end-of-file');
  assert.ok(out.read_s < 1, `sys.stdin.read() took ${out.read_s} s: it must not wait`);
  assert.ok(wall < 3000, `call took ${wall} ms`);

  r = await run(client, BASICS, 'scripts/echo_stdin.py', { stdin: '' });
  assert.equal(r.status, 'ok');
  assert.equal(r.stdout, '', 'an empty stdin is an immediate EOF too');
});

// ---- sibling import -------------------------------------------------------------------

test('sibling import: scripts/main.py imports scripts/helper.py', opts, async () => {
  const r = await run(client, BASICS, 'scripts/main.py');
  assert.equal(r.status, 'ok', `sibling import failed: ${r.stderr}`);
  assert.equal(r.stdout, 'helper says hi from helper\n');
  const k = await callOk(client, 'load_skill', { name: BASICS });
  const paths = [...k.scripts.map((x) => x.path), ...k.files.map((x) => x.path)];
  assert.ok(!paths.some((p) => p.includes('__pycache__')),
    `bytecode caches written by the import must not show up as skill files: ${paths.join(', ')}`);
});

function listTree(root) {
  const out = [];
  const walk = (rel) => {
    for (const d of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      out.push(r);
      if (d.isDirectory()) walk(r);
    }
  };
  walk('');
  return out.sort();
}

test('running scripts leaves the skill folder unchanged (no __pycache__ written into scripts/)', opts, async () => {
  // The sibling-import test above already ran main.py on this server.
  const r = await run(client, BASICS, 'scripts/main.py');
  assert.equal(r.status, 'ok', r.stderr);
  const expected = [...listTree(path.join(RUNNER_FIXTURES, BASICS)),
    'scripts/alias.py', 'scripts/escape.py', 'scripts/evil.sh'].sort();
  const got = listTree(path.join(s.skills, BASICS));
  const added = got.filter((p) => !expected.includes(p));
  assert.deepEqual(added, [],
    `running a script wrote into the skill folder: ${added.join(', ')} (python writes bytecode next to an ` +
    'imported sibling module; with --refresh-interval this also bumps the index generation). ' +
    'Fix: run python with -B (server/script.c add_interp: args "-E", "-s", "-B"); PYTHONDONTWRITEBYTECODE cannot work under -E');
});

// ---- output ----------------------------------------------------------------------------

test('invalid UTF-8 output is repaired to U+FFFD and flagged', opts, async () => {
  const r = await run(client, BASICS, 'scripts/badutf8.py');
  assert.equal(r.status, 'ok', r.stderr);
  assert.equal(r.utf8_repaired, true);
  assert.equal(r.stdout, '\uFFFD\uFFFD ok\n');
  assert.equal(r.stdout_bytes, 6, 'byte counts are of what the script wrote');
  assert.equal(r.stderr, 'fine é\n', 'valid UTF-8 is untouched');
});

test('8 MiB of stdout: ok within seconds, truncated, counted, capped at --max-output-bytes', opts, async () => {
  const t0 = Date.now();
  const r = await run(client, BASICS, 'scripts/big.py');
  const wall = Date.now() - t0;
  assert.equal(r.status, 'ok', `${r.status}: ${r.stderr} ${r.hint}`);
  assert.ok(wall < 10_000, `8 MiB took ${wall} ms`);
  assert.equal(r.truncated, true);
  assert.equal(r.stdout_bytes, 8 * 1024 * 1024);
  assert.ok(Buffer.byteLength(r.stdout) <= 65536, `kept ${Buffer.byteLength(r.stdout)} bytes > cap 65536`);
  assert.equal(r.stdout, '0123456789abcdef'.repeat(4096), 'exactly the first 64 KiB are kept');
  assert.equal(r.stderr, 'done\n');
  assert.equal(r.stderr_bytes, 5);
});

// ---- environment ---------------------------------------------------------------------------

test('env: the server\'s environment is not inherited; SKILL_*, HOME/TMPDIR scratch, PATH, caller env', opts, async () => {
  assert.equal(process.env.MY_API_KEY, undefined, 'the test process itself has no MY_API_KEY');
  const r = await run(client, BASICS, 'scripts/env.py', { env: { MY_TOKEN: 'abc' } });
  assert.equal(r.status, 'ok', r.stderr);
  const out = JSON.parse(r.stdout);
  const env = out.env;
  assert.equal(env.MY_API_KEY, undefined, 'MY_API_KEY from the server\'s environment leaked into the script');
  assert.equal(env.NODE_TEST_CONTEXT, undefined, 'the server\'s inherited variables must not leak');
  assert.equal(env.MY_TOKEN, 'abc', 'the caller\'s env reaches the script');
  assert.equal(env.SKILL_NAME, BASICS);
  const skillDir = path.join(s.skills, BASICS);
  assert.ok(env.SKILL_DIR === skillDir || env.SKILL_DIR === fs.realpathSync(skillDir),
    `SKILL_DIR ${env.SKILL_DIR} should be ${skillDir}`);
  assert.equal(fs.realpathSync(out.cwd), fs.realpathSync(skillDir), 'cwd is the skill folder');
  assert.equal(env.SKILL_REQUEST_ID, r.request_id);
  // the shaping budget in bytes, never above the retention cap (65536 here)
  const budget = Number(env.SKILL_OUTPUT_BUDGET_BYTES);
  assert.ok(Number.isInteger(budget) && budget > 0 && budget <= 65536, env.SKILL_OUTPUT_BUDGET_BYTES);
  assert.equal(env.PATH, SCRIPT_PATH);
  assert.ok(env.HOME && env.HOME.startsWith('/'), 'HOME set');
  assert.equal(env.TMPDIR, env.HOME, 'TMPDIR is the same scratch folder');
  assert.ok(env.HOME !== os.homedir(), 'HOME is not the server user\'s home');
  assert.equal(out.home_exists, true, 'the scratch folder exists while the script runs');
  assert.equal(out.home_writable, true);
  assert.equal(fs.existsSync(env.HOME), false, `scratch ${env.HOME} must be removed after the call`);
  assert.equal(env.HTTPS_PROXY, 'http://proxy.example:3128', 'proxy variables of the server are forwarded');
  assert.ok(env.LANG, 'LANG set');
  // Nothing outside the documented set.
  const allowed = new Set(['PATH', 'LANG', 'TZ', 'HOME', 'TMPDIR', 'SKILL_NAME', 'SKILL_DIR',
    'SKILL_REQUEST_ID', 'SKILL_OUTPUT_BUDGET_BYTES', 'MY_TOKEN', ...NET_VARS]);
  const extra = Object.keys(env).filter((k) => !allowed.has(k) && !k.startsWith('LC_'));
  assert.deepEqual(extra, [], `variables outside the documented set reached the script: ${extra.join(', ')}`);

  // A second call gets a different scratch folder and request id.
  const r2 = await run(client, BASICS, 'scripts/env.py');
  const env2 = JSON.parse(r2.stdout).env;
  assert.notEqual(env2.HOME, env.HOME);
  assert.notEqual(r2.request_id, r.request_id);
  assert.equal(env2.MY_TOKEN, undefined, 'a caller\'s env is for that call only');
});

test('scratch: gone from its path when the answer comes, its files deleted soon after, nothing left in /tmp at exit', opts, async () => {
  // the trash folder of a server killed outright (its pid gone) is removed by
  // the next server; a folder of that name with another mode is not its own
  const dead = spawnSync('true').pid;
  // the names carry the pid namespace: a pid is judged only in its own
  const ns = fs.statSync('/proc/self/ns/pid').ino;
  const stale = path.join(os.tmpdir(), `skill-mcp-trash-${dead}-${ns}-e2e${crypto.randomBytes(3).toString('hex')}`);
  const decoy = `${stale}x`;
  // and so are its scratch folders made ahead of runs that never came
  const staleSpare = path.join(os.tmpdir(), `skill-mcp-run-${dead}-${ns}-e2e${crypto.randomBytes(3).toString('hex')}`);
  // a folder of another pid namespace (a container sharing /tmp), whose pid
  // this one cannot see: it may be a running script's HOME, so it stays
  const otherNs = path.join(os.tmpdir(), `skill-mcp-run-${dead}-${ns + 1}-e2e${crypto.randomBytes(3).toString('hex')}`);
  fs.mkdirSync(otherNs, { mode: 0o700 });
  fs.chmodSync(otherNs, 0o700);
  fs.mkdirSync(path.join(stale, '0'), { recursive: true });
  fs.writeFileSync(path.join(stale, '0', 'f'), 'x');
  fs.chmodSync(stale, 0o700);
  fs.mkdirSync(staleSpare, { mode: 0o700 });
  fs.mkdirSync(decoy, { mode: 0o755 });
  fs.chmodSync(decoy, 0o755);
  // the spares of a server that is alive (the main one) are its own
  const liveSpares = fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith(`skill-mcp-run-${s.proc.pid}-`))
    .map((n) => path.join(os.tmpdir(), n));
  const srv = await startRunner({
    setup: (skills) => fs.writeFileSync(path.join(skills, BASICS, 'scripts', 'fill-home.sh'),
      'mkdir -p "$HOME/a/b" && head -c 4096 /dev/zero >"$HOME/a/b/f" && : >"$TMPDIR/t" && echo "$HOME"\n'),
  });
  // the server's own folder of used scratch folders, named with its pid
  const trashOf = () => fs.readdirSync(os.tmpdir())
    .filter((n) => n.startsWith(`skill-mcp-trash-${srv.proc.pid}-`)).map((n) => path.join(os.tmpdir(), n));
  const sparesOf = () => fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith(`skill-mcp-run-${srv.proc.pid}-`));
  const c = await connect(srv.url);
  let swept;
  try {
    swept = liveSpares.filter((p) => !fs.existsSync(p));
    const [trash] = trashOf();
    assert.ok(trash, 'the server keeps a folder for used scratch folders in /tmp');
    assert.equal(fs.statSync(trash).mode & 0o777, 0o700, 'only the server can reach what is in it');
    for (let i = 0; i < 3; i++) {
      const r = await run(c, BASICS, 'scripts/fill-home.sh');
      assert.equal(r.status, 'ok', r.stderr);
      const home = r.stdout.trim();
      assert.match(home, new RegExp(`^/tmp/skill-mcp-run-${srv.proc.pid}-`));
      assert.equal(fs.existsSync(home), false, `scratch ${home} must be gone when the call returns`);
    }
    const left = await poll(() => fs.readdirSync(trash).length === 0, 10_000, 50);
    assert.ok(left, `the used scratch folders' files must be deleted: ${fs.readdirSync(trash).join(', ')} remain`);
  } finally {
    await c.close();
    await srv.stop();
  }
  const trashLeft = trashOf();
  const sparesLeft = sparesOf();
  const staleGone = !fs.existsSync(stale);
  const staleSpareGone = !fs.existsSync(staleSpare);
  const decoyKept = fs.existsSync(decoy);
  const otherNsKept = fs.existsSync(otherNs);
  for (const p of [stale, staleSpare, decoy, otherNs]) fs.rmSync(p, { recursive: true, force: true });
  assert.ok(liveSpares.length > 0, 'the main server keeps spare scratch folders');
  assert.deepEqual(swept, [], 'a starting server must not remove the spares of a server that is alive');
  assert.deepEqual(trashLeft, [], 'the server removes its folder when it exits');
  assert.deepEqual(sparesLeft, [], 'the server removes its unused scratch folders when it exits');
  assert.ok(staleGone, `${stale}, left by a server that is gone, must be removed at start`);
  assert.ok(staleSpareGone, `${staleSpare}, left by a server that is gone, must be removed at start`);
  assert.ok(decoyKept, `${decoy} is not a trash folder of this user (mode 0755) and must be left alone`);
  assert.ok(otherNsKept, `${otherNs} is another pid namespace's: its pid cannot be judged here`);
});

test('scratch: a spare replaced in /tmp (a link, a folder of another user) is not given to a run', opts, async () => {
  // A spare can wait in /tmp for days; a cleaner may remove it, and anyone
  // may then put a link or a folder of their own at its name. The server
  // must not chown what the link names, nor hand such a folder out as HOME.
  const victim = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-e2e-victim-'));
  fs.chmodSync(victim, 0o755);
  const srv = await startRunner({
    setup: (skills) => fs.writeFileSync(path.join(skills, BASICS, 'scripts', 'home.sh'), 'echo "$HOME"\n'),
  });
  const sparesOf = () => fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith(`skill-mcp-run-${srv.proc.pid}-`))
    .map((n) => path.join(os.tmpdir(), n));
  const planted = [];
  const c = await connect(srv.url);
  let homes = [];
  let victimUid;
  try {
    assert.ok(await poll(() => sparesOf().length === 4, 10_000, 20), 'the server makes its spares at start');
    sparesOf().forEach((p, i) => {
      fs.rmdirSync(p);
      if (i % 2) fs.symlinkSync(victim, p);
      else { fs.mkdirSync(p, { mode: 0o700 }); fs.chownSync(p, 4242, 4242); }
      planted.push(p);
    });
    // four at once take the four spares before any is topped up
    const rs = await Promise.all([0, 1, 2, 3].map(() => run(c, BASICS, 'scripts/home.sh')));
    for (const r of rs) assert.equal(r.status, 'ok', r.stderr);
    homes = rs.map((r) => r.stdout.trim());
    victimUid = fs.statSync(victim).uid;
  } finally {
    await c.close();
    await srv.stop();
    for (const p of [...planted, victim]) fs.rmSync(p, { recursive: true, force: true });
  }
  assert.equal(victimUid, process.getuid(), 'the folder a planted link names must not be given to the script user');
  const reused = homes.filter((h) => planted.includes(h));
  assert.deepEqual(reused, [], 'a planted name must not be a run\'s HOME');
});

test('env: refused names and values (injection variables, server-set names, bad names, NUL)', opts, async () => {
  const names = ['LD_PRELOAD', 'LD_LIBRARY_PATH', 'BASH_ENV', 'ENV', 'PYTHONPATH', 'PYTHONSTARTUP',
    'NODE_OPTIONS', 'PERL5OPT', 'GIT_SSH_COMMAND', 'PATH', 'HOME', 'TMPDIR', 'SKILL_NAME',
    'SKILL_REQUEST_ID', 'ld_preload', 'Ld_Library_Path', 'BASH_FUNC_foo%%', 'IFS', 'PS4', 'SHELLOPTS',
    'GLIBC_TUNABLES', 'LC_ALL', 'HTTPS_PROXY', 'https_proxy', 'SSL_CERT_FILE'];
  for (const n of names) {
    const t = await callErr(client, 'run_skill_script', { name: BASICS, script: 'scripts/env.py', env: { MY_TOKEN: 'ok', [n]: '/tmp/evil' } });
    assert.ok(t.includes(`'${n}'`), `refusal of env ${n} must name it: ${t}`);
  }
  for (const n of ['A=B', 'A B', '1ABC', '', 'X'.repeat(129), 'É']) {
    const t = await callErr(client, 'run_skill_script', { name: BASICS, script: 'scripts/env.py', env: { [n]: 'v' } });
    assert.match(t, /Argument 'env'/, `bad name ${JSON.stringify(n).slice(0, 20)}: ${t}`);
  }
  let t = await callErr(client, 'run_skill_script', { name: BASICS, script: 'scripts/env.py', env: { MY_TOKEN: 'a\u0000b' } });
  assert.match(t, /MY_TOKEN/);
  assert.match(t, /NUL/);
  t = await callErr(client, 'run_skill_script', { name: BASICS, script: 'scripts/env.py', env: { MY_TOKEN: 5 } });
  assert.match(t, /MY_TOKEN/);
  t = await callErr(client, 'run_skill_script', { name: BASICS, script: 'scripts/env.py', env: ['MY_TOKEN=abc'] });
  assert.match(t, /env/);
  t = await callErr(client, 'run_skill_script', { name: BASICS, script: 'scripts/echo_args.py', args: ['a\u0000b'] });
  assert.match(t, /args/);
  t = await callErr(client, 'run_skill_script', { name: BASICS, script: 'scripts/echo_args.py', args: [3] });
  assert.match(t, /args/);
  const r = await run(client, BASICS, 'scripts/env.py', { env: { MY_TOKEN: 'still-works' } });
  // printed back, the value is redacted (docs/security.md, "Redaction")
  assert.equal(JSON.parse(r.stdout).env.MY_TOKEN, '[REDACTED:env:MY_TOKEN]', 'the server keeps serving');
});

test('stdin is data: python and bash do not run code given on stdin', opts, async () => {
  for (const script of ['scripts/ignore_stdin.py', 'scripts/hello.sh']) {
    const marker = tmpMarker('pwned');
    const stdin = `import os; os.system('touch ${marker}')\ntouch ${marker}\n`;
    const r = await run(client, BASICS, script, { stdin });
    assert.equal(r.status, 'ok', `${script}: ${r.stderr}`);
    assert.equal(fs.existsSync(marker), false, `${script}: code on stdin was executed (${marker} exists)`);
  }
});

// ---- the jail ------------------------------------------------------------------------------

test('jail: paths outside scripts/, symlinks out, folders, unknown types are refused with a reason', opts, async () => {
  const cases = [
    ['../other-skill/scripts/x.py', /'\.\.' is not allowed/],
    ['/etc/passwd', /absolute paths are not allowed/],
    ['scripts/../SKILL.md', /'\.\.' is not allowed/],
    ['SKILL.md', /no such script/],
    ['notes/x.sh', /only files in the skill's scripts\/ folder/],
    ['references/r.md', /only files in the skill's scripts\/ folder/],
    ['scripts/escape.py', /leads outside the skill's scripts\/ folder/],
    ['scripts/evil.sh', /leads outside the skill's scripts\/ folder/],
    ['scripts/sub', /folder, not a script/],
    ['scripts/sub/', /folder, not a script/],
    ['scripts/nope.py', /no such script/],
    ['scripts/x.rb', /no interpreter/],
    ['scripts/.hidden.py', /dotfiles/],
    ['scripts/__pycache__/helper.cpython-311.pyc', /cache folders/],
    ['scripts/', /only files in the skill's scripts\/ folder/],
    ['scripts\\x.py', /backslashes/],
    ['', /'script' is required/],
  ];
  for (const [script, why] of cases) {
    const t = await callErr(client, 'run_skill_script', { name: BASICS, script });
    assert.match(t, why, `${JSON.stringify(script)}: ${t}`);
  }
  // hooks/pre.py lives in a skill of its own, so that once hooks run it never touches the tests above.
  const h = await callErr(client, 'run_skill_script', { name: 'runner-hooked', script: 'hooks/pre.py' });
  assert.match(h, /only files in the skill's scripts\/ folder/);
  // scripts/ itself a symlink to another skill's scripts/: refused (or the skill is not indexed).
  const t = await callErr(client, 'run_skill_script', { name: 'linked-scripts', script: 'scripts/x.py' });
  assert.doesNotMatch(t, /x\.py of other-skill/);
  const nos = await callErr(client, 'run_skill_script', { name: 'no-such-skill', script: 'scripts/x.py' });
  assert.match(nos, /no-such-skill/);

  // What may run: a bare name means scripts/<name>; subfolders and in-folder symlinks are fine.
  let r = await run(client, BASICS, 'x.py');
  assert.equal(r.status, 'ok');
  assert.equal(r.stdout, 'x.py of runner-basics\n');
  r = await run(client, BASICS, 'scripts/alias.py');
  assert.equal(r.stdout, 'x.py of runner-basics\n');
  r = await run(client, BASICS, 'scripts/sub/inner.py');
  assert.equal(r.stdout, 'inner\n');
  r = await run(client, 'other-skill', 'scripts/x.py');
  assert.equal(r.stdout, 'x.py of other-skill\n');
});

// ---- process groups -------------------------------------------------------------------------

test('process group: a TERM-ignoring grandchild of a stalled script is gone after the result', opts, async () => {
  const r = await run(client, TIMING, 'scripts/bg_child.sh');
  assert.equal(r.status, 'stalled');
  const pid = Number.parseInt(r.stdout, 10);
  assert.ok(pid > 1, `the script printed its child's pid: ${JSON.stringify(r.stdout)}`);
  assert.ok(await waitGone(pid, 10_000), `grandchild ${pid} (sleep 300) survived the kill of its script`);
});

test('process group: a script that exits leaving `sleep 300 &` returns promptly and the sleeper is gone', opts, async () => {
  const t0 = Date.now();
  const r = await run(client, TIMING, 'scripts/bg_exit.sh');
  const wall = Date.now() - t0;
  assert.equal(r.status, 'ok');
  assert.equal(r.exit_code, 0);
  assert.ok(wall < 3000, `the call took ${wall} ms: a background child holding stdout must not hold up the answer`);
  const pid = Number.parseInt(r.stdout, 10);
  assert.ok(pid > 1, `pid printed: ${JSON.stringify(r.stdout)}`);
  assert.ok(await waitGone(pid, 10_000), `background sleeper ${pid} outlived its script`);
});

test('kill: a script ignoring SIGTERM is SIGKILLed after the grace (stalled, signal SIGKILL)', opts, async () => {
  const t0 = Date.now();
  const r = await run(client, TIMING, 'scripts/ignore_term.sh');
  const wall = Date.now() - t0;
  assert.equal(r.status, 'stalled');
  assert.equal(r.stdout, 'ignoring TERM\n');
  assert.equal(r.signal, 'SIGKILL', 'SIGTERM is ignored, so SIGKILL ends it');
  assert.equal(r.exit_code, null);
  assert.ok(wall >= 2500 && wall < 7000, `stall 1 s + 2 s grace, took ${wall} ms`);
});

test('a child escaping to a new session with stdout open does not hold up the answer', opts, async () => {
  const t0 = Date.now();
  const r = await run(client, TIMING, 'scripts/escape_session.sh');
  const wall = Date.now() - t0;
  const pid = Number.parseInt(r.stdout, 10);
  try {
    assert.equal(r.status, 'ok');
    assert.equal(r.exit_code, 0);
    assert.ok(pid > 1, `pid printed: ${JSON.stringify(r.stdout)}`);
    assert.ok(wall < 3000, `the call took ${wall} ms: the drain grace must end it after the script exits`);
  } finally {
    // Outside the process group, so outside the runner's reach: clean it up here.
    if (pid > 1) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  }
});

// ---- other servers ------------------------------------------------------------------------------

test('--no-network-env drops proxy variables; --max-script-timeout bounds a declared 600 s', opts, async () => {
  const s2 = await startRunner({
    env: { HTTPS_PROXY: 'http://proxy.example:3128', https_proxy: 'http://proxy.example:3128', MY_API_KEY: 'server-secret' },
    args: ['--no-network-env', '--script-timeout', '5', '--max-script-timeout', '5'],
  });
  try {
    const c2 = await connect(s2.url);
    try {
      const r = await run(c2, BASICS, 'scripts/env.py');
      const env = JSON.parse(r.stdout).env;
      assert.equal(env.HTTPS_PROXY, undefined, 'with --no-network-env a script must not see HTTPS_PROXY');
      assert.equal(env.https_proxy, undefined);
      assert.equal(env.MY_API_KEY, undefined);
      const h = await run(c2, BASICS, 'scripts/huge_ceiling.py');
      assert.equal(h.status, 'ok');
      assert.equal(h.timeout, 5, 'a skill declaring timeout 600 is bounded by --max-script-timeout 5');
      const q = await run(c2, BASICS, 'scripts/quick2.py');
      assert.equal(q.timeout, 2, 'a lower declared timeout is kept');
      const d = await run(c2, BASICS, 'scripts/json_out.py', { timeout: 100 });
      assert.equal(d.timeout, 5, 'the skill default (10) is bounded too');
    } finally {
      await c2.close();
    }
  } finally {
    await s2.stop();
  }
});

test('concurrency: 24 calls with --max-script-concurrency 8 all succeed; reads stay fast', opts, async () => {
  const s3 = await startRunner({ args: ['--max-script-concurrency', '8'] });
  try {
    const c3 = await connect(s3.url);
    try {
      const before0 = await scriptStats(c3);
      assert.equal(before0.max_concurrency, 8);
      const t0 = Date.now();
      const calls = Array.from({ length: 24 }, () => run(c3, BASICS, 'scripts/sleep.py', { args: ['0.5'] }));
      await sleep(150);
      const l0 = Date.now();
      const list = await callOk(c3, 'list_skills', {});
      const listMs = Date.now() - l0;
      const mid = await scriptStats(c3);
      const results = await Promise.all(calls);
      const wall = Date.now() - t0;
      console.log(`# list_skills during a 24-script burst: ${listMs} ms; burst wall ${wall} ms; mid-burst live=${mid.live} queued=${mid.queued}`);
      assert.ok(list.total >= 3);
      assert.ok(listMs < 5000, `list_skills took ${listMs} ms during the burst`);
      assert.ok(mid.live <= 8, `live ${mid.live} exceeds --max-script-concurrency 8`);
      for (const r of results) {
        assert.equal(r.status, 'ok', `${r.status}: ${r.hint}`);
        assert.equal(r.stdout, 'slept 0.5\n');
      }
      assert.equal(new Set(results.map((r) => r.request_id)).size, 24, 'request ids are unique');
      assert.ok(wall >= 1450, `24 x 0.5 s with at most 8 at once takes >= 1.5 s, took ${wall} ms`);
      assert.ok(results.filter((r) => typeof r.queued_ms === 'number' && r.queued_ms >= 300).length >= 8,
        'the calls past the first 8 waited for a slot (queued_ms)');
      const after1 = await scriptStats(c3);
      const d = delta(before0, after1);
      assert.equal(d.started, 24);
      assert.equal(d.ok, 24);
      assert.equal(after1.live, 0);
      assert.equal(after1.queued, 0);
    } finally {
      await c3.close();
    }
  } finally {
    await s3.stop();
  }
});

let s4;
let c4;
test('busy: one slot, 1 s queue timeout -> the second call ends busy, the first is ok', opts, async () => {
  s4 = await startRunner({ args: ['--max-script-concurrency', '1', '--script-queue-timeout', '1'] });
  c4 = await connect(s4.url);
  const st0 = await scriptStats(c4);
  assert.equal(st0.max_concurrency, 1);
  const first = run(c4, TIMING, 'scripts/three.py');
  // the first call holds the one slot before the second is sent
  assert.ok(await poll(async () => (await scriptStats(c4)).live === 1, 10_000, 20), 'three.py runs');
  const t0 = Date.now();
  const second = await run(c4, BASICS, 'scripts/quick2.py');
  const wall = Date.now() - t0;
  assert.equal(second.status, 'busy');
  assert.equal(second.exit_code, null);
  assert.equal(second.stdout, '');
  assert.equal(second.stderr, '');
  assert.match(second.hint, /busy/);
  assert.match(second.hint, /Retry/);
  assert.ok(second.queued_ms >= 900 && second.queued_ms < 3000, `queued_ms ${second.queued_ms}`);
  assert.ok(wall >= 900 && wall < 2900, `busy after ${wall} ms (queue timeout 1 s)`);
  const f = await first;
  assert.equal(f.status, 'ok');
  assert.equal(f.stdout, 'three seconds later\n');
  const st1 = await scriptStats(c4);
  const d = delta(st0, st1);
  assert.deepEqual(d, { started: 1, ok: 1, failed: 0, stalled: 0, timeout: 0, denied: 0, busy: 1 });
});

test('stats: scripts counters move with each outcome; refused calls start nothing', opts, async () => {
  assert.ok(c4, 'needs the server of the busy test');
  const st0 = await scriptStats(c4);
  assert.equal((await run(c4, BASICS, 'scripts/quick2.py')).status, 'ok');
  assert.equal((await run(c4, BASICS, 'scripts/fail3.py')).status, 'failed');
  assert.equal((await run(c4, BASICS, 'scripts/segv.sh')).status, 'failed');
  assert.equal((await run(c4, TIMING, 'scripts/stall.py')).status, 'stalled');
  assert.equal((await run(c4, TIMING, 'scripts/heartbeat.py', { timeout: 1 })).status, 'timeout');
  await callErr(c4, 'run_skill_script', { name: BASICS, script: 'scripts/env.py', env: { LD_PRELOAD: 'x' } });
  await callErr(c4, 'run_skill_script', { name: BASICS, script: 'notes/x.sh' });
  const st1 = await scriptStats(c4);
  assert.deepEqual(delta(st0, st1), { started: 5, ok: 1, failed: 2, stalled: 1, timeout: 1, denied: 0, busy: 0 });
  assert.equal(st1.live, 0);
  assert.equal(st1.queued, 0);
  const full = await callOk(c4, 'skill_server_stats', {});
  assert.ok(full.tools?.run_skill_script?.calls >= 7, 'per-tool stats count run_skill_script calls');
});

after(async () => {
  try { await c4?.close(); } finally { await s4?.stop(); }
});

test('--no-scripts: run_skill_script is not listed and calling it is a -32602 error', opts, async () => {
  const s5 = await startRunner({ args: ['--no-scripts'] });
  try {
    const c5 = await connect(s5.url);
    try {
      const tools = (await c5.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('list_skills'));
      assert.equal(tools.includes('run_skill_script'), false, `tools/list: ${tools.join(', ')}`);
      await assert.rejects(
        c5.callTool({ name: 'run_skill_script', arguments: { name: BASICS, script: 'scripts/quick2.py' } }),
        (e) => {
          assert.equal(e.code, -32602, `expected -32602, got ${e.code}: ${e.message}`);
          return true;
        });
      const st = await callOk(c5, 'skill_server_stats', {});
      assert.equal(st.scripts, undefined, 'no scripts counters on a read-only server');
    } finally {
      await c5.close();
    }
  } finally {
    await s5.stop();
  }
});

// ---- the long ceiling (started in before(), ~16 s, overlapping the tests above) -----------------

test('long ceiling (16 s): a script still printing at its ceiling -> timeout, "slow, not stuck"', { timeout: 45_000 }, async () => {
  const { r, e, wall } = await longRun;
  if (e) throw e;
  assert.equal(r.status, 'timeout');
  assert.equal(r.timeout, 16);
  assert.equal(r.stall_timeout, 5);
  assert.match(r.hint, /slow, not stuck/);
  assert.doesNotMatch(r.hint, /should answer at once/);
  assert.ok(r.stdout.startsWith('working 1\nworking 2\n'), 'output before the kill is returned');
  assert.ok((r.stdout.match(/^working \d+$/gm) ?? []).length >= 40, 'about 80 lines in 16 s');
  assert.ok(r.duration_ms >= 15_900 && r.duration_ms < 22_000, `duration_ms ${r.duration_ms}`);
  assert.ok(wall >= 15_900, `wall ${wall}`);
  assert.equal(r.signal, 'SIGTERM');
});
