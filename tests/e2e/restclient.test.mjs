// The bundled rest-client skill through the server, for a small-window
// client (--context-tokens 30000): a 500-order list (~240 KB) is counted,
// then read as a few fields of a few rows, each result whole (not shaped);
// over SKILL_OUTPUT_BUDGET_BYTES (here bounded by --max-output-bytes) the
// script warns on stderr with a --limit that fits, and that --limit comes
// through the server's output cap intact. Bad flags fail with exit 2.
//
// The API is tests/fakeapi/fakeapi.py on 127.0.0.1, started here and
// stopped by PID.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { startServer, connect, startFakeapi, REPO } from './lib/harness.mjs';

const opts = { timeout: 30_000 };
// SKILL_OUTPUT_BUDGET_BYTES is the smaller of one result's budget (~30 KB at
// 30K tokens) and --max-output-bytes: a small cap makes the warning fire on
// a short list, and a --limit that fits the variable fits the result too.
const BUDGET = 4096;
let fakeapi;
let base;
let server;
let client;

before(async () => {
  fakeapi = await startFakeapi();
  base = fakeapi.url;
  server = await startServer({
    args: ['--context-tokens', '30000', '--max-output-bytes', String(BUDGET)],
    setup: (skills) => {
      fs.rmSync(skills, { recursive: true, force: true });
      fs.mkdirSync(skills);
      fs.cpSync(path.join(REPO, 'skills', 'rest-client'), path.join(skills, 'rest-client'), { recursive: true });
    },
  });
  client = await connect(server.url);
});

after(async () => {
  await client?.close();
  await server?.stop();
  if (fakeapi) {
    fakeapi.proc.removeAllListeners('exit');
    fakeapi.proc.kill('SIGTERM');
  }
});

async function rest(args) {
  const r = await client.callTool({
    name: 'run_skill_script',
    arguments: { name: 'rest-client', script: 'scripts/rest.py', args, env: { REST_BASE_URL: base } },
  });
  const sc = r.structuredContent;
  assert.ok(sc && typeof sc === 'object', `no structuredContent: ${JSON.stringify(r).slice(0, 400)}`);
  return sc;
}

test('load_skill teaches the order for a small window: count, then fields with a small limit', opts, async () => {
  const r = await client.callTool({ name: 'load_skill', arguments: { name: 'rest-client' } });
  const text = r.structuredContent?.content ?? '';
  const count = text.indexOf('**Count first.**');
  const fields = text.indexOf('--fields", "id,status,customer.name", "--limit", "10"');
  assert.ok(count > 0 && fields > count, 'SKILL.md shows --count-only first, then --fields with --limit');
});

test('--count-only: {"total": 500} and nothing else, whole', opts, async () => {
  const sc = await rest(['GET', '/orders', '--count-only']);
  assert.equal(sc.status, 'ok', sc.stderr);
  assert.equal(sc.exit_code, 0);
  assert.equal(sc.stdout, '{"total": 500}\n');
  assert.equal(sc.stderr, '');
  assert.equal(sc._truncated, undefined);
});

test('--fields with --limit 10: ten rows of three members, envelope kept, result not shaped', opts, async () => {
  const sc = await rest(['GET', '/orders', '--fields', 'id,status,customer.name', '--limit', '10']);
  assert.equal(sc.status, 'ok', sc.stderr);
  assert.equal(sc.stderr, '');
  assert.equal(sc._truncated, undefined, 'a small result is passed whole');
  const out = JSON.parse(sc.stdout);
  assert.equal(out.data.total, 500);
  assert.equal(out.data.data.length, 10);
  assert.deepEqual(out.data.data[0], { id: 1, status: 'shipped', customer: { name: 'Customer 001' } });
  for (const row of out.data.data) assert.deepEqual(Object.keys(row), ['id', 'status', 'customer']);
  assert.deepEqual(out._limited, { kept: 10, total: 500 });
});

