// read_skill_file and resources/read never leave the skill: traversal, absolute
// paths, encoded dots, NUL bytes, symlinks out, VCS folders, dotfiles.
// The symlinks and the .git folder are created in the temp copy at test time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import {
  startServer, connect, callOk as callOkA, expectRefused, TEST_TIMEOUT,
} from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const callOk = (c, n, a) => callOkA(assert, c, n, a);
const SECRET = 'TOP-SECRET-OUTSIDE-THE-SKILL-TREE';

let s;
let client;
before(async () => {
  s = await startServer({
    setup(skills, dir) {
      // A secret next to the skills root, and one inside another skill.
      fs.writeFileSync(path.join(dir, 'secret.txt'), `${SECRET}\n`);
      const csv = path.join(skills, 'csv-profile');
      fs.symlinkSync(path.join(dir, 'secret.txt'), path.join(csv, 'references', 'outside.md'));
      fs.symlinkSync('../../../secret.txt', path.join(csv, 'references', 'relative-out.md'));
      fs.symlinkSync('/etc', path.join(csv, 'etc-link'));
      fs.symlinkSync(path.join(skills, 'acme', 'billing'), path.join(csv, 'sibling-skill'));
      // A symlink that stays inside the skill is fine to follow (or refuse), never a leak.
      fs.symlinkSync('format.md', path.join(csv, 'references', 'inside-link.md'));
      fs.mkdirSync(path.join(csv, '.git'));
      fs.writeFileSync(path.join(csv, '.git', 'config'), `[core]\n\tsecret = ${SECRET}\n`);
      fs.writeFileSync(path.join(csv, '.env'), `TOKEN=${SECRET}\n`);
    },
  });
  client = await connect(s.url);
});
after(async () => {
  try { await client?.close(); } finally { await s?.stop(); }
});

function noLeak(r) {
  const text = JSON.stringify(r);
  assert.equal(text.includes(SECRET), false, `leaked the secret: ${text.slice(0, 300)}`);
  assert.equal(text.includes('root:x:0:0'), false, `leaked /etc/passwd: ${text.slice(0, 300)}`);
}

const ESCAPES = [
  '../git-helper/SKILL.md',
  '../../secret.txt',
  '../x',
  'references/../../git-helper/SKILL.md',
  'references/../../../secret.txt',
  '/etc/passwd',
  '//etc/passwd',
  '%2e%2e/%2e%2e/secret.txt',
  '%2e%2e/git-helper/SKILL.md',
  '..%2fgit-helper%2fSKILL.md',
  '..\\git-helper\\SKILL.md',
  'references/format.md\u0000.txt',
  '\u0000',
  'references/outside.md',
  'references/relative-out.md',
  'etc-link/passwd',
  'sibling-skill/SKILL.md',
  '.git/config',
  '.git',
  '.env',
  'references',
  '.',
  '',
  'file:///etc/passwd',
  '~/secret.txt',
];

for (const p of ESCAPES) {
  test(`read_skill_file refuses ${JSON.stringify(p)}`, opts, async () => {
    const r = await expectRefused(assert, client, 'read_skill_file', { name: 'csv-profile', path: p });
    noLeak(r);
  });
}

test('read_skill_file: a symlink inside the skill never leaks, and the server still serves', opts, async () => {
  const r = await client.callTool({ name: 'read_skill_file',
    arguments: { name: 'csv-profile', path: 'references/inside-link.md' } });
  noLeak(r);
  const ok = await callOk(client, 'read_skill_file', { name: 'csv-profile', path: 'references/format.md' });
  assert.equal(ok.truncated, false);
});

test('load_skill lists no file outside the skill, no VCS folder, no dotfile', opts, async () => {
  const r = await callOk(client, 'load_skill', { name: 'csv-profile' });
  noLeak(r);
  const paths = r.files.map((f) => f.path);
  for (const p of paths) {
    assert.equal(p.startsWith('.git/'), false, `files lists ${p}`);
    assert.equal(p, p.replace(/^\.env$/, ''), 'files lists .env');
    assert.equal(p.includes('outside.md'), false, `files lists symlink-out ${p}`);
    assert.equal(p.includes('relative-out.md'), false, `files lists symlink-out ${p}`);
    assert.equal(p.startsWith('etc-link/'), false, `files lists ${p}`);
  }
});

test('resources/read refuses escapes too', opts, async () => {
  for (const uri of [
    'skill://csv-profile/../git-helper/SKILL.md',
    'skill://csv-profile/%2e%2e/git-helper/SKILL.md',
    'skill://csv-profile/references/outside.md',
    'skill://csv-profile/.git/config',
    'skill://csv-profile/.env',
    'skill://csv-profile/etc-link/passwd',
    'skill://csv-profile/files/../../../secret.txt',
    'skill://../secret.txt',
    'file:///etc/passwd',
  ]) {
    let res;
    try {
      res = await client.readResource({ uri });
    } catch (e) {
      assert.equal(e.code, -32602, `${uri}: ${e.code} ${e.message}`);
      continue;
    }
    noLeak(res);
    assert.fail(`${uri} should be refused, got ${JSON.stringify(res).slice(0, 200)}`);
  }
});
