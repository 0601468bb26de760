// libcurl, libarchive and libjose are loaded when a feature first needs one
// (server/dynlib.h; docs/install.md "Packages", docs/internals/modules.md):
// a server serving skills maps none of them, a discovery archive maps
// libarchive and nothing else, and a library that cannot be loaded (absent,
// not a library, or one missing a function) is named with the package to
// install, where the feature is asked for, while the rest keeps working.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { startServer, connect, callOk, poll, BIN, FIXTURES, TEST_TIMEOUT } from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const PREFIX = '/.well-known/agent-skills/';
const ARCHIVE = 'csv-profile.tar.gz';     // a fixture skill with files: served as a tar.gz
const tmpDirs = [];

after(() => { for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true }); });

/** The three libraries' files mapped in process pid, by name. */
function mapped(pid) {
  const maps = fs.readFileSync(`/proc/${pid}/maps`, 'utf8');
  const out = new Set();
  for (const m of maps.matchAll(/\/(lib(?:curl|archive|jose))[^/\s]*\.so[^/\s]*$/gm)) out.add(m[1]);
  return [...out].sort();
}

/** A folder for LD_LIBRARY_PATH whose files stand in for the named sonames. */
function fakeLibs(files) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-dynlib-'));
  tmpDirs.push(d);
  for (const [name, kind] of Object.entries(files)) {
    const f = path.join(d, name);
    if (kind === 'text') {
      fs.writeFileSync(f, 'not a shared library\n');
    } else {
      // a real shared object that defines none of the library's functions
      const r = spawnSync('cc', ['-shared', '-fPIC', '-o', f, '-x', 'c', '-'],
        { input: 'int skill_mcp_dynlib_test_stub;\n', encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
    }
  }
  return d;
}

async function get(origin, p) {
  const r = await fetch(new URL(p, origin), { headers: { 'accept-encoding': 'identity' } });
  return { status: r.status, body: Buffer.from(await r.arrayBuffer()) };
}

/** GETs over one kept connection (a fresh one could not be accepted with
 * no descriptor left); a closed connection fails the GET. */
function oneConnection(origin) {
  const u = new URL(origin);
  const sock = net.connect(Number(u.port), u.hostname);
  let buf = Buffer.alloc(0);
  let wake = () => {};
  let closed = false;
  sock.on('data', (d) => { buf = Buffer.concat([buf, d]); wake(); });
  sock.on('close', () => { closed = true; wake(); });
  sock.on('error', () => {});
  const ready = new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  async function get(p) {
    await ready;
    sock.write(`GET ${p} HTTP/1.1\r\nHost: ${u.host}\r\nAccept-Encoding: identity\r\n\r\n`);
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = buf.subarray(0, end).toString('latin1');
        const m = /^content-length:\s*(\d+)/im.exec(head);
        assert.ok(m, `a length in\n${head}`);
        const n = Number(m[1]);
        if (buf.length >= end + 4 + n) {
          const r = { status: Number(head.split(' ')[1]), body: buf.subarray(end + 4, end + 4 + n) };
          buf = buf.subarray(end + 4 + n);
          return r;
        }
      }
      assert.ok(!closed, 'the server closed the connection');
      await new Promise((resolve) => { wake = resolve; });
    }
  }
  return { get, close: () => sock.destroy() };
}

test('a server maps none of the three until a feature needs one', opts, async () => {
  const s = await startServer();
  const client = await connect(s.url);
  try {
    await callOk(assert, client, 'list_skills');
    await callOk(assert, client, 'load_skill', { name: 'csv-profile' });
    assert.deepEqual(mapped(s.proc.pid), [], 'serving skills loads none of them');
    const origin = new URL(s.url).origin;
    const r = await get(origin, PREFIX + ARCHIVE);
    assert.equal(r.status, 200);
    assert.deepEqual([...r.body.subarray(0, 2)], [0x1f, 0x8b], 'a gzip stream');
    assert.deepEqual(mapped(s.proc.pid), ['libarchive'], 'an archive loads libarchive alone');
  } finally {
    await client.close();
    await s.stop();
  }
});

