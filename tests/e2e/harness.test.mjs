// The end-to-end helpers themselves, where a wrong one would hang or pass
// other files by accident: indexerSettled on a library with no skill body
// to index.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { indexerSettled, startServer } from './lib/harness.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-harness-'));
fs.chmodSync(tmp, 0o755);
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('indexerSettled resolves for a server whose library is empty', { timeout: 30_000 }, async () => {
  const empty = path.join(tmp, 'empty');
  fs.mkdirSync(empty);
  const srv = await startServer({ skillsDirs: [empty] });
  try {
    const t0 = Date.now();
    await indexerSettled(srv, 1, 10_000);
    assert.match(srv.log, /skills: indexed the bodies of 0 skills/);
    assert.ok(Date.now() - t0 < 10_000);
  } finally {
    await srv.stop();
  }
});
