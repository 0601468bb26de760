// spec/schemas/ against the running server (RFC-SKILL-1 §5.1, §10).
//
// 1. tools/list of a default server (run_skill_script included) offers
//    exactly the tools spec/schemas/ describes, no more, no fewer.
// 2. Each tool's inputSchema and outputSchema equal
//    spec/schemas/<tool>.input.json / <tool>.output.json after removing only
//    the top-level "$schema" and "$id" of the spec file (IGNORED_KEYS below):
//    types, required lists, enums, bounds, defaults and every "description"
//    must match.
// 3. Real results validate against the spec's output schemas: each read tool
//    once (and a cut result, and one script run), checked by the small
//    JSON Schema validator below (no npm dependency).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { startServer, post, REPO, TEST_TIMEOUT } from './lib/harness.mjs';

const opts = { timeout: TEST_TIMEOUT };
const SCHEMAS = path.join(REPO, 'spec', 'schemas');
const DIALECT = 'https://json-schema.org/draft/2020-12/schema';
/** Keys of a spec schema file that the server's schema does not carry. */
const IGNORED_KEYS = ['$schema', '$id'];

// ---- the spec's schemas ------------------------------------------------------

function specSchemas() {
  const out = new Map();    // tool -> {input, output}
  for (const f of fs.readdirSync(SCHEMAS)) {
    const m = /^([a-z_]+)\.(input|output)\.json$/.exec(f);
    assert.ok(m, `spec/schemas/${f}: name must be <tool>.input.json or <tool>.output.json`);
    const doc = JSON.parse(fs.readFileSync(path.join(SCHEMAS, f), 'utf8'));
    assert.equal(doc.$schema, DIALECT, `spec/schemas/${f}: $schema must be ${DIALECT}`);
    assert.equal(typeof doc.$id, 'string', `spec/schemas/${f}: $id is required`);
    const e = out.get(m[1]) ?? {};
    e[m[2]] = doc;
    out.set(m[1], e);
  }
  return out;
}

function strip(doc) {
  const o = { ...doc };
  for (const k of IGNORED_KEYS) delete o[k];
  return o;
}

// ---- a minimal JSON Schema (2020-12) validator --------------------------------
//
// Supports type (string or list; "integer" = whole number), enum, required,
// properties, additionalProperties (false or a schema), items (one schema),
// minimum, maximum, exclusiveMinimum. Annotations are skipped. Any other
// keyword throws, so the validator never passes a schema it cannot check.

const ANNOTATIONS = new Set(['$schema', '$id', 'title', 'description', 'default']);
const KEYWORDS = new Set(['type', 'enum', 'required', 'properties', 'additionalProperties',
  'items', 'minimum', 'maximum', 'exclusiveMinimum']);

function typeOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;          // object, string, number, boolean
}

function hasType(v, t) {
  switch (t) {
    case 'integer': return typeof v === 'number' && Number.isInteger(v);
    case 'number': return typeof v === 'number' && Number.isFinite(v);
    default: return typeOf(v) === t;
  }
}

export function validate(schema, v, at = '$', errors = []) {
  for (const k of Object.keys(schema)) {
    if (!ANNOTATIONS.has(k) && !KEYWORDS.has(k)) throw new Error(`validator: unsupported keyword ${k} at ${at}`);
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => hasType(v, t))) {
      errors.push(`${at}: expected ${types.join(' or ')}, got ${typeOf(v)}`);
      return errors;
    }
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) {
    errors.push(`${at}: ${JSON.stringify(v)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if (typeof v === 'number') {
    if (schema.minimum !== undefined && v < schema.minimum) errors.push(`${at}: ${v} < minimum ${schema.minimum}`);
    if (schema.maximum !== undefined && v > schema.maximum) errors.push(`${at}: ${v} > maximum ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && v <= schema.exclusiveMinimum) {
      errors.push(`${at}: ${v} <= exclusiveMinimum ${schema.exclusiveMinimum}`);
    }
  }
  if (typeOf(v) === 'object') {
    for (const r of schema.required ?? []) {
      if (!Object.hasOwn(v, r)) errors.push(`${at}: required member '${r}' is missing`);
    }
    const props = schema.properties ?? {};
    for (const [k, x] of Object.entries(v)) {
      if (Object.hasOwn(props, k)) validate(props[k], x, `${at}.${k}`, errors);
      else if (schema.additionalProperties === false) errors.push(`${at}: member '${k}' is not allowed`);
      else if (typeof schema.additionalProperties === 'object') {
        validate(schema.additionalProperties, x, `${at}.${k}`, errors);
      }
    }
  }
  if (Array.isArray(v) && schema.items) {
    v.forEach((x, i) => validate(schema.items, x, `${at}[${i}]`, errors));
  }
  return errors;
}

// ---- the server ---------------------------------------------------------------

const LEGACY = { 'mcp-protocol-version': '2025-11-25' };
let s;
let spec;
let tools;      // name -> tool from tools/list

