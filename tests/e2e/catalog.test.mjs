// What the catalogue costs a small window, measured with the server's own
// token estimate (shape_tokens).

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

test('tools/list is small', opts, async () => {
  await withServer(30000, async (client, srv) => {
    const r = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const tools = r.json.result.tools;
    const seen = tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
    const [whole, model] = est.measure([JSON.stringify(tools), JSON.stringify(seen)]);
    console.log(`# tools/list: ${whole.tokens} tokens; names, descriptions and input schemas: ${model.tokens}`);
    assert.ok(whole.tokens <= 2600, `tools/list costs ${whole.tokens} tokens`);
    assert.ok(model.tokens <= 1050, `tool names, descriptions and input schemas cost ${model.tokens} tokens`);
  });
});
