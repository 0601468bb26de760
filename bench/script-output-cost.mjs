#!/usr/bin/env node
// bench/script-output-cost.mjs [BINARY] - what a script's JSON output costs a
// small model, and what filtering at the source saves.
//
// Starts tests/fakeapi (500 orders with nested customers and line items) and
// the server over the bundled skills at --context-tokens 30000, then calls the
// bundled rest-client for the whole list, a count, and a few fields of a few
// rows. For each it prints what the script printed (run directly, tokens by
// the server's own estimate, shape_tokens) and what the result carries: its
// stdout's tokens, stdout_format, whether that stdout parses, the answer's
// `total`, the rows kept, and the tokens of the whole result (one copy).
//
//   node bench/script-output-cost.mjs build/skill-mcp
//
// Needs tests/e2e/node_modules (tests/run-e2e.sh installs it), python3 and cc.

import { execFileSync } from 'node:child_process';
import path from 'node:path';

const bin = process.argv[2];
if (bin) process.env.SKILL_MCP_BIN = path.resolve(bin);
const { connect, startServer, startFakeapi, REPO } = await import('../tests/e2e/lib/harness.mjs');
const { estimator } = await import('../tests/e2e/lib/catalog.mjs');

const CALLS = [
  ['the whole list', ['GET', '/orders', '--max-items', '1000']],
  ['1. count', ['GET', '/orders', '--count-only']],
  ['2. fields + limit', ['GET', '/orders', '--fields', 'id,status,amount,customer.name', '--limit', '10']],
];

const fakeapi = await startFakeapi();
const est = estimator();
let server;
let client;
try {
  server = await startServer({ skillsDirs: [path.join(REPO, 'skills')], args: ['--context-tokens', '30000'] });
  client = await connect(server.url);
  console.log('| call (rest-client args) | printed (tokens) | stdout in the result (tokens) | stdout_format | parses | total | rows kept | result (tokens) |');
  console.log('|---|---:|---:|---|---|---:|---:|---:|');
  for (const [label, args] of CALLS) {
    const printed = execFileSync('python3', [path.join(REPO, 'skills/rest-client/scripts/rest.py'), ...args],
      { env: { PATH: process.env.PATH, REST_BASE_URL: fakeapi.url }, maxBuffer: 64 << 20 }).toString();
    const r = await client.callTool({
      name: 'run_skill_script',
      arguments: { name: 'rest-client', script: 'scripts/rest.py', args, env: { REST_BASE_URL: fakeapi.url } },
    });
    const sc = r.structuredContent;
    if (sc.status !== 'ok') throw new Error(`${label}: ${JSON.stringify(sc).slice(0, 400)}`);
    let parsed = null;
    try { parsed = JSON.parse(sc.stdout); } catch { /* reported as "no" */ }
    const body = parsed?.data ?? parsed;   // rest.py prints {status, ok, ..., data: <the answer>}; --count-only {total}
    const [p, s, whole] = est.measure([printed, sc.stdout, JSON.stringify(sc)]);
    const rows = Array.isArray(body?.data) ? body.data.filter((x) => !(x && x._truncated)).length : '-';
    console.log(`| ${label} (\`${args.slice(2).join(' ')}\`) | ${p.tokens} | ${s.tokens} | ${sc.stdout_format} | ` +
      `${parsed ? 'yes' : 'no'} | ${body?.total ?? '-'} | ${rows} | ${whole.tokens} |`);
  }
} finally {
  await client?.close();
  await server?.stop();
  est.close();
  fakeapi.proc.removeAllListeners('exit');
  fakeapi.proc.kill('SIGTERM');
}
