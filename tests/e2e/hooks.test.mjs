// Pre/post hooks around run_skill_script, end to end (docs/hooks.md):
// every verdict (allow, env, args, note, deny, replace, fail), the order
// (global pre, skill pre, script, skill post, global post), what a hook sees
// (input, environment, folder), reload, malformed output, a hanging hook,
// inputs past a pipe buffer, a skill with no hooks, and the repository's own
// example global hooks (hooks/pre.py, hooks/post.py).
//
// Skills: fixtures/hook-skills/skills, copied to a temp dir per server.
// Global hooks: fixtures/hook-skills/global-hooks, copied to a temp dir of
// this file (with the trace dir the hooks write to, passed as HOOK_TRACE_DIR).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  startServer, connect, callOk as callOkA, callErr as callErrA, postModern, poll, E2E_DIR, REPO,
} from './lib/harness.mjs';
import { pidGone, waitGone, runScript, scriptStats } from './lib/procs.mjs';

const HOOK_FIXTURES = path.join(E2E_DIR, 'fixtures', 'hook-skills');
const opts = { timeout: 20_000 };
const callOk = (c, n, a) => callOkA(assert, c, n, a);
const callErr = (c, n, a) => callErrA(assert, c, n, a);

// ---- helpers -------------------------------------------------------------------

const startHooked = ({ env, args = [], setup } = {}) => startServer({ fixtures: path.join(HOOK_FIXTURES, 'skills'), env, args, setup });

const run = runScript;

const readLines = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').filter(Boolean) : []);
const readJson = (f) => JSON.parse(fs.readFileSync(f, 'utf8'));

// ---- the main server --------------------------------------------------------------
// Global hooks from fixtures/hook-skills/global-hooks; every hook has a 2 s
// ceiling; the server's environment carries a HOOK_* variable (for hooks
// only) and a secret (for nobody).

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-e2e-hooks-'));
// A root server runs hooks and scripts as nobody: they read the hooks here
// and write their traces, markers and the audit log here too.
fs.chmodSync(work, 0o777);
const TRACE = path.join(work, 'trace');
const GLOBAL = path.join(work, 'global');
const EMPTY_GLOBAL = path.join(work, 'global-empty');
const marker = (tag) => path.join(work, `marker-${tag}-${crypto.randomBytes(4).toString('hex')}`);

let s;
let client;
before(async () => {
  fs.mkdirSync(TRACE, { mode: 0o777 });
  fs.chmodSync(TRACE, 0o777);
  fs.mkdirSync(EMPTY_GLOBAL);
  fs.cpSync(path.join(HOOK_FIXTURES, 'global-hooks'), GLOBAL, { recursive: true });
  s = await startHooked({
    env: { HOOK_TRACE_DIR: TRACE, HOOK_SECRET_FOR_HOOKS: 'hook-only-value', SERVER_SECRET: 'server-only-value' },
    args: ['--hooks-dir', GLOBAL, '--hook-timeout', '2'],
  });
  client = await connect(s.url);
  await client.listTools(); // caches output schemas: the SDK then validates every result
});
after(async () => {
  try { await client?.close(); } finally {
    try { await s?.stop(); } finally { fs.rmSync(work, { recursive: true, force: true }); }
  }
});

// ---- verdicts -----------------------------------------------------------------------

test('allow: pre and post hooks that print nothing leave the result as the script made it', opts, async () => {
  const r = await run(client, 'h-allow', 'scripts/echo.sh', { args: ['a b'] });
  assert.equal(r.status, 'ok', r.hint);
  assert.equal(r.exit_code, 0);
  assert.equal(r.stdout, 'allowed: a b\n');
  assert.equal(r.stderr, 'diagnostics\n');
  assert.equal(r.stdout_bytes, 13);
  assert.equal(r.hint, 'The script succeeded; stdout is its answer.');
  assert.equal(r.note, undefined, 'no note unless a pre hook gives one');
});

test('env: a pre hook adds a variable and overrides the caller\'s; the others are kept', opts, async () => {
  const r = await run(client, 'h-env', 'scripts/env.sh', { env: { CALLER_VAR: 'from the caller', OTHER: 'kept' } });
  assert.equal(r.status, 'ok', r.hint);
  // the values given to the script come back redacted (docs/security.md,
  // "Redaction"): a marker where the script printed the value it was given
  // (the caller's 'from the caller' would show as is); 'kept' is too short
  assert.equal(r.stdout, 'GREETING=[REDACTED:env:GREETING]\nCALLER_VAR=[REDACTED:env:CALLER_VAR]\nOTHER=kept\n');
});

