// list_skills(query) beyond the card: body and reference words (indexed in
// the background after a frontmatter-only start, and again on edits),
// synonyms (built-in and --synonyms FILE), exact name first, and the hint
// with the closest cards when nothing matches.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  startServer, connect, callOk as callOkA, poll, runCli, E2E_DIR, TEST_TIMEOUT,
} from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const callOk = (c, n, a) => callOkA(assert, c, n, a);
const LIB = path.join(E2E_DIR, 'fixtures', 'search-skills');

const names = (r) => r.skills.map((k) => k.qualified_name ?? k.name);
const query = (client, q, extra = {}) => callOk(client, 'list_skills', { query: q, ...extra });

// The body index is built after start-up; wait (bounded) until it answers.
async function waitFor(client, q, name, ms = 8000) {
  const got = await poll(async () => {
    const r = await query(client, q);
    return !r.hint && names(r)[0] === name ? r : null;
  }, ms);
  assert.ok(got, `'${q}' did not rank ${name} first within ${ms} ms: `
    + JSON.stringify(names(await query(client, q))));
  return got;
}

describe('search over bodies, references and synonyms', () => {
  let s;
  let client;
  before(async () => {
    s = await startServer({ refresh: 1, fixtures: LIB });
    client = await connect(s.url);
  });
  after(async () => {
    try { await client?.close(); } finally { await s?.stop(); }
  });

  test('a word only in a body is found once the background index is built', opts, async () => {
    const r = await waitFor(client, 'pdfplumber', 'pdf-forms');
    assert.deepEqual(names(r), ['pdf-forms']);
    // A heading's words are indexed too.
    assert.equal(names(await query(client, 'recalculation'))[0], 'spreadsheets');
  });

  test('a word only in a reference is found, below a card that has it', opts, async () => {
    await waitFor(client, 'keynote', 'slide-decks');
    const r = await query(client, 'guilloche');
    assert.deepEqual(names(r), ['chart-maker', 'slide-decks']);
  });

  test('synonyms: powerpoint, excel and word document find the pptx, xlsx and docx skills', opts, async () => {
    await waitFor(client, 'pdfplumber', 'pdf-forms');
    assert.equal(names(await query(client, 'powerpoint'))[0], 'slide-decks');
    assert.equal(names(await query(client, 'make a presentation'))[0], 'slide-decks');
    assert.equal(names(await query(client, 'excel'))[0], 'spreadsheets');
    assert.equal(names(await query(client, 'edit a word document'))[0], 'word-docs');
  });

  test('a skill named exactly like the query comes first', opts, async () => {
    assert.equal(names(await query(client, 'meeting-notes'))[0], 'meeting-notes');
    assert.equal(names(await query(client, 'PDF-Forms'))[0], 'pdf-forms');
  });

  test('an edited body is searchable within a refresh interval', opts, async () => {
    await waitFor(client, 'pdfplumber', 'pdf-forms');
    const md = path.join(s.skills, 'meeting-notes', 'SKILL.md');
    const none = await query(client, 'quokka');
    assert.ok(none.hint, 'quokka matches nothing before the edit');
    fs.appendFileSync(md, '\nA quokka keeps the minutes.\n');
    const t0 = Date.now();
    await waitFor(client, 'quokka', 'meeting-notes', 5000);
    // Refresh 1 s: one interval plus a rebuild, with room for a loaded machine.
    assert.ok(Date.now() - t0 < 4000, `took ${Date.now() - t0} ms`);
  });

  test('nothing matches: a hint and the closest cards, in the output schema', opts, async () => {
    const r = await query(client, 'spredsheets');
    assert.match(r.hint, /^No skill matches 'spredsheets'; the closest by name and tags/);
    assert.equal(names(r)[0], 'spreadsheets');
    assert.equal(r.total, r.skills.length);
    assert.equal(r.next_cursor, undefined);
    const far = await query(client, 'zzzqqqxxx', { limit: 2 });
    assert.match(far.hint, /none is close, so the first skills are listed/);
    assert.deepEqual(names(far), ['chart-maker', 'meeting-notes']);
    const tools = await client.listTools();
    const list = tools.tools.find((t) => t.name === 'list_skills');
    assert.equal(list.outputSchema.properties.hint.type, 'string');
  });
});

describe('--synonyms FILE', () => {
  test('adds groups; a bad file stops the start with FILE:LINE', opts, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-syn-'));
    try {
      const bad = path.join(dir, 'bad.txt');
      fs.writeFileSync(bad, '# groups\nminutes, meeting notes\nlonely\n');
      const r = await runCli(['--skills', LIB, '--port', '0', '--synonyms', bad]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, new RegExp(`${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3: a group needs at least two members`));

      const good = path.join(dir, 'good.txt');
      fs.writeFileSync(good, 'minutes, meeting notes\n');
      const s = await startServer({ fixtures: LIB, args: ['--synonyms', good] });
      const client = await connect(s.url);
      try {
        assert.equal(names(await query(client, 'minutes'))[0], 'meeting-notes');
      } finally {
        await client.close();
        await s.stop();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
