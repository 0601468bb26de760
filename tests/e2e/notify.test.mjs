// Live list-change notifications: the GET stream of a --stateful session
// (the official SDK client opens it itself), resources/subscribe, the
// per-client bound, and what initialize declares per mode.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import {
  ResourceListChangedNotificationSchema, PromptListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
  startServer, connect, callOk as callOkA, post, postModern, raw, poll, modernMeta, MODERN,
  JSON_HEADERS, TEST_TIMEOUT, indexerSettled,
} from './lib/harness.mjs';
import { sleep } from './lib/procs.mjs';

const opts = { timeout: TEST_TIMEOUT };
const callOk = (c, n, a) => callOkA(assert, c, n, a);

/** Waits until fn() holds, or fails the test: a notification follows a
 * rescan, which a loaded machine can hold up for seconds. */
async function until(fn) {
  assert.ok(await poll(fn, 10_000), `never held: ${fn}`);
}

// Written beside the skills root and renamed over, as editors save: a
// rescan running at the same moment (the body indexer's, after an earlier
// edit) sees the old file or the new one, never the emptied one a
// truncating write leaves for an instant, nor a temporary file in the skill
// (either a change of its own, with a list_changed of its own).
function edit(dir, skill, words) {
  const p = path.join(dir, skill, 'SKILL.md');
  const tmp = path.join(path.dirname(dir), `.edit-${skill.replaceAll('/', '_')}.tmp`);
  fs.writeFileSync(tmp, `---\nname: ${skill}\ndescription: ${words}\n---\n\n# ${skill}\n\n${words}\n`);
  fs.renameSync(tmp, p);
}

/** An SDK client that counts the notifications it receives. */
async function listener(url) {
  const client = await connect(url);
  const seen = { res: 0, prompts: 0, updated: [] };
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => { seen.res++; });
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => { seen.prompts++; });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { seen.updated.push(n.params.uri); });
  return { client, seen };
}

async function streams(url) {
  const r = await raw(url.replace(/\/mcp$/, '/metrics'), { method: 'GET' });
  return Number(/skill_mcp_notify_streams (\d+)/.exec(r.text)?.[1]);
}

