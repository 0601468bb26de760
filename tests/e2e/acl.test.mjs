// --acl: per-caller visibility. A skill a caller may not see does not exist
// for it on any surface (the same bytes as a name that does not exist),
// suggestions and totals count visible skills only, see-but-not-run is
// refused, and the rules reload on SIGHUP and on a file change (a bad
// version keeps the old rules; a bad file stops the start).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  PromptListChangedNotificationSchema, ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { TEST_TIMEOUT, indexerSettled, poll, post, postModern, raw, runCli, startServer } from './lib/harness.mjs';
import { signWith, startAs, stopAs } from './lib/oidc.mjs';

const opts = { timeout: TEST_TIMEOUT };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-acl-'));
fs.chmodSync(dir, 0o755);
const skills = path.join(dir, 'skills');
const tokens = path.join(dir, 'tokens');
const aclFile = path.join(dir, 'acl');

const TOK = { alice: 'smcp_alice_acl_token', bob: 'smcp_bob_acl_token', ci: 'smcp_ci_acl_token' };
const RULES = [
  '# who            may  skills',
  'group:platform   run  ops/deploy$',
  'client:ci        see  ops/',
  '*                see  public/',
  '',
].join('\n');

function skill(qname, { script = false, ref = false } = {}) {
  const d = path.join(skills, qname);
  fs.mkdirSync(d, { recursive: true });
  const name = path.basename(qname);
  fs.writeFileSync(path.join(d, 'SKILL.md'),
    `---\nname: ${name}\ndescription: The ${name} skill of ${qname} does its job well\n---\n# ${name}\n\nBody.\n`);
  if (script) {
    fs.mkdirSync(path.join(d, 'scripts'));
    fs.writeFileSync(path.join(d, 'scripts', 'go.sh'), 'echo ran\n');
  }
  if (ref) {
    fs.mkdirSync(path.join(d, 'references'));
    fs.writeFileSync(path.join(d, 'references', 'r.md'), '# ref\n');
  }
}

let srv;
const sha = (t) => crypto.createHash('sha256').update(t).digest('hex');

