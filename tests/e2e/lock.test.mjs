// --lock: only approved skill versions are served. Quarantine in strict and
// pin modes, `skill-mcp lock approve|revoke|diff|status`, rollback to the
// approved version from --lock-store, SIGHUP, the audit line of every script
// run, a malformed lock that stops the start, and `lock gc` of the store.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  BIN, TEST_TIMEOUT, call, callErr, callOk, connect, indexerSettled, poll, post, raw, runCli, startServer,
} from './lib/harness.mjs';

const T = { timeout: 60_000 };
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-lock-'));
fs.chmodSync(tmp, 0o755);  // a root server runs scripts as nobody, who must read the libraries
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

let n = 0;
/** A small library: billing/refunds (reference + script) and notes. */
function library() {
  const root = path.join(tmp, `lib${n++}`);
  const refunds = path.join(root, 'billing', 'refunds');
  fs.mkdirSync(path.join(refunds, 'references'), { recursive: true });
  fs.mkdirSync(path.join(refunds, 'scripts'), { recursive: true });
  fs.writeFileSync(path.join(refunds, 'SKILL.md'),
    '---\nname: refunds\ndescription: Issue refunds by the policy.\n---\n# Refunds\nRead the policy.\n');
  fs.writeFileSync(path.join(refunds, 'references', 'policy.md'), 'policy v1\n');
  fs.writeFileSync(path.join(refunds, 'scripts', 'refund.sh'), 'echo "refund v1 $1"\n');
  const notes = path.join(root, 'notes');
  fs.mkdirSync(notes, { recursive: true });
  fs.writeFileSync(path.join(notes, 'SKILL.md'),
    '---\nname: notes\ndescription: Take notes.\n---\n# Notes\nWrite them down.\n');
  return { root, refunds, notes, lock: path.join(root, '..', `lib${n - 1}.lock`) };
}

function lockCli(lib, ...args) {
  return runCli(['lock', ...args, '--lock', lib.lock, '--skills', lib.root]);
}

function card(list, qname) {
  return list.skills.find((s) => (s.qualified_name ?? s.name) === qname);
}

async function quarantined(client, qname, re) {
  return poll(async () => {
    const c = card(await callOk(assert, client, 'list_skills', { limit: 100 }), qname);
    return c?.quarantined === true && re.test(c.quarantine_reason) ? c : null;
  }, 10_000);
}

