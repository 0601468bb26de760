// --sandbox bwrap: scripts and hooks run under bubblewrap. They see the
// system folders interpreters need, their skill folder read-only, a scratch
// HOME and a private /tmp, and nothing else; the network is unshared unless
// the skill's frontmatter says `execution: {network: true}`.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { TEST_TIMEOUT, connect, poll, runCli, startServer } from './lib/harness.mjs';
import { sleep } from './lib/procs.mjs';

let bwrap = null;
try { bwrap = execFileSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).trim() || null; } catch { /* none */ }
const opts = { timeout: TEST_TIMEOUT };

let dir;           // holds the skills root and, beside it, files no script may see
let secretFile;
let srv;
let plain;         // the same library served without the sandbox
let client;
let plainClient;
let listener;
let port;
let received = [];

const SCRIPTS = {
  'probe.sh': [
    'for f in /etc/shadow "$1"; do if cat "$f" >/dev/null 2>&1; then echo "read $f"; else echo "no $f"; fi; done',
    'for d in /home /root /work /srv "$(dirname "$1")"; do if [ -e "$d" ]; then echo "sees $d"; else echo "hidden $d"; fi; done',
    'if echo x > "$SKILL_DIR/written.txt" 2>/dev/null; then echo "skill dir writable"; else echo "skill dir read-only"; fi',
    'if echo x > "$HOME/h.txt"; then echo "home writable"; fi',
    'echo "uid $(id -u)"',
    'echo "procs $(ls /proc | grep -c "^[0-9]")"',
  ].join('\n') + '\n',
  'tmp.sh': 'ls /tmp | tr "\\n" " "; echo\necho mark > "/tmp/mark-$1"\n',
  'connect.py': [
    'import socket, sys',
    'try:',
    '    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)',
    '    s.sendall(b"hello from the script\\n")',
    '    s.close()',
    '    print("connected")',
    'except OSError as e:',
    '    print("refused:", e.__class__.__name__)',
  ].join('\n') + '\n',
  'echo.py': 'import sys, os\nprint("args", sys.argv[1:])\nprint("stdin", sys.stdin.read())\nprint("skill", os.environ["SKILL_NAME"])\n',
  'echo.sh': 'printf "%s|" "$@"; echo; echo "name=$SKILL_NAME"; cat\n',
  'sleeper.sh': 'echo started; sleep 47.25\n',
  'spin.py': 'while True:\n    pass\n',
  // bytes(n) comes from calloc: address space (RLIMIT_AS) without touching
  // pages, so the memory limit fires long before 1 s of CPU on a busy machine.
  'hog.py': 'a = []\nwhile True:\n    a.append(bytes(16 << 20))\n',
};

function writeSkill(root, name, front) {
  const sk = path.join(root, name);
  fs.mkdirSync(path.join(sk, 'scripts'), { recursive: true });
  fs.writeFileSync(path.join(sk, 'SKILL.md'), `---\nname: ${name}\ndescription: Sandbox probe ${name}\n${front}---\n# ${name}\n`);
  for (const [f, text] of Object.entries(SCRIPTS)) fs.writeFileSync(path.join(sk, 'scripts', f), text);
  return sk;
}

