// OAuth 2.1 resource server: JWT access tokens from a real authorization
// server (oidc-provider, lib/oidc-as.mjs) checked against its JWKS, the
// RFC 9728 metadata, the 401/403 challenges, key rotation, and every
// forgery the verifier must refuse. The tests of this file run in order
// on one server: the rotation test comes before the unknown-key test,
// whose refetch the 30 s rate limit must then hold back.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { BIN, TEST_TIMEOUT, post, raw, startServer } from './lib/harness.mjs';
import { b64u, signWith, startAs, stopAs } from './lib/oidc.mjs';

const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
const SCOPES = ['skills:read', 'skills:run'];
const now = () => Math.floor(Date.now() / 1000);

let as;         // the authorization server: { proc, issuer }
let issuer;
let srv;
let work;
const STATIC_TOKEN = `smcp_${crypto.randomBytes(24).toString('base64url')}`;

async function asJson(p, method = 'GET') {
  const r = await fetch(`${issuer}${p}`, { method });
  assert.equal(r.status, 200, `${p}: ${r.status}`);
  return r.json();
}

/** An access token from the AS by client credentials, for resource. */
async function token(client = 'team-agent', { resource = srv.url, scope = SCOPES.join(' ') } = {}) {
  const r = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${client}:${client}-secret`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }),
  });
  const j = await r.json();
  assert.equal(r.status, 200, `token: ${JSON.stringify(j)}`);
  return j.access_token;
}

function claims(extra = {}) {
  return { iss: issuer, aud: srv.url, sub: 'team-agent', client_id: 'team-agent',
    scope: SCOPES.join(' '), iat: now(), exp: now() + 300, ...extra };
}

async function rsKey() {
  const { keys } = await asJson('/__test/keys');
  return keys.find((k) => k.alg === 'RS256');
}

const bearer = (t) => ({ authorization: `Bearer ${t}` });

before(async () => {
  as = await startAs();
  issuer = as.issuer;
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-oauth-'));
  fs.chmodSync(work, 0o777);
  const hooks = path.join(work, 'hooks');
  fs.mkdirSync(hooks);
  fs.writeFileSync(path.join(hooks, 'pre.sh'),
    `#!/usr/bin/env bash\ncat > '${work}/pre-input.json'\nenv > '${work}/pre-env.txt'\nexit 0\n`,
    { mode: 0o755 });
  const digest = crypto.createHash('sha256').update(STATIC_TOKEN).digest('hex');
  fs.writeFileSync(path.join(work, 'tokens'), `carol ${digest} groups=ops,oncall\n`, { mode: 0o600 });
  srv = await startServer({
    setup: (skills) => {
      const d = path.join(skills, 'env-dump');
      fs.mkdirSync(path.join(d, 'scripts'), { recursive: true });
      fs.writeFileSync(path.join(d, 'SKILL.md'),
        '---\nname: env-dump\ndescription: Prints the environment a script gets.\n---\n\n# env-dump\n');
      fs.writeFileSync(path.join(d, 'scripts', 'env.sh'), '#!/bin/sh\nenv\n', { mode: 0o755 });
    },
    args: ['--oauth-issuer', issuer, '--oauth-scopes', SCOPES.join(','),
      '--auth-tokens', path.join(work, 'tokens'), '--hooks-dir', hooks],
  });
});

