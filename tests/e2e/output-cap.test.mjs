// Output past --max-output-bytes is cut before redaction sees it: the cut
// must not keep the head of a secret that its pattern can no longer
// recognise, and JSON Lines cut by the cap stay JSON Lines.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { TEST_TIMEOUT, connect, startServer } from './lib/harness.mjs';

let srv;
let client;
before(async () => {
  srv = await startServer({
    args: ['--max-output-bytes', '4096'],
    setup: (skills) => {
      const sk = path.join(skills, 'chatty');
      fs.mkdirSync(path.join(sk, 'scripts'), { recursive: true });
      fs.writeFileSync(path.join(sk, 'SKILL.md'), '---\nname: chatty\ndescription: Prints tokens past the output cap\n---\n# Chatty\n');
      // 100-byte lines {"i":N,"pad":"x...","k":"ghp_<36>"}: the 4096-byte cap
      // falls 96 bytes into line 41, inside its token
      fs.writeFileSync(path.join(sk, 'scripts', 'lines.py'), [
        'import sys',
        'for i in range(200):',
        '    sys.stdout.write(\'{"i":%d,"pad":"%s","k":"ghp_%036d"}\\n\' % (10000 + i, "x" * 32, i))',
        '',
      ].join('\n'));
    },
  });
  client = await connect(srv.url);
});
after(async () => {
  await client?.close();
  await srv?.stop();
});

test('JSON Lines cut by --max-output-bytes: whole lines kept, no half token, still jsonl', { timeout: TEST_TIMEOUT }, async () => {
  const r = await client.callTool({ name: 'run_skill_script', arguments: { name: 'chatty', script: 'lines.py' } });
  const sc = r.structuredContent;
  assert.equal(sc.status, 'ok', sc.hint);
  assert.equal(sc.truncated, true);
  assert.ok(sc.stdout_bytes > 4096);
  assert.doesNotMatch(sc.stdout, /ghp_/, 'no token, whole or in part, reaches the model');
  assert.equal(sc.stdout_format, 'jsonl', sc.stdout.slice(-200));
  const lines = sc.stdout.split('\n').filter((l) => l.trim());
  for (const l of lines) JSON.parse(l);
  assert.ok(lines.length >= 30, `${lines.length} lines`);
});
