// count-checks.mjs SUITE SCENARIO OUTDIR EXPECTED_FAILURES_FILE [SKIPS_ALLOWED_FILE]
//
// Reads every checks.json under OUTDIR (written by the conformance CLI's -o),
// classifies each check and prints one line per check that is not a plain
// pass, then a machine-readable last line:
//   COUNTS <pass> <fail> <expected> <stale> <skipped>
// SUCCESS = pass. FAILURE and WARNING = fail, unless "SCENARIO CHECK-ID" (or
// "SUITE/SCENARIO CHECK-ID") is listed in the expected-failures file, then
// expected. A listed check that passes everywhere is stale: counted once as a
// failure (not as a pass), so the list is kept honest. INFO is neither.
// SKIPPED is a failure unless the skips allow-list (tests/skips-allowed.txt)
// has a line "conformance SCENARIO CHECK-ID  # reason" (or SUITE/SCENARIO);
// an allowed skip is printed with that reason and counted as skipped. No
// checks.json at all is one failure (the scenario crashed).
import fs from 'node:fs';
import path from 'node:path';

const [suite, scenario, outdir, expectedFile, skipsFile] = process.argv.slice(2);

function expectedSet() {
  const set = new Map();
  if (!expectedFile || !fs.existsSync(expectedFile)) return set;
  for (const line of fs.readFileSync(expectedFile, 'utf8').split('\n')) {
    const [body, ...why] = line.split('#');
    const parts = body.trim().split(/\s+/).filter(Boolean);
    if (parts.length < 2) continue;
    const [sc, id] = parts;
    const reason = why.join('#').trim();
    if (sc === scenario || sc === `${suite}/${scenario}`) set.set(id, reason);
  }
  return set;
}

// "conformance SCENARIO CHECK-ID  # reason" lines of the allow-list: id -> reason.
function allowedSkips() {
  const set = new Map();
  if (!skipsFile) return set;
  for (const line of fs.readFileSync(skipsFile, 'utf8').split('\n')) {
    const cut = line.lastIndexOf(' # ');
    if (/^\s*(#|$)/.test(line) || cut < 0) continue;
    const [s0, sc, id, ...extra] = line.slice(0, cut).trim().split(/\s+/);
    if (s0 !== 'conformance' || extra.length) continue;
    if (sc === scenario || sc === `${suite}/${scenario}`) set.set(id, line.slice(cut + 3).trim());
  }
  return set;
}

function findChecks(dir) {
  const out = [];
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...findChecks(p));
    else if (e.name === 'checks.json') out.push(p);
  }
  return out;
}

const expected = expectedSet();
const skipsOk = allowedSkips();
const files = findChecks(outdir);
let pass = 0; let fail = 0; let exp = 0; let stale = 0; let skipped = 0;
const oneLine = (s) => String(s ?? '').replace(/\s+/g, ' ').trim().slice(0, 400);

if (files.length === 0) {
  console.log(`    FAIL  ${scenario}: no checks.json (the scenario crashed; see its log)`);
  fail = 1;
} else {
  const listedSeen = new Map(); // id -> {ok, bad}
  for (const f of files) {
    let checks;
    try {
      checks = JSON.parse(fs.readFileSync(f, 'utf8'));
    } catch (e) {
      console.log(`    FAIL  ${scenario}: unreadable ${f}: ${e.message}`);
      fail++;
      continue;
    }
    for (const c of checks) {
      const listed = expected.has(c.id);
      if (listed && !listedSeen.has(c.id)) listedSeen.set(c.id, { ok: 0, bad: 0 });
      if (c.status === 'SUCCESS') {
        if (listed) listedSeen.get(c.id).ok++;
        else pass++;
      } else if (c.status === 'FAILURE' || c.status === 'WARNING') {
        if (listed) {
          exp++;
          listedSeen.get(c.id).bad++;
          console.log(`    expected ${c.status.padEnd(7)} ${c.id}  # ${expected.get(c.id)}`);
        } else {
          fail++;
          console.log(`    FAIL  ${c.status.padEnd(7)} ${c.id}: ${oneLine(c.errorMessage)}`);
        }
      } else if (c.status === 'SKIPPED') {
        if (skipsOk.has(c.id)) {
          skipped++;
          console.log(`    skip  ${c.id}  # allowed: ${skipsOk.get(c.id)}`);
        } else {
          fail++;
          console.log(`    FAIL  SKIPPED ${c.id}: ${oneLine(c.details?.note ?? c.errorMessage)} (not in tests/skips-allowed.txt)`);
        }
      }
    }
  }
  // Listed, seen, and never failing: a stale entry.
  for (const [id, n] of listedSeen) {
    if (n.bad === 0) {
      stale++;
      console.log(`    STALE ${id}: listed in expected-failures.txt but passes now; remove the line`);
    } else {
      pass += n.ok; // other occurrences of a listed id that did pass
    }
  }
}
console.log(`COUNTS ${pass} ${fail + stale} ${exp} ${stale} ${skipped}`);
