// skill-mcp fetch URL --into DIR: installs skills from a discovery index.
//
// Round trips: a running skill-mcp on 127.0.0.1 and its `export` folder
// served by a small static server; the installed folders equal the sources
// byte for byte. Hazards: crafted indexes and archives (built here with
// python3's tarfile) served from a node http server on 127.0.0.1; each one
// is refused with its reason, the exit status is 1, and the --into folder
// is left exactly as it was (no staging folder behind).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';

import { startServer, copyFixtures, BIN, runCli, connect, callOk, callErr, assertInert } from './lib/harness.mjs';

const opts = { timeout: 60_000 };
const SCHEMA = 'https://schemas.agentskills.io/discovery/0.2.0/schema.json';
const WK = '.well-known/agent-skills/';
const tmpDirs = [];
let work;            // scratch folder of this file
let arch = {};       // crafted archives by name: Buffer
let hz;              // the hazard server: {origin, routes, close}

const sha = (b) => 'sha256:' + crypto.createHash('sha256').update(b).digest('hex');

function tmp(prefix) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tmpDirs.push(d);
  return d;
}

/** Run `skill-mcp fetch ...` without blocking this process (it serves the hazards). */
function fetchCli(args, timeout = 45_000) {
  return new Promise((resolve, reject) => {
    const p = spawn(BIN, ['fetch', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const t = setTimeout(() => { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }, timeout);
    p.on('close', (code, signal) => {
      clearTimeout(t);
      // Under ASan/UBSan a report may share exit status 1 with a refusal.
      if (/Sanitizer|runtime error/.test(stderr)) reject(new Error(`sanitizer report:\n${stderr}`));
      else resolve({ code, signal, stdout, stderr });
    });
  });
}

/** The local-test flags: plain http, and exactly the loopback servers of
 * these URLs (fetch refuses loopback and private addresses otherwise). */
const local = (...urls) => ['--allow-http', ...urls.flatMap((u) => ['--allow-address', new URL(u).host])];

/** Every entry under dir (dotfiles too): type, mode and content. */
function snapshot(dir) {
  const out = {};
  const walk = (d, rel) => {
    for (const n of fs.readdirSync(d).sort()) {
      const p = path.join(d, n);
      const r = rel ? `${rel}/${n}` : n;
      const st = fs.lstatSync(p);
      if (st.isDirectory()) {
        out[r] = `dir ${st.mode & 0o7777}`;
        walk(p, r);
      } else if (st.isSymbolicLink()) {
        out[r] = `link ${fs.readlinkSync(p)}`;
      } else {
        out[r] = `file ${st.mode & 0o7777} ${sha(fs.readFileSync(p))}`;
      }
    }
  };
  walk(dir, '');
  return out;
}

/** Files of a skill folder as served (no dotfiles), relative path -> bytes. */
function files(dir) {
  const out = {};
  const walk = (d, rel) => {
    for (const n of fs.readdirSync(d)) {
      if (n.startsWith('.')) continue;
      const p = path.join(d, n);
      const r = rel ? `${rel}/${n}` : n;
      if (fs.lstatSync(p).isDirectory()) walk(p, r);
      else out[r] = fs.readFileSync(p);
    }
  };
  walk(dir, '');
  return out;
}

function assertSameFiles(got, want, what) {
  const a = files(got);
  const b = files(want);
  assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort(), `${what}: same file list`);
  for (const k of Object.keys(b)) assert.ok(a[k].equals(b[k]), `${what}/${k}: same bytes`);
}

// ---- crafted archives --------------------------------------------------------

const PY = String.raw`
import io, os, sys, tarfile
out = sys.argv[1]
def md(name, desc='A crafted skill'):
    return ('---\nname: %s\ndescription: %s\n---\n# %s\n' % (name, desc, name)).encode()
def add(t, name, data=b'', mode=0o644, typ=tarfile.REGTYPE, link=''):
    ti = tarfile.TarInfo(name)
    ti.type = typ
    ti.mode = mode
    ti.linkname = link
    if typ == tarfile.REGTYPE:
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)
def make(fname, build, gz=True):
    with tarfile.open(os.path.join(out, fname), 'w:gz' if gz else 'w', format=tarfile.GNU_FORMAT) as t:
        build(t)
def skill(t, name='hz'):
    add(t, name + '/', typ=tarfile.DIRTYPE, mode=0o755)
    add(t, name + '/SKILL.md', md(name))
make('ok.tar.gz', lambda t: (skill(t), add(t, 'hz/run.sh', b'#!/bin/sh\necho hi\n', 0o4755)))
make('root.tar.gz', lambda t: (add(t, './SKILL.md', md('hz')), add(t, './refs/a.md', b'ref\n')))
make('plain.tar', lambda t: skill(t), gz=False)
make('abs.tar.gz', lambda t: (skill(t), add(t, '/tmp/skill-mcp-fetch-abs', b'x')))
make('dotdot.tar.gz', lambda t: (skill(t), add(t, 'hz/../../skill-mcp-fetch-dotdot', b'x')))
make('symlink.tar.gz', lambda t: (skill(t), add(t, 'hz/out', typ=tarfile.SYMTYPE, link='../../../etc'),
                                  add(t, 'hz/out/pwned', b'x')))
make('symlink-in.tar.gz', lambda t: (skill(t), add(t, 'hz/same', typ=tarfile.SYMTYPE, link='SKILL.md')))
make('hardlink.tar.gz', lambda t: (skill(t), add(t, 'hz/hard', typ=tarfile.LNKTYPE, link='/etc/passwd')))
make('device.tar.gz', lambda t: (skill(t), add(t, 'hz/null', typ=tarfile.CHRTYPE, mode=0o666)))
make('fifo.tar.gz', lambda t: (skill(t), add(t, 'hz/pipe', typ=tarfile.FIFOTYPE)))
make('dup.tar.gz', lambda t: (skill(t), add(t, 'hz/a.md', b'first\n'), add(t, 'hz/a.md', b'second\n')))
make('dupdir.tar.gz', lambda t: (skill(t), add(t, 'hz/d/', typ=tarfile.DIRTYPE), add(t, 'hz/d', typ=tarfile.DIRTYPE)))
make('through.tar.gz', lambda t: (skill(t), add(t, 'hz/f', b'file\n'), add(t, 'hz/f/g', b'x')))
make('dirfile.tar.gz', lambda t: (skill(t), add(t, 'hz/d/x', b'x'), add(t, 'hz/d', b'file over a folder')))
make('many.tar.gz', lambda t: (skill(t), [add(t, 'hz/f%05d' % i) for i in range(10000)]))
make('bigfile.tar.gz', lambda t: (skill(t), add(t, 'hz/zeros', bytes(65 * 1024 * 1024 + 1))))
make('bomb.tar.gz', lambda t: (skill(t), [add(t, 'hz/z%d' % i, bytes(1 << 20)) for i in range(4)]))
make('noskill.tar.gz', lambda t: add(t, 'hz/README.md', b'no skill here\n'))
make('twotop.tar.gz', lambda t: (skill(t), add(t, 'other/x.md', b'x')))
make('misname.tar.gz', lambda t: (add(t, 'hz/', typ=tarfile.DIRTYPE), add(t, 'hz/SKILL.md', md('other'))))
make('desc.tar.gz', lambda t: (add(t, 'hz/', typ=tarfile.DIRTYPE), add(t, 'hz/SKILL.md', md('hz', 'Deletes every file it can reach'))))
def dumpdir(t, n):
    ti = tarfile.TarInfo('hz/d')
    ti.type = b'D'
    ti.size = n
    t.addfile(ti, io.BytesIO(bytes(n)))
make('dumpdir.tar.gz', lambda t: (skill(t), dumpdir(t, 8 << 20)))
make('esc.tar.gz', lambda t: (skill(t), add(t, '/x\x1b[2K\rinstalled evil: ok\n', b'x')))
make('escdesc.tar.gz', lambda t: (add(t, 'hz/', typ=tarfile.DIRTYPE),
    add(t, 'hz/SKILL.md', b'---\nname: hz\ndescription: "Tables\\e[8m hidden\\ninstalled forged: ok\\u009b2J"\n---\n# hz\n')))
open(os.path.join(out, 'garbage.tar.gz'), 'wb').write(b'\x1f\x8b\x08\x00' + os.urandom(200))
`;

// ---- the hazard server ----------------------------------------------------------

/** routes: url path -> {body, type, status, headers} or (req, res) => void.
 * tls: {key, cert} serves https. hits counts the requests it was sent. */
function serveRoutes(tls, host = '127.0.0.1') {
  const routes = new Map();
  const sockets = new Set();
  const srv0 = { hits: 0 };
  const handler = (req, res) => {
    srv0.hits++;
    const r = routes.get(req.url.split('?')[0]);
    if (typeof r === 'function') return r(req, res);
    if (!r) { res.writeHead(404); return res.end('not found'); }
    const headers = { ...(r.headers ?? {}) };
    if (r.type) headers['Content-Type'] = r.type;
    if (!r.chunked) headers['Content-Length'] = r.body.length;
    res.writeHead(r.status ?? 200, headers);
    if (r.chunked) {
      for (let i = 0; i < r.body.length; i += 1000) res.write(r.body.subarray(i, i + 1000));
      return res.end();
    }
    res.end(r.body);
  };
  const srv = tls ? https.createServer(tls, handler) : http.createServer(handler);
  srv.on(tls ? 'secureConnection' : 'connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  return new Promise((resolve) => {
    srv.listen(0, host, () => {
      resolve(Object.assign(srv0, {
        origin: `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${srv.address().port}`,
        port: srv.address().port,
        routes,
        close: () => new Promise((r) => { for (const s of sockets) s.destroy(); srv.close(r); }),
      }));
    });
  });
}

