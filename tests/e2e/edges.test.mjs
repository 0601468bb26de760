// Server edges: what one client or one odd file can do to everyone else.
// A SKILL.md replaced by a FIFO, the skills root deleted and made again,
// keep-alive answers during a SIGTERM drain, the task store filled by one
// client, secrets on the command line, and authentication on every surface
// that serves skill content.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { startServer, post, raw, poll, TEST_TIMEOUT } from './lib/harness.mjs';
import { sleep, waitGone } from './lib/procs.mjs';

const servers = [];
after(async () => {
  for (const s of servers) { try { await s.stop(); } catch { /* reported by its test */ } }
});
async function start(opts) {
  const s = await startServer(opts);
  servers.push(s);
  return s;
}
let nextId = 1;
const toolCall = (url, name, args, headers = {}) =>
  post(url, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } }, headers);
const textOf = (r) => r.json?.result?.content?.[0]?.text ?? '';

/** Resolves to true when the server process exits within ms. */
function exitsWithin(s, ms) {
  if (s.exited) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    s.proc.once('exit', () => { clearTimeout(t); resolve(true); });
  });
}

test('a SKILL.md replaced by a FIFO is refused at once, and SIGTERM still ends the server',
  { timeout: TEST_TIMEOUT }, async () => {
    const s = await start({ args: ['--shutdown-timeout', '2'] });
    const md = path.join(s.skills, 'git-helper', 'SKILL.md');
    fs.rmSync(md);
    execFileSync('mkfifo', [md]);
    const t0 = Date.now();
    const r = await toolCall(s.url, 'load_skill', { name: 'git-helper' });
    assert.ok(Date.now() - t0 < 3000, 'load_skill must not wait on a FIFO');
    assert.equal(r.json.result.isError, true, JSON.stringify(r.json));
    assert.match(textOf(r), /not a regular file/);
    // Other skills are served as before.
    const ok = await toolCall(s.url, 'load_skill', { name: 'csv-profile' });
    assert.notEqual(ok.json.result.isError, true);
    process.kill(s.proc.pid, 'SIGTERM');
    assert.ok(await exitsWithin(s, 5000), 'the server must exit after SIGTERM');
  });

const listNames = async (url) => {
  const r = await toolCall(url, 'list_skills', {});
  const sc = r.json?.result?.structuredContent;
  return (sc?.skills ?? []).map((k) => k.qualified_name);
};

test('a skills root deleted and made again is served within one refresh interval',
  { timeout: TEST_TIMEOUT }, async () => {
    const s = await start({ refresh: 0.2 });
    assert.ok((await listNames(s.url)).includes('git-helper'));
    fs.rmSync(s.skills, { recursive: true, force: true });
    assert.ok(await poll(async () => (await listNames(s.url)).length === 0, 3000, 50),
      'the deleted root empties the list');
    await sleep(500);       // settle: the missing root is what the index watches now
    const tmp = `${s.skills}.new`;
    fs.mkdirSync(path.join(tmp, 'phoenix'), { recursive: true });
    fs.writeFileSync(path.join(tmp, 'phoenix', 'SKILL.md'),
      '---\nname: phoenix\ndescription: Rises again from a deleted skills root.\n---\n\n# Phoenix\n');
    fs.renameSync(tmp, s.skills);
    const t0 = Date.now();
    const seen = await poll(async () => (await listNames(s.url)).includes('phoenix'), 5000, 50);
    const took = Date.now() - t0;
    assert.ok(seen, 'the recreated root is never served');
    assert.ok(took < 1500, `the recreated root took ${took} ms to be served (refresh 0.2 s)`);
  });
