// Redaction end to end, through the official SDK client (docs/security.md,
// "Redaction"): every built-in kind of secret printed by a script is gone
// from stdout and stderr; the env values the caller and a pre hook gave the
// script are gone; a hook's own output (its note) is redacted; JSON stdout
// still parses; read_skill_file of a key file; the counts in the result's
// _meta and in /metrics; --redact FILE adds patterns, a bad one stops the
// start with FILE:LINE, SIGHUP reloads it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  startServer, connect, callOk as callOkA, raw, runCli, poll, postModern, TEST_TIMEOUT,
} from './lib/harness.mjs';

const callOk = (c, n, a) => callOkA(assert, c, n, a);
const opts = { timeout: TEST_TIMEOUT };

const GHP = 'ghp_0123456789abcdefghijABCDEFGHIJ012345';
const AKIA = 'AKIAIOSFODNN7EXAMPLE';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const SLACK = 'xoxb-1234567890-abcdefABCDEF';
const BEARER = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln';
const KEY_BODY = 'MIIEowIBAAKCAQEAx7Rq';
const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${KEY_BODY}\nZm9vYmFy\n-----END RSA PRIVATE KEY-----`;
const CALLER_TOKEN = 'caller-s3cret-value-42';
const HOOK_TOKEN = 'hook-added-t0ken-9876';
const CUSTOM = 'TICKET-4711';

const ALL_SECRETS = [GHP, AKIA, AWS_SECRET, SLACK, BEARER, KEY_BODY, 'hunter2-horse',
  'gho_', 'xoxp-', CALLER_TOKEN, HOOK_TOKEN];

function writeSkill(skills) {
  const d = path.join(skills, 'leaky');
  fs.mkdirSync(path.join(d, 'scripts'), { recursive: true });
  fs.mkdirSync(path.join(d, 'hooks'), { recursive: true });
  fs.mkdirSync(path.join(d, 'references'), { recursive: true });
  fs.writeFileSync(path.join(d, 'SKILL.md'),
    '---\nname: leaky\ndescription: Scripts that print credentials, for the redaction tests.\n---\n# leaky\n');
  // each kind once on stdout, and again on stderr
  const lines = [
    `Authorization: Bearer ${BEARER}`,
    `aws key ${AKIA}`,
    `aws_secret_access_key = ${AWS_SECRET}`,
    PEM,
    `token ${GHP}`,
    'other gho_abcdefghij0123456789ABCDEFGHIJabcdef',
    `slack ${SLACK} and xoxp-98765432101`,
    'db password=hunter2-horse',
    `ticket ${CUSTOM}`,
  ].join('\n');
  fs.writeFileSync(path.join(d, 'scripts', 'leak.sh'),
    `cat <<'EOF'\n${lines}\nEOF\ncat >&2 <<'EOF'\n${lines}\nEOF\n`);
  // a secret printed in two writes is whole again in the captured output
  fs.writeFileSync(path.join(d, 'scripts', 'split.sh'),
    `printf 'x ${GHP.slice(0, 10)}'\nsleep 0.05\nprintf '${GHP.slice(10)} y\\n'\n`);
  fs.writeFileSync(path.join(d, 'scripts', 'env.sh'),
    'echo "caller=$API_TOKEN hook=$HOOK_TOKEN short=$SHORT"\n');
  fs.writeFileSync(path.join(d, 'scripts', 'json.sh'),
    `cat <<'EOF'\n${JSON.stringify({
      user: 'ada', password: 'hunter2-horse',
      headers: { Authorization: `Bearer ${BEARER}` },
      key: PEM, [GHP]: 1, [`${GHP}x`]: 2, n: 12345,
    }, null, 2)}\nEOF\n`);
  fs.writeFileSync(path.join(d, 'scripts', 'clean.sh'), 'echo nothing secret here\n');
  // the pre hook adds a token to the script's environment, and a note that
  // carries a GitHub token (hook output reaches the model too)
  fs.writeFileSync(path.join(d, 'hooks', 'pre.sh'),
    `case "$(cat)" in\n` +
    `*env.sh*) printf '%s' '{"env": {"HOOK_TOKEN": "${HOOK_TOKEN}"}, "note": "hook saw ${GHP}"}';;\n` +
    `*deny.sh*) printf '%s' '{"reason": "the token ${GHP} is revoked"}'; exit 1;;\n` +
    'esac\n');
  fs.writeFileSync(path.join(d, 'scripts', 'deny.sh'), 'echo never runs\n');
  fs.writeFileSync(path.join(d, 'references', 'deploy.pem'), `${PEM}\n`);
  fs.writeFileSync(path.join(d, 'references', 'notes.md'), `# Notes\n\nslack: ${SLACK}\n`);
}

let srv, client, redactFile;
before(async () => {
  redactFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'redact-e2e-')), 'redact.txt');
  fs.writeFileSync(redactFile, '# site patterns\nticket\tTICKET-[0-9]{4}\n');
  srv = await startServer({ setup: writeSkill, args: ['--redact', redactFile] });
  client = await connect(srv.url);
});
after(async () => {
  await client?.close();
  await srv?.stop();
  fs.rmSync(path.dirname(redactFile), { recursive: true, force: true });
});

