// Every tool on its happy path and its documented error paths (docs/tools.md).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  startServer, connect, call, callOk as callOkA, callErr as callErrA, allPages, TEST_TIMEOUT, FIXTURES,
  expectRefused, runCli,
} from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const callOk = (c, n, a) => callOkA(assert, c, n, a);
const callErr = (c, n, a) => callErrA(assert, c, n, a);

// The fixture library: 7 good skills (broken-skill has bad frontmatter).
const GOOD = ['acme/billing', 'acme/reports', 'csv-profile', 'deploy-runner', 'git-helper',
  'globex/reports', 'pdf-tools'];

let s;
let client;
before(async () => {
  s = await startServer();
  client = await connect(s.url);
});
after(async () => {
  try { await client?.close(); } finally { await s?.stop(); }
});

// ---- list_skills -----------------------------------------------------------

test('list_skills: every good skill, qualified-name order, fields per docs', opts, async () => {
  const r = await callOk(client, 'list_skills', {});
  assert.deepEqual(r.skills.map((k) => (k.qualified_name ?? k.name)), GOOD);
  assert.equal(r.total, GOOD.length);
  assert.equal(typeof r.generation, 'number');
  assert.equal(r.next_cursor, undefined, 'one page: no next_cursor');
  const csv = r.skills.find((k) => (k.qualified_name ?? k.name) === 'csv-profile');
  assert.equal(csv.name, 'csv-profile');
  assert.match(csv.description, /^Profile CSV files/);
  assert.deepEqual(csv.tags, ['data', 'spreadsheet', 'csv']);
  assert.equal(csv.version, '1.2.0');
  assert.equal(csv.qualified_name, undefined, 'qualified_name left out when it equals name');
  const billing = r.skills.find((k) => (k.qualified_name ?? k.name) === 'acme/billing');
  assert.equal(billing.name, 'billing');
  assert.equal(billing.qualified_name, 'acme/billing', 'qualified_name kept when it differs');
  const git = r.skills.find((k) => (k.qualified_name ?? k.name) === 'git-helper');
  assert.equal(git.version, undefined, 'version absent when the frontmatter has none');
  assert.equal(r.skills.some((k) => k.name === 'broken-skill'), false, 'a broken skill is not listed');
  for (const k of r.skills) {
    assert.equal(typeof k.description, 'string');
    assert.ok(k.description.length > 0);
  }
});

test('list_skills query ranks by relevance: "spreadsheet" -> csv-profile first', opts, async () => {
  const r = await callOk(client, 'list_skills', { query: 'spreadsheet' });
  assert.equal(r.skills[0]?.name, 'csv-profile');
  assert.ok(r.skills.some((k) => (k.qualified_name ?? k.name) === 'acme/reports'), 'acme/reports mentions spreadsheet too');
  assert.equal(r.total, r.skills.length);
  assert.ok(!r.skills.some((k) => (k.qualified_name ?? k.name) === 'git-helper'), 'non-matching skills are left out');
});

test('list_skills query: other rankings', opts, async () => {
  const top = async (query) => { const k = (await callOk(client, 'list_skills', { query })).skills[0]; return k?.qualified_name ?? k?.name; };
  assert.equal(await top('pdf'), 'pdf-tools');
  assert.equal(await top('refund invoices'), 'acme/billing');
  assert.equal(await top('merge conflicts rebase'), 'git-helper');
  // Nothing matches: the page says so and lists the first skills (none is close).
  const none = await callOk(client, 'list_skills', { query: 'zzyzx-quux' });
  assert.ok(none.skills.length > 0);
  assert.equal(none.total, none.skills.length);
  assert.match(none.hint, /^No skill matches 'zzyzx-quux'/);
  assert.equal(none.next_cursor, undefined);
});

test('list_skills tags filter keeps skills carrying every tag', opts, async () => {
  const r = await callOk(client, 'list_skills', { tags: ['reporting'] });
  assert.deepEqual(r.skills.map((k) => (k.qualified_name ?? k.name)), ['acme/reports', 'globex/reports']);
  assert.equal(r.total, 2);
  const both = await callOk(client, 'list_skills', { tags: ['reporting', 'acme'] });
  assert.deepEqual(both.skills.map((k) => (k.qualified_name ?? k.name)), ['acme/reports']);
  const none = await callOk(client, 'list_skills', { tags: ['reporting', 'pdf'] });
  assert.equal(none.total, 0);
  const withQuery = await callOk(client, 'list_skills', { query: 'spreadsheet', tags: ['acme'] });
  assert.deepEqual(withQuery.skills.map((k) => (k.qualified_name ?? k.name)), ['acme/reports']);
});