before(async () => {
  skill('ops/deploy', { script: true, ref: true });
  skill('ops/rollback', { script: true });
  skill('dev/deploy', { script: true });
  skill('public/hello', { script: true, ref: true });
  skill('secret/vault', { script: true });
  fs.writeFileSync(tokens, [
    `alice ${sha(TOK.alice)} 0 groups=platform`,
    `bob ${sha(TOK.bob)}`,
    `ci ${sha(TOK.ci)}`, ''].join('\n'), { mode: 0o600 });
  fs.writeFileSync(aclFile, RULES);
  srv = await startServer({
    skillsDirs: [skills],
    args: ['--auth-tokens', tokens, '--acl', aclFile],
  });
});
after(async () => {
  await srv?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function sdk(who) {
  const c = new Client({ name: 'acl-e2e', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(srv.url), {
    requestInit: { headers: { authorization: `Bearer ${TOK[who]}` } },
  }));
  return c;
}

const auth = (who) => ({ authorization: `Bearer ${TOK[who]}` });
const names = (r) => r.structuredContent.skills.map((k) => k.qualified_name ?? k.name);

async function rpc(who, method, params) {
  const r = await post(srv.url, { jsonrpc: '2.0', id: 7, method, params }, auth(who));
  assert.equal(r.status, 200, r.text);
  return r.text;
}

async function modern(who, method, params) {
  const r = await postModern(srv.url, method, params, { id: 7, headers: auth(who) });
  return r.text;
}

test('each caller lists only what it may see (SDK client, list_skills and stats)', opts, async () => {
  const bob = await sdk('bob');
  const alice = await sdk('alice');
  const ci = await sdk('ci');
  try {
    const b = await bob.callTool({ name: 'list_skills', arguments: {} });
    assert.deepEqual(names(b), ['public/hello']);
    assert.equal(b.structuredContent.total, 1);
    const a = await alice.callTool({ name: 'list_skills', arguments: {} });
    assert.deepEqual(names(a), ['ops/deploy', 'public/hello']);
    const c = await ci.callTool({ name: 'list_skills', arguments: {} });
    assert.deepEqual(names(c), ['ops/deploy', 'ops/rollback', 'public/hello']);
    // a query ranks over the visible set: total counts what the caller sees
    const q = await bob.callTool({ name: 'list_skills', arguments: { query: 'deploy' } });
    assert.ok(!names(q).some((n) => !n.startsWith('public/')), JSON.stringify(names(q)));
    const qc = await ci.callTool({ name: 'list_skills', arguments: { query: 'deploy' } });
    assert.deepEqual(names(qc), ['ops/deploy']);
    assert.equal(qc.structuredContent.total, 1);
    // paging: cursors walk the visible skills, each once
    const seen = [];
    let cursor;
    for (let i = 0; i < 5; i++) {
      const p = await ci.callTool({ name: 'list_skills', arguments: { limit: 1, ...(cursor ? { cursor } : {}) } });
      assert.equal(p.structuredContent.total, 3);
      seen.push(...names(p));
      cursor = p.structuredContent.next_cursor;
      if (!cursor) break;
    }
    assert.deepEqual(seen, ['ops/deploy', 'ops/rollback', 'public/hello']);
    const st = await bob.callTool({ name: 'skill_server_stats', arguments: {} });
    assert.equal(st.structuredContent.index.skills, 1);
    await bob.callTool({ name: 'load_skill', arguments: { name: 'public/hello' } });
    await alice.callTool({ name: 'load_skill', arguments: { name: 'ops/deploy' } });
    const st2 = await bob.callTool({ name: 'skill_server_stats', arguments: {} });
    assert.deepEqual(Object.keys(st2.structuredContent.skills), ['public/hello']);
    const rl = await bob.callTool({ name: 'reload_skills', arguments: {} });
    assert.ok(!rl.isError);
  } finally {
    await Promise.all([bob.close(), alice.close(), ci.close()]);
  }
});

test('a hidden skill answers exactly as one that does not exist, on every surface', opts, async () => {
  const hidden = 'ops/deploy';
  const none = 'ops/qqqqqq';  // same length, nothing close to it either
  const X = '\u0000NAME\u0000';
  const same = (what, h, n) => assert.equal(h.replaceAll(hidden, X), n.replaceAll(none, X), what);
  const surfaces = [
    ['load_skill', (nm) => rpc('bob', 'tools/call', { name: 'load_skill', arguments: { name: nm } })],
    ['read_skill_file', (nm) => rpc('bob', 'tools/call', { name: 'read_skill_file', arguments: { name: nm, path: 'references/r.md' } })],
    ['run_skill_script', (nm) => rpc('bob', 'tools/call', { name: 'run_skill_script', arguments: { name: nm, script: 'go.sh' } })],
    ['resources/read', (nm) => rpc('bob', 'resources/read', { uri: `skill://${nm}/SKILL.md` })],
    ['resources/read file', (nm) => rpc('bob', 'resources/read', { uri: `skill://${nm}/references/r.md` })],
    ['prompts/get', (nm) => rpc('bob', 'prompts/get', { name: nm })],
    ['skills/get', (nm) => modern('bob', 'skills/get', { uri: `skill://${nm}/SKILL.md` })],
    ['resources/directory/read', (nm) => modern('bob', 'resources/directory/read', { uri: `skill://${nm}` })],
    ['discovery archive', async (nm) => {
      const r = await raw(`http://127.0.0.1:${srv.port}/.well-known/agent-skills/${nm}.tar.gz`, { method: 'GET', headers: auth('bob') });
      return `${r.status} ${r.text}`;
    }],
  ];
  for (const [what, ask] of surfaces) {
    const h = await ask(hidden);
    const n = await ask(none);
    same(what, h, n);
    // and the caller who may see it gets something else (the test can fail)
  }
  const seen = await rpc('alice', 'tools/call', { name: 'load_skill', arguments: { name: hidden } });
  assert.ok(!/Unknown skill/.test(seen), seen);
  // a bare name shared with a hidden skill only resolves to the visible one
  const bare = JSON.parse(await rpc('alice', 'tools/call', { name: 'load_skill', arguments: { name: 'deploy' } }));
  assert.ok(!bare.result.isError, JSON.stringify(bare));
  assert.equal(bare.result.structuredContent.qualified_name ?? bare.result.structuredContent.name, 'ops/deploy');
});

test('suggestions never name a hidden skill', opts, async () => {
  const ask = (who, nm) => rpc(who, 'tools/call', { name: 'load_skill', arguments: { name: nm } });
  const a = await ask('alice', 'ops/deplo');
  assert.match(a, /Closest matches: ops\/deploy/);   // visible to alice: suggested
  for (const nm of ['ops/deplo', 'deplo', 'ops/rollbak', 'secret/vaul', 'vault']) {
    const b = await ask('bob', nm);
    assert.match(b, /Unknown skill/);
    assert.doesNotMatch(b, /ops\/deploy|ops\/rollback|secret\/vault|dev\/deploy/, b);
  }
  const ra = await ask('alice', 'deploy');  // dev/deploy hidden: not "several skills"
  assert.doesNotMatch(ra, /several skills|dev\/deploy/);
});

test('lists of every surface hold only visible skills', opts, async () => {
  const only = ['public/hello'];
  const res = JSON.parse(await rpc('bob', 'resources/list', {})).result.resources;
  assert.deepEqual(res.map((r) => r.title), only);
  const pr = JSON.parse(await rpc('bob', 'prompts/list', {})).result.prompts;
  assert.deepEqual(pr.map((p) => p.name), only);
  const sl = JSON.parse(await modern('bob', 'skills/list', {})).result;
  assert.equal(sl.cacheScope, 'private');
  const uris = JSON.stringify(sl);
  assert.ok(uris.includes('public/hello') && !/ops\/|secret\/|dev\//.test(uris), uris);
  const idx = await raw(`http://127.0.0.1:${srv.port}/.well-known/agent-skills/index.json`, { method: 'GET', headers: auth('bob') });
  assert.equal(idx.status, 200);
  assert.deepEqual(idx.json.skills.map((s) => s.url), ['public/hello.tar.gz']);
  const idxa = await raw(`http://127.0.0.1:${srv.port}/.well-known/agent-skills/index.json`, { method: 'GET', headers: auth('alice') });
  assert.deepEqual(idxa.json.skills.map((s) => s.url), ['ops/deploy.tar.gz', 'public/hello.tar.gz']);
  const ar = await raw(`http://127.0.0.1:${srv.port}/.well-known/agent-skills/ops/deploy.tar.gz`, { method: 'GET', headers: auth('alice') });
  assert.equal(ar.status, 200);
});

test('a skill visible but not runnable: run_skill_script refuses, saying why', opts, async () => {
  const alice = await sdk('alice');
  try {
    const ok = await alice.callTool({ name: 'run_skill_script', arguments: { name: 'ops/deploy', script: 'go.sh' } });
    assert.ok(!ok.isError, JSON.stringify(ok));
    assert.equal(ok.structuredContent.stdout.trim(), 'ran');
    const no = await alice.callTool({ name: 'run_skill_script', arguments: { name: 'public/hello', script: 'go.sh' } });
    assert.equal(no.isError, true);
    assert.match(no.content[0].text, /You may not run the scripts of skill 'public\/hello'/);
    const load = await alice.callTool({ name: 'load_skill', arguments: { name: 'public/hello' } });
    assert.ok(!load.isError);
  } finally {
    await alice.close();
  }
});

async function bobSees() {
  const r = JSON.parse(await rpc('bob', 'tools/call', { name: 'list_skills', arguments: {} }));
  return names(r.result);
}

test('reloads: SIGHUP, a file change, and a bad version keeps the rules in force', opts, async () => {
  assert.deepEqual(await bobSees(), ['public/hello']);
  // SIGHUP
  fs.writeFileSync(aclFile, `${RULES}client:bob see secret/\n`);
  process.kill(srv.proc.pid, 'SIGHUP');
  const s1 = await poll(async () => { const n = await bobSees(); return n.length === 2 ? n : null; }, 5000);
  assert.deepEqual(s1, ['public/hello', 'secret/vault']);
  // a bad version (SIGHUP): logged with FILE:LINE, the rules stay
  fs.writeFileSync(aclFile, `${RULES}client:bob see (\n`);
  process.kill(srv.proc.pid, 'SIGHUP');
  const logged = await poll(() => /access rules not reloaded.*acl:5: the pattern does not compile/.test(srv.log), 5000);
  assert.ok(logged, srv.log.slice(-800));
  assert.deepEqual(await bobSees(), ['public/hello', 'secret/vault']);
  // a file change, no signal (checked every 2 s)
  fs.writeFileSync(aclFile, 'client:bob see ops/rollback$\n');
  const s2 = await poll(async () => { const n = await bobSees(); return n.length === 1 && n[0] === 'ops/rollback' ? n : null; }, 8000);
  assert.deepEqual(s2, ['ops/rollback']);
  fs.writeFileSync(aclFile, RULES);
  process.kill(srv.proc.pid, 'SIGHUP');
  assert.ok(await poll(async () => (await bobSees()).join() === 'public/hello', 5000));
});

test('a subscription to a skill hidden since is not told of its changes (--stateful)', opts, async () => {
  const d = path.join(dir, 'sub');
  const acl2 = path.join(dir, 'acl-sub');
  const put = (q, words) => {
    fs.mkdirSync(path.join(d, q), { recursive: true });
    fs.writeFileSync(path.join(d, q, 'SKILL.md'), `---\nname: ${path.basename(q)}\ndescription: ${words}\n---\n# x\n`);
  };
  put('public/one', 'The first skill of the subscription test');
  put('public/two', 'The second skill of the subscription test');
  fs.writeFileSync(acl2, 'client:bob see public/\n');
  const s = await startServer({ skillsDirs: [d], args: ['--stateful', '--auth-tokens', tokens, '--acl', acl2] });
  const c = new Client({ name: 'acl-sub', version: '1' });
  try {
    await c.connect(new StreamableHTTPClientTransport(new URL(s.url), {
      requestInit: { headers: auth('bob') },
    }));
    const updated = [];
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); });
    await c.subscribeResource({ uri: 'skill://public/one/SKILL.md' });
    await c.subscribeResource({ uri: 'skill://public/two/SKILL.md' });
    await poll(async () => /skill_mcp_notify_streams 1\b/.test((await raw(s.url.replace(/\/mcp$/, '/metrics'), { method: 'GET', headers: auth('bob') })).text), 5000);
    await indexerSettled(s);    // its rescan catching an edit half written would tell twice
    fs.writeFileSync(acl2, 'client:bob see public/two$\n');
    process.kill(s.proc.pid, 'SIGHUP');
    const sees = async () => names(await c.callTool({ name: 'list_skills', arguments: {} })).join();
    assert.ok(await poll(async () => (await sees()) === 'public/two', 5000), await sees());
    put('public/one', 'The first skill, edited after it was hidden');
    put('public/two', 'The second skill, edited while visible');
    await c.callTool({ name: 'reload_skills', arguments: {} });
    assert.ok(await poll(() => updated.includes('skill://public/two/SKILL.md'), 10_000), updated.join());
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(updated, ['skill://public/two/SKILL.md'], 'no resources/updated names a hidden skill');
  } finally {
    await c.close();
    await s.stop();
  }
});

