'use strict';
// A real OpenID provider for the OIDC tests: oidc-provider (pinned in package.json),
// run in this process on a loopback port, issuing JWT access tokens (RFC 9068, typ
// at+jwt) by client credentials, with a `groups` claim per client. It can be restarted
// with other signing keys (key rotation) on the same issuer and port.
//
// In front of its JWK set sits a small HTTP server (the "JWKS front"), the URL gpufleetd
// is given: it passes the provider's JWK set through, or misbehaves on demand (down,
// garbage, 50 MB, slow, redirects) so the tests can break the key source without
// breaking the provider.
//
//   const idp = await startIdp({ clients: [{ id, groups, alg, claims }], audience });
//   const token = await idp.token('rep-a');
//   idp.front.mode = 'garbage';
//   await idp.restart({ keys: newKeys() });   // rotation
//   await idp.stop();

const crypto = require('node:crypto');
const http = require('node:http');

const { keyPair } = require('./jwt');
const { freePort } = require('./server');

/** A fresh signing key pair as private JWKs: {rsa, ec}, kids unique. */
function newKeys(tag = crypto.randomBytes(3).toString('hex')) {
  const rsa = keyPair('rsa', { modulusLength: 2048 });
  const ec = keyPair('ec', { namedCurve: 'P-256' });
  return {
    rsa: { ...rsa.privateKey.export({ format: 'jwk' }), kid: `rsa-${tag}`, use: 'sig', alg: 'RS256' },
    ec: { ...ec.privateKey.export({ format: 'jwk' }), kid: `ec-${tag}`, use: 'sig', alg: 'ES256' },
    rsaPrivate: rsa.privateKey,
    ecPrivate: ec.privateKey,
  };
}

/** The public part of a private JWK. */
function publicJwk(jwk) {
  const { d, p, q, dp, dq, qi, ...pub } = jwk;
  return pub;
}

const MB = 1024 * 1024;

function startFront(upstream) {
  const front = {
    mode: 'pass', // pass | delay | down | reset | garbage | notjwks | empty | okp | huge | huge-length | slow | redirect-file | redirect-http
    delayMs: 5000, // mode 'delay': the provider's JWK set, this late
    hits: 0,
    bytesSent: 0,
    url: null,
    server: null,
    port: 0,
  };
  const handler = async (req, res) => {
    front.hits++;
    const send = (status, body, headers = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(body);
    };
    if (front.mode === 'delay') await new Promise((r) => setTimeout(r, front.delayMs));
    switch (front.mode === 'delay' ? 'pass' : front.mode) {
      case 'pass': {
        try {
          const r = await fetch(`${upstream()}/jwks`, { signal: AbortSignal.timeout(2000) });
          send(r.status, Buffer.from(await r.arrayBuffer()));
        } catch {
          send(502, '{"error":"the provider is down"}');
        }
        return;
      }
      case 'down':
        return send(503, '{"error":"down for maintenance"}');
      case 'reset':
        return req.socket.destroy();
      case 'garbage':
        return send(200, '<html>not a key set {{{');
      case 'notjwks':
        return send(200, '{"keys":"none"}');
      case 'empty':
        return send(200, '{"keys":[]}');
      case 'okp':
        return send(
          200,
          JSON.stringify({
            keys: [{ kty: 'OKP', crv: 'Ed25519', kid: 'ed-1', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }],
          }),
        );
      case 'huge':
      case 'huge-length': {
        // 50 MB of a syntactically plausible document, streamed; gpufleetd must stop
        // reading at 1 MiB (or refuse on Content-Length) and keep its keys.
        const total = 50 * MB;
        const headers = { 'content-type': 'application/json' };
        if (front.mode === 'huge-length') headers['content-length'] = String(total);
        res.writeHead(200, headers);
        const chunk = Buffer.alloc(MB, ' ');
        chunk.write('{"keys":[', 0);
        let sent = 0;
        const pump = () => {
          while (sent < total) {
            sent += chunk.length;
            front.bytesSent += chunk.length;
            if (!res.write(chunk)) return res.once('drain', pump);
          }
          res.end();
        };
        res.on('error', () => {});
        req.socket.on('error', () => {});
        pump();
        return;
      }
      case 'slow':
        return; // never answers; gpufleetd's timeout ends it
      case 'redirect-file':
        return send(302, '', { location: 'file:///etc/passwd' });
      case 'redirect-http':
        return send(302, '', { location: `http://127.0.0.1:${front.port}/jwks-plain` });
      default:
        return send(500, '{}');
    }
  };
  return {
    front,
    async listen(port = 0) {
      front.server = http.createServer(handler);
      await new Promise((resolve, reject) => {
        front.server.once('error', reject);
        front.server.listen(port, '127.0.0.1', resolve);
      });
      front.port = front.server.address().port;
      front.url = `http://127.0.0.1:${front.port}`;
    },
    async close() {
      if (!front.server) return;
      front.server.closeAllConnections();
      await new Promise((resolve) => front.server.close(resolve));
      front.server = null;
    },
  };
}

