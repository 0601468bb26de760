// Legacy handshake with the official SDK client, tools/list, prompts/list.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startServer, connect, post, TEST_TIMEOUT } from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const READ_TOOLS = ['list_skills', 'load_skill', 'read_skill_file', 'skill_server_stats'];
const ALL_TOOLS = [...READ_TOOLS, 'reload_skills'];

let s;
let client;
before(async () => {
  s = await startServer();
  client = await connect(s.url);
});
after(async () => {
  try { await client?.close(); } finally { await s?.stop(); }
});

test('initialize: serverInfo, protocolVersion, capabilities, instructions', opts, () => {
  const info = client.getServerVersion();
  assert.equal(info.name, 'skill-mcp');
  assert.match(info.version, /^\d+\.\d+\.\d+/);
  const caps = client.getServerCapabilities();
  for (const k of ['tools', 'resources', 'prompts', 'logging']) {
    assert.ok(caps[k] && typeof caps[k] === 'object', `capabilities.${k} missing: ${JSON.stringify(caps)}`);
  }
  const instr = client.getInstructions();
  assert.equal(typeof instr, 'string');
  assert.ok(instr.includes('list_skills'), 'instructions mention list_skills');
  assert.ok(instr.includes('load_skill'), 'instructions mention load_skill');
  // The SDK negotiated 2025-11-25 (its latest) with us.
  assert.equal(client.transport.protocolVersion, '2025-11-25');
});

for (const [asked, want] of [
  ['2025-11-25', '2025-11-25'],
  ['2025-06-18', '2025-06-18'],
  ['1999-01-01', '2025-11-25'],
  ['2024-11-05', '2025-11-25'],
]) {
  test(`raw initialize asking ${asked} is answered with ${want}`, opts, async () => {
    const r = await post(s.url, {
      jsonrpc: '2.0', id: 7, method: 'initialize',
      params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /application\/json/);
    assert.equal(r.json.id, 7);
    assert.equal(r.json.result.protocolVersion, want);
    assert.equal(r.headers['mcp-session-id'], undefined, 'stateless: no session id');
  });
}

test('ping answers {}', opts, async () => {
  const r = await client.ping();
  assert.deepEqual(Object.keys(r).filter((k) => k !== '_meta' && k !== 'resultType'), []);
});

test('logging/setLevel answers {}', opts, async () => {
  const r = await client.setLoggingLevel('info');
  assert.deepEqual(Object.keys(r).filter((k) => k !== '_meta' && k !== 'resultType'), []);
});

test('tools/list: the tools, schemas, annotations, run_skill_script', opts, async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const n of ALL_TOOLS) assert.ok(names.includes(n), `${n} missing from tools/list: ${names}`);
  const r = tools.find((t) => t.name === 'run_skill_script');
  assert.ok(r, 'run_skill_script is offered unless --no-scripts (docs/tools.md)');
  assert.ok(r.inputSchema.required.includes('name') && r.inputSchema.required.includes('script'));
  assert.equal(new Set(names).size, names.length, 'tool names are unique');
  for (const t of tools) {
    assert.equal(typeof t.description, 'string', `${t.name}.description`);
    assert.ok(t.description.length > 10, `${t.name}.description is too short`);
    assert.equal(t.inputSchema?.type, 'object', `${t.name}.inputSchema`);
    assert.equal(t.outputSchema?.type, 'object', `${t.name}.outputSchema`);
    assert.match(t.name, /^[A-Za-z0-9_.-]{1,128}$/);
  }
  for (const n of READ_TOOLS) {
    const t = tools.find((x) => x.name === n);
    assert.equal(t.annotations?.readOnlyHint, true, `${n}.annotations.readOnlyHint`);
  }
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.ok(byName.load_skill.inputSchema.required.includes('name'));
  assert.ok(byName.read_skill_file.inputSchema.required.includes('name'));
  assert.ok(byName.read_skill_file.inputSchema.required.includes('path'));
  for (const p of ['query', 'tags', 'limit', 'cursor']) {
    assert.ok(byName.list_skills.inputSchema.properties?.[p], `list_skills.inputSchema.properties.${p}`);
  }
});

test('tools/list is deterministic', opts, async () => {
  const a = await client.listTools();
  const b = await client.listTools();
  assert.deepEqual(a, b);
});

test('prompts/list: every skill is a prompt with an optional task argument', opts, async () => {
  const r = await client.listPrompts();
  assert.ok(r.prompts.length > 0);
  for (const p of r.prompts) {
    assert.equal(typeof p.name, 'string');
    assert.deepEqual(p.arguments.map((a) => [a.name, a.required]), [['task', false]]);
  }
});

test('unknown tool is a JSON-RPC -32602 error, not a tool result', opts, async () => {
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (e) => {
    assert.equal(e.code, -32602, e.message);
    return true;
  });
});

test('two clients at once both work', opts, async () => {
  const c2 = await connect(s.url, 'second');
  try {
    const [a, b] = await Promise.all([client.listTools(), c2.listTools()]);
    assert.deepEqual(a, b);
  } finally {
    await c2.close();
  }
});
