// Raw HTTP: JSON-RPC error codes, notifications, methods, Origin/Host
// checks, body limits, and the modern (2026-07-28) stateless era.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';

import {
  startServer, raw, post, postModern, modernMeta, MODERN, JSON_HEADERS, TEST_TIMEOUT,
} from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const MAX_BODY = 65536;

let s;
before(async () => { s = await startServer({ args: ['--max-body', String(MAX_BODY)] }); });
after(async () => { await s?.stop(); });

function rpcError(r, code, status) {
  if (status !== undefined) assert.equal(r.status, status, `HTTP status; body: ${r.text.slice(0, 300)}`);
  assert.ok(r.json, `a JSON body: ${r.text.slice(0, 300)}`);
  assert.equal(r.json.jsonrpc, '2.0');
  assert.equal(r.json.error?.code, code, `error code; body: ${r.text.slice(0, 300)}`);
  assert.equal(typeof r.json.error.message, 'string');
  assert.equal(r.json.result, undefined);
  return r.json.error;
}

const listTools = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

// ---- legacy JSON-RPC --------------------------------------------------------

test('a plain legacy request (no initialize, stateless) is served as JSON', opts, async () => {
  const r = await post(s.url, listTools, { 'mcp-protocol-version': '2025-11-25' });
  assert.equal(r.status, 200);
  assert.match(String(r.headers['content-type']), /^application\/json/);
  assert.equal(r.json.id, 1);
  assert.ok(Array.isArray(r.json.result.tools));
});

test('request ids: string ids echoed, id null refused', opts, async () => {
  const a = await post(s.url, { ...listTools, id: 'abc-1' });
  assert.equal(a.json.id, 'abc-1');
  const b = await post(s.url, { ...listTools, id: null });
  rpcError(b, -32600);
});

test('malformed JSON -> -32700', opts, async () => {
  const r = await post(s.url, '{"jsonrpc":"2.0","id":1,"method":');
  rpcError(r, -32700);
  assert.equal(r.json.id, null);
});

test('binary garbage body -> -32700 (server keeps serving)', opts, async () => {
  const junk = Buffer.alloc(4096);
  for (let i = 0; i < junk.length; i++) junk[i] = (i * 131 + 7) & 0xff;
  const r = await post(s.url, junk);
  rpcError(r, -32700);
  const ok = await post(s.url, listTools);
  assert.equal(ok.status, 200);
});

test('empty body -> -32700 or -32600', opts, async () => {
  const r = await post(s.url, '');
  assert.ok([-32700, -32600].includes(r.json?.error?.code), r.text);
});

test('batch array -> -32600', opts, async () => {
  rpcError(await post(s.url, [listTools, { ...listTools, id: 2 }]), -32600);
  rpcError(await post(s.url, []), -32600);
});

test('not an object / missing jsonrpc / wrong version / bad method -> -32600', opts, async () => {
  rpcError(await post(s.url, '"hello"'), -32600);
  rpcError(await post(s.url, '42'), -32600);
  rpcError(await post(s.url, { id: 1, method: 'tools/list' }), -32600);
  rpcError(await post(s.url, { jsonrpc: '1.0', id: 1, method: 'tools/list' }), -32600);
  rpcError(await post(s.url, { jsonrpc: '2.0', id: 1, method: 17 }), -32600);
  rpcError(await post(s.url, { jsonrpc: '2.0', id: { a: 1 }, method: 'tools/list' }), -32600);
});

test('unknown method -> -32601 with the request id', opts, async () => {
  const r = await post(s.url, { jsonrpc: '2.0', id: 99, method: 'no/such/method' });
  rpcError(r, -32601);
  assert.equal(r.json.id, 99);
});

test('params of the wrong type -> -32602', opts, async () => {
  // Non-structured params violate JSON-RPC itself: -32600 is as good as -32602.
  const str = await post(s.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: 'list_skills' });
  assert.ok([-32600, -32602].includes(str.json?.error?.code), str.text);
  rpcError(await post(s.url, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { arguments: {} } }), -32602);
  rpcError(await post(s.url, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'nope', arguments: {} } }), -32602);
});