test('over SKILL_OUTPUT_BUDGET_BYTES: a warning with a --limit that fits; that --limit comes through whole', opts, async () => {
  const big = await rest(['GET', '/orders', '--limit', '100']);
  assert.equal(big.status, 'ok', big.stderr);
  assert.match(big.stderr, new RegExp(`over SKILL_OUTPUT_BUDGET_BYTES=${BUDGET}; `));
  assert.match(big.stderr, /--count-only/);
  assert.match(big.stderr, /--fields with only the keys you need \(rows have: id, number, status,/);
  const m = /--limit (\d+) \(fits\)/.exec(big.stderr);
  assert.ok(m, `the warning names a --limit: ${big.stderr}`);
  assert.equal(big.truncated, true, 'the server kept only its budget of stdout');

  const fit = await rest(['GET', '/orders', '--limit', m[1]]);
  assert.equal(fit.status, 'ok', fit.stderr);
  assert.equal(fit.stderr, '');
  assert.equal(fit.truncated, false);
  assert.equal(fit._truncated, undefined, 'the result is not shaped either');
  assert.ok(fit.stdout_bytes <= BUDGET);
  assert.equal(JSON.parse(fit.stdout).data.data.length, Number(m[1]));
});

test('bad flags: exit 2, a clear message, nothing on stdout', opts, async () => {
  for (const [args, want] of [
    [['--limit', '-1'], /--limit must be a whole number of rows >= 1, got '-1'/],
    [['--limit', 'x'], /--limit must be a whole number/],
    [['--fields', ''], /--fields needs field names separated by commas/],
    [['--count-only', '--fields', 'id'], /--count-only prints only the total and cannot be combined with --fields/],
  ]) {
    const sc = await rest(['GET', '/orders', ...args]);
    assert.equal(sc.status, 'failed', `${args.join(' ')}: ${sc.stderr}`);
    assert.equal(sc.exit_code, 2);
    assert.match(sc.stderr, want);
    assert.equal(sc.stdout, '');
  }
});

test('odd API answers: stdout stays one JSON value, no traceback, a note says what happened', opts, async () => {
  // NaN and 1e400 would print back as no JSON; they are kept as strings
  let sc = await rest(['GET', '/odd', '--query', 'kind=nan']);
  assert.equal(sc.status, 'ok', sc.stderr);
  assert.equal(sc.stdout_format, 'json');
  let out = JSON.parse(sc.stdout);
  assert.deepEqual(out.data.data, [{ id: 1, v: 'NaN' }, { id: 2, v: '1e400' }]);
  assert.match(out.notes.join(' '), /numbers JSON cannot hold are kept as strings: 1e400, NaN/);
  sc = await rest(['GET', '/odd', '--query', 'kind=nan', '--fields', 'v', '--limit', '1']);
  assert.equal(sc.stdout_format, 'json');
  assert.deepEqual(JSON.parse(sc.stdout).data.data, [{ v: 'NaN' }]);
  // nesting deeper than the parser or the filters can follow: shown as text, exit 0 / 4
  for (const kind of ['deep', 'deep900']) {
    sc = await rest(['GET', '/odd', '--query', `kind=${kind}`]);
    assert.equal(sc.exit_code, 0, sc.stderr);
    assert.doesNotMatch(sc.stderr, /Traceback/);
    // the body is shown as text (its first 4,000 characters): over this server's
    // --max-output-bytes, so the stream is cut; the envelope comes first
    assert.match(sc.stdout, /^\{"status": 200, "ok": true, "method": "GET", .*"text": "/);
    sc = await rest(['GET', '/odd', '--query', `kind=${kind}`, '--limit', '2']);
    assert.equal(sc.exit_code, 4, sc.stderr);
    assert.doesNotMatch(sc.stderr, /Traceback/);
    assert.match(JSON.parse(sc.stdout).error, /the answer is not JSON/);
  }
  // a byte-order mark before the JSON is skipped
  sc = await rest(['GET', '/odd', '--query', 'kind=bom', '--count-only']);
  assert.equal(sc.exit_code, 0, sc.stderr);
  assert.equal(sc.stdout, '{"total": 1}\n');
  // a 200 answer that is not JSON, over the budget: the warning does not call it an HTTP error
  sc = await rest(['GET', '/odd', '--query', 'kind=html']);
  assert.equal(sc.exit_code, 0);
  assert.match(sc.stderr, /no rows to narrow \(the answer is not JSON\)/);
});