test('strict: approved skills are served, the others quarantined with the command that approves them', T, async () => {
  const lib = library();
  const a = lockCli(lib, 'approve', 'billing/refunds', '--by', 'alice');
  assert.equal(a.code, 0, a.stderr);
  assert.match(a.stdout, /^approved billing\/refunds sha256:[0-9a-f]{64} \(3 files\) by alice at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/m);
  const text = fs.readFileSync(lib.lock, 'utf8');
  assert.match(text, /^billing\/refunds sha256:[0-9a-f]{64} execution=none approved-by=alice approved-at=\S+Z$/m);
  assert.match(text, /^ {2}sha256:[0-9a-f]{64} 10 references\/policy\.md$/m);

  const srv = await startServer({ skillsDirs: [lib.root], args: ['--lock', lib.lock] });
  try {
    await indexerSettled(srv);    // its rescan would judge the edits below early
    const c = await connect(srv.url);
    const list = await callOk(assert, c, 'list_skills', {});
    const ok = card(list, 'billing/refunds');
    assert.equal(ok.quarantined, undefined, 'an approved card carries no quarantine fields');
    assert.equal(ok.quarantine_reason, undefined);
    const q = card(list, 'notes');
    assert.equal(q.quarantined, true);
    assert.match(q.quarantine_reason, /not approved/);
    assert.ok(q.quarantine_reason.includes(`skill-mcp lock approve notes --lock ${lib.lock}`), q.quarantine_reason);

    const body = await callOk(assert, c, 'load_skill', { name: 'billing/refunds' });
    assert.match(body.content, /Read the policy/);
    for (const [tool, args] of [
      ['load_skill', { name: 'notes' }],
      ['read_skill_file', { name: 'notes', path: 'SKILL.md' }],
      ['run_skill_script', { name: 'notes', script: 'scripts/x.sh' }],
    ]) {
      const msg = await callErr(assert, c, tool, args);
      assert.match(msg, /^Skill 'notes' is quarantined: not approved/);
      assert.ok(msg.includes(`skill-mcp lock approve notes --lock ${lib.lock}`), msg);
    }
    // resources and prompts: a JSON-RPC error with the same message
    const r = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'skill://notes/SKILL.md' } },
      { 'mcp-protocol-version': '2025-11-25' });
    assert.equal(r.json.error.code, -32602);
    assert.match(r.json.error.message, /quarantined: not approved.*skill-mcp lock approve notes/);
    const p = await post(srv.url, { jsonrpc: '2.0', id: 2, method: 'prompts/get', params: { name: 'notes' } },
      { 'mcp-protocol-version': '2025-11-25' });
    assert.equal(p.json.error.code, -32602);
    assert.match(p.json.error.message, /quarantined/);
    const good = await post(srv.url, { jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'skill://billing/refunds/references/policy.md' } },
      { 'mcp-protocol-version': '2025-11-25' });
    assert.equal(good.json.result.contents[0].text, 'policy v1\n');

    // the discovery index leaves a quarantined skill out (an archive would hand out the tree)
    const idx = await raw(srv.url.replace(/\/mcp$/, '/.well-known/agent-skills/index.json'), { method: 'GET' });
    assert.equal(idx.status, 200);
    const names = JSON.stringify(idx.json);
    assert.match(names, /billing\/refunds/);
    assert.doesNotMatch(names, /"notes/);
    const md = await raw(srv.url.replace(/\/mcp$/, '/.well-known/agent-skills/notes/SKILL.md'), { method: 'GET' });
    assert.equal(md.status, 404);

    // skills/list: a quarantined skill is not listed but named as omitted, with the reason
    const sl = await post(srv.url, { jsonrpc: '2.0', id: 5, method: 'skills/list', params: {} },
      { 'mcp-protocol-version': '2025-11-25' });
    const listed = sl.json.result.skills.map((e) => e.uri);
    assert.ok(listed.includes('skill://billing/refunds/SKILL.md'), JSON.stringify(listed));
    assert.ok(!listed.includes('skill://notes/SKILL.md'), JSON.stringify(listed));
    const omitted = sl.json.result._meta['io.modelcontextprotocol.skills/omitted'];
    const om = omitted.find((o) => o.uri === 'skill://notes/SKILL.md');
    assert.ok(om, JSON.stringify(omitted));
    assert.match(om.reason, /^quarantined: not approved.*skill-mcp lock approve notes/);
    const sg = await post(srv.url, { jsonrpc: '2.0', id: 6, method: 'skills/get', params: { uri: 'skill://notes/SKILL.md' } },
      { 'mcp-protocol-version': '2025-11-25' });
    assert.equal(sg.json.error?.code, -32602);
    assert.match(sg.json.error.message, /quarantined/);

    // edit a reference: refused at once (read-time check), quarantined on reload
    fs.writeFileSync(path.join(lib.refunds, 'references', 'policy.md'), 'policy v2 (unreviewed)\n');
    const early = await callErr(assert, c, 'read_skill_file', { name: 'billing/refunds', path: 'references/policy.md' });
    assert.match(early, /changed on disk since/);
    const rr = await post(srv.url, { jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri: 'skill://billing/refunds/references/policy.md' } },
      { 'mcp-protocol-version': '2025-11-25' });
    assert.equal(rr.json.error?.code, -32602);
    assert.match(rr.json.error.message, /changed on disk since/);
    const run = await callErr(assert, c, 'run_skill_script', { name: 'billing/refunds', script: 'scripts/refund.sh' });
    assert.match(run, /changed on disk since.*nothing ran/);
    await callOk(assert, c, 'reload_skills', {});
    const qc = await quarantined(c, 'billing/refunds', /changed since approved by alice/);
    assert.ok(qc.quarantine_reason.includes('skill-mcp lock diff billing/refunds'), qc.quarantine_reason);
    assert.match(await callErr(assert, c, 'load_skill', { name: 'refunds' }), /quarantined: changed since approved/);

    // approve again: served, with the new content
    const again = lockCli(lib, 'approve', 'billing/refunds', '--by', 'bob');
    assert.equal(again.code, 0, again.stderr);
    await callOk(assert, c, 'reload_skills', {});
    const f = await callOk(assert, c, 'read_skill_file', { name: 'billing/refunds', path: 'references/policy.md' });
    assert.equal(f.content, 'policy v2 (unreviewed)\n');
    assert.equal(card(await callOk(assert, c, 'list_skills', {}), 'billing/refunds').quarantined, undefined);
    await c.close();
  } finally {
    await srv.stop();
  }
});