test('args: a pre hook replaces the arguments (it saw the caller\'s)', opts, async () => {
  const r = await run(client, 'h-args', 'scripts/echo_args.py', { args: ['one', 'two words'] });
  assert.equal(r.status, 'ok', r.hint);
  assert.deepEqual(JSON.parse(r.stdout), ['from-pre', 'ONE', 'TWO WORDS']);
});

test('note: a pre hook\'s note comes back in result.note', opts, async () => {
  const r = await run(client, 'h-note', 'scripts/echo.sh');
  assert.equal(r.status, 'ok', r.hint);
  assert.equal(r.stdout, 'h-note ran\n');
  assert.equal(r.note, 'note from the h-note pre hook');
  const p = await run(client, 'plain', 'scripts/echo.sh');
  assert.equal(p.note, undefined);
});

test('deny: a non-zero pre hook -> status denied, its reason (stderr or {"reason"}), the script never ran', opts, async () => {
  const st0 = await scriptStats(client);
  const m1 = marker('deny');
  let r = await run(client, 'h-deny', 'scripts/touch.sh', { args: [m1] });
  assert.equal(r.status, 'denied');
  assert.equal(r.exit_code, null);
  assert.equal(r.stdout, '');
  assert.match(r.hint, /skill pre hook/);
  assert.ok(r.hint.includes('h-deny policy: this skill is closed today'), `hint must carry the hook's stderr: ${r.hint}`);
  assert.equal(fs.existsSync(m1), false, 'the script of a denied call must not run');

  const m2 = marker('deny-json');
  r = await run(client, 'h-deny', 'scripts/touch.sh', { args: [m2, 'json-reason'] });
  assert.equal(r.status, 'denied');
  assert.ok(r.hint.includes('h-deny says no (JSON reason)'), `hint must carry the {"reason"}: ${r.hint}`);
  assert.ok(!r.hint.includes('ignored stderr'), 'a {"reason"} on stdout wins over stderr');
  assert.equal(fs.existsSync(m2), false, 'the script of a denied call must not run');
  const st1 = await scriptStats(client);
  assert.equal(st1.denied - st0.denied, 2, 'each denial is counted in scripts.denied');
});

test('post replace: {"result": {"stdout"}} replaces stdout; every other field is kept', opts, async () => {
  const r = await run(client, 'h-replace', 'scripts/out.sh');
  assert.equal(r.status, 'ok', r.hint);
  assert.equal(r.stdout, 'replaced: original\n');
  assert.equal(r.stderr, 'diag\n', 'fields the hook did not give are the script\'s');
  assert.equal(r.exit_code, 0);
  assert.equal(r.stdout_bytes, 9, 'stdout_bytes stays what the script wrote');
  assert.equal(r.hint, 'The script succeeded; stdout is its answer.');
});

test('post fail: a non-zero post hook fails the call and withholds the script\'s stdout', opts, async () => {
  const m = marker('postfail');
  const r = await run(client, 'h-postfail', 'scripts/secret.sh', { args: [m] });
  assert.equal(fs.existsSync(m), true, 'the script ran');
  assert.equal(r.status, 'failed');
  assert.equal(r.stdout, '', 'the script\'s output is withheld');
  assert.match(r.hint, /skill post hook/);
  assert.ok(r.hint.includes('h-postfail: this output may not leave'), r.hint);
  assert.match(r.hint, /withheld/);
  assert.ok(!JSON.stringify(r).includes('secret-output-123'), 'the withheld output appears nowhere in the result');
});

// ---- order ---------------------------------------------------------------------------

