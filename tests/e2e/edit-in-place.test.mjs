// A reference file rewritten in place (same size, same second, no rename)
// right after many hits is answered with its new bytes by the very next call
// on all three surfaces that keep replies: read_skill_file, resources/read
// and skills/get (whose digest covers the file). The kept replies may have
// been served without a stat while nothing changed; this is the write they
// must not miss.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, connect, call, callOk, postModern, indexerSettled, TEST_TIMEOUT } from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const REL = 'references/format.md';
const URI = `skill://csv-profile/${REL}`;
const sha = (buf) => `sha256:${crypto.createHash('sha256').update(buf).digest('hex')}`;

let s;
let client;
before(async () => {
  s = await startServer({
    setup(skills) {
      // Saved long ago: replies of it may be kept from the first read on.
      const old = new Date(Date.now() - 60_000);
      fs.utimesSync(path.join(skills, 'csv-profile', REL), old, old);
    },
  });
  client = await connect(s.url);
  await indexerSettled(s);
  await new Promise((r) => setTimeout(r, 1100)); // ctime (the copy's) settles too
});
after(async () => {
  await client?.close();
  await s?.stop();
});

async function threeSurfaces() {
  const tool = await callOk(assert, client, 'read_skill_file', { name: 'csv-profile', path: REL });
  const res = (await postModern(s.url, 'resources/read', { uri: URI })).json.result;
  const get = (await postModern(s.url, 'skills/get', { uri: 'skill://csv-profile/SKILL.md' })).json.result;
  return {
    tool: tool.content,
    res: res.contents[0].text,
    digest: get.skill.resources.find((r) => r.uri === URI).digest,
  };
}

test('an in-place same-size edit after many hits is seen at once on every surface', opts, async () => {
  const file = path.join(s.skills, 'csv-profile', REL);
  const before = fs.readFileSync(file, 'utf8');
  for (let i = 0; i < 4; i++) {
    const r = await threeSurfaces();
    assert.equal(r.tool, before);
    assert.equal(r.res, before);
    assert.equal(r.digest, sha(Buffer.from(before)));
  }
  for (const round of [1, 2]) {
    const edited = before.replace(/[a-z]/, (c) => c.toUpperCase()).replace(/^./, String(round));
    assert.equal(Buffer.byteLength(edited), Buffer.byteLength(before));
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, edited, 0);
    fs.closeSync(fd);
    const r = await threeSurfaces();
    assert.equal(r.tool, edited, `read_skill_file after edit ${round}`);
    assert.equal(r.res, edited, `resources/read after edit ${round}`);
    assert.equal(r.digest, sha(Buffer.from(edited)), `skills/get after edit ${round}`);
  }
});

// A folder replaced by a new one at the same path (a checkout, an rsync
// --delete-after, an editor saving a tree): the new folder's files must be
// watched too, or an in-place edit in it goes unheard and the reply kept at
// the epoch after the swap is served stale.
test('an in-place edit inside a folder that replaced the old one is seen at once', opts, async () => {
  const dir = path.join(s.skills, 'csv-profile', 'references');
  const file = path.join(dir, 'format.md');
  const before = fs.readFileSync(file, 'utf8');
  await threeSurfaces();
  fs.renameSync(dir, `${dir}.old`);
  fs.mkdirSync(dir);
  for (const f of fs.readdirSync(`${dir}.old`)) {
    fs.copyFileSync(path.join(`${dir}.old`, f), path.join(dir, f));
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(path.join(dir, f), old, old);
  }
  await new Promise((r) => setTimeout(r, 1100)); // the copies' ctime settles
  for (let i = 0; i < 4; i++) {
    const r = await threeSurfaces();
    assert.equal(r.tool, before);
    assert.equal(r.res, before);
  }
  const edited = before.replace(/^./, 'Z');
  assert.notEqual(edited, before);
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, edited, 0);
  fs.closeSync(fd);
  const r = await threeSurfaces();
  assert.equal(r.tool, edited, 'read_skill_file after the edit');
  assert.equal(r.res, edited, 'resources/read after the edit');
  assert.equal(r.digest, sha(Buffer.from(edited)), 'skills/get after the edit');
});

// An edit whose old modification time is put back (touch -d, rsync -t, a
// tool restoring timestamps) keeps the device, inode, mtime and size the
// kept reply was read with; only the change time tells it from the old one.
test('an in-place edit with its old mtime put back is seen at once', opts, async () => {
  const file = path.join(s.skills, 'csv-profile', REL);
  const before = fs.readFileSync(file, 'utf8');
  // A whole-second mtime: put back exactly, as touch -d does.
  const old = new Date(Math.floor(Date.now() / 1000) * 1000 - 120_000);
  fs.utimesSync(file, old, old);
  await new Promise((r) => setTimeout(r, 1100)); // its ctime settles
  for (let i = 0; i < 4; i++) assert.equal((await threeSurfaces()).tool, before);
  const edited = before.replace(/^./, 'T');
  assert.notEqual(edited, before);
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, edited, 0);
  fs.closeSync(fd);
  fs.utimesSync(file, old, old);
  assert.equal(fs.statSync(file).mtimeMs, old.getTime());
  const r = await threeSurfaces();
  assert.equal(r.tool, edited, 'read_skill_file after the edit');
  assert.equal(r.res, edited, 'resources/read after the edit');
  assert.equal(r.digest, sha(Buffer.from(edited)), 'skills/get after the edit');
});

// A folder replaced by a symlink to one outside every watched folder: the
// watches must not follow it, or moving the link's target away (and making
// a new one in its place) goes unheard, and what was answered through the
// link is answered again without a look.
test('a folder swapped for a symlink is checked with stats from then on', opts, async () => {
  const dir = path.join(s.skills, 'csv-profile', 'references');
  // Not under a watched folder: not in the server's tree, nor an ancestor.
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-away-'));
  const away = path.join(out, 'sub');
  const target = path.join(away, 'refs');
  const before = fs.readFileSync(path.join(dir, 'format.md'), 'utf8');
  const read = async () => JSON.stringify(
    (await call(client, 'read_skill_file', { name: 'csv-profile', path: REL })).content);
  await threeSurfaces();
  fs.mkdirSync(away);
  fs.renameSync(dir, target);
  fs.symlinkSync(target, dir);
  let was;
  for (let i = 0; i < 4; i++) was = await read();
  assert.ok(was.includes('CSV Format'), `answered through the link: ${was.slice(0, 200)}`);
  fs.renameSync(away, `${away}.old`);
  fs.mkdirSync(target, { recursive: true });
  const edited = before.replace(/^./, 'S');
  fs.writeFileSync(path.join(target, 'format.md'), edited);
  const old = new Date(Date.now() - 60_000);
  fs.utimesSync(path.join(target, 'format.md'), old, old);
  const now = await read();
  assert.notEqual(now, was, 'read_skill_file after the link target moved');
  assert.ok(now.includes('S CSV Format') || !now.includes('CSV Format'), now.slice(0, 200));
  fs.rmSync(out, { recursive: true, force: true });
});
