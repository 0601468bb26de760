// SKILL.md is opened beneath its skill folder, and a folder holding any entry
// named SKILL.md is a skill (never a team whose "skills" a link would bring in
// from elsewhere, past --acl); folder names that are not UTF-8 are reported
// (docs/writing-skills.md "Symlinks" and "Names that are not UTF-8").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import {
  startServer, connect, call, callErr, indexerSettled, postModern, runCli, TEST_TIMEOUT,
} from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const SECRET = 'zebraquokkasecret';
const good = (n) => `---\nname: ${n}\ndescription: The ${n} skill\n---\n# ${n}\n`;
const B = (...p) => Buffer.concat(p.map((x) => Buffer.from(x)));
const rpcOf = (srv) => async (m, p) => (await postModern(srv.url, m, p)).json;

// writing-skills.md "Symlinks": a SKILL.md that leads outside the skill folder
// is an error and the skill is not served.
test('a SKILL.md that is a link to a folder outside is an error, not a team whose skill is "SKILL.md"', opts, async () => {
  const srv = await startServer({
    setup(skills, dir) {
      fs.mkdirSync(path.join(dir, 'somedir'));
      fs.writeFileSync(path.join(dir, 'somedir', 'SKILL.md'),
        `---\nname: dirlink\ndescription: outside ${SECRET}\n---\n# ${SECRET}\n`);
      fs.mkdirSync(path.join(skills, 'dirlink'));
      fs.symlinkSync(path.join(dir, 'somedir'), path.join(skills, 'dirlink', 'SKILL.md'));
    },
  });
  try {
    await indexerSettled(srv);
    const c = await connect(srv.url);
    const rpc = rpcOf(srv);
    const listed = JSON.stringify(await call(c, 'list_skills', { query: SECRET }));
    const read = JSON.stringify(await rpc('resources/read', { uri: 'skill://dirlink/SKILL.md' }));
    const plist = JSON.stringify(await rpc('prompts/list', {}));
    const stats = JSON.parse((await call(c, 'skill_server_stats', {})).content[0].text);
    await c.close();
    assert.ok(!read.includes(SECRET), `resources/read served the outside file: ${read.slice(0, 300)}`);
    assert.ok(!listed.replace(/No skill matches '[^']*'/g, '').includes(SECRET), `list_skills: ${listed.slice(listed.indexOf(SECRET) - 200, listed.indexOf(SECRET) + 100)}`);
    assert.ok(!plist.includes(SECRET), 'prompts/list carries the outside description');
    assert.ok(stats.index.problems.some((p) => p.skill === 'dirlink' && p.level === 'error'),
      JSON.stringify(stats.index.problems));
  } finally {
    await srv.stop();
  }
});

// The same after the scan: a served skill's SKILL.md replaced by a link to a
// folder outside; the next rescan (reload_skills or a --refresh-interval tick).
test('a SKILL.md replaced by a link to a folder outside after the scan: the rescan serves nothing from outside', opts, async () => {
  const srv = await startServer({
    setup(skills, dir) {
      fs.mkdirSync(path.join(skills, 'later'));
      fs.writeFileSync(path.join(skills, 'later', 'SKILL.md'), good('later'));
      fs.mkdirSync(path.join(dir, 'somedir'));
      fs.writeFileSync(path.join(dir, 'somedir', 'SKILL.md'),
        `---\nname: later\ndescription: outside ${SECRET}\n---\n# ${SECRET}\n`);
    },
  });
  try {
    await indexerSettled(srv);
    const c = await connect(srv.url);
    const md = path.join(srv.skills, 'later', 'SKILL.md');
    fs.rmSync(md);
    fs.symlinkSync(path.join(srv.dir, 'somedir'), md);
    const rel = JSON.parse((await call(c, 'reload_skills', {})).content[0].text);
    const listed = JSON.stringify(await call(c, 'list_skills', {}));
    const read = JSON.stringify(await rpcOf(srv)('resources/read', { uri: 'skill://later/SKILL.md' }));
    await c.close();
    assert.ok(!listed.includes(SECRET), `list_skills after the rescan: added ${JSON.stringify(rel.added)}`);
    assert.ok(!read.includes(SECRET), `resources/read: ${read.slice(0, 200)}`);
  } finally {
    await srv.stop();
  }
});

// security.md "--acl": a skill a caller may not see does not exist for it, on
// every surface. The author of a visible skill turns it into a team by making
// its SKILL.md a link to a hidden skill's folder.
test('--acl: a visible skill whose SKILL.md links to a hidden skill folder does not expose the hidden one', opts, async () => {
  const acl = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'skillmd-acl-')), 'acl');
  fs.writeFileSync(acl, '* run pub\n');
  const srv = await startServer({
    setup(skills) {
      fs.mkdirSync(path.join(skills, 'ops', 'secret', 'scripts'), { recursive: true });
      fs.writeFileSync(path.join(skills, 'ops', 'secret', 'SKILL.md'),
        `---\nname: secret\ndescription: hidden ops ${SECRET}\n---\n# ${SECRET}\n`);
      fs.writeFileSync(path.join(skills, 'ops', 'secret', 'scripts', 'who.sh'), '#!/bin/sh\necho ran-hidden-script\n', { mode: 0o755 });
      fs.mkdirSync(path.join(skills, 'pub'));
      fs.symlinkSync('../ops/secret', path.join(skills, 'pub', 'SKILL.md'));
    },
    args: ['--acl', acl],
  });
  try {
    await indexerSettled(srv);
    const c = await connect(srv.url);
    assert.match(await callErr(assert, c, 'load_skill', { name: 'ops/secret' }), /^Unknown skill/);
    const listed = JSON.stringify(await call(c, 'list_skills', {}));
    const run = JSON.stringify(await call(c, 'run_skill_script', { name: 'pub/SKILL.md', script: 'who.sh' }));
    await c.close();
    assert.ok(!listed.includes(SECRET), `list_skills shows the hidden skill: ${listed.slice(0, 300)}`);
    assert.ok(!run.includes('ran-hidden-script'), `ran the hidden skill's script: ${run.slice(0, 300)}`);
  } finally {
    await srv.stop();
    fs.rmSync(path.dirname(acl), { recursive: true, force: true });
  }
});

