// Connections at the edge. The server accepts them itself and hands them to
// libmicrohttpd (docs/internals/threads.md, "Acceptor"): at
// --max-connections a new connection waits in the kernel's backlog and is
// answered once a slot frees; it is not reset, and a SIGTERM still answers
// it. Every wait is bounded, so a server that stops answering fails the
// test instead of holding the file open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { BIN, startServer, TEST_TIMEOUT } from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_skills' } });
const REQ = 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
  `Accept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`;

/** A raw connection that sends one request; .answered resolves with the
 *  status line, or with 'closed' when the server closes it unanswered. */
function ask(port) {
  const s = net.connect(port, '127.0.0.1');
  let data = '';
  const answered = new Promise((resolve) => {
    s.on('data', (d) => { data += d; if (data.includes('\r\n')) resolve(data.split('\r\n')[0]); });
    s.on('close', () => resolve(data ? data.split('\r\n')[0] : 'closed'));
    s.on('error', () => resolve('closed'));
  });
  s.on('connect', () => s.write(REQ));
  return { s, answered };
}

const within = (p, ms) => {
  let t;
  return Promise.race([p, new Promise((r) => { t = setTimeout(() => r('waiting'), ms); })])
    .finally(() => clearTimeout(t));
};

// At --max-connections 2: two connections answered and held, a third
// neither reset nor answered (it waits in the backlog while both are held).
async function twoHeldOneWaiting(port, socks) {
  const a = ask(port); socks.push(a.s);
  const b = ask(port); socks.push(b.s);
  assert.match(await within(a.answered, 8000), /^HTTP\/1\.1 200/);
  assert.match(await within(b.answered, 8000), /^HTTP\/1\.1 200/);
  const c = ask(port); socks.push(c.s);
  assert.equal(await within(c.answered, 400), 'waiting');
  return [a, b, c];
}

test('at --max-connections a new connection waits in the backlog, then is answered when one closes', opts, async () => {
  const srv = await startServer({ args: ['--max-connections', '2', '--threads', '2'] });
  const socks = [];
  try {
    const [a, , c] = await twoHeldOneWaiting(srv.port, socks);
    a.s.destroy();
    assert.match(await within(c.answered, 8000), /^HTTP\/1\.1 200/);
  } finally {
    for (const s of socks) s.destroy();
    await srv.stop();
  }
});

test('SIGTERM at --max-connections: the connection waiting in the backlog is answered, and the server exits 0', opts, async () => {
  const srv = await startServer({ args: ['--max-connections', '2', '--threads', '2'] });
  const socks = [];
  try {
    const [, , c] = await twoHeldOneWaiting(srv.port, socks);
    const gone = new Promise((r) => srv.proc.once('exit', (code, signal) => r({ code, signal })));
    process.kill(srv.proc.pid, 'SIGTERM');
    // completed before the SIGTERM, so the drain takes it in, past the limit
    assert.match(await within(c.answered, 8000), /^HTTP\/1\.1 200/);
    assert.deepEqual(await within(gone, 8000), { code: 0, signal: null }, srv.log.slice(-1500));
    assert.doesNotMatch(srv.log, /Fatal error/);
  } finally {
    for (const s of socks) s.destroy();
    await srv.stop();
  }
});

// MHD_quiesce_daemon on an epoll thread pool races libmicrohttpd's own
// workers, and the loser aborts the process: the server must never call it.
test('the binary does not call MHD_quiesce_daemon', opts, () => {
  const undef = execFileSync('nm', ['-D', '--undefined-only', BIN], { encoding: 'utf8' });
  assert.match(undef, /MHD_add_connection/);
  assert.doesNotMatch(undef, /MHD_quiesce_daemon/);
});

/** CPU seconds (user + system) the process has used, from /proc. */
function cpuSeconds(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

// libmicrohttpd 0.9.75 in epoll mode keeps a connection whose TLS handshake
// waits for the client marked readable, so its thread retries the handshake
// without sleeping: a client that connects and sends nothing (or half a
// ClientHello) pins a core for as long as it stays, and --connection-timeout
// never closes it. Both must hold: no spinning, and the timeout closes them.
test('silent connections to a TLS server do not keep a thread busy, and --connection-timeout closes them', opts, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-accept-'));
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
    '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' });
  const srv = await startServer({ args: ['--tls-cert', cert, '--tls-key', key, '--threads', '2',
    '--connection-timeout', '1'] });
  const socks = [];
  try {
    // one silent, one stopped half-way through its ClientHello; on
    // neighbouring descriptors, so on both threads
    const closed = [];
    for (const first of ['', '\x16\x03\x01\x02\x00\x01']) {
      const s = net.connect(srv.port, '127.0.0.1');
      socks.push(s);
      closed.push(new Promise((r) => { s.on('close', () => r('closed')); s.on('error', () => {}); }));
      s.resume(); // reads, so the server's close is seen
      await new Promise((r, j) => { s.once('connect', r); s.once('error', j); });
      if (first) s.write(Buffer.from(first, 'latin1'));
    }
    await new Promise((r) => setTimeout(r, 100));
    const before = cpuSeconds(srv.proc.pid);
    await new Promise((r) => setTimeout(r, 700));
    const used = cpuSeconds(srv.proc.pid) - before;
    // a spinning thread takes most of a core; an idle server, next to none
    assert.ok(used < 0.15, `the server used ${used.toFixed(2)} s of CPU in 0.7 s with two silent TLS connections`);
    for (const c of closed) assert.equal(await within(c, 5000), 'closed', 'closed by --connection-timeout 1');
  } finally {
    for (const s of socks) s.destroy();
    await srv.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