before(async () => {
  assert.ok(bwrap, 'bubblewrap (bwrap) is not installed (tests/deps.sh test installs it)');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-sandbox-'));
  fs.chmodSync(dir, 0o755);
  // A file the server's user may read and the script user may read too:
  // only the sandbox keeps it out of sight.
  secretFile = path.join(dir, 'server-config.secret');
  fs.writeFileSync(secretFile, 'not for scripts\n');
  fs.chmodSync(secretFile, 0o644);
  const lib = path.join(dir, 'lib');
  writeSkill(lib, 'boxed', '');
  writeSkill(lib, 'online', 'execution:\n  network: true\n');
  const hooked = writeSkill(lib, 'hooked', '');
  fs.mkdirSync(path.join(hooked, 'hooks'));
  fs.writeFileSync(path.join(hooked, 'hooks', 'pre.sh'),
    'read -r -d "" _ || true\n' +
    'seen=""; for p in /etc/shadow /root /home "$HOOK_SECRET_PATH"; do [ -e "$p" ] && seen="$seen $p"; done\n' +
    'printf \'{"note":"hook saw:%s uid %s"}\' "$seen" "$(id -u)"\n');
  execFileSync('chmod', ['-R', 'a+rX', lib]);
  listener = net.createServer((sock) => { sock.on('data', (d) => received.push(d.toString())); });
  await new Promise((r) => listener.listen(0, '127.0.0.1', r));
  port = listener.address().port;
  process.env.HOOK_SECRET_PATH = secretFile;   // handed to hooks (HOOK_*), as a policy file would be
  srv = await startServer({ skillsDirs: [lib], args: ['--sandbox', 'bwrap', '--hook-timeout', '5', '--script-cpu-limit', '1', '--script-memory-limit', '256'] });
  plain = await startServer({ skillsDirs: [lib] });
  client = await connect(srv.url);
  plainClient = await connect(plain.url);
});
after(async () => {
  await client?.close();
  await plainClient?.close();
  await srv?.stop();
  await plain?.stop();
  listener?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const run = async (c, name, script, extra = {}) => (await c.callTool({
  name: 'run_skill_script', arguments: { name, script, ...extra },
})).structuredContent;

test('the start-up log says scripts are sandboxed', opts, () => {
  assert.match(srv.log, /scripts and hooks run sandboxed by .*bwrap/);
});

test('a sandboxed script cannot read /etc/shadow or the server\'s files, sees no /home, /root or the repository, cannot write its skill', opts, async () => {
  const r = await run(client, 'boxed', 'probe.sh', { args: [secretFile] });
  assert.equal(r.status, 'ok', r.stderr);
  const out = r.stdout;
  assert.match(out, /^no \/etc\/shadow$/m);
  assert.match(out, new RegExp(`^no ${secretFile}$`, 'm'));
  for (const d of ['/home', '/root', '/work', '/srv']) assert.match(out, new RegExp(`^hidden ${d}$`, 'm'), out);
  assert.match(out, /^skill dir read-only$/m);
  assert.equal(fs.existsSync(path.join(dir, 'lib', 'boxed', 'written.txt')), false);
  assert.match(out, /^home writable$/m);
  if (process.getuid() === 0) assert.match(out, /^uid 65534$/m, 'as nobody inside the sandbox too');
  const procs = Number(/^procs (\d+)$/m.exec(out)[1]);
  assert.ok(procs < 10, `a private /proc shows only the sandbox's processes (${procs})`);
  // the same script without the sandbox does see them: the probe can tell
  const p = await run(plainClient, 'boxed', 'probe.sh', { args: [secretFile] });
  assert.match(p.stdout, new RegExp(`^read ${secretFile}$`, 'm'), p.stdout);
});

test('the network is unshared: no TCP connection to a 127.0.0.1 listener; execution.network: true allows it', opts, async () => {
  received = [];
  const r = await run(client, 'boxed', 'connect.py', { args: [String(port)] });
  assert.equal(r.status, 'ok', r.stderr);
  assert.match(r.stdout, /^refused:/);
  const on = await run(client, 'online', 'connect.py', { args: [String(port)] });
  assert.equal(on.stdout.trim(), 'connected', on.stderr);
  for (let i = 0; i < 50 && !received.join('').includes('hello'); i++) await sleep(50);
  assert.match(received.join(''), /hello from the script/);
});

test('/tmp is private to each run', opts, async () => {
  const a = await run(client, 'boxed', 'tmp.sh', { args: ['one'] });
  const b = await run(client, 'boxed', 'tmp.sh', { args: ['two'] });
  assert.equal(a.status, 'ok', a.stderr);
  assert.doesNotMatch(b.stdout, /mark-one/, `the second run sees nothing of the first: ${b.stdout}`);
  assert.equal(fs.existsSync('/tmp/mark-one'), false, 'nothing reaches the real /tmp');
});

test('hooks run sandboxed too', opts, async () => {
  const r = await run(client, 'hooked', 'echo.sh');
  assert.equal(r.status, 'ok', r.hint);
  assert.match(r.note, /^hook saw: uid \d+$/, r.note);
  const p = await run(plainClient, 'hooked', 'echo.sh');
  assert.match(p.note, /\/root/, 'without the sandbox the hook sees /root');
  assert.ok(p.note.includes(secretFile), 'and the file beside the skills');
});

test('ordinary sh and python scripts give the same output sandboxed or not', opts, async () => {
  for (const script of ['echo.sh', 'echo.py']) {
    const args = { args: ['a b', '$(id)', 'ü'], stdin: 'in put\n' };
    const a = await run(client, 'boxed', script, args);
    const b = await run(plainClient, 'boxed', script, args);
    assert.equal(a.status, 'ok', a.stderr);
    assert.equal(a.stdout, b.stdout);
    assert.equal(a.stderr, b.stderr);
    assert.equal(a.exit_code, 0);
  }
});

test('a sandboxed script past its ceiling is stopped, and nothing of it survives', opts, async () => {
  const r = await run(client, 'boxed', 'sleeper.sh', { timeout: 1 });
  assert.equal(r.status, 'timeout');
  assert.equal(r.stdout, 'started\n');
  const leftover = () => fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try { return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('47.25'); } catch { return false; }
  });
  await poll(() => leftover().length === 0, 10_000, 50);
  assert.deepEqual(leftover(), [], 'no sleep 47.25 left running');
});