test('order: global pre, skill pre, script, skill post, global post; the global post sees the skill post\'s result', opts, async () => {
  const order = path.join(TRACE, 'order');
  fs.rmSync(order, { force: true });
  let r = await run(client, 'h-order', 'scripts/step.sh', { args: [order] });
  assert.equal(r.status, 'ok', r.hint);
  assert.deepEqual(readLines(order), ['global-pre', 'skill-pre', 'script', 'skill-post', 'global-post']);
  assert.equal(r.stdout, 'replaced by the skill post hook\n');
  const seen = readJson(path.join(TRACE, 'global-post-input.json'));
  assert.equal(seen.result.stdout, 'replaced by the skill post hook\n',
    'the global post hook reads the result after the skill post hook replaced it');
  assert.equal(seen.result.status, 'ok');
  assert.equal(seen.request_id, r.request_id);
  assert.equal(seen.skill, 'h-order');
  assert.equal(seen.script, 'scripts/step.sh');

  // A failing script: both post hooks still see (and may change) its result.
  fs.rmSync(order, { force: true });
  r = await run(client, 'h-order', 'scripts/step.sh', { args: [order, 'fail'] });
  assert.equal(r.status, 'failed');
  assert.equal(r.exit_code, 3);
  assert.deepEqual(readLines(order), ['global-pre', 'skill-pre', 'script', 'skill-post', 'global-post']);
  assert.equal(readJson(path.join(TRACE, 'global-post-input.json')).result.exit_code, 3);
});

test('order: a global pre denial stops the chain (no skill pre, no script, no post)', opts, async () => {
  const order = path.join(TRACE, 'order');
  fs.rmSync(order, { force: true });
  let r = await run(client, 'h-order', 'scripts/step.sh', { args: [order, 'deny-at-global'] });
  assert.equal(r.status, 'denied');
  assert.match(r.hint, /global pre hook/);
  assert.ok(r.hint.includes('global policy: deny-at-global is not allowed'), r.hint);
  assert.deepEqual(readLines(order), ['global-pre'], 'the skill pre hook never runs after a global denial');

  fs.rmSync(order, { force: true });
  r = await run(client, 'h-order', 'scripts/step.sh', { args: [order, 'deny-at-skill'] });
  assert.equal(r.status, 'denied');
  assert.match(r.hint, /skill pre hook/);
  assert.ok(r.hint.includes('h-order skill policy: deny-at-skill'), r.hint);
  assert.deepEqual(readLines(order), ['global-pre', 'skill-pre']);
});

// ---- what a hook sees --------------------------------------------------------------------

test('environment: HOOK_* reach hooks, never scripts; SKILL_* set; the server\'s secrets reach neither', opts, async () => {
  const file = path.join(TRACE, 'envcheck-pre.json');
  fs.rmSync(file, { force: true });
  const r = await run(client, 'h-envcheck', 'scripts/env.py', { args: ['x'], env: { CALLER_TOKEN: 'caller-value' } });
  assert.equal(r.status, 'ok', r.hint);
  const { input, env, cwd } = readJson(file);

  // the hook's environment
  assert.equal(env.HOOK_TRACE_DIR, TRACE);
  assert.equal(env.HOOK_SECRET_FOR_HOOKS, 'hook-only-value');
  assert.equal(env.SERVER_SECRET, undefined, 'a non-HOOK_ variable of the server must not reach hooks');
  assert.equal(env.CALLER_TOKEN, undefined, 'the caller\'s env is for the script, not for hooks');
  assert.equal(env.SKILL_NAME, 'h-envcheck');
  assert.equal(env.SKILL_HOOK, 'skill pre');
  assert.equal(env.SKILL_REQUEST_ID, r.request_id);
  assert.equal(fs.realpathSync(env.SKILL_DIR), fs.realpathSync(path.join(s.skills, 'h-envcheck')));
  assert.equal(fs.realpathSync(cwd), fs.realpathSync(env.SKILL_DIR), 'a skill hook runs in the skill folder');
  assert.equal(env.PATH, '/usr/local/bin:/usr/bin:/bin');

  // its input
  assert.equal(input.skill, 'h-envcheck');
  assert.equal(input.script, 'scripts/env.py');
  assert.deepEqual(input.args, ['x']);
  assert.equal(input.mode, 'sync');
  assert.equal(input.request_id, r.request_id);
  assert.ok(input.env_keys.includes('CALLER_TOKEN'), `env_keys: ${JSON.stringify(input.env_keys)}`);
  assert.ok(!JSON.stringify(input).includes('caller-value'), 'env values never reach a hook\'s input');
  assert.ok('caller' in input, 'the input has a caller field');

  // the script's environment
  const senv = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(senv).filter((k) => k.startsWith('HOOK_')), [], 'no HOOK_* variable reaches a script');
  assert.equal(senv.SERVER_SECRET, undefined);
  // printed back, the values are redacted: the marker is where they were
  assert.equal(senv.CALLER_TOKEN, '[REDACTED:env:CALLER_TOKEN]');
  assert.equal(senv.ORG_INJECTED, '[REDACTED:env:ORG_INJECTED]', 'env from the global pre hook reaches the script');
});

