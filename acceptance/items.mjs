// acceptance/items.mjs: the numbered acceptance items. Each item: area, the
// clause or docs page it checks (cite), a one-line promise, the fix
// instruction shown when it fails, and the check itself.
//
// A check throws Fail(observed, expected); anything else thrown is a
// failure with the error message as the observed value. There is no skip:
// an item that cannot check its promise fails.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { GET, request, rpc, tool, textOf, sleep, runCli, childPids, MODERN } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SCHEMAS = path.resolve(HERE, '..', 'spec', 'schemas');

export class Fail extends Error {
  constructor(observed, expected) { super(`observed ${observed}; expected ${expected}`); this.observed = observed; this.expected = expected; }
}

const J = (v) => { const s = JSON.stringify(v); return s === undefined ? 'undefined' : (s.length > 400 ? s.slice(0, 400) + '...' : s); };
function expect(cond, observed, expected) { if (!cond) throw new Fail(typeof observed === 'string' ? observed : J(observed), expected); }
function eq(actual, expected, what = 'value') {
  if (J(actual) !== J(expected)) throw new Fail(`${what} = ${J(actual)}`, `${what} = ${J(expected)}`);
}
function has(text, needle, what = 'text') {
  if (!String(text).includes(needle)) throw new Fail(`${what} = ${J(String(text).slice(0, 300))}`, `${what} containing ${J(needle)}`);
}
function okResult(r, what = 'result') {
  expect(r && r.isError !== true && r.structuredContent, `${what}: isError=${r?.isError} text=${J(textOf(r).slice(0, 200))}`, `${what}: a successful result with structuredContent`);
  return r.structuredContent;
}
function toolError(r, what = 'result') {
  expect(r && r.isError === true && !r.structuredContent && r.content?.length === 1, `${what}: ${J(r)}`, `${what}: a tool error (isError true, one text block, no structuredContent)`);
  return textOf(r);
}
async function rpcErr(srv, method, params, code, opts = {}) {
  const res = await rpc(srv, method, params, { ...opts, raw: true });
  expect(res.json?.error?.code === code, `HTTP ${res.status} ${J(res.json)}`, `JSON-RPC error ${code}`);
  return res;
}
const run = (srv, script, extra = {}, opts = {}) => tool(srv, 'run_skill_script', { name: extra.name ?? 'alpha', script, ...extra, ...(extra.name ? { name: extra.name } : {}) }, opts);
const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');
// A check that needs a script in flight waits until the server counts it
// running: a fixed nap is too short on a loaded machine, where the call may
// not have reached its slot yet.
async function scriptsLive(srv, n = 1, opts = {}) {
  let live;
  for (const end = Date.now() + 10000; Date.now() < end; await sleep(50)) {
    live = okResult(await tool(srv, 'skill_server_stats', {}, opts)).scripts.live;
    if (live >= n) return;
  }
  throw new Fail(`scripts.live = ${live} after 10 s`, `${n} script(s) running`);
}

const items = [];
let area = '';
function AREA(a) { area = a; }
function T(cite, promise, fix, fn) { items.push({ area, cite, promise, fix, fn }); }

// ---------------------------------------------------------------- CLI & flags
AREA('CLI & flags');
T('README.md; --help', '`--version` prints `skill-mcp <version>` and exits 0.',
  'server/config.c (option parsing): make --version print "skill-mcp " VERSION on stdout and exit 0.',
  async (c) => { const r = runCli(c.bin, ['--version']); eq(r.code, 0, 'exit'); expect(/^skill-mcp \d+\.\d+\.\d+/.test(r.stdout), r.stdout, '"skill-mcp X.Y.Z"'); });
T('README.md; --help', '`--help` prints the usage with every option and exits 0.',
  'server/config.c: --help must print the usage (listing --skills, --port, --auth-tokens, --hooks-dir, --context-tokens) and exit 0.',
  async (c) => { const r = runCli(c.bin, ['--help']); eq(r.code, 0, 'exit'); for (const f of ['--skills', '--port', '--auth-tokens', '--hooks-dir', '--context-tokens', '--workers']) has(r.stdout + r.stderr, f, 'help'); });
T('README.md; --help', 'An unknown option is refused with a non-zero exit naming it.',
  'server/config.c: an unknown option must print "unknown option \'X\'" on stderr and exit non-zero.',
  async (c) => { const r = runCli(c.bin, ['--no-such-flag']); expect(r.code !== 0, `exit ${r.code}`, 'non-zero exit'); has(r.stderr, 'no-such-flag', 'stderr'); });
T('RFC-SKILL-1 §3.1.1', 'The server refuses to start when no --skills root is usable.',
  'server/discovery.c / main.c: when every root is missing, exit non-zero at start-up with a message naming the root.',
  async (c) => { const r = runCli(c.bin, ['--skills', '/nonexistent-acceptance-root', '--port', '0'], { timeout: 5000 }); expect(r.code !== 0 && r.code !== null, `exit ${r.code} signal ${r.signal}`, 'non-zero exit at start-up'); });
T('RFC-SKILL-1 §10.6.2; docs/security.md', '`skill-mcp token add NAME --rpm N --file F` prints a token once and writes `NAME sha256 rpm` to a 0600 file.',
  'server/auth.c (token add): append "NAME <sha256 hex of token> RPM" to FILE, create it with mode 0600, print the token on stdout.',
  async (c) => {
    const st = fs.statSync(c.tokenFile);
    eq(st.mode & 0o777, 0o600, 'file mode');
    const line = fs.readFileSync(c.tokenFile, 'utf8').split('\n').find((l) => l.startsWith('limited '));
    eq(line, `limited ${sha(c.tokens.limited)} 3`, 'token file line');
    expect(!fs.readFileSync(c.tokenFile, 'utf8').includes(c.tokens.limited), 'token in clear in the file', 'only the SHA-256 stored');
  });
T('RFC-SKILL-1 §10.6.2', 'A malformed token file stops the server at start-up, naming the line.',
  'server/auth.c: on a malformed line, log "FILE:LINE: ..." and exit non-zero before listening.',
  async (c) => {
    const f = path.join(c.fx.tmp, 'bad-tokens.txt'); fs.writeFileSync(f, 'ok ' + 'a'.repeat(64) + '\nbroken-line-without-hash\n', { mode: 0o600 });
    const r = runCli(c.bin, ['--skills', c.fx.A, '--port', '0', '--auth-tokens', f], { timeout: 5000 });
    expect(r.code !== 0 && r.code !== null, `exit ${r.code}`, 'non-zero exit'); has(r.stderr, '2', 'stderr (line number)');
  });
T('docs/skills-extension.md "Publishing with export"', '`skill-mcp export DIR --skills ROOT` writes index.json and every artifact; two exports are identical.',
  'server/manifest.c (export): write DIR/.well-known/agent-skills/index.json plus one artifact per skill, deterministically; exit 0.',
  async (c) => {
    const d1 = path.join(c.fx.tmp, 'exp1'), d2 = path.join(c.fx.tmp, 'exp2');
    for (const d of [d1, d2]) { const r = runCli(c.bin, ['export', d, '--skills', c.fx.B]); eq(r.code, 0, `export exit (${r.stderr.trim()})`); }
    const idx = path.join('.well-known', 'agent-skills', 'index.json');
    const a = fs.readFileSync(path.join(d1, idx)), b = fs.readFileSync(path.join(d2, idx));
    expect(a.equals(b), 'index.json differs', 'identical index.json');
    const j = JSON.parse(a); eq(j.skills.map((s) => s.name), ['alpha', 'gamma'], 'exported skills');
    for (const s of j.skills) { const f = path.join(d1, '.well-known', 'agent-skills', decodeURIComponent(s.url)); expect(fs.existsSync(f), `missing ${s.url}`, 'artifact present'); eq('sha256:' + sha(fs.readFileSync(f)), s.digest, `${s.url} digest`); }
  });
T('issue 10: `skill-mcp validate DIR...`', '`skill-mcp validate ROOT...` lints skills citing the clause and file, exits 1 on errors, 0 on a clean root, `--json` output.',
  'server/validate.c + main.c: add the `validate DIR... [--json]` subcommand (findings name clause, file, line; non-zero exit on errors).',
  async (c) => {
    const bad = runCli(c.bin, ['validate', c.fx.A]);
    eq(bad.code, 1, 'exit on a root holding broken skills');
    has(bad.stdout + bad.stderr, 'RFC-SKILL-1 §', 'findings (clause cited)'); has(bad.stdout + bad.stderr, 'broken/SKILL.md', 'findings (file named)');
    const good = runCli(c.bin, ['validate', '--json', c.fx.B]);
    eq(good.code, 0, `exit on a valid root (${good.stdout.trim().slice(0, 300)})`);
    const j = JSON.parse(good.stdout); eq([j.summary?.errors, j.summary?.skills], [0, 2], 'summary [errors, skills]');
  });
T('issue 10: `skill-mcp list DIR...`', '`skill-mcp list` shows discovered skills (qualified names, shadowed, broken) without a server.',
  'server/main.c: add the `list DIR...` subcommand printing qualified names, shadowed and broken skills.',
  async (c) => {
    const r = runCli(c.bin, ['list', c.fx.A, c.fx.B]);
    eq(r.code === 0 || r.code === 1, true, 'exit 0/1'); has(r.stdout, 'acme/billing', 'list output'); has(r.stdout + r.stderr, 'broken', 'list output');
  });
T('docs/operations.md', 'Start-up logs `listening on http://127.0.0.1:PORT/mcp` with the real port for --port 0.',
  'server/main.c: after bind, log "listening on http://HOST:PORT/PATH" with the bound port.',
  async (c) => { const s = await c.srv('main'); expect(s.port > 0, s.url, 'a real port'); eq(s.path, '/mcp', 'path'); });

// --------------------------------------------------------- HTTP & DNS rebinding
AREA('HTTP & DNS rebinding');
T('RFC-SKILL-1 §9.1.1', 'GET /healthz answers 200 `ok` with Connection: close.',
  'server/http.c: serve GET /healthz as 200 "ok" with Connection: close.',
  async (c) => { const r = await GET(await c.srv('main'), '/healthz'); eq(r.status, 200, 'status'); eq(r.text.trim(), 'ok', 'body'); eq(r.headers.connection, 'close', 'Connection'); });
T('RFC-SKILL-1 §9.1.1', 'GET /readyz answers 200 `ready`.',
  'server/http.c: serve GET /readyz as 200 "ready" while not draining.',
  async (c) => { const r = await GET(await c.srv('main'), '/readyz'); eq(r.status, 200, 'status'); eq(r.text.trim(), 'ready', 'body'); });
T('RFC-SKILL-1 §9.1.1, §9.2.1', 'Any other path is 404.',
  'server/http.c: answer 404 with a JSON-RPC error body for paths other than --path and the fixed GET endpoints.',
  async (c) => { const r = await request(await c.srv('main'), { path: '/nope', headers: { 'Content-Type': 'application/json' }, body: '{}' }); eq(r.status, 404, 'status'); });
T('RFC-SKILL-1 §9.2.1', 'GET on the MCP path is 405 with `Allow: POST`.',
  'server/http.c: a non-POST method on --path must get 405 and the header Allow: POST.',
  async (c) => { const r = await GET(await c.srv('main'), '/mcp', { Accept: 'application/json' }); eq(r.status, 405, 'status'); eq(r.headers.allow, 'POST', 'Allow'); });
T('RFC-SKILL-1 §9.2.1', 'A Content-Type other than application/json is 415 with a JSON-RPC error body, id null.',
  'server/http.c: refuse non-JSON Content-Type with 415 and body {"jsonrpc":"2.0","id":null,"error":{...}}.',
  async (c) => { const r = await request(await c.srv('main'), { headers: { 'Content-Type': 'text/plain' }, body: '{}' }); eq(r.status, 415, 'status'); eq(JSON.parse(r.text).id, null, 'id'); });
