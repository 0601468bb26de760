// The server accepts connections on its own thread and hands them to
// libmicrohttpd (docs/deploy.md, "Stopping"): at --max-connections a new
// connection waits in the kernel's backlog and is answered once a slot
// frees, and a SIGTERM under traffic drains and exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';

import { startServer, TEST_TIMEOUT } from './lib/harness.mjs';

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

const within = (p, ms) => Promise.race([p, new Promise((r) => setTimeout(() => r('waiting'), ms))]);

test('at --max-connections a new connection waits in the backlog, then is answered when one closes', opts, async () => {
  const srv = await startServer({ args: ['--max-connections', '2', '--threads', '2'] });
  const socks = [];
  try {
    const a = ask(srv.port); socks.push(a.s);
    const b = ask(srv.port); socks.push(b.s);
    assert.match(await a.answered, /^HTTP\/1\.1 200/);
    assert.match(await b.answered, /^HTTP\/1\.1 200/);
    const c = ask(srv.port); socks.push(c.s);
    // not reset, not answered: it waits while both slots are held
    assert.equal(await within(c.answered, 400), 'waiting');
    a.s.destroy();
    assert.match(await within(c.answered, 5000), /^HTTP\/1\.1 200/);
  } finally {
    for (const s of socks) s.destroy();
    await srv.stop();
  }
});

test('SIGTERM under keep-alive traffic on two threads: the drain ends and the server exits 0', opts, async () => {
  for (let round = 0; round < 4; round++) {
    const srv = await startServer({ args: ['--threads', '2'] });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    let stop = false;
    let ok = 0;
    const one = () => new Promise((resolve) => {
      const q = http.request({ host: '127.0.0.1', port: srv.port, path: '/mcp', method: 'POST', agent,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } },
      (r) => { if (r.statusCode === 200) ok++; r.resume(); r.on('end', resolve); });
      q.on('error', resolve);
      q.end(BODY);
    });
    const loops = Array.from({ length: 8 }, async () => { while (!stop) await one(); });
    try {
      while (ok < 50) await new Promise((r) => setTimeout(r, 10));
      const gone = new Promise((r) => srv.proc.once('exit', (code, signal) => r({ code, signal })));
      process.kill(srv.proc.pid, 'SIGTERM');
      const ex = await gone;
      assert.deepEqual(ex, { code: 0, signal: null }, srv.log.slice(-1500));
      assert.doesNotMatch(srv.log, /Fatal error/);
    } finally {
      stop = true;
      agent.destroy();
      await Promise.all(loops);
      await srv.stop();
    }
  }
});
