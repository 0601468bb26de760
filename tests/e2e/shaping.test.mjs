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

// A REST list of 500 orders, printed as Python prints it (~59K tokens), a
// JSON Lines log, and the budget a script is told.
const ORDERS_PY = `import json, sys
rows = [{"id": i, "number": "ORD-%06d" % i, "status": "shipped" if i % 3 else "pending",
         "customer": {"id": 1000 + i, "name": "Customer %d" % i,
                      "email": "customer%d@example.com" % i,
                      "address": {"city": "Springfield", "zip": "%05d" % (10000 + i)}},
         "items": [{"sku": "SKU-%d" % (i * 7), "qty": 1 + i % 4, "price": 12.50},
                   {"sku": "SKU-%d" % (i * 3), "qty": 1, "price": 9.99}],
         "total": 22.49, "currency": "EUR",
         "created_at": "2026-11-%02dT10:%02d:00Z" % (1 + i % 28, i % 60),
         "note": "Leave the parcel at the door if nobody answers."} for i in range(1, 501)]
doc = {"total": 500, "page": 1, "data": rows}
if sys.argv[1:] == ["--file"]:
    print(json.dumps(doc, indent=2))
else:
    # a number spelled as no float prints it: it must come back as printed
    print(json.dumps(doc).replace('"price": 12.5}', '"price": 12.50}'))
`;

function ordersSkill(skills) {
  const d = path.join(skills, 'orders');
  fs.mkdirSync(path.join(d, 'scripts'), { recursive: true });
  fs.mkdirSync(path.join(d, 'references'), { recursive: true });
  fs.writeFileSync(path.join(d, 'SKILL.md'),
    '---\nname: orders\ndescription: Lists the orders of a shop as JSON\n---\n# Orders\n');
  fs.writeFileSync(path.join(d, 'scripts', 'orders.py'), ORDERS_PY);
  fs.writeFileSync(path.join(d, 'scripts', 'events.sh'),
    'for i in $(seq 1 3000); do echo "{\\"event\\": \\"tick\\", \\"seq\\": $i}"; done\n');
  fs.writeFileSync(path.join(d, 'scripts', 'budget.sh'), 'printf "%s" "$SKILL_OUTPUT_BUDGET_BYTES"\n');
  fs.writeFileSync(path.join(d, 'scripts', 'small.sh'),
    "printf '{\"total\": 2, \"big\": 12345678901234567890, \"x\": 1e400, \"p\": 1.10}\\n'\n");
  // a skill whose post hook replaces stdout with the 500 orders
  const h = path.join(skills, 'replaced');
  fs.mkdirSync(path.join(h, 'scripts'), { recursive: true });
  fs.mkdirSync(path.join(h, 'hooks'), { recursive: true });
  fs.writeFileSync(path.join(h, 'SKILL.md'),
    '---\nname: replaced\ndescription: Output replaced by its post hook\n---\n# Replaced\n');
  fs.writeFileSync(path.join(h, 'scripts', 'hello.sh'), 'echo hello\n');
  fs.writeFileSync(path.join(h, 'hooks', 'post.py'),
    ORDERS_PY.replace(/^if sys.argv[\s\S]*$/m, '') +
    'sys.stdin.read()\nprint(json.dumps({"result": {"stdout": json.dumps(doc)}}))\n');
  const rows = [];
  for (let i = 0; i < 400; i++) rows.push({ id: i, name: `item ${i}`, tags: ['a', 'b'], price: 1.5 });
  fs.writeFileSync(path.join(d, 'references', 'catalog.json'),
    JSON.stringify({ version: 3, items: rows }, null, 2));
}

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
      ordersSkill(skills);
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

test('a 500-row JSON stdout comes back as JSON: envelope, whole rows, its own _truncated', { timeout: TEST_TIMEOUT }, async () => {
  const res = await client.callTool({ name: 'run_skill_script', arguments: { name: 'orders', script: 'scripts/orders.py' } });
  checkFits(res, 'stdout');
  const sc = res.structuredContent;
  assert.equal(sc.status, 'ok', sc.stderr);
  assert.equal(sc.stdout_format, 'json');
  assert.equal(sc.stderr_format, 'text');
  assert.ok(sc.stdout_bytes > 200000, `the script printed ${sc.stdout_bytes} bytes`);
  const out = JSON.parse(sc.stdout);
  assert.equal(out.total, 500);
  assert.equal(out.page, 1);
  assert.ok(out.data.length >= 3 && out.data.length < 500, `${out.data.length} rows kept`);
  out.data.forEach((row, i) => {
    assert.equal(row.id, i + 1, 'rows from the first, in order');
    assert.equal(row.customer.address.city, 'Springfield', 'rows kept whole');
    assert.equal(row.items.length, 2);
  });
  assert.equal(out._truncated.path, 'data');
  assert.equal(out._truncated.kept, out.data.length);
  assert.equal(out._truncated.total, 500);
  for (const flag of ['--count-only', '--fields', '--limit']) assert.ok(out._truncated.hint.includes(flag), flag);
  // kept numbers are the printed bytes
  assert.match(sc.stdout, /"price":12.50}/);
});

