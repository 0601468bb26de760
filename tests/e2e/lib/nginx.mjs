// Real nginx (and HAProxy) in front of test servers: each one runs from its
// own temp prefix on a loopback port, is up once its /healthz answers 200,
// and is stopped by its PID with every child it forked.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { freePort, poll, raw } from './harness.mjs';
import { alive, childPids } from './procs.mjs';

export const NGINX = '/usr/sbin/nginx';
export const HAPROXY = '/usr/sbin/haproxy';

/**
 * Spawn bin (its config already in dir) and wait until
 * http://127.0.0.1:port/healthz answers 200. Returns { proc, dir, port, base,
 * url }; stopProxy() ends it. why() adds to the failure message (a log file).
 */
export async function startProxy(bin, args, dir, port, why = () => '') {
  const proc = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (c) => { err += c; });
  const base = `http://127.0.0.1:${port}`;
  const p = { proc, dir, port, base, url: `${base}/mcp` };
  const up = await poll(async () => {
    if (proc.exitCode !== null) return 'exited';
    try { return (await raw(`${base}/healthz`, { method: 'GET' })).status === 200 ? 'up' : null; } catch { return null; }
  }, 5000, 50);
  if (up !== 'up') await stopProxy(p).catch(() => {});
  assert.equal(up, 'up', `${bin} did not come up: ${err}${why()}`);
  return p;
}

/**
 * nginx with a generated nginx.conf in a fresh prefix: the temp paths set,
 * and http(dir, port) giving the rest of the http { } block (upstreams,
 * servers; the port is free and loopback). The config passes nginx -t first.
 */
export async function startNginx(http, { workerConnections = 256, port } = {}) {
  assert.ok(fs.existsSync(NGINX), `${NGINX} is not installed (tests/deps.sh test installs nginx)`);
  port ??= await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-nginx-'));
  fs.mkdirSync(path.join(dir, 'logs'));
  const errorLog = path.join(dir, 'logs', 'error.log');
  fs.writeFileSync(path.join(dir, 'nginx.conf'), `
daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${errorLog} warn;
events { worker_connections ${workerConnections}; }
http {
    access_log off;
    client_body_temp_path ${dir}/client_body;
    proxy_temp_path ${dir}/proxy;
    fastcgi_temp_path ${dir}/fastcgi;
    uwsgi_temp_path ${dir}/uwsgi;
    scgi_temp_path ${dir}/scgi;
${http(dir, port)}
}
`);
  const args = ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', errorLog];
  const t = spawnSync(NGINX, ['-t', '-q', ...args], { encoding: 'utf8' });
  if (t.status !== 0) fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(t.status, 0, `nginx -t: ${t.stderr}`);
  return startProxy(NGINX, args, dir, port, () => {
    try { return fs.readFileSync(errorLog, 'utf8'); } catch { return ''; }
  });
}

/**
 * SIGTERM, SIGKILL after 3 s; waits until the process and the children it
 * had (nginx's workers) are gone, removes its prefix. Returns those PIDs.
 */
export async function stopProxy(p) {
  const { proc } = p;
  const pids = [proc.pid, ...childPids(proc.pid)];
  if (proc.exitCode === null && proc.signalCode === null) {
    const gone = new Promise((r) => proc.once('exit', r));
    try { process.kill(proc.pid, 'SIGTERM'); } catch { /* gone */ }
    const t = setTimeout(() => { for (const x of pids) { try { process.kill(x, 'SIGKILL'); } catch { /* gone */ } } }, 3000);
    await gone;
    clearTimeout(t);
  }
  await poll(() => pids.every((x) => !alive(x)) || null, 3000, 50);
  for (const x of pids) if (alive(x)) { try { process.kill(x, 'SIGKILL'); } catch { /* gone */ } }
  fs.rmSync(p.dir, { recursive: true, force: true });
  return pids;
}