// A SKILL.md swapped for a link out after its body was read once: the
// rescan refuses the new SKILL.md and serves the previous version, whose body
// came from inside the folder; nothing of the outside file is served.
test('a SKILL.md replaced by a link out after it was loaded once: the previous version stays, the outside file is never served', opts, async () => {
  const srv = await startServer({
    setup(skills, dir) {
      fs.mkdirSync(path.join(skills, 'cached'));
      fs.writeFileSync(path.join(skills, 'cached', 'SKILL.md'), good('cached'));
      fs.writeFileSync(path.join(dir, 'out.md'), `---\nname: cached\ndescription: outside ${SECRET}\n---\n# ${SECRET}\n`);
    },
  });
  try {
    await indexerSettled(srv);
    const c = await connect(srv.url);
    await call(c, 'load_skill', { name: 'cached' });      // the body is now kept
    const md = path.join(srv.skills, 'cached', 'SKILL.md');
    fs.rmSync(md);
    fs.symlinkSync(path.join(srv.dir, 'out.md'), md);
    await call(c, 'reload_skills', {});
    const r = await call(c, 'load_skill', { name: 'cached' });
    const p = await rpcOf(srv)('prompts/get', { name: 'cached' });
    const stats = JSON.parse((await call(c, 'skill_server_stats', {})).content[0].text);
    await c.close();
    assert.ok(!r.isError, r.content[0].text);
    assert.equal(r.structuredContent.content, '# cached\n');
    assert.ok(!JSON.stringify(r).includes(SECRET) && !JSON.stringify(p).includes(SECRET));
    assert.ok(stats.index.problems.some((x) => x.skill === 'cached' &&
      x.message === 'cannot open SKILL.md: it leads outside the skill folder; serving the previous version'),
      JSON.stringify(stats.index.problems));
  } finally {
    await srv.stop();
  }
});

// writing-skills.md "Names that are not UTF-8": a skill (or team) folder whose
// name is not valid UTF-8 is not served; validate reports the folder as an error.
test('skill-mcp validate reports a team folder whose name is not UTF-8', opts, () => {
  const t = fs.mkdtempSync(path.join(os.tmpdir(), 'skillmd-'));
  try {
    const team = B(t + '/t', [0xe9], 'am');
    fs.mkdirSync(B(team, '/inside'), { recursive: true });
    fs.writeFileSync(B(team, '/inside/SKILL.md'), good('inside'));
    const list = runCli(['list', t]);
    assert.match(list.stdout, /t\?am\/inside .*broken \(the folder name is not valid UTF-8/);   // the server refuses it
    const v = runCli(['validate', t]);
    assert.equal(v.code, 1, `validate passed: ${v.stdout}`);
    assert.match(v.stdout, /t\?am.*not valid UTF-8/);
  } finally {
    fs.rmSync(t, { recursive: true, force: true });
  }
});

// A FIFO named SKILL.md makes a skill the scan refuses (it is never read), not
// an empty team that nothing reports.
test('a skill folder whose SKILL.md is a FIFO is reported, not silently dropped', opts, async () => {
  const srv = await startServer({
    setup(skills) {
      fs.mkdirSync(path.join(skills, 'fifo', 'references'), { recursive: true });
      execFileSync('mkfifo', [path.join(skills, 'fifo', 'SKILL.md')]);
    },
  });
  try {
    const c = await connect(srv.url);
    const stats = JSON.parse((await call(c, 'skill_server_stats', {})).content[0].text);
    await c.close();
    assert.ok(stats.index.problems.some((p) => p.skill === 'fifo' && p.level === 'error' &&
      p.message === 'cannot open SKILL.md: not a regular file; skill not served'), JSON.stringify(stats.index.problems));
  } finally {
    await srv.stop();
  }
});

// A SKILL.md link that leads nowhere: an error naming the skill, in the
// server's problems and in validate; the rest of the library serves.
test('a dangling SKILL.md link is an error in the problems and in validate, the others serve', opts, async () => {
  const srv = await startServer({
    setup(skills) {
      fs.mkdirSync(path.join(skills, 'dangle'));
      fs.symlinkSync('/nonexistent/skill-mcp-dangle', path.join(skills, 'dangle', 'SKILL.md'));
    },
  });
  try {
    await indexerSettled(srv);
    const c = await connect(srv.url);
    const listed = JSON.parse((await call(c, 'list_skills', { limit: 100 })).content[0].text);
    const stats = JSON.parse((await call(c, 'skill_server_stats', {})).content[0].text);
    await c.close();
    assert.ok(!listed.skills.some((k) => k.name === 'dangle'), 'a dangling SKILL.md is not served');
    assert.ok(listed.skills.length > 0, 'the other skills serve');
    const p = stats.index.problems.find((x) => x.skill === 'dangle');
    assert.ok(p && p.level === 'error' && /SKILL\.md/.test(p.message), JSON.stringify(stats.index.problems));
    const v = runCli(['validate', '--json', srv.skills]);
    assert.notEqual(v.code, 0, `validate fails the library: ${v.stdout.slice(0, 300)}`);
    assert.ok(/dangle/.test(v.stdout), v.stdout.slice(0, 500));
  } finally {
    await srv.stop();
  }
});
