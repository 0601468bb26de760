// acceptance/fixtures.mjs: writes the small skill library the acceptance run
// serves, in a fresh temp dir. Everything is generated here at run time.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function w(file, text, mode) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  if (mode) fs.chmodSync(file, mode);
}

function skill(dir, front, body) {
  w(path.join(dir, 'SKILL.md'), `---\n${front}\n---\n${body}`);
}

export function buildFixtures() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-accept-'));
  // A root server runs scripts and hooks as nobody, who must read the fixtures.
  fs.chmodSync(tmp, 0o755);
  const A = path.join(tmp, 'rootA');
  const B = path.join(tmp, 'rootB');
  const H = path.join(tmp, 'hooks');
  const outside = path.join(tmp, 'outside');
  w(path.join(outside, 'secret.txt'), 'TOP-SECRET-OUTSIDE\n');
  w(path.join(outside, 'run.sh'), 'echo escaped\n');

  // alpha: the main skill, with sections, files, scripts and an execution block.
  const alpha = path.join(A, 'alpha');
  skill(alpha, [
    'name: alpha',
    'description: Profile CSV files and summarise their columns',
    'tags: [data, csv, 42]',
    'version: "1.2.0"',
    'license: MIT',
    'title: Alpha Title',
    'metadata:',
    '  owner: qa',
    'execution:',
    '  default:',
    '    timeout: 20',
    '    stall_timeout: 10',
    '  scripts/hello.sh:',
    '    description: says hello',
    '    timeout: 5',
    '  stall.sh:',
    '    stall_timeout: 1',
    '  slow.sh:',
    '    timeout: 1',
    '    stall_timeout: 0',
    '  huge.sh:',
    '    timeout: 9999',
    '    mode: job',
  ].join('\n'), [
    '# Alpha',
    'Intro text.',
    '',
    '## Usage',
    'Run the profiler.',
    '',
    '### Details',
    'Deep details.',
    '',
    '```',
    '# not a heading',
    '```',
    '',
    'Setext Heading',
    '--------------',
    'setext body',
    '',
    '## Notes',
    'Final notes.',
    '',
  ].join('\n'));
  w(path.join(alpha, 'references/guide.md'), '# Guide\nSome guidance.\n');
  w(path.join(alpha, 'assets/bin.dat'), Buffer.from([0, 1, 2, 255, 254, 0, 65]));
  w(path.join(alpha, 'assets/long.txt'), 'abcdefghij'.repeat(100));
  w(path.join(alpha, '.hidden/secret.txt'), 'hidden\n');
  w(path.join(alpha, '.env'), 'SECRET=1\n');
  w(path.join(alpha, 'node_modules/x.js'), 'x\n');
  w(path.join(alpha, '__pycache__/x.pyc'), 'x\n');
  fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(alpha, 'link-out.txt'));
  fs.symlinkSync('references/guide.md', path.join(alpha, 'link-in.md'));
  const S = (n, t) => w(path.join(alpha, 'scripts', n), t);
  S('hello.sh', 'echo "hello $*"\n');
  S('fail.sh', 'echo partial-out\necho "something broke" >&2\nexit 3\n');
  S('stall.sh', 'echo started\necho "last words" >&2\nsleep 30\n');
  S('slow.sh', 'while true; do echo tick; sleep 0.2; done\n');
  S('env.sh', 'env | sort\n');
  S('stdin.sh', 'if [ -t 0 ]; then echo tty; fi\ncat; echo "[eof]"\n');
  S('pwd.sh', 'pwd\necho "HOME=$HOME"\necho "TMPDIR=$TMPDIR"\ntouch "$HOME/made"\n');
  S('argv.sh', 'for a in "$@"; do echo "arg:[$a]"; done\n');
  S('badutf8.sh', "printf 'ok\\377\\376end'\n");
  S('segv.sh', 'kill -SEGV $$\n');
  S('sleep.sh', 'sleep "${1:-1}"\necho done\n');
  S('progress.sh', 'for i in 1 2 3; do echo "step $i" >&2; sleep 0.1; done\necho finished\n');
  S('big.sh', 'head -c 300000 /dev/zero | tr "\\0" "x"\n');
  S('huge.sh', 'head -c 2000000 /dev/zero | tr "\\0" "y"\n');
  S('hello.js', 'console.log("js:" + process.argv.slice(2).join(","));\n');
  S('data.xyz', 'whatever\n');
  S('sub/inner.sh', 'echo inner\n');
  fs.symlinkSync(path.join(outside, 'run.sh'), path.join(alpha, 'scripts', 'escape.sh'));
  w(path.join(alpha, 'hooks/readme.txt'), 'not a hook\n');

  // beta: tags as a string; a big body for shaping.
  const sections = [];
  for (let i = 1; i <= 40; i++) sections.push(`## Part ${i}\n` + `Line of part ${i} with words to fill the budget. `.repeat(30) + '\n');
  skill(path.join(A, 'beta'), 'name: beta\ndescription: Deploy helper for staging and production releases\ntags: "ops, deploy"\nversion: 1.0',
    '# Beta\n\n' + sections.join('\n'));

  // Teams: two skills named billing (ambiguous), one invoices.
  skill(path.join(A, 'acme/billing'), 'name: billing\ndescription: Acme billing rules', '# Acme billing\nacme body\n');
  skill(path.join(A, 'finance/billing'), 'name: billing\ndescription: Finance billing ledger', '# Finance billing\nfinance body\n');
  skill(path.join(A, 'acme/invoices'), 'name: invoices\ndescription: Issue invoices for acme customers', '# Invoices\n');
  // Too deep: never a skill.
  skill(path.join(A, 'acme/deep/deeper'), 'name: deeper\ndescription: too deep to be found', '# Deeper\n');

  // Broken skills.
  skill(path.join(A, 'broken'), 'name: broken\ntags: [x]', '# Broken: no description\n');
  skill(path.join(A, 'badyaml'), 'name: badyaml\ndescription: dup\ndescription: again', '# dup key\n');
  // Name mismatch: served by tools, omitted from skills/list.
  skill(path.join(A, 'mismatch'), 'name: other-name\ndescription: Frontmatter name differs from folder', '# Mismatch\n');
  // Ignored names.
  skill(path.join(A, '.hiddenskill'), 'name: hiddenskill\ndescription: hidden', '# hidden\n');
  skill(path.join(A, 'node_modules'), 'name: node_modules\ndescription: nm', '# nm\n');

  // hooked: a skill with its own pre and post hooks.
  const hooked = path.join(A, 'hooked');
  skill(hooked, 'name: hooked\ndescription: Skill guarded by its own hooks', '# Hooked\n');
  w(path.join(hooked, 'scripts/show.sh'), 'echo "args=$*"\necho "ADDED=${ADDED_BY_HOOK:-unset}"\necho "HOOKVAR=${HOOK_ACCEPT:-unset}"\necho "REDACTME secret"\n');
  w(path.join(hooked, 'hooks/pre.js'), `
let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{
  const i=JSON.parse(s);
  if (i.args.includes('skill-deny')) { process.stdout.write(JSON.stringify({reason:'skill policy refuses'})); process.exit(1); }
  if (i.args.includes('bad-env')) { process.stdout.write(JSON.stringify({env:{LD_PRELOAD:'x'}})); return; }
  if (i.args.includes('not-json')) { process.stdout.write('this is not json'); return; }
  process.stdout.write(JSON.stringify({env:{ADDED_BY_HOOK:'yes'}, args: i.args.concat(['added']), note:'skill-pre-note'}));
});
`);
  w(path.join(hooked, 'hooks/post.js'), `
let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{
  const i=JSON.parse(s);
  if (i.args.includes('post-fail')) { process.stderr.write('post says no'); process.exit(2); }
  if (i.args.includes('post-badtype')) { process.stdout.write(JSON.stringify({result:{status:'weird'}})); return; }
  process.stdout.write(JSON.stringify({result:{stdout: i.result.stdout.replace('REDACTME','[redacted]')}}));
});
`);

  // Global hooks dir (used only by the hooks server).
  w(path.join(H, 'pre.js'), `
let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{
  const i=JSON.parse(s);
  const fs=require('fs');
  fs.appendFileSync(process.env.HOOK_LOG, JSON.stringify({stage:process.env.SKILL_HOOK, input:i, hookvar: process.env.HOOK_ACCEPT||null})+'\\n');
  if (i.args.includes('global-deny')) { process.stderr.write('global policy refuses'); process.exit(1); }
  process.stdout.write(JSON.stringify({note:'global-pre-note'}));
});
`);
  w(path.join(H, 'post.js'), `
let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{
  const i=JSON.parse(s);
  require('fs').appendFileSync(process.env.HOOK_LOG, JSON.stringify({stage:process.env.SKILL_HOOK, status:i.result.status, stdout:i.result.stdout})+'\\n');
});
`);
  w(path.join(H, 'pre.sh'), 'echo second pre candidate >&2; exit 1\n');

  // mutable: edited during the run (digests, reload).
  skill(path.join(A, 'mutable'), 'name: mutable\ndescription: A skill the run edits', '# Mutable\nv1\n');
  w(path.join(A, 'mutable/notes.txt'), 'version one\n');

  // rootB: shadows alpha, adds gamma.
  skill(path.join(B, 'alpha'), 'name: alpha\ndescription: SHADOWED copy of alpha', '# Shadowed\n');
  skill(path.join(B, 'gamma'), 'name: gamma\ndescription: Gamma radiation calculator', '# Gamma\n');

  // rootR: watched by the refresh-timer server.
  const R = path.join(tmp, 'rootR');
  skill(path.join(R, 'zeta'), 'name: zeta\ndescription: Zeta', '# Zeta\n');

  // The hooks (as nobody) append to it; the items truncate it, keeping the mode.
  const hookLog = path.join(tmp, 'hooklog.jsonl');
  fs.writeFileSync(hookLog, '');
  fs.chmodSync(hookLog, 0o666);

  return { tmp, A, B, H, R, outside, hookLog, cleanup() { fs.rmSync(tmp, { recursive: true, force: true }); } };
}
