#!/usr/bin/env node
// tests/docs-commands.mjs [BINARY] - every command shown in the docs is
// exercised: run here, or named test / acceptance item that exercises it.
//
// The command lines come from the fenced code blocks of the files listed by
// the `files` lines of tests/docs-commands.txt; that file maps each command
// to its coverage and documents the format and the extraction rule.
//
// Last line, always: "SUMMARY docs-commands: P passed, F failed".
// Environment: DOCS_COMMANDS_VERBOSE=1 prints each run command's output;
// DOCS_COMMANDS_ROOT checks another tree (with its own tests/docs-commands.txt).

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// DOCS_COMMANDS_ROOT points the check at another tree (its own tests do).
const REPO = process.env.DOCS_COMMANDS_ROOT
  ? path.resolve(process.env.DOCS_COMMANDS_ROOT)
  : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MAP = 'tests/docs-commands.txt';
const VERBOSE = process.env.DOCS_COMMANDS_VERBOSE === '1';

let passed = 0, failed = 0;
const ok = (m) => { passed++; console.log(`ok   ${m}`); };
const bad = (m, detail) => {
  failed++;
  console.log(`FAIL ${m}`);
  if (detail) console.log(String(detail).trimEnd().split('\n').slice(-15).map((l) => `       ${l}`).join('\n'));
};
const finish = () => {
  console.log(`SUMMARY docs-commands: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
};

// ---------------------------------------------------------------- extraction

// Words that start a command line in a block with no language tag. Lines in
// such blocks that start otherwise are output or file contents.
const COMMAND_WORDS = new Set(('skill-mcp make curl sudo systemctl journalctl docker podman kubectl helm ' +
  'apt apt-get dpkg npx npm node python3 python bash sh openssl nginx haproxy kill cd git mkdir cc gcc ' +
  'clang echo cat cp mv rm ln chmod install claude wrk valgrind env tar printf').split(' '));
const COMMAND_PREFIXES = ['./', 'build/', 'bench/', 'tests/', 'hooks/', 'deploy/', 'acceptance/'];
const SHELL_LANGS = new Set(['', 'sh', 'bash', 'shell', 'console', 'shell-session']);
const MARKER = /^\s*<!--\s*docs-check:\s*[a-z-]+\b.*-->\s*$/;

// Scans shell text for quotes and an unquoted `#` comment. Returns
// {open: quote still open at the end, cut: index where a comment starts}.
function shellScan(s) {
  let q = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q === "'") { if (c === "'") q = null; continue; }
    if (q === '"') { if (c === '\\') i++; else if (c === '"') q = null; continue; }
    if (c === '\\') { i++; continue; }
    if (c === "'" || c === '"') { q = c; continue; }
    if (c === '#' && (i === 0 || /\s/.test(s[i - 1]))) return { open: null, cut: i };
  }
  return { open: q, cut: s.length };
}

function firstWord(cmd) {
  const words = cmd.split(/\s+/);
  let i = 0;
  while (i < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i])) i++;
  return words[i] ?? '';
}

function isCommandStart(cmd) {
  const w = firstWord(cmd);
  return COMMAND_WORDS.has(w) || COMMAND_PREFIXES.some((p) => w.startsWith(p));
}

// One document: [{file, line, cmd}] for each command line in its fences.
function extract(file) {
  const lines = fs.readFileSync(path.join(REPO, file), 'utf8').split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/.exec(lines[i]);
    if (!open) continue;
    const fence = open[2], lang = open[3].toLowerCase();
    let j = i + 1;
    const body = [];
    const close = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    for (; j < lines.length && !close.test(lines[j]); j++) body.push({ text: lines[j], line: j + 1 });
    let k = i - 1;
    while (k >= 0 && lines[k].trim() === '') k--;
    const optedOut = k >= 0 && MARKER.test(lines[k]);
    const start = i;
    i = j;
    if (optedOut || !SHELL_LANGS.has(lang)) continue;

    // Logical lines: a trailing backslash or an open quote continues a line.
    const logical = [];
    for (let b = 0; b < body.length; b++) {
      const first = body[b].line;
      let text = body[b].text;
      for (;;) {
        const s = shellScan(text);
        const code = text.slice(0, s.cut);
        if (s.open && b + 1 < body.length) { text += '\n' + body[++b].text; continue; }
        if (/\\\s*$/.test(code) && b + 1 < body.length) {
          text = code.replace(/\\\s*$/, ' ') + body[++b].text.trim();
          continue;
        }
        break;
      }
      const code = text.slice(0, shellScan(text).cut).replace(/\s+/g, ' ').trim();
      if (code) logical.push({ line: first, cmd: code });
    }
    const prompt = logical.some((l) => l.cmd.startsWith('$ '));
    for (const l of logical) {
      if (prompt) {
        if (l.cmd.startsWith('$ ')) out.push({ file, line: l.line, cmd: l.cmd.slice(2).trim() });
      } else if (lang !== '' || isCommandStart(l.cmd)) {
        out.push({ file, line: l.line, cmd: l.cmd });
      }
    }
    if (j >= lines.length) bad(`${file}:${start + 1}: a code fence is never closed`);
  }
  return out;
}

