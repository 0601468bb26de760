// --access-log FILE and --access-log-format text|json: one line per HTTP
// request, written when its answer is delivered (a script call's when the
// script ends, an SSE reply's when the stream ends), with the client address,
// client id, JSON-RPC method, tool, skill argument, status and duration;
// reopened on SIGHUP; a drain ends the file with a "drained:" line.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import {
  BIN, E2E_DIR, FIXTURES, TEST_TIMEOUT, addToken, poll, post, raw, runCli, startServer,
} from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const RUNNER = path.join(E2E_DIR, 'fixtures', 'runner-skills');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-accesslog-'));
const tokens = path.join(dir, 'tokens');
const textLog = path.join(dir, 'access.log');
const jsonLog = path.join(dir, 'access.json');

let token;
let text;       // server with the text format and --auth-tokens
let json;       // server with the JSON format

const lines = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '').split('\n').filter(Boolean);

/** Text line -> {key: value}; quoted values are JSON strings. */
function parseText(line) {
  const out = { ts: line.slice(0, line.indexOf(' ')) };
  const re = / ([a-z_]+)=("(?:[^"\\]|\\.)*"|\S+)/g;
  for (let m; (m = re.exec(line));) out[m[1]] = m[2].startsWith('"') ? JSON.parse(m[2]) : m[2];
  return out;
}

/** Polls the log until a line satisfies pred (the writer thread is asynchronous). */
async function lineFor(file, pred, parse = parseText) {
  const hit = await poll(() => lines(file).map(parse).find(pred), 5000, 50);
  assert.ok(hit, `no matching line in ${path.basename(file)}:\n${lines(file).join('\n')}`);
  return hit;
}

const auth = () => ({ authorization: `Bearer ${token}` });
const callTool = (url, name, args, headers = {}, meta) => post(url, {
  jsonrpc: '2.0', id: 1, method: 'tools/call',
  params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
}, headers);