/**
 * startIdp({clients, audience, keys?})
 *   clients: [{id, groups (string|array), alg: 'RS256'|'ES256', claims: {...extra}}]
 * Returns {issuer, audience, keys, front, token(clientId), restart({keys}), stopProvider(),
 *          startProvider(), stop()}.
 */
async function startIdp({ clients, audience, keys = newKeys() }) {
  const { default: Provider } = await import('oidc-provider');
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const byId = Object.fromEntries(clients.map((c) => [c.id, c]));
  const secret = (id) => `secret-of-${id}-0123456789abcdef`;
  let current = keys;
  let server = null;

  function makeProvider() {
    const provider = new Provider(issuer, {
      jwks: { keys: [current.rsa, current.ec] },
      clients: clients.map((c) => ({
        client_id: c.id,
        client_secret: secret(c.id),
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_post',
      })),
      cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
      ttl: { ClientCredentials: 600 },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => audience,
          useGrantedResource: () => true,
          getResourceServerInfo: (ctx, resource, client) => ({
            scope: 'gpufleet',
            audience,
            accessTokenTTL: 600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: byId[client.clientId].alg || 'RS256' } },
          }),
        },
      },
      extraTokenClaims: async (ctx, token) => {
        const c = byId[token.clientId];
        return { groups: c.groups, ...(c.claims || {}) };
      },
    });
    provider.on('server_error', () => {});
    return provider;
  }

  async function startProvider() {
    if (server) return;
    const provider = makeProvider();
    server = http.createServer(provider.callback());
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
  }
  async function stopProvider() {
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    server = null;
  }

  // oidc-provider prints configuration advice on start; these tests know.
  const warn = console.warn;
  const info = console.info;
  console.warn = () => {};
  console.info = () => {};
  try {
    await startProvider();
  } finally {
    console.warn = warn;
    console.info = info;
  }
  const f = startFront(() => issuer);
  await f.listen();

  const idp = {
    issuer,
    audience,
    get keys() {
      return current;
    },
    front: f.front,
    jwksUrl: () => `${f.front.url}/jwks`,
    /** An access token for client id (client credentials). */
    async token(id) {
      const body = new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: id,
        client_secret: secret(id),
        resource: audience,
        scope: 'gpufleet',
      });
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      const j = await res.json();
      if (res.status !== 200 || !j.access_token) throw new Error(`token for ${id}: ${res.status} ${JSON.stringify(j)}`);
      return j.access_token;
    },
    /** The provider, restarted with other signing keys (the old ones are gone). */
    async restart({ keys: k }) {
      await stopProvider();
      current = k;
      const w = console.warn;
      console.warn = () => {};
      try {
        await startProvider();
      } finally {
        console.warn = w;
      }
    },
    stopProvider,
    startProvider,
    /** Stops and restarts the JWKS front on the same port (connection refused meanwhile). */
    async frontDown() {
      await f.close();
    },
    async frontUp() {
      await f.listen(f.front.port);
    },
    async stop() {
      await f.close();
      await stopProvider();
    },
  };
  return idp;
}

/** A JWKS front alone on a given port (for a server that starts before its IdP). */
async function startFrontOn(port, upstream) {
  const f = startFront(upstream);
  await f.listen(port);
  return { front: f.front, close: () => f.close() };
}

module.exports = { startIdp, newKeys, publicJwk, startFrontOn };