test('env_keys seen by the skill pre hook include the names the global pre hook added', {
  ...opts,
}, async () => {
  const file = path.join(TRACE, 'envcheck-pre.json');
  fs.rmSync(file, { force: true });
  await run(client, 'h-envcheck', 'scripts/env.py', { env: { CALLER_TOKEN: 'v' } });
  const { input } = readJson(file);
  assert.ok(input.env_keys.includes('ORG_INJECTED'),
    `the skill pre hook must see ORG_INJECTED (set by the global pre hook) in env_keys: ${JSON.stringify(input.env_keys)}`);
});

test('script: a hook sees one name per script, however the caller spelled it (env.py = scripts/env.py)', {
  ...opts,
}, async () => {
  const file = path.join(TRACE, 'envcheck-pre.json');
  fs.rmSync(file, { force: true });
  const r = await run(client, 'h-envcheck', 'env.py');
  assert.equal(r.status, 'ok', r.hint);
  assert.equal(readJson(file).input.script, 'scripts/env.py');
});

test('caller: a hook sees the client\'s clientInfo (2026-07-28 request _meta)', {
  ...opts,
}, async () => {
  const file = path.join(TRACE, 'envcheck-pre.json');
  fs.rmSync(file, { force: true });
  const res = await postModern(s.url, 'tools/call', { name: 'run_skill_script', arguments: { name: 'h-envcheck', script: 'scripts/env.py' } });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json?.result?.structuredContent?.status, 'ok', res.text.slice(0, 400));
  const { input } = readJson(file);
  assert.equal(input.caller?.clientInfo?.name, 'skill-mcp-e2e', `caller: ${JSON.stringify(input.caller)}`);
});

test('stats: the scripts counters count scripts, not hooks; a denial is denied, not failed', {
  ...opts,
}, async () => {
  let st0 = await scriptStats(client);
  let r = await run(client, 'h-deny', 'scripts/touch.sh', { args: [marker('stats')] });
  assert.equal(r.status, 'denied');
  let st1 = await scriptStats(client);
  assert.deepEqual({ started: st1.started - st0.started, failed: st1.failed - st0.failed, denied: st1.denied - st0.denied },
    { started: 0, failed: 0, denied: 1 }, 'a denied call started no script');
  st0 = st1;
  r = await run(client, 'h-allow', 'scripts/echo.sh');
  assert.equal(r.status, 'ok');
  st1 = await scriptStats(client);
  assert.deepEqual({ started: st1.started - st0.started, ok: st1.ok - st0.ok }, { started: 1, ok: 1 },
    'one script ran (four hooks around it: global and skill, pre and post)');
});

test('queue: a post hook does not wait behind newer calls; a call whose script ran is not failed as busy', {
  ...opts,
}, async () => {
  // One slot, 1 s queue timeout, scripts of 0.6 s: A runs; B and C queue
  // before A's post hook does. A's post hook must not wait ~1.2 s behind them.
  const s4 = await startHooked({ args: ['--max-script-concurrency', '1', '--script-queue-timeout', '1'] });
  try {
    const c4 = await connect(s4.url);
    try {
      const m = marker('work-a');
      // A holds the slot before B is sent, and B waits in the queue before
      // C is: a fixed nap between them lets B take the slot on a loaded machine.
      const a = run(c4, 'h-slowpost', 'scripts/work.sh', { args: [m] });
      assert.ok(await poll(async () => (await scriptStats(c4)).live === 1, 10_000, 20), 'A runs');
      const b = run(c4, 'h-slowpost', 'scripts/work.sh', { args: [marker('work-b')] });
      assert.ok(await poll(async () => (await scriptStats(c4)).queued === 1, 10_000, 20), 'B waits in the queue');
      const c = run(c4, 'h-slowpost', 'scripts/work.sh', { args: [marker('work-c')] });
      const [ra] = await Promise.allSettled([a, b, c]);
      if (ra.status === 'rejected') throw ra.reason;
      assert.equal(fs.existsSync(m), true, 'A\'s script did its work');
      assert.equal(ra.value.status, 'ok', `A's script ran, so A must not fail: ${ra.value.hint}`);
      assert.equal(ra.value.stdout, 'did the work\n');
    } finally {
      await c4.close();
    }
  } finally {
    await s4.stop();
  }
});