test('a listener is told list_changed only when what its view lists changed (--stateful)', opts, async () => {
  const d = path.join(dir, 'views');
  const acl3 = path.join(dir, 'acl-views');
  const put = (q, words) => {
    fs.mkdirSync(path.join(d, q), { recursive: true });
    fs.writeFileSync(path.join(d, q, 'SKILL.md'), `---\nname: ${path.basename(q)}\ndescription: ${words}\n---\n# x\n`);
  };
  put('ops/pager', 'Page the on-call engineer of the platform team');
  put('public/hello', 'Say hello to whoever asks, politely');
  fs.writeFileSync(acl3, 'group:platform see ops/\n* see public/\n');
  const s = await startServer({ skillsDirs: [d], args: ['--stateful', '--auth-tokens', tokens, '--acl', acl3] });
  const seen = {};
  const why = () => `${JSON.stringify(seen)}; server log:\n${s.log}`;
  const clients = [];
  try {
    for (const who of ['alice', 'bob']) {     // alice is in group platform, bob in none
      const c = new Client({ name: `acl-views-${who}`, version: '1' });
      const got = seen[who] = { res: 0, prompts: 0 };
      c.setNotificationHandler(ResourceListChangedNotificationSchema, () => { got.res++; });
      c.setNotificationHandler(PromptListChangedNotificationSchema, () => { got.prompts++; });
      await c.connect(new StreamableHTTPClientTransport(new URL(s.url), { requestInit: { headers: auth(who) } }));
      clients.push(c);
    }
    await poll(async () => /skill_mcp_notify_streams 2\b/.test((await raw(s.url.replace(/\/mcp$/, '/metrics'), { method: 'GET', headers: auth('bob') })).text), 5000);
    // The body indexer's one rescan may come late (it runs at the lowest
    // priority): one that caught the edit below half written would make a
    // generation of its own, and alice would be told twice.
    await indexerSettled(s);
    // A SIGHUP with nothing edited (a log rotation's) reads the same rules
    // and the same skills: no one is told to re-list.
    const hups = () => (s.log.match(/SIGHUP: rescanning skills/g) ?? []).length;
    const h0 = hups();
    process.kill(s.proc.pid, 'SIGHUP');
    assert.ok(await poll(() => hups() > h0, 10_000), why());
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(seen, { alice: { res: 0, prompts: 0 }, bob: { res: 0, prompts: 0 } },
      `a SIGHUP with nothing edited tells no one: ${why()}`);
    put('ops/pager', 'Page the on-call engineer, edited where only platform sees it');
    await clients[0].callTool({ name: 'reload_skills', arguments: {} });
    assert.ok(await poll(() => seen.alice.res === 1 && seen.alice.prompts === 1, 10_000), why());
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(seen.bob, { res: 0, prompts: 0 }, 'a change bob cannot see tells bob nothing');
    put('public/hello', 'Say hello, edited where everyone sees it');
    await clients[1].callTool({ name: 'reload_skills', arguments: {} });
    assert.ok(await poll(() => seen.bob.res === 1 && seen.alice.res === 2, 10_000), why());
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(seen, { alice: { res: 2, prompts: 2 }, bob: { res: 1, prompts: 1 } });
    // new rules narrow alice and widen bob: both lists changed, both are told
    // (once or twice: the rules file's own check, every 2 s, may load the new
    // rules before SIGHUP's forced reload does, and each reload tells all)
    fs.writeFileSync(acl3, 'group:platform see public/\n* see ops/\n');
    process.kill(s.proc.pid, 'SIGHUP');
    assert.ok(await poll(() => seen.alice.res >= 3 && seen.bob.res >= 2, 10_000), why());
  } finally {
    for (const c of clients) await c.close();
    await s.stop();
  }
});

