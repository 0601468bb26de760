// Command line: --help, --version, bad flag values, a missing skills root.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { runCli, startServer, connect, callOk, REPO, TEST_TIMEOUT } from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };

test('--help prints usage on stdout or stderr and exits 0', opts, () => {
  const r = runCli(['--help']);
  assert.equal(r.code, 0, r.stderr);
  const out = r.stdout + r.stderr;
  for (const flag of ['--skills', '--host', '--port', '--path', '--refresh-interval']) {
    assert.ok(out.includes(flag), `--help should mention ${flag}`);
  }
});

test('help and --help list every subcommand, each of which answers its own --help', opts, () => {
  const help = runCli(['help']);
  assert.equal(help.code, 0, help.stderr);
  const full = runCli(['--help']);
  assert.equal(help.stdout, full.stdout, '`help` prints what `--help` prints');
  const late = runCli(['--port', '1', '--help']);
  assert.equal(late.stdout, full.stdout, 'a --help after other flags lists the subcommands too');
  const listed = [...help.stdout.matchAll(/^ {7}skill-mcp (\w+) /gm)].map((m) => m[1]);
  assert.deepEqual(listed, ['export', 'fetch', 'validate', 'list', 'token', 'lock']);
  for (const name of listed) {
    assert.match(help.stdout, new RegExp(`^  ${name} +\\S`, 'm'), `a one-line help for ${name}`);
    const sub = runCli([name, '--help']);
    assert.match(sub.stdout + sub.stderr, new RegExp(`usage: skill-mcp ${name}`), `${name} --help`);
  }
});

test('--version prints "skill-mcp X.Y.Z" matching VERSION', opts, () => {
  const r = runCli(['--version']);
  assert.equal(r.code, 0, r.stderr);
  const want = fs.readFileSync(path.join(REPO, 'VERSION'), 'utf8').trim();
  assert.match((r.stdout + r.stderr).trim(), new RegExp(`^skill-mcp ${want.replace(/\./g, '\\.')}$`, 'm'));
});

for (const bad of [
  ['--port', 'abc'],
  ['--port', '70000'],
  ['--port', '-1'],
  ['--refresh-interval', 'soon'],
  ['--max-body', 'lots'],
  ['--no-such-flag'],
  ['--port'],
]) {
  test(`bad command line ${JSON.stringify(bad)} -> exit 2 with a message`, opts, () => {
    const r = runCli([...bad, '--skills', os.tmpdir()]);
    assert.equal(r.code, 2, `exit code: ${r.code} signal ${r.signal}; stderr: ${r.stderr}`);
    assert.ok(r.stderr.trim().length > 0, 'a message on stderr');
    assert.equal(r.stdout.includes('listening on'), false);
  });
}

test('a nonexistent --skills dir is a clear error, not a silent empty library', opts, () => {
  const missing = path.join(os.tmpdir(), `skill-mcp-no-such-dir-${process.pid}-${Date.now()}`);
  const r = runCli(['--skills', missing, '--host', '127.0.0.1', '--port', '0', '--refresh-interval', '0'], 5000);
  // A server that keeps running would be killed by the timeout: that is a failure too.
  assert.equal(r.signal, null, `server kept running with a missing skills dir; stderr: ${r.stderr}`);
  assert.notEqual(r.code, 0);
  assert.ok(r.stderr.includes(missing) || /no such|not found|does not exist|cannot/i.test(r.stderr),
    `stderr should name the problem: ${r.stderr}`);
});

test('--path changes the endpoint and the log line shows it', opts, async () => {
  const s = await startServer({ args: ['--path', '/custom-mcp'] });
  try {
    assert.equal(s.path, '/custom-mcp');
    const c = await connect(s.url);
    const r = await callOk(assert, c, 'list_skills', {});
    assert.ok(r.total > 0);
    await c.close();
  } finally {
    await s.stop();
  }
});

test('SIGTERM stops the server promptly with exit 0', opts, async () => {
  const s = await startServer();
  const exited = new Promise((r) => s.proc.once('exit', (code, signal) => r({ code, signal })));
  const t0 = Date.now();
  process.kill(s.proc.pid, 'SIGTERM');
  const e = await exited;
  assert.ok(Date.now() - t0 < 5000, 'shutdown took too long');
  assert.ok(e.code === 0 || e.signal === 'SIGTERM', `exit ${JSON.stringify(e)}`);
  await s.stop();
});

// Under systemd the journal gets stderr (docs/install.md, `journalctl -u
// skill-mcp`); with --log-format json each line must be one JSON object.
test('--log-format json writes one JSON object per stderr line', opts, async () => {
  const s = await startServer({ args: ['--log-format', 'json'] });
  try {
    const c = await connect(s.url);
    await callOk(assert, c, 'list_skills', {});
    await c.close();
    process.kill(s.proc.pid, 'SIGHUP');
    const end = Date.now() + 10_000;
    while (!/rescanning skills/.test(s.log) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  } finally {
    await s.stop();
  }
  const lines = s.log.split('\n').filter((l) => l !== '');
  assert.ok(lines.length >= 3, `too few log lines:\n${s.log}`);
  for (const l of lines) {
    let o;
    assert.doesNotThrow(() => { o = JSON.parse(l); }, `not JSON: ${l}`);
    assert.match(o.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, l);
    assert.ok(['debug', 'info', 'warn', 'error'].includes(o.level), l);
    // A message line has `msg`; a request line has `event` and its fields.
    assert.ok(typeof o.msg === 'string' || o.event === 'request', l);
  }
  const msgs = lines.map((l) => JSON.parse(l).msg ?? '');
  assert.ok(msgs.some((m) => m.includes('listening on')));
  assert.ok(msgs.some((m) => m.includes('SIGHUP: rescanning skills')));
  assert.ok(lines.some((l) => JSON.parse(l).method === 'tools/call'), 'the request line of the call');
});