test('rlimits hold inside the sandbox, and the result still names the one that fired', opts, async () => {
  const cpu = await run(client, 'boxed', 'spin.py', { timeout: 15 });
  assert.equal(cpu.status, 'failed');
  assert.equal(cpu.limit, 'cpu', JSON.stringify(cpu));
  assert.equal(cpu.exit_code, 128 + 24, 'bwrap reports a signal death as 128 + SIGXCPU');
  const mem = await run(client, 'boxed', 'hog.py');
  assert.equal(mem.limit, 'memory', JSON.stringify(mem));
});

test('--sandbox bwrap with no working bwrap stops the start with a clear message', opts, () => {
  const r = runCli(['--port', '0', '--skills', path.join(dir, 'lib'), '--sandbox', 'bwrap', '--bwrap-path', '/nonexistent/bwrap']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--sandbox bwrap: --bwrap-path \/nonexistent\/bwrap is not an executable file; install bubblewrap/);
  const f = path.join(dir, 'fake-bwrap');
  fs.writeFileSync(f, '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n', { mode: 0o755 });
  const r2 = runCli(['--port', '0', '--skills', path.join(dir, 'lib'), '--sandbox', 'bwrap', '--bwrap-path', f]);
  assert.equal(r2.code, 2);
  assert.match(r2.stderr, /does not work here: bwrap: No permissions to create new namespace/);
  const r3 = runCli(['--port', '0', '--skills', path.join(dir, 'lib'), '--sandbox', 'firejail']);
  assert.equal(r3.code, 2);
  assert.match(r3.stderr, /expected none or bwrap/);
});

test('skill-mcp validate accepts execution.network: true and refuses a non-boolean', opts, () => {
  writeSkill(path.join(dir, 'vgood'), 'netok', 'execution:\n  network: true\n');
  writeSkill(path.join(dir, 'vbad'), 'netbad', 'execution:\n  network: "yes"\n');
  const good = runCli(['validate', path.join(dir, 'vgood')]);
  assert.equal(good.code, 0, good.stdout + good.stderr);
  assert.match(good.stdout, /1 skill/);
  const bad = runCli(['validate', path.join(dir, 'vbad')]);
  assert.equal(bad.code, 1);
  assert.match(bad.stdout + bad.stderr, /execution 'network' must be true or false/);
});