before(async () => {
  token = addToken(tokens, 'alice');
  text = await startServer({ skillsDirs: [RUNNER], args: ['--auth-tokens', tokens, '--access-log', textLog] });
  json = await startServer({
    skillsDirs: [RUNNER], args: ['--access-log', jsonLog, '--access-log-format', 'json'],
  });
});
after(async () => {
  await text?.stop();
  await json?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a plain call: address, client, rpc method, tool, skill, status, duration', opts, async () => {
  const r = await callTool(text.url, 'load_skill', { name: 'runner-basics' }, auth());
  assert.equal(r.status, 200);
  const l = await lineFor(textLog, (x) => x.tool === 'load_skill');
  assert.match(l.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(l.peer, '127.0.0.1');
  assert.equal(l.client, 'alice');
  assert.equal(l.method, 'POST');
  assert.equal(l.path, '/mcp');
  assert.equal(l.status, '200');
  assert.equal(l.rpc, 'tools/call');
  assert.equal(l.skill, 'runner-basics');
  assert.match(l.ms, /^\d+\.\d{3}$/);
});

test('an error: a body that is not JSON is logged with its 400', opts, async () => {
  const r = await post(text.url, '{"jsonrpc":', auth());
  assert.equal(r.status, 400);
  const l = await lineFor(textLog, (x) => x.status === '400');
  assert.equal(l.client, 'alice');
  assert.equal(l.rpc, '-');
});

test('an unauthenticated request: its 401, no client id', opts, async () => {
  const r = await callTool(text.url, 'list_skills', {});
  assert.equal(r.status, 401);
  const l = await lineFor(textLog, (x) => x.status === '401');
  assert.equal(l.client, '-');
  assert.equal(l.path, '/mcp');
});

test('a script call is logged once, when the script has ended', opts, async () => {
  const before0 = lines(textLog).length;
  const r = await callTool(text.url, 'run_skill_script',
    { name: 'runner-basics', script: 'scripts/sleep.py', args: ['0.6'] }, auth());
  assert.equal(r.status, 200);
  assert.match(r.text, /slept 0.6/);
  const l = await lineFor(textLog, (x) => x.tool === 'run_skill_script' && x.skill === 'runner-basics');
  assert.ok(Number(l.ms) >= 550, `duration covers the script: ${l.ms} ms`);
  assert.equal(l.status, '200');
  await new Promise((res) => setTimeout(res, 300));
  assert.equal(lines(textLog).length - before0, 1, 'one line per request');
});

test('an SSE reply is logged when its stream ends', opts, async () => {
  const runs = () => lines(textLog).map(parseText).filter((x) => x.tool === 'run_skill_script');
  const n = runs().length;
  const r = await callTool(text.url, 'run_skill_script',
    { name: 'runner-basics', script: 'scripts/sleep.py', args: ['0.4'] },
    { ...auth(), accept: 'application/json, text/event-stream' }, { progressToken: 'al-1' });
  assert.equal(r.status, 200);
  assert.match(String(r.headers['content-type']), /text\/event-stream/);
  assert.match(r.text, /slept 0.4/);
  await poll(() => runs().length > n, 5000, 50);
  const l = runs().at(-1);
  assert.equal(runs().length, n + 1, 'one line for the stream');
  assert.ok(Number(l.ms) >= 400, `duration covers the stream: ${l.ms} ms`);
  assert.equal(l.status, '200');
});

test('operations endpoints and HEAD are logged too; odd bytes are quoted', opts, async () => {
  await raw(`http://127.0.0.1:${text.port}/healthz`, { method: 'HEAD' });
  await lineFor(textLog, (x) => x.method === 'HEAD' && x.path === '/healthz' && x.status === '200');
  await callTool(text.url, 'load_skill', { name: 'a b"c\n' }, auth());
  const l = await lineFor(textLog, (x) => x.skill === 'a b"c\n');
  assert.ok(lines(textLog).every((s) => /^\d{4}-\d\d-\d\dT/.test(s)), 'no line split by a newline in a value');
  assert.equal(l.tool, 'load_skill');
});

test('JSON format: every line parses, with the same fields', opts, async () => {
  await callTool(json.url, 'load_skill', { name: 'runner-basics' });
  await callTool(json.url, 'run_skill_script', { name: 'runner-basics', script: 'scripts/hello.sh' });
  await post(json.url, 'nope');
  await lineFor(jsonLog, (x) => x.status === 400, JSON.parse);
  const all = lines(jsonLog).map((s) => JSON.parse(s));
  const load = all.find((x) => x.tool === 'load_skill');
  assert.equal(load.peer, '127.0.0.1');
  assert.equal(load.rpc, 'tools/call');
  assert.equal(load.skill, 'runner-basics');
  assert.equal(load.status, 200);
  assert.equal(load.http_method, 'POST');
  assert.equal(load.client_gone, false);
  assert.equal(typeof load.duration_ms, 'number');
  assert.equal(load.client, undefined, 'no client id without auth');
  const run = await lineFor(jsonLog, (x) => x.tool === 'run_skill_script', JSON.parse);
  assert.equal(run.status, 200);
});

test('SIGHUP reopens the file (logrotate: rename, then HUP)', opts, async () => {
  const rotated = `${textLog}.1`;
  await callTool(text.url, 'load_skill', { name: 'runner-basics' }, auth());
  await lineFor(textLog, (x) => x.tool === 'load_skill');
  fs.renameSync(textLog, rotated);
  process.kill(text.proc.pid, 'SIGHUP');
  assert.ok(await poll(() => text.log.includes('access log: reopened'), 10_000, 50), text.log.slice(-1500));
  await callTool(text.url, 'load_skill', { name: 'other-skill' }, auth());
  const l = await lineFor(textLog, (x) => x.skill === 'other-skill');
  assert.equal(l.status, '200');
  assert.ok(!lines(rotated).some((s) => s.includes('other-skill')), 'the old file gets no new line');
});

test('a drain ends the log with a "drained:" line', opts, async () => {
  const s = await startServer({ skillsDirs: [RUNNER], args: ['--access-log', path.join(dir, 'd.log')] });
  await callTool(s.url, 'list_skills', {});
  await s.stop();
  const all = lines(path.join(dir, 'd.log'));
  assert.match(all.at(-1), /^\S+ drained: \d+ requests answered during the drain, \d+ cut off, in [\d.]+ s$/);
  assert.equal(all.filter((x) => x.includes('rpc=tools/call')).length, 1);
});

test('bad values stop the start with a clear message', opts, () => {
  const a = runCli(['--access-log', path.join(dir, 'no', 'such', 'dir', 'x.log')]);
  assert.equal(a.code, 2);
  assert.match(a.stderr, /--access-log: cannot open .* for appending: No such file or directory/);
  const b = runCli(['--access-log-format', 'json']);
  assert.equal(b.code, 2);
  assert.match(b.stderr, /--access-log-format needs --access-log/);
  const c = runCli(['--access-log', '-', '--access-log-format', 'xml']);
  assert.equal(c.code, 2);
  assert.match(c.stderr, /--access-log-format/);
});

test('--access-log - writes to standard output', opts, async () => {
  const proc = spawn(BIN, ['--skills', FIXTURES, '--port', '0', '--refresh-interval', '0',
    '--access-log', '-', '--access-log-format', 'json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (c) => { out += c; });
  proc.stderr.on('data', (c) => { err += c; });
  const exited = new Promise((r) => proc.once('exit', r));
  try {
    const url = await poll(() => /listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err)?.[1], 10_000, 50);
    assert.ok(url, `no listening line: ${err}`);
    await callTool(url, 'list_skills', {});
    const line = await poll(() => out.split('\n').find((l) => l.includes('"tools/call"')), 5000, 50);
    assert.ok(line, `no line on stdout: ${out}`);
    assert.equal(JSON.parse(line).tool, 'list_skills');
  } finally {
    proc.kill('SIGTERM');
    await exited;
  }
  assert.match(out.trim().split('\n').at(-1), /"event":"drained"/);
});

test('libmicrohttpd noise stays out of the log at --threads 1 --log-level debug', opts, async () => {
  const s = await startServer({ args: ['--threads', '1', '--log-level', 'debug'] });
  try {
    const send = (bytes, reset) => new Promise((resolve) => {
      const c = net.connect(s.port, '127.0.0.1', () => {
        c.write(bytes);
        if (reset) { c.resetAndDestroy(); resolve(); } else setTimeout(() => { c.destroy(); resolve(); }, 200);
      });
      c.on('error', () => resolve());
    });
    await send('POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{"a"', true);
    await send('POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n', false);
    await send('GET /.well-known/agent-skills/index.json HTTP/1.1\r\nHost: localhost\r\n\r\n', true);
    await send('POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\n', false);
    assert.equal((await raw(`http://127.0.0.1:${s.port}/healthz`, { method: 'GET' })).status, 200);
  } finally {
    await s.stop();
  }
  const noise = s.log.split('\n').filter((l) => / http: |^Warning|thread pool/i.test(l));
  assert.deepEqual(noise, [], 'no libmicrohttpd message about what a client did');
});
