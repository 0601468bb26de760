// The end-to-end helpers themselves, where a wrong one would hang or pass
// other files by accident: indexerSettled on a library with no skill body
// to index, and the Redis helper (ready when it answers PING, through AUTH
// when it has a password; stop() ends it).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { indexerSettled, startServer } from './lib/harness.mjs';
import { pidGone } from './lib/procs.mjs';
import { startRedis } from './lib/redis.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-harness-'));
fs.chmodSync(tmp, 0o755);
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('indexerSettled resolves for a server whose library is empty', { timeout: 30_000 }, async () => {
  const empty = path.join(tmp, 'empty');
  fs.mkdirSync(empty);
  const srv = await startServer({ skillsDirs: [empty] });
  try {
    await indexerSettled(srv, 1, 10_000);
    assert.match(srv.log, /skills: indexed the bodies of 0 skills/);
  } finally {
    await srv.stop();
  }
});

/** Sends raw RESP commands; resolves with the first `lines` reply lines, or what came within 1 s. */
function redisSay(port, text, lines = 1) {
  return new Promise((resolve) => {
    let got = '';
    const s = net.connect({ host: '127.0.0.1', port });
    const done = () => { s.destroy(); resolve(got); };
    s.setTimeout(1000, done);
    s.on('error', done);
    s.on('data', (c) => { got += c; if (got.split('\r\n').length > lines) done(); });
    s.on('connect', () => s.write(text));
  });
}

test('startRedis: answers PING when it returns, asks for the password it was given, stop() ends it', { timeout: 30_000 }, async () => {
  const open = await startRedis();
  const locked = await startRedis({ password: 'harness pw', db: 5 });
  try {
    assert.match(open.url, new RegExp(`^redis://127\\.0\\.0\\.1:${open.port}/3$`));
    assert.equal(locked.url, `redis://127.0.0.1:${locked.port}/5`, 'the password is not in the URL');
    assert.equal(await redisSay(open.port, 'PING\r\n'), '+PONG\r\n');
    assert.match(await redisSay(locked.port, 'PING\r\n'), /^-NOAUTH/);
    assert.equal(await redisSay(locked.port, '*2\r\n$4\r\nAUTH\r\n$10\r\nharness pw\r\nPING\r\n', 2), '+OK\r\n+PONG\r\n');
  } finally {
    await open.stop();
    await locked.stop();
  }
  assert.ok(pidGone(open.proc.pid) && pidGone(locked.proc.pid));
  assert.equal(await redisSay(open.port, 'PING\r\n'), '', 'nothing answers on its port once stopped');
});
