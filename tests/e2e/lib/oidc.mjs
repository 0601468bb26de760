// The test authorization server (lib/oidc-as.mjs) as a child process, and
// JWTs signed with its private keys (GET /__test/keys) for the tokens a real
// client could not get from it: forged, expired, other issuers, odd claims.

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { E2E_DIR } from './harness.mjs';

export const b64u = (b) => Buffer.from(b).toString('base64url');

/**
 * Starts oidc-as.mjs (with node 22 from node_modules when there: oidc-provider
 * needs it); resolves { proc, issuer } once it prints its first line.
 */
export function startAs() {
  const node22 = path.join(E2E_DIR, 'node_modules', '.bin', 'node');
  const node = fs.existsSync(node22) ? node22 : process.execPath;
  const p = spawn(node, [path.join(E2E_DIR, 'lib', 'oidc-as.mjs')], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  p.stderr.on('data', (c) => { err += c; });
  return new Promise((resolve, reject) => {
    // Node starting oidc-provider can take a while on a loaded machine; a
    // child that did not start in time is ended, or the test file would
    // wait for it forever.
    const t = setTimeout(() => {
      p.stdin.end();
      p.kill('SIGKILL');
      reject(new Error(`oidc-as did not start within 30 s:\n${err}`));
    }, 30_000);
    let out = '';
    p.stdout.on('data', (c) => {
      out += c;
      const nl = out.indexOf('\n');
      if (nl >= 0) { clearTimeout(t); resolve({ proc: p, ...JSON.parse(out.slice(0, nl)) }); }
    });
    p.on('exit', (code) => { clearTimeout(t); reject(new Error(`oidc-as exited ${code}:\n${err}`)); });
  });
}

/** Ends what startAs() started (it also exits when its stdin closes). */
export function stopAs(as) {
  as.proc.stdin.end();
  as.proc.kill('SIGTERM');
}

/** header.claims.signature, signed with the private JWK (RS256, ES256 or EdDSA by header.alg). */
export function signWith(jwk, header, claims) {
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(claims))}`;
  const { kid, alg, use, ...bare } = jwk;   // node takes the key material only
  void kid; void alg; void use;
  const key = crypto.createPrivateKey({ key: bare, format: 'jwk' });
  const data = Buffer.from(input);
  const sig = header.alg === 'EdDSA' ? crypto.sign(null, data, key)
    : header.alg === 'ES256' ? crypto.sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' })
      : crypto.sign('sha256', data, key);
  return `${input}.${b64u(sig)}`;
}
