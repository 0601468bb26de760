// Process helpers shared by the end-to-end tests that check what runs and
// what is left behind (/proc on Linux).

import assert from 'node:assert/strict';
import fs from 'node:fs';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** State letter of pid ('R', 'S', 'Z', ...) or null when it is gone. */
export function procState(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ')[0];
  } catch { return null; }
}

/** Running (not gone, not a zombie). */
export const alive = (pid) => { const s = procState(pid); return s !== null && s !== 'Z' && s !== 'X'; };

/** Is pid gone (no such process, or a zombie nobody has reaped yet)? */
export const pidGone = (pid) => !alive(pid);

export async function waitGone(pid, ms = 3000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pidGone(pid)) return true;
    await sleep(50);
  }
  return pidGone(pid);
}

/** Live (non-zombie) children of pid, sorted. */
export function childPids(pid) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      if (Number(f[1]) === pid && f[0] !== 'Z') out.push(Number(d));
    } catch { /* raced with its exit */ }
  }
  return out.sort((a, b) => a - b);
}

/** Live pids, this process aside, whose command line carries marker (a script run with it as an argument, and its children). */
export function markedPids(marker) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (cmd.includes(marker) && alive(Number(d))) out.push(Number(d));
    } catch { /* raced with its exit */ }
  }
  return out;
}

/** skill_server_stats().scripts, which must be there. */
export async function scriptStats(client) {
  const r = await client.callTool({ name: 'skill_server_stats', arguments: {} });
  assert.notEqual(r.isError, true);
  const st = r.structuredContent;
  assert.ok(st.scripts && typeof st.scripts === 'object', 'skill_server_stats must have a scripts object');
  return st.scripts;
}

/**
 * run_skill_script that must come back as a run result (whatever its
 * status): checks the envelope every result has; returns structuredContent.
 */
export async function runScript(client, name, script, extra = {}) {
  const label = `run_skill_script(${name}, ${script})`;
  const r = await client.callTool({ name: 'run_skill_script', arguments: { name, script, ...extra } });
  const sc = r.structuredContent;
  assert.ok(sc && typeof sc === 'object',
    `${label}: a script that ran, was queued or was stopped by a hook must give structuredContent; got ${JSON.stringify(r).slice(0, 400)}`);
  assert.equal(r.content?.[0]?.type, 'text');
  assert.deepEqual(JSON.parse(r.content[0].text), sc, `${label}: content[0].text must be the same JSON`);
  assert.equal(r.isError === true, sc.status !== 'ok', `${label}: isError must be true exactly when status is not ok (status ${sc.status})`);
  for (const k of ['status', 'stdout', 'stderr', 'hint', 'request_id']) {
    assert.equal(typeof sc[k], 'string', `${label}: ${k} must be a string`);
  }
  for (const k of ['duration_ms', 'timeout', 'stall_timeout']) {
    assert.equal(typeof sc[k], 'number', `${label}: ${k} must be a number`);
  }
  assert.ok(sc.exit_code === null || Number.isInteger(sc.exit_code), `${label}: exit_code int or null`);
  assert.match(sc.request_id, /^r-[0-9a-f]{16}$/);
  assert.ok(sc.hint.length > 0);
  return sc;
}
