// A generated skill library and the server's own token estimate, shared by
// tests/e2e/catalog.test.mjs and bench/catalog-cost.mjs.
//
//   makeLibrary(dir, n)  writes n skills with realistic descriptions (three
//                        sentences, ~300 characters, clauses, tags, a
//                        version); every tenth lives in a team folder.
//   estimator()          compiles tests/shape/estimate.c against
//                        server/shape*.c, so a test measures what it received
//                        with shape_tokens() itself, not a JavaScript copy.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO } from './harness.mjs';

const VERBS = ['Profile', 'Convert', 'Validate', 'Summarise', 'Migrate', 'Audit', 'Render',
  'Deduplicate', 'Index', 'Reconcile', 'Benchmark', 'Annotate', 'Compress', 'Translate'];
const OBJECTS = ['CSV exports', 'invoice batches', 'PDF contracts', 'Kubernetes manifests',
  'Terraform plans', 'support tickets', 'release notes', 'Parquet datasets', 'SQL schemas',
  'Grafana dashboards', 'OpenAPI documents', 'meeting transcripts', 'git histories',
  'customer surveys', 'log archives', 'Docker images', 'spreadsheets', 'JSON event streams'];
const WHEN = ['before a quarterly review', 'when a dataset arrives without documentation',
  'after a failed deployment', 'ahead of a compliance audit', 'during an incident',
  'before handing work to another team', 'when numbers disagree between two systems',
  'while preparing a customer report'];
const DOES = ['flags mixed types, outliers and broken encodings',
  'checks every reference, date and total against the source',
  'keeps the original layout, headings and tables intact',
  'reports what changed, what was dropped and why',
  'groups findings by severity; each one links to the offending line',
  'writes a short summary first, then the details — sorted by impact'];
const OUT = ['Produces a Markdown report and a JSON file that other scripts can read.',
  'Prints a table on stdout and exits non-zero when a check fails.',
  'Returns a patch to review; nothing is changed on disk until you apply it.',
  'Works offline, with no credentials, on files of up to a few gigabytes.'];
const TAGS = ['data', 'finance', 'ops', 'docs', 'security', 'infra', 'reporting', 'quality'];

/** The frontmatter fields of skill i (deterministic). */
export function skillOf(i) {
  const v = VERBS[i % VERBS.length], o = OBJECTS[(i * 7) % OBJECTS.length];
  const slug = `${v}-${o}`.toLowerCase().replace(/[^a-z0-9]+/g, '-') + `-${i}`;
  const team = i % 10 === 3 ? `team-${i % 4}` : null;
  const description =
    `${v} ${o} ${WHEN[i % WHEN.length]}, so that nobody has to read them line by line. ` +
    `It ${DOES[(i * 5) % DOES.length]}, and it explains each step in plain words: ` +
    `what was checked, what looked wrong and what to do next. ${OUT[(i * 3) % OUT.length]}`;
  return {
    name: slug, qname: team ? `${team}/${slug}` : slug, description,
    tags: [TAGS[i % TAGS.length], TAGS[(i + 3) % TAGS.length]], version: `1.${i % 7}.0`,
  };
}

/** Writes n skills under dir; returns their fields, in qualified-name order. */
export function makeLibrary(dir, n) {
  const all = [];
  for (let i = 0; i < n; i++) {
    const s = skillOf(i);
    const d = path.join(dir, s.qname);
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, 'SKILL.md'),
      `---\nname: ${s.name}\ndescription: ${JSON.stringify(s.description)}\n` +
      `tags: [${s.tags.join(', ')}]\nversion: "${s.version}"\n---\n# ${s.name}\n\n${s.description}\n`);
    all.push(s);
  }
  return all.sort((a, b) => (a.qname < b.qname ? -1 : a.qname > b.qname ? 1 : 0));
}

/**
 * shape_tokens() and shape_chars() of strings, by the server's own code.
 * Returns {measure(texts) -> [{tokens, chars}], close()}.
 */
export function estimator() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-estimate-'));
  const exe = path.join(tmp, 'estimate');
  const flags = execFileSync('pkg-config', ['--cflags', '--libs', 'jansson']).toString().trim()
    .split(/\s+/).filter(Boolean);
  execFileSync(process.env.CC || 'cc', ['-std=c11', '-D_GNU_SOURCE', '-O2',
    '-I', path.join(REPO, 'server'), '-o', exe, path.join(REPO, 'tests/shape/estimate.c'),
    path.join(REPO, 'server/shape.c'), path.join(REPO, 'server/shape_json.c'), path.join(REPO, 'server/shape_tokens.c'), path.join(REPO, 'server/json.c'), path.join(REPO, 'server/util.c'), ...flags, '-lm'],
  { stdio: 'inherit' });
  return {
    measure(texts) {
      const files = texts.map((t, i) => {
        const f = path.join(tmp, `t${i}`);
        fs.writeFileSync(f, t);
        return f;
      });
      const out = execFileSync(exe, files).toString().trim().split('\n');
      return out.map((line) => {
        const [tokens, chars] = line.split(' ');
        return { tokens: Number(tokens), chars: Number(chars) };
      });
    },
    close() { fs.rmSync(tmp, { recursive: true, force: true }); },
  };
}
