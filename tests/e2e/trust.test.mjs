// Runner trust (docs/security.md#the-script-runner): what runs is what was
// checked, under the limits and hooks its one identity carries, and nothing
// of a run outlives it.
//
// - one identity per script whatever the spelling: hooks, execution: limits
// - the file checked is the file run: a swap for a symlink between the check
//   and the interpreter's open never runs the outside file
// - processes that leave the run's process group (setsid) are killed
// - a caller's 1e300 seconds is clamped before any conversion
// - a planted __pycache__ .pyc is never imported, and a locked skill with
//   one is refused
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import {
  startServer, connect, call, callOk as callOkA, callErr as callErrA, indexerSettled, poll, runCli, TEST_TIMEOUT,
} from './lib/harness.mjs';
import { waitGone, procState, scriptStats } from './lib/procs.mjs';

const opts = { timeout: TEST_TIMEOUT };
const callOk = (c, n, a) => callOkA(assert, c, n, a);
const callErr = (c, n, a) => callErrA(assert, c, n, a);
const OUTSIDE = 'OUTSIDE-THE-SKILL-RAN';

// Writes a .pyc for mod.py that Python takes for current (same mtime and
// size in its header) but that holds other code.
const PLANT = `
import os, py_compile, sys
p = os.path.join(sys.argv[1], 'mod.py')
open(p, 'w').write("X = 'evil'\\n")
st = os.stat(p)
py_compile.compile(p, doraise=True)
open(p, 'w').write("X = 'good'\\n")
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
`;
function plantPyc(scriptsDir) {
  const r = spawnSync('python3', ['-c', PLANT, scriptsDir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.ok(fs.readdirSync(path.join(scriptsDir, '__pycache__')).some((f) => f.startsWith('mod.')));
  // the plant works: plain python3 -B imports the bytecode, not the source
  const seen = spawnSync('python3', ['-B', '-c', 'import mod; print(mod.X)'], { cwd: scriptsDir, encoding: 'utf8' });
  assert.equal(seen.stdout.trim(), 'evil', 'the planted .pyc must be one Python would load');
}

function skill(root, name, fm, files) {
  const d = path.join(root, name);
  fs.mkdirSync(path.join(d, 'scripts'), { recursive: true });
  fs.writeFileSync(path.join(d, 'SKILL.md'), `---\nname: ${name}\ndescription: Runner trust test skill ${name}.\n${fm}---\n# ${name}\n`);
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(d, rel)), { recursive: true });
    fs.writeFileSync(path.join(d, rel), text);
  }
  return d;
}

const PRE_HOOK = `import json, sys
d = json.load(sys.stdin)
if d['script'] == 'scripts/sub/danger.sh':
    print(json.dumps({'reason': 'danger.sh is denied by policy'}))
    sys.exit(1)
print(json.dumps({'note': 'hook saw ' + d['script']}))
`;

let s;
let client;
let outsideFile;
before(async () => {
  s = await startServer({
    args: ['--script-stall-timeout', '0'],
    setup: (skills, dir) => {
      outsideFile = path.join(dir, 'outside.py');
      fs.writeFileSync(outsideFile, `print('${OUTSIDE}')\n`);
      const id = skill(skills, 'trust-id',
        'execution:\n  scripts/sub/danger.sh: {timeout: 2}\n  scripts/sub/limited.sh: {timeout: 2, stall_timeout: 1}\n  scripts/./top.sh: {timeout: 3}\n',
        {
          'hooks/pre.py': PRE_HOOK,
          'scripts/sub/danger.sh': 'echo danger ran\n',
          'scripts/sub/limited.sh': 'echo limited ran\n',
          'scripts/top.sh': 'echo top ran\n',
        });
      fs.symlinkSync('sub/danger.sh', path.join(id, 'scripts', 'alias.sh'));
      skill(skills, 'trust-race', '', { 'scripts/swap.py': "print('inside')\n" });
      skill(skills, 'trust-orphans', 'execution:\n  scripts/hang.sh: {timeout: 1}\n', {
        'scripts/leave.sh': 'setsid sleep 120 >/dev/null 2>&1 </dev/null &\necho "$!"\n',
        'scripts/hang.sh': 'setsid sleep 120 >/dev/null 2>&1 </dev/null &\necho "$!"\nsleep 30\n',
        'scripts/quick.sh': 'sleep 0.3\necho done\n',
      });
      skill(skills, 'trust-hook', '', {
        'hooks/pre.py': "import json\nprint(json.dumps({'note': 'inside hook'}))\n",
        'scripts/a.sh': 'echo script ran\n',
      });
      fs.writeFileSync(path.join(dir, 'outside-hook.py'),
        `import json\nprint(json.dumps({'note': '${OUTSIDE}'}))\n`);
      const py = skill(skills, 'trust-pyc', '', {
        'scripts/run.py': 'import mod\nprint(mod.X)\n',
        'scripts/mod.py': "X = 'good'\n",
      });
      plantPyc(path.join(py, 'scripts'));
    },
  });
  // The checks at use are the subject: the body indexer's rescan, seeing a
  // hook swapped for a link out, would drop the hook from the skill first.
  await indexerSettled(s);
  client = await connect(s.url);
});
after(async () => {
  try { await client?.close(); } finally { await s?.stop(); }
});