function noSecret(text, where) {
  for (const s of ALL_SECRETS) assert.ok(!text.includes(s), `${where} still holds ${s}:\n${text}`);
}

test('every built-in kind is redacted from stdout and stderr, with counts in _meta', opts, async () => {
  const r = await client.callTool({ name: 'run_skill_script', arguments: { name: 'leaky', script: 'scripts/leak.sh' } });
  assert.notEqual(r.isError, true, r.content?.[0]?.text);
  const s = r.structuredContent;
  assert.equal(s.status, 'ok');
  noSecret(s.stdout, 'stdout');
  noSecret(s.stderr, 'stderr');
  noSecret(r.content[0].text, 'the text block');
  for (const name of ['bearer-token', 'aws-access-key', 'aws-secret-key', 'private-key',
    'github-token', 'slack-token', 'password', 'ticket']) {
    assert.ok(s.stdout.includes(`[REDACTED:${name}]`), `stdout lacks [REDACTED:${name}]:\n${s.stdout}`);
    assert.ok(s.stderr.includes(`[REDACTED:${name}]`), `stderr lacks [REDACTED:${name}]`);
  }
  // value only: the key names stay
  assert.match(s.stdout, /^Authorization: Bearer \[REDACTED:bearer-token\]$/m);
  assert.match(s.stdout, /^db password=\[REDACTED:password\]$/m);
  assert.match(s.stdout, /^aws_secret_access_key = \[REDACTED:aws-secret-key\]$/m);
  const counts = r._meta?.['skill-mcp/redacted'];
  assert.deepEqual(counts, {
    'bearer-token': 2, 'aws-access-key': 2, 'aws-secret-key': 2, 'private-key': 2,
    'github-token': 4, 'slack-token': 4, password: 2, ticket: 2,
  }, JSON.stringify(r._meta));
});

test('a secret printed in two writes is caught whole', opts, async () => {
  const s = await callOk(client, 'run_skill_script', { name: 'leaky', script: 'scripts/split.sh' });
  assert.equal(s.stdout, 'x [REDACTED:github-token] y\n');
});

test('env values from the caller and from a pre hook are redacted; short ones are not', opts, async () => {
  const r = await client.callTool({
    name: 'run_skill_script',
    arguments: { name: 'leaky', script: 'scripts/env.sh', env: { API_TOKEN: CALLER_TOKEN, SHORT: 'abc' } },
  });
  const s = r.structuredContent;
  assert.equal(s.status, 'ok', JSON.stringify(s));
  assert.equal(s.stdout, 'caller=[REDACTED:env:API_TOKEN] hook=[REDACTED:env:HOOK_TOKEN] short=abc\n');
  // the hook's note went through redaction too
  assert.equal(s.note, 'hook saw [REDACTED:github-token]');
  assert.deepEqual(r._meta?.['skill-mcp/redacted'],
    { 'env:API_TOKEN': 1, 'env:HOOK_TOKEN': 1, 'github-token': 1 });
});

test('a hook\'s denial reason is redacted in hint', opts, async () => {
  const r = await client.callTool({ name: 'run_skill_script', arguments: { name: 'leaky', script: 'scripts/deny.sh' } });
  const s = r.structuredContent ?? JSON.parse(r.content[0].text);
  assert.equal(s.status, 'denied', JSON.stringify(r));
  assert.match(s.hint, /: the token \[REDACTED:github-token\] is revoked$/);
  noSecret(JSON.stringify(r), 'the denied result');
  assert.deepEqual(r._meta?.['skill-mcp/redacted'], { 'github-token': 1 });
});

test('JSON stdout still parses after redaction and stays json', opts, async () => {
  const s = await callOk(client, 'run_skill_script', { name: 'leaky', script: 'scripts/json.sh' });
  assert.equal(s.stdout_format, 'json');
  const j = JSON.parse(s.stdout);
  assert.equal(j.user, 'ada');
  assert.equal(j.n, 12345);
  assert.equal(j.password, '[REDACTED:password]');
  assert.equal(j.headers.Authorization, 'Bearer [REDACTED:bearer-token]');
  assert.equal(j.key, '[REDACTED:private-key]');
  // two keys stay two
  assert.equal(j['[REDACTED:github-token#1]'], 1);
  assert.equal(j['[REDACTED:github-token#2]'], 2);
  noSecret(s.stdout, 'JSON stdout');
});

test('read_skill_file of a key file: redacted, counted', opts, async () => {
  const r = await client.callTool({ name: 'read_skill_file', arguments: { name: 'leaky', path: 'references/deploy.pem' } });
  assert.notEqual(r.isError, true, r.content?.[0]?.text);
  assert.equal(r.structuredContent.content, '[REDACTED:private-key]\n');
  assert.deepEqual(r._meta?.['skill-mcp/redacted'], { 'private-key': 1 });
  const md = await client.callTool({ name: 'read_skill_file', arguments: { name: 'leaky', path: 'references/notes.md' } });
  assert.equal(md.structuredContent.content, '# Notes\n\nslack: [REDACTED:slack-token]\n');
});