test('JSON Lines output stays JSON Lines, its last line the record', { timeout: TEST_TIMEOUT }, async () => {
  const res = await client.callTool({ name: 'run_skill_script', arguments: { name: 'orders', script: 'scripts/events.sh' } });
  checkFits(res, 'stdout');
  const sc = res.structuredContent;
  assert.equal(sc.stdout_format, 'jsonl');
  const lines = sc.stdout.split('\n').filter((l) => l).map((l) => JSON.parse(l));
  assert.equal(lines[0].seq, 1);
  const last = lines.at(-1)._truncated;
  assert.equal(last.total, 3000);
  assert.equal(last.kept, lines.length - 1);
});

test('a JSON stdout that fits is returned byte for byte', { timeout: TEST_TIMEOUT }, async () => {
  const res = await client.callTool({ name: 'run_skill_script', arguments: { name: 'orders', script: 'scripts/small.sh' } });
  const sc = res.structuredContent;
  assert.equal(sc.stdout, '{"total": 2, "big": 12345678901234567890, "x": 1e400, "p": 1.10}\n');
  assert.equal(sc.stdout_format, 'json');
  assert.equal(sc._truncated, undefined);
});

test('read_skill_file of a big .json file is cut as JSON', { timeout: TEST_TIMEOUT }, async () => {
  const res = await client.callTool({ name: 'read_skill_file',
    arguments: { name: 'orders', path: 'references/catalog.json', max_bytes: 1048576 } });
  checkFits(res, 'content');
  const doc = JSON.parse(res.structuredContent.content);
  assert.equal(doc.version, 3);
  assert.ok(doc.items.length > 0 && doc.items.length < 400);
  assert.equal(doc._truncated.path, 'items');
  assert.equal(doc._truncated.total, 400);
});

// SKILL_OUTPUT_BUDGET_BYTES is what one result may carry at the window, in
// bytes (the per-copy budget: its characters, or four bytes a token), not
// the --max-output-bytes retention cap.
async function budgetSeen(c) {
  const r = await c.callTool({ name: 'run_skill_script', arguments: { name: 'orders', script: 'scripts/budget.sh' } });
  assert.equal(r.structuredContent.status, 'ok');
  return Number(r.structuredContent.stdout);
}

test('SKILL_OUTPUT_BUDGET_BYTES follows the window: about 30 KB at 30000 tokens', { timeout: TEST_TIMEOUT }, async () => {
  const small = await budgetSeen(client);
  // 7,500 tokens a result: 30,000 bytes for the whole, 13,500 at 45% a copy
  assert.ok(small >= 13500 && small <= 30000, `at 30000 tokens: ${small}`);
  const dflt = await startServer({ setup: ordersSkill });
  try {
    const c2 = await connect(dflt.url);
    const big = await budgetSeen(c2);
    // 48,000 characters a result (21,600 at 45% a copy), far below 1 MiB
    assert.ok(big >= 21600 && big <= 48000, `at the default window: ${big}`);
    assert.ok(small < big);
    await c2.close();
  } finally {
    await dflt.stop();
  }
  const wide = await startServer({ setup: ordersSkill,
    args: ['--context-tokens', '10000000', '--max-result-chars', '10000000', '--max-output-bytes', '65536'] });
  try {
    const c3 = await connect(wide.url);
    assert.equal(await budgetSeen(c3), 65536, 'never above the retention cap');
    await c3.close();
  } finally {
    await wide.stop();
  }
});

test('a post hook\'s replacement stdout that is JSON is cut as JSON too', { timeout: TEST_TIMEOUT }, async () => {
  const res = await client.callTool({ name: 'run_skill_script', arguments: { name: 'replaced', script: 'scripts/hello.sh' } });
  checkFits(res, 'stdout');
  const sc = res.structuredContent;
  assert.equal(sc.status, 'ok', sc.hint);
  assert.equal(sc.stdout_format, 'json');
  const out = JSON.parse(sc.stdout);
  assert.equal(out.total, 500);
  assert.equal(out._truncated.path, 'data');
  assert.equal(out._truncated.kept, out.data.length);
});