test('lock diff flags a new script and a new hook loudly and exits 1; status lists each verdict', T, () => {
  const lib = library();
  assert.equal(lockCli(lib, 'approve', '--all', '--by', 'alice').code, 0);
  const clean = lockCli(lib, 'diff');
  assert.equal(clean.code, 0, clean.stdout);
  assert.match(clean.stdout, /^billing\/refunds: approved \(by alice/m);

  fs.writeFileSync(path.join(lib.refunds, 'references', 'policy.md'), 'policy v2\n');
  fs.writeFileSync(path.join(lib.refunds, 'scripts', 'wire.sh'), 'curl example.org\n');
  fs.mkdirSync(path.join(lib.notes, 'hooks'));
  fs.writeFileSync(path.join(lib.notes, 'hooks', 'pre.sh'), 'echo {}\n');
  fs.rmSync(path.join(lib.refunds, 'scripts', 'refund.sh'));
  const d = lockCli(lib, 'diff');
  assert.equal(d.code, 1, 'unapproved changes fail the diff (for CI)');
  assert.match(d.stdout, /^billing\/refunds: CHANGED since approved by alice at \S+ {2}! WIDENS/m);
  assert.match(d.stdout, /^ {4}M references\/policy\.md$/m, 'a changed reference is listed, not flagged');
  assert.match(d.stdout, /^ {2}! A scripts\/wire\.sh {2}WIDENS: new script$/m);
  assert.match(d.stdout, /^ {4}R scripts\/refund\.sh$/m);
  assert.match(d.stdout, /^ {2}! A hooks\/pre\.sh {2}WIDENS: new hook$/m);

  const one = lockCli(lib, 'diff', 'notes');
  assert.equal(one.code, 1);
  assert.ok(!one.stdout.includes('billing/refunds'), 'diff NAME reports that skill only');

  // a changed execution: block widens too
  fs.writeFileSync(path.join(lib.notes, 'SKILL.md'),
    '---\nname: notes\ndescription: Take notes.\nexecution:\n  default:\n    timeout: 500\n---\n# Notes\n');
  assert.match(lockCli(lib, 'diff', 'notes').stdout, /^ {2}! X SKILL\.md: the execution: block changed {2}WIDENS$/m);

  const st = lockCli(lib, 'status');
  assert.equal(st.code, 1);
  assert.match(st.stdout, /^notes: CHANGED/m);
  assert.equal(lockCli(lib, 'approve', '--all').code, 0);
  assert.equal(lockCli(lib, 'status').code, 0);

  // bad uses
  assert.equal(lockCli(lib, 'approve', 'nope').code, 1);
  assert.match(lockCli(lib, 'approve', 'nope').stderr, /nope: no such skill/);
  assert.equal(lockCli(lib, 'approve').code, 2, 'approve needs names or --all');
  assert.equal(lockCli(lib, 'revoke', 'nope').code, 1);
  assert.equal(runCli(['lock', 'frobnicate']).code, 2);
  assert.equal(lockCli(lib, 'approve', 'notes', '--by', 'bad name').code, 2);
});

test('revoke quarantines at once on SIGHUP; a malformed edit keeps the loaded lock', T, async () => {
  const lib = library();
  assert.equal(lockCli(lib, 'approve', '--all', '--by', 'alice').code, 0);
  const srv = await startServer({ skillsDirs: [lib.root], args: ['--lock', lib.lock] });
  try {
    await indexerSettled(srv);    // its rescan would judge the edits below early
    const c = await connect(srv.url);
    await callOk(assert, c, 'load_skill', { name: 'notes' });
    // SKILL.md edited before the next refresh and never loaded: neither body nor prompt is served
    fs.writeFileSync(path.join(lib.refunds, 'SKILL.md'),
      '---\nname: refunds\ndescription: Issue refunds by the policy.\n---\n# Refunds\nUnreviewed text, a longer one.\n');
    assert.match(await callErr(assert, c, 'load_skill', { name: 'billing/refunds' }), /changed on disk since/);
    const pg = await post(srv.url, { jsonrpc: '2.0', id: 5, method: 'prompts/get', params: { name: 'billing/refunds' } },
      { 'mcp-protocol-version': '2025-11-25' });
    assert.equal(pg.json.error?.code, -32602);
    assert.match(pg.json.error.message, /changed on disk since/);
    fs.writeFileSync(path.join(lib.refunds, 'SKILL.md'),
      '---\nname: refunds\ndescription: Issue refunds by the policy.\n---\n# Refunds\nRead the policy.\n');
    // put back as approved (new inode data, same bytes): served again, fresh from disk
    assert.match((await callOk(assert, c, 'load_skill', { name: 'billing/refunds' })).content, /Read the policy/);

    // a body cached before an edit is the approved one, and is what load_skill serves
    await callOk(assert, c, 'reload_skills', {});
    const cached = await callOk(assert, c, 'load_skill', { name: 'billing/refunds' });
    fs.writeFileSync(path.join(lib.refunds, 'SKILL.md'),
      '---\nname: refunds\ndescription: Issue refunds by the policy.\n---\n# Refunds\nUnreviewed again.\n');
    assert.equal((await callOk(assert, c, 'load_skill', { name: 'billing/refunds' })).content, cached.content);
    fs.writeFileSync(path.join(lib.refunds, 'SKILL.md'),
      '---\nname: refunds\ndescription: Issue refunds by the policy.\n---\n# Refunds\nRead the policy.\n');
    const r = lockCli(lib, 'revoke', 'notes', '--by', 'carol');
    assert.equal(r.code, 0, r.stderr);
    assert.match(fs.readFileSync(lib.lock, 'utf8'), /^notes .* revoked-by=carol revoked-at=\S+Z$/m);
    process.kill(srv.proc.pid, 'SIGHUP');
    await quarantined(c, 'notes', /revoked by carol/);
    assert.match(await callErr(assert, c, 'load_skill', { name: 'notes' }), /quarantined: revoked by carol/);
    await callOk(assert, c, 'load_skill', { name: 'billing/refunds' });

    // a broken lock on disk: logged, and the last good one stays in force
    fs.appendFileSync(lib.lock, 'garbage-line\n');
    process.kill(srv.proc.pid, 'SIGHUP');
    await poll(() => /lock not reloaded.*:\d+:/.test(srv.log), 10_000);
    assert.match(srv.log, /lock not reloaded, keeping the 2 entries loaded: .*lock:\d+: expected the manifest digest/);
    await callOk(assert, c, 'load_skill', { name: 'billing/refunds' });
    await c.close();
  } finally {
    await srv.stop();
  }
});

test('a lock edited by hand at the same size with its old mtime put back is read at the next refresh tick', T, async () => {
  const lib = library();
  assert.equal(lockCli(lib, 'approve', '--all', '--by', 'alice').code, 0);
  // a whole second, so that the edit below can put it back exactly (touch -d)
  fs.utimesSync(lib.lock, 1_000_000, 1_000_000);
  const read = fs.statSync(lib.lock, { bigint: true });
  const srv = await startServer({ skillsDirs: [lib.root], args: ['--lock', lib.lock], refresh: 0.2 });
  try {
    await indexerSettled(srv);
    const c = await connect(srv.url);
    await callOk(assert, c, 'load_skill', { name: 'notes' });
    await new Promise((r) => setTimeout(r, 50));    // past a timestamp tick: the edit's ctime differs
    const text = fs.readFileSync(lib.lock, 'utf8');
    const edited = text.replace(/^notes /m, 'nopes ');
    assert.notEqual(edited, text);
    fs.writeFileSync(lib.lock, edited);   // in place: the same inode
    fs.utimesSync(lib.lock, 1_000_000, 1_000_000);
    const now = fs.statSync(lib.lock, { bigint: true });
    assert.deepEqual([now.ino, now.size, now.mtimeNs], [read.ino, read.size, read.mtimeNs]);
    assert.notEqual(now.ctimeNs, read.ctimeNs);
    assert.ok(await quarantined(c, 'notes', /not approved/), `the edited lock was not applied; log:\n${srv.log}`);
    assert.match(await callErr(assert, c, 'load_skill', { name: 'notes' }), /quarantined: not approved/);
    await callOk(assert, c, 'load_skill', { name: 'billing/refunds' });
    assert.ok(srv.log.includes(`${lib.lock}: 2 approved version(s) loaded`), srv.log);
    await c.close();
  } finally {
    await srv.stop();
  }
});

test('a malformed lock stops the start with file:line; flags are checked', T, () => {
  const lib = library();
  fs.writeFileSync(lib.lock, '# approved\nnotes sha256:abc approved-by=x approved-at=2026-01-01T00:00:00Z\n');
  const r = spawnSync(BIN, ['--skills', lib.root, '--port', '0', '--lock', lib.lock], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(r.status, 2);
  assert.ok(r.stderr.includes(`${lib.lock}:2: expected the manifest digest`), r.stderr);

  // a hand edit to a file line no longer matches the entry's digest
  assert.equal(lockCli(lib, 'approve', 'notes').code, 1, 'approve does not overwrite a lock it cannot read');
  fs.rmSync(lib.lock);
  assert.equal(lockCli(lib, 'approve', 'notes', '--by', 'alice').code, 0);
  const text = fs.readFileSync(lib.lock, 'utf8').replace(/ (\d+) SKILL\.md/, (m, s) => ` ${Number(s) + 1} SKILL.md`);
  fs.writeFileSync(lib.lock, text);
  const h = spawnSync(BIN, ['--skills', lib.root, '--port', '0', '--lock', lib.lock], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(h.status, 2);
  assert.match(h.stderr, /:3: the file lines of notes hash to sha256:[0-9a-f]{64}, not to the digest recorded/);

  for (const args of [['--lock-mode', 'pin'], ['--lock', lib.lock, '--lock-mode', 'loose'],
    ['--lock', lib.lock, '--lock-serve', 'approved']]) {
    const b = spawnSync(BIN, ['--skills', lib.root, '--port', '0', ...args], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(b.status, 2, `${args.join(' ')}: ${b.stderr}`);
  }
});

test('--lock-store with --lock-serve approved: an unreviewed edit is served at its approved version', T, async () => {
  const lib = library();
  const store = path.join(tmp, `store${n}`);
  const a = lockCli(lib, 'approve', '--all', '--by', 'alice', '--lock-store', store);
  assert.equal(a.code, 0, a.stderr);
  assert.ok(fs.readdirSync(path.join(store, 'blobs')).length >= 4);
  const audit = path.join(tmp, `audit${n}.log`);
  const srv = await startServer({
    skillsDirs: [lib.root],
    args: ['--lock', lib.lock, '--lock-store', store, '--lock-serve', 'approved', '--audit-log', audit],
  });
  try {
    const c = await connect(srv.url);
    fs.writeFileSync(path.join(lib.refunds, 'references', 'policy.md'), 'policy v2 (unreviewed)\n');
    fs.writeFileSync(path.join(lib.refunds, 'scripts', 'refund.sh'), 'echo "refund v2 $1"\n');
    fs.writeFileSync(path.join(lib.refunds, 'SKILL.md'),
      '---\nname: refunds\ndescription: Unreviewed description.\n---\n# Refunds\nSend money anywhere.\n');
    await callOk(assert, c, 'reload_skills', {});
    const q = await quarantined(c, 'billing/refunds', /the approved version is served/);
    assert.equal(q.description, 'Issue refunds by the policy.', 'the card is the approved version');

    const f = await callOk(assert, c, 'read_skill_file', { name: 'billing/refunds', path: 'references/policy.md' });
    assert.equal(f.content, 'policy v1\n');
    const body = await callOk(assert, c, 'load_skill', { name: 'billing/refunds' });
    assert.match(body.content, /Read the policy/);
    assert.doesNotMatch(body.content, /anywhere/);
    const run = await callOk(assert, c, 'run_skill_script', { name: 'billing/refunds', script: 'scripts/refund.sh', args: ['42'] });
    assert.equal(run.status, 'ok', JSON.stringify(run));
    assert.equal(run.stdout, 'refund v1 42\n', 'the script ran from the approved copy');
    const r = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'skill://billing/refunds/references/policy.md' } },
      { 'mcp-protocol-version': '2025-11-25' });
    assert.equal(r.json.result.contents[0].text, 'policy v1\n');
    // skills/list describes what resources/read serves: the approved files
    const sl = await post(srv.url, { jsonrpc: '2.0', id: 2, method: 'skills/list', params: {} },
      { 'mcp-protocol-version': '2025-11-25' });
    const ent = sl.json.result.skills.find((e) => e.uri === 'skill://billing/refunds/SKILL.md');
    assert.ok(ent, JSON.stringify(sl.json.result));
    assert.equal(ent.frontmatter.description, 'Issue refunds by the policy.');
    const pol = ent.resources.find((x) => x.uri === 'skill://billing/refunds/references/policy.md');
    const want = 'sha256:' + crypto.createHash('sha256').update('policy v1\n').digest('hex');
    assert.equal(pol.digest, want, 'the digest of the bytes resources/read serves');

    // the approved copy is read-only
    const tree = fs.readdirSync(path.join(store, 'trees')).filter((d) => !d.startsWith('.'));
    assert.equal(tree.length, 1);
    const copy = path.join(store, 'trees', tree[0], 'references', 'policy.md');
    assert.equal(fs.statSync(copy).mode & 0o222, 0);

    // audit: one JSON line for the run, naming the approved version
    const lines = await poll(() => {
      const t = fs.existsSync(audit) ? fs.readFileSync(audit, 'utf8').trim() : '';
      return t ? t.split('\n') : null;
    });
    assert.equal(lines.length, 1);
    const e = JSON.parse(lines[0]);
    const lockText = fs.readFileSync(lib.lock, 'utf8');
    const digest = /^billing\/refunds (sha256:[0-9a-f]{64})/m.exec(lockText)[1];
    const at = /^billing\/refunds .*approved-at=(\S+)/m.exec(lockText)[1];
    assert.equal(e.event, 'script_run');
    assert.equal(e.skill, 'billing/refunds');
    assert.equal(e.manifest_digest, digest);
    assert.equal(e.approved_at, at);
    assert.equal(e.script, 'scripts/refund.sh');
    assert.equal(e.status, 'ok');
    assert.equal(e.exit_code, 0);
    assert.equal(e.request_id, run.request_id);
    assert.equal(e.client, null);
    assert.equal(typeof e.duration_ms, 'number');

    // approve the edit: now the new version is served
    assert.equal(lockCli(lib, 'approve', 'billing/refunds', '--lock-store', store).code, 0);
    await callOk(assert, c, 'reload_skills', {});
    const f2 = await callOk(assert, c, 'read_skill_file', { name: 'billing/refunds', path: 'references/policy.md' });
    assert.equal(f2.content, 'policy v2 (unreviewed)\n');
    const run2 = await callOk(assert, c, 'run_skill_script', { name: 'billing/refunds', script: 'scripts/refund.sh', args: ['7'] });
    assert.equal(run2.stdout, 'refund v2 7\n');
    const l2 = await poll(() => {
      const t = fs.readFileSync(audit, 'utf8').trim().split('\n');
      return t.length === 2 ? t : null;
    });
    assert.notEqual(JSON.parse(l2[1]).manifest_digest, digest);
    await c.close();
  } finally {
    await srv.stop();
  }
});

test('lock gc removes from the store only what the lock no longer names, past the grace', T, () => {
  const lib = library();
  const store = path.join(tmp, `gcstore${n}`);
  assert.equal(lockCli(lib, 'approve', '--all', '--lock-store', store).code, 0);
  const v1 = /^billing\/refunds sha256:([0-9a-f]{64})/m.exec(fs.readFileSync(lib.lock, 'utf8'))[1];
  fs.writeFileSync(path.join(lib.refunds, 'references', 'policy.md'), 'policy v2\n');
  assert.equal(lockCli(lib, 'approve', 'billing/refunds', '--lock-store', store).code, 0);
  const v2 = /^billing\/refunds sha256:([0-9a-f]{64})/m.exec(fs.readFileSync(lib.lock, 'utf8'))[1];
  assert.notEqual(v1, v2);
  const sha = (t) => crypto.createHash('sha256').update(t).digest('hex');
  const blob = (t) => path.join(store, 'blobs', sha(t));
  assert.ok(fs.existsSync(blob('policy v1\n')) && fs.existsSync(blob('policy v2\n')));
  // a read-only tree of each version, as a server makes them, and a crashed build
  for (const [name, text] of [[v1, 'policy v1\n'], [v2, 'policy v2\n'], ['.tmp-0123456789abcdef-1-1', 'x']]) {
    const d = path.join(store, 'trees', name, 'references');
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, 'policy.md'), text, { mode: 0o444 });
    fs.chmodSync(d, 0o555);
    fs.chmodSync(path.dirname(d), 0o555);
  }
  // a link in trees/ to a folder outside the store: removed, never followed
  const outside = path.join(tmp, `gc-outside${n}`);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'keep.txt'), 'not the store\n');
  fs.chmodSync(outside, 0o700);
  const outsideMode = fs.statSync(outside).mode & 0o777;
  const link = path.join(store, 'trees', 'deadbeef');
  fs.chmodSync(path.join(store, 'trees'), 0o755);
  fs.symlinkSync(outside, link);
  const gc = (...a) => runCli(['lock', 'gc', '--lock', lib.lock, '--lock-store', store, ...a]);

  // the lock just changed: nothing goes, whatever the age of the items
  let r = gc();
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /within the grace of 3600 s.*Nothing removed/s);
  assert.ok(fs.existsSync(blob('policy v1\n')));

  // age everything by two hours
  const old = new Date(Date.now() - 2 * 3600 * 1000);
  const age = (p) => { for (const e of fs.readdirSync(p, { withFileTypes: true })) { if (e.isDirectory()) age(path.join(p, e.name)); fs.utimesSync(path.join(p, e.name), old, old); } };
  age(store);
  fs.lutimesSync(link, old, old);
  fs.utimesSync(lib.lock, old, old);

  r = gc('--dry-run');
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.includes(`would remove blobs/${sha('policy v1\n')}`), r.stdout);
  assert.ok(r.stdout.includes(`would remove manifests/${v1}`), r.stdout);
  assert.ok(r.stdout.includes(`would remove trees/${v1}`), r.stdout);
  assert.ok(r.stdout.includes('would remove trees/.tmp-0123456789abcdef-1-1'), r.stdout);
  assert.ok(!r.stdout.includes(v2), r.stdout);
  assert.ok(fs.existsSync(blob('policy v1\n')), 'a dry run removes nothing');

  // a fresh unreferenced blob (an approve in progress) stays
  fs.writeFileSync(path.join(store, 'blobs', sha('in flight\n')), 'in flight\n');
  r = gc();
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^removed 1 blob\(s\) \(10 bytes\), 1 manifest\(s\), 3 tree\(s\); kept \d+ blob\(s\), 2 manifest\(s\), 1 tree\(s\) the lock names, and 1 item\(s\) younger than 3600 s$/m);
  assert.ok(!fs.existsSync(link) && fs.readFileSync(path.join(outside, 'keep.txt'), 'utf8') === 'not the store\n',
    'the link is gone and what it pointed to is untouched');
  assert.equal(fs.statSync(outside).mode & 0o777, outsideMode, 'its mode too');
  assert.ok(!fs.existsSync(blob('policy v1\n')));
  assert.ok(!fs.existsSync(path.join(store, 'manifests', v1)));
  assert.ok(!fs.existsSync(path.join(store, 'trees', v1)));
  assert.deepEqual(fs.readdirSync(path.join(store, 'trees')), [v2]);
  assert.ok(fs.existsSync(blob('policy v2\n')) && fs.existsSync(path.join(store, 'manifests', v2)));
  assert.ok(fs.existsSync(blob('in flight\n')));
  // what the lock names still verifies: every kept blob has its digest as name
  for (const b of fs.readdirSync(path.join(store, 'blobs')))
    assert.equal(sha(fs.readFileSync(path.join(store, 'blobs', b))), b);
  // and the kept manifest still finds each of its blobs
  const man = fs.readFileSync(path.join(store, 'manifests', v2), 'utf8');
  for (const m of man.matchAll(/sha256:([0-9a-f]{64})/g))
    assert.ok(fs.existsSync(path.join(store, 'blobs', m[1])), `blob ${m[1]} of the approved version`);

  // bad invocations change nothing
  const before = fs.readdirSync(path.join(store, 'blobs')).sort();
  r = runCli(['lock', 'gc', '--lock', lib.lock]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--lock-store DIR is required/);
  r = runCli(['lock', 'gc', '--lock', path.join(tmp, 'no-such.lock'), '--lock-store', store]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /without the lock, everything in the store stays/);
  r = gc('--grace', 'soon');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--grace needs a number of seconds/);
  // a lock that does not parse names nothing it can be trusted on: keep all
  const bad = path.join(tmp, `gc-bad${n}.lock`);
  fs.writeFileSync(bad, 'billing/refunds sha256:nothex approved-by=x approved-at=2026-01-01T00:00:00Z\n');
  fs.utimesSync(bad, old, old);
  r = runCli(['lock', 'gc', '--lock', bad, '--lock-store', store, '--grace', '0']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, new RegExp(`${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1:`));
  assert.deepEqual(fs.readdirSync(path.join(store, 'blobs')).sort(), before);
});

