// acceptance/lib.mjs: server start/stop, raw HTTP and JSON-RPC helpers for
// the black-box acceptance run. Node built-ins only; nothing from tests/.

import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import fs from 'node:fs';

export const MODERN = '2026-07-28';

const live = new Set();
function killAll() {
  for (const p of live) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }
  live.clear();
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => { killAll(); process.exit(130); });
}

/** Run the binary synchronously (CLI checks). */
export function runCli(bin, args, opts = {}) {
  const r = spawnSync(bin, args, { encoding: 'utf8', timeout: opts.timeout ?? 10000, env: opts.env ?? process.env, input: opts.input });
  return { code: r.status, signal: r.signal, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/**
 * Start a server: spawn BIN with --port 0, wait for the
 * "listening on http(s)://127.0.0.1:PORT/mcp" stderr line.
 */
export async function startServer(bin, args, opts = {}) {
  const full = ['--host', '127.0.0.1', '--port', '0', ...args];
  const proc = spawn(bin, full, { stdio: ['ignore', 'ignore', 'pipe'], env: opts.env ?? process.env });
  live.add(proc);
  let log = '';
  let exited = null;
  const exitP = new Promise((r) => proc.on('exit', (code, signal) => {
    exited = { code, signal }; live.delete(proc); r(exited);
  }));
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (c) => { log += c; });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { cleanup(); reject(new Error(`no "listening on" line in 10 s; stderr:\n${log}`)); }, 10000);
    const onData = () => {
      const m = /listening on (https?:\/\/127\.0\.0\.1:(\d+)(\/[^\s)]*)?)/.exec(log);
      if (m) { clearTimeout(timer); proc.stderr.off('data', onData); resolve(m[1]); }
    };
    const onExit = (code, signal) => { clearTimeout(timer); reject(new Error(`server exited early (code ${code}, signal ${signal}); stderr:\n${log}`)); };
    function cleanup() { try { process.kill(proc.pid, 'SIGKILL'); } catch { /* gone */ } }
    proc.stderr.on('data', onData);
    proc.once('exit', onExit);
    proc.once('error', (e) => { clearTimeout(timer); reject(e); });
  });
  proc.removeAllListeners('error');
  const u = new URL(url);
  const srv = {
    url, port: Number(u.port), path: u.pathname, proc, pid: proc.pid,
    get log() { return log; },
    get exited() { return exited; },
    exitP,
    async stop(sig = 'SIGTERM') {
      if (!exited) {
        try { process.kill(proc.pid, sig); } catch { /* gone */ }
        const t = setTimeout(() => { try { process.kill(proc.pid, 'SIGKILL'); } catch { /* gone */ } }, 3000);
        await exitP;
        clearTimeout(t);
      }
      live.delete(proc);
      return exited;
    },
  };
  return srv;
}

/** Raw HTTP request. Returns {status, headers, body, text}. */
export function request(srv, { method = 'POST', path, headers = {}, body, host, timeout = 15000, rawHeaders } = {}) {
  return new Promise((resolve, reject) => {
    const h = { ...headers };
    if (host !== undefined && host !== null) h.Host = host;
    const opts = { host: '127.0.0.1', port: srv.port, method, path: path ?? srv.path, headers: h, agent: false, setHost: host !== null && host === undefined };
    if (host === null) opts.setHost = false;
    const req = http.request(opts, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const buf = Buffer.concat(chunks);
        resolve({ status: res.statusCode, headers: res.headers, body: buf, text: buf.toString('utf8') });
      });
      res.on('error', reject);
    });
    req.setTimeout(timeout, () => { req.destroy(new Error(`HTTP timeout after ${timeout} ms`)); });
    req.on('error', reject);
    if (body !== undefined) req.write(typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body));
    req.end();
  });
}

export const GET = (srv, path, headers = {}) => request(srv, { method: 'GET', path, headers });

let nextId = 1;

/**
 * JSON-RPC call. opts.modern adds the 2026-07-28 _meta and headers;
 * opts.headers adds/overrides headers; opts.raw returns the HTTP response too.
 */
export async function rpc(srv, method, params, opts = {}) {
  const id = opts.id !== undefined ? opts.id : nextId++;
  let p = params === undefined ? {} : params;
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...(opts.auth ? { Authorization: `Bearer ${opts.auth}` } : {}) };
  if (opts.modern) {
    p = { ...p, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {}, ...(p._meta ?? {}) } };
    headers['MCP-Protocol-Version'] = MODERN;
    headers['Mcp-Method'] = method;
    if (method === 'tools/call' || method === 'prompts/get') headers['Mcp-Name'] = p.name;
    if (method === 'resources/read') headers['Mcp-Name'] = p.uri;
  }
  Object.assign(headers, opts.headers ?? {});
  for (const k of Object.keys(headers)) if (headers[k] === undefined) delete headers[k];
  const msg = { jsonrpc: '2.0', method, params: p };
  if (id !== null) msg.id = id;
  const res = await request(srv, { body: JSON.stringify(msg), headers, timeout: opts.timeout ?? 15000 });
  let json = null;
  const ct = String(res.headers['content-type'] ?? '');
  if (ct.startsWith('text/event-stream')) {
    const events = parseSse(res.text);
    res.events = events;
    json = events.length ? events[events.length - 1] : null;
  } else if (res.text) {
    try { json = JSON.parse(res.text); } catch { json = null; }
  }
  res.json = json;
  if (opts.raw) return res;
  return json;
}

export function parseSse(text) {
  const out = [];
  for (const block of text.split(/\n\n/)) {
    const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
    if (data) { try { out.push(JSON.parse(data)); } catch { /* ignore */ } }
  }
  return out;
}

/** tools/call; returns the CallToolResult (or throws with the JSON-RPC error). */
export async function tool(srv, name, args = {}, opts = {}) {
  const r = await rpc(srv, 'tools/call', { name, arguments: args, ...(opts.params ?? {}) }, opts);
  if (!r) throw new Error('no JSON-RPC answer');
  if (r.error) {
    const e = new Error(`JSON-RPC error ${r.error.code}: ${r.error.message}`);
    e.rpc = r.error; throw e;
  }
  return r.result;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function textOf(result) { return result?.content?.[0]?.text ?? ''; }

/** Child pids of pid (Linux /proc). */
export function childPids(pid) {
  const out = [];
  try {
    for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
      const s = fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim();
      if (s) out.push(...s.split(/\s+/).map(Number));
    }
  } catch { /* not linux or gone */ }
  return out;
}
