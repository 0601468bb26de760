// resources/list, resources/templates/list, resources/read (canonical
// skill://<qualified>/<file> URIs and the Python server's aliases).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { startServer, connect, TEST_TIMEOUT, FIXTURES } from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const GOOD = ['acme/billing', 'acme/reports', 'csv-profile', 'deploy-runner', 'git-helper',
  'globex/reports', 'pdf-tools'];

let s;
let client;
before(async () => {
  s = await startServer({
    setup(skills) {
      // A skill that really has a files/ folder: the alias must not hide it.
      fs.mkdirSync(path.join(skills, 'git-helper', 'files'));
      fs.writeFileSync(path.join(skills, 'git-helper', 'files', 'cheatsheet.md'), '# real files/ folder\n');
    },
  });
  client = await connect(s.url);
});
after(async () => {
  try { await client?.close(); } finally { await s?.stop(); }
});

async function listAll() {
  const out = [];
  let cursor;
  for (let i = 0; i < 50; i++) {
    const r = await client.listResources(cursor ? { cursor } : {});
    out.push(...r.resources);
    if (!r.nextCursor) break;
    cursor = r.nextCursor;
  }
  return out;
}

function fixture(rel) {
  return fs.readFileSync(path.join(FIXTURES, rel));
}

test('resources/list: one SKILL.md per skill, text/markdown, name and description', opts, async () => {
  const all = await listAll();
  const uris = all.map((r) => r.uri);
  for (const q of GOOD) assert.ok(uris.includes(`skill://${q}/SKILL.md`), `skill://${q}/SKILL.md listed: ${uris}`);
  assert.equal(uris.some((u) => u.includes('broken-skill')), false);
  assert.equal(new Set(uris).size, uris.length, 'no duplicate uris');
  for (const r of all) {
    assert.equal(typeof r.name, 'string');
    if (r.uri.endsWith('/SKILL.md')) assert.equal(r.mimeType, 'text/markdown');
  }
  const csv = all.find((r) => r.uri === 'skill://csv-profile/SKILL.md');
  assert.equal(csv.name, 'csv-profile');
  assert.match(csv.description, /spreadsheet/);
});

test('resources/templates/list offers skill:// templates', opts, async () => {
  const r = await client.listResourceTemplates();
  assert.ok(r.resourceTemplates.length >= 1);
  for (const t of r.resourceTemplates) {
    assert.match(t.uriTemplate, /^skill:\/\//);
    assert.equal(typeof t.name, 'string');
  }
});

test('resources/read SKILL.md: exact bytes as text/markdown', opts, async () => {
  for (const q of ['csv-profile', 'acme/billing', 'globex/reports']) {
    const uri = `skill://${q}/SKILL.md`;
    const r = await client.readResource({ uri });
    assert.equal(r.contents.length, 1);
    assert.equal(r.contents[0].uri, uri);
    assert.equal(r.contents[0].mimeType, 'text/markdown');
    assert.equal(r.contents[0].text, fixture(`${q}/SKILL.md`).toString('utf8'));
  }
});

test('resources/read of a text reference and a binary asset (base64 blob)', opts, async () => {
  const t = await client.readResource({ uri: 'skill://acme/billing/references/refunds.md' });
  assert.equal(t.contents[0].text, fixture('acme/billing/references/refunds.md').toString('utf8'));
  const b = await client.readResource({ uri: 'skill://pdf-tools/assets/logo.png' });
  assert.equal(b.contents[0].text, undefined);
  assert.equal(typeof b.contents[0].blob, 'string');
  assert.ok(Buffer.from(b.contents[0].blob, 'base64').equals(fixture('pdf-tools/assets/logo.png')));
  assert.equal(b.contents[0].mimeType, 'image/png');
});

test('alias skill://<name> reads SKILL.md (bare and qualified)', opts, async () => {
  for (const [uri, q] of [['skill://csv-profile', 'csv-profile'], ['skill://billing', 'acme/billing'],
    ['skill://acme/billing', 'acme/billing']]) {
    const r = await client.readResource({ uri });
    assert.equal(r.contents[0].text, fixture(`${q}/SKILL.md`).toString('utf8'), uri);
  }
});

test('alias skill://<name>/files/<path> reads the file', opts, async () => {
  const r = await client.readResource({ uri: 'skill://csv-profile/files/references/format.md' });
  assert.equal(r.contents[0].text, fixture('csv-profile/references/format.md').toString('utf8'));
  const b = await client.readResource({ uri: 'skill://acme/billing/files/references/refunds.md' });
  assert.equal(b.contents[0].text, fixture('acme/billing/references/refunds.md').toString('utf8'));
  // A real files/ folder wins over the alias.
  const real = await client.readResource({ uri: 'skill://git-helper/files/cheatsheet.md' });
  assert.equal(real.contents[0].text, '# real files/ folder\n');
});

test('ambiguous alias skill://reports is refused with both names', opts, async () => {
  await assert.rejects(client.readResource({ uri: 'skill://reports' }), (e) => {
    assert.equal(e.code, -32602, e.message);
    assert.ok(e.message.includes('acme/reports') || JSON.stringify(e.data ?? '').includes('acme/reports'),
      `should name acme/reports: ${e.message}`);
    return true;
  });
});

test('unknown resource -> -32602 with data.uri', opts, async () => {
  for (const uri of ['skill://no-such-skill/SKILL.md', 'skill://csv-profile/references/nope.md',
    'test://nonexistent-resource', 'skill://no-such-skill', 'not a uri']) {
    await assert.rejects(client.readResource({ uri }), (e) => {
      assert.equal(e.code, -32602, `${uri}: ${e.code} ${e.message}`);
      assert.equal(e.data?.uri, uri, `${uri}: error.data.uri`);
      return true;
    });
  }
});

test('resources/read without a uri -> -32602', opts, async () => {
  await assert.rejects(client.request({ method: 'resources/read', params: {} },
    (await import('@modelcontextprotocol/sdk/types.js')).ReadResourceResultSchema), (e) => e.code === -32602);
});
