// reload_skills (add, edit, remove, broken) and hot reload by the refresh timer.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import {
  startServer, connect, call, callOk as callOkA, callErr as callErrA, poll, TEST_TIMEOUT, bodyIndexReady,
  indexerSettled,
} from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const callOk = (c, n, a) => callOkA(assert, c, n, a);
const callErr = (c, n, a) => callErrA(assert, c, n, a);

function skillMd(name, description, body = `# ${name}\n\nBody of ${name}.\n`, extra = '') {
  return `---\nname: ${name}\ndescription: ${description}\n${extra}---\n\n${body}`;
}

describe('reload_skills (no refresh timer)', () => {
  let s;
  let client;
  before(async () => {
    s = await startServer({ refresh: 0 });
    client = await connect(s.url);
    await bodyIndexReady(client);
  });
  after(async () => {
    try { await client?.close(); } finally { await s?.stop(); }
  });

  test('a reload with nothing changed reports nothing moved', opts, async () => {
    const r = await callOk(client, 'reload_skills', {});
    assert.deepEqual(r.added, []);
    assert.deepEqual(r.removed, []);
    assert.deepEqual(r.changed, []);
    assert.ok(r.generation_after >= r.generation_before);
    assert.ok(Array.isArray(r.errors));
  });

  test('the broken skill is reported in errors while the others serve', opts, async () => {
    const r = await callOk(client, 'reload_skills', {});
    const e = r.errors.find((x) => x.skill === 'broken-skill' || String(x.path).includes('broken-skill'));
    assert.ok(e, `broken-skill in errors: ${JSON.stringify(r.errors)}`);
    assert.ok(String(e.path).endsWith(path.join('broken-skill', 'SKILL.md')), e.path);
    assert.equal(typeof e.message, 'string');
    assert.ok(e.message.length > 0);
    await callOk(client, 'load_skill', { name: 'csv-profile' });
    const stats = await callOk(client, 'skill_server_stats', {});
    assert.ok(stats.index.errors >= 1);
  });

  test('a problem is logged once, when it appears, not again at each rebuild', opts, async () => {
    await indexerSettled(s);
    const count = (re) => s.log.split('\n').filter((l) => re.test(l)).length;
    // Start-up's build and the body indexer's republish both met it.
    assert.equal(count(/skill broken-skill: /), 1, s.log);
    const made = [];
    const add = (name, text) => {
      const dir = path.join(s.skills, name);
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'SKILL.md'), text);
      made.push(dir);
    };
    // Each rebuild adds a skill, so that it publishes a generation whose
    // log line follows the build's reports.
    const rebuild = async (neighbour) => {
      add(neighbour, skillMd(neighbour, `Neighbour ${neighbour}.`));
      const r = await callOk(client, 'reload_skills', {});
      assert.ok(r.added.includes(neighbour), JSON.stringify(r));
      const line = new RegExp(`skills: generation ${r.generation_after}:`);
      assert.ok(await poll(() => line.test(s.log), 5000, 20), s.log);
      return r;
    };
    try {
      add('logged-once', '---\nname: logged-once\n---\n\nNo description.\n');
      let r = await rebuild('log-neighbour-1');
      assert.ok(r.errors.some((e) => e.skill === 'logged-once'), JSON.stringify(r.errors));
      assert.equal(count(/skill logged-once: frontmatter has no 'description'/), 1, s.log);
      r = await rebuild('log-neighbour-2');
      // Still reported where problems are listed, not logged again.
      assert.ok(r.errors.some((e) => e.skill === 'logged-once'), JSON.stringify(r.errors));
      assert.ok(r.errors.some((e) => e.skill === 'broken-skill'), JSON.stringify(r.errors));
      assert.equal(count(/skill logged-once: /), 1, s.log);
      assert.equal(count(/skill broken-skill: /), 1, s.log);
      // Another problem in the same skill is news.
      fs.writeFileSync(path.join(s.skills, 'logged-once', 'SKILL.md'),
        '---\nname: logged-once\ndescription: [unclosed\n---\n');
      await rebuild('log-neighbour-3');
      assert.equal(count(/skill logged-once: /), 2, s.log);
      // Fixed, then broken again: logged again (now over the previous version).
      fs.writeFileSync(path.join(s.skills, 'logged-once', 'SKILL.md'), skillMd('logged-once', 'Fixed.'));
      await rebuild('log-neighbour-4');
      fs.writeFileSync(path.join(s.skills, 'logged-once', 'SKILL.md'),
        '---\nname: logged-once\ndescription: [unclosed\n---\n');
      await rebuild('log-neighbour-5');
      assert.equal(count(/skill logged-once: /), 3, s.log);
    } finally {
      for (const d of made) fs.rmSync(d, { recursive: true, force: true });
      await callOk(client, 'reload_skills', {});
    }
  });

  test('an edited reference is read anew, with no reload (read_skill_file, resources/read)', opts, async () => {
    // Kept replies are served while the file's (inode, mtime, size) holds:
    // the edit below keeps the size, so only the mtime tells it apart.
    const ref = path.join(s.skills, 'acme', 'billing', 'references', 'refunds.md');
    const uri = 'skill://acme/billing/references/refunds.md';
    const old = fs.readFileSync(ref, 'utf8');
    const ago = (sec) => new Date(Date.now() - sec * 1000);
    fs.utimesSync(ref, ago(60), ago(60));
    const args = { name: 'acme/billing', path: 'references/refunds.md' };
    for (let i = 0; i < 3; i++) {
      assert.equal((await callOk(client, 'read_skill_file', args)).content, old);
      assert.equal((await client.readResource({ uri })).contents[0].text, old);
    }
    const edited = old.replace('Check the invoice.', 'CHECK THE INVOICE.');
    assert.equal(edited.length, old.length);
    fs.writeFileSync(ref, edited);
    fs.utimesSync(ref, ago(30), ago(30));
    for (let i = 0; i < 3; i++) {
      assert.equal((await callOk(client, 'read_skill_file', args)).content, edited);
      assert.equal((await client.readResource({ uri })).contents[0].text, edited);
    }
    // Written just now: read from the file each time until it settles.
    fs.writeFileSync(ref, old);
    assert.equal((await callOk(client, 'read_skill_file', args)).content, old);
    assert.equal((await client.readResource({ uri })).contents[0].text, old);
  });

  test('add, edit and remove are reported, generation increments, tools see it', opts, async () => {
    // the reference edited in place above is a change of acme/billing: taken in first
    await callOk(client, 'reload_skills', {});
    const before0 = await callOk(client, 'list_skills', {});
    // add
    fs.mkdirSync(path.join(s.skills, 'new-skill'));
    fs.writeFileSync(path.join(s.skills, 'new-skill', 'SKILL.md'),
      skillMd('new-skill', 'Freshly added skill about zebras.'));
    // edit (size changes too, so any (mtime, size) check sees it)
    const gitMd = path.join(s.skills, 'git-helper', 'SKILL.md');
    fs.writeFileSync(gitMd, fs.readFileSync(gitMd, 'utf8')
      .replace('description: Write good commit messages', 'description: Write excellent commit messages'));
    // remove (a team skill)
    fs.rmSync(path.join(s.skills, 'globex'), { recursive: true });

    const r = await callOk(client, 'reload_skills', {});
    assert.deepEqual(r.added, ['new-skill']);
    assert.deepEqual(r.changed, ['git-helper']);
    assert.deepEqual(r.removed, ['globex/reports']);
    assert.equal(r.generation_before, before0.generation);
    assert.ok(r.generation_after > r.generation_before, 'generation increments');

    const after1 = await callOk(client, 'list_skills', {});
    assert.equal(after1.generation, r.generation_after);
    const names = after1.skills.map((k) => (k.qualified_name ?? k.name));
    assert.ok(names.includes('new-skill'));
    assert.equal(names.includes('globex/reports'), false);
    assert.match(after1.skills.find((k) => k.name === 'git-helper').description, /excellent/);
    // "reports" is no longer ambiguous.
    const rep = await callOk(client, 'load_skill', { name: 'reports' });
    assert.equal(rep.qualified_name, 'acme/reports');
    const z = await callOk(client, 'list_skills', { query: 'zebras' });
    assert.equal(z.skills[0]?.name, 'new-skill');
    await callErr(client, 'load_skill', { name: 'globex/reports' });
  });

  test('a body edit is served by the next load_skill (no stale cache)', opts, async () => {
    const md = path.join(s.skills, 'pdf-tools', 'SKILL.md');
    const first = await callOk(client, 'load_skill', { name: 'pdf-tools' });
    assert.equal(first.content.includes('Body edited'), false);
    fs.writeFileSync(md, `${fs.readFileSync(md, 'utf8')}\n## Body edited\n\nNew section.\n`);
    await callOk(client, 'reload_skills', {});
    const second = await callOk(client, 'load_skill', { name: 'pdf-tools' });
    assert.ok(second.content.includes('Body edited'));
    assert.ok(second.sections.some((x) => x.title === 'Body edited'));
  });

  test('a good skill turned broken keeps its last good entry and is reported', opts, async () => {
    const md = path.join(s.skills, 'deploy-runner', 'SKILL.md');
    const good = fs.readFileSync(md, 'utf8');
    fs.writeFileSync(md, '---\nname: deploy-runner\ndescription: [unclosed\n---\n\nbroken now\n');
    try {
      const r = await callOk(client, 'reload_skills', {});
      assert.ok(r.errors.some((e) => String(e.path).includes('deploy-runner')), JSON.stringify(r.errors));
      assert.equal(r.removed.includes('deploy-runner'), false, 'a half-written skill is not dropped');
      const l = await callOk(client, 'list_skills', {});
      assert.ok(l.skills.some((k) => (k.qualified_name ?? k.name) === 'deploy-runner'));
    } finally {
      fs.writeFileSync(md, good);
    }
    const r2 = await callOk(client, 'reload_skills', {});
    assert.equal(r2.errors.some((e) => String(e.path).includes('deploy-runner')), false);
  });

  test('fixing the broken skill brings it in', opts, async () => {
    fs.writeFileSync(path.join(s.skills, 'broken-skill', 'SKILL.md'),
      skillMd('broken-skill', 'Repaired now.'));
    const r = await callOk(client, 'reload_skills', {});
    assert.deepEqual(r.added, ['broken-skill']);
    assert.equal(r.errors.some((e) => String(e.path).includes('broken-skill')), false);
    await callOk(client, 'load_skill', { name: 'broken-skill' });
  });

  test('concurrent reloads all succeed and agree on the final generation', opts, async () => {
    fs.mkdirSync(path.join(s.skills, 'another-skill'));
    fs.writeFileSync(path.join(s.skills, 'another-skill', 'SKILL.md'), skillMd('another-skill', 'Another one.'));
    const rs = await Promise.all([1, 2, 3, 4].map(() => call(client, 'reload_skills', {})));
    for (const r of rs) assert.notEqual(r.isError, true);
    const added = rs.flatMap((r) => r.structuredContent.added);
    assert.ok(added.includes('another-skill'));
    const l = await callOk(client, 'list_skills', {});
    assert.equal(l.generation, Math.max(...rs.map((r) => r.structuredContent.generation_after)));
  });
});

