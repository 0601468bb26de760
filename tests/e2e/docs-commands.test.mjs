// tests/docs-commands.mjs on a made-up tree: which lines count as commands,
// and that an unmapped command, a stale mapping line, a missing test, a
// failing command and a missing output each fail with file:line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { BIN, FIXTURES, REPO, TEST_TIMEOUT } from './lib/harness.mjs';

const F = '```';
const README = [
  '# demo', '',
  `${F}sh`, 'skill-mcp --version', `${F}`, '',                           // 4: run, ok
  `${F}`, 'skill-mcp list skills     # unmapped', `${F}`, '',            // 8: not exercised
  `${F}`, '$ skill-mcp validate skills', '1 skill checked in 1 directory', `${F}`, '', // 12
  '<!-- docs-check: output -->', `${F}`, 'skill-mcp 0.1.0 listening on http://127.0.0.1:8000/mcp', `${F}`, '',
  `${F}json`, '{"make": "not a command"}', `${F}`, '',
  `${F}`, 'skill-mcp \\', '  --help', `${F}`, '',                       // 26: joined
  `${F}`, 'skill-mcp --port abc', `${F}`, '',                           // 31: fails (exit 2)
  `${F}`, 'make e2e', `${F}`, '',                                       // 35: unknown test
  `${F}`, "skill-mcp list --json skills", `${F}`, '',                   // 39: output lacks
  'Not a fence: `` ``` `` inline.', '',
].join('\n');

const MAP = [
  '# test mapping',
  'files README.md',
  'skill-mcp --version => run stdout~"skill-mcp "',
  'skill-mcp validate skills => run stdout~"0 errors"',
  'skill-mcp --help => run',
  'skill-mcp --port abc => run',
  'make e2e => test tests/e2e/cli.test.mjs#no such test here',
  '/skill-mcp list --json .*/ => run stdout~"no-such-skill-name"',
  'skill-mcp gone => run',
  '',
].join('\n');

test('docs-commands: extraction and every kind of failure, with file:line', { timeout: 60_000 }, () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-docscmd.'));
  try {
    fs.writeFileSync(path.join(root, 'README.md'), README);
    fs.mkdirSync(path.join(root, 'tests', 'e2e'), { recursive: true });
    fs.writeFileSync(path.join(root, 'tests', 'docs-commands.txt'), MAP);
    fs.copyFileSync(path.join(REPO, 'tests', 'e2e', 'cli.test.mjs'), path.join(root, 'tests', 'e2e', 'cli.test.mjs'));
    fs.cpSync(path.join(FIXTURES, 'csv-profile'), path.join(root, 'skills', 'csv-profile'), { recursive: true });
    const r = spawnSync(process.execPath, [path.join(REPO, 'tests', 'docs-commands.mjs'), BIN], {
      env: { ...process.env, DOCS_COMMANDS_ROOT: root }, encoding: 'utf8', timeout: 50_000,
    });
    const out = r.stdout + r.stderr;
    assert.equal(r.status, 1, out);
    const lines = out.split('\n');
    const line = (re) => lines.find((l) => re.test(l));
    assert.ok(line(/^ok {3}README\.md:4: 'skill-mcp --version' \(ran, exit 0/), out);
    assert.ok(line(/^FAIL docs-commands: README\.md:8: 'skill-mcp list skills' is not exercised: add it to tests\/docs-commands\.txt$/), out);
    assert.ok(line(/^ok {3}README\.md:12: 'skill-mcp validate skills'/), out);
    assert.ok(!/1 skill checked in 1 directory'/.test(out), 'an output line after a $ prompt is not a command');
    assert.ok(!/listening on/.test(out), 'a block marked output is skipped');
    assert.ok(!/not a command/.test(out), 'a json block is skipped');
    assert.ok(line(/^ok {3}README\.md:26: 'skill-mcp --help'/), out);
    assert.ok(line(/^FAIL README\.md:31: 'skill-mcp --port abc' .*exit 2, expected 0/), out);
    assert.ok(line(/^FAIL README\.md:35: 'make e2e': tests\/e2e\/cli\.test\.mjs has no test named 'no such test here'/), out);
    assert.ok(line(/^FAIL README\.md:39: 'skill-mcp list --json skills' .*output lacks 'no-such-skill-name'/), out);
    assert.ok(line(/^FAIL tests\/docs-commands\.txt:9: 'skill-mcp gone' matches no command in the docs any more/), out);
    assert.match(lines.filter(Boolean).at(-1), /^SUMMARY docs-commands: 3 passed, 5 failed$/);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('docs-commands: a mapping line it cannot parse is reported with its line', { timeout: TEST_TIMEOUT }, () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-docscmd.'));
  try {
    fs.writeFileSync(path.join(root, 'README.md'), `${F}sh\nskill-mcp --version\n${F}\n`);
    fs.mkdirSync(path.join(root, 'tests'));
    fs.writeFileSync(path.join(root, 'tests', 'docs-commands.txt'),
      'files README.md\nskill-mcp --version => bogus thing\nno arrow here\n');
    const r = spawnSync(process.execPath, [path.join(REPO, 'tests', 'docs-commands.mjs'), BIN], {
      env: { ...process.env, DOCS_COMMANDS_ROOT: root }, encoding: 'utf8', timeout: 15_000,
    });
    const out = r.stdout + r.stderr;
    assert.equal(r.status, 1, out);
    assert.match(out, /tests\/docs-commands\.txt:2: unknown coverage 'bogus'/);
    assert.match(out, /tests\/docs-commands\.txt:3: cannot parse \(expected 'PATTERN => COVERAGE'\): no arrow here/);
    assert.match(out, /README\.md:2: 'skill-mcp --version' is not exercised/);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
