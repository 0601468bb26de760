// The Agent Skills discovery index (v0.2.0): GET /.well-known/agent-skills/index.json
// and its artifacts (SKILL.md or reproducible .tar.gz), each digest the sha256 of
// the bytes fetched from its URL; unknown paths 404; an edit changes the digest
// after reload_skills; `skill-mcp export DIR` writes the same files, and two
// exports of the same tree are byte-identical.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startServer, connect, callOk, runCli, TEST_TIMEOUT } from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const SCHEMA = 'https://schemas.agentskills.io/discovery/0.2.0/schema.json';
const PREFIX = '/.well-known/agent-skills/';
// Fixture skills whose frontmatter name is their folder name (skills/list's rule).
const ARCHIVES = ['acme/billing', 'csv-profile', 'deploy-runner', 'pdf-tools'];
const SKILL_MDS = ['acme/reports', 'git-helper', 'globex/reports'];

let s;
let client;
let origin;
const tmpDirs = [];

before(async () => {
  s = await startServer({
    setup(skills, dir) {
      // Folder name differs from the frontmatter name: left out of the index.
      fs.mkdirSync(path.join(skills, 'renamed-dir'));
      fs.writeFileSync(path.join(skills, 'renamed-dir', 'SKILL.md'),
        '---\nname: other-name\ndescription: A skill whose folder is not its name\n---\n# Renamed\n');
      // A link that leaves the skill: never in an archive.
      fs.writeFileSync(path.join(dir, 'outside.txt'), 'secret outside the skills\n');
      fs.symlinkSync(path.join(dir, 'outside.txt'), path.join(skills, 'csv-profile', 'leak.txt'));
      // A dotfile: not part of the skill.
      fs.writeFileSync(path.join(skills, 'csv-profile', '.env'), 'TOKEN=hidden\n');
    },
  });
  client = await connect(s.url);
  origin = new URL(s.url).origin;
});

after(async () => {
  try { await client?.close(); } finally {
    await s?.stop();
    for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
  }
});

/** GET origin-relative path or absolute URL; the body as raw bytes. */
async function get(url) {
  const r = await fetch(new URL(url, origin), { headers: { 'accept-encoding': 'identity' } });
  const body = Buffer.from(await r.arrayBuffer());
  return { status: r.status, headers: r.headers, body };
}

const sha = (b) => `sha256:${crypto.createHash('sha256').update(b).digest('hex')}`;
const indexUrl = () => new URL(PREFIX + 'index.json', origin);

async function getIndex() {
  const r = await get(indexUrl());
  assert.equal(r.status, 200);
  return { ...r, json: JSON.parse(r.body.toString('utf8')) };
}

function tarList(buf) {
  const f = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'skill-disc-tar-')), 'a.tar.gz');
  tmpDirs.push(path.dirname(f));
  fs.writeFileSync(f, buf);
  const r = spawnSync('tar', ['-tvzf', f], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim().split('\n');
}

test('index.json: the v0.2.0 document, one entry per listable skill', opts, async () => {
  const r = await getIndex();
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(r.json.$schema, SCHEMA);
  assert.ok(Array.isArray(r.json.skills));
  const byUrl = {};
  for (const e of r.json.skills) {
    assert.deepEqual(Object.keys(e).sort(), ['description', 'digest', 'name', 'type', 'url']);
    assert.match(e.digest, /^sha256:[0-9a-f]{64}$/);
    assert.ok(e.description.length > 0);
    byUrl[e.url] = e;
  }
  const want = [...ARCHIVES.map((q) => `${q}.tar.gz`), ...SKILL_MDS.map((q) => `${q}/SKILL.md`)];
  assert.deepEqual(Object.keys(byUrl).sort(), want.sort());
  for (const q of ARCHIVES) {
    const e = byUrl[`${q}.tar.gz`];
    assert.equal(e.type, 'archive');
    assert.equal(e.name, q.split('/').pop());
  }
  for (const q of SKILL_MDS) {
    const e = byUrl[`${q}/SKILL.md`];
    assert.equal(e.type, 'skill-md');
    assert.equal(e.name, q.split('/').pop());
  }
  assert.ok(!r.json.skills.some((e) => e.name === 'other-name' || e.name === 'renamed-dir'));
});

test('every digest is the sha256 of the bytes fetched from its url', opts, async () => {
  const { json } = await getIndex();
  for (const e of json.skills) {
    const u = new URL(e.url, indexUrl());     // RFC 3986 resolution against the index URL
    assert.ok(u.pathname.startsWith(PREFIX), u.pathname);
    const r = await get(u);
    assert.equal(r.status, 200, `${u}`);
    assert.equal(r.headers.get('content-encoding'), null, 'no content-encoding on artifacts');
    assert.equal(sha(r.body), e.digest, `${e.url}: digest`);
    if (e.type === 'archive') {
      assert.equal(r.headers.get('content-type'), 'application/gzip');
      assert.equal(r.body[0], 0x1f);
      assert.equal(r.body[1], 0x8b);
    } else {
      assert.match(r.headers.get('content-type') ?? '', /^text\/markdown/);
      const q = e.url.slice(0, -'/SKILL.md'.length);
      assert.deepEqual(r.body, fs.readFileSync(path.join(s.skills, q, 'SKILL.md')));
    }
  }
});

