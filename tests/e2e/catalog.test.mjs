// The catalogue fits a small window: at --context-tokens 30000 (7,500
// tokens per result) a library of 200 skills with ~300-character
// descriptions is listed whole in one list_skills page, each copy of the
// result (text block, structuredContent) within the budget by the server's
// own estimate; descriptions are cut at a boundary, never mid-word, and
// load_skill still gives them whole. At 128000 cards stay complete.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { TEST_TIMEOUT, callOk, connect, post, startServer } from './lib/harness.mjs';
import { estimator, makeLibrary } from './lib/catalog.mjs';

const opts = { timeout: TEST_TIMEOUT };
const MAX_CHARS = 48000;    // --max-result-chars default
let lib, all, est;
const byQ = new Map();

before(() => {
  lib = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-catalog-'));
  all = makeLibrary(lib, 200);
  for (const s of all) byQ.set(s.qname, s);
  est = estimator();
});
after(() => {
  est?.close();
  if (lib) fs.rmSync(lib, { recursive: true, force: true });
});

async function withServer(ctx, fn) {
  const srv = await startServer({ skillsDirs: [lib], args: ['--context-tokens', String(ctx)] });
  const client = await connect(srv.url);
  try {
    return await fn(client, srv);
  } finally {
    await client.close();
    await srv.stop();
  }
}

/** Both copies of a result, measured by shape_tokens; both within budget. */
function checkCopies(res, budget, label) {
  const sc = JSON.stringify(res.structuredContent);
  const text = res.content[0].text;
  assert.equal(text, sc, `${label}: the text block is the structuredContent JSON`);
  const [a, b] = est.measure([sc, text]);
  console.log(`# ${label}: ${res.structuredContent.skills.length} cards, structuredContent ` +
    `${a.tokens} tokens / ${a.chars} chars, text ${b.tokens} tokens; budget ${budget} tokens`);
  for (const m of [a, b]) {
    assert.ok(m.tokens <= budget, `${label}: ${m.tokens} tokens > ${budget}`);
    assert.ok(m.chars <= MAX_CHARS, `${label}: ${m.chars} chars > ${MAX_CHARS}`);
  }
  return a;
}

/** kept is the full description, or a prefix of it that ends at a boundary. */
function checkCut(full, kept, label) {
  if (kept === full) return false;
  const marker = kept.endsWith('…');
  const p = marker ? kept.slice(0, -1) : kept;
  assert.ok(p.length > 0 && full.startsWith(p), `${label}: "${kept}" is not a prefix of "${full}"`);
  assert.ok(!/\s$/.test(p), `${label}: "${kept}" ends in a space`);
  if (marker) assert.match(full.slice(p.length), /^([ ,;:]|\s[—–-]\s)/, `${label}: cut mid-word: "${kept}"`);
  else assert.match(kept, /[.!?]$/, `${label}: a cut without the marker must end a sentence: "${kept}"`);
  return true;
}

test('at 30000 tokens, 200 skills are listed whole in one page, each copy within 7,500 tokens', opts, async () => {
  await withServer(30000, async (client) => {
    const res = await client.callTool({ name: 'list_skills', arguments: {} });
    assert.notEqual(res.isError, true);
    const sc = res.structuredContent;
    assert.equal(sc.total, 200);
    assert.equal(sc.skills.length, 200);
    assert.equal(sc.next_cursor, undefined);
    assert.equal(sc._truncated, undefined);
    const m = checkCopies(res, 7500, 'list_skills at 30000');
    console.log(`# a card costs ${(m.tokens / 200).toFixed(1)} tokens at 30000`);
    let cut = 0, team = 0;
    sc.skills.forEach((k, i) => {
      const qn = k.qualified_name ?? k.name;
      assert.equal(qn, all[i].qname, 'qualified-name order');
      const s = byQ.get(qn);
      assert.equal(k.name, s.name);
      if (s.qname !== s.name) {
        team++;
        assert.equal(k.qualified_name, s.qname, 'qualified_name present when it differs');
      } else {
        assert.equal('qualified_name' in k, false, 'qualified_name absent when it equals name');
      }
      if (checkCut(s.description, k.description, qn)) cut++;
    });
    assert.ok(team >= 10, 'the library has team folders');
    assert.ok(cut > 100, `descriptions were cut (${cut})`);
    // load_skill still gives the whole description
    const cutOne = sc.skills.find((k) => k.description !== byQ.get(k.qualified_name ?? k.name).description);
    const full = await callOk(assert, client, 'load_skill', { name: cutOne.qualified_name ?? cutOne.name });
    assert.equal(full.description, byQ.get(cutOne.qualified_name ?? cutOne.name).description);
  });
});

test('at 30000 tokens a query gives its top results fuller cards', opts, async () => {
  await withServer(30000, async (client) => {
    const whole = (await client.callTool({ name: 'list_skills', arguments: {} })).structuredContent;
    // every description says what was checked: the query matches the whole
    // library, so equal shares are as tight as on the default page
    const res = await client.callTool({ name: 'list_skills', arguments: { query: 'reconcile invoice batches checked' } });
    const sc = res.structuredContent;
    checkCopies(res, 7500, 'list_skills query at 30000');
    assert.equal(sc.total, 200);
    assert.equal(sc.skills.length, 200);
    const top = sc.skills[0];
    const qn = top.qualified_name ?? top.name;
    assert.equal(top.description, byQ.get(qn).description, 'the top result is whole');
    const inWhole = whole.skills.find((k) => (k.qualified_name ?? k.name) === qn);
    assert.ok(top.description.length > inWhole.description.length, 'fuller than on the default page');
    for (const k of sc.skills) checkCut(byQ.get(k.qualified_name ?? k.name).description, k.description, 'query');
  });
});

test('at 128000 tokens cards are complete and paging reaches every skill', opts, async () => {
  await withServer(128000, async (client) => {
    const seen = [];
    let cursor;
    for (let page = 0; page < 10; page++) {
      const res = await client.callTool({ name: 'list_skills', arguments: cursor ? { cursor } : {} });
      checkCopies(res, 32000, `list_skills at 128000, page ${page + 1}`);
      const sc = res.structuredContent;
      for (const k of sc.skills) {
        const s = byQ.get(k.qualified_name ?? k.name);
        assert.equal(k.description, s.description, 'complete description');
        assert.deepEqual(k.tags, s.tags);
        assert.equal(k.version, s.version);
        assert.equal('qualified_name' in k, s.qname !== s.name);
        seen.push(s.qname);
      }
      if (page === 0) {
        const [m] = est.measure([JSON.stringify(sc)]);
        console.log(`# a card costs ${(m.tokens / sc.skills.length).toFixed(1)} tokens at 128000`);
      }
      cursor = sc.next_cursor;
      if (!cursor) break;
    }
    assert.deepEqual(seen, all.map((s) => s.qname));
  });
});

test('tools/list is small', opts, async () => {
  await withServer(30000, async (client, srv) => {
    const r = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const tools = r.json.result.tools;
    const seen = tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
    const [whole, model] = est.measure([JSON.stringify(tools), JSON.stringify(seen)]);
    console.log(`# tools/list: ${whole.tokens} tokens; names, descriptions and input schemas: ${model.tokens}`);
    // The whole list includes the output schemas (stdout_format, stderr_format, a miss hint), which
    // clients validate against and models rarely see; the second bound is what a model reads.
    assert.ok(whole.tokens <= 2700, `tools/list costs ${whole.tokens} tokens`);
    assert.ok(model.tokens <= 1050, `tool names, descriptions and input schemas cost ${model.tokens} tokens`);
  });
});