test('notification -> 202 with an empty body', opts, async () => {
  for (const method of ['notifications/initialized', 'notifications/cancelled', 'notifications/whatever']) {
    const r = await post(s.url, { jsonrpc: '2.0', method, params: {} });
    assert.equal(r.status, 202, `${method}: ${r.status} ${r.text}`);
    assert.equal(r.text, '');
  }
});

test('GET and DELETE -> 405', opts, async () => {
  const g = await raw(s.url, { method: 'GET', headers: { accept: 'text/event-stream' } });
  assert.equal(g.status, 405);
  const d = await raw(s.url, { method: 'DELETE', headers: { 'mcp-session-id': 'abc' } });
  assert.equal(d.status, 405);
  const p = await raw(s.url, { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify(listTools) });
  assert.ok(p.status === 405 || p.status === 404, `PUT: ${p.status}`);
});

test('another path -> 404', opts, async () => {
  const u = new URL(s.url);
  u.pathname = '/not-mcp';
  const r = await post(u.toString(), listTools);
  assert.equal(r.status, 404);
});

test('Origin: loopback allowed, anything else 403', opts, async () => {
  const port = s.port;
  for (const o of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, 'http://localhost', `http://[::1]:${port}`,
    'https://LOCALHOST', 'http://127.1.2.3:65535']) {
    const r = await post(s.url, listTools, { origin: o });
    assert.equal(r.status, 200, `Origin ${o}: ${r.status}`);
  }
  // An origin is scheme://host[:port], nothing more: a loopback name
  // followed by userinfo, more name or a path is not a loopback origin.
  for (const o of ['http://evil.example.com', `http://127.0.0.1.evil.example:${port}`, 'null', 'https://localhost.evil.com',
    `http://localhost:${port}@evil.example`, 'http://localhost@evil.example', 'http://[::1].evil.example',
    `http://[::1]:${port}.evil.example`, 'http://localhost/', `http://127.0.0.1:${port}/x`, 'http://localhost:8o',
    `http://localhost:${port}#x`, 'http://localhost:1234567', 'http://[::1', 'http://']) {
    const r = await post(s.url, listTools, { origin: o });
    assert.equal(r.status, 403, `Origin ${o}: ${r.status}`);
  }
});

// A header sent twice: the first one counts (for every header the endpoint
// reads), whichever of the two would pass.
// body: JSON to send, or a Buffer as it is; cl: the Content-Length as written.
function postRawHeaders(url, pairs, body, lead, cl) {
  const u = new URL(url);
  const b = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname, method: 'POST', timeout: 10_000,
      headers: [...(lead ?? ['Host', u.host, 'Content-Type', 'application/json']),
        'Content-Length', cl ?? String(b.length), ...pairs],
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(b);
  });
}

// Host and Origin sent twice are refused instead (see "two Host or two Origin headers").
test('a repeated header: the first one counts', opts, async () => {
  assert.equal(await postRawHeaders(s.url, ['MCP-Protocol-Version', '2025-11-25',
    'mcp-protocol-version', '1999-01-01'], listTools), 200);
  assert.equal(await postRawHeaders(s.url, ['MCP-Protocol-Version', '1999-01-01',
    'mcp-protocol-version', '2025-11-25'], listTools), 400);
  assert.equal(await postRawHeaders(s.url, ['Accept', 'text/html', 'Accept', 'application/json'], listTools), 406);
  // Content-Type as well, whichever case the second is sent in.
  const host = `127.0.0.1:${s.port}`, json = 'application/json';
  assert.equal(await postRawHeaders(s.url, [], listTools,
    ['Host', host, 'Content-Type', json, 'content-type', 'text/plain']), 200);
  assert.equal(await postRawHeaders(s.url, [], listTools,
    ['Host', host, 'Content-Type', 'text/plain', 'CONTENT-TYPE', json]), 415);
});

