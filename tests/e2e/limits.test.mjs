// Resource limits on every script and hook (RLIMIT_CPU, RLIMIT_AS,
// RLIMIT_FSIZE, RLIMIT_NPROC, set by the child before exec), and the result naming the
// limit that ended a run (`limit` and a hint that names the flag).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { TEST_TIMEOUT, connect, startServer } from './lib/harness.mjs';

const root = process.getuid && process.getuid() === 0;
const opts = { timeout: TEST_TIMEOUT };
let dir;
let srv;
let client;

const SCRIPTS = {
  // bytes(n) comes from calloc: address space (RLIMIT_AS) without touching
  // pages, so the memory limit fires long before 1 s of CPU on a busy machine.
  'hog.py': 'a = []\nwhile True:\n    a.append(bytes(16 << 20))\n',
  'spin.py': 'while True:\n    pass\n',
  'big.sh': 'head -c 3000000 /dev/zero > "$HOME/big"\necho "after the write"\n',
  'big.py': 'import os\nwith open(os.environ["HOME"] + "/big", "wb") as f:\n    f.write(b"0" * 3000000)\n',
  'forks.py': 'import os, sys, time\nkids = 0\ntry:\n    for i in range(200):\n' +
    '        if os.fork() == 0:\n            time.sleep(30)\n            os._exit(0)\n' +
    '        kids += 1\nexcept BlockingIOError:\n    print("forked", kids, flush=True)\n    raise\n',
  // printed as given, a value from a pre hook would come back redacted
  // (docs/security.md, "Redaction"): commas for its spaces
  'limits.sh': 'echo "hook: ${LIMITS_SEEN// /,}"\n' +
    'awk \'/Max cpu time|Max address space|Max file size|Max processes|Max core/{print $(NF-2)}\' /proc/self/limits | tr "\\n" " "\n',
  'fail.sh': 'echo "nothing special went wrong" >&2\nexit 3\n',
  'hello.js': 'console.log("hello from node " + process.version.length);\n',
};

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-limits-'));
  fs.chmodSync(dir, 0o755);
  const sk = path.join(dir, 'hog');
  fs.mkdirSync(path.join(sk, 'scripts'), { recursive: true });
  fs.mkdirSync(path.join(sk, 'hooks'));
  fs.writeFileSync(path.join(sk, 'SKILL.md'), '---\nname: hog\ndescription: Scripts that hit their limits\n---\n# Hog\n');
  for (const [f, text] of Object.entries(SCRIPTS)) fs.writeFileSync(path.join(sk, 'scripts', f), text);
  fs.writeFileSync(path.join(sk, 'hooks', 'pre.sh'),
    'read -r -d "" _ || true\n' +
    'printf \'{"env":{"LIMITS_SEEN":"%s"}}\' "$(awk \'/Max cpu time|Max address space|Max file size|Max processes/{print $(NF-2)}\' /proc/self/limits | tr "\\n" " ")"\n');
  for (const d of ['', 'scripts', 'hooks']) fs.chmodSync(path.join(sk, d), 0o755);
  srv = await startServer({
    skillsDirs: [dir],
    args: ['--script-memory-limit', '256', '--script-file-size-limit', '1', '--script-cpu-limit', '1',
      '--script-max-processes', '3000', '--hook-timeout', '5'],
  });
  client = await connect(srv.url);
});
after(async () => {
  await client?.close();
  await srv?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const run = async (script, extra = {}) => (await client.callTool({
  name: 'run_skill_script', arguments: { name: 'hog', script, ...extra },
})).structuredContent;

test('every script and hook gets the configured rlimits, and no core files', opts, async () => {
  const r = await run('limits.sh');
  assert.equal(r.status, 'ok', r.hint);
  const [hookLine, own] = r.stdout.split('\n');
  // /proc/self/limits order: cpu time, file size, core, processes, address space
  assert.deepEqual(own.trim().split(' '), ['1', String(1 << 20), '0', '3000', String(256 << 20)]);
  assert.deepEqual(hookLine.replace('hook: ', '').replace(/,+$/, '').split(','),
    ['1', String(1 << 20), '3000', String(256 << 20)], 'the pre hook ran under the same limits');
});

test('a script that allocates without bound ends failed, naming the memory limit', opts, async () => {
  const r = await run('hog.py');
  assert.equal(r.status, 'failed');
  assert.equal(r.limit, 'memory', JSON.stringify(r));
  assert.match(r.hint, /256 MiB memory limit/);
  assert.match(r.hint, /--script-memory-limit/);
  assert.match(r.stderr, /MemoryError/);
});

test('a CPU-bound script is stopped by RLIMIT_CPU (SIGXCPU), before its ceiling', opts, async () => {
  const t0 = Date.now();
  const r = await run('spin.py', { timeout: 15 });
  assert.equal(r.status, 'failed', r.hint);
  assert.equal(r.limit, 'cpu');
  assert.equal(r.signal, 'SIGXCPU');
  assert.match(r.hint, /--script-cpu-limit/);
  assert.ok(Date.now() - t0 < 14_000, 'the CPU limit fired, not the 15 s ceiling');
});

test('writing past RLIMIT_FSIZE: python (EFBIG) ends naming the limit; bash only loses the writing child', opts, async () => {
  const sh = await run('big.sh');
  assert.equal(sh.status, 'ok', 'bash goes on after its child was stopped');
  const py = await run('big.py');
  assert.equal(py.status, 'failed');
  assert.equal(py.limit, 'file_size', JSON.stringify(py));
  assert.match(py.hint, /1 MiB limit/);
});

test('forking past RLIMIT_NPROC ends with limit "processes"', { ...opts, skip: root ? false : 'needs root: RLIMIT_NPROC counts every process of the user, so it is tested on nobody' }, async () => {
  // Its own server: RLIMIT_NPROC counts all of nobody's processes, other
  // test files' scripts included, so only this run gets the low cap (and
  // others running at the same time can only make it fork fewer).
  // The cap is well above what other files' scripts hold of nobody's
  // processes at a time under the ASan run, or the script cannot even start.
  const CAP = 100;
  // A skill of its own without the hog's pre hook: under a low cap the
  // hook's own forks can fail first (and deny the call) when other files'
  // scripts hold nobody's slots.
  const own = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-nproc-'));
  fs.mkdirSync(path.join(own, 'forker', 'scripts'), { recursive: true });
  fs.writeFileSync(path.join(own, 'forker', 'SKILL.md'), '---\nname: forker\ndescription: Forks past its cap\n---\n# Forker\n');
  fs.writeFileSync(path.join(own, 'forker', 'scripts', 'forks.py'), SCRIPTS['forks.py']);
  for (const d of ['', 'forker', 'forker/scripts']) fs.chmodSync(path.join(own, d), 0o755);
  const s = await startServer({ skillsDirs: [own], args: ['--script-max-processes', String(CAP)] });
  try {
    const c = await connect(s.url);
    // Other test files' scripts run as nobody too: at the moment of a start
    // they can hold its slots, and then the run cannot even start (its
    // exec is refused: the next test's case). That is the cap working, not
    // the case under test here (a fork inside the script refused): again,
    // a few times.
    let r;
    for (let i = 0; i < 5; i++) {
      r = (await c.callTool({ name: 'run_skill_script', arguments: { name: 'forker', script: 'forks.py' } })).structuredContent;
      if (!/could not be started/.test(r.hint)) break;
      await new Promise((res) => setTimeout(res, 300));
    }
    await c.close();
    assert.equal(r.status, 'failed', r.stdout + r.stderr);
    assert.equal(r.limit, 'processes', JSON.stringify(r));
    const m = /forked (\d+)/.exec(r.stdout);
    assert.ok(m && Number(m[1]) < CAP, `the script ran and forked fewer than ${CAP}: ${JSON.stringify(r)}`);
    assert.match(r.hint, /--script-max-processes/);
  } finally {
    await s.stop();
    fs.rmSync(own, { recursive: true, force: true });
  }
});

// A skill folder of its own (files: path -> text under the skill), and a
// server on it whose script user, nobody, is already over a cap of 1: two
// sleeps of nobody's are running, so the kernel refuses the exec of the
// next process that becomes nobody (its test is "more than the limit"),
// whatever else runs as nobody. fn(client) returns a run's result.
async function overProcessCap(name, files, fn) {
  const own = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-nproc-'));
  fs.mkdirSync(path.join(own, name), { recursive: true });
  fs.writeFileSync(path.join(own, name, 'SKILL.md'), `---\nname: ${name}\ndescription: Cannot even start\n---\n# ${name}\n`);
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(own, name, rel)), { recursive: true });
    fs.writeFileSync(path.join(own, name, rel), text);
  }
  execFileSync('chmod', ['-R', 'a+rX', own]);
  const sleepers = [0, 1].map(() => spawn('sleep', ['60'], { uid: 65534, gid: 65534, stdio: 'ignore' }));
  const s = await startServer({ skillsDirs: [own], args: ['--script-max-processes', '1'] });
  try {
    const c = await connect(s.url);
    const r = (await c.callTool({ name: 'run_skill_script', arguments: { name, script: 'hello.sh' } })).structuredContent;
    await c.close();
    return r;
  } finally {
    for (const p of sleepers) p.kill('SIGKILL');
    await s.stop();
    fs.rmSync(own, { recursive: true, force: true });
  }
}

