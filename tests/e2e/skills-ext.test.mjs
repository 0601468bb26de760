// The MCP Skills extension (SEP-2640): skills/list, skills/get,
// resources/directory/read, on both eras; digests against the files on disk;
// skills as prompts (prompts/list, prompts/get).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import {
  startServer, connect, callOk, callErr, indexerSettled, post, postModern, TEST_TIMEOUT,
} from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const EXT = 'io.modelcontextprotocol/skills';
const GOOD = ['acme/billing', 'acme/reports', 'csv-profile', 'deploy-runner', 'git-helper',
  'globex/reports', 'pdf-tools'];
const GENERATED = 55; // more than one page of skills/list (50)

let s;
let client;
before(async () => {
  s = await startServer({
    setup(skills, dir) {
      // Folder name differs from the frontmatter name: not listable.
      fs.mkdirSync(path.join(skills, 'renamed-dir'));
      fs.writeFileSync(path.join(skills, 'renamed-dir', 'SKILL.md'),
        '---\nname: other-name\ndescription: A skill whose folder is not its name\n---\n# Renamed\n');
      // Over the extension's limit of 512 files: listed, with a warning.
      fs.mkdirSync(path.join(skills, 'big-skill', 'references'), { recursive: true });
      fs.writeFileSync(path.join(skills, 'big-skill', 'SKILL.md'),
        '---\nname: big-skill\ndescription: A skill with too many files\n---\n# Big\n');
      for (let i = 0; i < 520; i++) {
        fs.writeFileSync(path.join(skills, 'big-skill', 'references', `f${i}.txt`), `file ${i}\n`);
      }
      // Enough skills for several pages.
      for (let i = 0; i < GENERATED; i++) {
        const n = `gen-${String(i).padStart(2, '0')}`;
        fs.mkdirSync(path.join(skills, n, 'references'), { recursive: true });
        fs.writeFileSync(path.join(skills, n, 'SKILL.md'),
          `---\nname: ${n}\ndescription: Generated skill ${i}\nmetadata:\n  index: "${i}"\n---\n# ${n}\n`);
        fs.writeFileSync(path.join(skills, n, 'references', 'note.md'), `note ${i}\n`);
      }
      // A link that leaves the skill, and an empty folder.
      fs.writeFileSync(path.join(dir, 'outside.txt'), 'secret outside the skills\n');
      fs.symlinkSync(path.join(dir, 'outside.txt'), path.join(skills, 'csv-profile', 'leak.txt'));
      fs.mkdirSync(path.join(skills, 'csv-profile', 'assets'));
    },
  });
  client = await connect(s.url);
});
after(async () => {
  try { await client?.close(); } finally { await s?.stop(); }
});

/** A request on the legacy era (no modern _meta); returns the JSON-RPC reply. */
async function legacy(method, params = {}) {
  const r = await post(s.url, { jsonrpc: '2.0', id: 1, method, params });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

/** A request on the modern era; returns the JSON-RPC reply. */
async function modern(method, params = {}) {
  const r = await postModern(s.url, method, params);
  return r.json;
}

function ok(reply) {
  assert.ok(reply.result, `expected a result, got ${JSON.stringify(reply).slice(0, 400)}`);
  return reply.result;
}

function err(reply, code = -32602) {
  assert.ok(reply.error, `expected an error, got ${JSON.stringify(reply).slice(0, 400)}`);
  assert.equal(reply.error.code, code, reply.error.message);
  return reply.error;
}

function cacheAttrs(r, what) {
  assert.equal(r.resultType, 'complete', `${what}: resultType`);
  assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0, `${what}: ttlMs`);
  assert.ok(['public', 'private'].includes(r.cacheScope), `${what}: cacheScope`);
}

async function listAll(call = modern) {
  const pages = [];
  let cursor;
  for (let i = 0; i < 20; i++) {
    const r = ok(await call('skills/list', cursor ? { cursor } : {}));
    pages.push(r);
    if (!r.nextCursor) break;
    cursor = r.nextCursor;
  }
  return pages;
}

const sha = (buf) => `sha256:${crypto.createHash('sha256').update(buf).digest('hex')}`;

/** skill://<qname>/<rel> -> path on disk. */
function diskPath(uri) {
  return path.join(s.skills, decodeURIComponent(uri.slice('skill://'.length)));
}

/** Every file of a skill folder on disk (dotfiles skipped), relative paths. */
function walk(dir, rel = '') {
  const out = [];
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    if (e.name.startsWith('.')) continue;
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...walk(dir, r));
    else if (e.isFile()) out.push(r);
  }
  return out;
}