/** A live session made by hand: its id. */
async function session(url) {
  const init = await post(url, {
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  assert.equal(init.status, 200);
  const sid = init.headers['mcp-session-id'];
  assert.ok(sid);
  const h = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  assert.equal((await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h)).status, 202);
  return sid;
}

/** A subscriptions/listen stream (2026-07-28): {status, events, ended}. */
function listen(url, notifications, id = 'listen-1') {
  const u = new URL(url);
  const body = JSON.stringify({
    jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications, _meta: modernMeta() },
  });
  return new Promise((resolve, reject) => {
    const s = { events: [], text: '', ended: false };
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
      headers: { ...JSON_HEADERS, 'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen' },
    }, (res) => {
      s.status = res.statusCode;
      s.close = () => req.destroy();
      res.setEncoding('utf8');
      res.on('data', (c) => {
        s.text += c;
        for (const m of s.text.matchAll(/^data: (.*)$/gm)) s.events.push(JSON.parse(m[1]));
        s.text = s.text.replace(/^data: .*$/gm, '');
      });
      res.on('end', () => { s.ended = true; });
      res.on('close', () => { s.ended = true; });
      resolve(s);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A raw GET stream. read: false leaves it unread (a slow reader). Resolves
 * once the status is known: {status, events, ended, close()}.
 */
function getStream(url, sid, { read = true } = {}) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = { events: [], text: '', ended: false };
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname, method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
    }, (res) => {
      s.status = res.statusCode;
      s.close = () => { req.destroy(); };
      res.setEncoding('utf8');
      res.on('end', () => { s.ended = true; });
      res.on('close', () => { s.ended = true; });
      res.on('error', () => { s.ended = true; });
      if (!read) {
        res.pause();
        resolve(s);
        return;
      }
      res.on('data', (c) => {
        s.text += c;
        for (const m of s.text.matchAll(/^data: (.*)$/gm)) s.events.push(JSON.parse(m[1]));
        s.text = s.text.replace(/^data: .*$/gm, '');
      });
      resolve(s);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('notifications on a --stateful session', () => {
  let s;
  let a;
  let b;
  before(async () => {
    s = await startServer({ args: ['--stateful'] });
    // The tests count notifications per reload: the body indexer's rescan,
    // landing between two edits, would add one of its own.
    await indexerSettled(s);
    a = await listener(s.url);
    b = await listener(s.url);
    await until(async () => (await streams(s.url)) === 2);
  });
  after(async () => {
    try { await a?.client.close(); await b?.client.close(); } finally { await s?.stop(); }
  });

  test('initialize declares listChanged and subscribe', opts, async () => {
    const caps = a.client.getServerCapabilities();
    assert.equal(caps.resources.listChanged, true);
    assert.equal(caps.resources.subscribe, true);
    assert.equal(caps.prompts.listChanged, true);
    assert.equal(caps.tools.listChanged, false, 'the tools never change');
  });

  test('a burst of edits picked up by one reload: one list_changed of each kind', opts, async () => {
    const r0 = a.seen.res;
    const p0 = a.seen.prompts;
    for (let i = 0; i < 3; i++) edit(s.skills, 'git-helper', `burst ${i} edit`);
    await callOk(a.client, 'reload_skills', {});
    await until(() => a.seen.res > r0 && a.seen.prompts > p0);
    await sleep(400);
    assert.equal(a.seen.res, r0 + 1);
    assert.equal(a.seen.prompts, p0 + 1);
  });

  test('resources/subscribe: updated for that skill only', opts, async () => {
    await a.client.subscribeResource({ uri: 'skill://csv-profile/SKILL.md' });
    const r0 = a.seen.res;
    const u0 = a.seen.updated.length;
    edit(s.skills, 'git-helper', 'another skill moved');
    await callOk(b.client, 'reload_skills', {});
    await until(() => a.seen.res > r0);
    await sleep(300);
    assert.equal(a.seen.updated.length, u0, 'no updated for a skill nobody subscribed to');
    edit(s.skills, 'csv-profile', 'profile CSV files, edited');
    await callOk(b.client, 'reload_skills', {});
    await until(() => a.seen.updated.length > u0);
    assert.deepEqual(a.seen.updated.slice(u0), ['skill://csv-profile/SKILL.md']);
    assert.equal(b.seen.updated.length, 0, 'the other session subscribed to nothing');
    await a.client.unsubscribeResource({ uri: 'skill://csv-profile/SKILL.md' });
    const r1 = a.seen.res;
    edit(s.skills, 'csv-profile', 'profile CSV files, edited again');
    await callOk(b.client, 'reload_skills', {});
    await until(() => a.seen.res > r1);
    await sleep(300);
    assert.equal(a.seen.updated.length, u0 + 1, 'unsubscribed: no more updated');
  });

  test('a reference rewritten in place with the same length is updated', opts, async () => {
    await indexerSettled(s);    // its rescan sets up the watches this relies on
    const uri = 'skill://csv-profile/references/format.md';
    await a.client.subscribeResource({ uri });
    const u0 = a.seen.updated.length;
    const p = path.join(s.skills, 'csv-profile', 'references', 'format.md');
    const before = fs.readFileSync(p, 'utf8');
    const after = before.replace('Line 001', 'LINE 001');
    assert.equal(after.length, before.length);
    fs.writeFileSync(p, after);
    await callOk(b.client, 'reload_skills', {});
    await until(() => a.seen.updated.length > u0);
    await sleep(300);
    assert.deepEqual(a.seen.updated.slice(u0), [uri], 'that file, and nothing else of the skill');
    const read = await a.client.readResource({ uri });
    assert.match(read.contents[0].text, /LINE 001/);
    await a.client.unsubscribeResource({ uri });
  });

  test('resources/subscribe to a bare skill://name covers every file of the folder', opts, async () => {
    await indexerSettled(s);
    await a.client.subscribeResource({ uri: 'skill://csv-profile' });
    const u0 = a.seen.updated.length;
    const p = path.join(s.skills, 'csv-profile', 'scripts', 'profile.py');
    fs.writeFileSync(p, fs.readFileSync(p, 'utf8').replace(/import/, 'IMPORT'));
    await callOk(b.client, 'reload_skills', {});
    await until(() => a.seen.updated.length > u0);
    await sleep(300);
    assert.deepEqual(a.seen.updated.slice(u0), ['skill://csv-profile'], 'named as subscribed');
    await a.client.unsubscribeResource({ uri: 'skill://csv-profile' });
  });

  test('subscribing to an unknown or malformed URI is a clear error', opts, async () => {
    await assert.rejects(a.client.subscribeResource({ uri: 'skill://no-such-skill/SKILL.md' }),
      (e) => e.code === -32602 && /Resource not found/.test(e.message));
    await assert.rejects(a.client.subscribeResource({ uri: 'skill://csv-profile/no/such/file' }),
      (e) => e.code === -32602 && /no such file/.test(e.message));
    await assert.rejects(a.client.subscribeResource({ uri: 'https://example.com/x' }),
      (e) => e.code === -32602 && /skill:\/\//.test(e.message));
  });

  test('SIGHUP notifies too', opts, async () => {
    const r0 = a.seen.res;
    edit(s.skills, 'pdf-tools', 'pdf tools after a hangup');
    process.kill(s.proc.pid, 'SIGHUP');
    await until(() => a.seen.res > r0);
  });

  test('a reader that never reads delays neither the rescan nor other listeners', opts, async () => {
    const sid = await session(s.url);
    const slow = await getStream(s.url, sid, { read: false });
    assert.equal(slow.status, 200);
    const r0 = b.seen.res;
    for (let i = 0; i < 5; i++) {
      edit(s.skills, 'git-helper', `slow reader round ${i}`);
      const t0 = Date.now();
      await callOk(a.client, 'reload_skills', {});
      assert.ok(Date.now() - t0 < 2000, 'reload_skills answered promptly');
    }
    await until(() => b.seen.res > r0);
    const card = JSON.stringify(await callOk(b.client, 'list_skills', {}));
    assert.match(card, /slow reader round 4/);
    slow.close();
  });

  test('a second GET stream on one session is refused (409); DELETE ends the stream', opts, async () => {
    const sid = await session(s.url);
    const one = await getStream(s.url, sid);
    assert.equal(one.status, 200);
    const two = await getStream(s.url, sid);
    assert.equal(two.status, 409);
    const del = await raw(s.url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
    assert.equal(del.status, 204);
    await until(() => one.ended);
  });

  test('HEAD answers as GET would, with no body and no stream opened', opts, async () => {
    const sid = await session(s.url);
    const n0 = await streams(s.url);
    const hd = { accept: 'text/event-stream', 'mcp-session-id': sid };
    const h = await raw(s.url, { method: 'HEAD', headers: hd });
    assert.equal(h.status, 200);
    assert.equal(h.headers['content-type'], 'text/event-stream');
    assert.equal(h.headers['cache-control'], 'no-cache');
    assert.equal(h.text, '');
    assert.equal(h.headers['content-length'], undefined, 'a stream has no length, as on GET');
    assert.equal(await streams(s.url), n0, 'HEAD opened no stream');
    const g = await getStream(s.url, sid);
    assert.equal(g.status, 200, 'HEAD left the session its one stream');
    await until(async () => (await streams(s.url)) === n0 + 1);
    assert.equal((await raw(s.url, { method: 'HEAD', headers: hd })).status, 409, 'as a second GET');
    g.close();
    await until(async () => (await streams(s.url)) === n0);
    assert.equal((await raw(s.url, { method: 'HEAD', headers: { 'mcp-session-id': sid } })).status, 406);
    assert.equal((await raw(s.url, { method: 'HEAD', headers: { accept: 'text/event-stream' } })).status, 400);
    const gone = await raw(s.url, {
      method: 'HEAD', headers: { accept: 'text/event-stream', 'mcp-session-id': 'f'.repeat(32) },
    });
    assert.equal(gone.status, 404);
    assert.equal(gone.text, '');
  });

  test('GET without a live session: 400 / 404', opts, async () => {
    const none = await raw(s.url, { method: 'GET', headers: { accept: 'text/event-stream' } });
    assert.equal(none.status, 400);
    const gone = await raw(s.url, {
      method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 'f'.repeat(32) },
    });
    assert.equal(gone.status, 404);
  });
});

describe('the per-client bound on notification streams', () => {
  let s;
  before(async () => { s = await startServer({ args: ['--stateful'] }); });
  after(async () => { await s?.stop(); });

  test('the ninth stream of one peer is refused; a dropped reader frees its slot', opts, async () => {
    const open = [];
    for (let i = 0; i < 8; i++) {
      const g = await getStream(s.url, await session(s.url));
      assert.equal(g.status, 200);
      open.push(g);
    }
    const sid9 = await session(s.url);
    const extra = await raw(s.url, {
      method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid9 },
    });
    assert.equal(extra.status, 429);
    assert.match(extra.json.error.message, /already has 8 notification streams/);
    open[0].close();
    await until(async () => (await streams(s.url)) === 7);
    const again = await getStream(s.url, sid9);
    assert.equal(again.status, 200, 'the dead reader no longer counts');
    for (const g of [...open.slice(1), again]) g.close();
  });
});

describe('a stateless server', () => {
  let s;
  before(async () => { s = await startServer(); });
  after(async () => { await s?.stop(); });

  test('declares no listChanged or subscribe and has no GET stream', opts, async () => {
    const c = await connect(s.url);
    const caps = c.getServerCapabilities();
    assert.equal(caps.resources.listChanged, false);
    assert.equal(caps.resources.subscribe, false);
    assert.equal(caps.prompts.listChanged, false);
    await c.close();
    const g = await raw(s.url, { method: 'GET', headers: { accept: 'text/event-stream' } });
    assert.equal(g.status, 405);
  });
});

describe('subscriptions/listen (2026-07-28), stateless', () => {
  let s;
  before(async () => { s = await startServer(); });
  after(async () => { await s?.stop(); });

  test('server/discover declares listChanged and subscribe', opts, async () => {
    const r = await postModern(s.url, 'server/discover');
    const caps = r.json.result.capabilities;
    assert.equal(caps.resources.listChanged, true);
    assert.equal(caps.resources.subscribe, true);
    assert.equal(caps.prompts.listChanged, true);
    assert.equal(caps.tools.listChanged, false);
  });

  test('a skill named bare is acknowledged and watched as its folder', opts, async () => {
    const l = await listen(s.url, { resourceSubscriptions: ['skill://csv-profile'] }, 'listen-bare');
    await poll(() => l.events.length >= 1, 10_000);
    assert.deepEqual(l.events[0].params.notifications, { resourceSubscriptions: ['skill://csv-profile'] },
      'the acknowledgement names what is watched, not a file of it');
    edit(s.skills, 'csv-profile', 'profile CSV files, watched as a folder');
    await postModern(s.url, 'tools/call', { name: 'reload_skills', arguments: {} }, { id: 3 });
    await poll(() => l.events.length >= 2, 10_000);
    assert.equal(l.events[1].method, 'notifications/resources/updated');
    assert.equal(l.events[1].params.uri, 'skill://csv-profile');
    l.close();
  });

  test('acknowledged first, only what was asked, tagged; ends with the response on drain', opts, async () => {
    const l = await listen(s.url, {
      resourcesListChanged: true, toolsListChanged: true,
      resourceSubscriptions: ['skill://csv-profile/SKILL.md', 'skill://no-such-skill/SKILL.md'],
    });
    assert.equal(l.status, 200);
    await poll(() => l.events.length >= 1, 10_000);
    const ack = l.events[0];
    assert.equal(ack.method, 'notifications/subscriptions/acknowledged');
    assert.deepEqual(ack.params.notifications, {
      resourcesListChanged: true, resourceSubscriptions: ['skill://csv-profile/SKILL.md'],
    }, 'tools never change and an unknown skill is not honored');
    assert.equal(ack.params._meta['io.modelcontextprotocol/subscriptionId'], 'listen-1');
    edit(s.skills, 'csv-profile', 'profile CSV files, listened to');
    const r = await postModern(s.url, 'tools/call', { name: 'reload_skills', arguments: {} }, { id: 2 });
    assert.equal(r.status, 200);
    await poll(() => l.events.length >= 3, 10_000);
    await sleep(300);
    const methods = l.events.slice(1).map((e) => e.method).sort();
    assert.deepEqual(methods, ['notifications/resources/list_changed', 'notifications/resources/updated']);
    for (const e of l.events) assert.equal(e.params._meta['io.modelcontextprotocol/subscriptionId'], 'listen-1');
    assert.equal(l.events.find((e) => e.method === 'notifications/resources/updated').params.uri,
      'skill://csv-profile/SKILL.md');
    process.kill(s.proc.pid, 'SIGTERM');
    await poll(() => l.ended, 10_000);
    const last = l.events.at(-1);
    assert.equal(last.id, 'listen-1');
    assert.equal(last.result.resultType, 'complete');
    assert.equal(last.result._meta['io.modelcontextprotocol/subscriptionId'], 'listen-1');
  });

  test('the refresh tick sees a same-size edit in place of a script', opts, async () => {
    const s2 = await startServer({ refresh: 1 });
    try {
      await indexerSettled(s2);
      const uri = 'skill://csv-profile/scripts/profile.py';
      const l = await listen(s2.url, { resourceSubscriptions: [uri, 'skill://csv-profile/SKILL.md'] }, 'tick');
      await poll(() => l.events.length >= 1, 10_000);
      const p = path.join(s2.skills, 'csv-profile', 'scripts', 'profile.py');
      const text = fs.readFileSync(p, 'utf8');
      fs.writeFileSync(p, text.replace(/import/, 'IMPORT'));
      assert.equal(fs.statSync(p).size, Buffer.byteLength(text));
      await poll(() => l.events.length >= 2, 10_000);
      await sleep(1500);
      assert.deepEqual(l.events.slice(1).map((e) => [e.method, e.params.uri]),
        [['notifications/resources/updated', uri]], 'the script, not SKILL.md');
      l.close();
    } finally { await s2.stop(); }
  });

  test('notifications must be an object', opts, async () => {
    const s2 = await startServer();
    try {
      const r = await postModern(s2.url, 'subscriptions/listen', {});
      assert.equal(r.json.error.code, -32602);
      assert.match(r.json.error.message, /params\.notifications/);
    } finally { await s2.stop(); }
  });
});

describe('--workers 2', () => {
  let s;
  before(async () => { s = await startServer({ args: ['--workers', '2'] }); });
  after(async () => { await s?.stop(); });

  test('each worker notifies the streams it holds when its own index changes', opts, async () => {
    // Several streams, so that both workers are likely to hold some.
    const ls = [];
    for (let i = 0; i < 6; i++) ls.push(await listen(s.url, { resourcesListChanged: true }, `w-${i}`));
    await until(() => ls.every((l) => l.events.length >= 1));
    edit(s.skills, 'git-helper', 'seen by every worker');
    process.kill(s.proc.pid, 'SIGHUP');     // forwarded to each worker, which rescans its own index
    await until(() => ls.every((l) => l.events.some((e) => e.method === 'notifications/resources/list_changed')));
    for (const l of ls) l.close();
  });
});
