#!/usr/bin/env node
// acceptance/run.mjs: black-box acceptance run of skill-mcp.
//
//   node acceptance/run.mjs --bin build/skill-mcp [--first-failure]
//        [--lang en|zh] [--report FILE] [--summary]
//
// Builds its own skill fixtures in a temp dir, starts the servers each group
// needs, runs every numbered item (A001...), writes a Markdown report and
// exits 1 on any failure.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, runCli } from './lib.mjs';
import { buildFixtures } from './fixtures.mjs';
import items, { Fail } from './items.mjs';
import { tr, untranslated } from './i18n.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

function parseArgs(argv) {
  const o = { bin: null, firstFailure: false, lang: 'en', report: path.join(HERE, 'report.md'), summary: false, only: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--bin') o.bin = argv[++i];
    else if (a === '--first-failure') o.firstFailure = true;
    else if (a === '--lang') o.lang = argv[++i];
    else if (a === '--report') o.report = argv[++i];
    else if (a === '--summary') o.summary = true;
    else if (a === '--only') o.only = argv[++i];
    else if (a === '--help' || a === '-h') {
      console.log('usage: node acceptance/run.mjs --bin PATH [--first-failure] [--lang en|zh] [--report FILE] [--summary] [--only A001,A002]');
      process.exit(0);
    } else { console.error(`unknown argument ${a}`); process.exit(2); }
  }
  if (!o.bin) { console.error('--bin PATH is required'); process.exit(2); }
  if (!['en', 'zh'].includes(o.lang)) { console.error('--lang must be en or zh'); process.exit(2); }
  o.bin = path.resolve(o.bin);
  return o;
}

const opts = parseArgs(process.argv.slice(2));
if (!fs.existsSync(opts.bin)) { console.error(`no binary at ${opts.bin} (run make first)`); process.exit(2); }

if (opts.lang === 'zh') {
  const miss = untranslated([...new Set(items.flatMap((it) => [it.area, it.promise, it.fix]))]);
  if (miss.length) console.error(`warning: ${miss.length} string(s) without Chinese text in acceptance/i18n.mjs (shown in English):\n  ${miss.join('\n  ')}`);
}
const fx = buildFixtures();
items.forEach((it, i) => { it.id = 'A' + String(i + 1).padStart(3, '0'); });

// Tokens for the auth server, made with the binary's own `token add`.
const tokenFile = path.join(fx.tmp, 'tokens.txt');
const tokens = {};
for (const [name, rpm] of [['limited', '3'], ['open', null]]) {
  const r = runCli(opts.bin, ['token', 'add', name, ...(rpm ? ['--rpm', rpm] : []), '--file', tokenFile]);
  tokens[name] = r.stdout.trim().split('\n')[0];
}

const baseEnv = { ...process.env, HOOK_ACCEPT: 'hv', ACCEPT_SECRET: 'server-secret', HTTP_PROXY: 'http://proxy.example:3128', HOOK_LOG: fx.hookLog };
const CONFIGS = {
  main: ['--skills', fx.A, '--skills', fx.B, '--skills', '/nonexistent-acceptance-root', '--refresh-interval', '0'],
  rootB: ['--skills', fx.B, '--refresh-interval', '0'],
  refresh: ['--skills', fx.R, '--refresh-interval', '1'],
  budget: ['--skills', fx.A, '--refresh-interval', '0', '--context-tokens', '2000'],
  // so small that even the shortest cards of the library do not fit one page
  tinylist: ['--skills', fx.A, '--refresh-interval', '0', '--context-tokens', '2000', '--context-share', '0.06'],
  hooks: ['--skills', fx.A, '--refresh-interval', '0', '--hooks-dir', fx.H],
  noscripts: ['--skills', fx.A, '--refresh-interval', '0', '--no-scripts', '--max-result-chars', '60000'],
  queue: ['--skills', fx.A, '--refresh-interval', '0', '--max-script-concurrency', '1', '--script-queue-timeout', '1'],
  auth: ['--skills', fx.A, '--refresh-interval', '0', '--auth-tokens', tokenFile, '--max-scripts-per-client', '1'],
  workers: ['--skills', fx.A, '--refresh-interval', '0', '--workers', '2', '--threads', '2'],
  drain: ['--skills', fx.A, '--refresh-interval', '0', '--shutdown-timeout', '5'],
  drain2: ['--skills', fx.A, '--refresh-interval', '0', '--shutdown-timeout', '1'],
  // written by the first "Approved versions" item before the server starts
  lock: ['--skills', path.join(fx.tmp, 'lock-root'), '--lock', path.join(fx.tmp, 'skills.lock'), '--refresh-interval', '0'],
};
const servers = new Map();
const ctx = {
  bin: opts.bin, fx, tokens, tokenFile,
  async srv(name) {
    if (!servers.has(name)) servers.set(name, startServer(opts.bin, CONFIGS[name], { env: baseEnv }));
    return servers.get(name);
  },
  forget(name) { servers.delete(name); },
};

