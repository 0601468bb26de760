// Redaction on the paths besides a run's result (docs/security.md,
// "Redaction"): stderr streamed live as notifications/progress and
// notifications/message, whole lines only, a secret split over writes or a
// key block over lines never going out by halves, streamed hits counted in
// the result's _meta; resources/read of text and binary files; a
// read_skill_file cut that falls inside a secret; secrets a script writes
// JSON-escaped; a value longer than 512 bytes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  startServer, connect, callOk as callOkA, post, modernMeta, MODERN, sseMessages, TEST_TIMEOUT,
} from './lib/harness.mjs';

const callOk = (c, n, a) => callOkA(assert, c, n, a);
const opts = { timeout: TEST_TIMEOUT };

const GHP = 'ghp_0123456789abcdefghijABCDEFGHIJ012345';
const AKIA = 'AKIAIOSFODNN7EXAMPLE';
const KEY_BODY = 'MIIEowIBAAKCAQEAx7Rq';
const CALLER_TOKEN = 'caller-s3cret-value-42';
const CUSTOM = 'TICKET-4711';

function writeSkill(skills) {
  const d = path.join(skills, 'leaky2');
  fs.mkdirSync(path.join(d, 'scripts'), { recursive: true });
  fs.mkdirSync(path.join(d, 'references'), { recursive: true });
  fs.writeFileSync(path.join(d, 'SKILL.md'),
    '---\nname: leaky2\ndescription: Files and streams with credentials, for the redaction tests.\n---\n# leaky2\n');
  // stderr in pieces: a token split over two writes, a key block a line at
  // a time, the caller's env value, a site pattern
  fs.writeFileSync(path.join(d, 'scripts', 'stream.sh'), [
    'echo "step one" >&2',
    `printf 'token ${GHP.slice(0, 12)}' >&2`, 'sleep 0.2',
    `printf '${GHP.slice(12)} done\\n' >&2`, 'sleep 0.2',
    "echo '-----BEGIN RSA PRIVATE KEY-----' >&2", 'sleep 0.2',
    `echo '${KEY_BODY}' >&2`, 'sleep 0.2',
    "echo 'Zm9vYmFy' >&2", 'sleep 0.2',
    "echo '-----END RSA PRIVATE KEY-----' >&2",
    'echo "caller $API_TOKEN" >&2',
    `echo "ticket ${CUSTOM}" >&2`,
    'echo "step two" >&2',
    'echo finished',
  ].join('\n') + '\n');
  // JSON escapes a script's encoder may write
  fs.writeFileSync(path.join(d, 'scripts', 'escaped.sh'),
    `printf '%s\\n' '{"token":"ghp_\\u0041${GHP.slice(5)}","key":"-----BEGIN PRIVATE KEY-----\\n${KEY_BODY}\\u002b\\nZm9v\\/YmFy\\n-----END PRIVATE KEY-----\\n","id":"\\u0041KIAIOSFODNN7EXAMPLE"}'\n`);
  fs.writeFileSync(path.join(d, 'scripts', 'longpw.sh'),
    `printf 'password=%s\\n' "$(head -c 700 /dev/zero | tr '\\0' 'q')"\n`);
  fs.writeFileSync(path.join(d, 'references', 'creds.md'),
    `# Creds\n\naws ${AKIA}\ngithub ${GHP}\nticket ${CUSTOM}\n`);
  // binary: NUL bytes around a key id
  fs.writeFileSync(path.join(d, 'references', 'blob.bin'),
    Buffer.concat([Buffer.from([0, 1, 2, 0xff, 0]), Buffer.from(` ${AKIA} `), Buffer.from([0, 0xfe])]));
  // a file whose read_skill_file cut falls inside a token
  fs.writeFileSync(path.join(d, 'references', 'cut.txt'), `${'a'.repeat(90)} ${GHP} tail\n`);
}