async function runSc(name, script, extra = {}) {
  const r = await call(client, 'run_skill_script', { name, script, ...extra });
  assert.ok(r.structuredContent, `${script}: expected a run result, got ${JSON.stringify(r).slice(0, 300)}`);
  return r.structuredContent;
}

test('script identity: every spelling gets the same hook input and execution limits, or a clear refusal', opts, async () => {
  // The pre hook denies exactly scripts/sub/danger.sh: no spelling gets past it.
  for (const sp of ['scripts/sub/danger.sh', 'scripts/sub//danger.sh', 'scripts//sub/danger.sh',
    'scripts///sub///danger.sh', 'scripts/alias.sh', 'alias.sh']) {
    const r = await runSc('trust-id', sp);
    assert.equal(r.status, 'denied', `${sp} must reach the hook as scripts/sub/danger.sh: ${JSON.stringify(r)}`);
    assert.match(r.hint, /danger\.sh is denied by policy/);
    assert.equal(r.timeout, 2, `${sp}: the execution: entry of scripts/sub/danger.sh applies`);
    assert.equal(r.stdout, '');
  }
  // An allowed script: the hook's input and the limits are the same for each spelling.
  for (const sp of ['scripts/sub/limited.sh', 'scripts/sub//limited.sh', 'scripts//sub/limited.sh']) {
    const r = await runSc('trust-id', sp);
    assert.equal(r.status, 'ok', JSON.stringify(r));
    assert.equal(r.stdout, 'limited ran\n');
    assert.equal(r.note, 'hook saw scripts/sub/limited.sh', `${sp}: hook input`);
    assert.equal(r.timeout, 2);
    assert.equal(r.stall_timeout, 1);
  }
  // Other spellings are refused before anything runs, saying why.
  const refused = [
    ['scripts/./sub/danger.sh', /'\.' is not allowed/],
    ['./scripts/sub/danger.sh', /'\.' is not allowed/],
    ['scripts/sub/../sub/danger.sh', /'\.\.' is not allowed/],
    ['scripts/sub/danger.sh/', /no such script/],
    ['scripts/SUB/danger.sh', /no such script/],
    ['scripts/sub/DANGER.sh', /no such script/],
    ['danger.sh', /no such script/],
    ['sub/danger.sh', /only files in the skill's scripts\/ folder/],
  ];
  for (const [sp, re] of refused) {
    const text = await callErr(client, 'run_skill_script', { name: 'trust-id', script: sp });
    assert.match(text, re, sp);
    assert.doesNotMatch(text, /danger ran/);
  }
  // An execution: key written as scripts/./top.sh applies to nothing.
  const top = await runSc('trust-id', 'scripts/top.sh');
  assert.equal(top.status, 'ok');
  assert.equal(top.timeout, 30);
  // validate says so
  const v = runCli(['validate', s.skills]);
  assert.equal(v.code, 1);
  assert.match(v.stdout + v.stderr, /execution key 'scripts\/\.\/top\.sh' is not written as a plain path/);
});

test('check and use: a script swapped for a symlink to an outside file never runs the outside file', { timeout: 60_000 }, async () => {
  const sd = path.join(s.skills, 'trust-race', 'scripts');
  // Swaps scripts/swap.py between itself and a symlink out of the skill, as fast as it can.
  const swapper = spawn('python3', ['-c', `
import os, sys
d, out = sys.argv[1], sys.argv[2]
p, t1, t2 = os.path.join(d, 'swap.py'), os.path.join(d, 't1'), os.path.join(d, 't2')
while True:
    try: os.unlink(t1)
    except FileNotFoundError: pass
    os.symlink(out, t1)
    os.rename(t1, p)
    with open(t2, 'w') as f: f.write("print('inside')\\n")
    os.rename(t2, p)
`, sd, outsideFile], { stdio: 'ignore' });
  const seen = { inside: 0, refused: 0, denied: 0, batches: 0 };
  // At least the first 12 s (or 400 batches) of calls, whatever they meet,
  // then on until both a real run and a refusal have been seen: on a loaded
  // machine the swapper may get little CPU, so what 12 s catch varies.
  const calls = Date.now();
  const bothSeen = () => seen.inside > 0 && seen.refused + seen.denied > 0;
  try {
    for (;;) {
      const spent = Date.now() - calls;
      if (spent >= 45_000 || ((spent >= 12_000 || seen.batches >= 400) && bothSeen())) break;
      const batch = await Promise.all([0, 1, 2, 3].map(() =>
        call(client, 'run_skill_script', { name: 'trust-race', script: 'scripts/swap.py' })));
      seen.batches++;
      for (const r of batch) {
        const text = JSON.stringify(r);
        assert.equal(text.includes(OUTSIDE), false, `a call ran the file outside the skill: ${text.slice(0, 400)}`);
        const sc = r.structuredContent;
        if (sc?.status === 'ok') { assert.equal(sc.stdout, 'inside\n'); seen.inside++; }
        else if (sc?.status === 'denied') { assert.match(sc.hint, /replaced after it was checked|disappeared/); seen.denied++; }
        else {
          // the path always exists (each swap is a rename): a refusal is of the
          // link, or of the real script renamed over between open and check
          assert.equal(r.isError, true, text.slice(0, 400));
          assert.match(r.content?.[0]?.text ?? '', /^Cannot run 'scripts\/swap\.py' of skill 'trust-race': the script (leads outside the skill's scripts\/ folder|disappeared while it was being opened)/, text.slice(0, 400));
          seen.refused++;
        }
      }
    }
  } finally {
    swapper.kill('SIGKILL');
  }
  assert.ok(seen.inside > 0, `some calls must have run the real script within 45 s: ${JSON.stringify(seen)}`);
  assert.ok(seen.refused + seen.denied > 0, `the swap must have been seen within 45 s: ${JSON.stringify(seen)}`);
});

test('check and use: a skill hook swapped for a symlink out of the skill is refused, never run', opts, async () => {
  let r = await runSc('trust-hook', 'scripts/a.sh');
  assert.equal(r.status, 'ok', JSON.stringify(r));
  assert.equal(r.note, 'inside hook');
  const hook = path.join(s.skills, 'trust-hook', 'hooks', 'pre.py');
  const kept = fs.readFileSync(hook);
  fs.rmSync(hook);
  fs.symlinkSync(path.join(path.dirname(outsideFile), 'outside-hook.py'), hook);
  try {
    const raw = await call(client, 'run_skill_script', { name: 'trust-hook', script: 'scripts/a.sh' });
    const text = JSON.stringify(raw);
    assert.equal(text.includes(OUTSIDE), false, `the hook outside the skill ran: ${text.slice(0, 400)}`);
    assert.equal(text.includes('script ran'), false, `the script ran without its pre hook: ${text.slice(0, 400)}`);
    assert.match(text, /skill pre hook .*cannot run: the hook leads outside the skill folder/);
  } finally {
    fs.rmSync(hook);
    fs.writeFileSync(hook, kept);
  }
  r = await runSc('trust-hook', 'scripts/a.sh');
  assert.equal(r.note, 'inside hook', 'the hook put back runs again');
});

test('check and use: a file replaced while its call waits in the queue is refused at spawn', opts, async () => {
  const q = await startServer({
    args: ['--max-script-concurrency', '1'],
    setup: (skills, dir) => {
      fs.writeFileSync(path.join(dir, 'outside.sh'), `echo ${OUTSIDE}\n`);
      skill(skills, 'trust-queue', '', {
        'scripts/hold.sh': 'sleep 1.5\necho held\n',
        'scripts/swap.sh': 'echo inside\n',
      });
    },
  });
  try {
    const c = await connect(q.url);
    const hold = call(c, 'run_skill_script', { name: 'trust-queue', script: 'scripts/hold.sh' });
    assert.ok(await poll(async () => (await scriptStats(c)).live === 1, 10_000, 20), 'hold.sh runs');
    const queued = call(c, 'run_skill_script', { name: 'trust-queue', script: 'scripts/swap.sh' });
    // checked, then queued behind hold.sh: only then is the file swapped
    assert.ok(await poll(async () => (await scriptStats(c)).queued === 1, 10_000, 20), 'swap.sh waits in the queue');
    const p = path.join(q.skills, 'trust-queue', 'scripts', 'swap.sh');
    fs.symlinkSync(path.join(q.dir, 'outside.sh'), `${p}.new`);
    fs.renameSync(`${p}.new`, p);
    const [h, r] = await Promise.all([hold, queued]);
    assert.equal(h.structuredContent.status, 'ok');
    const sc = r.structuredContent;
    assert.ok(sc, JSON.stringify(r));
    assert.equal(sc.status, 'denied', JSON.stringify(sc));
    assert.match(sc.hint, /replaced after it was checked/);
    assert.equal(JSON.stringify(sc).includes(OUTSIDE), false);
    assert.ok(sc.queued_ms > 300, `the call must have waited in the queue: ${sc.queued_ms}`);
    await c.close();
  } finally {
    await q.stop();
  }
});

test('orphans: a setsid grandchild of a script that succeeds does not outlive the call', opts, async () => {
  const r = await runSc('trust-orphans', 'scripts/leave.sh');
  assert.equal(r.status, 'ok');
  const pid = Number(r.stdout.trim());
  assert.ok(pid > 0, r.stdout);
  assert.ok(await waitGone(pid, 10_000), `sleep ${pid} survived its run (state ${procState(pid)})`);
  // reaped too, not left a zombie of the server
  assert.ok(await poll(() => procState(pid) === null, 10_000, 50), `sleep ${pid} is still in /proc (state ${procState(pid)})`);
});

test('orphans: a setsid grandchild of a script that times out does not outlive the call', opts, async () => {
  const r = await runSc('trust-orphans', 'scripts/hang.sh');
  assert.equal(r.status, 'timeout');
  const pid = Number(r.stdout.trim());
  assert.ok(pid > 0, r.stdout);
  assert.ok(await waitGone(pid, 10_000), `sleep ${pid} survived its run (state ${procState(pid)})`);
  assert.ok(await poll(() => procState(pid) === null, 10_000, 50), `sleep ${pid} is still in /proc (state ${procState(pid)})`);
});

test('durations: a caller stall_timeout or timeout of 1e300 is clamped, not converted as is', opts, async () => {
  // Stall detection is off on this server and in the skill: 1e300 turns it
  // on at the ceiling instead of overflowing to 0 and killing the script.
  let r = await runSc('trust-orphans', 'scripts/quick.sh', { stall_timeout: 1e300 });
  assert.equal(r.status, 'ok', JSON.stringify(r));
  assert.equal(r.stdout, 'done\n');
  assert.equal(r.stall_timeout, 600);
  r = await runSc('trust-orphans', 'scripts/quick.sh', { timeout: 1e300, stall_timeout: 1e300 });
  assert.equal(r.status, 'ok', JSON.stringify(r));
  assert.equal(r.timeout, 30);
});

test('bytecode: a planted __pycache__ .pyc matching the source is not imported', opts, async () => {
  const r = await runSc('trust-pyc', 'scripts/run.py');
  assert.equal(r.status, 'ok', JSON.stringify(r));
  assert.equal(r.stdout, 'good\n');
});

// Two python3 and three CLI runs, each blocking, then a server: 11 s under
// ASan on a loaded machine, and past 30 s with three more test files beside it.
test('bytecode: a locked skill with a __pycache__ folder is reported by lock status, quarantined and not run', { timeout: 60_000 }, async () => {
  const tmp = fs.mkdtempSync('/tmp/skill-mcp-e2e-trust-lock-');
  fs.chmodSync(tmp, 0o755);
  const root = path.join(tmp, 'skills');
  const lock = path.join(tmp, 'skills.lock');
  const d = skill(root, 'pyc', '', { 'scripts/run.py': 'import mod\nprint(mod.X)\n', 'scripts/mod.py': "X = 'good'\n" });
  fs.chmodSync(root, 0o755);
  try {
    const a = runCli(['lock', 'approve', 'pyc', '--by', 'alice', '--lock', lock, '--skills', root]);
    assert.equal(a.code, 0, a.stderr);
    plantPyc(path.join(d, 'scripts'));
    const st = runCli(['lock', 'status', '--lock', lock, '--skills', root]);
    assert.match(st.stdout, /pyc: cannot be checked: it holds a __pycache__\/ folder/);
    assert.notEqual(st.code, 0);
    const again = runCli(['lock', 'approve', 'pyc', '--by', 'alice', '--lock', lock, '--skills', root]);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /__pycache__/);
    const srv = await startServer({ skillsDirs: [root], args: ['--lock', lock] });
    try {
      const c = await connect(srv.url);
      const list = await callOk(c, 'list_skills', {});
      const card = list.skills.find((k) => k.name === 'pyc');
      assert.equal(card.quarantined, true, JSON.stringify(card));
      assert.match(card.quarantine_reason, /__pycache__/);
      const text = await callErr(c, 'run_skill_script', { name: 'pyc', script: 'scripts/run.py' });
      assert.doesNotMatch(text, /evil/);
      await c.close();
    } finally {
      await srv.stop();
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