const ITEM_TIMEOUT = 20000;
const results = [];
const t0 = Date.now();
const only = opts.only ? new Set(opts.only.split(',')) : null;
try {
  for (const it of items) {
    if (only && !only.has(it.id)) continue;
    const started = Date.now();
    let res;
    try {
      let timer;
      await Promise.race([
        it.fn(ctx),
        new Promise((_, rej) => { timer = setTimeout(() => rej(new Fail(`no answer within ${ITEM_TIMEOUT} ms`, 'the check to finish')), ITEM_TIMEOUT); }),
      ]).finally(() => clearTimeout(timer));
      res = { status: 'pass' };
    } catch (e) {
      if (e instanceof Fail) res = { status: 'fail', observed: e.observed, expected: e.expected };
      else res = { status: 'fail', observed: `${e?.rpc ? 'JSON-RPC error ' + JSON.stringify(e.rpc) : String(e?.stack ?? e).split('\n').slice(0, 3).join(' | ')}`, expected: '(the check to run without an exception)' };
    }
    res.ms = Date.now() - started;
    results.push({ it, ...res });
    const mark = res.status === 'pass' ? 'ok  ' : 'FAIL';
    console.log(`${mark} ${it.id} [${it.area}] ${it.promise}${res.status === 'fail' ? `\n       observed: ${res.observed}\n       expected: ${res.expected}` : ''}`);
    if (res.status === 'fail' && opts.firstFailure) break;
  }
} finally {
  await Promise.all([...servers.values()].map(async (p) => { try { const s = await p; await s.stop(); } catch { /* failed start */ } }));
  fx.cleanup();
}

const pass = results.filter((r) => r.status === 'pass').length;
const fail = results.filter((r) => r.status === 'fail').length;
const secs = ((Date.now() - t0) / 1000).toFixed(1);

// ------------------------------------------------------------------ report
const L = (k) => tr(opts.lang, k);
const esc = (s) => String(s).replace(/\|/g, '\\|').replace(/\n/g, ' ');
const out = [];
out.push(`# ${L('title')}`, '');
out.push(`- ${L('date')}: ${new Date().toISOString()}`);
out.push(`- ${L('binary')}: \`${opts.bin}\` (${runCli(opts.bin, ['--version']).stdout.trim()})`);
const counts = opts.lang === 'zh'
  ? `**通过 ${pass}，失败 ${fail}**（共 ${items.length} 项，已运行 ${results.length} 项，${secs} 秒）`
  : `**${pass} passed, ${fail} failed** (${results.length} of ${items.length} items run, ${secs} s)`;
out.push(`- ${L('result')}: ${counts}${opts.firstFailure && fail ? ` — ${L('stopped')}` : ''}`);
out.push(`- ${L('spec')}: spec/RFC-SKILL-1.md, docs/`, '');
out.push(`## ${L('items_heading')}`, '');
out.push(`| ${L('col_id')} | ${L('col_area')} | ${L('col_cite')} | ${L('col_promise')} | ${L('col_result')} |`, '|---|---|---|---|---|');
for (const r of results) {
  const st = r.status === 'pass' ? L('pass') : `**${L('fail')}** ([${L('details')}](#${r.it.id.toLowerCase()}))`;
  out.push(`| ${r.it.id} | ${esc(L(r.it.area))} | ${esc(r.it.cite)} | ${esc(L(r.it.promise))} | ${esc(st)} |`);
}
out.push('');
if (fail) {
  out.push(`## ${L('failures_heading')}`, '');
  for (const r of results.filter((x) => x.status === 'fail')) {
    out.push(`### ${r.it.id}`, '');
    out.push(`- ${L('col_area')}: ${L(r.it.area)}`, `- ${L('col_cite')}: ${r.it.cite}`, `- ${L('col_promise')}: ${L(r.it.promise)}`);
    out.push(`- ${L('observed')}: \`${String(r.observed).replace(/`/g, "'")}\``, `- ${L('expected')}: ${r.expected}`);
    out.push(`- ${L('fix')}: ${L(r.it.fix)}`, '');
  }
} else {
  out.push(`## ${L('failures_heading')}`, '', L('none'), '');
}
fs.mkdirSync(path.dirname(path.resolve(opts.report)), { recursive: true });
fs.writeFileSync(opts.report, out.join('\n'));

console.log(`\n${pass} passed, ${fail} failed (${secs} s); report: ${path.relative(process.cwd(), path.resolve(opts.report)) || opts.report}`);
if (opts.summary) console.log(`SUMMARY acceptance: ${pass} passed, ${fail} failed`);
process.exitCode = fail ? 1 : 0;
