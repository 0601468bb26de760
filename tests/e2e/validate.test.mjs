// `skill-mcp validate DIR...` and `skill-mcp list DIR...` run as commands:
// the bundled skills lint clean (no errors) and list all eight; the fixture
// trees in tests/data/validate/ give the findings, lines and exit codes that
// docs/writing-skills.md ("Checking skills") promises.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { BIN, REPO, TEST_TIMEOUT, assertInert } from './lib/harness.mjs';

const DATA = 'tests/data/validate';
const BUNDLED = fs.readdirSync(path.join(REPO, 'skills'))
  .filter((n) => fs.existsSync(path.join(REPO, 'skills', n, 'SKILL.md'))).sort();

function cli(args) {
  const r = spawnSync(BIN, args, { cwd: REPO, encoding: 'utf8', timeout: 20_000 });
  return { code: r.status, signal: r.signal, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

const opts = { timeout: TEST_TIMEOUT };

test('validate --help prints the usage and exits 0', opts, () => {
  const r = cli(['validate', '--help']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout + r.stderr, /usage: skill-mcp validate/);
});

test('validate skills: the bundled skills have no errors (exit 0)', opts, () => {
  const r = cli(['validate', 'skills']);
  assert.equal(r.code, 0, `exit ${r.code}\n${r.stdout}${r.stderr}`);
  assert.doesNotMatch(r.stdout, /: error: /, r.stdout);
  assert.match(r.stdout, new RegExp(`${BUNDLED.length} skills checked in 1 directory: 0 errors`));
});

test('validate --json skills: findings array and summary', opts, () => {
  const r = cli(['validate', '--json', 'skills']);
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.ok(Array.isArray(doc.findings));
  assert.equal(doc.findings.filter((f) => f.severity === 'error').length, 0, r.stdout);
  assert.equal(doc.summary.skills, BUNDLED.length);
  assert.equal(doc.summary.errors, 0);
  assert.equal(doc.summary.ok, true);
});

test('validate on broken fixtures: exit 1, file:line, rule and hint', opts, () => {
  const r = cli(['validate', `${DATA}/name-folder`, `${DATA}/exec-mode`, `${DATA}/yaml-error`]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const out = r.stdout;
  assert.match(out, /name-folder\/some-folder\/SKILL\.md:3: error: name 'other-name' differs from the folder name 'some-folder' \[name-folder, RFC-SKILL-1 §9\.12\.3; Agent Skills: name\] \(hint: /);
  assert.match(out, /exec-mode\/exec-mode\/SKILL\.md:5: warning: .*'mode' key.* \[execution-mode, RFC-SKILL-1 §2\.4\.3\]/);
  assert.match(out, /yaml-error\/bad-yaml\/SKILL\.md:4: error: duplicate key 'description'.* \[frontmatter, RFC-SKILL-1 §2\.2\.2\]/);
  assert.match(out, /3 skills checked in 3 directories: 2 errors, 2 warnings/);
});

test('validate --json on a fixture: every finding has severity, rule, file, line, message, hint', opts, () => {
  const r = cli(['validate', '--json', `${DATA}/exec-bad`]);
  assert.equal(r.code, 1);
  const doc = JSON.parse(r.stdout);
  assert.ok(doc.findings.length >= 5);
  for (const f of doc.findings) {
    assert.ok(['error', 'warning'].includes(f.severity));
    for (const k of ['rule', 'clause', 'skill', 'file', 'message', 'hint']) assert.equal(typeof f[k], 'string', k);
    assert.ok(f.line === null || Number.isInteger(f.line));
    assert.match(f.clause, /^RFC-SKILL-1 §\d/);
  }
  assert.deepEqual(doc.findings.map((f) => [f.rule, f.line]), [
    ['execution', 5], ['execution', 8], ['execution-script', 9], ['execution', 11], ['execution-script', 12],
  ]);
  assert.equal(doc.summary.ok, false);
});

test('validate: warnings only exit 0; usage errors exit 2', opts, () => {
  assert.equal(cli(['validate', `${DATA}/exec-mode`]).code, 0);
  let r = cli(['validate', `${DATA}/no-such-dir`]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /not a readable directory/);
  assert.equal(cli(['validate', '--bogus', 'skills']).code, 2);
});

test('list skills: all bundled skills, qualified name, name and root', opts, () => {
  const r = cli(['list', 'skills']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /QUALIFIED NAME/);
  for (const n of BUNDLED) assert.match(r.stdout, new RegExp(`^${n}\\s+${n}\\s+skills\\s+-$`, 'm'));
  assert.match(r.stdout, new RegExp(`${BUNDLED.length} served, 0 shadowed, 0 broken`));
  assert.equal(BUNDLED.length, 8);
});

// list silences the snapshot build's log lines: its standard error is for
// the command's own messages. Asked a few times, since a line from a thread
// of the build may land before or after the command's own work.
test('list and list --json of a clean library write nothing on stderr', opts, () => {
  for (let i = 0; i < 5; i++) {
    for (const args of [['list', 'skills'], ['list', '--json', 'skills']]) {
      const r = cli(args);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, '', `${args.join(' ')}: stderr`);
    }
  }
});

test('list --json: shadowed, broken and name-differs flags', opts, () => {
  const r = cli(['list', '--json', `${DATA}/team`, `${DATA}/shadow-a`, `${DATA}/shadow-b`, `${DATA}/yaml-error`]);
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  const by = (q) => doc.skills.filter((s) => s.qualified_name === q);
  assert.deepEqual(by('acme/billing')[0].flags, []);
  assert.equal(by('acme/billing')[0].name, 'billing');
  assert.deepEqual(by('acme/mismatch')[0].flags, ['name-differs']);
  assert.deepEqual(by('dup').map((s) => [s.root, s.flags]),
    [[`${DATA}/shadow-a`, []], [`${DATA}/shadow-b`, ['shadowed']]]);
  assert.deepEqual(by('bad-yaml')[0].flags, ['broken']);
  assert.match(by('bad-yaml')[0].reason, /duplicate key/);
  assert.equal(by('bad-yaml')[0].root, `${DATA}/yaml-error`);
  assert.deepEqual(doc.summary, { roots: 4, served: 4, shadowed: 1, broken: 1 });
});

test('validate and list without DIR: ./skills like the server, else the installed root', opts, () => {
  let r = cli(['list']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`${BUNDLED.length} served, 0 shadowed, 0 broken`));
  r = cli(['validate']);
  assert.equal(r.code, 0, r.stderr);
  // Elsewhere the default is /srv/skill-mcp/skills: named when it is absent.
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-nodir-'));
  try {
    for (const sub of ['list', 'validate']) {
      r = spawnSync(BIN, [sub], { cwd: empty, encoding: 'utf8', timeout: 20_000 });
      if (fs.existsSync('/srv/skill-mcp/skills')) assert.notEqual(r.status, null);
      else {
        assert.equal(r.status, 2, r.stderr);
        assert.match(r.stderr, /\/srv\/skill-mcp\/skills is not a readable directory/);
      }
    }
  } finally {
    fs.rmSync(empty, { recursive: true, force: true });
  }
});

test('list: an unreadable DIR exits 2', opts, () => {
  assert.equal(cli(['list', `${DATA}/no-such-dir`]).code, 2);
});

test('control characters in folder, file and skill names and in frontmatter values are escaped in validate, list and lock reports',
  opts, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-esc-'));
    try {
      const lib = path.join(dir, 'lib');
      const evil = path.join(lib, 'evil\x1b[31m\nforged: ok');
      fs.mkdirSync(evil, { recursive: true });
      fs.writeFileSync(path.join(evil, 'SKILL.md'),
        '---\nname: "evil\\e[2K\\rforged name"\ndescription: "desc \\e]0;title\\a\\nforged line \\u202e"\n---\n# x\n');
      const broken = path.join(lib, 'broken');
      fs.mkdirSync(broken);
      fs.writeFileSync(path.join(broken, 'SKILL.md'), '---\nname: broken\n"k\\e[2J\\nforged: ok": 1\n"k\\e[2J\\nforged: ok": 2\n---\n');
      const good = path.join(lib, 'good');
      fs.mkdirSync(path.join(good, 'scripts'), { recursive: true });
      fs.writeFileSync(path.join(good, 'SKILL.md'), '---\nname: good\ndescription: Fine.\n---\n# ok\n');
      const forged = /^forged/m;

      const v = cli(['validate', lib]);
      assert.equal(v.code, 1, v.stdout + v.stderr);
      assertInert(v.stdout + v.stderr, 'validate');
      assert.doesNotMatch(v.stdout, forged);
      assert.ok(v.stdout.includes(String.raw`name 'evil\x1B[2K\rforged name'`), v.stdout);
      assert.ok(v.stdout.includes(String.raw`lib/evil\x1B[31m\nforged: ok/SKILL.md`), v.stdout);

      const l = cli(['list', lib]);
      assert.equal(l.code, 0, l.stdout + l.stderr);
      assertInert(l.stdout + l.stderr, 'list');
      assert.doesNotMatch(l.stdout, forged);
      assert.ok(l.stdout.includes(String.raw`evil\x1B[31m\nforged: ok`), l.stdout);
      assert.match(l.stdout, /^broken .*broken \(duplicate key 'k.\[2J.forged: ok'/m);

      // the lock: approve the good skill, then a script named with ESC appears
      const lock = path.join(dir, 'skills.lock');
      const a = cli(['lock', 'approve', 'good', '--lock', lock, '--skills', lib, '--by', 'alice']);
      assert.equal(a.code, 0, a.stdout + a.stderr);
      fs.writeFileSync(path.join(good, 'scripts', 'run\x1b[1A\x1b[2Kgood: approved.sh'), 'echo hi\n');
      for (const sub of ['diff', 'status']) {
        const d = cli(['lock', sub, '--lock', lock, '--skills', lib]);
        assert.equal(d.code, 1, d.stdout + d.stderr);
        assertInert(d.stdout + d.stderr, `lock ${sub}`);
        assert.doesNotMatch(d.stdout, forged);
        assert.match(d.stdout, /^evil\\x1B\[31m\\nforged: ok: NOT APPROVED/m);
        assert.doesNotMatch(d.stdout, /^good: approved/m);
      }
      const d = cli(['lock', 'diff', 'good', '--lock', lock, '--skills', lib]);
      assert.ok(d.stdout.includes(String.raw`A scripts/run\x1B[1A\x1B[2Kgood: approved.sh  WIDENS`), d.stdout);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

// Folder names are bytes and findings are JSON: a Latin-1 folder name once
// made every finding about the skill unencodable, so validate passed a
// library the server refuses.
test('validate: a skill folder whose name is not UTF-8 is an error, in text and JSON', opts, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'validate-bytes-'));
  try {
    const latin1 = Buffer.concat([Buffer.from(dir + '/lib/caf'), Buffer.from([0xe9])]);
    fs.mkdirSync(path.join(dir, 'lib'));
    fs.mkdirSync(latin1);
    fs.writeFileSync(Buffer.concat([latin1, Buffer.from('/SKILL.md')]),
      '---\nname: cafe\ndescription: in a Latin-1 folder\n---\n# x\n');
    const r = cli(['validate', path.join(dir, 'lib')]);
    assert.equal(r.code, 1, `exit ${r.code}\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /caf\?: error: folder name is not valid UTF-8; the server does not serve this skill/);
    const j = cli(['validate', '--json', path.join(dir, 'lib')]);
    assert.equal(j.code, 1, j.stderr);
    const doc = JSON.parse(j.stdout);
    assert.equal(doc.summary.ok, false);
    assert.ok(doc.findings.some((f) => f.severity === 'error' && f.skill === 'caf?' &&
      /not valid UTF-8/.test(f.message)), j.stdout);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