// -------------------------------------------------------------- mapping file

// Splits "run server stdout~\"a b\" file=x" into words, honouring quotes.
function words(s) {
  const out = [];
  const re = /\s*([^\s"]*(?:"(?:[^"\\]|\\.)*"[^\s"]*)*)/g;
  let m;
  while ((m = re.exec(s)) && m[0] !== '') {
    if (m[1] === '') break;
    out.push(m[1].replace(/"((?:[^"\\]|\\.)*)"/g, (_, x) => x.replace(/\\(.)/g, '$1')));
  }
  return out;
}

function parseMap() {
  const files = [], subst = [], setup = [], entries = [];
  let server = 'skill-mcp --skills {work}/skills --host 127.0.0.1 --port {port}';
  const text = fs.readFileSync(path.join(REPO, MAP), 'utf8').split('\n');
  text.forEach((raw, n) => {
    const where = `${MAP}:${n + 1}`;
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    let m;
    if ((m = /^files\s+(.+)$/.exec(line))) { files.push(...m[1].split(/\s+/)); return; }
    if ((m = /^setup\s+(.+)$/.exec(line))) { setup.push(m[1]); return; }
    if ((m = /^server\s+(.+)$/.exec(line))) { server = m[1]; return; }
    if ((m = /^subst\s+(.+?)\s+=>\s+(.*)$/.exec(line))) { subst.push([m[1], m[2]]); return; }
    const at = line.lastIndexOf(' => ');
    if (at < 0) { bad(`${where}: cannot parse (expected 'PATTERN => COVERAGE'): ${line}`); return; }
    const pat = line.slice(0, at).trim(), cov = words(line.slice(at + 4));
    let match;
    if (pat.length > 2 && pat.startsWith('/') && pat.endsWith('/')) {
      try { const re = new RegExp(`^(?:${pat.slice(1, -1)})$`); match = (c) => re.test(c); }
      catch (e) { bad(`${where}: bad regex ${pat}: ${e.message}`); return; }
    } else {
      const exact = pat.replace(/\s+/g, ' ');
      match = (c) => c === exact;
    }
    if (!['run', 'test', 'acceptance', 'uncovered'].includes(cov[0])) {
      bad(`${where}: unknown coverage '${cov[0] ?? ''}' (run, test FILE#NAME, acceptance TEXT, uncovered REASON)`);
      return;
    }
    entries.push({ where, pat, cov, match, used: 0 });
  });
  return { files, subst, setup, entries, server };
}

function expandFiles(globs) {
  const out = [];
  for (const g of globs) {
    if (!g.includes('*')) { out.push(g); continue; }
    // `*` matches within one path component (`docs/*.md`, `tests/*/README.md`).
    const parts = g.split('/');
    let cur = [''];
    for (const p of parts) {
      const next = [];
      for (const c of cur) {
        if (!p.includes('*')) { next.push(c ? `${c}/${p}` : p); continue; }
        const re = new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
        let names = [];
        try { names = fs.readdirSync(path.join(REPO, c || '.')); } catch { /* no such dir */ }
        for (const n of names.sort()) if (re.test(n) && n !== 'node_modules') next.push(c ? `${c}/${n}` : n);
      }
      cur = next;
    }
    out.push(...cur.filter((f) => fs.existsSync(path.join(REPO, f)) && fs.statSync(path.join(REPO, f)).isFile()));
  }
  return [...new Set(out)];
}

// ----------------------------------------------------------- test / acceptance

function checkTest(ref) {
  const hash = ref.indexOf('#');
  if (hash < 0) return `'${ref}' must be FILE#NAME`;
  const file = ref.slice(0, hash), name = ref.slice(hash + 1);
  const p = path.join(REPO, file);
  if (!fs.existsSync(p)) return `${file} does not exist`;
  const src = fs.readFileSync(p, 'utf8');
  const esc = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  let re;
  if (/\.(mjs|js)$/.test(file)) re = new RegExp(`\\b(?:test|it|describe)\\(\\s*(['"\`])${esc}\\1`);
  else if (/\.c$/.test(file)) re = new RegExp(`\\bTEST\\(\\s*${esc}\\s*\\)`);
  else re = new RegExp(esc);
  return re.test(src) ? null : `${file} has no test named '${name}'`;
}

function checkAcceptance(text) {
  const src = fs.readFileSync(path.join(REPO, 'acceptance/items.mjs'), 'utf8');
  // Item ids are positions (A001...) and move when items are added, so an
  // item is named by a piece of its promise text.
  const calls = src.split(/\nT\(/).slice(1).filter((c) => c.includes(text));
  if (calls.length === 0) return `no acceptance item's text contains '${text}' (acceptance/items.mjs)`;
  if (calls.length > 1) return `'${text}' matches ${calls.length} acceptance items; quote more of the promise`;
  return null;
}

// ------------------------------------------------------------------ running

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function httpOk(port) {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
    return r.status === 200;
  } catch { return false; }
}

// A background process in its own process group, stopped through its pid.
function startBg(cmd, env, cwd) {
  const child = spawn('bash', ['-c', cmd], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const p = { child, out: '', exit: null };
  child.stdout.on('data', (d) => { p.out += d; });
  child.stderr.on('data', (d) => { p.out += d; });
  p.done = new Promise((r) => child.on('exit', (code, sig) => { p.exit = { code, sig }; r(); }));
  return p;
}

async function stopBg(p) {
  if (p.exit) return;
  try { process.kill(-p.child.pid, 'SIGTERM'); } catch { /* gone */ }
  const t = setTimeout(() => { try { process.kill(-p.child.pid, 'SIGKILL'); } catch { /* gone */ } }, 15000);
  await p.done;
  clearTimeout(t);
}

async function waitReady(p, port, readyOut) {
  for (let i = 0; i < 200; i++) {
    if (p.exit) return false;
    if (readyOut ? p.out.includes(readyOut) : await httpOk(port)) return true;
    await sleep(100);
  }
  return false;
}

function opts(cov) {
  const o = { kind: 'plain', expect: [], files: [], env: {}, append: '', exit: 0 };
  for (const w of cov.slice(1)) {
    let m;
    if (w === 'server' || w === 'with-server') o.kind = w;
    else if ((m = /^stdout~(.*)$/s.exec(w))) o.expect.push(m[1]);
    else if ((m = /^file=(.*)$/s.exec(w))) o.files.push(m[1]);
    else if ((m = /^env=([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(w))) o.env[m[1]] = m[2];
    else if ((m = /^append=(.*)$/s.exec(w))) o.append = m[1];
    else if ((m = /^exit=(\d+)$/.exec(w))) o.exit = Number(m[1]);
    else if ((m = /^ready-out=(.*)$/s.exec(w))) o.readyOut = m[1];
    else if ((m = /^before=(.*)$/s.exec(w))) o.before = m[1];
    else return { error: `unknown run option '${w}'` };
  }
  return o;
}

async function main() {
  const binArg = process.argv[2] ?? 'build/skill-mcp';
  const bin = path.resolve(binArg);
  if (!fs.existsSync(bin)) { bad(`skill-mcp binary ${bin} (run make first)`); finish(); }

  const map = parseMap();
  if (map.files.length === 0) bad(`${MAP}: no 'files' line`);
  const docs = expandFiles(map.files);
  const cmds = docs.flatMap(extract);

  // The scratch copy: skills/ and hooks/ copied (commands may write there),
  // the rest of the tree linked read-only, `skill-mcp` first on PATH.
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-docs.'));
  // a root server runs scripts as nobody, who must reach the scratch skills
  fs.chmodSync(tmp, 0o755);
  const work = path.join(tmp, 'work');
  fs.mkdirSync(work);
  fs.mkdirSync(path.join(tmp, 'bin'));
  fs.symlinkSync(bin, path.join(tmp, 'bin', 'skill-mcp'));
  for (const d of ['skills', 'hooks']) {
    if (fs.existsSync(path.join(REPO, d))) fs.cpSync(path.join(REPO, d), path.join(work, d), { recursive: true });
  }
  for (const d of fs.readdirSync(REPO)) {
    if (d.startsWith('.') || d === 'skills' || d === 'hooks') continue;
    fs.symlinkSync(path.join(REPO, d), path.join(work, d));
  }
  const env = { ...process.env, PATH: `${path.join(tmp, 'bin')}:${process.env.PATH}`, SKILL_MCP_BIN: bin };
  const stopList = [];
  const cleanup = async () => {
    for (const p of stopList) await stopBg(p);
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  process.on('SIGINT', () => { cleanup().then(() => process.exit(130)); });

  const place = (s, port) => s.replaceAll('{tmp}', tmp).replaceAll('{work}', work)
    .replaceAll('{port}', String(port)).replaceAll('{bin}', bin).replaceAll('{repo}', REPO).replaceAll('{home}', os.homedir());
  const substitute = (cmd, port) => {
    let s = cmd;
    for (const [from, to] of map.subst) s = s.split(from).join(to);
    return place(s, port);
  };

  for (const s of map.setup) {
    const r = spawnSync('bash', ['-c', place(s, 0)], { cwd: work, env, encoding: 'utf8', timeout: 60000 });
    if (r.status !== 0) bad(`${MAP}: setup '${s}' failed (exit ${r.status})`, r.stdout + r.stderr);
  }

  let shared = null, sharedPort = 0;
  try {
    for (const c of cmds) {
      const at = `${c.file}:${c.line}: '${c.cmd}'`;
      const e = map.entries.find((x) => x.match(c.cmd));
      if (!e) { bad(`docs-commands: ${at} is not exercised: add it to ${MAP}`); continue; }
      e.used++;
      const kind = e.cov[0];
      if (kind === 'uncovered') { bad(`${at} is not exercised by anything: ${e.cov.slice(1).join(' ')} (${e.where})`); continue; }
      if (kind === 'test') {
        const ref = e.cov.slice(1).join(' ');
        const err = ref ? checkTest(ref) : 'test needs FILE#NAME';
        if (err) bad(`${at}: ${err} (${e.where})`); else ok(`${at} -> test ${ref}`);
        continue;
      }
      if (kind === 'acceptance') {
        const err = checkAcceptance(e.cov.slice(1).join(' '));
        if (err) bad(`${at}: ${err} (${e.where})`); else ok(`${at} -> acceptance "${e.cov.slice(1).join(' ')}"`);
        continue;
      }
      const o = opts(e.cov);
      if (o.error) { bad(`${e.where}: ${o.error}`); continue; }
      let port;
      if (o.kind === 'with-server') {
        if (!shared) {
          sharedPort = await freePort();
          shared = startBg(`exec ${place(map.server, sharedPort)}`, env, work);
          stopList.push(shared);
          if (!(await waitReady(shared, sharedPort))) { bad(`${at}: the test server did not start`, shared.out); continue; }
        }
        port = sharedPort;
      } else {
        port = await freePort();
      }
      const run = substitute(c.cmd, port) + place(o.append, port);
      const cenv = { ...env };
      for (const [k, v] of Object.entries(o.env)) cenv[k] = place(v, port);
      const shown = `${at} (ran: ${run.length > 160 ? run.slice(0, 160) + '...' : run})`;
      if (o.before) {
        const b = spawnSync('bash', ['-c', place(o.before, port)], { cwd: work, env: cenv, encoding: 'utf8', timeout: 60000 });
        if (b.status !== 0) { bad(`${at}: before='${o.before}' failed (exit ${b.status}) (${e.where})`, b.stdout + b.stderr); continue; }
      }
      const t0 = Date.now();
      const took = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

      if (o.kind === 'server') {
        const p = startBg(run, cenv, work);
        stopList.push(p);
        const ready = await waitReady(p, port, o.readyOut ? place(o.readyOut, port) : null);
        await stopBg(p);
        if (VERBOSE) console.log(p.out);
        const clean = p.exit && (p.exit.code === 0 || p.exit.sig === 'SIGTERM');
        if (!ready) bad(`${shown}: the server did not become ready${p.exit ? ` (exit ${p.exit.code ?? p.exit.sig})` : ''}`, p.out);
        else if (!clean) bad(`${shown}: did not stop cleanly on SIGTERM (exit ${p.exit?.code ?? p.exit?.sig})`, p.out);
        else ok(`${at} (server ready, stopped by SIGTERM; ${took()})`);
        continue;
      }
      const usePort = port, cmd = run;
      const r = spawnSync('bash', ['-c', cmd], { cwd: work, env: cenv, encoding: 'utf8', timeout: 60000 });
      const outText = (r.stdout ?? '') + (r.stderr ?? '');
      if (VERBOSE) console.log(outText);
      const probs = [];
      if (r.error) probs.push(r.error.code === 'ETIMEDOUT' ? 'timed out after 60 s' : r.error.message);
      else if (r.status !== o.exit) probs.push(`exit ${r.status ?? r.signal}, expected ${o.exit}`);
      for (const x of o.expect) if (!outText.includes(place(x, usePort))) probs.push(`output lacks '${x}'`);
      for (const f of o.files) if (!fs.existsSync(place(f, usePort))) probs.push(`${place(f, usePort)} was not created`);
      const srvLog = o.kind === 'with-server' ? `\n--- server log:\n${shared.out.split('\n').slice(-8).join('\n')}` : '';
      if (probs.length) bad(`${shown}: ${probs.join('; ')}`, outText + srvLog);
      else ok(`${at} (ran, exit ${r.status}; ${took()})`);
    }
  } finally {
    await cleanup();
  }
  for (const e of map.entries) {
    if (!e.used) bad(`${e.where}: '${e.pat}' matches no command in the docs any more: remove or update it`);
  }
  finish();
}

main().catch((e) => { bad(`docs-commands crashed: ${e.stack ?? e}`); finish(); });
