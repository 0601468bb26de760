// A throwaway redis-server for the tests of the Redis task store: on a free
// loopback port, nothing written to disk, ready once it answers PING, and
// stopped by its PID (by the test, or by a process 'exit' hook at the
// latest, so none outlives the run).

import { spawn } from 'node:child_process';
import net from 'node:net';

import { freePort } from './harness.mjs';
import { waitGone } from './procs.mjs';

const live = new Set();
process.on('exit', () => {
  for (const p of live) {
    try { process.kill(p.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
});

/** One PING (after AUTH when there is a password): resolves to the reply text, or '' on any failure. */
function ping(port, password) {
  return new Promise((resolve) => {
    let got = '';
    const s = net.connect({ host: '127.0.0.1', port });
    const done = (v) => { s.destroy(); resolve(v); };
    s.setTimeout(1000, () => done(''));
    s.on('error', () => done(''));
    s.on('connect', () => {
      // RESP arrays: a password may hold any byte an inline command cannot
      const cmd = (...a) => `*${a.length}\r\n${a.map((x) => `$${Buffer.byteLength(x)}\r\n${x}\r\n`).join('')}`;
      s.write((password !== undefined ? cmd('AUTH', password) : '') + cmd('PING'));
    });
    s.on('data', (c) => {
      got += c;
      if (/\+PONG\r\n|^-.*\r\n/m.test(got)) done(got);
    });
  });
}

/**
 * Starts redis-server. opts.password sets --requirepass; opts.args are more
 * flags. Resolves once it answers PING with +PONG (through AUTH when there is
 * a password), or throws with its output after 5 s. Returns
 * { proc, port, url, stop() }: url is redis://127.0.0.1:PORT/db (opts.db,
 * default 3) without the password; stop() kills it by PID and waits until it
 * is gone.
 */
export async function startRedis({ password, args = [], db = 3 } = {}) {
  const port = await freePort();
  const flags = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  if (password !== undefined) flags.push('--requirepass', password);
  const proc = spawn('redis-server', [...flags, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  let out = '';
  let exited = null;
  proc.stdout.on('data', (c) => { out += c; });
  proc.stderr.on('data', (c) => { out += c; });
  proc.on('exit', (code, signal) => { exited = { code, signal }; live.delete(proc); });
  proc.on('error', (e) => { exited = { error: e.message }; live.delete(proc); });
  const stop = async () => {
    try { process.kill(proc.pid, 'SIGKILL'); } catch { /* gone */ }
    const gone = await waitGone(proc.pid, 5000);
    live.delete(proc);
    if (!gone) throw new Error(`redis-server ${proc.pid} is still running 5 s after SIGKILL`);
  };
  const end = Date.now() + 5000;
  let reply = '';
  while (!exited && Date.now() < end) {
    reply = await ping(port, password);
    if (reply.includes('+PONG')) return { proc, port, url: `redis://127.0.0.1:${port}/${db}`, stop };
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`redis-server did not answer PING on port ${port} within 5 s ` +
    `(${exited ? `exited: ${JSON.stringify(exited)}` : `last reply: ${JSON.stringify(reply)}`}); output:\n${out}`);
}