test('list_skills limit + cursor pages through everything exactly once', opts, async () => {
  for (const limit of [1, 2, 3, 7, 500]) {
    const pages = await allPages(client, { limit }, callOk);
    const names = pages.flatMap((p) => p.skills.map((k) => (k.qualified_name ?? k.name)));
    assert.deepEqual(names, GOOD, `limit ${limit}`);
    for (const p of pages) {
      assert.equal(p.total, GOOD.length, 'total counts all matches on every page');
      assert.ok(p.skills.length <= limit);
    }
    assert.equal(pages.length, Math.ceil(GOOD.length / limit));
    assert.equal(pages.at(-1).next_cursor, undefined);
  }
  // Paging a query keeps the ranking and never repeats an entry.
  const q = await allPages(client, { query: 'reports spreadsheet', limit: 1 }, callOk);
  const qn = q.flatMap((p) => p.skills.map((k) => (k.qualified_name ?? k.name)));
  assert.equal(new Set(qn).size, qn.length, 'no duplicates across pages');
  assert.equal(qn.length, q[0].total);
  const whole = await callOk(client, 'list_skills', { query: 'reports spreadsheet' });
  assert.deepEqual(qn, whole.skills.map((k) => (k.qualified_name ?? k.name)));
});

// A page's text block is its cards' JSON escaped as they are copied (quotes
// and backslashes only, on the premise that a card holds no raw control
// byte): values holding every byte that JSON escapes, whole and cut pages,
// a lock's quarantine reasons, an --acl view, first renders and kept cards.
test('list_skills: text block is structuredContent for quotes, backslashes and control bytes', { timeout: 60_000 }, async () => {
  const ctl = Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join('');
  const nasty = [
    'quote " and backslash \\ end',
    `controls ${ctl} del \x7f c1 \x85\x9b seps \u2028\u2029 emoji \u{1F600} bidi \u202E`,
    'ends in a backslash \\',
    '"'.repeat(17) + '\\'.repeat(23),
    'long ' + 'a"b\\c\t'.repeat(400),
  ];
  // YAML double-quoted: every byte it cannot hold raw as an escape
  const yq = (v) => '"' + [...v].map((ch) => {
    const c = ch.codePointAt(0);
    if (ch === '"' || ch === '\\') return '\\' + ch;
    return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029
      ? `\\u${c.toString(16).padStart(4, '0')}` : ch;
  }).join('') + '"';
  const tags = ['t"q', 'b\\s', 'c\x01', '\u2028', 'nasty'];
  const setup = (skills) => nasty.forEach((d, i) => {
    fs.mkdirSync(path.join(skills, `nasty-${i}`));
    fs.writeFileSync(path.join(skills, `nasty-${i}`, 'SKILL.md'),
      `---\nname: nasty-${i}\ndescription: ${yq(d)}\nversion: ${yq(`v"${i}\\\t`)}\n` +
      `tags: [${tags.map(yq).join(', ')}]\n---\n# Body\nnasty word\n`);
  });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-cards-'));
  const lockDir = path.join(tmp, 'lo"ck\\d\u2028ir');
  fs.mkdirSync(lockDir);
  const lock = path.join(lockDir, 'q.lock');
  const acl = path.join(tmp, 'acl');
  fs.writeFileSync(acl, '* see ^nasty-[0-4]$\n');
  const calls = [{}, { limit: 1 }, { limit: 3, cursor: '2' }, { query: 'nasty' }, { tags: ['nasty'] },
    { query: 'nasty', limit: 2, cursor: '1' }, { limit: 100, cursor: '5' },
    ...nasty.map((_, i) => ({ tags: ['nasty'], limit: 1, cursor: String(i) }))];
  try {
    for (const args of [[], ['--context-tokens', '1500', '--lock', lock], ['--acl', acl, '--context-tokens', '1500']]) {
      const srv = await startServer({
        args,
        setup(skills) {
          setup(skills);
          if (args.includes('--lock')) {
            const r = runCli(['lock', 'approve', 'nasty-1', '--lock', lock, '--skills', skills]);
            assert.equal(r.code, 0, r.stderr);
          }
        },
      });
      const c = await connect(srv.url);
      try {
        const seen = new Map();
        let cut = 0;
        for (const a of calls) {
          for (let rep = 0; rep < 2; rep++) {
            const r = await callOk(c, 'list_skills', a);
            if (r._truncated) cut++;
            for (const k of r.skills) seen.set(k.qualified_name ?? k.name, k);
          }
        }
        const plain = args.length === 0;
        if (plain) assert.equal(seen.size, 7 + nasty.length, [...seen.keys()].join());
        for (let i = 0; i < nasty.length; i++)
          assert.ok(seen.has(`nasty-${i}`), `nasty-${i} on a page: ${[...seen.keys()]}`);
        if (args.includes('--acl')) assert.equal(seen.size, nasty.length, `the view: ${[...seen.keys()]}`);
        for (let i = 0; i < 4; i++) {
          const k = seen.get(`nasty-${i}`);
          assert.equal(k.description, nasty[i], `nasty-${i}'s description`);
          if (plain) {
            assert.deepEqual(k.tags, tags);
            assert.equal(k.version, `v"${i}\\\t`);
          }
        }
        if (args.includes('--lock')) assert.ok(cut > 0, 'a budget of 1500 tokens cuts some pages');
        if (args.includes('--lock')) {
          assert.equal(seen.get('nasty-1').quarantined, undefined, 'approved');
          const q = seen.get('nasty-2');
          assert.equal(q.quarantined, true);
          assert.ok(q.quarantine_reason.includes(`--lock ${lock}`), q.quarantine_reason);
        }
      } finally {
        await c.close();
        await srv.stop();
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('list_skills bad arguments are refused, and the server keeps serving', opts, async () => {
  for (const args of [{ limit: 'ten' }, { limit: 0 }, { limit: 501 }, { limit: 1.5 }, { tags: 'data' },
    { tags: [1, 2] }, { query: 42 }, { cursor: 'not-a-cursor' }, { cursor: '-5' }, { unknown_arg: true }]) {
    await expectRefused(assert, client, 'list_skills', args);
  }
  const r = await callOk(client, 'list_skills', {});
  assert.equal(r.total, GOOD.length);
});

// ---- load_skill ------------------------------------------------------------

test('load_skill: body without frontmatter, sections, scripts, files', opts, async () => {
  const r = await callOk(client, 'load_skill', { name: 'csv-profile' });
  assert.equal(r.name, 'csv-profile');
  assert.equal(r.qualified_name, 'csv-profile');
  assert.match(r.description, /spreadsheet/);
  assert.equal(r.section, undefined, 'section only when asked for');
  assert.ok(r.content.includes('# CSV profile'));
  assert.ok(r.content.includes('### Options'));
  assert.equal(r.content.includes('name: csv-profile'), false, 'frontmatter removed');
  assert.equal(r.content.includes('---\n'), false);
  assert.deepEqual(r.sections, [
    { title: 'CSV profile', level: 1 },
    { title: 'Usage', level: 2 },
    { title: 'Options', level: 3 },
    { title: 'Limits', level: 3 },
    { title: 'Output', level: 2 },
    { title: 'Troubleshooting', level: 2 },
  ], 'headings inside code fences are not sections');
  assert.deepEqual(r.scripts.map((x) => x.path), ['scripts/profile.py']);
  const fmt = fs.statSync(path.join(FIXTURES, 'csv-profile/references/format.md')).size;
  assert.deepEqual(r.files, [{ path: 'references/format.md', size: fmt }]);
});

test('load_skill: scripts carry their execution: entry (with default fallback)', opts, async () => {
  const r = await callOk(client, 'load_skill', { name: 'deploy-runner' });
  const byPath = Object.fromEntries(r.scripts.map((x) => [x.path, x]));
  assert.deepEqual(Object.keys(byPath).sort(), ['scripts/check.py', 'scripts/deploy.sh']);
  assert.equal(byPath['scripts/deploy.sh'].description, 'Deploy the current build to staging.');
  assert.equal(byPath['scripts/deploy.sh'].timeout, 120);
  assert.equal(byPath['scripts/deploy.sh'].stall_timeout, 60);
  assert.equal(byPath['scripts/check.py'].description, 'Check the health endpoint of a deployed service.');
  assert.equal(byPath['scripts/check.py'].timeout, 10);
  assert.equal(byPath['scripts/check.py'].stall_timeout, 20, 'stall_timeout falls back to execution.default');
  assert.deepEqual(r.files, []);
  // A skill without an execution: block has scripts with no declared values.
  const csv = await callOk(client, 'load_skill', { name: 'csv-profile' });
  assert.deepEqual(csv.scripts, [{ path: 'scripts/profile.py' }]);
});

test('load_skill section: case-insensitive, includes subsections', opts, async () => {
  const r = await callOk(client, 'load_skill', { name: 'csv-profile', section: 'usage' });
  assert.equal(typeof r.section, 'string');
  assert.equal(r.section.toLowerCase(), 'usage');
  assert.ok(r.content.startsWith('## Usage'), r.content);
  assert.ok(r.content.includes('### Options'));
  assert.ok(r.content.includes('### Limits'));
  assert.equal(r.content.includes('## Output'), false, 'stops at the next same-level heading');
  const sub = await callOk(client, 'load_skill', { name: 'csv-profile', section: 'OPTIONS' });
  assert.ok(sub.content.startsWith('### Options'));
  assert.equal(sub.content.includes('### Limits'), false);
  const last = await callOk(client, 'load_skill', { name: 'csv-profile', section: 'Troubleshooting' });
  assert.ok(last.content.includes('--header-rows 2'));
  assert.ok(last.content.includes('# Not a heading'), 'the fenced block belongs to the last section');
});

test('load_skill unknown section lists the sections that exist', opts, async () => {
  const text = await callErr(client, 'load_skill', { name: 'csv-profile', section: 'Installation' });
  for (const t of ['Usage', 'Options', 'Output', 'Troubleshooting']) {
    assert.ok(text.includes(t), `error should list section ${t}: ${text}`);
  }
});

test('load_skill: ambiguous bare name lists both qualified names', opts, async () => {
  const text = await callErr(client, 'load_skill', { name: 'reports' });
  assert.ok(text.includes('acme/reports'), text);
  assert.ok(text.includes('globex/reports'), text);
  const a = await callOk(client, 'load_skill', { name: 'acme/reports' });
  assert.equal(a.qualified_name, 'acme/reports');
  assert.equal(a.name, 'reports');
  assert.ok(a.content.includes('Acme reports'));
  const g = await callOk(client, 'load_skill', { name: 'globex/reports' });
  assert.ok(g.content.includes('Globex reports'));
});

test('load_skill: a unique bare team-skill name works, and so does its qualified name', opts, async () => {
  const a = await callOk(client, 'load_skill', { name: 'billing' });
  const b = await callOk(client, 'load_skill', { name: 'acme/billing' });
  assert.equal(a.qualified_name, 'acme/billing');
  assert.deepEqual(a, b);
  assert.deepEqual(a.files, [{ path: 'references/refunds.md',
    size: fs.statSync(path.join(FIXTURES, 'acme/billing/references/refunds.md')).size }]);
});

test('load_skill: unknown skill suggests the closest name', opts, async () => {
  const text = await callErr(client, 'load_skill', { name: 'csv-profil' });
  assert.ok(text.includes('csv-profile'), `should suggest csv-profile: ${text}`);
  const t2 = await callErr(client, 'load_skill', { name: 'acme/biling' });
  assert.ok(t2.includes('billing'), `should suggest acme/billing: ${t2}`);
  const t3 = await callErr(client, 'load_skill', { name: 'broken-skill' });
  assert.ok(t3.length > 0);
});

test('load_skill bad arguments: refused, server keeps serving', opts, async () => {
  for (const args of [{}, { name: 42 }, { name: null }, { name: '' }, { name: ['csv-profile'] },
    { name: 'csv-profile', section: 3 }, { name: 'x'.repeat(100 * 1024) },
    { name: '../csv-profile' }, { name: '/etc' }, { name: 'csv-profile/../git-helper' }]) {
    await expectRefused(assert, client, 'load_skill', args);
  }
  await callOk(client, 'load_skill', { name: 'csv-profile' });
});

test('load_skill: a NUL byte in the name is refused (valid JSON, bad argument)', opts, async () => {
  await expectRefused(assert, client, 'load_skill', { name: 'csv-profile\u0000' });
  await callOk(client, 'load_skill', { name: 'csv-profile' });
});

// ---- read_skill_file -------------------------------------------------------

test('read_skill_file: a text file', opts, async () => {
  const want = fs.readFileSync(path.join(FIXTURES, 'acme/billing/references/refunds.md'), 'utf8');
  const r = await callOk(client, 'read_skill_file', { name: 'acme/billing', path: 'references/refunds.md' });
  assert.equal(r.path, 'references/refunds.md');
  assert.equal(r.encoding, 'utf-8');
  assert.equal(r.content, want);
  assert.equal(r.size, Buffer.byteLength(want));
  assert.equal(r.truncated, false);
  assert.ok(r.name === 'billing' || r.name === 'acme/billing', r.name);
  const md = await callOk(client, 'read_skill_file', { name: 'csv-profile', path: 'SKILL.md' });
  assert.ok(md.content.startsWith('---\n'), 'SKILL.md itself is readable verbatim');
});

test('read_skill_file: max_bytes truncates', opts, async () => {
  const full = fs.readFileSync(path.join(FIXTURES, 'csv-profile/references/format.md'), 'utf8');
  const r = await callOk(client, 'read_skill_file', { name: 'csv-profile', path: 'references/format.md', max_bytes: 100 });
  assert.equal(r.truncated, true);
  assert.equal(r.size, Buffer.byteLength(full), 'size is the whole file size');
  assert.ok(Buffer.byteLength(r.content) <= 100);
  assert.ok(Buffer.byteLength(r.content) > 0);
  assert.ok(full.startsWith(r.content));
  const whole = await callOk(client, 'read_skill_file', { name: 'csv-profile', path: 'references/format.md' });
  assert.equal(whole.truncated, false);
  assert.equal(whole.content, full);
});

test('read_skill_file: binary comes back base64', opts, async () => {
  const want = fs.readFileSync(path.join(FIXTURES, 'pdf-tools/assets/logo.png'));
  const r = await callOk(client, 'read_skill_file', { name: 'pdf-tools', path: 'assets/logo.png' });
  assert.equal(r.encoding, 'base64');
  assert.equal(r.size, want.length);
  assert.equal(r.truncated, false);
  assert.ok(Buffer.from(r.content, 'base64').equals(want), 'base64 decodes to the exact bytes');
});

test('read_skill_file: missing file and bad max_bytes', opts, async () => {
  const t = await callErr(client, 'read_skill_file', { name: 'csv-profile', path: 'references/nope.md' });
  assert.ok(t.includes('format.md') || /not found|no such|does not exist/i.test(t), t);
  for (const args of [{ name: 'csv-profile', path: 'SKILL.md', max_bytes: 'lots' },
    { name: 'csv-profile', path: 'SKILL.md', max_bytes: -1 },
    { name: 'csv-profile', path: 'SKILL.md', max_bytes: 1048577 },
    { name: 'csv-profile' }, { path: 'SKILL.md' }, { name: 'csv-profile', path: 7 }]) {
    await expectRefused(assert, client, 'read_skill_file', args);
  }
});

// ---- skill_server_stats ----------------------------------------------------

test('skill_server_stats: fields, and counters increase with calls', opts, async () => {
  const a = await callOk(client, 'skill_server_stats', {});
  assert.equal(a.server.name, 'skill-mcp');
  assert.match(a.server.version, /^\d+\.\d+\.\d+/);
  assert.equal(typeof a.server.uptime_s, 'number');
  assert.equal(a.index.skills, GOOD.length);
  assert.ok(a.index.errors >= 1, 'the broken fixture counts as an error');
  assert.equal(typeof a.index.generation, 'number');
  assert.ok(Array.isArray(a.index.roots) && a.index.roots.length === 1);
  assert.equal(typeof a.index.last_refresh_at, 'string');
  assert.ok(!Number.isNaN(Date.parse(a.index.last_refresh_at)));
  assert.equal(typeof a.index.last_refresh_ms, 'number');
  const before = a.tools?.list_skills?.calls ?? 0;
  const errBefore = a.tools?.load_skill?.errors ?? 0;
  await callOk(client, 'list_skills', {});
  await callOk(client, 'list_skills', { query: 'pdf' });
  await call(client, 'load_skill', { name: 'no-such-skill' });
  const b = await callOk(client, 'skill_server_stats', {});
  assert.ok(b.tools.list_skills.calls >= before + 2, `calls ${before} -> ${b.tools.list_skills.calls}`);
  assert.ok(b.tools.load_skill.errors >= errBefore + 1, 'tool errors are counted');
  for (const k of ['p50_ms', 'p95_ms', 'p99_ms']) assert.equal(typeof b.tools.list_skills[k], 'number');
  assert.ok(b.tools.list_skills.p50_ms <= b.tools.list_skills.p99_ms);
  assert.ok(b.server.uptime_s >= a.server.uptime_s);
});