// ---- malformed output, hangs, large inputs --------------------------------------------------

test('malformed pre output -> failed, naming the hook; the script never runs; the server keeps serving', opts, async () => {
  const cases = [
    ['pre-notjson', /not a JSON object/],
    ['pre-array', /not a JSON object/],
    ['pre-env5', /'env' must be an object/],
    ['pre-ldpreload', /not allowed/],
    ['pre-envint', /non-string value/],
    ['pre-argsint', /list of strings/],
    ['pre-note5', /'note' a string/],
  ];
  for (const [mode, why] of cases) {
    const m = marker(mode);
    const r = await run(client, 'h-bad', 'scripts/out.sh', { args: [mode, m] });
    assert.equal(r.status, 'failed', `${mode}: ${r.hint}`);
    assert.match(r.hint, /skill pre hook \([^)]*h-bad\/hooks\/pre\.py\)/, `${mode}: the hint names the hook: ${r.hint}`);
    assert.match(r.hint, /malformed/, `${mode}: ${r.hint}`);
    assert.match(r.hint, why, `${mode}: ${r.hint}`);
    assert.equal(fs.existsSync(m), false, `${mode}: the script must not run after a malformed pre hook`);
  }
  const ok = await run(client, 'h-bad', 'scripts/out.sh', { args: ['fine'] });
  assert.equal(ok.status, 'ok', ok.hint);
  assert.equal(ok.stdout, 'script ran\n');
});

test('malformed post output -> failed, naming the hook; the script\'s output is withheld', opts, async () => {
  const cases = [
    ['post-notjson', /not a JSON object/],
    ['post-result5', /'result' must be an object/],
    ['post-weird', /status/],
    ['post-stdout5', /wrong-typed/],
  ];
  for (const [mode, why] of cases) {
    const m = marker(mode);
    const r = await run(client, 'h-bad', 'scripts/out.sh', { args: [mode, m] });
    assert.equal(fs.existsSync(m), true, `${mode}: the script ran`);
    assert.equal(r.status, 'failed', `${mode}: ${r.hint}`);
    assert.match(r.hint, /skill post hook \([^)]*h-bad\/hooks\/post\.py\)/, `${mode}: the hint names the hook: ${r.hint}`);
    assert.match(r.hint, why, `${mode}: ${r.hint}`);
    assert.equal(r.stdout, '', `${mode}: the script's output is withheld`);
  }
  const ok = await run(client, 'h-bad', 'scripts/out.sh', { args: ['fine'] });
  assert.equal(ok.status, 'ok', 'the server keeps serving');
});

test('malformed post output: a wrong-typed field other than status/stdout/stderr/hint is refused too', {
  ...opts,
}, async () => {
  const r = await run(client, 'h-bad', 'scripts/out.sh', { args: ['post-exitcode'] });
  assert.equal(r.status, 'failed', `a result with exit_code "zero" must not pass: ${JSON.stringify(r)}`);
  assert.match(r.hint, /skill post hook/);
});

test('a hanging hook (sleep 30) is stopped at --hook-timeout 2 and the call fails; its child is gone', opts, async () => {
  const m = marker('hang');
  const pidFile = path.join(TRACE, 'hang.pid');
  fs.rmSync(pidFile, { force: true });
  const t0 = Date.now();
  const r = await run(client, 'h-hang', 'scripts/touch.sh', { args: [m] });
  const wall = Date.now() - t0;
  assert.equal(r.status, 'failed');
  assert.match(r.hint, /skill pre hook \([^)]*h-hang\/hooks\/pre\.sh\) did not finish/);
  assert.match(r.hint, /timeout/);
  assert.ok(wall < 8000, `the call took ${wall} ms; a 2 s hook ceiling (+ 2 s kill grace) must end it`);
  assert.equal(fs.existsSync(m), false, 'the script never ran');
  const pid = Number.parseInt(fs.readFileSync(pidFile, 'utf8'), 10);
  assert.ok(pid > 1);
  assert.ok(await waitGone(pid, 10_000), `the hook's sleeper ${pid} outlived the hook`);
  const after1 = await run(client, 'plain', 'scripts/echo.sh');
  assert.equal(after1.status, 'ok', 'the server keeps serving');
});