test('a task of a skill hidden since it ran is gone for its client (--enable-tasks)', opts, async () => {
  const acl3 = path.join(dir, 'acl-tasks');
  fs.writeFileSync(acl3, 'client:bob run public/\nclient:bob run secret/\n');
  const s = await startServer({ skillsDirs: [skills], args: ['--enable-tasks', '--auth-tokens', tokens, '--acl', acl3] });
  const h = { ...auth('bob'), 'mcp-protocol-version': '2025-11-25' };
  const call = async (method, params) => JSON.parse((await post(s.url, { jsonrpc: '2.0', id: 3, method, params }, h)).text);
  try {
    const run = async (name) => (await call('tools/call', {
      name: 'run_skill_script', arguments: { name, script: 'scripts/go.sh' }, task: {},
    })).result.task.taskId;
    const hid = await run('secret/vault');
    const vis = await run('public/hello');
    assert.ok(await poll(async () => (await call('tasks/list', {})).result.tasks.every((t) => t.status === 'completed'), 10_000));
    assert.match(JSON.stringify((await call('tasks/result', { taskId: hid })).result), /ran/);
    fs.writeFileSync(acl3, 'client:bob run public/\n');
    process.kill(s.proc.pid, 'SIGHUP');
    assert.ok(await poll(async () => (await call('tasks/list', {})).result.tasks.length === 1, 5000));
    assert.deepEqual((await call('tasks/list', {})).result.tasks.map((t) => t.taskId), [vis]);
    const none = 'f'.repeat(32);
    for (const m of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const a = await call(m, { taskId: hid });
      const b = await call(m, { taskId: none });
      assert.deepEqual(a.error, b.error, `${m} of a hidden skill's task answers as for no task`);
    }
    assert.match(JSON.stringify((await call('tasks/result', { taskId: vis })).result), /ran/);
  } finally {
    await s.stop();
  }
});