describe('hot reload via --refresh-interval 1', () => {
  let s;
  let client;
  before(async () => {
    s = await startServer({ refresh: 1 });
    client = await connect(s.url);
  });
  after(async () => {
    try { await client?.close(); } finally { await s?.stop(); }
  });

  test('a description edit shows up in list_skills within 5 s', opts, async () => {
    const md = path.join(s.skills, 'csv-profile', 'SKILL.md');
    const g0 = (await callOk(client, 'list_skills', {})).generation;
    fs.writeFileSync(md, fs.readFileSync(md, 'utf8')
      .replace('description: Profile CSV files', 'description: HOTRELOADED Profile CSV files'));
    const hit = await poll(async () => {
      const r = await callOk(client, 'list_skills', {});
      const k = r.skills.find((x) => (x.qualified_name ?? x.name) === 'csv-profile');
      return k?.description.startsWith('HOTRELOADED') ? r : null;
    }, 5000, 100);
    assert.ok(hit, 'the refresh timer did not pick up the edit within 5 s');
    assert.ok(hit.generation > g0);
  });

  test('a new skill appears and a removed one disappears within 5 s', opts, async () => {
    fs.mkdirSync(path.join(s.skills, 'acme', 'hot-added'));
    fs.writeFileSync(path.join(s.skills, 'acme', 'hot-added', 'SKILL.md'), skillMd('hot-added', 'Added while running.'));
    fs.rmSync(path.join(s.skills, 'pdf-tools'), { recursive: true });
    const hit = await poll(async () => {
      const names = (await callOk(client, 'list_skills', {})).skills.map((k) => (k.qualified_name ?? k.name));
      return names.includes('acme/hot-added') && !names.includes('pdf-tools');
    }, 5000, 100);
    assert.ok(hit, 'refresh did not converge within 5 s');
    const text = await callErr(client, 'read_skill_file', { name: 'pdf-tools', path: 'assets/logo.png' });
    assert.ok(text.length > 0);
  });
});