test('archives: sorted members under the skill folder, fixed owner and time, no leaks', opts,
  async () => {
    const r = await get(PREFIX + 'csv-profile.tar.gz');
    assert.equal(r.status, 200);
    const lines = tarList(r.body);
    const names = lines.map((l) => l.split(/\s+/).slice(5).join(' '));
    assert.deepEqual(names, [
      'csv-profile/', 'csv-profile/SKILL.md', 'csv-profile/references/',
      'csv-profile/references/format.md', 'csv-profile/scripts/', 'csv-profile/scripts/profile.py',
    ]);
    for (const l of lines) {
      assert.match(l, /^(drwxr-xr-x|-rw-r--r--) 0\/0 /, l);
      assert.match(l, / 1970-01-01 00:00 /, l);
    }
    assert.ok(!r.body.includes('secret outside'));
    // The same files give the same bytes.
    const again = await get(PREFIX + 'csv-profile.tar.gz');
    assert.deepEqual(again.body, r.body);
    // A team skill keeps its prefix in the url, not in the archive's folder.
    const team = await get(PREFIX + 'acme/billing.tar.gz');
    assert.equal(team.status, 200);
    assert.ok(tarList(team.body).every((l) => / billing\//.test(l)));
  });

test('unknown paths under /.well-known/agent-skills/ are 404', opts, async () => {
  for (const p of ['nope.tar.gz', 'nope/SKILL.md', 'git-helper.tar.gz', 'csv-profile/SKILL.md',
    'renamed-dir/SKILL.md', 'other-name/SKILL.md', 'billing.tar.gz', 'csv-profile/leak.txt',
    'index.json.bak', '', 'csv-profile%2F..%2Fgit-helper/SKILL.md', 'broken-skill/SKILL.md']) {
    const r = await get(PREFIX + p);
    assert.equal(r.status, 404, `${PREFIX}${p} -> ${r.status}`);
  }
});

test('an edit changes the digest after reload_skills', opts, async () => {
  const before1 = (await getIndex()).json.skills;
  const find = (list, url) => list.find((e) => e.url === url);
  fs.appendFileSync(path.join(s.skills, 'csv-profile', 'references', 'format.md'), '\nEdited.\n');
  fs.appendFileSync(path.join(s.skills, 'git-helper', 'SKILL.md'), '\nEdited too.\n');
  await callOk(assert, client, 'reload_skills', {});
  const after1 = (await getIndex()).json.skills;
  for (const url of ['csv-profile.tar.gz', 'git-helper/SKILL.md']) {
    assert.notEqual(find(after1, url).digest, find(before1, url).digest, `${url} digest moved`);
    const r = await get(new URL(url, indexUrl()));
    assert.equal(sha(r.body), find(after1, url).digest, `${url} serves the new bytes`);
  }
  assert.equal(find(after1, 'pdf-tools.tar.gz').digest, find(before1, 'pdf-tools.tar.gz').digest,
    'an untouched skill keeps its digest');
});

/** Every regular file under dir, relative path -> bytes. */
function readTree(dir) {
  const out = {};
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[path.relative(dir, p)] = fs.readFileSync(p);
    }
  };
  walk(dir);
  return out;
}

test('skill-mcp export DIR: the served index and artifacts, byte-identical twice', opts,
  async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-disc-export-'));
    tmpDirs.push(base);
    const outs = [path.join(base, 'one'), path.join(base, 'two')];
    for (const out of outs) {
      const r = runCli(['export', out, '--skills', s.skills], 30_000);
      assert.equal(r.code, 0, `export exited ${r.code} ${r.signal ?? ''}: ${r.stderr}`);
    }
    const [a, b] = outs.map(readTree);
    assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort());
    for (const k of Object.keys(a)) assert.ok(a[k].equals(b[k]), `${k} differs between exports`);

    const served = await getIndex();
    const idxRel = path.join('.well-known', 'agent-skills', 'index.json');
    assert.ok(a[idxRel], `export wrote ${idxRel}`);
    assert.ok(a[idxRel].equals(served.body), 'exported index.json equals the served one');
    const want = [idxRel, ...served.json.skills.map((e) =>
      path.join('.well-known', 'agent-skills', decodeURIComponent(e.url)))];
    assert.deepEqual(Object.keys(a).sort(), want.sort());
    for (const e of served.json.skills) {
      const file = a[path.join('.well-known', 'agent-skills', decodeURIComponent(e.url))];
      assert.equal(sha(file), e.digest, `${e.url}: exported bytes match the digest`);
      const r = await get(new URL(e.url, indexUrl()));
      assert.ok(file.equals(r.body), `${e.url}: exported bytes equal the served bytes`);
    }
  });
