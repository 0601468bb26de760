// Every tool result fits the client's budget: --context-tokens N x
// --context-share F tokens and --max-result-chars characters for the whole
// result, cut structurally (valid JSON, envelope kept, _truncated says what
// was dropped and how to narrow the call).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { TEST_TIMEOUT, connect, post, startServer } from './lib/harness.mjs';

let srv;
let client;
const TOKENS = 30000;
const SHARE = 0.25;

// The server's estimate is at least chars/4 for ASCII; a budget of T tokens
// therefore bounds a result's text at roughly 4*T characters. Check that.
const maxChars = Math.floor(TOKENS * SHARE * 4);

before(async () => {
  srv = await startServer({
    args: ['--context-tokens', String(TOKENS), '--context-share', String(SHARE)],
    setup: (skills) => {
      const d = path.join(skills, 'bulky');
      fs.mkdirSync(path.join(d, 'scripts'), { recursive: true });
      fs.mkdirSync(path.join(d, 'references'), { recursive: true });
      let body = '---\nname: bulky\ndescription: A skill with very large outputs\n---\n# Bulky\n';
      for (let i = 0; i < 80; i++) body += `\n## Part ${i}\n` + 'Some words to fill the part. '.repeat(60) + '\n';
      fs.writeFileSync(path.join(d, 'SKILL.md'), body);
      fs.writeFileSync(path.join(d, 'references', 'big.txt'), 'abcdefghij\n'.repeat(30000));
      fs.writeFileSync(path.join(d, 'scripts', 'flood.sh'),
        'for i in $(seq 1 30000); do echo "row $i"; done\necho LAST-LINE\n');
    },
  });
  client = await connect(srv.url);
});
after(async () => {
  await client?.close();
  await srv?.stop();
});

function checkFits(res, field) {
  const text = res.content[0].text;
  assert.ok(text.length <= maxChars, `text block ${text.length} chars > ${maxChars}`);
  assert.deepEqual(JSON.parse(text), res.structuredContent, 'text block and structuredContent agree');
  const t = res.structuredContent._truncated;
  assert.ok(t, '_truncated is set');
  assert.ok(t.fields.includes(field), `_truncated.fields names ${field}`);
  assert.ok(t.original_tokens > t.kept_tokens);
  assert.equal(typeof t.hint, 'string');
}

test('load_skill of a huge body keeps every heading and says how to narrow', { timeout: TEST_TIMEOUT }, async () => {
  const res = await client.callTool({ name: 'load_skill', arguments: { name: 'bulky' } });
  checkFits(res, 'content');
  const sc = res.structuredContent;
  for (let i = 0; i < 80; i += 13) assert.match(sc.content, new RegExp(`## Part ${i}\\n`));
  assert.equal(sc.sections.length, 81);
  assert.match(sc._truncated.hint, /section/);
});

test('read_skill_file of a big file is cut to head and tail', { timeout: TEST_TIMEOUT }, async () => {
  const res = await client.callTool({ name: 'read_skill_file',
    arguments: { name: 'bulky', path: 'references/big.txt', max_bytes: 1048576 } });
  checkFits(res, 'content');
  assert.match(res.structuredContent.content, /omitted/);
  assert.equal(res.structuredContent.size, 330000);
});

test('a flood of script output keeps its first and last lines', { timeout: TEST_TIMEOUT }, async () => {
  const res = await client.callTool({ name: 'run_skill_script', arguments: { name: 'bulky', script: 'flood.sh' } });
  checkFits(res, 'stdout');
  const out = res.structuredContent.stdout;
  assert.match(out, /^row 1\n/);
  assert.match(out, /LAST-LINE\n$/);
  assert.equal(res.structuredContent.status, 'ok');
});

test('small results are untouched', { timeout: TEST_TIMEOUT }, async () => {
  const res = await client.callTool({ name: 'list_skills', arguments: { query: 'csv' } });
  assert.equal(res.structuredContent._truncated, undefined);
});

test('a cut list page has a next_cursor that skips no card', { timeout: TEST_TIMEOUT }, async () => {
  // A budget so small that 50 cards cannot fit: a separate server.
  const small = await startServer({ args: ['--context-tokens', '1000', '--context-share', '1',
    '--max-result-chars', '1000'] });
  try {
    const c2 = await connect(small.url);
    const seen = new Set();
    let cursor;
    let total = 0;
    for (let page = 0; page < 60; page++) {
      const args = { limit: 50 };
      if (cursor) args.cursor = cursor;
      const r = await c2.callTool({ name: 'list_skills', arguments: args });
      const sc = r.structuredContent;
      total = sc.total;
      for (const s of sc.skills) seen.add((s.qualified_name ?? s.name));
      cursor = sc.next_cursor;
      if (!cursor) break;
    }
    assert.equal(seen.size, total, 'every card appears on some page');
    await c2.close();
  } finally {
    await small.stop();
  }
});

test('a raised --max-result-chars is declared on the tools', { timeout: TEST_TIMEOUT }, async () => {
  const big = await startServer({ args: ['--max-result-chars', '200000'] });
  try {
    const r = await post(big.url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    for (const t of r.json.result.tools) assert.equal(t._meta['anthropic/maxResultSizeChars'], 200000);
  } finally {
    await big.stop();
  }
});