// systemd's ExecReload (docs/install.md) is `kill -HUP $MAINPID` on a server
// without --workers: the signal alone must pick up an added skill.
test('SIGHUP rescans the skills (systemctl reload)', opts, async () => {
  const s = await startServer({ refresh: 0 });
  let client;
  try {
    client = await connect(s.url);
    // The body indexer's one rescan would pick up the skill added below
    // without the signal.
    await indexerSettled(s);
    const before = await callOk(client, 'list_skills', { limit: 100 });
    assert.ok(!before.skills.some((k) => k.name === 'hup-added'));
    fs.mkdirSync(path.join(s.skills, 'hup-added'));
    fs.writeFileSync(path.join(s.skills, 'hup-added', 'SKILL.md'), skillMd('hup-added', 'Added before a SIGHUP.'));
    // Nothing rescans on its own (refresh 0), so without the signal it stays unseen.
    const still = await callOk(client, 'list_skills', { limit: 100 });
    assert.ok(!still.skills.some((k) => k.name === 'hup-added'));
    process.kill(s.proc.pid, 'SIGHUP');
    const after = await poll(async () => {
      const r = await callOk(client, 'list_skills', { limit: 100 });
      return r.skills.some((k) => k.name === 'hup-added') ? r : null;
    }, 15_000);
    assert.ok(after, 'the skill added before SIGHUP is listed');
    assert.ok(after.generation > before.generation);
    // The server logs before it rescans, but its stderr pipe and the HTTP
    // answer reach this process in either order.
    assert.ok(await poll(() => /SIGHUP: rescanning skills/.test(s.log), 5000, 20), s.log);
    assert.equal(s.exited, null, 'SIGHUP must not stop the server');
  } finally {
    await client?.close();
    await s.stop();
  }
});