/** Publishes an index at /<scen>/.well-known/agent-skills/index.json; entries
 * default to an archive named hz with the digest of its body; schema null:
 * no $schema at all. */
function publish(scen, entries, schema = SCHEMA) {
  const skills = entries.map((e) => {
    const body = e.body ?? arch[e.archive ?? 'ok.tar.gz'];
    const url = e.url ?? `${e.name ?? 'hz'}.tar.gz`;
    const abs = new URL(url, `${hz.origin}/${scen}/${WK}`);
    if (!e.noRoute && abs.origin === hz.origin) {
      hz.routes.set(abs.pathname, { body, type: e.ctype ?? 'application/gzip', chunked: e.chunked });
    }
    return {
      name: e.name ?? 'hz',
      description: e.description ?? 'A crafted skill',
      type: e.type ?? 'archive',
      url,
      digest: e.digest ?? sha(body),
    };
  });
  const doc = schema === null ? { skills } : { $schema: schema, skills };
  hz.routes.set(`/${scen}/${WK}index.json`,
    { body: Buffer.from(JSON.stringify(doc)), type: 'application/json' });
  return `${hz.origin}/${scen}/`;
}

/** An --into folder holding one unrelated installed skill. */
function intoDir() {
  const d = tmp('skill-fetch-into-');
  fs.mkdirSync(path.join(d, 'keep'));
  fs.writeFileSync(path.join(d, 'keep', 'SKILL.md'), '---\nname: keep\ndescription: k\n---\n');
  return d;
}

/** Fetches url into a fresh folder and expects refusal matching re, with
 * the folder unchanged. The servers of allow (default: url's) are let
 * through the address check. */