test('the extension is declared with directoryRead, on both eras', opts, async () => {
  const d = ok(await modern('server/discover'));
  assert.deepEqual(d.capabilities.extensions[EXT], { directoryRead: true });
  assert.ok(d.capabilities.resources && d.capabilities.prompts);
  const i = ok(await legacy('initialize', {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' },
  }));
  assert.deepEqual(i.capabilities.extensions[EXT], { directoryRead: true });
});

test('skills/list: pages of whole entries, every digest and size is the file on disk', opts, async () => {
  const pages = await listAll();
  assert.ok(pages.length >= 2, 'more than one page');
  const entries = pages.flatMap((p) => p.skills);
  for (const p of pages) {
    cacheAttrs(p, 'skills/list');
    assert.ok(p.skills.length <= 50);
  }
  const uris = entries.map((e) => e.uri);
  assert.equal(new Set(uris).size, uris.length, 'no entry on two pages');
  for (const q of GOOD) assert.ok(uris.includes(`skill://${q}/SKILL.md`), `${q} listed`);
  assert.equal(uris.filter((u) => u.startsWith('skill://gen-')).length, GENERATED);
  for (const e of entries) {
    const base = e.uri.slice(0, -'/SKILL.md'.length);
    assert.equal(base.split('/').pop(), e.frontmatter.name, 'final segment is the name');
    assert.equal(typeof e.frontmatter.description, 'string');
    assert.ok(Array.isArray(e.resources));
    const rels = e.resources.map((r) => {
      assert.ok(r.uri === e.uri || r.uri.startsWith(`${base}/`), `${r.uri} inside ${base}`);
      const bytes = fs.readFileSync(diskPath(r.uri));
      assert.equal(r.digest, sha(bytes), `digest of ${r.uri}`);
      assert.equal(r.size, bytes.length, `size of ${r.uri}`);
      return r.uri.slice(base.length + 1);
    });
    assert.equal(rels[0], 'SKILL.md', 'SKILL.md comes first');
    assert.equal(new Set(rels).size, rels.length, `${e.uri}: every file once`);
    const expected = walk(diskPath(base)).filter((r) => !(e.uri === 'skill://csv-profile/SKILL.md' && r === 'leak.txt'));
    assert.deepEqual([...rels].sort(), expected.sort(), `${e.uri}: the complete file list`);
  }
  // frontmatter is carried whole, not a subset
  const gen = entries.find((e) => e.uri === 'skill://gen-07/SKILL.md');
  assert.deepEqual(gen.frontmatter, { name: 'gen-07', description: 'Generated skill 7', metadata: { index: '7' } });
});

test('a link leaving the skill is neither listed nor readable', opts, async () => {
  const e = ok(await modern('skills/get', { uri: 'skill://csv-profile/SKILL.md' })).skill;
  assert.equal(e.resources.some((r) => r.uri.endsWith('/leak.txt')), false);
  err(await modern('resources/read', { uri: 'skill://csv-profile/leak.txt' }));
});

test('a skill over 512 files is listed with a warning', opts, async () => {
  const e = ok(await modern('skills/get', { uri: 'skill://big-skill/SKILL.md' })).skill;
  assert.equal(e.resources.length, 521);
  const w = e._meta?.['io.modelcontextprotocol.skills/warnings'];
  assert.ok(w?.some((m) => /512/.test(m)), JSON.stringify(e._meta));
  const entries = (await listAll()).flatMap((p) => p.skills);
  assert.ok(entries.some((x) => x.uri === 'skill://big-skill/SKILL.md'));
});