const nprocSkip = root ? false : 'needs root: RLIMIT_NPROC counts every process of the user, so it is tested on nobody';

test('a run whose exec RLIMIT_NPROC refuses names limit "processes" and says a retry can work', { ...opts, skip: nprocSkip }, async () => {
  const r = await overProcessCap('starter', { 'scripts/hello.sh': 'echo hello\n' });
  assert.equal(r.status, 'failed', JSON.stringify(r));
  assert.equal(r.stdout, '');
  assert.equal(r.limit, 'processes', JSON.stringify(r));
  assert.match(r.hint, /could not be started: its user already had more processes \(threads count too\) than the 1 it may have/);
  assert.match(r.hint, /--script-max-processes\)\. Retry when fewer scripts run/);
});

test('a pre hook whose exec RLIMIT_NPROC refuses fails the call with limit processes and a retry hint', { ...opts, skip: nprocSkip }, async () => {
  const r = await overProcessCap('hooked', { 'scripts/hello.sh': 'echo hello\n', 'hooks/pre.sh': 'cat >/dev/null\nexit 0\n' });
  assert.equal(r.status, 'failed', JSON.stringify(r));
  assert.equal(r.stdout ?? '', '');
  assert.match(r.hint, /pre hook .* did not finish/);
  assert.equal(r.limit, 'processes', 'named like a script\'s refused start');
  assert.match(r.hint, /more processes \(threads count too\) than RLIMIT_NPROC allows \(--script-max-processes\): retry when fewer scripts run/);
});

test('an ordinary failure names no limit; node still starts under the default memory limit', opts, async () => {
  const f = await run('fail.sh');
  assert.equal(f.status, 'failed');
  assert.equal(f.exit_code, 3);
  assert.equal(f.limit, undefined);
  const s = await startServer({ skillsDirs: [dir] });
  try {
    const c = await connect(s.url);
    const r = (await c.callTool({ name: 'run_skill_script', arguments: { name: 'hog', script: 'hello.js' } })).structuredContent;
    assert.equal(r.status, 'ok', r.stderr);
    assert.match(r.stdout, /^hello from node/);
    await c.close();
  } finally {
    await s.stop();
  }
});