test('pin: the first version seen is recorded; later changes are quarantined', T, async () => {
  const lib = library();
  assert.ok(!fs.existsSync(lib.lock));
  const srv = await startServer({ skillsDirs: [lib.root], args: ['--lock', lib.lock, '--lock-mode', 'pin', '--workers', '2'] });
  try {
    // the workers pin as they build their first snapshot, after "listening"
    const text = await poll(() => {
      const t = fs.existsSync(lib.lock) ? fs.readFileSync(lib.lock, 'utf8') : '';
      return /^notes /m.test(t) && /^billing\/refunds /m.test(t) ? t : null;
    }, 10_000);
    assert.ok(text, 'the lock file was written');
    assert.equal(text.match(/^notes /gm).length, 1, 'each skill pinned once, whichever worker wrote first');
    assert.equal(text.match(/^billing\/refunds /gm).length, 1);
    assert.match(text, /^notes sha256:[0-9a-f]{64} execution=none approved-by=first-use approved-at=\S+Z$/m);
    const c = await connect(srv.url);
    await callOk(assert, c, 'load_skill', { name: 'notes' });
    fs.writeFileSync(path.join(lib.notes, 'SKILL.md'),
      '---\nname: notes\ndescription: Take notes.\n---\n# Notes\nChanged.\n');
    // every worker must agree: ask until both have answered quarantined several times
    process.kill(srv.proc.pid, 'SIGHUP');
    let seen = 0;
    await poll(async () => {
      const c2 = await connect(srv.url);
      const r = await call(c2, 'load_skill', { name: 'notes' });
      await c2.close();
      seen = r.isError && /changed since approved by first-use/.test(r.content[0].text) ? seen + 1 : 0;
      return seen >= 6;
    }, 15_000);
    assert.ok(seen >= 6, 'all workers quarantine the changed skill');
    await c.close();
  } finally {
    await srv.stop();
  }
});