after(async () => {
  if (srv) await srv.stop();
  if (as) stopAs(as);
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test('the protected-resource metadata names the issuer, scopes and bearer methods', { timeout: TEST_TIMEOUT }, async () => {
  const origin = new URL(srv.url).origin;
  for (const p of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
    const r = await raw(`${origin}${p}`, { method: 'GET' });
    assert.equal(r.status, 200, p);
    assert.match(r.headers['content-type'], /application\/json/);
    assert.deepEqual(r.json, {
      resource: srv.url,
      authorization_servers: [issuer],
      scopes_supported: SCOPES,
      bearer_methods_supported: ['header'],
      resource_name: 'skill-mcp',
    }, p);
  }
  const other = await raw(`${origin}/.well-known/oauth-protected-resource/elsewhere`, { method: 'GET' });
  assert.equal(other.status, 404);
});

test('no token: 401 with resource_metadata and the scopes, no error', { timeout: TEST_TIMEOUT }, async () => {
  const r = await post(srv.url, ping);
  assert.equal(r.status, 401);
  const origin = new URL(srv.url).origin;
  assert.equal(r.headers['www-authenticate'],
    `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp", scope="skills:read skills:run"`);
});

test('a token from the authorization server works with the official SDK client', { timeout: TEST_TIMEOUT }, async () => {
  const t = await token();
  const client = new Client({ name: 'oauth-e2e', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), {
    requestInit: { headers: bearer(t) },
  }));
  const r = await client.callTool({ name: 'list_skills', arguments: {} });
  assert.ok(r.structuredContent.total > 0);
  await client.close();
});

test('ES256 and EdDSA tokens from the authorization server are accepted', { timeout: TEST_TIMEOUT }, async () => {
  for (const c of ['es-agent', 'ed-agent']) {
    const t = await token(c);
    const alg = JSON.parse(Buffer.from(t.split('.')[0], 'base64url')).alg;
    assert.equal(alg, c === 'es-agent' ? 'ES256' : 'EdDSA');
    const r = await post(srv.url, ping, bearer(t));
    assert.equal(r.status, 200, `${c}: ${r.text}`);
  }
});

test('a token for another resource (audience) is refused', { timeout: TEST_TIMEOUT }, async () => {
  const t = await token('team-agent', { resource: 'http://127.0.0.1:1/mcp' });
  const r = await post(srv.url, ping, bearer(t));
  assert.equal(r.status, 401);
  assert.match(r.headers['www-authenticate'], /^Bearer error="invalid_token", resource_metadata="/);
  assert.match(r.json.error.message, /audience/);
});

test('exp: refused past the 60 s leeway, accepted within it', { timeout: TEST_TIMEOUT }, async () => {
  const k = await rsKey();
  const h = { alg: 'RS256', kid: k.kid, typ: 'at+jwt' };
  const old = await post(srv.url, ping, bearer(signWith(k, h, claims({ exp: now() - 120 }))));
  assert.equal(old.status, 401);
  assert.match(old.json.error.message, /expired/);
  const skew = await post(srv.url, ping, bearer(signWith(k, h, claims({ exp: now() - 20 }))));
  assert.equal(skew.status, 200, skew.text);
  const early = await post(srv.url, ping, bearer(signWith(k, h, claims({ nbf: now() + 600 }))));
  assert.equal(early.status, 401);
  assert.match(early.json.error.message, /not valid yet/);
});

test('a token of another issuer, signed with the right key, is refused', { timeout: TEST_TIMEOUT }, async () => {
  const k = await rsKey();
  const t = signWith(k, { alg: 'RS256', kid: k.kid }, claims({ iss: 'http://127.0.0.1:1' }));
  const r = await post(srv.url, ping, bearer(t));
  assert.equal(r.status, 401);
  assert.match(r.json.error.message, /issued/);
});

test('a tampered token (claims changed after signing) is refused', { timeout: TEST_TIMEOUT }, async () => {
  const t = await token('team-agent', { scope: 'skills:read' });
  const [h, , s] = t.split('.');
  const body = JSON.parse(Buffer.from(t.split('.')[1], 'base64url'));
  body.scope = SCOPES.join(' ');
  const r = await post(srv.url, ping, bearer(`${h}.${b64u(JSON.stringify(body))}.${s}`));
  assert.equal(r.status, 401);
  assert.match(r.json.error.message, /signature/);
});

test('alg none is refused', { timeout: TEST_TIMEOUT }, async () => {
  const k = await rsKey();
  const t = `${b64u(JSON.stringify({ alg: 'none', kid: k.kid }))}.${b64u(JSON.stringify(claims()))}.`;
  const r = await post(srv.url, ping, bearer(t));
  assert.equal(r.status, 401);
  // and with a signature part present, so only the algorithm can refuse it
  const t2 = `${t}${b64u('x')}`;
  const r2 = await post(srv.url, ping, bearer(t2));
  assert.equal(r2.status, 401);
  assert.match(r2.json.error.message, /algorithm "none"/);
});

test('HS256 signed with the public key is refused', { timeout: TEST_TIMEOUT }, async () => {
  const k = await rsKey();
  const pub = crypto.createPublicKey({ key: { kty: k.kty, n: k.n, e: k.e }, format: 'jwk' });
  const input = `${b64u(JSON.stringify({ alg: 'HS256', kid: k.kid }))}.${b64u(JSON.stringify(claims()))}`;
  for (const secret of [pub.export({ type: 'spki', format: 'pem' }), JSON.stringify({ kty: k.kty, n: k.n, e: k.e })]) {
    const sig = crypto.createHmac('sha256', secret).update(input).digest();
    const r = await post(srv.url, ping, bearer(`${input}.${b64u(sig)}`));
    assert.equal(r.status, 401);
    assert.match(r.json.error.message, /algorithm "HS256"/);
  }
});

test("the algorithm must be the key's: PS256 under an RS256 key is refused", { timeout: TEST_TIMEOUT }, async () => {
  const k = await rsKey();
  const { kid, alg, use, ...bare } = k;
  const key = crypto.createPrivateKey({ key: bare, format: 'jwk' });
  const input = `${b64u(JSON.stringify({ alg: 'PS256', kid }))}.${b64u(JSON.stringify(claims()))}`;
  const sig = crypto.sign('sha256', Buffer.from(input), {
    key, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
  // the same key signs a valid RS256 token, so only the algorithm decides
  const good = await post(srv.url, ping, bearer(signWith(k, { alg: 'RS256', kid }, claims())));
  assert.equal(good.status, 200, good.text);
  const r = await post(srv.url, ping, bearer(`${input}.${b64u(sig)}`));
  assert.equal(r.status, 401);
  assert.match(r.json.error.message, /algorithm "PS256" is not its key's/);
});

test('a token without every required scope gets 403 naming all of them', { timeout: TEST_TIMEOUT }, async () => {
  const t = await token('team-agent', { scope: 'skills:read' });
  const r = await post(srv.url, ping, bearer(t));
  assert.equal(r.status, 403);
  assert.match(r.headers['www-authenticate'], /^Bearer error="insufficient_scope", /);
  assert.match(r.headers['www-authenticate'], /scope="skills:read skills:run"/);
  assert.match(r.headers['www-authenticate'], /resource_metadata="/);
});

test('rotated keys: a token under a new kid makes the server refetch the JWKS', { timeout: TEST_TIMEOUT }, async () => {
  const before0 = (await asJson('/__test/stats')).jwks;
  await asJson('/__test/rotate', 'POST');
  const t = await token();
  assert.match(JSON.parse(Buffer.from(t.split('.')[0], 'base64url')).kid, /-2$/);
  const r = await post(srv.url, ping, bearer(t));
  assert.equal(r.status, 200, r.text);
  assert.equal((await asJson('/__test/stats')).jwks, before0 + 1, 'one refetch');
  // the keys that went away no longer verify anything
});

test('an unknown key is refused, and its refetch is rate-limited', { timeout: TEST_TIMEOUT }, async () => {
  const before0 = (await asJson('/__test/stats')).jwks;
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const k = { ...privateKey.export({ format: 'jwk' }), kid: 'stranger' };
  for (let i = 0; i < 3; i++) {
    const r = await post(srv.url, ping, bearer(signWith(k, { alg: 'RS256', kid: 'stranger' }, claims())));
    assert.equal(r.status, 401);
    assert.match(r.json.error.message, /key/);
  }
  // the rotation test refetched less than 30 s ago: no new fetch
  assert.equal((await asJson('/__test/stats')).jwks, before0);
});

test('the token never reaches a script or a hook; the client id does reach the hook', { timeout: TEST_TIMEOUT }, async () => {
  const t = await token();
  const r = await post(srv.url, { jsonrpc: '2.0', id: 3, method: 'tools/call',
    params: { name: 'run_skill_script', arguments: { name: 'env-dump', script: 'scripts/env.sh' } } }, bearer(t));
  assert.equal(r.status, 200, r.text);
  const sc = r.json.result.structuredContent;
  assert.equal(sc.status, 'ok', JSON.stringify(sc).slice(0, 400));
  const sigPart = t.split('.')[2];
  assert.ok(sc.stdout.includes('PATH='), 'the script printed its environment');
  for (const [what, text] of [['script env', sc.stdout],
    ['hook input', fs.readFileSync(path.join(work, 'pre-input.json'), 'utf8')],
    ['hook env', fs.readFileSync(path.join(work, 'pre-env.txt'), 'utf8')]]) {
    assert.ok(!text.includes(sigPart) && !text.includes(t.split('.')[1]), `${what} holds the token`);
    assert.ok(!/bearer/i.test(text), `${what} mentions a bearer credential`);
  }
  const input = JSON.parse(fs.readFileSync(path.join(work, 'pre-input.json'), 'utf8'));
  assert.equal(input.caller.client, 'team-agent');
});

test('static tokens keep working beside OAuth', { timeout: TEST_TIMEOUT }, async () => {
  const r = await post(srv.url, ping, bearer(STATIC_TOKEN));
  assert.equal(r.status, 200, r.text);
  const bad = await post(srv.url, ping, bearer('smcp_not-a-token'));
  assert.equal(bad.status, 401);
  assert.match(bad.headers['www-authenticate'], /error="invalid_token"/);
});

test('OAuth clients are rate-limited per client id (--oauth-rpm; default 600)', { timeout: TEST_TIMEOUT }, async () => {
  // the default applies to the shared server's OAuth clients
  const d = await post(srv.url, ping, bearer(await token('team-agent')));
  assert.equal(d.status, 200, d.text);
  assert.equal(d.headers['ratelimit-limit'], '600');
  // a static token's client without rpm stays unlimited beside it
  const st = await post(srv.url, ping, bearer(STATIC_TOKEN));
  assert.equal(st.headers['ratelimit-limit'], undefined);

  const s2 = await startServer({ args: ['--oauth-issuer', issuer, '--oauth-rpm', '3'] });
  try {
    const es = bearer(await token('es-agent', { resource: s2.url }));
    const ed = bearer(await token('ed-agent', { resource: s2.url }));
    const ok = [];
    for (let i = 0; i < 3; i++) ok.push(await post(s2.url, ping, es));
    for (const r of ok) assert.equal(r.status, 200, r.text);
    assert.equal(ok[0].headers['ratelimit-limit'], '3');
    assert.equal(ok[2].headers['ratelimit-remaining'], '0');
    const limited = await post(s2.url, ping, es);
    assert.equal(limited.status, 429, limited.text);
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    assert.match(limited.text, /rate limit/);
    // a new token of the same client id is the same bucket
    const again = await post(s2.url, ping, bearer(await token('es-agent', { resource: s2.url })));
    assert.equal(again.status, 429);
    // another client id has a bucket of its own
    const other = await post(s2.url, ping, ed);
    assert.equal(other.status, 200, other.text);
    assert.equal(other.headers['ratelimit-remaining'], '2');
  } finally {
    await s2.stop();
  }
  // 0 = no limit; the flag without an issuer is an error
  const z = spawnSync(BIN, ['--skills', os.tmpdir(), '--port', '0', '--oauth-rpm', '5'],
    { encoding: 'utf8', timeout: 10_000 });
  assert.equal(z.status, 2, z.stderr);
  assert.match(z.stderr, /--oauth-rpm needs --oauth-issuer URL/);
  const neg = spawnSync(BIN, ['--skills', os.tmpdir(), '--port', '0', '--oauth-rpm', '-1'],
    { encoding: 'utf8', timeout: 10_000 });
  assert.equal(neg.status, 2, neg.stderr);
  assert.match(neg.stderr, /--oauth-rpm/);
});

test('a plain-http issuer off loopback is refused at start', { timeout: TEST_TIMEOUT }, async () => {
  for (const [flag, url] of [['--oauth-issuer', 'http://auth.example.com'],
    ['--oauth-jwks', 'http://auth.example.com/jwks']]) {
    const args = ['--skills', os.tmpdir(), '--port', '0', '--oauth-issuer',
      flag === '--oauth-issuer' ? url : 'https://auth.example.com'];
    if (flag === '--oauth-jwks') args.push('--oauth-jwks', url);
    const r = spawnSync(BIN, args, { encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.status, 2, `${flag}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`${flag}.*https://`));
  }
  // metadata naming another issuer (RFC 8414 3.3) stops the start
  const alias = issuer.replace('127.0.0.1', 'localhost');
  const m = spawnSync(BIN, ['--skills', os.tmpdir(), '--port', '0', '--oauth-issuer', alias],
    { encoding: 'utf8', timeout: 10_000 });
  assert.equal(m.status, 2, m.stderr);
  assert.match(m.stderr, /its metadata names the issuer "http:\/\/127\.0\.0\.1:\d+"; they must be equal/);
  // an issuer whose metadata cannot be had stops the start too
  const r = spawnSync(BIN, ['--skills', os.tmpdir(), '--port', '0', '--oauth-issuer', 'http://127.0.0.1:1'],
    { encoding: 'utf8', timeout: 10_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /no authorization server metadata/);
  // a JWKS that holds no keys stops the start, and says why
  const k = spawnSync(BIN, ['--skills', os.tmpdir(), '--port', '0', '--oauth-issuer', issuer,
    '--oauth-jwks', `${issuer}/__test/stats`], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(k.status, 2, k.stderr);
  assert.ok(k.stderr.includes(`--oauth-issuer ${issuer}: cannot load its keys: the JWKS has no "keys" array`),
    k.stderr);
});