async function rpc(url, method, params, id = 1) {
  const r = await post(url, { jsonrpc: '2.0', id, method, params }, LEGACY);
  assert.equal(r.status, 200, `${method}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  assert.ok(r.json?.result, `${method}: no result: ${r.text.slice(0, 300)}`);
  return r.json.result;
}

async function callStructured(url, name, args, { ok = true } = {}) {
  const r = await rpc(url, 'tools/call', { name, arguments: args });
  if (ok) assert.notEqual(r.isError, true, `${name}: ${r.content?.[0]?.text}`);
  assert.ok(r.structuredContent && typeof r.structuredContent === 'object', `${name}: no structuredContent`);
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent,
    `${name}: the text block must be the JSON of structuredContent (RFC-SKILL-1 §5.1)`);
  return r.structuredContent;
}

function assertValid(tool, value) {
  const errors = validate(spec.get(tool).output, value);
  assert.deepEqual(errors, [], `${tool} result does not match spec/schemas/${tool}.output.json`);
}

before(async () => {
  spec = specSchemas();
  s = await startServer();
  const r = await rpc(s.url, 'tools/list', {});
  tools = new Map(r.tools.map((t) => [t.name, t]));
});
after(async () => { await s?.stop(); });

// ---- 1, 2: the schemas ----------------------------------------------------------

test('spec/schemas has an input and an output schema for every tool the server offers, and no other', opts, () => {
  const offered = [...tools.keys()].sort();
  const specified = [...spec.keys()].sort();
  assert.ok(offered.includes('run_skill_script'), 'the default server offers run_skill_script');
  assert.deepEqual(specified, offered, 'tools in spec/schemas vs tools/list');
  for (const [name, e] of spec) {
    assert.ok(e.input, `spec/schemas/${name}.input.json is missing`);
    assert.ok(e.output, `spec/schemas/${name}.output.json is missing`);
  }
});

for (const kind of ['input', 'output']) {
  test(`every tool's ${kind}Schema equals spec/schemas/<tool>.${kind}.json (ignoring ${IGNORED_KEYS.join(', ')})`, opts, () => {
    for (const [name, t] of tools) {
      const want = spec.get(name)?.[kind];
      assert.ok(want, `no spec schema for ${name} ${kind}`);
      assert.deepEqual(t[`${kind}Schema`], strip(want),
        `${name}.${kind}Schema differs from spec/schemas/${name}.${kind}.json`);
    }
  });
}

test('the validator is strict enough to catch a wrong result', opts, () => {
  const sch = spec.get('read_skill_file').output;
  assert.deepEqual(validate(sch, { name: 'x', path: 'p', size: 1, encoding: 'utf-8', content: '', truncated: false }), []);
  assert.ok(validate(sch, { name: 'x', path: 'p', size: 1.5, encoding: 'utf-8', content: '', truncated: false }).length);
  assert.ok(validate(sch, { name: 'x', path: 'p', size: 1, encoding: 'latin-1', content: '', truncated: false }).length);
  assert.ok(validate(sch, { name: 'x', path: 'p', size: 1, encoding: 'utf-8', content: '' }).length);
  assert.ok(validate(spec.get('list_skills').input, { bogus: 1 }).length, 'additionalProperties: false');
  assert.ok(validate(spec.get('run_skill_script').input, { name: 'a', script: 'b', timeout: 0 }).length,
    'exclusiveMinimum');
});

// ---- 3: real results against the output schemas ------------------------------------

test('list_skills results validate (default page, query, tags, paged)', opts, async () => {
  assertValid('list_skills', await callStructured(s.url, 'list_skills', {}));
  assertValid('list_skills', await callStructured(s.url, 'list_skills', { query: 'csv spreadsheet' }));
  assertValid('list_skills', await callStructured(s.url, 'list_skills', { tags: ['data'] }));
  const page = await callStructured(s.url, 'list_skills', { limit: 2 });
  assert.equal(typeof page.next_cursor, 'string');
  assertValid('list_skills', page);
});

test('load_skill results validate (whole body and one section)', opts, async () => {
  const whole = await callStructured(s.url, 'load_skill', { name: 'csv-profile' });
  assert.ok(whole.scripts.length >= 1 && whole.files.length >= 1, 'the fixture has scripts and files');
  assertValid('load_skill', whole);
  assertValid('load_skill', await callStructured(s.url, 'load_skill', { name: 'csv-profile', section: 'Usage' }));
});

test('read_skill_file results validate (text and truncated)', opts, async () => {
  assertValid('read_skill_file',
    await callStructured(s.url, 'read_skill_file', { name: 'csv-profile', path: 'references/format.md' }));
  const cut = await callStructured(s.url, 'read_skill_file',
    { name: 'csv-profile', path: 'references/format.md', max_bytes: 10 });
  assert.equal(cut.truncated, true);
  assertValid('read_skill_file', cut);
});

test('skill_server_stats and reload_skills results validate', opts, async () => {
  assertValid('skill_server_stats', await callStructured(s.url, 'skill_server_stats', {}));
  const r = await callStructured(s.url, 'reload_skills', {});
  assert.ok(r.errors.length >= 1, 'the fixture library has a broken skill');
  assertValid('reload_skills', r);
});

test('run_skill_script results validate, isError or not', opts, async () => {
  const r = await rpc(s.url, 'tools/call', { name: 'run_skill_script',
    arguments: { name: 'csv-profile', script: 'scripts/profile.py', args: ['no-such-file.csv'] } });
  assert.ok(r.structuredContent, `structuredContent present whatever the status: ${JSON.stringify(r).slice(0, 300)}`);
  assert.equal(r.isError === true, r.structuredContent.status !== 'ok', 'isError iff status is not ok');
  assertValid('run_skill_script', r.structuredContent);
});

test('a result cut to the budget still validates and carries _truncated', opts, async () => {
  const small = await startServer({ args: ['--max-result-chars', '1200'] });
  try {
    const r = await callStructured(small.url, 'read_skill_file',
      { name: 'csv-profile', path: 'references/format.md', max_bytes: 1048576 });
    assert.ok(r._truncated, `expected _truncated on a 1200-character budget: ${JSON.stringify(r).slice(0, 200)}`);
    assert.ok(Array.isArray(r._truncated.fields) && r._truncated.fields.length >= 1);
    assertValid('read_skill_file', r);
  } finally {
    await small.stop();
  }
});