T('RFC-SKILL-1 §9.2.1', 'An Accept excluding application/json is 406; a missing Accept is fine.',
  'server/http.c: 406 when Accept lists neither application/json, application/*, nor */*; treat an absent Accept as acceptable.',
  async (c) => {
    const s = await c.srv('main');
    const r = await request(s, { headers: { 'Content-Type': 'application/json', Accept: 'text/html' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    eq(r.status, 406, 'status with Accept: text/html');
    const r2 = await request(s, { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    eq(r2.status, 200, 'status without Accept');
  });
T('RFC-SKILL-1 §9.2.1, §10.9.1', 'A body over --max-body (1 MiB) is 413.',
  'server/http.c: compare Content-Length (and the bytes read) with --max-body; answer 413.',
  async (c) => { const r = await request(await c.srv('main'), { headers: { 'Content-Type': 'application/json' }, body: 'x'.repeat(1100000) }); eq(r.status, 413, 'status'); });
T('RFC-SKILL-1 §10.5.1', 'A non-loopback Host is refused with 403 (DNS rebinding).',
  'server/http.c (Host check): on a loopback bind, refuse a Host that is not localhost/127.0.0.1/[::1] (and not in --allowed-hosts) with 403.',
  async (c) => { const r = await request(await c.srv('main'), { host: 'evil.example.com', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) }); eq(r.status, 403, 'status'); eq(JSON.parse(r.text).id, null, 'error body id'); });
T('RFC-SKILL-1 §10.5.1', 'A request without Host is refused with 403.',
  'server/http.c: treat a missing Host header as not loopback: 403.',
  async (c) => { const r = await request(await c.srv('main'), { host: null, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) }); eq(r.status, 403, 'status'); });
T('RFC-SKILL-1 §10.5.1', 'A foreign Origin is 403; a loopback Origin is accepted.',
  'server/http.c (Origin check): allow only --allowed-origins and loopback origins; others 403.',
  async (c) => {
    const s = await c.srv('main'); const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const r = await request(s, { headers: { 'Content-Type': 'application/json', Origin: 'http://evil.example.com' }, body }); eq(r.status, 403, 'status with evil Origin');
    const r2 = await request(s, { headers: { 'Content-Type': 'application/json', Origin: 'http://localhost:5173' }, body }); eq(r2.status, 200, 'status with loopback Origin');
  });
T('RFC-SKILL-1 §10.5.1', '/healthz skips the Host check; /metrics does not.',
  'server/http.c: run the Host/Origin check for /metrics and the discovery index, but not for /healthz and /readyz.',
  async (c) => {
    const s = await c.srv('main');
    const h = await request(s, { method: 'GET', path: '/healthz', host: 'evil.example.com' }); eq(h.status, 200, '/healthz status');
    const m = await request(s, { method: 'GET', path: '/metrics', host: 'evil.example.com' }); eq(m.status, 403, '/metrics status');
  });
T('RFC-SKILL-1 §9.3.1, §9.2.2', 'An invalid JSON body is -32700 with HTTP 400.',
  'server/rpc.c: parse failures answer {"error":{"code":-32700}} with HTTP 400.',
  async (c) => { const r = await request(await c.srv('main'), { headers: { 'Content-Type': 'application/json' }, body: '{not json' }); eq(r.status, 400, 'status'); eq(JSON.parse(r.text).error.code, -32700, 'code'); });
T('RFC-SKILL-1 §9.3.1', 'A batch (array) is -32600 with HTTP 400.',
  'server/rpc.c: a top-level array must be -32600 (batches are not supported), HTTP 400.',
  async (c) => { const r = await request(await c.srv('main'), { headers: { 'Content-Type': 'application/json' }, body: '[{"jsonrpc":"2.0","id":1,"method":"ping"}]' }); eq(r.status, 400, 'status'); eq(JSON.parse(r.text).error.code, -32600, 'code'); });
T('RFC-SKILL-1 §9.3.1', 'Duplicate JSON keys are a parse error (-32700).',
  'server/rpc.c (JSON parser): reject an object with a repeated key as -32700.',
  async (c) => { const r = await request(await c.srv('main'), { headers: { 'Content-Type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}' }); eq(JSON.parse(r.text).error?.code, -32700, 'code'); });
T('RFC-SKILL-1 §9.3.1, §10.9.1', 'JSON nested deeper than 64 levels is -32700.',
  'server/rpc.c: cap nesting at 64 levels and answer -32700.',
  async (c) => { const deep = '['.repeat(100) + ']'.repeat(100); const r = await request(await c.srv('main'), { headers: { 'Content-Type': 'application/json' }, body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":${deep}}}` }); eq(JSON.parse(r.text).error?.code, -32700, 'code'); });
T('RFC-SKILL-1 §9.3.1', 'An `id` that is neither string nor integer is -32600.',
  'server/rpc.c: validate the envelope; a float or object id is -32600.',
  async (c) => { const r = await request(await c.srv('main'), { headers: { 'Content-Type': 'application/json' }, body: '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}' }); eq(JSON.parse(r.text).error?.code, -32600, 'code'); });
T('RFC-SKILL-1 §9.3.2', 'A notification and a client response are accepted with 202 and no body.',
  'server/rpc.c: messages without id, or with id + result/error and no method, get 202 with an empty body.',
  async (c) => {
    const s = await c.srv('main');
    const n = await request(s, { headers: { 'Content-Type': 'application/json' }, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' }); eq([n.status, n.text], [202, ''], 'notification');
    const r = await request(s, { headers: { 'Content-Type': 'application/json' }, body: '{"jsonrpc":"2.0","id":7,"result":{}}' }); eq([r.status, r.text], [202, ''], 'client response');
  });
T('RFC-SKILL-1 §9.3.3, §9.2.2', 'An unknown method (legacy) is -32601 with data.method, HTTP 200.',
  'server/mcp.c: unknown methods answer -32601 with data.method; HTTP 200 on the legacy era.',
  async (c) => { const r = await rpcErr(await c.srv('main'), 'no/such', {}, -32601); eq(r.status, 200, 'HTTP'); eq(r.json.error.data?.method, 'no/such', 'data.method'); });

// ---------------------------------------------------------- legacy handshake
AREA('Legacy handshake');
T('RFC-SKILL-1 §9.4.1', '`initialize` echoes 2025-06-18 and issues no Mcp-Session-Id.',
  'server/mcp.c (initialize): return the asked version when it is 2025-06-18 or 2025-11-25; never set Mcp-Session-Id.',
  async (c) => { const r = await rpc(await c.srv('main'), 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'acc', version: '1' } }, { raw: true }); eq(r.json.result.protocolVersion, '2025-06-18', 'protocolVersion'); eq(r.headers['mcp-session-id'], undefined, 'Mcp-Session-Id'); });
T('RFC-SKILL-1 §9.4.1', '`initialize` with an unknown version answers 2025-11-25.',
  'server/mcp.c (initialize): any other string gets "2025-11-25".',
  async (c) => { const r = await rpc(await c.srv('main'), 'initialize', { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 'acc', version: '1' } }); eq(r.result.protocolVersion, '2025-11-25', 'protocolVersion'); });
T('RFC-SKILL-1 §9.4.1', '`initialize` without protocolVersion is -32602.',
  'server/mcp.c (initialize): a missing protocolVersion is -32602.',
  async (c) => { await rpcErr(await c.srv('main'), 'initialize', { capabilities: {} }, -32602); });
T('RFC-SKILL-1 §9.4.3', 'Capabilities: tools, resources (listChanged/subscribe false), prompts, logging, skills extension directoryRead; serverInfo and instructions.',
  'server/mcp.c (capabilities): advertise exactly these, including extensions["io.modelcontextprotocol/skills"]={directoryRead:true}.',
  async (c) => {
    const r = (await rpc(await c.srv('main'), 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'acc', version: '1' } })).result;
    const k = r.capabilities;
    expect(k.tools && k.prompts && k.logging, k, 'tools, prompts, logging');
    eq([k.resources?.listChanged, k.resources?.subscribe, k.prompts?.listChanged], [false, false, false], 'listChanged/subscribe');
    eq(k.extensions?.['io.modelcontextprotocol/skills'], { directoryRead: true }, 'skills extension');
    eq(r.serverInfo?.name, 'skill-mcp', 'serverInfo.name'); expect(typeof r.instructions === 'string' && r.instructions.length > 0, r.instructions, 'instructions');
  });
T('RFC-SKILL-1 §9.4.1', '`ping` answers an empty result.',
  'server/mcp.c: ping returns {} on the legacy era.',
  async (c) => { const r = await rpc(await c.srv('main'), 'ping', {}); eq(r.result, {}, 'result'); });
T('RFC-SKILL-1 §9.4.1', '`logging/setLevel` accepts syslog levels and refuses others with -32602.',
  'server/mcp.c (logging/setLevel): accept the eight syslog names, -32602 otherwise.',
  async (c) => { const s = await c.srv('main'); const ok = await rpc(s, 'logging/setLevel', { level: 'debug' }); expect(ok.result, ok, 'a result for "debug"'); await rpcErr(s, 'logging/setLevel', { level: 'loud' }, -32602); });
T('RFC-SKILL-1 §9.4.1', 'An unknown MCP-Protocol-Version header is -32600 with HTTP 400.',
  'server/mcp.c: accept only 2025-11-25, 2025-06-18, 2025-03-26 in the header on legacy requests.',
  async (c) => { const r = await rpcErr(await c.srv('main'), 'ping', {}, -32600, { headers: { 'MCP-Protocol-Version': '1999-01-01' } }); eq(r.status, 400, 'HTTP'); });
T('RFC-SKILL-1 §9.4.2', 'A legacy request (no _meta version) with header 2026-07-28 is -32602 with HTTP 400.',
  'server/mcp.c: a 2026-07-28 header without the _meta version must be -32602, HTTP 400.',
  async (c) => { const r = await rpcErr(await c.srv('main'), 'tools/list', {}, -32602, { headers: { 'MCP-Protocol-Version': MODERN } }); eq(r.status, 400, 'HTTP'); });

// ------------------------------------------------------ modern 2026-07-28 era
AREA('Modern 2026-07-28 era');
T('RFC-SKILL-1 §9.5.2', 'Modern tools/list carries resultType complete, serverInfo _meta, ttlMs (60000 with the timer off) and cacheScope public.',
  'server/mcp.c (modern results): add resultType, _meta["io.modelcontextprotocol/serverInfo"], ttlMs and cacheScope to tools/list and server/discover.',
  async (c) => {
    const r = (await rpc(await c.srv('main'), 'tools/list', {}, { modern: true })).result;
    eq([r.resultType, r.ttlMs, r.cacheScope], ['complete', 60000, 'public'], '[resultType, ttlMs, cacheScope]');
    eq(r._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'skill-mcp', 'serverInfo');
  });
T('RFC-SKILL-1 §9.5.1', 'MCP-Protocol-Version header differing from the _meta version is -32020 (400).',
  'server/mcp.c (modern checks): compare the header with _meta version first; mismatch -32020, HTTP 400.',
  async (c) => { const r = await rpcErr(await c.srv('main'), 'tools/list', {}, -32020, { modern: true, headers: { 'MCP-Protocol-Version': '2025-11-25' } }); eq(r.status, 400, 'HTTP'); });
T('RFC-SKILL-1 §9.5.1', 'An unsupported modern version is -32022 with data.supported and data.requested.',
  'server/mcp.c: versions other than 2026-07-28 in _meta get -32022 with data {supported, requested}.',
  async (c) => {
    const r = await rpcErr(await c.srv('main'), 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } }, -32022, { modern: true, headers: { 'MCP-Protocol-Version': '2099-01-01' } });
    expect(Array.isArray(r.json.error.data?.supported) && r.json.error.data?.requested === '2099-01-01', r.json.error.data, 'data.supported list and data.requested "2099-01-01"');
  });
T('RFC-SKILL-1 §9.5.1', 'Mcp-Method differing from the method is -32020.',
  'server/mcp.c: compare the Mcp-Method header with the JSON method.',
  async (c) => { await rpcErr(await c.srv('main'), 'tools/list', {}, -32020, { modern: true, headers: { 'Mcp-Method': 'prompts/list' } }); });
T('RFC-SKILL-1 §9.5.1', 'Mcp-Name differing from params.name on tools/call is -32020.',
  'server/mcp.c: for tools/call and prompts/get compare Mcp-Name with params.name.',
  async (c) => { await rpcErr(await c.srv('main'), 'tools/call', { name: 'list_skills', arguments: {} }, -32020, { modern: true, headers: { 'Mcp-Name': 'load_skill' } }); });
T('RFC-SKILL-1 §9.5.1', 'A base64-encoded Mcp-Name (`=?base64?...?=`) is decoded and accepted.',
  'server/mcp.c: decode =?base64?X?= header values before comparing.',
  async (c) => { const enc = `=?base64?${Buffer.from('list_skills').toString('base64')}?=`; const r = await rpc(await c.srv('main'), 'tools/call', { name: 'list_skills', arguments: {} }, { modern: true, headers: { 'Mcp-Name': enc } }); expect(r.result && !r.result.isError, r, 'a result'); });
T('RFC-SKILL-1 §9.5.1', 'clientCapabilities that is not an object is -32602 (400).',
  'server/mcp.c: check _meta["io.modelcontextprotocol/clientCapabilities"] is an object.',
  async (c) => { const r = await rpcErr(await c.srv('main'), 'tools/list', { _meta: { 'io.modelcontextprotocol/clientCapabilities': 'yes' } }, -32602, { modern: true }); eq(r.status, 400, 'HTTP'); });
T('RFC-SKILL-1 §9.2.2, §9.3.3', 'On the modern era an unknown or legacy-only method (initialize) is -32601 with HTTP 404.',
  'server/mcp.c: modern-era -32601 answers use HTTP 404; initialize/ping are legacy-only.',
  async (c) => { const s = await c.srv('main'); const r = await rpcErr(s, 'no/such', {}, -32601, { modern: true }); eq(r.status, 404, 'HTTP'); await rpcErr(s, 'initialize', { protocolVersion: MODERN }, -32601, { modern: true }); });
T('RFC-SKILL-1 §9.5.3', '`server/discover` (both eras) lists the three supported versions, capabilities and instructions.',
  'server/mcp.c (server/discover): return supportedVersions [2025-06-18, 2025-11-25, 2026-07-28], capabilities, instructions.',
  async (c) => {
    const s = await c.srv('main');
    for (const modern of [false, true]) {
      const r = (await rpc(s, 'server/discover', {}, { modern })).result;
      for (const v of ['2025-06-18', '2025-11-25', '2026-07-28']) expect(r?.supportedVersions?.includes(v), r?.supportedVersions, `supportedVersions with ${v} (modern=${modern})`);
      expect(r.capabilities && r.instructions, r, 'capabilities and instructions');
    }
  });

// --------------------------------------------------------------------- errors
AREA('Errors');
T('RFC-SKILL-1 §4.4.1', 'An unknown tool name is -32602 with data.name, not a tool error.',
  'server/tools.c (dispatch): unknown tools answer JSON-RPC -32602 with data.name.',
  async (c) => { const r = await rpcErr(await c.srv('main'), 'tools/call', { name: 'nope_tool', arguments: {} }, -32602); eq(r.json.error.data?.name, 'nope_tool', 'data.name'); });
T('RFC-SKILL-1 §4.4.1', 'tools/call without a string name, or with array arguments, is -32602.',
  'server/tools.c: validate params.name (string, no NUL) and params.arguments (object or null).',
  async (c) => { const s = await c.srv('main'); await rpcErr(s, 'tools/call', { arguments: {} }, -32602); await rpcErr(s, 'tools/call', { name: 'list_skills', arguments: [1] }, -32602); });
T('RFC-SKILL-1 §4.3.3', 'An unknown argument is a tool error `Unknown argument \'x\'. This tool takes: ...`.',
  'server/tools.c (argument checks): refuse members not in the input schema with that message.',
  async (c) => { const t = toolError(await tool(await c.srv('main'), 'list_skills', { bogus: 1 })); has(t, "Unknown argument 'bogus'"); });
T('RFC-SKILL-1 §4.3.3', 'A wrong-typed argument is a tool error naming it.',
  'server/tools.c: a member of the wrong type must be refused with a message naming the argument.',
  async (c) => { const t = toolError(await tool(await c.srv('main'), 'list_skills', { limit: 'five' })); has(t, 'limit'); });
T('RFC-SKILL-1 §4.3.3, §5.2.1', 'Integer arguments accept 5.0; out-of-range (0) is refused.',
  'server/tools.c: accept whole-valued numbers for integers; enforce limit 1..500.',
  async (c) => { const s = await c.srv('main'); okResult(await tool(s, 'list_skills', { limit: 2.0 })); has(toolError(await tool(s, 'list_skills', { limit: 0 })), 'limit'); });
T('RFC-SKILL-1 §4.3.3', 'Null arguments mean {} and a null optional argument is treated as absent.',
  'server/tools.c: treat arguments null as {} and optional members set to null as absent.',
  async (c) => { const s = await c.srv('main'); okResult(await tool(s, 'list_skills', null)); okResult(await tool(s, 'list_skills', { query: null, cursor: null })); });
T('RFC-SKILL-1 §4.2.1', 'A successful result has exactly one text block whose JSON equals structuredContent.',
  'server/tools.c (result building): emit structuredContent and one {type:"text"} block with the same compact JSON.',
  async (c) => { const r = await tool(await c.srv('main'), 'load_skill', { name: 'gamma' }); okResult(r); eq(r.content.length, 1, 'content blocks'); eq(JSON.parse(r.content[0].text), r.structuredContent, 'text JSON'); });

// ------------------------------------------------------------ tools/list schemas
AREA('tools/list schemas');
const TOOLS = ['list_skills', 'load_skill', 'read_skill_file', 'skill_server_stats', 'reload_skills', 'run_skill_script'];
T('RFC-SKILL-1 §4.1.1', 'tools/list lists the six tools in order, each with name, title, description, inputSchema, outputSchema, annotations.',
  'server/tools.c (tool table): keep this order and fill every member.',
  async (c) => {
    const t = (await rpc(await c.srv('main'), 'tools/list', {})).result.tools;
    eq(t.map((x) => x.name), TOOLS, 'tool names');
    for (const x of t) for (const k of ['title', 'description', 'inputSchema', 'outputSchema', 'annotations']) expect(x[k] !== undefined, `${x.name} lacks ${k}`, `${k} present`);
  });
T('RFC-SKILL-1 §4.1.2', 'Annotations: read tools readOnly+idempotent; reload/run not; destructive/openWorld only for run_skill_script.',
  'server/tools.c (annotations): set readOnlyHint/idempotentHint/destructiveHint/openWorldHint as §4.1.2 lists.',
  async (c) => {
    const t = (await rpc(await c.srv('main'), 'tools/list', {})).result.tools;
    for (const x of t) {
      const ro = ['list_skills', 'load_skill', 'read_skill_file', 'skill_server_stats'].includes(x.name); const run = x.name === 'run_skill_script';
      eq([x.annotations.title, x.annotations.readOnlyHint, x.annotations.idempotentHint, x.annotations.destructiveHint, x.annotations.openWorldHint], [x.title, ro, ro, run, run], `${x.name} annotations [title, ro, idem, destr, open]`);
    }
  });
T('RFC-SKILL-1 §5.1.1', 'Every inputSchema/outputSchema equals spec/schemas/<tool>.*.json minus $schema and $id.',
  'server/tools.c schemas or spec/schemas/*.json: make them identical (descriptions included).',
  async (c) => {
    const t = (await rpc(await c.srv('main'), 'tools/list', {})).result.tools;
    for (const x of t) for (const kind of ['input', 'output']) {
      const f = JSON.parse(fs.readFileSync(path.join(SCHEMAS, `${x.name}.${kind}.json`), 'utf8')); delete f.$schema; delete f.$id;
      eq(x[`${kind}Schema`], f, `${x.name} ${kind}Schema`);
    }
  });
T('RFC-SKILL-1 §4.1.1', 'A cursor on tools/list is refused with -32602.',
  'server/mcp.c (tools/list): the list has one page; any cursor is -32602.',
  async (c) => { await rpcErr(await c.srv('main'), 'tools/list', { cursor: 'x' }, -32602); });
T('RFC-SKILL-1 §4.1.1, §4.4.1', 'With --no-scripts, run_skill_script is not listed and calling it is -32602.',
  'server/tools.c: under --no-scripts drop run_skill_script from tools/list and treat it as an unknown tool.',
  async (c) => { const s = await c.srv('noscripts'); const t = (await rpc(s, 'tools/list', {})).result.tools; eq(t.map((x) => x.name), TOOLS.slice(0, 5), 'tools'); await rpcErr(s, 'tools/call', { name: 'run_skill_script', arguments: { name: 'alpha', script: 'hello.sh' } }, -32602); });
T('RFC-SKILL-1 §4.1.3', 'With --max-result-chars above 48000 every tool carries _meta["anthropic/maxResultSizeChars"].',
  'server/tools.c: add _meta {"anthropic/maxResultSizeChars": N} to every tool when N > 48000.',
  async (c) => { const t = (await rpc(await c.srv('noscripts'), 'tools/list', {})).result.tools; for (const x of t) eq(x._meta?.['anthropic/maxResultSizeChars'], 60000, `${x.name} _meta`); });

// ---------------------------------------------------------------- list_skills
AREA('list_skills');
T('RFC-SKILL-1 §5.2.2, §3.2, §3.5', 'Without query, skills come in qualified-name order; teams nest one level; hidden, too-deep and broken skills are absent.',
  'server/discovery.c + search.c: index ROOT/skill and ROOT/team/skill only, skip dot/node_modules names, sort by qualified name.',
  async (c) => {
    const r = okResult(await tool(await c.srv('main'), 'list_skills', { limit: 500 }));
    eq(r.skills.map((s) => s.qualified_name ?? s.name), ['acme/billing', 'acme/invoices', 'alpha', 'beta', 'finance/billing', 'gamma', 'hooked', 'mismatch', 'mutable'], 'qualified names');
    eq(r.total, 9, 'total');
  });
T('RFC-SKILL-1 §3.4.1', 'An earlier root wins over a later one holding the same qualified name.',
  'server/discovery.c (shadowing): keep the first root\'s skill and report the later one as a warning.',
  async (c) => { const r = okResult(await tool(await c.srv('main'), 'list_skills', { query: 'alpha' })); const a = r.skills.find((s) => s.name === 'alpha'); expect(a && !a.description.includes('SHADOWED'), a, 'alpha from rootA'); });
T('RFC-SKILL-1 §5.2.4, §2.3', 'Cards: tags list keeps strings and converts numbers; string tags split on commas; version shown only when a string.',
  'server/frontmatter.c / skills.c (cards): tags and version as the §2.3 table says.',
  async (c) => {
    const r = okResult(await tool(await c.srv('main'), 'list_skills', { limit: 500 }));
    const a = r.skills.find((s) => s.name === 'alpha'), b = r.skills.find((s) => s.name === 'beta');
    eq([a.tags, a.version], [['data', 'csv', '42'], '1.2.0'], 'alpha [tags, version]');
    eq([b.tags, b.version], [['ops', 'deploy'], undefined], 'beta [tags, version]');
  });
T('RFC-SKILL-1 §5.2.2', 'With query, only matching skills are returned, ranked by relevance.',
  'server/search.c (BM25F): return only matches, best first.',
  async (c) => { const r = okResult(await tool(await c.srv('main'), 'list_skills', { query: 'invoices' })); expect(r.skills[0]?.qualified_name === 'acme/invoices' && r.total === r.skills.length && r.total < 9, r.skills.map((s) => s.qualified_name ?? s.name), 'acme/invoices first, only matches'); });
T('RFC-SKILL-1 §5.2.3', 'tags filter keeps skills with every tag, case-insensitively.',
  'server/search.c: compare tags case-insensitively and require all of them.',
  async (c) => { const s = await c.srv('main'); const r = okResult(await tool(s, 'list_skills', { tags: ['DATA', 'Csv'] })); eq(r.skills.map((x) => x.name), ['alpha'], 'names'); const r2 = okResult(await tool(s, 'list_skills', { tags: [] })); eq(r2.total, 9, 'total with empty tags'); });
T('RFC-SKILL-1 §5.2.4, §5.2.5', 'Paging: limit gives next_cursor; following it covers all skills without overlap; no next_cursor on the last page.',
  'server/search.c (paging): next_cursor = offset after the page; omit it on the last page.',
  async (c) => {
    const s = await c.srv('main'); let cursor; const seen = [];
    for (let i = 0; i < 10; i++) { const r = okResult(await tool(s, 'list_skills', { limit: 4, ...(cursor ? { cursor } : {}) })); seen.push(...r.skills.map((x) => x.qualified_name ?? x.name)); cursor = r.next_cursor; eq(r.total, 9, 'total'); if (!cursor) break; expect(typeof cursor === 'string', cursor, 'string cursor'); }
    eq(seen.length, 9, 'cards seen'); eq(new Set(seen).size, 9, 'distinct cards');
  });
T('RFC-SKILL-1 §5.2.5', 'A cursor the server did not issue is a tool error; an offset past the end gives an empty page.',
  'server/search.c: accept only decimal offsets ≤ 100000000; larger/garbage cursors are tool errors.',
  async (c) => { const s = await c.srv('main'); toolError(await tool(s, 'list_skills', { cursor: 'abc' })); const r = okResult(await tool(s, 'list_skills', { cursor: '500' })); eq(r.skills, [], 'skills past the end'); });

// ----------------------------------------------------------------- load_skill
AREA('load_skill');
T('RFC-SKILL-1 §5.3.2, §5.3.3', 'load_skill returns the body without frontmatter and every heading (ATX and setext, not inside fences).',
  'server/markdown.c (heading scan): count ATX and setext headings, skip fenced blocks; server/tools.c: strip frontmatter.',
  async (c) => {
    const r = okResult(await tool(await c.srv('main'), 'load_skill', { name: 'alpha' }));
    expect(!r.content.includes('description:') && r.content.startsWith('# Alpha'), r.content.slice(0, 80), 'body starting "# Alpha", no frontmatter');
    eq(r.sections, [{ title: 'Alpha', level: 1 }, { title: 'Usage', level: 2 }, { title: 'Details', level: 3 }, { title: 'Setext Heading', level: 2 }, { title: 'Notes', level: 2 }], 'sections');
    eq(r.section, undefined, 'section member');
  });
T('RFC-SKILL-1 §5.3.3', '`section` matches case-insensitively and runs to the next heading of the same or higher level.',
  'server/markdown.c (section lookup): ignore case, leading # and blanks; stop at a heading of level ≤ the match.',
  async (c) => { const r = okResult(await tool(await c.srv('main'), 'load_skill', { name: 'alpha', section: '  ## usage ' })); has(r.content, 'Deep details', 'content'); expect(!r.content.includes('setext body') && !r.content.includes('Final notes'), r.content, 'content ending before "Setext Heading"'); expect(typeof r.section === 'string', r.section, 'section member'); });
T('RFC-SKILL-1 §5.3.3', 'An unknown section is a tool error listing the headings.',
  'server/tools.c (load_skill): on no match, list the existing headings in the error text.',
  async (c) => { const t = toolError(await tool(await c.srv('main'), 'load_skill', { name: 'alpha', section: 'Nope' })); has(t, 'Usage'); has(t, 'Notes'); });
T('RFC-SKILL-1 §5.3.4, §2.4', '`scripts` lists every file under scripts/ with the declared execution values (not bounded), `default` applied.',
  'server/tools.c (load_skill scripts): lookup full path then path under scripts/, fall back to default; report declared values.',
  async (c) => {
    const r = okResult(await tool(await c.srv('main'), 'load_skill', { name: 'alpha' }));
    const by = Object.fromEntries(r.scripts.map((s) => [s.path, s]));
    eq(by['scripts/hello.sh'], { path: 'scripts/hello.sh', description: 'says hello', timeout: 5, stall_timeout: 10 }, 'hello.sh');
    eq([by['scripts/stall.sh']?.timeout, by['scripts/stall.sh']?.stall_timeout], [20, 1], 'stall.sh [timeout, stall]');
    eq(by['scripts/huge.sh']?.timeout, 9999, 'huge.sh declared timeout');
    const paths = r.scripts.map((s) => s.path); eq([...paths].sort(), paths, 'path order'); expect(paths.includes('scripts/sub/inner.sh'), paths, 'scripts/sub/inner.sh listed');
  });
T('RFC-SKILL-1 §5.3.4, §3.5, §3.6.2', '`files` excludes SKILL.md, dot names, node_modules, __pycache__ and links leaving the skill; keeps links inside.',
  'server/discovery.c (file walk): skip ignored names, drop symlinks leaving the skill, keep in-skill symlinks as files.',
  async (c) => {
    const r = okResult(await tool(await c.srv('main'), 'load_skill', { name: 'alpha' }));
    const f = r.files.map((x) => x.path);
    for (const p of ['references/guide.md', 'link-in.md', 'assets/bin.dat']) expect(f.includes(p), f, `files with ${p}`);
    for (const p of ['SKILL.md', '.env', '.hidden/secret.txt', 'node_modules/x.js', '__pycache__/x.pyc', 'link-out.txt']) expect(!f.includes(p), f, `files without ${p}`);
    eq(r.files.find((x) => x.path === 'references/guide.md').size, 23, 'guide.md size');
  });
T('RFC-SKILL-1 §3.3.2', 'A bare name shared by two teams fails listing both qualified names.',
  'server/skills.c (name resolution): "\'billing\' names several skills: acme/billing, finance/billing. Call again with the qualified name."',
  async (c) => { const t = toolError(await tool(await c.srv('main'), 'load_skill', { name: 'billing' })); has(t, 'acme/billing'); has(t, 'finance/billing'); });
T('RFC-SKILL-1 §3.3.1, §3.3.2', 'Qualified names resolve, and a unique bare team name resolves to its skill.',
  'server/skills.c: exact qualified name first, then a unique bare name.',
  async (c) => { const s = await c.srv('main'); eq(okResult(await tool(s, 'load_skill', { name: 'acme/billing' })).qualified_name, 'acme/billing', 'qualified'); eq(okResult(await tool(s, 'load_skill', { name: 'invoices' })).qualified_name, 'acme/invoices', 'bare'); });
T('RFC-SKILL-1 §3.3.3', 'An unknown name suggests the closest matches.',
  'server/skills.c: on no match, name up to 3 closest names (edit distance), else point at list_skills.',
  async (c) => { has(toolError(await tool(await c.srv('main'), 'load_skill', { name: 'alpah' })), 'alpha'); });
T('RFC-SKILL-1 §3.3.3', 'A name over 200 bytes is refused without lookup.',
  'server/skills.c: refuse names > 200 bytes or with NUL before resolving.',
  async (c) => { toolError(await tool(await c.srv('main'), 'load_skill', { name: 'a'.repeat(300) })); });
T('RFC-SKILL-1 §3.8.1', 'A broken skill (no description, duplicate key) is not served; the others are.',
  'server/frontmatter.c + discovery.c: mark the skill broken (error problem) and leave it out of the snapshot.',
  async (c) => { const s = await c.srv('main'); toolError(await tool(s, 'load_skill', { name: 'broken' })); toolError(await tool(s, 'load_skill', { name: 'badyaml' })); okResult(await tool(s, 'load_skill', { name: 'gamma' })); });

// ------------------------------------------------------------- read_skill_file
AREA('read_skill_file');
T('RFC-SKILL-1 §5.4.3', 'A text file comes back as utf-8 with size and truncated false.',
  'server/tools.c (read_skill_file): return {name, path, size, encoding:"utf-8", content, truncated:false}.',
  async (c) => { const r = okResult(await tool(await c.srv('main'), 'read_skill_file', { name: 'alpha', path: 'references/guide.md' })); eq([r.name, r.path, r.size, r.encoding, r.content, r.truncated], ['alpha', 'references/guide.md', 23, 'utf-8', '# Guide\nSome guidance.\n', false], 'result'); });
T('RFC-SKILL-1 §5.4.3', 'A binary file (NUL bytes) comes back as base64.',
  'server/tools.c: bytes that are not UTF-8 or hold NUL are returned base64 with encoding "base64".',
  async (c) => { const r = okResult(await tool(await c.srv('main'), 'read_skill_file', { name: 'alpha', path: 'assets/bin.dat' })); eq([r.encoding, r.content], ['base64', Buffer.from([0, 1, 2, 255, 254, 0, 65]).toString('base64')], '[encoding, content]'); });
T('RFC-SKILL-1 §5.4.1, §5.4.3', 'max_bytes cuts the content and sets truncated; size is the whole file.',
  'server/tools.c: read at most max_bytes, report size of the whole file and truncated:true.',
  async (c) => { const r = okResult(await tool(await c.srv('main'), 'read_skill_file', { name: 'alpha', path: 'assets/long.txt', max_bytes: 10 })); eq([r.content, r.size, r.truncated], ['abcdefghij', 1000, true], '[content, size, truncated]'); });
T('RFC-SKILL-1 §5.4.2', 'A missing file or a folder is a tool error listing the skill\'s files.',
  'server/tools.c: on ENOENT/EISDIR list up to 30 of the skill\'s files in the error.',
  async (c) => { const s = await c.srv('main'); has(toolError(await tool(s, 'read_skill_file', { name: 'alpha', path: 'nope.md' })), 'references/guide.md'); toolError(await tool(s, 'read_skill_file', { name: 'alpha', path: 'references' })); });
T('RFC-SKILL-1 §3.6.2', 'A symlink staying inside the skill is served as a regular file.',
  'server/jail.c: openat2 RESOLVE_BENEATH lets in-skill links through.',
  async (c) => { const r = okResult(await tool(await c.srv('main'), 'read_skill_file', { name: 'alpha', path: 'link-in.md' })); eq(r.content, '# Guide\nSome guidance.\n', 'content'); });
T('RFC-SKILL-1 §5.4.1', 'max_bytes over 1048576 is refused.',
  'server/tools.c: range-check max_bytes 1..1048576.',
  async (c) => { has(toolError(await tool(await c.srv('main'), 'read_skill_file', { name: 'alpha', path: 'references/guide.md', max_bytes: 2000000 })), 'max_bytes'); });

// ----------------------------------------------------------------------- jail
AREA('Path jail');
for (const [p, why] of [['../beta/SKILL.md', 'a .. component'], ['/etc/passwd', 'an absolute path'], ['.env', 'a dotfile'], ['.hidden/secret.txt', 'a dot folder'], ['link-out.txt', 'a symlink leaving the skill'], ['references\\guide.md', 'a backslash'], ['node_modules/x.js', 'node_modules'], ['', 'an empty path']]) {
  T('RFC-SKILL-1 §10.2.1', `read_skill_file refuses ${why} (${JSON.stringify(p)}).`,
    'server/jail.c (path check): refuse empty, absolute, "..", dot components, backslash, NUL, __pycache__/node_modules; open with openat2 RESOLVE_BENEATH.',
    async (c) => { const r = await tool(await c.srv('main'), 'read_skill_file', { name: 'alpha', path: p }); const t = toolError(r); expect(!t.includes('TOP-SECRET') && !t.includes('root:'), t, 'no file content leaked'); });
}
T('RFC-SKILL-1 §10.2.1, §9.10.2', 'resources/read refuses a traversing URI with -32602 Resource not found.',
  'server/resources.c: pass URI paths through the jail; answer -32602 "Resource not found" with data.uri.',
  async (c) => { const r = await rpcErr(await c.srv('main'), 'resources/read', { uri: 'skill://alpha/../beta/SKILL.md' }, -32602); expect(r.json.error.data?.uri, r.json.error, 'data.uri'); });
T('RFC-SKILL-1 §10.2.1', 'resources/read refuses a percent-encoded traversal and a link leaving the skill.',
  'server/resources.c: decode percent-encoding before the jail check; symlinks leaving the skill are refused at open.',
  async (c) => { const s = await c.srv('main'); await rpcErr(s, 'resources/read', { uri: 'skill://alpha/%2E%2E/beta/SKILL.md' }, -32602); await rpcErr(s, 'resources/read', { uri: 'skill://alpha/link-out.txt' }, -32602); });

// -------------------------------------------------------- resources & aliases
AREA('Resources & aliases');
T('RFC-SKILL-1 §9.10.1', 'resources/list lists each served skill\'s SKILL.md as skill://<qualified-name>/SKILL.md.',
  'server/resources.c (resources/list): one entry per skill, 100 per page.',
  async (c) => { const r = (await rpc(await c.srv('main'), 'resources/list', {})).result; const u = r.resources.map((x) => x.uri); for (const x of ['skill://alpha/SKILL.md', 'skill://acme/billing/SKILL.md']) expect(u.includes(x), u, `list with ${x}`); expect(!u.some((x) => x.includes('broken')), u, 'no broken skill'); });
T('RFC-SKILL-1 §9.10.1', 'An invalid resources/list cursor is -32602.',
  'server/resources.c: only numeric cursors; others -32602.',
  async (c) => { await rpcErr(await c.srv('main'), 'resources/list', { cursor: 'zz' }, -32602); });
T('RFC-SKILL-1 §9.10.1', 'resources/templates/list gives skill://{skill}/SKILL.md and skill://{skill}/{+path}.',
  'server/resources.c (templates): return exactly these two URI templates.',
  async (c) => { const r = (await rpc(await c.srv('main'), 'resources/templates/list', {})).result; eq(r.resourceTemplates.map((t) => t.uriTemplate).sort(), ['skill://{skill}/SKILL.md', 'skill://{skill}/{+path}'], 'templates'); });
T('RFC-SKILL-1 §9.10.2', 'resources/read of SKILL.md returns the whole file, frontmatter included, as text.',
  'server/resources.c (resources/read): serve SKILL.md whole as text.',
  async (c) => { const r = (await rpc(await c.srv('main'), 'resources/read', { uri: 'skill://alpha/SKILL.md' })).result; const t = r.contents[0].text; expect(t.startsWith('---\nname: alpha') && t.includes('# Alpha'), t.slice(0, 60), 'frontmatter and body'); });
T('RFC-SKILL-1 §9.10.2', 'Aliases skill://<name> and skill://<name>/files/<path> are served.',
  'server/resources.c: map skill://NAME to its SKILL.md and skill://NAME/files/P to P.',
  async (c) => {
    const s = await c.srv('main');
    has((await rpc(s, 'resources/read', { uri: 'skill://alpha' })).result?.contents?.[0]?.text, 'name: alpha', 'skill://alpha');
    eq((await rpc(s, 'resources/read', { uri: 'skill://alpha/files/references/guide.md' })).result?.contents?.[0]?.text, '# Guide\nSome guidance.\n', 'files/ alias');
  });
T('RFC-SKILL-1 §9.10.2', 'A binary file is a base64 blob with a MIME type.',
  'server/resources.c: non-text files go out as blob (base64) with mimeType from the extension.',
  async (c) => { const r = (await rpc(await c.srv('main'), 'resources/read', { uri: 'skill://alpha/assets/bin.dat' })).result.contents[0]; eq(r.blob, Buffer.from([0, 1, 2, 255, 254, 0, 65]).toString('base64'), 'blob'); expect(typeof r.mimeType === 'string', r, 'mimeType'); });
T('RFC-SKILL-1 §9.10.2', 'Percent-encoding in the URI is decoded.',
  'server/resources.c: percent-decode the path before lookup.',
  async (c) => { const r = (await rpc(await c.srv('main'), 'resources/read', { uri: 'skill://alpha/references/guide%2Emd' })).result; eq(r?.contents?.[0]?.text, '# Guide\nSome guidance.\n', 'text'); });
T('RFC-SKILL-1 §9.10.2', 'Unknown skill, unknown file, or a non-skill:// URI is -32602 Resource not found with data.uri.',
  'server/resources.c: -32602 "Resource not found" with data.uri for each case.',
  async (c) => { const s = await c.srv('main'); for (const uri of ['skill://nope/SKILL.md', 'skill://alpha/none.txt', 'file:///etc/passwd']) { const r = await rpcErr(s, 'resources/read', { uri }, -32602); eq(r.json.error.data?.uri, uri, 'data.uri'); } });

// ------------------------------------------------- Skills extension & prompts
AREA('Skills extension & prompts');
T('RFC-SKILL-1 §9.12.1, §2.3.1', 'skills/list entries carry uri, all frontmatter fields (license, metadata passed through) and resources with SKILL.md first.',
  'server/skillsext.c (skills/list): pass every frontmatter field through; list SKILL.md first then every served file.',
  async (c) => {
    const r = (await rpc(await c.srv('main'), 'skills/list', {})).result;
    const a = r.skills.find((e) => e.uri === 'skill://alpha/SKILL.md');
    expect(a, r.skills.map((e) => e.uri), 'an alpha entry');
    eq([a.frontmatter.license, a.frontmatter.metadata], ['MIT', { owner: 'qa' }], 'frontmatter [license, metadata]');
    eq(a.resources[0].uri, 'skill://alpha/SKILL.md', 'first resource');
    expect(!a.resources.some((x) => x.uri.includes('link-out') || x.uri.includes('.env')), a.resources.map((x) => x.uri), 'no jailed files');
  });
T('RFC-SKILL-1 §9.12.1', 'Each resource digest is sha256 of exactly the bytes resources/read serves.',
  'server/skillsext.c: digest = "sha256:" + hex over the file bytes; size = byte count.',
  async (c) => {
    const s = await c.srv('main'); const r = (await rpc(s, 'skills/list', {})).result;
    const a = r.skills.find((e) => e.uri === 'skill://alpha/SKILL.md');
    for (const res of a.resources.filter((x) => /SKILL\.md$|guide\.md$|bin\.dat$/.test(x.uri))) {
      const c0 = (await rpc(s, 'resources/read', { uri: res.uri })).result.contents[0];
      const bytes = c0.blob !== undefined ? Buffer.from(c0.blob, 'base64') : Buffer.from(c0.text, 'utf8');
      eq([res.digest, res.size], ['sha256:' + sha(bytes), bytes.length], `${res.uri} [digest, size]`);
    }
  });
T('RFC-SKILL-1 §9.12.3', 'A skill whose frontmatter name differs from its folder is omitted and reported in _meta omitted.',
  'server/skillsext.c: leave such skills out and add {uri, reason} to _meta["io.modelcontextprotocol.skills/omitted"].',
  async (c) => { const r = (await rpc(await c.srv('main'), 'skills/list', {})).result; expect(!r.skills.some((e) => e.uri.includes('mismatch')), r.skills.map((e) => e.uri), 'mismatch absent'); const om = r._meta?.['io.modelcontextprotocol.skills/omitted'] ?? []; expect(om.some((o) => o.uri.includes('mismatch') && o.reason), om, 'omitted entry for mismatch'); });
T('RFC-SKILL-1 §9.12.4', 'skills/get returns {skill: entry} for a served skill, omitted ones included.',
  'server/skillsext.c (skills/get): look up by canonical SKILL.md URI for every served skill.',
  async (c) => { const r = await rpc(await c.srv('main'), 'skills/get', { uri: 'skill://mismatch/SKILL.md' }); eq(r.result?.skill?.uri, 'skill://mismatch/SKILL.md', 'skill.uri'); });
T('RFC-SKILL-1 §9.12.4', 'resources/directory/read lists a folder\'s children in name order, folders as inode/directory.',
  'server/skillsext.c (directory/read): direct children sorted by name; folders mimeType "inode/directory".',
  async (c) => {
    const r = (await rpc(await c.srv('main'), 'resources/directory/read', { uri: 'skill://alpha/' })).result;
    const list = r.resources ?? r.entries ?? r.contents ?? [];
    const names = list.map((x) => x.name); eq([...names].sort(), names, 'name order');
    const refs = list.find((x) => x.name === 'references'); eq(refs?.mimeType, 'inode/directory', 'references mimeType');
    expect(!names.includes('.env') && !names.includes('link-out.txt'), names, 'no jailed entries');
  });
T('RFC-SKILL-1 §9.12.4', 'A traversing directory URI is -32602.',
  'server/skillsext.c: run directory URIs through the jail.',
  async (c) => { await rpcErr(await c.srv('main'), 'resources/directory/read', { uri: 'skill://alpha/../' }, -32602); });
T('RFC-SKILL-1 §9.12.5', 'skills/list carries resultType, ttlMs and cacheScope on the legacy era too.',
  'server/skillsext.c: add resultType/ttlMs/cacheScope on both eras.',
  async (c) => { const r = (await rpc(await c.srv('main'), 'skills/list', {})).result; eq([r.resultType, r.ttlMs, r.cacheScope], ['complete', 60000, 'public'], '[resultType, ttlMs, cacheScope]'); });
T('RFC-SKILL-1 §9.12.2', 'Digests are never stale: editing a file changes its digest at once.',
  'server/skillsext.c: re-fstat each file when an entry is served and re-hash when mtime or size changed.',
  async (c) => {
    const s = await c.srv('main'); const get = async () => (await rpc(s, 'skills/get', { uri: 'skill://mutable/SKILL.md' })).result.skill.resources.find((x) => x.uri.endsWith('notes.txt'));
    const before = await get(); fs.writeFileSync(path.join(c.fx.A, 'mutable/notes.txt'), 'version two, longer\n'); const after = await get();
    eq(after.digest, 'sha256:' + sha(Buffer.from('version two, longer\n')), 'digest after edit'); expect(before.digest !== after.digest, before.digest, 'a new digest');
  });
T('RFC-SKILL-1 §9.11.1, §2.3.1', 'prompts/list: one prompt per skill by qualified name, with an optional `task` argument and the frontmatter title.',
  'server/mcp.c (prompts/list): name = qualified name, arguments [{name:"task", required:false}], title from a string `title`.',
  async (c) => { const r = (await rpc(await c.srv('main'), 'prompts/list', {})).result; const a = r.prompts.find((p) => p.name === 'alpha'); eq(a?.arguments?.map((x) => [x.name, !!x.required]), [['task', false]], 'alpha arguments'); eq(a.title, 'Alpha Title', 'title'); expect(r.prompts.some((p) => p.name === 'acme/billing'), r.prompts.map((p) => p.name), 'acme/billing listed'); });
T('RFC-SKILL-1 §9.11.1', 'prompts/get returns the body as one user message with "\\n\\nTask: <task>" appended.',
  'server/mcp.c (prompts/get): one user message; append "\\n\\nTask: " + task when non-empty.',
  async (c) => { const r = (await rpc(await c.srv('main'), 'prompts/get', { name: 'gamma', arguments: { task: 'compute dose' } })).result; eq(r.messages.length, 1, 'messages'); eq(r.messages[0].role, 'user', 'role'); const t = r.messages[0].content.text; expect(t.startsWith('# Gamma') && t.endsWith('\n\nTask: compute dose'), t, 'body + "\\n\\nTask: compute dose"'); });
T('RFC-SKILL-1 §9.11.1', 'prompts/get with an ambiguous or unknown name is -32602.',
  'server/mcp.c (prompts/get): resolve names as §3.3; failures are -32602.',
  async (c) => { const s = await c.srv('main'); await rpcErr(s, 'prompts/get', { name: 'billing' }, -32602); await rpcErr(s, 'prompts/get', { name: 'nope' }, -32602); });

// --------------------------------------------------- discovery index & export
AREA('Discovery index & export');
const IDX = '/.well-known/agent-skills/index.json';
T('RFC-SKILL-1 §9.13.1', 'GET index.json is the v0.2.0 index: $schema and the skills/list skills in qualified-name order with name, description, type, url, digest.',
  'server/manifest.c (index): emit {$schema, skills:[{name, description, type, url, digest}]} in qualified-name order.',
  async (c) => {
    const r = await GET(await c.srv('main'), IDX); eq(r.status, 200, 'status'); const j = JSON.parse(r.text);
    expect(typeof j.$schema === 'string', j.$schema, '$schema string');
    const urls = j.skills.map((s) => s.url); expect(urls.includes('alpha.tar.gz') && urls.includes('acme/billing/SKILL.md'), urls, 'alpha.tar.gz and acme/billing/SKILL.md');
    for (const s of j.skills) for (const k of ['name', 'description', 'type', 'url', 'digest']) expect(s[k] !== undefined, s, `${k} present`);
    expect(!urls.some((u) => u.includes('mismatch')), urls, 'mismatch left out (as in skills/list)');
  });
T('RFC-SKILL-1 §9.13.1', 'A skill-md artifact is served as text/markdown with a matching digest and no Content-Encoding.',
  'server/manifest.c: serve SKILL.md bytes as "text/markdown; charset=utf-8", never compressed; digest over those bytes.',
  async (c) => {
    const s = await c.srv('main'); const j = JSON.parse((await GET(s, IDX)).text); const e = j.skills.find((x) => x.url === 'gamma/SKILL.md');
    eq(e?.type, 'skill-md', 'type');
    const r = await GET(s, '/.well-known/agent-skills/gamma/SKILL.md', { 'Accept-Encoding': 'gzip' });
    eq([r.status, r.headers['content-type'], r.headers['content-encoding']], [200, 'text/markdown; charset=utf-8', undefined], '[status, type, encoding]'); eq('sha256:' + sha(r.body), e.digest, 'digest');
  });
T('RFC-SKILL-1 §9.13.1, §9.13.2', 'An archive artifact is a gzip\'d tar (application/gzip) with one top folder, matching its digest, same bytes every time.',
  'server/manifest.c (archive): deterministic pax tar (sorted, mtime 0, uid/gid 0), gzip without name/time.',
  async (c) => {
    const s = await c.srv('main'); const j = JSON.parse((await GET(s, IDX)).text); const e = j.skills.find((x) => x.url === 'alpha.tar.gz');
    eq(e?.type, 'archive', 'type');
    const r1 = await GET(s, '/.well-known/agent-skills/alpha.tar.gz'), r2 = await GET(s, '/.well-known/agent-skills/alpha.tar.gz');
    eq(r1.headers['content-type'], 'application/gzip', 'Content-Type'); eq('sha256:' + sha(r1.body), e.digest, 'digest'); expect(r1.body.equals(r2.body), 'bytes differ', 'identical bytes');
    const tar = zlib.gunzipSync(r1.body); const names = []; for (let o = 0; o + 512 <= tar.length;) { const n = tar.subarray(o, o + 100).toString().replace(/\0.*$/s, ''); if (!n) break; const size = parseInt(tar.subarray(o + 124, o + 136).toString().replace(/\0.*$/s, '').trim() || '0', 8); const typ = String.fromCharCode(tar[o + 156]); if (typ !== 'x' && typ !== 'g') names.push(n); o += 512 + Math.ceil(size / 512) * 512; }
    expect(names.length > 0 && names.every((n) => n.startsWith('alpha/')), names.slice(0, 5), 'entries under alpha/');
    expect(!names.some((n) => n.includes('link-out') || n.includes('.env')), names, 'no jailed files in the archive');
  });
T('RFC-SKILL-1 §9.13.1', 'Other paths under the prefix are 404.',
  'server/manifest.c: unknown paths under /.well-known/agent-skills/ are 404.',
  async (c) => { eq((await GET(await c.srv('main'), '/.well-known/agent-skills/nope.tar.gz')).status, 404, 'status'); });
T('RFC-SKILL-1 §9.13.1, §10.5.1', 'The discovery index passes the Host check (403 for a foreign Host).',
  'server/http.c: apply the Host/Origin check to /.well-known/agent-skills/.',
  async (c) => { eq((await request(await c.srv('main'), { method: 'GET', path: IDX, host: 'evil.example.com' })).status, 403, 'status'); });
T('docs/skills-extension.md "Publishing with export"', '`export` writes the same bytes the server serves for the same tree.',
  'server/manifest.c: share one code path between export and the HTTP handler.',
  async (c) => {
    const s = await c.srv('rootB'); const d = path.join(c.fx.tmp, 'exp3'); eq(runCli(c.bin, ['export', d, '--skills', c.fx.B]).code, 0, 'export exit');
    for (const p of ['index.json', 'alpha/SKILL.md', 'gamma/SKILL.md']) { const r = await GET(s, '/.well-known/agent-skills/' + p); const f = fs.readFileSync(path.join(d, '.well-known/agent-skills', p)); expect(r.body.equals(f), `${p} differs`, `${p} identical`); }
  });

// --------------------------------------------------------------- run_skill_script
AREA('run_skill_script');
T('RFC-SKILL-1 §5.7.4, §5.7.5', 'A script exiting 0 is `ok` with stdout, exit_code 0, request_id r-<16 hex>, the values in effect, isError false.',
  'server/script.c (result): fill every REQUIRED member; status ok when exit 0.',
  async (c) => {
    const r = await run(await c.srv('main'), 'hello.sh', { args: ['a', 'b'] }); const s = okResult(r);
    eq([s.status, s.exit_code, s.stdout, s.timeout, s.stall_timeout, s.truncated], ['ok', 0, 'hello a b\n', 5, 10, false], '[status, exit, stdout, timeout, stall, truncated]');
    expect(/^r-[0-9a-f]{16}$/.test(s.request_id), s.request_id, 'r- + 16 hex'); for (const k of ['stderr', 'duration_ms', 'stdout_bytes', 'stderr_bytes', 'hint']) expect(s[k] !== undefined, k, `${k} present`);
    eq(JSON.parse(textOf(r)), s, 'text JSON');
  });
T('RFC-SKILL-1 §5.7.2', '`script` may be scripts/<path> or a bare file name; a nested scripts path runs too.',
  'server/script.c (script path): map a bare name to scripts/<name>; accept scripts/sub/x.',
  async (c) => { const s = await c.srv('main'); eq(okResult(await run(s, 'scripts/hello.sh')).status, 'ok', 'scripts/hello.sh'); eq(okResult(await run(s, 'scripts/sub/inner.sh')).stdout, 'inner\n', 'scripts/sub/inner.sh'); });
T('RFC-SKILL-1 §5.7.5, §4.3.2', 'A non-zero exit is `failed` with exit_code, output kept, structuredContent and isError together, hint naming the exit code and stderr.',
  'server/script.c: status failed, isError true with structuredContent; hint "exited with 3 ... read stderr".',
  async (c) => { const r = await run(await c.srv('main'), 'fail.sh'); const s = r.structuredContent; eq([r.isError, s?.status, s?.exit_code, s?.stdout, s?.stderr], [true, 'failed', 3, 'partial-out\n', 'something broke\n'], '[isError, status, exit, stdout, stderr]'); has(s.hint, '3', 'hint'); has(s.hint, 'stderr', 'hint'); });
T('RFC-SKILL-1 §5.7.4', 'A script killed by a signal is `failed` with exit_code null and signal SIGSEGV.',
  'server/script.c: on WIFSIGNALED set exit_code null and signal name.',
  async (c) => { const s = (await run(await c.srv('main'), 'segv.sh')).structuredContent; eq([s.status, s.exit_code, s.signal], ['failed', null, 'SIGSEGV'], '[status, exit, signal]'); });
T('RFC-SKILL-1 §6.6.1, §5.7.5', 'A silent script is `stalled` after its stall_timeout with silent_for and a hint quoting the last line and "blocked, not slow".',
  'server/runner.c (stall timer): kill after stall_timeout without output; hint with silence, last line, "blocked, not slow".',
  async (c) => {
    const t0 = Date.now(); const s = (await run(await c.srv('main'), 'stall.sh')).structuredContent; const dt = Date.now() - t0;
    eq([s.status, s.stall_timeout], ['stalled', 1], '[status, stall_timeout]'); expect(typeof s.silent_for === 'number', s.silent_for, 'silent_for number'); expect(dt < 8000, `${dt} ms`, 'ended within a few s');
    has(s.stdout, 'started', 'stdout before the kill'); has(s.hint, 'last words', 'hint'); expect(/blocked/.test(s.hint) && /not slow/.test(s.hint), s.hint, 'hint saying blocked, not slow');
  });
T('RFC-SKILL-1 §6.6.1, §6.7.1, §5.7.5', 'A script running past its timeout is `timeout`, output before the kill returned; hint (≤15 s) says do not retry with more time.',
  'server/runner.c (ceiling): kill at timeout; keep output; hint for ≤15 s "do not retry with a longer timeout; submit and poll".',
  async (c) => { const s = (await run(await c.srv('main'), 'slow.sh')).structuredContent; eq([s.status, s.timeout, s.stall_timeout], ['timeout', 1, 0], '[status, timeout, stall]'); has(s.stdout, 'tick', 'stdout'); expect(/retry|poll/i.test(s.hint), s.hint, 'hint about not retrying with more time'); });
T('RFC-SKILL-1 §6.6.3', 'A caller timeout may only lower the value; ≤ 0 is refused.',
  'server/script.c: min(declared, caller); refuse caller values ≤ 0 as a tool error.',
  async (c) => { const s = await c.srv('main'); const a = okResult(await run(s, 'hello.sh', { timeout: 100 })); eq(a.timeout, 5, 'timeout with caller 100'); const b = okResult(await run(s, 'hello.sh', { timeout: 2, stall_timeout: 3 })); eq([b.timeout, b.stall_timeout], [2, 3], 'lowered'); toolError(await run(s, 'hello.sh', { stall_timeout: 0 })); });
T('RFC-SKILL-1 §6.6.2, §2.4.3', 'A declared timeout above --max-script-timeout is lowered to it; a `mode:` key has no effect.',
  'server/script.c (values in effect): clamp timeout to --max-script-timeout (600).',
  async (c) => { const s = (await run(await c.srv('main'), 'huge.sh')).structuredContent; eq([s.status, s.timeout], ['ok', 600], '[status, timeout]'); });
T('RFC-SKILL-1 §6.7.1', 'Output past --max-output-bytes is drained and counted: truncated true, stdout_bytes the real count.',
  'server/runner.c (output capture): keep up to --max-output-bytes, count the rest, set truncated.',
  async (c) => { const s = (await run(await c.srv('main'), 'huge.sh')).structuredContent; eq([s.truncated, s.stdout_bytes], [true, 2000000], '[truncated, stdout_bytes]'); });
T('RFC-SKILL-1 §6.7.1', 'Invalid UTF-8 is replaced by U+FFFD with utf8_repaired true.',
  'server/runner.c: repair invalid UTF-8 and set utf8_repaired.',
  async (c) => { const s = okResult(await run(await c.srv('main'), 'badutf8.sh')); eq(s.utf8_repaired, true, 'utf8_repaired'); has(s.stdout, '\uFFFD', 'stdout'); expect(s.stdout.startsWith('ok') && s.stdout.endsWith('end'), s.stdout, 'ok...end'); });
T('RFC-SKILL-1 §6.3.1, §6.3.2', 'Scripts see exactly the allowlisted environment: fixed PATH, SKILL_* variables, proxies; no server secrets, no HOOK_*.',
  'server/runner.c (environment): build envp from scratch per §6.3.1; never inherit the server env.',
  async (c) => {
    const s = okResult(await run(await c.srv('main'), 'env.sh')); const env = Object.fromEntries(s.stdout.trim().split('\n').map((l) => [l.split('=')[0], l.slice(l.indexOf('=') + 1)]));
    eq(env.PATH, '/usr/local/bin:/usr/bin:/bin', 'PATH'); eq(env.SKILL_NAME, 'alpha', 'SKILL_NAME'); eq(env.SKILL_DIR, fs.realpathSync(path.join(c.fx.A, 'alpha')), 'SKILL_DIR');
    expect(/^r-[0-9a-f]{16}$/.test(env.SKILL_REQUEST_ID ?? ''), env.SKILL_REQUEST_ID, 'SKILL_REQUEST_ID'); expect(Number(env.SKILL_OUTPUT_BUDGET_BYTES) > 0, env.SKILL_OUTPUT_BUDGET_BYTES, 'SKILL_OUTPUT_BUDGET_BYTES');
    eq(env.HTTP_PROXY, 'http://proxy.example:3128', 'HTTP_PROXY');
    for (const k of ['ACCEPT_SECRET', 'HOOK_ACCEPT']) eq(env[k], undefined, k);
  });
T('RFC-SKILL-1 §6.3.1, §6.4', 'The caller\'s `env` values reach the script.',
  'server/script.c: add the caller env (after checks) to the script environment.',
  async (c) => { const s = okResult(await run(await c.srv('main'), 'env.sh', { env: { MY_TOKEN: 'abc123' } })); has(s.stdout, 'MY_TOKEN=abc123', 'stdout'); });
for (const n of ['LD_PRELOAD', 'ld_preload', 'PATH', 'https_proxy', 'PYTHONPATH', 'BASH_ENV', 'SKILL_NAME', '1BAD']) {
  T('RFC-SKILL-1 §6.5.1, §5.7.3', `A caller env name ${n} is refused and nothing runs.`,
    'server/script.c (env name check): apply the §6.5.1 prefix and exact lists case-insensitively; refuse with a tool error naming the variable.',
    async (c) => { const t = toolError(await run(await c.srv('main'), 'hello.sh', { env: { [n]: 'x' } })); has(t, n); });
}
T('RFC-SKILL-1 §6.2.1', 'Arguments are data (argument vector, no shell).',
  'server/runner.c: execve with argv; never pass through /bin/sh -c.',
  async (c) => { const s = okResult(await run(await c.srv('main'), 'argv.sh', { args: ['$(echo pwned)', 'a b', ';ls'] })); eq(s.stdout, 'arg:[$(echo pwned)]\narg:[a b]\narg:[;ls]\n', 'stdout'); });
T('RFC-SKILL-1 §6.2.2', '`stdin` is passed to the script; without it stdin is at EOF.',
  'server/runner.c: write stdin to a pipe then close it; with no stdin give /dev/null-like EOF.',
  async (c) => { const s = await c.srv('main'); eq(okResult(await run(s, 'stdin.sh', { stdin: 'piped in\n' })).stdout, 'piped in\n[eof]\n', 'with stdin'); eq(okResult(await run(s, 'stdin.sh')).stdout, '[eof]\n', 'without stdin'); });
T('RFC-SKILL-1 §6.2.1, §6.2.3', 'Working directory is the skill folder; HOME and TMPDIR are a fresh scratch folder removed after the call.',
  'server/runner.c: chdir to the skill folder; mkdtemp a scratch HOME/TMPDIR and remove it after.',
  async (c) => {
    const s = okResult(await run(await c.srv('main'), 'pwd.sh')); const [cwd, home, tmpd] = s.stdout.trim().split('\n');
    eq(cwd, fs.realpathSync(path.join(c.fx.A, 'alpha')), 'cwd'); const h = home.slice(5); eq(tmpd.slice(7), h, 'TMPDIR = HOME');
    expect(h && h !== process.env.HOME && !fs.existsSync(h), h, 'a scratch HOME removed after the call');
  });
T('RFC-SKILL-1 §6.1.2', 'A .js script runs with node.',
  'server/script.c (interpreters): built-in .js → node resolved at start-up.',
  async (c) => { eq(okResult(await run(await c.srv('main'), 'hello.js', { args: ['x', 'y'] })).stdout, 'js:x,y\n', 'stdout'); });
for (const [scr, why] of [['../SKILL.md', 'a .. path'], ['references/guide.md', 'a path outside scripts/'], ['hooks/readme.txt', 'a hooks file'], ['SKILL.md', 'SKILL.md'], ['escape.sh', 'a symlink leaving the skill'], ['sub', 'a folder'], ['data.xyz', 'a suffix without interpreter'], ['missing.sh', 'a missing script'], ['/bin/ls', 'an absolute path']]) {
  T('RFC-SKILL-1 §6.1.1, §5.7.2, §5.7.3', `run_skill_script refuses ${why} (${JSON.stringify(scr)}) as a tool error; nothing runs.`,
    'server/script.c + jail.c: resolve the script with openat2 RESOLVE_BENEATH from scripts/; refuse with a reason as a tool error.',
    async (c) => { const t = toolError(await run(await c.srv('main'), scr)); expect(!t.includes('escaped'), t, 'nothing ran'); });
}
T('RFC-SKILL-1 §5.7.1', 'Numbers in `args` are refused.',
  'server/script.c: args must be strings; a number is a tool error naming args.',
  async (c) => { has(toolError(await run(await c.srv('main'), 'hello.sh', { args: [1] })), 'args'); });
T('RFC-SKILL-1 §6.2.4', 'Read tools keep answering while a script runs.',
  'server/loop.c: run scripts off the HTTP threads; never hold a thread per running script.',
  async (c) => {
    const s = await c.srv('main'); const p = run(s, 'sleep.sh', { args: ['2'] }); await scriptsLive(s);
    const t0 = Date.now(); okResult(await tool(s, 'list_skills', {})); const dt = Date.now() - t0; await p; expect(dt < 1000, `${dt} ms`, 'under 1000 ms');
  });
T('RFC-SKILL-1 §9.7.1', 'With a progressToken and Accept text/event-stream, stderr lines stream as notifications/progress and the result is the last SSE event.',
  'server/mcp.c + runner.c (SSE): answer text/event-stream with Cache-Control no-cache, X-Accel-Buffering no; one progress event per stderr line.',
  async (c) => {
    const r = await rpc(await c.srv('main'), 'tools/call', { name: 'run_skill_script', arguments: { name: 'alpha', script: 'progress.sh' }, _meta: { progressToken: 'p1' } }, { raw: true });
    eq([r.headers['content-type']?.split(';')[0], r.headers['cache-control'], r.headers['x-accel-buffering']], ['text/event-stream', 'no-cache', 'no'], 'headers');
    const prog = r.events.filter((e) => e.method === 'notifications/progress'); eq(prog.map((e) => e.params.message), ['step 1', 'step 2', 'step 3'], 'progress messages');
    eq(r.json?.result?.structuredContent?.stdout, 'finished\n', 'last event result stdout');
  });
T('RFC-SKILL-1 §9.9.1', 'notifications/cancelled stops the running script; the call ends `failed` with a hint saying it was cancelled.',
  'server/mcp.c (cancellation): map requestId to the running script and stop its process group; hint "cancelled".',
  async (c) => {
    const s = await c.srv('main'); const id = 'cancel-me-1'; const t0 = Date.now();
    const p = rpc(s, 'tools/call', { name: 'run_skill_script', arguments: { name: 'alpha', script: 'sleep.sh', args: ['8'] } }, { id });
    await scriptsLive(s); await rpc(s, 'notifications/cancelled', { requestId: id }, { id: null });
    const r = await p; const sc = r.result?.structuredContent; eq(sc?.status, 'failed', 'status'); expect(/cancel/i.test(sc.hint), sc.hint, 'hint mentioning cancel'); expect(Date.now() - t0 < 5000, `${Date.now() - t0} ms`, 'stopped early');
  });
T('RFC-SKILL-1 §6.8.1, §5.7.5', 'With all slots taken past --script-queue-timeout the call is `busy`, exit_code null, nothing ran.',
  'server/runner.c (slot queue): wait in order up to --script-queue-timeout, then status busy with "retry shortly".',
  async (c) => {
    const s = await c.srv('queue'); const p1 = run(s, 'sleep.sh', { args: ['3'] }); await scriptsLive(s);
    const b = (await run(s, 'hello.sh')).structuredContent; await p1;
    eq([b.status, b.exit_code, b.stdout], ['busy', null, ''], '[status, exit, stdout]'); expect(/retry/i.test(b.hint), b.hint, 'hint "retry"');
  });
T('RFC-SKILL-1 §6.9.1, §5.5.1', 'Every script outcome is counted in skill_server_stats.scripts.',
  'server/stats.c: count started/ok/failed/stalled/timeout/busy per outcome.',
  async (c) => { const st = okResult(await tool(await c.srv('main'), 'skill_server_stats', {})).scripts; expect(st.ok >= 5 && st.failed >= 2 && st.stalled >= 1 && st.timeout >= 1 && st.started >= 8, st, 'ok≥5, failed≥2, stalled≥1, timeout≥1'); eq(st.max_concurrency, 8, 'max_concurrency'); });

// ---------------------------------------------------------------------- hooks
AREA('Hooks');
const hookLog = (c) => { try { return fs.readFileSync(c.fx.hookLog, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)); } catch { return []; } };
T('RFC-SKILL-1 §7.4.1, §7.3.2', 'A pre hook gets {skill, script, args, mode:"sync", caller, request_id, env_keys} (names only) and the server\'s HOOK_* variables.',
  'server/hooks.c (pre input): build the JSON input as §7.4.1; pass HOOK_* to hooks only.',
  async (c) => {
    const s = await c.srv('hooks'); fs.writeFileSync(c.fx.hookLog, '');
    const r = okResult(await run(s, 'hello.sh', { env: { MY_SECRET: 'v4lue' } }));
    const pre = hookLog(c).find((e) => e.stage === 'global pre'); expect(pre, hookLog(c), 'a global pre log entry');
    const i = pre.input; eq([i.skill, i.script, i.mode, i.caller, i.env_keys, i.request_id], ['alpha', 'scripts/hello.sh', 'sync', null, ['MY_SECRET'], r.request_id], '[skill, script, mode, caller, env_keys, request_id]');
    eq(pre.hookvar, 'hv', 'HOOK_ACCEPT in the hook'); expect(!JSON.stringify(pre).includes('v4lue'), 'env value in hook input', 'names only');
  });
T('RFC-SKILL-1 §7.5.1, §6.3.2', 'Pre hooks may add env and replace args; notes are joined; scripts never see HOOK_*.',
  'server/hooks.c (pre answer): apply env (checked), args, note; join notes with a space.',
  async (c) => {
    const r = okResult(await run(await c.srv('hooks'), 'show.sh', { name: 'hooked', args: ['x'] }));
    has(r.stdout, 'args=x added', 'stdout'); has(r.stdout, 'ADDED=yes', 'stdout'); has(r.stdout, 'HOOKVAR=unset', 'stdout'); eq(r.note, 'global-pre-note skill-pre-note', 'note');
  });
T('RFC-SKILL-1 §7.2.1, §7.6.2', 'Order global pre → skill pre → script → skill post → global post: the skill post redaction is what the global post sees.',
  'server/hooks.c: run the chain in that order; post hook {"result":{...}} members replace the result\'s.',
  async (c) => {
    fs.writeFileSync(c.fx.hookLog, ''); const r = okResult(await run(await c.srv('hooks'), 'show.sh', { name: 'hooked' }));
    has(r.stdout, '[redacted] secret', 'stdout'); const L = hookLog(c); eq(L.map((e) => e.stage), ['global pre', 'global post'], 'global stages logged');
    has(L[1].stdout, '[redacted]', 'global post input stdout');
  });
T('RFC-SKILL-1 §7.5.2, §7.2.1', 'A global pre hook exiting > 0 denies: status denied, exit_code null, empty output, hint "Denied by the global pre hook (<path>): <stderr>"; nothing else runs.',
  'server/hooks.c (deny): stop the chain; result denied with that hint; no post hooks.',
  async (c) => {
    fs.writeFileSync(c.fx.hookLog, ''); const r = await run(await c.srv('hooks'), 'show.sh', { name: 'hooked', args: ['global-deny'] }); const s = r.structuredContent;
    eq([r.isError, s.status, s.exit_code, s.stdout, s.stderr], [true, 'denied', null, '', ''], '[isError, status, exit, stdout, stderr]');
    has(s.hint, 'Denied by the global pre hook', 'hint'); has(s.hint, 'global policy refuses', 'hint'); eq(hookLog(c).map((e) => e.stage), ['global pre'], 'stages run');
  });
T('RFC-SKILL-1 §7.5.2', 'A skill pre hook denial quotes the JSON `reason`.',
  'server/hooks.c: prefer a string `reason` from stdout JSON, else stderr, else the exit code.',
  async (c) => { const s = (await run(await c.srv('hooks'), 'show.sh', { name: 'hooked', args: ['skill-deny'] })).structuredContent; eq(s.status, 'denied', 'status'); has(s.hint, 'skill pre hook', 'hint'); has(s.hint, 'skill policy refuses', 'hint'); });
T('RFC-SKILL-1 §7.6.3', 'A post hook exiting > 0 fails the call and withholds the script output.',
  'server/hooks.c (post failure): status failed, stdout/stderr emptied, hint quoting the reason.',
  async (c) => { const s = (await run(await c.srv('hooks'), 'show.sh', { name: 'hooked', args: ['post-fail'] })).structuredContent; eq([s.status, s.stdout, s.stderr], ['failed', '', ''], '[status, stdout, stderr]'); has(s.hint, 'post says no', 'hint'); });
T('RFC-SKILL-1 §7.6.2, §7.7.1', 'A post hook setting an invalid status fails the call.',
  'server/hooks.c (merge check): status must stay one of the six; otherwise failed with the stage and path.',
  async (c) => { const s = (await run(await c.srv('hooks'), 'show.sh', { name: 'hooked', args: ['post-badtype'] })).structuredContent; eq(s.status, 'failed', 'status'); has(s.hint, 'post', 'hint'); });
T('RFC-SKILL-1 §7.7.1', 'A pre hook answering non-JSON fails the call naming the stage and path; the server keeps serving.',
  'server/hooks.c: parse failures → failed, hint "<stage> hook (<path>) ..."; keep serving.',
  async (c) => { const s0 = await c.srv('hooks'); const s = (await run(s0, 'show.sh', { name: 'hooked', args: ['not-json'] })).structuredContent; eq(s.status, 'failed', 'status'); has(s.hint, 'pre.js', 'hint'); okResult(await tool(s0, 'list_skills', {})); });
T('RFC-SKILL-1 §6.5.2, §7.7.1', 'A pre hook adding a refused env name (LD_PRELOAD) fails the call.',
  'server/hooks.c: check hook-added env names with the §6.5 rules.',
  async (c) => { const s = (await run(await c.srv('hooks'), 'show.sh', { name: 'hooked', args: ['bad-env'] })).structuredContent; eq(s.status, 'failed', 'status'); has(s.hint, 'skill pre hook', 'hint'); has(s.hint, 'pre.js', 'hint'); });
T('RFC-SKILL-1 §7.1.1', 'With two pre.* candidates the first in name order runs and the other is a warning.',
  'server/hooks.c / discovery.c: pick the first candidate, add a warning problem for the others.',
  async (c) => { const r = okResult(await tool(await c.srv('hooks'), 'reload_skills', {})); expect(r.errors.some((e) => e.level === 'warning' && JSON.stringify(e).includes('pre.sh')), r.errors, 'a warning naming pre.sh'); });
T('RFC-SKILL-1 §7.1.2, §6.1.1', 'Hooks are not scripts: run_skill_script refuses hooks/pre.js.',
  'server/script.c: only files under scripts/ run.',
  async (c) => { toolError(await run(await c.srv('hooks'), 'hooks/pre.js', { name: 'hooked' })); });

// -------------------------------------------------------------------- shaping
AREA('Shaping');
T('RFC-SKILL-1 §8.1.1, §8.6.1', 'An oversized load_skill result is cut to the budget and gains _truncated {fields, original_tokens, kept_tokens, hint} with a section hint.',
  'server/shape.c: fit each copy to --context-tokens × --context-share; add _truncated with the load_skill hint naming `section`.',
  async (c) => {
    const s = okResult(await tool(await c.srv('budget'), 'load_skill', { name: 'beta' })); const t = s._truncated;
    expect(t && Array.isArray(t.fields) && t.fields.includes('content') && t.original_tokens > t.kept_tokens, t, '_truncated with fields [content], original > kept');
    expect(t.kept_tokens <= 2000 * 0.25 + 5, t.kept_tokens, `kept_tokens ≤ ${2000 * 0.25}`); has(t.hint ?? '', 'section', '_truncated.hint');
  });
T('RFC-SKILL-1 §8.4.1, §8.4.2', 'A cut Markdown string keeps heading lines and carries the omission marker.',
  'server/shape.c (markdown cut): keep every heading, water-fill bodies, end cut bodies with "[... N characters omitted: narrow the call ...]".',
  async (c) => { const s = okResult(await tool(await c.srv('budget'), 'load_skill', { name: 'beta' })); expect(/\[\.\.\. \d+ characters omitted: narrow the call \.\.\.\]/.test(s.content), s.content.slice(0, 200), 'the omission marker'); has(s.content, '# Beta', 'content'); });
T('RFC-SKILL-1 §8.2.1, §8.5.1', 'A cut result keeps every member with its type; short strings and numbers are never cut.',
  'server/shape.c: never drop members; leave strings < 64 bytes, numbers, booleans, null intact.',
  async (c) => { const s = okResult(await tool(await c.srv('budget'), 'load_skill', { name: 'beta' })); eq([s.name, s.qualified_name, typeof s.content, Array.isArray(s.sections), Array.isArray(s.scripts), Array.isArray(s.files)], ['beta', 'beta', 'string', true, true, true], 'members'); });
T('RFC-SKILL-1 §8.1.3', 'A result that fits is not changed (no _truncated).',
  'server/shape.c: return results under budget untouched.',
  async (c) => { const s = okResult(await tool(await c.srv('budget'), 'load_skill', { name: 'acme/invoices' })); eq(s._truncated, undefined, '_truncated'); eq(s.content, '# Invoices\n', 'content'); });
T('RFC-SKILL-1 §8.6.2, §8.3.1', 'A cut list_skills page sets next_cursor just past the last card kept; paging skips nothing.',
  'server/shape.c + search.c: after dropping cards, set next_cursor = offset + cards kept.',
  async (c) => {
    const s = await c.srv('tinylist'); let cursor; const seen = []; let cut = false;
    for (let i = 0; i < 20; i++) { const r = okResult(await tool(s, 'list_skills', { limit: 500, ...(cursor ? { cursor } : {}) })); if (r._truncated) cut = true; seen.push(...r.skills.map((x) => x.qualified_name ?? x.name)); cursor = r.next_cursor; if (!cursor) break; }
    expect(cut, 'no page was cut', 'the first page cut at this budget'); eq(seen, ['acme/billing', 'acme/invoices', 'alpha', 'beta', 'finance/billing', 'hooked', 'mismatch', 'mutable'], 'all cards over the pages');
  });
T('RFC-SKILL-1 §8.1.3, §8.5.1, §8.6.1', 'A shaped run_skill_script keeps status, exit_code and request_id and gains _truncated; the text block equals structuredContent.',
  'server/shape.c: shape after hooks; keep short fields; hint suggests an argument printing less.',
  async (c) => { const r = await run(await c.srv('budget'), 'big.sh'); const s = okResult(r); eq([s.status, s.exit_code], ['ok', 0], '[status, exit]'); expect(/^r-[0-9a-f]{16}$/.test(s.request_id), s.request_id, 'request_id'); expect(s._truncated?.fields?.includes('stdout'), s._truncated, '_truncated.fields with stdout'); eq(JSON.parse(textOf(r)), s, 'text JSON'); });
T('RFC-SKILL-1 §8.1.1', 'With default limits each copy of a result (structured JSON, text block) stays within 48,000 characters.',
  'server/shape.c: fit each copy to --max-result-chars (48000 UTF-16 units).',
  async (c) => { const r = await run(await c.srv('main'), 'big.sh'); const n = JSON.stringify(r.structuredContent).length; expect(n <= 48000 && textOf(r).length <= 48000 && r.structuredContent._truncated, n, '≤ 48000 characters with _truncated'); });
T('RFC-SKILL-1 §8.6.1', 'A cut read_skill_file hint names max_bytes.',
  'server/shape.c: per-tool hint for read_skill_file mentions max_bytes.',
  async (c) => { const s = okResult(await tool(await c.srv('budget'), 'read_skill_file', { name: 'beta', path: 'SKILL.md' }).catch(() => null) ?? await tool(await c.srv('budget'), 'read_skill_file', { name: 'alpha', path: 'assets/long.txt' })); if (!s._truncated) throw new Fail('no _truncated', 'a cut result'); has(s._truncated.hint ?? '', 'max_bytes', 'hint'); });

// ------------------------------------------------------ stats & metrics & health
AREA('Stats, metrics & health');
T('RFC-SKILL-1 §5.5.1', 'skill_server_stats: server {name, version, uptime_s}, index {generation, skills, errors, warnings, roots, last_refresh_at, last_refresh_ms, problems}, tools per name.',
  'server/stats.c: fill the result as §5.5.1.',
  async (c) => {
    const s = okResult(await tool(await c.srv('main'), 'skill_server_stats', {}));
    eq(s.server.name, 'skill-mcp', 'server.name'); expect(typeof s.server.version === 'string' && typeof s.server.uptime_s === 'number', s.server, 'version, uptime_s');
    for (const k of ['generation', 'skills', 'errors', 'warnings', 'roots', 'last_refresh_at', 'last_refresh_ms', 'problems']) expect(s.index[k] !== undefined, Object.keys(s.index), `index.${k}`);
    eq(s.index.skills, 9, 'index.skills'); expect(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(s.index.last_refresh_at), s.index.last_refresh_at, 'ISO 8601 UTC');
    expect(s.tools.list_skills?.calls > 0 && 'p95_ms' in s.tools.list_skills, s.tools.list_skills, 'tools.list_skills with calls, p95_ms');
  });
T('RFC-SKILL-1 §3.1.1, §3.4.1, §3.6.2, §3.8.1, §3.8.2', 'index.problems: missing root (error), broken skills (error), shadowed (warning), symlink out (warning), name mismatch (warning).',
  'server/discovery.c (problems): record each as {skill, path, level, message}.',
  async (c) => {
    const p = okResult(await tool(await c.srv('main'), 'skill_server_stats', {})).index.problems; const J2 = JSON.stringify(p);
    const find = (re, lvl) => p.some((x) => x.level === lvl && re.test(JSON.stringify(x)));
    expect(find(/nonexistent-acceptance-root/, 'error'), J2.slice(0, 600), 'error for the missing root');
    expect(find(/broken/, 'error') && find(/badyaml/, 'error'), J2.slice(0, 600), 'errors for broken and badyaml');
    expect(find(/shadowed/, 'warning'), J2.slice(0, 600), 'a "shadowed" warning'); expect(find(/link-out/, 'warning'), J2.slice(0, 600), 'a warning naming link-out.txt'); expect(find(/mismatch/, 'warning'), J2.slice(0, 600), 'a warning for mismatch');
    expect(p.find((x) => /broken/.test(x.skill ?? x.path))?.message?.includes('skill not served'), J2.slice(0, 600), 'broken: "...; skill not served"');
  });
T('RFC-SKILL-1 §3.9.1, §5.6.1', 'reload_skills with nothing changed publishes no new snapshot (generation_after = generation_before).',
  'server/discovery.c (forced rescan for reload_skills/SIGHUP): when no skill was added, removed or changed and the problems are the same, keep the current snapshot and its generation. docs/internals.md ("and on every forced rescan") must then be corrected too; alternatively, if a forced rescan is meant to always bump, amend RFC-SKILL-1 §3.9.1 to say so.',
  async (c) => {
    const s = await c.srv('main'); await tool(s, 'reload_skills', {}); /* picks up edits made by earlier items */ const a = okResult(await tool(s, 'reload_skills', {}));
    for (const k of ['added', 'removed', 'changed', 'errors', 'duration_ms']) expect(a[k] !== undefined, Object.keys(a), k);
    eq([a.added, a.removed, a.changed], [[], [], []], '[added, removed, changed]'); eq(a.generation_after, a.generation_before, 'generation_after');
  });
T('RFC-SKILL-1 §5.6.1, §3.9.1', 'reload_skills after adding a skill publishes a higher generation with the skill in `added`.',
  'server/discovery.c (rescan): diff against the current snapshot, publish atomically with generation+1, list qualified names in added.',
  async (c) => {
    const s = await c.srv('main'); fs.mkdirSync(path.join(c.fx.A, 'delta')); fs.writeFileSync(path.join(c.fx.A, 'delta/SKILL.md'), '---\nname: delta\ndescription: Added during the run\n---\n# Delta\n');
    const b = okResult(await tool(s, 'reload_skills', {})); eq(b.added, ['delta'], 'added'); expect(b.generation_after > b.generation_before, b, 'generation_after > generation_before');
    eq(okResult(await tool(s, 'load_skill', { name: 'delta' })).qualified_name, 'delta', 'delta served');
  });
T('RFC-SKILL-1 §3.9.1', 'The --refresh-interval timer keeps the generation while nothing changes and picks up a new skill within one interval.',
  'server/loop.c / discovery.c (refresh tick): re-stat every interval; publish only on change.',
  async (c) => {
    const s = await c.srv('refresh'); const g = async () => okResult(await tool(s, 'list_skills', {})).generation;
    const g0 = await g(); await sleep(2300); eq(await g(), g0, 'generation after two idle ticks');
    fs.mkdirSync(path.join(c.fx.R, 'epsilon')); fs.writeFileSync(path.join(c.fx.R, 'epsilon/SKILL.md'), '---\nname: epsilon\ndescription: Appears by itself\n---\n# E\n');
    let found = false; for (let i = 0; i < 30 && !found; i++) { await sleep(100); found = okResult(await tool(s, 'list_skills', {})).skills.some((x) => x.name === 'epsilon'); }
    expect(found, 'epsilon not listed after 3 s', 'epsilon listed within ~1 interval');
  });
T('RFC-SKILL-1 §3.8.1', 'A skill that breaks after being served keeps its previous version ("serving the previous version").',
  'server/discovery.c: on a parse error for a served skill keep the old entry and report "...; serving the previous version".',
  async (c) => {
    const s = await c.srv('main'); fs.writeFileSync(path.join(c.fx.A, 'delta/SKILL.md'), '---\nname: delta\n---\n# Delta broken\n');
    const r = okResult(await tool(s, 'reload_skills', {})); expect(r.errors.some((e) => /delta/.test(JSON.stringify(e)) && /previous version/.test(e.message)), r.errors, 'an error for delta "serving the previous version"');
    eq(okResult(await tool(s, 'load_skill', { name: 'delta' })).description, 'Added during the run', 'delta still served');
  });
T('docs/deploy.md "Operating"; RFC-SKILL-1 §6.9.1', '/metrics is Prometheus text with requests, tool calls, scripts_total{outcome}, scripts_live, index and uptime series.',
  'server/stats.c (metrics): expose the metric names listed in docs/deploy.md.',
  async (c) => {
    const r = await GET(await c.srv('main'), '/metrics'); eq(r.status, 200, 'status'); has(r.headers['content-type'], 'text/plain', 'Content-Type');
    for (const m of ['skill_mcp_requests_total', 'skill_mcp_tool_calls_total', 'skill_mcp_scripts_total{outcome="ok"}', 'skill_mcp_scripts_live', 'skill_mcp_index_generation', 'skill_mcp_skills', 'skill_mcp_uptime_seconds']) has(r.text, m, 'metrics');
  });
T('RFC-SKILL-1 §5.5.1', 'stats.skills counts per-skill usage.',
  'server/stats.c: count load_skill/read_skill_file calls, scripts and errors per skill.',
  async (c) => { const s = okResult(await tool(await c.srv('main'), 'skill_server_stats', {})); expect(s.skills?.alpha?.calls > 0 && s.skills.alpha.scripts > 0, s.skills?.alpha, 'alpha {calls>0, scripts>0}'); });

// ------------------------------------------------------ auth tokens & rate limits
AREA('Auth tokens & rate limits');
const ping = (s, auth, extra = {}) => rpc(s, 'tools/call', { name: 'list_skills', arguments: { limit: 1 } }, { raw: true, auth, ...extra });
T('RFC-SKILL-1 §10.6.1', 'Without a token: 401 with WWW-Authenticate: Bearer realm="skill-mcp" (no error=).',
  'server/http.c reply(): the caller (the auth branch of the request handler) passes rq only when no Authorization header was sent, but reply() tests `rq && rq->client`, and rq->client is NULL there, so error="invalid_token" is always added. Test `rq` instead (or an explicit "token given" flag): no header → `Bearer realm="skill-mcp"`; a bad token → `Bearer realm="skill-mcp", error="invalid_token"` (RFC 6750 §3.1).',
  async (c) => { const r = await ping(await c.srv('auth')); eq(r.status, 401, 'status'); eq(r.headers['www-authenticate'], 'Bearer realm="skill-mcp"', 'WWW-Authenticate'); });
T('RFC-SKILL-1 §10.6.1', 'A wrong token: 401 with error="invalid_token".',
  'server/auth.c: add error="invalid_token" when a token was given but matched nothing.',
  async (c) => { const r = await ping(await c.srv('auth'), 'not-a-real-token'); eq(r.status, 401, 'status'); has(r.headers['www-authenticate'] ?? '', 'error="invalid_token"', 'WWW-Authenticate'); });
T('RFC-SKILL-1 §10.6.1', 'A valid token is accepted; the scheme is case-insensitive.',
  'server/auth.c: match "bearer" case-insensitively; compare sha256 in constant time.',
  async (c) => { const s = await c.srv('auth'); eq((await ping(s, c.tokens.open)).status, 200, 'status'); const r = await ping(s, undefined, { headers: { Authorization: `bEaReR ${c.tokens.open}` } }); eq(r.status, 200, 'status with "bEaReR"'); });
T('RFC-SKILL-1 §10.5.1', '/healthz needs no token.',
  'server/http.c: probes skip auth.',
  async (c) => { eq((await GET(await c.srv('auth'), '/healthz')).status, 200, 'status'); });
T('RFC-SKILL-1 §10.7.1', 'A client with rpm gets RateLimit-* headers; past its bucket it gets 429 with Retry-After ≥ 1.',
  'server/auth.c (token bucket): rpm capacity, refill rpm/60 per s; 429 + Retry-After when empty.',
  async (c) => {
    const s = await c.srv('auth'); const r1 = await ping(s, c.tokens.limited);
    eq(r1.status, 200, 'first status'); for (const h of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) expect(r1.headers[h] !== undefined, Object.keys(r1.headers), h); eq(r1.headers['ratelimit-limit'], '3', 'RateLimit-Limit');
    let last; for (let i = 0; i < 4; i++) last = await ping(s, c.tokens.limited);
    eq(last.status, 429, 'status after 5 requests at rpm 3'); expect(Number(last.headers['retry-after']) >= 1, last.headers['retry-after'], 'Retry-After ≥ 1');
  });
T('RFC-SKILL-1 §10.7.1', 'Limits are per client: another client is still served.',
  'server/auth.c: keep one bucket per client id.',
  async (c) => { eq((await ping(await c.srv('auth'), c.tokens.open)).status, 200, 'status for the other client'); });
T('RFC-SKILL-1 §10.8.1', 'Over --max-scripts-per-client a call is `busy` at once and nothing runs.',
  'server/runner.c (per-client cap): count slots per client id; answer busy immediately.',
  async (c) => {
    const s = await c.srv('auth'); const p = run(s, 'sleep.sh', { args: ['2'] }, { auth: c.tokens.open }); await scriptsLive(s, 1, { auth: c.tokens.open });
    const t0 = Date.now(); const b = (await run(s, 'hello.sh', {}, { auth: c.tokens.open })).structuredContent; const dt = Date.now() - t0; await p;
    eq([b?.status, b?.exit_code], ['busy', null], '[status, exit]'); expect(dt < 1000, `${dt} ms`, 'answered at once');
  });

// ------------------------------------------------------------- workers & drain
AREA('Workers & drain');
T('docs/operations.md "Several workers"', 'With --workers 2 the master logs "2 worker(s)" and serves requests.',
  'server/main.c (master): fork N workers on one socket; log "(N worker(s) x T threads ...)".',
  async (c) => { const s = await c.srv('workers'); has(s.log, '2 worker(s)', 'log'); okResult(await tool(s, 'list_skills', {})); });
T('RFC-SKILL-1 §5.5.2; docs/operations.md', 'Script counters describe the whole instance whichever worker answers.',
  'server/stats.c: keep tools.* and scripts.* in shared memory across workers.',
  async (c) => {
    const s = await c.srv('workers'); okResult(await run(s, 'hello.sh')); okResult(await run(s, 'hello.sh'));
    for (let i = 0; i < 6; i++) { const st = okResult(await tool(s, 'skill_server_stats', {})).scripts; expect(st.ok >= 2, st, 'scripts.ok ≥ 2 on every worker'); }
  });
T('docs/operations.md "When a worker dies"', 'A killed worker is restarted by the master; the instance keeps serving.',
  'server/main.c (master supervision): waitpid the worker, log "worker N restarted (pid P)", fork a new one.',
  async (c) => {
    const s = await c.srv('workers'); const kids = childPids(s.pid); expect(kids.length > 0, 'no worker pid under the master in /proc', 'worker processes to kill');
    process.kill(kids[0], 'SIGKILL'); for (let i = 0; i < 200 && !/restarted/.test(s.log); i++) await sleep(50);
    has(s.log, 'restarted', 'master log'); okResult(await tool(s, 'list_skills', {}));
  });
T('docs/operations.md "Signals"', 'SIGHUP to the master is forwarded to every worker.',
  'server/main.c: on SIGHUP log "master SIGHUP: forwarded to N workers" and signal each worker.',
  async (c) => { const s = await c.srv('workers'); process.kill(s.pid, 'SIGHUP'); for (let i = 0; i < 200 && !/forwarded/.test(s.log); i++) await sleep(50); has(s.log, 'forwarded to 2 workers', 'log'); });
T('docs/operations.md "Graceful shutdown"', 'SIGTERM to the master stops every worker and exits 0.',
  'server/main.c: forward SIGTERM, wait for workers, exit 0.',
  async (c) => { const s = await c.srv('workers'); const ex = await s.stop('SIGTERM'); eq([ex.code, ex.signal], [0, null], '[exit code, signal]'); c.forget('workers'); });
T('docs/operations.md "Graceful shutdown"', 'On SIGTERM a script in flight finishes normally, its call is answered, and the process exits 0.',
  'server/loop.c (drain): stop accepting, let requests in flight finish up to --shutdown-timeout, then exit 0.',
  async (c) => {
    const s = await c.srv('drain'); const p = run(s, 'sleep.sh', { args: ['1'] }); await scriptsLive(s); process.kill(s.pid, 'SIGTERM');
    const r = okResult(await p); eq([r.status, r.stdout], ['ok', 'done\n'], '[status, stdout]'); const ex = await s.exitP; eq(ex.code, 0, 'exit code'); c.forget('drain');
  });
T('docs/operations.md "Graceful shutdown"', 'A script still running at --shutdown-timeout is stopped and its caller gets an answer.',
  'server/loop.c (drain timeout): SIGTERM the script process groups, answer the calls, exit 0.',
  async (c) => {
    const s = await c.srv('drain2'); const p = run(s, 'sleep.sh', { args: ['20'] }); await scriptsLive(s); const t0 = Date.now(); process.kill(s.pid, 'SIGTERM');
    const r = (await p).structuredContent; expect(r && r.status !== 'ok', r, 'a non-ok status'); expect(Date.now() - t0 < 6000, `${Date.now() - t0} ms`, 'answered within the shutdown timeout + 2 s kill');
    const ex = await s.exitP; eq(ex.code, 0, 'exit code'); c.forget('drain2');
  });

// ------------------------------------------------------------ approved versions
AREA('Approved versions (lock)');
function lockLibrary(c) {
  const root = path.join(c.fx.tmp, 'lock-root');
  for (const [name, extra] of [['approved-one', 'scripts/run.sh'], ['unreviewed', null]]) {
    fs.mkdirSync(path.join(root, name, 'scripts'), { recursive: true });
    fs.writeFileSync(path.join(root, name, 'SKILL.md'), `---\nname: ${name}\ndescription: Lock fixture ${name}.\n---\n# ${name}\n`);
    if (extra) fs.writeFileSync(path.join(root, name, extra), 'echo ok\n');
  }
  return { root, lock: path.join(c.fx.tmp, 'skills.lock') };
}
T('RFC-SKILL-1 §10.11.3; docs/supply-chain.md', 'With --lock, an approved skill is served and an unapproved one is listed as quarantined and refused, naming `skill-mcp lock approve`.',
  'server/lock.c (lock_gate) and server/tools.c (gated): judge every entry when the snapshot is built; mark its card quarantined and refuse load/read/run with the approving command.',
  async (c) => {
    const L = lockLibrary(c);
    const a = runCli(c.bin, ['lock', 'approve', 'approved-one', '--lock', L.lock, '--skills', L.root, '--by', 'acceptance']);
    eq(a.code, 0, 'lock approve exit');
    const s = await c.srv('lock');
    const cards = okResult(await tool(s, 'list_skills', {})).skills;
    const ok = cards.find((k) => k.name === 'approved-one'); const q = cards.find((k) => k.name === 'unreviewed');
    eq([ok?.quarantined, q?.quarantined], [undefined, true], '[approved card quarantined, unapproved card quarantined]');
    has(q.quarantine_reason, 'skill-mcp lock approve unreviewed', 'quarantine_reason');
    okResult(await tool(s, 'load_skill', { name: 'approved-one' }), 'load_skill(approved-one)');
    has(toolError(await tool(s, 'load_skill', { name: 'unreviewed' }), 'load_skill(unreviewed)'), 'quarantined', 'refusal');
    await rpcErr(s, 'resources/read', { uri: 'skill://unreviewed/SKILL.md' }, -32602);
  });
T('docs/supply-chain.md "The review workflow"', '`skill-mcp lock diff` marks a new script with `!` and WIDENS and exits 1; after `lock approve` it exits 0.',
  'server/lock.c (lock_changes, cli_report): compare the manifest with the approved file list; scripts/ and hooks/ additions widen; exit 1 when anything is unapproved.',
  async (c) => {
    const L = lockLibrary(c);
    fs.writeFileSync(path.join(L.root, 'approved-one', 'scripts', 'new.sh'), 'echo new\n');
    const d = runCli(c.bin, ['lock', 'diff', 'approved-one', '--lock', L.lock, '--skills', L.root]);
    eq(d.code, 1, 'diff exit'); has(d.stdout, '! A scripts/new.sh  WIDENS: new script', 'diff output');
    eq(runCli(c.bin, ['lock', 'approve', 'approved-one', '--lock', L.lock, '--skills', L.root]).code, 0, 'approve exit');
    eq(runCli(c.bin, ['lock', 'diff', 'approved-one', '--lock', L.lock, '--skills', L.root]).code, 0, 'diff exit after approval');
  });
T('RFC-SKILL-1 §10.11.3', 'With --lock, skills/list leaves a quarantined skill out and names it under _meta omitted with the reason.',
  'server/skillsext.c (skillsext_list): ask skills_gate_of for each entry; a quarantined one goes to io.modelcontextprotocol.skills/omitted with "quarantined: " and the reason.',
  async (c) => {
    const L = lockLibrary(c);
    eq(runCli(c.bin, ['lock', 'approve', 'approved-one', '--lock', L.lock, '--skills', L.root, '--by', 'acceptance']).code, 0, 'lock approve exit');
    const s = await c.srv('lock');
    // The server started items ago (--refresh-interval 0), and a rescan of its
    // own (the body indexer's) may have judged the files the item before
    // changed against the lock it had then: SIGHUP re-reads the lock and
    // rescans, as an operator would after approving.
    process.kill(s.pid, 'SIGHUP');
    let r;
    for (let i = 0; i < 100; i++) {
      r = await rpc(s, 'skills/list', {});
      if ((r?.result?.skills ?? []).some((e) => e.uri === 'skill://approved-one/SKILL.md')) break;
      await sleep(100);
    }
    const uris = (r?.result?.skills ?? []).map((e) => e.uri);
    eq([uris.includes('skill://approved-one/SKILL.md'), uris.includes('skill://unreviewed/SKILL.md')], [true, false], '[approved listed, quarantined listed]');
    const om = (r.result._meta?.['io.modelcontextprotocol.skills/omitted'] ?? []).find((o) => o.uri === 'skill://unreviewed/SKILL.md');
    expect(om && /^quarantined: /.test(om.reason) && om.reason.includes('skill-mcp lock approve unreviewed'), J(r.result._meta), 'an omitted entry with "quarantined: ..." naming the approving command');
  });
T('docs/supply-chain.md "Rollback: serving the approved version"; RFC-SKILL-1 §10.11.5', '`skill-mcp lock gc` removes nothing while the lock changed within the grace, and never what the lock names.',
  'server/lock.c (cli_gc): stat the lock first and stop when it is younger than --grace; skip every blob, manifest and tree an entry names.',
  async (c) => {
    const L = lockLibrary(c);
    const store = path.join(c.fx.tmp, 'gc-store');
    eq(runCli(c.bin, ['lock', 'approve', '--all', '--lock', L.lock, '--skills', L.root, '--lock-store', store]).code, 0, 'approve exit');
    const blobs = () => fs.readdirSync(path.join(store, 'blobs')).sort();
    const before = blobs();
    const r = runCli(c.bin, ['lock', 'gc', '--lock', L.lock, '--lock-store', store]);
    eq(r.code, 0, 'gc exit'); has(r.stdout, 'Nothing removed', 'gc output');
    const r0 = runCli(c.bin, ['lock', 'gc', '--lock', L.lock, '--lock-store', store, '--grace', '0']);
    eq(r0.code, 0, 'gc --grace 0 exit'); has(r0.stdout, 'removed 0 blob(s)', 'gc --grace 0 output');
    eq(blobs(), before, 'blobs the lock names');
  });
T('RFC-SKILL-1 §10.11.2', 'A malformed lock stops the server at start-up, naming the file and line.',
  'server/lock.c (lock_parse): refuse the file with "FILE:LINE: ..." and exit 2 before listening.',
  async (c) => {
    const f = path.join(c.fx.tmp, 'bad.lock'); fs.writeFileSync(f, '# comment\nalpha sha256:nothex approved-by=x approved-at=2026-01-01T00:00:00Z\n');
    const r = runCli(c.bin, ['--skills', c.fx.A, '--port', '0', '--lock', f], { timeout: 5000 });
    eq(r.code, 2, 'exit'); has(r.stderr, `${f}:2:`, 'stderr');
  });

export default items;
