// --script-user: when the server runs as root, scripts and hooks run as an
// unprivileged user (through setpriv), with a scratch HOME of their own.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { TEST_TIMEOUT, connect, runCli, startServer } from './lib/harness.mjs';

const root = process.getuid && process.getuid() === 0;
const skip = root ? false : 'needs root (the server must be able to switch users)';
let dir;
let srv;
let client;

before(async () => {
  if (!root) return;
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
