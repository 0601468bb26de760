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

/** skill_server_stats().scripts, which must be there. */
export async function scriptStats(client) {
  const r = await client.callTool({ name: 'skill_server_stats', arguments: {} });
  assert.notEqual(r.isError, true);
  const st = r.structuredContent;
  assert.ok(st.scripts && typeof st.scripts === 'object', 'skill_server_stats must have a scripts object');
  return st.scripts;
}