test('name differs from folder: left out of skills/list, still served by the tools', opts, async () => {
  const pages = await listAll();
  const entries = pages.flatMap((p) => p.skills);
  assert.equal(entries.some((e) => e.uri.includes('renamed-dir') || e.uri.includes('other-name')), false);
  const omitted = pages.flatMap((p) => p._meta?.['io.modelcontextprotocol.skills/omitted'] ?? []);
  const o = omitted.find((x) => x.uri === 'skill://renamed-dir/SKILL.md');
  assert.ok(o, `reported: ${JSON.stringify(omitted)}`);
  assert.match(o.reason, /other-name/);
  assert.match(s.log, /renamed-dir.*left out/);
  const loaded = await callOk(assert, client, 'load_skill', { name: 'renamed-dir' });
  assert.match(loaded.content, /# Renamed/);
  // skills/get answers for every served skill, listed or not
  const g = ok(await modern('skills/get', { uri: 'skill://renamed-dir/SKILL.md' }));
  assert.equal(g.skill.frontmatter.name, 'other-name');
  assert.ok(g.skill._meta['io.modelcontextprotocol.skills/warnings'].some((m) => /skills\/list/.test(m)));
});

test('skills/get: the list entry, cache attributes on both eras; unknown -> -32602', opts, async () => {
  const entries = (await listAll()).flatMap((p) => p.skills);
  for (const call of [modern, legacy]) {
    const r = ok(await call('skills/get', { uri: 'skill://acme/billing/SKILL.md' }));
    cacheAttrs(r, 'skills/get');
    assert.equal(r.nextCursor, undefined);
    assert.deepEqual(r.skill, entries.find((e) => e.uri === 'skill://acme/billing/SKILL.md'));
    const l = ok(await call('skills/list', {}));
    cacheAttrs(l, 'skills/list');
  }
  for (const uri of ['skill://no-such-skill/SKILL.md', 'skill://csv-profile/references/format.md',
    'skill://csv-profile', 'https://example.com/SKILL.md', 'skill://reports/SKILL.md']) {
    err(await modern('skills/get', { uri }));
    err(await legacy('skills/get', { uri }));
  }
  err(await modern('skills/get', {}));
});

test('an edit changes the digest (at once, and after reload_skills)', opts, async () => {
  const uri = 'skill://csv-profile/references/format.md';
  const digestOf = async () => ok(await modern('skills/get', { uri: 'skill://csv-profile/SKILL.md' }))
    .skill.resources.find((r) => r.uri === uri);
  const before = await digestOf();
  const file = diskPath(uri);
  fs.writeFileSync(file, `${fs.readFileSync(file, 'utf8')}\nAn added line.\n`);
  const bytes = fs.readFileSync(file);
  const now = await digestOf();
  assert.notEqual(now.digest, before.digest);
  assert.equal(now.digest, sha(bytes));
  assert.equal(now.size, bytes.length);
  await callOk(assert, client, 'reload_skills', {});
  const after = await digestOf();
  assert.equal(after.digest, sha(bytes));
  // and resources/read serves exactly those bytes
  const rd = ok(await modern('resources/read', { uri }));
  assert.equal(sha(Buffer.from(rd.contents[0].text, 'utf8')), after.digest);
});

test('resources/directory/read: the root and references/, on both eras', opts, async () => {
  for (const call of [modern, legacy]) {
    const root = ok(await call('resources/directory/read', { uri: 'skill://csv-profile' }));
    cacheAttrs(root, 'resources/directory/read');
    const byName = Object.fromEntries(root.resources.map((r) => [r.name, r]));
    assert.deepEqual(Object.keys(byName).sort(), ['SKILL.md', 'assets', 'references', 'scripts']);
    assert.equal(byName.references.mimeType, 'inode/directory');
    assert.equal(byName.references.uri, 'skill://csv-profile/references');
    assert.equal(byName.assets.mimeType, 'inode/directory');
    assert.equal(byName['SKILL.md'].uri, 'skill://csv-profile/SKILL.md');
    assert.equal(byName['SKILL.md'].mimeType, 'text/markdown');
    const refs = ok(await call('resources/directory/read', { uri: 'skill://csv-profile/references' }));
    assert.deepEqual(refs.resources.map((r) => r.uri), ['skill://csv-profile/references/format.md']);
    const empty = ok(await call('resources/directory/read', { uri: 'skill://csv-profile/assets' }));
    assert.deepEqual(empty.resources, []);
    const team = ok(await call('resources/directory/read', { uri: 'skill://acme/billing' }));
    assert.ok(team.resources.some((r) => r.uri === 'skill://acme/billing/references'));
  }
  // not a directory, not found
  for (const uri of ['skill://csv-profile/SKILL.md', 'skill://csv-profile/references/format.md',
    'skill://csv-profile/nope', 'skill://no-such-skill']) {
    err(await modern('resources/directory/read', { uri }));
  }
  // pages of 100
  const big = ok(await modern('resources/directory/read', { uri: 'skill://big-skill/references' }));
  assert.equal(big.resources.length, 100);
  assert.ok(big.nextCursor);
  let n = big.resources.length;
  let cursor = big.nextCursor;
  while (cursor) {
    const p = ok(await modern('resources/directory/read', { uri: 'skill://big-skill/references', cursor }));
    n += p.resources.length;
    cursor = p.nextCursor;
  }
  assert.equal(n, 520);
});

test('traversal in skill:// URIs is refused, for targets that exist', opts, async () => {
  // Every target below exists on disk: a resolver that let `..` through would
  // answer with its bytes, so only the exact refusal passes.
  const SECRET = 'secret outside the skills';
  const DOTDOT = "('..' is not allowed: paths stay inside the skill folder)";
  const files = {
    'skill://csv-profile/../git-helper/SKILL.md': 'git-helper/SKILL.md',
    'skill://csv-profile/%2e%2e/git-helper/SKILL.md': 'git-helper/SKILL.md',
    'skill://csv-profile/%2E%2E/%2E%2E/outside.txt': '../outside.txt',
    'skill://csv-profile/references/../../pdf-tools/SKILL.md': 'pdf-tools/SKILL.md',
    'skill://csv-profile/%2e%2e%2f%2e%2e%2foutside.txt': '../outside.txt',
    'skill://csv-profile/../../outside.txt': '../outside.txt',
  };
  const dirs = {
    'skill://csv-profile/..': '.',
    'skill://csv-profile/%2e%2e': '.',
    'skill://csv-profile/references/%2e%2e/..': '.',
    'skill://csv-profile/../acme': 'acme',
  };
  for (const [uri, target] of Object.entries({ ...files, ...dirs })) {
    assert.ok(fs.existsSync(path.join(s.skills, target)), `${uri}: its target ${target} must exist for the test to mean anything`);
  }
  const refused = (reply, uri, what) => {
    const e = err(reply);
    assert.deepEqual(e.data, { uri }, `${what} ${uri}: data`);
    assert.ok(!JSON.stringify(reply).includes(SECRET), `${what} ${uri} leaked the file outside`);
    return e.message;
  };
  for (const uri of Object.keys(files)) {
    for (const m of ['resources/read', 'resources/directory/read']) {
      assert.equal(refused(await modern(m, { uri }), uri, m), `Resource not found: ${uri} ${DOTDOT}`);
    }
    // skills/get names a skill by skill://<qualified-name>/SKILL.md: a name with
    // `..` in it is no skill.
    assert.equal(refused(await modern('skills/get', { uri }), uri, 'skills/get'),
      `Unknown skill: ${uri} (a skill is named by skill://<qualified-name>/SKILL.md)`);
    assert.equal(refused(await legacy('resources/read', { uri }), uri, 'legacy resources/read'),
      `Resource not found: ${uri} ${DOTDOT}`);
  }
  for (const uri of Object.keys(dirs)) {
    assert.equal(refused(await modern('resources/directory/read', { uri }), uri, 'resources/directory/read'),
      `Resource not found: ${uri} ${DOTDOT}`);
  }
  // A skill name that is not one, followed by `..` back into a real skill.
  const uri = 'skill://no-such-skill/../csv-profile/SKILL.md';
  assert.ok(fs.existsSync(path.join(s.skills, 'csv-profile', 'SKILL.md')));
  for (const m of ['resources/read', 'resources/directory/read']) {
    assert.equal(refused(await modern(m, { uri }), uri, m), `Resource not found: ${uri} (no such skill)`);
  }
  assert.equal(refused(await modern('skills/get', { uri }), uri, 'skills/get'), `Unknown skill: ${uri} (no such skill)`);
});

test('a SKILL.md gone, or turned into a link out of the folder, after the scan: every surface gives the same reason', opts, async () => {
  const srv = await startServer({
    setup(skills, dir) {
      fs.writeFileSync(path.join(dir, 'elsewhere.md'),
        '---\nname: turncoat\ndescription: Not this skill\n---\nsecret elsewhere\n');
      for (const n of ['turncoat', 'vanished']) {
        fs.mkdirSync(path.join(skills, n, 'references'), { recursive: true });
        fs.writeFileSync(path.join(skills, n, 'SKILL.md'), `---\nname: ${n}\ndescription: The ${n} skill\n---\n# ${n}\n`);
        fs.writeFileSync(path.join(skills, n, 'references', 'a.md'), 'a\n');
      }
    },
  });
  let c;
  try {
    await indexerSettled(srv);    // its rescan would take the edits below into a new snapshot
    const md = (n) => path.join(srv.skills, n, 'SKILL.md');
    fs.rmSync(md('turncoat'));
    fs.symlinkSync(path.join(srv.dir, 'elsewhere.md'), md('turncoat'));
    fs.rmSync(md('vanished'));
    const OUT = 'the path leads outside the skill folder';
    const GONE = 'no such file in this skill';
    const rpc = async (method, params) => (await postModern(srv.url, method, params)).json;
    const refused = (reply, code = -32602) => {
      assert.ok(reply.error, JSON.stringify(reply).slice(0, 400));
      assert.equal(reply.error.code, code, reply.error.message);
      assert.ok(!JSON.stringify(reply).includes('secret elsewhere'), 'read the file outside');
      return reply.error.message;
    };
    // jail_open under manifest_build: skills/get and skills/list
    for (const [n, why] of [['turncoat', OUT], ['vanished', GONE]]) {
      const uri = `skill://${n}/SKILL.md`;
      assert.equal(refused(await rpc('skills/get', { uri })), `Unknown skill: ${uri} (${why})`);
    }
    const list = (await rpc('skills/list', {})).result;
    const omitted = list._meta?.['io.modelcontextprotocol.skills/omitted'] ?? [];
    assert.deepEqual(omitted.filter((o) => /turncoat|vanished/.test(o.uri)), [
      { uri: 'skill://turncoat/SKILL.md', reason: OUT },
      { uri: 'skill://vanished/SKILL.md', reason: GONE },
    ]);
    // jail_read: resources/read and read_skill_file
    for (const [n, why] of [['turncoat', OUT], ['vanished', GONE]]) {
      const uri = `skill://${n}/SKILL.md`;
      assert.equal(refused(await rpc('resources/read', { uri })), `Resource not found: ${uri} (${why})`);
    }
    c = await connect(srv.url);
    assert.equal(await callErr(assert, c, 'read_skill_file', { name: 'turncoat', path: 'SKILL.md' }),
      `Cannot read 'SKILL.md' from skill 'turncoat': ${OUT}.`);
    assert.equal(await callErr(assert, c, 'read_skill_file', { name: 'vanished', path: 'SKILL.md' }),
      `Cannot read 'SKILL.md' from skill 'vanished': ${GONE}. Its files: references/a.md.`);
    // skills_body: load_skill and prompts/get (the link out is refused, not followed)
    assert.equal(await callErr(assert, c, 'load_skill', { name: 'turncoat' }),
      "Skill 'turncoat' cannot be loaded right now: SKILL.md leads outside the skill folder. Try reload_skills, or tell the operator.");
    assert.equal(refused(await rpc('prompts/get', { name: 'turncoat' }), -32603),
      "the skill 'turncoat' cannot be read: SKILL.md leads outside the skill folder");
    assert.equal(await callErr(assert, c, 'load_skill', { name: 'vanished' }),
      "Skill 'vanished' cannot be loaded right now: SKILL.md cannot be opened. Try reload_skills, or tell the operator.");
    assert.equal(refused(await rpc('prompts/get', { name: 'vanished' }), -32603),
      "the skill 'vanished' cannot be read: SKILL.md cannot be opened");
  } finally {
    await c?.close();
    await srv.stop();
  }
});

test('prompts: every skill, with the body and the task', opts, async () => {
  const names = [];
  let cursor;
  for (let i = 0; i < 10; i++) {
    const r = await client.listPrompts(cursor ? { cursor } : {});
    names.push(...r.prompts.map((p) => p.name));
    for (const p of r.prompts) {
      assert.equal(typeof p.description, 'string');
      assert.deepEqual(p.arguments, [{ name: 'task', description: p.arguments[0].description, required: false }]);
    }
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  for (const q of [...GOOD, 'renamed-dir', 'big-skill']) assert.ok(names.includes(q), `${q} is a prompt`);
  assert.equal(new Set(names).size, names.length);

  const g = await client.getPrompt({ name: 'git-helper', arguments: { task: 'write a commit message' } });
  assert.equal(g.messages.length, 1);
  assert.equal(g.messages[0].role, 'user');
  assert.equal(g.messages[0].content.type, 'text');
  const loaded = await callOk(assert, client, 'load_skill', { name: 'git-helper' });
  assert.ok(g.messages[0].content.text.startsWith(loaded.content.trim().split('\n')[0]));
  assert.ok(g.messages[0].content.text.endsWith('\n\nTask: write a commit message'));
  assert.match(g.description, /.+/);

  const plain = await client.getPrompt({ name: 'acme/billing' });
  assert.doesNotMatch(plain.messages[0].content.text, /Task:/);

  await assert.rejects(client.getPrompt({ name: 'no-such-skill' }), (e) => e.code === -32602);
  await assert.rejects(client.getPrompt({ name: 'reports' }), (e) => e.code === -32602 && /acme\/reports/.test(e.message));
  // modern era: the same prompt, with Mcp-Name
  const m = ok(await modern('prompts/get', { name: 'git-helper', arguments: { task: 't' } }));
  assert.ok(m.messages[0].content.text.endsWith('\n\nTask: t'));
  cacheAttrs(ok(await modern('prompts/list', {})), 'prompts/list');
});