test('Host not localhost when bound to loopback -> 403 (DNS rebinding)', opts, async () => {
  const bad = await post(s.url, listTools, { host: 'evil.example.com' });
  assert.equal(bad.status, 403);
  const both = await post(s.url, listTools, { host: 'evil.example.com', origin: 'http://evil.example.com' });
  assert.equal(both.status, 403);
  // A DNS name that merely starts with "127." or "localhost" is not loopback.
  for (const h of [`127.0.0.1.evil.example:${s.port}`, 'localhost.evil.example', `127.evil.example:${s.port}`,
    `localhost:${s.port}@evil.example`, '[::1].evil.example', `localhost:${s.port}/x`, 'localhost:80:80']) {
    const r = await post(s.url, listTools, { host: h });
    assert.equal(r.status, 403, `Host ${h}: ${r.status}`);
  }
  for (const h of [`localhost:${s.port}`, `127.0.0.1:${s.port}`, 'localhost', `[::1]:${s.port}`]) {
    const ok = await post(s.url, listTools, { host: h });
    assert.equal(ok.status, 200, `Host ${h}: ${ok.status}`);
  }
});

// Accept and Content-Length as clients write them and as they may: the
// common spelling is read on a shorter path, and must mean what the others do.
test('Accept and Content-Length: the usual spellings and the rest agree', opts, async () => {
  for (const a of ['application/json', 'application/json, text/event-stream', 'APPLICATION/JSON',
    'text/html, application/json', 'Application/Json;q=0.9', '*/*', 'application/*']) {
    assert.equal(await postRawHeaders(s.url, ['Accept', a], listTools), 200, `Accept: ${a}`);
  }
  for (const a of ['text/html', 'application/jso', 'text/event-stream']) {
    assert.equal(await postRawHeaders(s.url, ['Accept', a], listTools), 406, `Accept: ${a}`);
  }
  // Content-Length in plain digits, with leading zeros past 19 digits, and
  // over --max-body in either spelling.
  const small = Buffer.from(JSON.stringify(listTools));
  const big = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'list_skills', arguments: { query: 'x'.repeat(MAX_BODY + 10) } } }));
  const send = (b, cl) => postRawHeaders(s.url, ['Accept', 'application/json'], b, undefined, cl);
  assert.equal(await send(small, String(small.length)), 200);
  assert.equal(await send(small, String(small.length).padStart(24, '0')), 200);
  assert.equal(await send(big, String(big.length)), 413);
  assert.equal(await send(big, String(big.length).padStart(24, '0')), 413);
});

