// --script-user: when the server runs as root, scripts and hooks run as an
// unprivileged user (switched in the child before exec; nobody unless the flag names another),
// with a scratch HOME of their own. A skills root that user cannot read has
// its scripts refused with the reason (with an explicit --script-user, the
// server does not start); --script-user root is allowed with a loud warning.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { TEST_TIMEOUT, callErr, callOk, connect, runCli, startServer } from './lib/harness.mjs';

const root = process.getuid && process.getuid() === 0;
const skip = root ? false : 'needs root (the server must be able to switch users)';
let dir;
let srv;
let client;

before(async () => {
  if (!root) return;
  // A probe left by an interrupted run of the --script-user root test below
  // must not count against this run.
  fs.rmSync('/root/.skill-mcp-probe', { force: true });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-user-'));
  fs.chmodSync(dir, 0o755);             // the script user must be able to reach the skill
  const sk = path.join(dir, 'who');
  fs.mkdirSync(path.join(sk, 'scripts'), { recursive: true });
  fs.mkdirSync(path.join(sk, 'hooks'));
  fs.writeFileSync(path.join(sk, 'SKILL.md'), '---\nname: who\ndescription: Says who runs it\n---\n# Who\n');
  fs.writeFileSync(path.join(sk, 'scripts', 'id.sh'),
    'id -u\necho "hook=$HOOK_UID"\necho x > "$HOME/probe" && echo home-ok\n' +
    'touch /root/.skill-mcp-probe 2>/dev/null && echo ROOT-WRITABLE || echo root-protected\n');
  fs.writeFileSync(path.join(sk, 'hooks', 'pre.sh'),
    'read -r -d "" _ || true\nprintf \'{"env":{"HOOK_UID":"%s"}}\' "$(id -u)"\n');
  for (const f of ['SKILL.md', 'scripts/id.sh', 'hooks/pre.sh']) fs.chmodSync(path.join(sk, f), 0o644);
  for (const d of ['', 'scripts', 'hooks']) fs.chmodSync(path.join(sk, d), 0o755);
  srv = await startServer({ skillsDirs: [dir], args: ['--script-user', 'nobody'] });
  client = await connect(srv.url);
});
after(async () => {
  await client?.close();
  await srv?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('scripts and hooks run as --script-user, with their own HOME', { timeout: TEST_TIMEOUT, skip }, async () => {
  const r = await client.callTool({ name: 'run_skill_script', arguments: { name: 'who', script: 'id.sh' } });
  const sc = r.structuredContent;
  assert.equal(sc.status, 'ok', sc.hint);
  const [uid, hook, home, rootw] = sc.stdout.trim().split('\n');
  const nobody = Number(runCli(['--version']).code === 0 ? fs.readFileSync('/etc/passwd', 'utf8')
    .split('\n').find((l) => l.startsWith('nobody:')).split(':')[2] : -1);
  assert.equal(Number(uid), nobody, 'the script is not root');
  assert.equal(hook, `hook=${nobody}`, 'the pre hook is not root either');
  assert.equal(home, 'home-ok', 'its scratch HOME is writable by it');
  assert.equal(rootw, 'root-protected');
  assert.equal(fs.existsSync('/root/.skill-mcp-probe'), false);
});

test('an unknown --script-user stops the start', { timeout: TEST_TIMEOUT, skip }, () => {
  const r = runCli(['--script-user', 'no-such-user-xyz', '--port', '0', '--skills', dir]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /no such user/);
});

const nobodyUid = () => Number(fs.readFileSync('/etc/passwd', 'utf8')
  .split('\n').find((l) => l.startsWith('nobody:')).split(':')[2]);

async function whoRuns(args) {
  const s = await startServer({ skillsDirs: [dir], args });
  try {
    const c = await connect(s.url);
    const r = await c.callTool({ name: 'run_skill_script', arguments: { name: 'who', script: 'id.sh' } });
    await c.close();
    return { sc: r.structuredContent, log: s.log };
  } finally {
    await s.stop();
  }
}

test('a root server without --script-user runs scripts and hooks as nobody', { timeout: TEST_TIMEOUT, skip }, async () => {
  const { sc, log } = await whoRuns([]);
  assert.equal(sc.status, 'ok', sc.hint);
  const [uid, hook, home] = sc.stdout.trim().split('\n');
  assert.equal(Number(uid), nobodyUid(), 'the script runs as nobody by default');
  assert.equal(hook, `hook=${nobodyUid()}`, 'so does the hook');
  assert.equal(home, 'home-ok');
  assert.match(log, /scripts and hooks run as nobody/);
});

test('--script-user root is obeyed, with a loud warning', { timeout: TEST_TIMEOUT, skip }, async () => {
  const { sc, log } = await whoRuns(['--script-user', 'root']);
  // as root, id.sh's probe does land in /root: take it away again
  fs.rmSync('/root/.skill-mcp-probe', { force: true });
  assert.equal(sc.status, 'ok', sc.hint);
  assert.match(sc.stdout, /ROOT-WRITABLE/);
  assert.equal(sc.stdout.split('\n')[0], '0');
  assert.match(log, /warn.*SCRIPTS AND HOOKS RUN AS ROOT/);
});

test('a skills root nobody cannot read: the server serves it, refuses its scripts naming the folder; with --script-user it does not start', { timeout: TEST_TIMEOUT, skip }, async () => {
  const closed = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-closed-'));   // 0700
  let s;
  try {
    fs.mkdirSync(path.join(closed, 'lib', 'x', 'scripts'), { recursive: true, mode: 0o755 });
    fs.writeFileSync(path.join(closed, 'lib', 'x', 'SKILL.md'), '---\nname: x\ndescription: X\n---\n# X\n');
    fs.writeFileSync(path.join(closed, 'lib', 'x', 'scripts', 'hi.sh'), 'echo hi\n');
    // explicit --script-user: the operator asked for that user, so refuse to start
    const r = runCli(['--port', '0', '--skills', path.join(closed, 'lib'), '--script-user', 'nobody']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /run as nobody \(uid \d+\), who cannot read the skills root/);
    assert.ok(r.stderr.includes(`${closed} (mode 0700`), r.stderr);
    // the default user: reading skills does not need it, so serve, and refuse the scripts
    s = await startServer({ skillsDirs: [path.join(closed, 'lib')] });
    const c = await connect(s.url);
    const body = await callOk(assert, c, 'load_skill', { name: 'x' });
    assert.equal(body.name, 'x');
    const msg = await callErr(assert, c, 'run_skill_script', { name: 'x', script: 'scripts/hi.sh' });
    assert.match(msg, /Cannot run scripts of 'x' on this server: scripts and hooks run as nobody/);
    assert.ok(msg.includes(`${closed} (mode 0700`), msg);
    await c.close();
  } finally {
    if (s) await s.stop();
    fs.rmSync(closed, { recursive: true, force: true });
  }
});

test('a hooks folder nobody cannot read: scripts are refused; with --script-user the server does not start', { timeout: TEST_TIMEOUT, skip }, async () => {
  const closed = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-closed-hooks-'));
  let s;
  try {
    const r = runCli(['--port', '0', '--skills', dir, '--hooks-dir', closed, '--script-user', 'nobody']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /cannot read the hooks folder/);
    s = await startServer({ skillsDirs: [dir], args: ['--hooks-dir', closed] });
    const c = await connect(s.url);
    const list = await callOk(assert, c, 'list_skills', {});
    assert.equal(list.total, 1);
    const msg = await callErr(assert, c, 'run_skill_script', { name: 'who', script: 'scripts/id.sh' });
    assert.match(msg, /cannot read the hooks folder/);
    await c.close();
  } finally {
    if (s) await s.stop();
    fs.rmSync(closed, { recursive: true, force: true });
  }
});