test('a malformed file stops the start: exit 2 with FILE:LINE', opts, () => {
  const bad = path.join(dir, 'bad-acl');
  fs.writeFileSync(bad, '* see public/\nteam:ops see .*\n');
  const r = runCli(['--acl', bad, '--port', '0', '--skills', skills]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--acl .*bad-acl:2: 'team:ops' names nobody/);
  const missing = runCli(['--acl', path.join(dir, 'nope'), '--port', '0', '--skills', skills]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /nope: cannot read the access rules/);
});

test('without a token (auth off) a caller matches * rules only', opts, async () => {
  const s2 = await startServer({ skillsDirs: [skills], args: ['--acl', aclFile] });
  try {
    const r = await post(s2.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_skills', arguments: {} } });
    assert.deepEqual(names(r.json.result), ['public/hello']);
  } finally {
    await s2.stop();
  }
});

// ---- OAuth: sub: and scope: rules, with tokens signed by the test
// authorization server's key (lib/oidc-as.mjs, as in oauth.test.mjs) ----

test('OAuth: sub: and scope: rules match the token\'s claims (not its client id)', { timeout: 40_000 }, async () => {
  const as = await startAs();
  const rules = path.join(dir, 'acl-oauth');
  fs.writeFileSync(rules, 'sub:alice@example.com see ops/\nscope:skills.all see .*\n* see public/\n');
  let s3;
  try {
    s3 = await startServer({ skillsDirs: [skills], args: ['--oauth-issuer', as.issuer, '--acl', rules] });
    const { keys } = await (await fetch(`${as.issuer}/__test/keys`)).json();
    const jwk = keys.find((k) => k.alg === 'RS256');
    const now = Math.floor(Date.now() / 1000);
    const tok = (extra) => signWith(jwk, { alg: 'RS256', typ: 'at+jwt', kid: jwk.kid }, { iss: as.issuer, aud: s3.url, client_id: 'agent-a', sub: 'svc', scope: 'skills:read', iat: now, exp: now + 300, ...extra });
    const list = async (t) => {
      const r = await post(s3.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_skills', arguments: {} } }, { authorization: `Bearer ${t}` });
      assert.equal(r.status, 200, r.text);
      return names(r.json.result);
    };
    assert.deepEqual(await list(tok({ sub: 'alice@example.com' })), ['ops/deploy', 'ops/rollback', 'public/hello']);
    assert.deepEqual(await list(tok({ scope: 'skills:read skills.all' })),
      ['dev/deploy', 'ops/deploy', 'ops/rollback', 'public/hello', 'secret/vault']);
    assert.deepEqual(await list(tok({ scp: ['skills.all'] })),
      ['dev/deploy', 'ops/deploy', 'ops/rollback', 'public/hello', 'secret/vault']);
    assert.deepEqual(await list(tok({ client_id: 'alice@example.com' })), ['public/hello']);
    assert.deepEqual(await list(tok({ scope: 'skills.allx' })), ['public/hello']);
  } finally {
    await s3?.stop();
    stopAs(as);
  }
});