async function expectRefused(url, re, extra = [], allow = [url]) {
  const into = intoDir();
  const before = snapshot(into);
  const r = await fetchCli([url, `--into=${into}`, ...(allow.length ? local(...allow) : []), ...extra]);
  assert.equal(r.code, 1, `exit 1 expected, got ${r.code} ${r.signal ?? ''}\n${r.stdout}${r.stderr}`);
  assert.match(r.stdout + r.stderr, re);
  assert.deepEqual(snapshot(into), before, 'the --into folder is unchanged');
  return r;
}

before(async () => {
  work = tmp('skill-fetch-work-');
  const py = spawnSync('python3', ['-c', PY, work], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(py.status, 0, `python3 tarfile: ${py.stderr}`);
  for (const f of fs.readdirSync(work)) arch[f] = fs.readFileSync(path.join(work, f));
  hz = await serveRoutes();
});

after(async () => {
  await hz?.close();
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

// ---- round trips ------------------------------------------------------------------

// Fixture skills in the index once globex/reports (a second "reports") is gone.
const SOURCES = { billing: 'acme/billing', reports: 'acme/reports', 'csv-profile': 'csv-profile',
  'deploy-runner': 'deploy-runner', 'git-helper': 'git-helper', 'pdf-tools': 'pdf-tools' };

test('fetch from a running skill-mcp: every skill installed, byte for byte; again: refused, nothing changed',
  opts, async () => {
    const s = await startServer({ setup(skills) { fs.rmSync(path.join(skills, 'globex'), { recursive: true }); } });
    try {
      const into = tmp('skill-fetch-rt-');
      const r = await fetchCli([new URL(s.url).origin, ...local(s.url), '--into', into]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /6 installed, 0 skipped, 0 refused/);
      assert.deepEqual(fs.readdirSync(into).sort(), Object.keys(SOURCES).sort(),
        'exactly the indexed skills, no staging folder left');
      for (const [name, src] of Object.entries(SOURCES)) {
        assertSameFiles(path.join(into, name), path.join(s.skills, src), name);
        assert.equal(fs.statSync(path.join(into, name)).mode & 0o777, 0o755 & ~process.umask());
      }
      // The installed library serves: validate finds no errors.
      const v = runCli(['validate', into], 30_000);
      assert.equal(v.code, 0, v.stdout + v.stderr);

      const before = snapshot(into);
      const again = await fetchCli([new URL(s.url).origin, ...local(s.url), '--into', into, '--json']);
      assert.equal(again.code, 1);
      const j = JSON.parse(again.stdout);
      assert.equal(j.refused, 6);
      for (const e of j.skills) assert.match(e.reason, /already exists; fetch never replaces/);
      assert.deepEqual(snapshot(into), before);
    } finally {
      await s.stop();
    }
  });

test('with a lock, a fetched skill arrives quarantined until `skill-mcp lock approve` names it', opts, async () => {
  const s = await startServer({ setup(skills) { fs.rmSync(path.join(skills, 'globex'), { recursive: true }); } });
  const into = tmp('skill-fetch-lock-');
  fs.chmodSync(into, 0o755);      // served: the script user (nobody, as root) must read it
  const lock = path.join(tmp('skill-fetch-lockfile-'), 'skills.lock');
  // a library with one reviewed skill and its lock
  fs.mkdirSync(path.join(into, 'local-notes'));
  fs.writeFileSync(path.join(into, 'local-notes', 'SKILL.md'),
    '---\nname: local-notes\ndescription: Notes kept by the team.\n---\n# Notes\n');
  const a = runCli(['lock', 'approve', '--all', '--lock', lock, '--skills', into, '--by', 'alice']);
  assert.equal(a.code, 0, a.stdout + a.stderr);
  let b;
  try {
    const r = await fetchCli([new URL(s.url).origin, ...local(s.url), '--into', into, '--name', 'pdf-tools']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.ok(!fs.readFileSync(lock, 'utf8').includes('pdf-tools'), 'fetch never approves');
    b = await startServer({ skillsDirs: [into], args: ['--lock', lock] });
    const c = await connect(b.url);
    const list = await callOk(assert, c, 'list_skills', { limit: 100 });
    const q = list.skills.find((k) => (k.qualified_name ?? k.name) === 'pdf-tools');
    assert.equal(q?.quarantined, true, JSON.stringify(list));
    assert.ok(q.quarantine_reason.includes(`skill-mcp lock approve pdf-tools --lock ${lock}`), q.quarantine_reason);
    assert.equal(list.skills.find((k) => (k.qualified_name ?? k.name) === 'local-notes')?.quarantined, undefined);
    const msg = await callErr(assert, c, 'load_skill', { name: 'pdf-tools' });
    assert.match(msg, /quarantined/);
    // reviewed: approve it, and the server serves it
    const d = runCli(['lock', 'diff', 'pdf-tools', '--lock', lock, '--skills', into]);
    assert.equal(d.code, 1, 'diff reports the unapproved skill');
    const ap = runCli(['lock', 'approve', 'pdf-tools', '--lock', lock, '--skills', into, '--by', 'bob']);
    assert.equal(ap.code, 0, ap.stdout + ap.stderr);
    await callOk(assert, c, 'reload_skills', {});
    const body = await callOk(assert, c, 'load_skill', { name: 'pdf-tools' });
    assert.equal(body.name, 'pdf-tools');
    await c.close();
  } finally {
    if (b) await b.stop();
    await s.stop();
  }
});

test('two teams\' skills of one name (acme/reports, globex/reports): the first installs, the second is refused',
  opts, async () => {
    const s = await startServer({});
    try {
      const into = tmp('skill-fetch-teams-');
      const r = await fetchCli([new URL(s.url).origin, ...local(s.url), '--into', into, '--name', 'reports', '--json']);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      const j = JSON.parse(r.stdout);
      assert.deepEqual(j.skills.map((e) => e.status), ['installed', 'refused']);
      assert.match(j.skills[1].reason, /reports already exists; fetch never replaces/);
      const idx = JSON.parse((await (await fetch(`${new URL(s.url).origin}/${WK}index.json`)).text()));
      const first = idx.skills.find((e) => e.name === 'reports').url.replace('/SKILL.md', '');
      assertSameFiles(path.join(into, 'reports'), path.join(s.skills, first), 'reports');
    } finally {
      await s.stop();
    }
  });

test('fetch from an `export` folder served statically; --name picks skills; a name not in the index is refused',
  opts, async () => {
    const s = copyFixtures();
    tmpDirs.push(s.dir);
    const out = tmp('skill-fetch-export-');
    const ex = runCli(['export', out, '--skills', s.skills], 30_000);
    assert.equal(ex.code, 0, ex.stderr);
    const srv = await serveRoutes();
    try {
      const walk = (d, rel) => {
        for (const n of fs.readdirSync(d)) {
          const p = path.join(d, n);
          const r = `${rel}/${n}`;
          if (fs.statSync(p).isDirectory()) walk(p, r);
          else srv.routes.set(encodeURI(r), { body: fs.readFileSync(p),
            type: n.endsWith('.gz') ? 'application/gzip' : n.endsWith('.json') ? 'application/json' : 'text/markdown' });
        }
      };
      walk(out, '/pub');
      const into = tmp('skill-fetch-ex-');
      const r = await fetchCli([`${srv.origin}/pub`, ...local(srv.origin), '--into', into, '--name', 'billing',
        '--name', 'git-helper', '--name', 'no-such-skill', '--json']);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      const j = JSON.parse(r.stdout);
      assert.equal(j.installed, 2);
      assert.equal(j.refused, 1);
      assert.deepEqual(j.skills.find((e) => e.name === 'no-such-skill'),
        { name: 'no-such-skill', status: 'refused', reason: 'not in the index' });
      assert.equal(j.skills.find((e) => e.name === 'billing').path, `${into}/billing`);
      assert.deepEqual(fs.readdirSync(into).sort(), ['billing', 'git-helper']);
      assertSameFiles(path.join(into, 'billing'), path.join(s.skills, 'acme/billing'), 'billing');
      assertSameFiles(path.join(into, 'git-helper'), path.join(s.skills, 'git-helper'), 'git-helper');
    } finally {
      await srv.close();
    }
  });

// ---- accepted shapes ----------------------------------------------------------------

test('archive layouts: one top folder, the skill at the root, plain tar; modes sanitised', opts, async () => {
  const into = tmp('skill-fetch-lay-');
  const url = publish('layouts', [
    { name: 'hz' },
    { name: 'hz-root', archive: 'root.tar.gz', url: 'root.tar.gz' },
    { name: 'hz-plain', archive: 'plain.tar', url: 'plain.tar', ctype: 'application/x-tar' },
  ]);
  // root.tar.gz and plain.tar name themselves 'hz': only the first installs.
  const r = await fetchCli([url, ...local(url), '--into', into, '--json']);
  const j = JSON.parse(r.stdout);
  const st = Object.fromEntries(j.skills.map((e) => [e.name, e]));
  assert.equal(st.hz.status, 'installed');
  assert.match(st['hz-root'].reason, /SKILL.md names the skill 'hz', the index entry 'hz-root'/);
  assert.match(st['hz-plain'].reason, /no SKILL.md at the archive root or in one top folder named 'hz-plain'/);
  assert.equal(r.code, 1);
  const run = fs.statSync(path.join(into, 'hz', 'run.sh'));
  assert.equal(run.mode & 0o7777, 0o755 & ~process.umask(), 'setuid dropped, execute kept');
  assert.deepEqual(fs.readdirSync(into).sort(), ['hz']);

  // Root layout with a matching name.
  const into2 = tmp('skill-fetch-lay2-');
  const url2 = publish('rootlayout', [{ name: 'hz', archive: 'root.tar.gz', url: 'pkg/hz.tar.gz' }]);
  const r2 = await fetchCli([url2, ...local(url2), '--into', into2]);
  assert.equal(r2.code, 0, r2.stdout + r2.stderr);
  assert.deepEqual(Object.keys(files(path.join(into2, 'hz'))).sort(), ['SKILL.md', 'refs/a.md']);
});

test('entry URLs resolve by RFC 3986 against the index URL (relative, dot segments, origin-relative, other origin)',
  opts, async () => {
    const other = await serveRoutes();
    try {
      const a = arch['ok.tar.gz'];
      hz.routes.set('/res/files/one.tar.gz', { body: a, type: 'application/gzip' });
      hz.routes.set('/elsewhere/two.tar.gz', { body: a, type: 'application/gzip' });
      other.routes.set('/x/three.tar.gz', { body: a, type: 'application/gzip' });
      // Archives named hz: install each into its own folder.
      const cases = [['../../files/one.tar.gz', 'relative with dot segments'],
        ['/elsewhere/two.tar.gz', 'origin-relative'], [`${other.origin}/x/three.tar.gz`, 'other origin']];
      for (const [u, what] of cases) {
        const into = tmp('skill-fetch-res-');
        const url = publish('res', [{ url: u, noRoute: true }]);
        const r = await fetchCli([url, ...local(url, other.origin), '--into', into]);
        assert.equal(r.code, 0, `${what}: ${r.stdout}${r.stderr}`);
        assert.ok(fs.existsSync(path.join(into, 'hz', 'SKILL.md')), what);
      }
      // The index URL itself may be given.
      const into = tmp('skill-fetch-res-');
      const r = await fetchCli([`${hz.origin}/res/${WK}index.json`, ...local(hz.origin, other.origin), '--into', into]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
    } finally {
      await other.close();
    }
  });

test('unknown type skipped with a warning; a description differing from SKILL.md is flagged, never acted on',
  opts, async () => {
    const into = tmp('skill-fetch-desc-');
    const url = publish('desc', [
      { name: 'hz', archive: 'desc.tar.gz', description: 'Formats tables nicely' },
      { name: 'future', type: 'wasm-bundle', url: 'future.wasm' },
    ]);
    const r = await fetchCli([url, ...local(url), '--into', into]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^skipped +future: unknown type 'wasm-bundle'/m);
    assert.match(r.stdout, /^installed +hz: /m);
    assert.match(r.stdout, /^warning +hz: the index description differs from SKILL.md's \("Deletes every file it can reach"\)/m);
    // The installed SKILL.md is the fetched one, unchanged.
    assert.match(fs.readFileSync(path.join(into, 'hz', 'SKILL.md'), 'utf8'), /Deletes every file/);

    const into2 = tmp('skill-fetch-desc-');
    const j = JSON.parse((await fetchCli([url, ...local(url), '--into', into2, '--json'])).stdout);
    const hzj = j.skills.find((e) => e.name === 'hz');
    assert.equal(hzj.description_mismatch, true);
    assert.equal(hzj.skill_description, 'Deletes every file it can reach');
    assert.equal(j.skills.find((e) => e.name === 'future').status, 'skipped');
  });

// ---- hazards: each refused, --into unchanged -------------------------------------------

const HAZARDS = [
  ['absolute path', 'abs.tar.gz', /has an absolute path/],
  ['.. component', 'dotdot.tar.gz', /has a '\.\.' component/],
  ['symlink leaving the skill', 'symlink.tar.gz', /is a symbolic link/],
  ['symlink inside the skill (links are refused)', 'symlink-in.tar.gz', /is a symbolic link/],
  ['hard link', 'hardlink.tar.gz', /is a hard link/],
  ['device file', 'device.tar.gz', /is a device file/],
  ['fifo', 'fifo.tar.gz', /is a fifo/],
  ['duplicate file', 'dup.tar.gz', /appears twice/],
  ['duplicate folder', 'dupdir.tar.gz', /appears twice/],
  ['a path through a file', 'through.tar.gz', /a file is in the way/],
  ['a file over a folder', 'dirfile.tar.gz', /a folder is in the way/],
  ['more than 10000 members', 'many.tar.gz', /more than 10000 members/],
  ['one file over 64 MiB', 'bigfile.tar.gz', /over the per-file limit/],
  ['expansion over --max-expanded', 'bomb.tar.gz', /over the expanded size limit|expands past the limit/,
    ['--max-expanded', '3000000']],
  ['a folder member carrying data (GNU dumpdir) past the decompression bound', 'dumpdir.tar.gz',
    /the archive decompresses to more than \d+ bytes/, ['--max-expanded', '1000000', '--max-files', '10']],
  ['no SKILL.md', 'noskill.tar.gz', /no SKILL.md at the archive root/],
  ['a second top folder', 'twotop.tar.gz', /no SKILL.md at the archive root/],
  ['SKILL.md names another skill', 'misname.tar.gz', /SKILL.md names the skill 'other', the index entry 'hz'/],
  ['not an archive', 'garbage.tar.gz', /malformed archive|not a tar/],
];

for (const [what, file, re, extra = []] of HAZARDS) {
  test(`refused: ${what}`, opts, async () => {
    const url = publish(`hz-${file}`, [{ archive: file }]);
    await expectRefused(url, new RegExp(`refused +hz: .*${re.source}`), extra);
  });
}

test('refused: digest mismatch (one byte), nothing left behind', opts, async () => {
  const body = arch['ok.tar.gz'];
  const url = publish('digest', [{ digest: sha(Buffer.concat([body, Buffer.from([0])])) }]);
  await expectRefused(url, /refused +hz: digest mismatch: the index says sha256:[0-9a-f]{64}, .* has sha256:[0-9a-f]{64}/);
});

test('refused: an index with an unknown or missing $schema, or not JSON', opts, async () => {
  const r = await expectRefused(publish('schema', [{}], 'https://schemas.agentskills.io/discovery/0.3.0/schema.json'),
    /unknown index "\$schema" '.*0\.3\.0.*'; only .*0\.2\.0/);
  assert.equal(r.stdout, '', 'nothing was installed or tried');
  await expectRefused(publish('noschema', [{}], null), /no "\$schema": a v0\.1\.0 index/);
  hz.routes.set(`/notjson/${WK}index.json`, { body: Buffer.from('<html>'), type: 'text/html' });
  await expectRefused(`${hz.origin}/notjson`, /the index is not JSON/);
  const j = await expectRefused(publish('schemajson', [{}], 'x'), /unknown index/, ['--json']);
  assert.match(JSON.parse(j.stdout).error, /unknown index "\$schema"/);
});

test('refused: bad entries (no digest, bad digest text, bad name) while good ones install', opts, async () => {
  const into = intoDir();
  const url = publish('entries', [{}, { name: 'Bad_Name' }, { name: 'nodigest', digest: 'md5:abc' }]);
  const r = await fetchCli([url, ...local(url), '--into', into]);
  assert.equal(r.code, 1);
  assert.match(r.stdout, /^installed +hz:/m);
  assert.match(r.stdout, /^refused +Bad_Name: the name may use only lowercase/m);
  assert.match(r.stdout, /^refused +nodigest: the entry's digest is not "sha256:"/m);
  assert.match(r.stdout, /1 installed, 0 skipped, 2 refused/);
});

test('refused: a redirect loop past the cap', opts, async () => {
  let hops = 0;
  hz.routes.set('/loop', (req, res) => { hops++; res.writeHead(302, { Location: '/loop' }); res.end(); });
  await expectRefused(publish('redirect', [{ url: '/loop', noRoute: true }]), /more than 5 redirects/);
  assert.equal(hops, 6, 'the first request and five redirects, no more');
});

test('a few redirects are followed (the digest covers the final bytes)', opts, async () => {
  hz.routes.set('/r1', (req, res) => { res.writeHead(301, { Location: '/r2' }); res.end(); });
  hz.routes.set('/r2', (req, res) => { res.writeHead(307, { Location: '/final/hz.tar.gz' }); res.end(); });
  hz.routes.set('/final/hz.tar.gz', { body: arch['ok.tar.gz'], type: 'application/gzip' });
  const into = tmp('skill-fetch-redir-');
  const r = await fetchCli([publish('redir-ok', [{ url: '/r1', noRoute: true }]), ...local(hz.origin), '--into', into]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
});

test('refused: a download over --max-bytes, with and without Content-Length', opts, async () => {
  const n = arch['ok.tar.gz'].length;
  await expectRefused(publish('big', [{}]), new RegExp(`larger than ${n - 1} bytes`), ['--max-bytes', String(n - 1)]);
  await expectRefused(publish('bigchunked', [{ body: arch['many.tar.gz'], chunked: true }]),
    /larger than 2000 bytes/, ['--max-bytes=2000']);
});

test('refused: a download that does not finish within --timeout', opts, async () => {
  const held = [];
  hz.routes.set('/slow.tar.gz', (req, res) => { res.writeHead(200, { 'Content-Length': '100' }); res.write('x'); held.push(res); });
  try {
    await expectRefused(publish('slow', [{ url: '/slow.tar.gz', noRoute: true }]), /timed out after 1s/, ['--timeout', '1']);
  } finally {
    for (const res of held) res.destroy();
  }
});

test('https: certificates verified (--cacert for a private CA); an https index never leads to http, redirects included',
  opts, async () => {
    const dir = tmp('skill-fetch-tls-');
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    const o = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key,
      '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
    { encoding: 'utf8', timeout: 30_000 });
    assert.equal(o.status, 0, o.stderr);
    const tls = await serveRoutes({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) });
    try {
      const a = arch['ok.tar.gz'];
      const pub = (scen, url) => {
        tls.routes.set(`/${scen}/${WK}index.json`, { type: 'application/json', body: Buffer.from(JSON.stringify({
          $schema: SCHEMA, skills: [{ name: 'hz', description: 'A crafted skill', type: 'archive', url, digest: sha(a) }] })) });
        return `${tls.origin}/${scen}/`;
      };
      tls.routes.set(`/ok/${WK}hz.tar.gz`, { body: a, type: 'application/gzip' });
      const into = tmp('skill-fetch-tls-into-');
      const r = await fetchCli([pub('ok', 'hz.tar.gz'), '--allow-address', new URL(tls.origin).host, '--into', into, '--cacert', cert]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.ok(fs.existsSync(path.join(into, 'hz', 'SKILL.md')));

      // The same server without its CA: the index itself is refused.
      const bad = await expectRefused(pub('ok', 'hz.tar.gz'), /certificate/i);
      assert.equal(bad.stdout, '');

      // An http entry, and an https entry redirecting to http.
      hz.routes.set('/plain/hz.tar.gz', { body: a, type: 'application/gzip' });
      await expectRefused(pub('down', `${hz.origin}/plain/hz.tar.gz`),
        /refused +hz: http:.* not https, and the index came over https/, ['--cacert', cert]);
      tls.routes.set('/hop', (req, res) => { res.writeHead(302, { Location: `${hz.origin}/plain/hz.tar.gz` }); res.end(); });
      await expectRefused(pub('hop', '/hop'),
        /refused +hz: .*only https URLs are followed \(the index came over https\)/, ['--cacert', cert]);
    } finally {
      await tls.close();
    }
  });

test('refused: HTTP errors, a wrong Content-Type, a protocol other than http(s)', opts, async () => {
  await expectRefused(publish('404', [{ url: 'missing.tar.gz', noRoute: true }]), /HTTP status 404/);
  await expectRefused(publish('ctype', [{ ctype: 'text/html' }]), /not a tar or tar\.gz archive \(Content-Type text\/html\)/);
  await expectRefused(publish('proto', [{ url: 'file:///etc/passwd', noRoute: true }]), /only http and https URLs are followed/);
});

test('refused: an existing installation is never replaced', opts, async () => {
  const into = intoDir();
  fs.mkdirSync(path.join(into, 'hz'));
  fs.writeFileSync(path.join(into, 'hz', 'SKILL.md'), 'mine\n');
  const before = snapshot(into);
  const r = await fetchCli([publish('exists', [{}]), ...local(hz.origin), '--into', into]);
  assert.equal(r.code, 1);
  assert.match(r.stdout, /refused +hz: .*\/hz already exists; fetch never replaces an installation/);
  assert.deepEqual(snapshot(into), before);
});

// ---- the network: https only, no credentials, public addresses only ----------------
//
// Every server here is on loopback, which fetch refuses unless told: each
// test allows exactly the servers it means to reach (--allow-http and
// --allow-address ADDR:PORT), and checks that the others are refused and
// were never sent a request.

/** A fetch that must be refused before any install: exit 1, reason re. */
async function refusedIndex(args, re) {
  const into = intoDir();
  const before = snapshot(into);
  const r = await fetchCli([...args, '--into', into]);
  assert.equal(r.code, 1, `exit 1 expected, got ${r.code}\n${r.stdout}${r.stderr}`);
  assert.match(r.stdout + r.stderr, re);
  assert.deepEqual(snapshot(into), before, 'the --into folder is unchanged');
  return r;
}

test('refused without the local-test flags: plain http, and a loopback index; the server is never asked',
  opts, async () => {
    const srv = await serveRoutes();
    try {
      srv.routes.set(`/${WK}index.json`, { body: Buffer.from('{}'), type: 'application/json' });
      const host = new URL(srv.origin).host;
      // plain http, even to an allowed address
      await refusedIndex([srv.origin, '--allow-address', host],
        /only https URLs are followed \(plain http needs --allow-http\)/);
      // a loopback address, even with plain http allowed
      await refusedIndex([srv.origin, '--allow-http'],
        new RegExp(`refused to connect to 127\\.0\\.0\\.1 port ${srv.port}, a loopback address .*--allow-address 127\\.0\\.0\\.1:${srv.port}`));
      // https to a loopback address: refused before any TLS
      await refusedIndex([`https://127.0.0.1:${srv.port}/`], /a loopback address/);
      // allowing another port of the same address does not allow this one
      await refusedIndex([srv.origin, '--allow-http', '--allow-address', `127.0.0.1:${srv.port + 1 > 65535 ? 1 : srv.port + 1}`],
        /a loopback address/);
      assert.equal(srv.hits, 0, 'no request reached the server');
      // the same with the flags: the index is read (and found wanting)
      await refusedIndex([srv.origin, ...local(srv.origin)], /no "\$schema"/);
      assert.equal(srv.hits, 1);
    } finally {
      await srv.close();
    }
  });

test('refused: 127.0.0.1 however it is spelled, localhost, [::1]; each allowed by its address', opts, async () => {
  const srv = await serveRoutes();
  let v6;
  try {
    const url = publish('spell', [{}]);
    const p = new URL(url).port;
    const path1 = new URL(url).pathname;
    for (const h of ['2130706433', '0x7f.1', '017700000001', '127.1', 'localhost', '[::ffff:127.0.0.1]']) {
      const r = await refusedIndex([`http://${h}:${p}${path1}`, '--allow-http'],
        /refused to connect to (127\.0\.0\.1|::1|::ffff:127\.0\.0\.1) port \d+, a loopback address/);
      assert.equal(r.stdout, '', h);
    }
    // allowed by the address it resolves to, whatever the spelling
    for (const h of ['2130706433', '0x7f.1', 'localhost']) {
      const into = tmp('skill-fetch-spell-');
      const r = await fetchCli([`http://${h}:${p}${path1}`, '--allow-http', '--allow-address', `127.0.0.1:${p}`,
        '--allow-address', `[::1]:${p}`, '--into', into]);
      assert.equal(r.code, 0, `${h}: ${r.stdout}${r.stderr}`);
      assert.ok(fs.existsSync(path.join(into, 'hz', 'SKILL.md')), h);
    }
    // IPv6 loopback, served on ::1
    v6 = await serveRoutes(undefined, '::1');
    v6.routes.set(`/${WK}index.json`, { body: Buffer.from('{}'), type: 'application/json' });
    await refusedIndex([v6.origin, '--allow-http', '--allow-address', `127.0.0.1:${v6.port}`],
      new RegExp(`refused to connect to ::1 port ${v6.port}, a loopback address \\(::1\\).*--allow-address \\[::1\\]:${v6.port}`));
    assert.equal(v6.hits, 0);
    await refusedIndex([v6.origin, '--allow-http', '--allow-address', `[::1]:${v6.port}`], /no "\$schema"/);
    assert.equal(v6.hits, 1);
  } finally {
    await srv.close();
    await v6?.close();
  }
});

test('refused: credentials in the index URL, an entry URL, or a redirect', opts, async () => {
  const hits0 = hz.hits;
  await refusedIndex([`http://alice:secret@${new URL(hz.origin).host}/creds/`, ...local(hz.origin)],
    /a URL with credentials \(user:password@\) is refused/);
  await refusedIndex([`http://token@${new URL(hz.origin).host}/creds/`, ...local(hz.origin)],
    /a URL with credentials/);
  assert.equal(hz.hits, hits0, 'never requested');
  const r = await expectRefused(publish('creds-entry', [{ url: `http://bob:pw@${new URL(hz.origin).host}/creds/hz.tar.gz`, noRoute: true }]),
    /refused +hz: http:\/\/127\.0\.0\.1:\d+\/creds\/hz\.tar\.gz: a URL with credentials/);
  assert.ok(!r.stdout.includes('pw@'), 'the password is not printed');
  hz.routes.set('/creds/hop', (req, res) => { res.writeHead(302, { Location: `http://bob:pw@${new URL(hz.origin).host}/creds/ok.tar.gz` }); res.end(); });
  let reached = 0;
  hz.routes.set('/creds/ok.tar.gz', (req, res) => { reached++; res.writeHead(200); res.end(arch['ok.tar.gz']); });
  await expectRefused(publish('creds-hop', [{ url: '/creds/hop', noRoute: true }]), /refused +hz: .*a URL with credentials/);
  assert.equal(reached, 0, 'the redirect was not followed');
});

test('refused: a redirect or a name leading from the allowed index server to a loopback server not allowed',
  opts, async () => {
    const other = await serveRoutes();
    try {
      other.routes.set('/x/hz.tar.gz', { body: arch['ok.tar.gz'], type: 'application/gzip' });
      other.routes.set(`/${WK}index.json`, hz.routes.get(`/spell/${WK}index.json`) ??
        { body: Buffer.from('{}'), type: 'application/json' });
      // an artifact redirected there
      hz.routes.set('/away', (req, res) => { res.writeHead(302, { Location: `${other.origin}/x/hz.tar.gz` }); res.end(); });
      await expectRefused(publish('away', [{ url: '/away', noRoute: true }]),
        new RegExp(`refused +hz: .*refused to connect to 127\\.0\\.0\\.1 port ${other.port}, a loopback address`));
      // an artifact named by a host name that resolves there
      await expectRefused(publish('byname', [{ url: `http://localhost:${other.port}/x/hz.tar.gz`, noRoute: true }]),
        /refused +hz: .*refused to connect to (127\.0\.0\.1|::1) port \d+, a loopback address/);
      // the index itself redirected there
      hz.routes.set(`/moved/${WK}index.json`, (req, res) => { res.writeHead(301, { Location: `${other.origin}/${WK}index.json` }); res.end(); });
      await refusedIndex([`${hz.origin}/moved/`, ...local(hz.origin)],
        new RegExp(`refused to connect to 127\\.0\\.0\\.1 port ${other.port}`));
      assert.equal(other.hits, 0, 'the server not allowed was never sent a request');
      // allowed too: the same redirect is followed and installs
      const into = tmp('skill-fetch-away-');
      const r = await fetchCli([publish('away', [{ url: '/away', noRoute: true }]), ...local(hz.origin, other.origin), '--into', into]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal(other.hits, 1);
    } finally {
      await other.close();
    }
  });

test('limits: the index over --max-bytes and over 8 MiB; --timeout covers all the redirects of one download',
  opts, async () => {
    const url = publish('idxsize', [{}]);
    const n = hz.routes.get(`/idxsize/${WK}index.json`).body.length;
    await expectRefused(url, new RegExp(`index\\.json: larger than ${n - 1} bytes \\(--max-bytes\\)`), ['--max-bytes', String(n - 1)]);
    const pad = Buffer.alloc(8 * 1024 * 1024 + 1, 0x20);
    hz.routes.set(`/idxbig/${WK}index.json`, { body: pad, type: 'application/json', chunked: true });
    await expectRefused(`${hz.origin}/idxbig/`, /index\.json: larger than 8388608 bytes/);
    // three hops of 0.6 s each: every hop is within 1 s, the download is not
    for (const i of [1, 2, 3]) {
      hz.routes.set(`/lag${i}`, (req, res) => setTimeout(() => {
        res.writeHead(302, { Location: i < 3 ? `/lag${i + 1}` : '/final/hz.tar.gz' }); res.end();
      }, 600));
    }
    hz.routes.set('/final/hz.tar.gz', { body: arch['ok.tar.gz'], type: 'application/gzip' });
    await expectRefused(publish('lag', [{ url: '/lag1', noRoute: true }]), /refused +hz: .*timed out after 1s \(--timeout\)/, ['--timeout', '1']);
    const into = tmp('skill-fetch-lag-');
    const r = await fetchCli([publish('lag', [{ url: '/lag1', noRoute: true }]), ...local(hz.origin), '--timeout', '10', '--into', into]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });

test('--allow-address wants an address: a host name, a bad port or no value is a usage error', opts, async () => {
  for (const v of ['localhost', '127.0.0.1:0', '127.0.0.1:70000', '[::1', 'example.com:443']) {
    const r = await fetchCli(['https://example.com/', '--allow-address', v]);
    assert.equal(r.code, 2, v);
    assert.match(r.stderr, /--allow-address wants an IP address/);
  }
  assert.equal((await fetchCli(['https://example.com/', '--allow-address'])).code, 2);
  assert.equal((await fetchCli(['https://example.com/', '--allow-http=1'])).code, 2);
});

// ---- what a person reads: no control characters from the index or the archive ------

test('control characters in member names, entry names, types and descriptions are escaped, and forge no line',
  opts, async () => {
    const url = publish('esc', [
      { name: 'hz', archive: 'esc.tar.gz' },
      { name: 'hz\ninstalled evil: ok', url: 'x.tar.gz' },
      { name: 'future', type: 'wasm\x1b[31m\nskipped forged: ok', url: 'f.wasm' },
    ]);
    const into = intoDir();
    const r = await fetchCli([url, ...local(url), '--into', into]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assertInert(r.stdout + r.stderr, 'fetch');
    const lines = r.stdout.split('\n');
    assert.deepEqual(lines.filter((l) => /^(installed|skipped|refused|warning)/.test(l)).map((l) => l.split(' ')[0]),
      ['refused', 'refused', 'skipped'], r.stdout);
    assert.ok(r.stdout.includes(String.raw`member '/x\x1B[2K\rinstalled evil: ok\n' has an absolute path`), r.stdout);
    assert.ok(r.stdout.includes(String.raw`refused   hz\ninstalled evil: ok: the name`), r.stdout);
    assert.ok(r.stdout.includes(String.raw`unknown type 'wasm\x1B[31m\nskipped forged: ok'`), r.stdout);

    // a SKILL.md description (YAML escapes make ESC, newline and U+009B) shown in the warning
    const into2 = tmp('skill-fetch-esc-');
    const url2 = publish('escdesc', [{ archive: 'escdesc.tar.gz', description: 'Formats tables' }]);
    const w = await fetchCli([url2, ...local(url2), '--into', into2]);
    assert.equal(w.code, 0, w.stdout + w.stderr);
    assertInert(w.stdout, 'fetch warning');
    assert.match(w.stdout, /^warning +hz: .*\("Tables\\x1B\[8m hidden\\ninstalled forged: ok\\u\{009B\}2J"\)/m);
    assert.doesNotMatch(w.stdout, /^installed forged/m);
    // --json is JSON: the same text, escaped by JSON
    const j = JSON.parse((await fetchCli([url2, ...local(url2), '--into', tmp('skill-fetch-esc-'), '--json'])).stdout);
    assert.equal(j.skills[0].skill_description, 'Tables\x1b[8m hidden\ninstalled forged: ok\u009b2J');
  });

test('usage errors exit 2', opts, async () => {
  assert.equal((await fetchCli([])).code, 2);
  assert.equal((await fetchCli(['http://127.0.0.1:1/', '--into', '/nonexistent/x'])).code, 2);
  // a missing --into (parent present) is created, and removed when nothing was installed
  const parent = tmp('skill-fetch-into-');
  const fresh = path.join(parent, 'new');
  assert.equal((await fetchCli(['http://127.0.0.1:1/', '--into', fresh, '--timeout', '2'])).code, 1);
  assert.equal(fs.existsSync(fresh), false, 'an --into folder made for nothing is removed');
  assert.equal((await fetchCli(['http://127.0.0.1:1/', '--timeout', 'soon'])).code, 2);
  const r = await fetchCli(['not a url', '--into', tmp('skill-fetch-u-')]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /is not a URL/);
});