test('words from the bottom of the lock chain: a file gone out of the skill, a store that cannot be made', T, async () => {
  const lib = library();
  const a = lockCli(lib, 'approve', 'billing/refunds', '--by', 'alice');
  assert.equal(a.code, 0, a.stderr);
  // the store's blobs folder would have to be made under a plain file
  const plain = path.join(tmp, `plain${n}`);
  fs.writeFileSync(plain, 'a file, not a folder\n');
  const store = path.join(plain, 'store');
  const s = lockCli(lib, 'approve', 'notes', '--by', 'alice', '--lock-store', store);
  assert.notEqual(s.code, 0);
  assert.equal(s.stderr, `skill-mcp lock: notes: not stored in ${store}: the store's blobs folder cannot be created\n`);

  const srv = await startServer({ skillsDirs: [lib.root], args: ['--lock', lib.lock] });
  try {
    await indexerSettled(srv);    // its rescan would judge the edit below early
    // a listed file becomes a link out of the skill: hashing it now is refused by the jail
    const outside = path.join(tmp, `outside-policy${n}.md`);
    fs.writeFileSync(outside, 'not the policy\n');
    const policy = path.join(lib.refunds, 'references', 'policy.md');
    fs.rmSync(policy);
    fs.symlinkSync(outside, policy);
    const c = await connect(srv.url);
    assert.equal(await callErr(assert, c, 'run_skill_script', { name: 'billing/refunds', script: 'scripts/refund.sh', args: ['1'] }),
      "Skill 'billing/refunds' cannot be run: a file of the skill cannot be read now. Nothing ran.");
    await c.close();
  } finally {
    await srv.stop();
  }
});