test('hook stdin past a pipe buffer: 300 KB of args to the pre hooks, a 300 KB result to the post hooks', opts, async () => {
  const filler = Array.from({ length: 10 }, (_, i) => String(i).repeat(30_000));
  const r = await run(client, 'h-big', 'scripts/big.py', { args: ['300000', ...filler] });
  assert.equal(r.status, 'ok', r.hint);
  const pre = /^pre read (\d+) bytes; args (\d+) bytes$/.exec(r.note ?? '');
  assert.ok(pre, `note: ${r.note}`);
  assert.equal(Number(pre[2]), 300_006, 'the pre hook read every argument');
  assert.ok(Number(pre[1]) > 300_006);
  const post = /^post read (\d+) bytes; stdout (\d+) chars; all x: (\w+)\n$/.exec(r.stdout);
  assert.ok(post, `stdout: ${r.stdout.slice(0, 200)}`);
  assert.ok(Number(post[1]) > 300_000, 'the post hook read its whole input');
  assert.equal(Number(post[2]), 300_000);
  assert.equal(post[3], 'True');
  assert.equal(r.stdout_bytes, 300_000, 'the script wrote 300 KB');
});

// ---- reload ---------------------------------------------------------------------------------

test('reload: a hook added to a skill applies after reload_skills; removed, it no longer does', opts, async () => {
  const hooks = path.join(s.skills, 'h-reload', 'hooks');
  let r = await run(client, 'h-reload', 'scripts/echo.sh');
  assert.equal(r.status, 'ok');
  assert.equal(r.note, undefined);

  fs.mkdirSync(hooks);
  fs.writeFileSync(path.join(hooks, 'pre.sh'), 'cat > /dev/null\necho \'{"note": "added after start"}\'\n');
  await callOk(client, 'reload_skills', {});
  r = await run(client, 'h-reload', 'scripts/echo.sh');
  assert.equal(r.status, 'ok', r.hint);
  assert.equal(r.note, 'added after start', 'the new pre hook runs after reload');
  assert.equal(r.stdout, 'h-reload ran\n');

  fs.writeFileSync(path.join(hooks, 'pre.sh'), 'cat > /dev/null\necho "changed and now denying" >&2\nexit 1\n');
  await callOk(client, 'reload_skills', {});
  r = await run(client, 'h-reload', 'scripts/echo.sh');
  assert.equal(r.status, 'denied', 'a changed hook applies after reload');
  assert.ok(r.hint.includes('changed and now denying'));

  fs.rmSync(hooks, { recursive: true });
  await callOk(client, 'reload_skills', {});
  r = await run(client, 'h-reload', 'scripts/echo.sh');
  assert.equal(r.status, 'ok', r.hint);
  assert.equal(r.note, undefined, 'the removed hook no longer runs');
});

// ---- no hooks; global hooks added and removed -------------------------------------------------