let srv, client, dir;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redact-surf-'));
  const f = path.join(dir, 'redact.txt');
  fs.writeFileSync(f, 'ticket\tTICKET-[0-9]{4}\n');
  srv = await startServer({ setup: writeSkill, args: ['--redact', f] });
  client = await connect(srv.url);
});
after(async () => {
  await client?.close();
  await srv?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const SECRET_BITS = [GHP.slice(0, 12), GHP.slice(12), KEY_BODY, 'Zm9vYmFy', CALLER_TOKEN, CUSTOM];
function noSecretBits(text, where) {
  for (const s of SECRET_BITS) assert.ok(!text.includes(s), `${where} holds ${s}:\n${text}`);
}

const streamArgs = { name: 'leaky2', script: 'scripts/stream.sh', env: { API_TOKEN: CALLER_TOKEN } };
const EXPECTED_LINES = [
  'step one', 'token [REDACTED:github-token] done', '[REDACTED:private-key]',
  'caller [REDACTED:env:API_TOKEN]', 'ticket [REDACTED:ticket]', 'step two',
];

test('progress notifications carry redacted whole lines; streamed hits are counted', opts, async () => {
  const r = await post(srv.url, {
    jsonrpc: '2.0', id: 51, method: 'tools/call',
    params: { name: 'run_skill_script', arguments: streamArgs, _meta: { progressToken: 'r-1' } },
  });
  assert.equal(r.status, 200);
  assert.match(r.headers['content-type'], /^text\/event-stream/);
  const ev = sseMessages(r.text);
  const msgs = ev.filter((e) => e.method === 'notifications/progress').map((e) => e.params.message);
  noSecretBits(JSON.stringify(msgs), 'the progress messages');
  assert.deepEqual(msgs, EXPECTED_LINES);
  const res = ev[ev.length - 1].result;
  assert.equal(res.structuredContent.status, 'ok');
  noSecretBits(res.structuredContent.stderr, 'stderr');
  // each once streamed and once in the result's stderr
  assert.deepEqual(res._meta?.['skill-mcp/redacted'], {
    'github-token': 2, 'private-key': 2, 'env:API_TOKEN': 2, ticket: 2,
  }, JSON.stringify(res._meta));
});

test('2026-07-28 log notifications carry the same redacted lines', opts, async () => {
  const params = { name: 'run_skill_script', arguments: streamArgs,
    _meta: modernMeta({ 'io.modelcontextprotocol/logLevel': 'info' }) };
  const r = await post(srv.url, { jsonrpc: '2.0', id: 52, method: 'tools/call', params }, {
    'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'run_skill_script',
  });
  const ev = sseMessages(r.text);
  const data = ev.filter((e) => e.method === 'notifications/message').map((e) => e.params.data);
  noSecretBits(JSON.stringify(data), 'the log notifications');
  assert.deepEqual(data, EXPECTED_LINES);
});

test('resources/read of a text file: built-in and --redact patterns, counted in _meta', opts, async () => {
  const r = await client.readResource({ uri: 'skill://leaky2/references/creds.md' });
  assert.equal(r.contents[0].text,
    '# Creds\n\naws [REDACTED:aws-access-key]\ngithub [REDACTED:github-token]\nticket [REDACTED:ticket]\n');
  assert.deepEqual(r._meta?.['skill-mcp/redacted'], { 'aws-access-key': 1, 'github-token': 1, ticket: 1 });
});

test('resources/read of a binary file: redacted before base64', opts, async () => {
  const r = await client.readResource({ uri: 'skill://leaky2/references/blob.bin' });
  const bytes = Buffer.from(r.contents[0].blob, 'base64');
  assert.ok(!bytes.includes(AKIA), 'the key id is in the blob');
  assert.ok(bytes.includes(' [REDACTED:aws-access-key] '));
  assert.deepEqual([...bytes.subarray(0, 5)], [0, 1, 2, 0xff, 0], 'the other bytes stay');
  assert.deepEqual(r._meta?.['skill-mcp/redacted'], { 'aws-access-key': 1 });
});

test('read_skill_file: a cut inside a token shows none of it', opts, async () => {
  const r = await client.callTool({ name: 'read_skill_file',
    arguments: { name: 'leaky2', path: 'references/cut.txt', max_bytes: 100 } });
  const s = r.structuredContent;
  assert.equal(s.truncated, true);
  assert.ok(!s.content.includes('ghp_'), s.content);
  assert.ok(s.content.startsWith(`${'a'.repeat(90)} [REDACTED`), s.content);
  assert.ok(Buffer.byteLength(s.content) <= 100);
  assert.deepEqual(r._meta?.['skill-mcp/redacted'], { 'github-token': 1 });
});

test('secrets a script writes JSON-escaped are found; the output stays JSON', opts, async () => {
  const s = await callOk(client, 'run_skill_script', { name: 'leaky2', script: 'scripts/escaped.sh' });
  assert.equal(s.stdout_format, 'json', s.stdout);
  const j = JSON.parse(s.stdout);
  assert.deepEqual(j, {
    token: '[REDACTED:github-token]', key: '[REDACTED:private-key]\n', id: '[REDACTED:aws-access-key]',
  });
});

test('a password value over 512 bytes is replaced whole', opts, async () => {
  const s = await callOk(client, 'run_skill_script', { name: 'leaky2', script: 'scripts/longpw.sh' });
  assert.equal(s.stdout, 'password=[REDACTED:password]\n');
});