test('--audit-log without --lock: every run is recorded, nothing is quarantined', { timeout: TEST_TIMEOUT }, async () => {
  const lib = library();
  const audit = path.join(tmp, 'plain-audit.log');
  const srv = await startServer({ skillsDirs: [lib.root], args: ['--audit-log', audit] });
  try {
    const c = await connect(srv.url);
    const list = await callOk(assert, c, 'list_skills', {});
    assert.ok(list.skills.every((s) => s.quarantined === undefined));
    const run = await callOk(assert, c, 'run_skill_script', { name: 'refunds', script: 'scripts/refund.sh', args: ['1'] });
    assert.equal(run.status, 'ok');
    const bad = await call(c, 'run_skill_script', { name: 'refunds', script: 'scripts/refund.sh', args: ['1'], timeout: 0.5, stdin: 'x' });
    assert.notEqual(bad, undefined);
    const lines = await poll(() => {
      const t = fs.existsSync(audit) ? fs.readFileSync(audit, 'utf8').trim().split('\n') : [];
      return t.length >= 2 ? t : null;
    });
    const e = JSON.parse(lines[0]);
    assert.equal(e.skill, 'billing/refunds');
    assert.match(e.manifest_digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(e.approved_at, null);
    await c.close();
  } finally {
    await srv.stop();
  }
});
