#!/usr/bin/env node
// bench/catalog-cost.mjs [BINARY] - what the catalogue costs a model.
//
// Generates a library of 200 skills (tests/e2e/lib/catalog.mjs: three-sentence
// descriptions of ~300 characters, two tags, a version), starts the server at
// --context-tokens 30000 and 128000, and prints, measured with the server's
// own estimate (shape_tokens): tools/list, and the list_skills page without
// arguments (cards shown, tokens of each copy, tokens per card).
//
//   node bench/catalog-cost.mjs build/skill-mcp
//
// Needs tests/e2e/node_modules (tests/run-e2e.sh installs it) and cc.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const bin = process.argv[2];
if (bin) process.env.SKILL_MCP_BIN = path.resolve(bin);
const { connect, post, startServer } = await import('../tests/e2e/lib/harness.mjs');
const { estimator, makeLibrary } = await import('../tests/e2e/lib/catalog.mjs');

const N = Number(process.env.CATALOG_SKILLS || 200);
const lib = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-catalog-'));
const est = estimator();
try {
  makeLibrary(lib, N);
  console.log(`library: ${N} skills`);
  console.log('| --context-tokens | per-result budget | tools/list | list_skills cards | next_cursor | page tokens (structuredContent / text) | tokens per card |');
  console.log('|---:|---:|---:|---:|---|---:|---:|');
  for (const ctx of [30000, 128000]) {
    const srv = await startServer({ skillsDirs: [lib], args: ['--context-tokens', String(ctx)] });
    try {
      const tl = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
      const client = await connect(srv.url);
      const r = await client.callTool({ name: 'list_skills', arguments: {} });
      await client.close();
      const sc = JSON.stringify(r.structuredContent);
      const [tools, page, text] = est.measure([JSON.stringify(tl.json.result.tools), sc, r.content[0].text]);
      const cards = r.structuredContent.skills.length;
      const budget = Math.floor(ctx * 0.25);
      console.log(`| ${ctx} | ${budget} | ${tools.tokens} | ${cards} of ${r.structuredContent.total} | ` +
        `${r.structuredContent.next_cursor ?? '-'} | ${page.tokens} / ${text.tokens} | ` +
        `${(page.tokens / Math.max(cards, 1)).toFixed(1)} |`);
    } finally {
      await srv.stop();
    }
  }
} finally {
  est.close();
  fs.rmSync(lib, { recursive: true, force: true });
}