test('fetch names a libcurl that cannot be loaded, and its package', opts, () => {
  const into = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-dynlib-into-'));
  tmpDirs.push(into);
  for (const [kind, want] of [['text', /cannot load libcurl\.so\.4 \(.+\): install the libcurl4 package/],
    ['stub', /libcurl\.so\.4 has no curl_\w+: install the libcurl4 package/]]) {
    const env = { ...process.env, LD_LIBRARY_PATH: fakeLibs({ 'libcurl.so.4': kind }) };
    const r = spawnSync(BIN, ['fetch', 'http://127.0.0.1:9/', '--into', into, '--allow-http'],
      { encoding: 'utf8', env, timeout: 10_000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, want);
    assert.deepEqual(fs.readdirSync(into), [], 'nothing installed');
  }
});

test('a server whose libarchive cannot be loaded still serves skills; the archive fails, named',
  opts, async () => {
    const s = await startServer({ env: { LD_LIBRARY_PATH: fakeLibs({ 'libarchive.so.13': 'text' }) } });
    const client = await connect(s.url);
    try {
      const origin = new URL(s.url).origin;
      const r = await get(origin, PREFIX + ARCHIVE);
      assert.ok(r.status >= 500, `archive status ${r.status}`);
      // the log line reaches the pipe beside the answer, not before it
      const named = /discovery: cannot load libarchive\.so\.13 .*install the libarchive13 package/;
      await poll(() => named.test(s.log), 5000);
      assert.match(s.log, named);
      await callOk(assert, client, 'list_skills');
      const md = await get(origin, PREFIX + 'git-helper/SKILL.md');
      assert.equal(md.status, 200, 'a SKILL.md-only skill needs no archive');
    } finally {
      await client.close();
      await s.stop();
    }
  });

test('--oauth-issuer with a libjose missing its functions refuses to start, naming the package',
  opts, () => {
    const env = { ...process.env, LD_LIBRARY_PATH: fakeLibs({ 'libjose.so.0': 'stub' }) };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-dynlib-skills-'));
    tmpDirs.push(dir);
    const r = spawnSync(BIN, ['--skills', dir, '--host', '127.0.0.1', '--port', '0',
      '--oauth-issuer', 'https://issuer.example'], { encoding: 'utf8', env, timeout: 10_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /libjose\.so\.0 has no jose_\w+: install the libjose0 package/);
  });

test('a libarchive that could not be loaded is tried again: installing it needs no restart',
  opts, async () => {
    const libs = fakeLibs({ 'libarchive.so.13': 'text' });
    const s = await startServer({ env: { LD_LIBRARY_PATH: libs } });
    try {
      const origin = new URL(s.url).origin;
      const r = await get(origin, PREFIX + ARCHIVE);
      assert.ok(r.status >= 500, `archive status ${r.status}`);
      // the operator installs the package the log names: the system's copy
      // is found once the stand-in is gone
      fs.rmSync(path.join(libs, 'libarchive.so.13'));
      let last = r;
      const ok = await poll(async () => (last = await get(origin, PREFIX + ARCHIVE)).status === 200,
        10_000, 200);
      assert.ok(ok, `archive status ${last.status} after the library appeared`);
      assert.deepEqual([...last.body.subarray(0, 2)], [0x1f, 0x8b], 'a gzip stream');
      assert.deepEqual(mapped(s.proc.pid), ['libarchive']);
      await poll(() => /discovery: libarchive\.so\.13 loaded/.test(s.log), 5000);
      assert.match(s.log, /discovery: libarchive\.so\.13 loaded/, 'the recovery is logged');
    } finally {
      await s.stop();
    }
  });

test('a libarchive that cannot be loaded is logged once, not once per archive per request',
  opts, async () => {
    const s = await startServer({ env: { LD_LIBRARY_PATH: fakeLibs({ 'libarchive.so.13': 'text' }) } });
    try {
      const origin = new URL(s.url).origin;
      for (let i = 0; i < 5; i++) {
        assert.equal((await get(origin, PREFIX + 'index.json')).status, 200, 'the index is served');
        assert.ok((await get(origin, PREFIX + ARCHIVE)).status >= 500);
      }
      const named = /discovery: cannot load libarchive\.so\.13/g;
      await poll(() => s.log.includes('discovery: cannot load libarchive.so.13'), 5000);
      // the served index still lists the SKILL.md-only skills
      const idx = JSON.parse((await get(origin, PREFIX + 'index.json')).body);
      assert.ok(idx.skills.some((k) => k.url.endsWith('git-helper/SKILL.md')), 'git-helper listed');
      assert.equal(s.log.match(named).length, 1, s.log);
      // an archive skill left out of the index is left out for the library, not its files
      assert.match(s.log, /'csv-profile' is left out of the index: libarchive cannot be loaded/);
      assert.doesNotMatch(s.log, /left out of the index: its files cannot be read/);
    } finally {
      await s.stop();
    }
  });

test('an archive first asked for with no descriptor left: not "install", and served once there are',
  opts, async () => {
    const s = await startServer();
    const c = oneConnection(new URL(s.url).origin);
    try {
      assert.equal((await c.get('/healthz')).status, 200);
      const pid = s.proc.pid;
      const limit = (soft) => {
        const r = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${soft}:`], { encoding: 'utf8' });
        assert.equal(r.status, 0, r.stderr);
      };
      // the start's own opens (the watches, the bodies' index) done first;
      // then none is left at all, not merely as many as are open now
      await poll(() => s.log.includes('indexed the bodies'), 20_000);
      assert.match(s.log, /indexed the bodies/);
      limit(3);
      let r;
      try {
        r = await c.get(PREFIX + ARCHIVE);
      } finally {
        limit(1024);
      }
      assert.ok(r.status >= 500, `archive status ${r.status} with no descriptor left`);
      await poll(() => s.log.includes('discovery: cannot load libarchive'), 5000);
      const line = s.log.split('\n').find((l) => l.includes('discovery: cannot load libarchive'));
      assert.doesNotMatch(line, /install the/, 'a passing failure names no package to install');
      let last;
      const ok = await poll(async () => (last = await c.get(PREFIX + ARCHIVE)).status === 200,
        10_000, 200);
      assert.ok(ok, `archive status ${last.status} once descriptors are back`);
      assert.deepEqual([...last.body.subarray(0, 2)], [0x1f, 0x8b], 'a gzip stream');
    } finally {
      c.close();
      await s.stop();
    }
  });

test('export with a libarchive that cannot be loaded fails, naming it, and writes no index',
  opts, () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-dynlib-export-'));
    tmpDirs.push(out);
    const env = { ...process.env, LD_LIBRARY_PATH: fakeLibs({ 'libarchive.so.13': 'text' }) };
    const r = spawnSync(BIN, ['export', out, '--skills', FIXTURES], { encoding: 'utf8', env, timeout: 10_000 });
    assert.notEqual(r.status, 0, `exit 0 with every archive left out:\n${r.stderr}`);
    assert.match(r.stderr, /skill-mcp export: cannot load libarchive\.so\.13 .*install the libarchive13 package/);
    assert.doesNotMatch(r.stderr, /its files cannot be read/, 'the files are not the cause');
    assert.equal(fs.existsSync(path.join(out, '.well-known', 'agent-skills', 'index.json')), false);
  });