test('nothing to redact: no _meta count', opts, async () => {
  const r = await client.callTool({ name: 'run_skill_script', arguments: { name: 'leaky', script: 'scripts/clean.sh' } });
  assert.equal(r.structuredContent.stdout, 'nothing secret here\n');
  assert.equal(r._meta?.['skill-mcp/redacted'], undefined);
});

test('/metrics counts redactions by pattern', opts, async () => {
  await callOk(client, 'run_skill_script', { name: 'leaky', script: 'scripts/split.sh' });
  const m = await raw(`http://127.0.0.1:${srv.port}/metrics`, { method: 'GET' });
  assert.equal(m.status, 200);
  const count = (p) => Number((new RegExp(`^skill_mcp_redactions_total\\{pattern="${p}"\\} (\\d+)$`, 'm').exec(m.text) ?? [])[1]);
  assert.ok(count('github-token') >= 1, m.text);
  assert.ok(count('private-key') >= 1);
  assert.ok(count('ticket') >= 1);
  assert.ok(count('env') >= 1, 'env values count as pattern="env"');
  assert.ok(!/API_TOKEN/.test(m.text), 'env names are not labels');
});

test('modern era: the count joins the _meta that carries serverInfo', opts, async () => {
  const r = await postModern(srv.url, 'tools/call',
    { name: 'read_skill_file', arguments: { name: 'leaky', path: 'references/deploy.pem' } });
  assert.equal(r.status, 200, r.text);
  const meta = r.json.result._meta;
  assert.deepEqual(meta['skill-mcp/redacted'], { 'private-key': 1 });
  assert.equal(meta['io.modelcontextprotocol/serverInfo'].name, 'skill-mcp');
});

test('SIGHUP reloads the --redact file; a bad version keeps the loaded one', opts, async () => {
  fs.writeFileSync(redactFile, 'ticket\tTICKET-[0-9]{4}\nsecret-word\tnothing secret\n');
  process.kill(srv.proc.pid, 'SIGHUP');
  assert.ok(await poll(async () => {
    const s = await callOk(client, 'run_skill_script', { name: 'leaky', script: 'scripts/clean.sh' });
    return s.stdout === '[REDACTED:secret-word] here\n';
  }, 10_000), `the new patterns never applied; log:\n${srv.log.slice(-1500)}`);
  fs.writeFileSync(redactFile, 'ticket\t(TICKET\n');
  process.kill(srv.proc.pid, 'SIGHUP');
  await poll(() => srv.log.includes('redaction patterns not reloaded'), 10_000);
  assert.match(srv.log, /redact\.txt:1: pattern 'ticket' does not compile at offset 7: missing closing parenthesis/);
  const s = await callOk(client, 'run_skill_script', { name: 'leaky', script: 'scripts/clean.sh' });
  assert.equal(s.stdout, '[REDACTED:secret-word] here\n');
});

test('a bad --redact file stops the start, naming file:line and the PCRE2 message', opts, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redact-bad-'));
  try {
    const f = path.join(dir, 'bad.txt');
    fs.writeFileSync(f, '# ok\ngood\tabc\nbad\t[z-a]\n');
    const r = runCli(['--skills', dir, '--port', '0', '--redact', f]);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes(`--redact ${f}:3: pattern 'bad' does not compile at offset 3: range out of order in character class`), r.stderr);
    fs.writeFileSync(f, 'nameonly\n');
    const r2 = runCli(['--skills', dir, '--port', '0', '--redact', f]);
    assert.equal(r2.code, 2);
    assert.match(r2.stderr, /bad\.txt:1: 'nameonly' has no pattern/);
    const r3 = runCli(['--skills', dir, '--port', '0', '--redact', path.join(dir, 'missing')]);
    assert.equal(r3.code, 2);
    assert.match(r3.stderr, /missing: cannot read the redaction file/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('--no-redact-builtins leaves the built-ins out, env values still go', opts, async () => {
  const s2 = await startServer({ setup: writeSkill, args: ['--no-redact-builtins'] });
  try {
    const c = await connect(s2.url);
    const s = await callOk(c, 'run_skill_script', { name: 'leaky', script: 'scripts/split.sh' });
    assert.equal(s.stdout, `x ${GHP} y\n`);
    const e = await callOk(c, 'run_skill_script',
      { name: 'leaky', script: 'scripts/env.sh', env: { API_TOKEN: CALLER_TOKEN } });
    assert.equal(e.stdout, 'caller=[REDACTED:env:API_TOKEN] hook=[REDACTED:env:HOOK_TOKEN] short=\n');
    await c.close();
  } finally {
    await s2.stop();
  }
});