test('no hooks: one process per call; a global hook added (then removed) applies after reload', opts, async () => {
  const s2 = await startHooked({ args: ['--hooks-dir', EMPTY_GLOBAL] });
  try {
    const c2 = await connect(s2.url);
    try {
      let st0 = await scriptStats(c2);
      let r = await run(c2, 'plain', 'scripts/echo.sh', { args: ['x'] });
      assert.equal(r.status, 'ok', r.hint);
      assert.equal(r.stdout, 'plain ran\narg:x\n');
      assert.equal(r.note, undefined);
      let st1 = await scriptStats(c2);
      assert.equal(st1.started - st0.started, 1, 'a skill without hooks under an empty --hooks-dir starts exactly one process');
      assert.equal(fs.readdirSync(EMPTY_GLOBAL).length, 0);

      const pre = path.join(EMPTY_GLOBAL, 'pre.sh');
      fs.writeFileSync(pre, 'cat > /dev/null\necho \'{"note": "global hook added"}\'\n');
      try {
        await callOk(c2, 'reload_skills', {});
        r = await run(c2, 'plain', 'scripts/echo.sh');
        assert.equal(r.note, 'global hook added', 'a global hook added after start runs after reload');
      } finally {
        fs.rmSync(pre, { force: true });
      }
      await callOk(c2, 'reload_skills', {});
      st0 = await scriptStats(c2);
      r = await run(c2, 'plain', 'scripts/echo.sh');
      assert.equal(r.status, 'ok');
      assert.equal(r.note, undefined, 'the removed global hook no longer runs');
      st1 = await scriptStats(c2);
      assert.equal(st1.started - st0.started, 1);
    } finally {
      await c2.close();
    }
  } finally {
    await s2.stop();
  }
});

// ---- the repository's example global hooks (hooks/pre.py, hooks/post.py) ------------------------

test('example global hooks: size policy (HOOK_MAX_ARGS_BYTES), audit line per call (HOOK_AUDIT_LOG)', opts, async () => {
  const audit = path.join(work, 'audit.jsonl');
  const s3 = await startHooked({
    env: { HOOK_AUDIT_LOG: audit, HOOK_MAX_ARGS_BYTES: '1000' },
    args: ['--hooks-dir', path.join(REPO, 'hooks')],
  });
  try {
    const c3 = await connect(s3.url);
    await c3.listTools();
    try {
      // allowed: the result is untouched, one audit line
      let r = await run(c3, 'plain', 'scripts/echo.sh', { args: ['hi'] });
      assert.equal(r.status, 'ok', r.hint);
      assert.equal(r.stdout, 'plain ran\narg:hi\n', 'the audit hook never changes the result');
      assert.equal(r.note, undefined);
      let lines = readLines(audit).map((l) => JSON.parse(l));
      assert.equal(lines.length, 1);
      const a = lines[0];
      assert.deepEqual(Object.keys(a).sort(),
        ['caller', 'duration_ms', 'request_id', 'script', 'skill', 'status', 'stdout_bytes', 'ts']);
      assert.equal(a.request_id, r.request_id);
      assert.equal(a.skill, 'plain');
      assert.equal(a.script, 'scripts/echo.sh');
      assert.equal(a.status, 'ok');
      assert.equal(a.stdout_bytes, Buffer.byteLength(r.stdout));
      assert.equal(typeof a.duration_ms, 'number');
      assert.match(a.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

      // the audit line records what went out: after a skill post hook's replacement, a failure
      r = await run(c3, 'h-replace', 'scripts/out.sh');
      assert.equal(r.stdout, 'replaced: original\n');
      lines = readLines(audit).map((l) => JSON.parse(l));
      assert.equal(lines.length, 2);
      assert.equal(lines[1].stdout_bytes, Buffer.byteLength('replaced: original\n'));
      r = await run(c3, 'plain', 'scripts/fail.sh');
      assert.equal(r.status, 'failed');
      lines = readLines(audit).map((l) => JSON.parse(l));
      assert.equal(lines.at(-1).status, 'failed');

      // denied: over HOOK_MAX_ARGS_BYTES in total
      const m = marker('policy');
      r = await run(c3, 'h-deny', 'scripts/touch.sh', { args: [m, 'z'.repeat(600), 'z'.repeat(600)] });
      assert.equal(r.status, 'denied');
      assert.match(r.hint, /global pre hook/);
      assert.match(r.hint, /1000/, `the reason names the limit: ${r.hint}`);
      assert.equal(fs.existsSync(m), false);
      lines = readLines(audit).map((l) => JSON.parse(l));
      assert.equal(lines.at(-1).status, 'denied', 'the policy hook records its denials in the audit log');
      assert.equal(lines.at(-1).request_id, r.request_id);
      // just under the limit: allowed (the skill's own pre hook then denies, by its own reason)
      r = await run(c3, 'h-deny', 'scripts/touch.sh', { args: ['z'.repeat(400)] });
      assert.equal(r.status, 'denied');
      assert.match(r.hint, /skill pre hook/);
    } finally {
      await c3.close();
    }
  } finally {
    await s3.stop();
  }
});