// The exact bytes of a request, Host and Origin as given (node's client
// would check or fix them): the status code.
// method and path (default: a tools/list POST to the MCP endpoint) send no body.
function rawStatus(url, headerLines, method = 'POST', path = null) {
  const u = new URL(url);
  const body = JSON.stringify(listTools);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname, () => {
      sock.end(`${method} ${path ?? u.pathname} HTTP/1.1\r\n${headerLines.map((l) => l + '\r\n').join('')}` +
        (method === 'POST'
          ? `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
          : 'Connection: close\r\n\r\n'));
    });
    let got = '';
    sock.setTimeout(10_000, () => sock.destroy(new Error('timed out')));
    sock.on('data', (d) => { got += d; });
    sock.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(got)?.[1])));
    sock.on('error', reject);
  });
}

test('Host and Origin: whitespace after the value is not part of it; an origin needs a scheme', opts, async () => {
  const p = s.port;
  for (const h of [`Host: localhost:${p} `, `Host: localhost\t`, `Host: 127.0.0.1:${p}\t `]) {
    assert.equal(await rawStatus(s.url, [h]), 200, h);
  }
  assert.equal(await rawStatus(s.url, [`Host: localhost:${p}`, 'Origin: http://localhost:6274 ']), 200);
  for (const o of ['Origin: ://localhost', 'Origin: 1http://localhost', 'Origin: ht tp://localhost',
    'Origin: -x://127.0.0.1']) {
    assert.equal(await rawStatus(s.url, [`Host: localhost:${p}`, o]), 403, o);
  }
});

test('two Host or two Origin headers: 400 on every surface, whichever comes first', opts, async () => {
  const p = s.port;
  const good = `Host: localhost:${p}`;
  const cases = [[good, 'Host: evil.example'], ['Host: evil.example', good], [good, good],
    [good, 'host: localhost'], [good, 'Origin: http://localhost', 'Origin: http://evil.example'],
    [good, 'Origin: http://evil.example', 'ORIGIN: http://localhost']];
  for (const h of cases) {
    assert.equal(await rawStatus(s.url, h), 400, h.join(' | '));
    assert.equal(await rawStatus(s.url, h, 'OPTIONS'), 400, `OPTIONS ${h.join(' | ')}`);
    assert.equal(await rawStatus(s.url, h, 'GET', '/metrics'), 400, `/metrics ${h.join(' | ')}`);
    assert.equal(await rawStatus(s.url, h, 'GET', '/.well-known/agent-skills/index.json'), 400,
      `index ${h.join(' | ')}`);
  }
  // one of each is what every client sends
  assert.equal(await rawStatus(s.url, [good, 'Origin: http://localhost']), 200);
  assert.equal(await rawStatus(s.url, [good], 'GET', '/metrics'), 200);
  const t = await startServer({ args: ['--allowed-hosts', '*'] });
  try {
    assert.equal(await rawStatus(t.url, ['Host: a.example', 'Host: b.example']), 400);
    assert.equal(await rawStatus(t.url, ['Host: a.example']), 200);
  } finally {
    await t.stop();
  }
});

test("--allowed-hosts '*' turns the Host check off, whatever the Host holds", opts, async () => {
  const t = await startServer({ args: ['--allowed-hosts', '*'] });
  try {
    for (const h of ['Host: anything.example', 'Host: a b', 'Host: evil.example/x', 'Host: [fe80::1%25eth0]:8000']) {
      assert.equal(await rawStatus(t.url, [h]), 200, h);
    }
  } finally {
    await t.stop();
  }
});

test('list entries no request can match are named at start', opts, async () => {
  const t = await startServer({ args: ['--allowed-hosts', 'skills.example.com:8000, ::1,ok.example,[::1],[::1]:80',
    '--allowed-origins', 'https://chat.example.com/,chat.example.com,https://good.example,null,http://x.example/p'] });
  try {
    const warned = (e) => t.log.includes(`entry '${e}' can never match`);
    for (const e of ['skills.example.com:8000', '::1', '[::1]:80', 'https://chat.example.com/', 'chat.example.com',
      'http://x.example/p']) {
      assert.ok(warned(e), `no warning for ${e}:\n${t.log}`);
    }
    for (const e of ['ok.example', '[::1]', 'https://good.example', 'null']) {
      assert.ok(!warned(e), `a warning for ${e}:\n${t.log}`);
    }
    assert.match(t.log, /'::1' can never match a Host header: an IPv6 address is matched in brackets/);
    assert.match(t.log, /'https:\/\/chat.example.com\/' can never match an Origin header: an origin has no path/);
  } finally {
    await t.stop();
  }
});

test('body over --max-body -> 413, and the server keeps serving', opts, async () => {
  const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'list_skills', arguments: { query: 'x'.repeat(MAX_BODY + 10) } } });
  const r = await post(s.url, big);
  assert.equal(r.status, 413);
  const ok = await post(s.url, listTools);
  assert.equal(ok.status, 200);
});

test('a 100 KB skill name (under --max-body of a default server) is a clean error', opts, async () => {
  // This server's limit is 64 KiB: 100 KB is 413. Use 60 KB here; tools.test covers 100 KB.
  const r = await post(s.url, { jsonrpc: '2.0', id: 8, method: 'tools/call',
    params: { name: 'load_skill', arguments: { name: 'y'.repeat(60 * 1024) } } });
  assert.equal(r.status, 200);
  assert.equal(r.json.result?.isError ?? (r.json.error?.code === -32602), true, r.text.slice(0, 200));
  assert.ok(r.text.length < 8192, 'the error does not echo the whole name');
});

test('Content-Type not JSON -> 415 (or a JSON-RPC error), never a result', opts, async () => {
  const r = await raw(s.url, { headers: { 'content-type': 'text/plain', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(listTools) });
  assert.ok(r.status === 415 || (r.status >= 400 && r.status < 500), `status ${r.status}`);
  assert.equal(r.json?.result, undefined);
});

// ---- modern era (2026-07-28) ----------------------------------------------------

test('modern server/discover: resultType, versions, capabilities, caching hints', opts, async () => {
  const r = await postModern(s.url, 'server/discover');
  assert.equal(r.status, 200, r.text);
  const res = r.json.result;
  assert.equal(res.resultType, 'complete');
  assert.ok(res.supportedVersions.includes(MODERN), JSON.stringify(res.supportedVersions));
  assert.ok(res.capabilities.tools && res.capabilities.resources && res.capabilities.prompts);
  assert.ok(Number.isInteger(res.ttlMs) && res.ttlMs >= 0, `ttlMs ${res.ttlMs}`);
  assert.ok(['public', 'private'].includes(res.cacheScope), `cacheScope ${res.cacheScope}`);
  assert.equal(res._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'skill-mcp');
  assert.equal(typeof res.instructions, 'string');
  assert.equal(r.headers['mcp-session-id'], undefined);
});

test('modern tools/list, prompts/list, resources/*: resultType + ttlMs/cacheScope', opts, async () => {
  for (const [method, params] of [['tools/list', {}], ['prompts/list', {}], ['resources/list', {}],
    ['resources/templates/list', {}], ['resources/read', { uri: 'skill://csv-profile/SKILL.md' }]]) {
    const r = await postModern(s.url, method, params);
    assert.equal(r.status, 200, `${method}: ${r.text.slice(0, 300)}`);
    const res = r.json.result;
    assert.equal(res.resultType, 'complete', method);
    assert.ok(Number.isInteger(res.ttlMs) && res.ttlMs >= 0, `${method} ttlMs`);
    assert.ok(['public', 'private'].includes(res.cacheScope), `${method} cacheScope`);
  }
  const t = await postModern(s.url, 'tools/list');
  assert.ok(t.json.result.tools.some((x) => x.name === 'run_skill_script'),
    'run_skill_script is offered unless --no-scripts');
});

test('modern tools/call works statelessly and has resultType complete', opts, async () => {
  const r = await postModern(s.url, 'tools/call', { name: 'list_skills', arguments: { query: 'spreadsheet' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result.resultType, 'complete');
  assert.equal(r.json.result.structuredContent.skills[0].name, 'csv-profile');
  const e = await postModern(s.url, 'tools/call', { name: 'no_such_tool', arguments: {} });
  rpcError(e, -32602, 200);
});

test('modern header mismatch -> 400 -32020', opts, async () => {
  // Mcp-Method differs from the body.
  rpcError(await postModern(s.url, 'tools/list', {}, { headers: { 'mcp-method': 'prompts/list' } }), -32020, 400);
  // Mcp-Method missing.
  const noMethod = { ...JSON_HEADERS, 'mcp-protocol-version': MODERN };
  rpcError(await post(s.url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } }, noMethod),
    -32020, 400);
  // MCP-Protocol-Version differs from _meta.
  rpcError(await postModern(s.url, 'tools/list', {}, { headers: { 'mcp-protocol-version': '2025-11-25' } }), -32020, 400);
  // Header and _meta disagree, _meta naming an unknown version: still a mismatch
  // (-32020), not -32022 (conformance sep-2575-http-server-header-mismatch-400).
  rpcError(await postModern(s.url, 'server/discover', {}, {
    meta: modernMeta({ 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' }),
  }), -32020, 400);
  // Mcp-Name differs from params.name / missing.
  rpcError(await postModern(s.url, 'tools/call', { name: 'list_skills', arguments: {} },
    { headers: { 'mcp-name': 'load_skill' } }), -32020, 400);
  const noName = { ...JSON_HEADERS, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call' };
  rpcError(await post(s.url, { jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'list_skills', arguments: {}, _meta: modernMeta() } }, noName), -32020, 400);
  // Values are case-sensitive.
  rpcError(await postModern(s.url, 'tools/list', {}, { headers: { 'mcp-method': 'TOOLS/LIST' } }), -32020, 400);
});

test('modern headers: names case-insensitive, OWS around Mcp-Name accepted', opts, async () => {
  const r = await postModern(s.url, 'tools/call', { name: 'list_skills', arguments: {} },
    { headers: { 'mcp-name': '  list_skills  ' } });
  assert.equal(r.status, 200, r.text);
  const h = { ...JSON_HEADERS, 'MCP-PROTOCOL-VERSION': MODERN, 'MCP-METHOD': 'tools/list' };
  const u = await post(s.url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } }, h);
  assert.equal(u.status, 200, u.text);
});

test('modern Mcp-Name accepts the =?base64?...?= form', opts, async () => {
  const enc = `=?base64?${Buffer.from('list_skills').toString('base64')}?=`;
  const r = await postModern(s.url, 'tools/call', { name: 'list_skills', arguments: {} }, { headers: { 'mcp-name': enc } });
  assert.equal(r.status, 200, r.text);
});

test('modern unsupported version -> 400 -32022 with data.supported', opts, async () => {
  const v = '2099-01-01';
  const r = await postModern(s.url, 'server/discover', {}, {
    meta: modernMeta({ 'io.modelcontextprotocol/protocolVersion': v }),
    headers: { 'mcp-protocol-version': v },
  });
  const err = rpcError(r, -32022, 400);
  assert.ok(Array.isArray(err.data?.supported) && err.data.supported.includes(MODERN), JSON.stringify(err.data));
  assert.equal(err.data.requested, v);
});

test('modern request missing _meta fields -> 400 -32602', opts, async () => {
  const h = { ...JSON_HEADERS, 'mcp-protocol-version': MODERN, 'mcp-method': 'server/discover' };
  const noCaps = { 'io.modelcontextprotocol/protocolVersion': MODERN };
  rpcError(await post(s.url, { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: noCaps } }, h),
    -32602, 400);
  // clientInfo is optional.
  const noInfo = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} };
  const ok = await post(s.url, { jsonrpc: '2.0', id: 2, method: 'server/discover', params: { _meta: noInfo } }, h);
  assert.equal(ok.status, 200, ok.text);
});

test('modern unknown method and removed legacy methods -> 404 -32601', opts, async () => {
  for (const m of ['no/such/method', 'initialize', 'ping', 'logging/setLevel', 'resources/subscribe']) {
    const r = await postModern(s.url, m, {}, { id: 77 });
    rpcError(r, -32601, 404);
    assert.equal(r.json.id, 77);
  }
});

test('modern unknown resource -> -32602 with data.uri', opts, async () => {
  const uri = 'skill://no-such-skill/SKILL.md';
  const r = await postModern(s.url, 'resources/read', { uri });
  const err = rpcError(r, -32602);
  assert.equal(err.data?.uri, uri);
});

test('modern notification -> 202', opts, async () => {
  const h = { ...JSON_HEADERS, 'mcp-protocol-version': MODERN, 'mcp-method': 'notifications/cancelled' };
  const r = await post(s.url, { jsonrpc: '2.0', method: 'notifications/cancelled',
    params: { requestId: 5, _meta: modernMeta() } }, h);
  assert.equal(r.status, 202, r.text);
  assert.equal(r.text, '');
});

test('a %00 in the path names no route: /metrics%00x is not /metrics', opts, async () => {
  const base = new URL(s.url).origin;
  for (const p of ['/metrics%00x', '/healthz%00.png', '/mcp%00']) {
    const r = await raw(`${base}${p}`, { method: 'GET' });
    assert.equal(r.status, 404, `${p} was served as the route before %00`);
  }
  assert.equal((await raw(`${base}/%68ealthz`, { method: 'GET' })).status, 200, 'other escapes still decode');
  assert.equal((await raw(`${base}/healthz`, { method: 'GET' })).status, 200);
});
