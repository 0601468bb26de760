#!/usr/bin/env node
// measure-tokens.mjs - compares shape_tokens() (server/shape_tokens.c) with real BPE
// tokenizers on the samples in samples/ and prints a Markdown table.
//
//   cd tests/shape && npm ci && node measure-tokens.mjs
//
// The C estimate comes from estimate.c, compiled here with cc against
// server/shape*.c and server/util.c (jansson via pkg-config). The real counts
// come from gpt-tokenizer (o200k_base: GPT-4o and later; cl100k_base: GPT-4,
// a smaller vocabulary closer to the local models'). Exits 1 when the
// estimate is below either real count on any sample (it must never
// undercount).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encode as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import { encode as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const samples = join(here, 'samples');

const tmp = mkdtempSync(join(tmpdir(), 'shape-measure-'));
let rows;
try {
  const exe = join(tmp, 'estimate');
  const flags = execFileSync('pkg-config', ['--cflags', '--libs', 'jansson']).toString().trim().split(/\s+/).filter(Boolean);
  execFileSync(process.env.CC || 'cc', ['-std=c11', '-D_GNU_SOURCE', '-O2', '-I', join(root, 'server'),
    '-o', exe, join(here, 'estimate.c'), join(root, 'server/shape.c'), join(root, 'server/shape_json.c'), join(root, 'server/shape_tokens.c'), join(root, 'server/json.c'), join(root, 'server/util.c'),
    ...flags, '-lm'], { stdio: 'inherit' });
  const files = readdirSync(samples).sort().map((f) => join(samples, f));
  const out = execFileSync(exe, files).toString().trim().split('\n');
  rows = out.map((line) => {
    const [tok, chars, path] = line.split(' ');
    const text = readFileSync(path, 'utf8');
    return { name: path.slice(samples.length + 1), bytes: Buffer.byteLength(text), chars: Number(chars),
             est: Number(tok), o200k: o200k(text).length, cl100k: cl100k(text).length };
  });
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const pad = (s, n) => String(s).padStart(n);
console.log('| sample | bytes | chars | o200k_base | cl100k_base | estimate | est/o200k | est/cl100k |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
let bad = 0;
for (const r of rows) {
  const under = r.est < Math.max(r.o200k, r.cl100k);
  if (under) bad++;
  console.log(`| ${r.name} | ${pad(r.bytes, 5)} | ${pad(r.chars, 5)} | ${pad(r.o200k, 5)} | ${pad(r.cl100k, 5)} | ` +
              `${pad(r.est, 5)} | ${(r.est / r.o200k).toFixed(2)} | ${(r.est / r.cl100k).toFixed(2)} |` +
              (under ? ' UNDERCOUNT' : ''));
}
if (bad) {
  console.error(`${bad} sample(s) undercounted`);
  process.exit(1);
}
