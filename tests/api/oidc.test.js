'use strict';
// OIDC (issue 15, part 1, and the role-map side of part 2): gpufleetd verifying access
// tokens of a real OpenID provider (oidc-provider, in this process, client
// credentials, JWT access tokens) with keys from the provider's JWK set, fetched over
// HTTP through a "JWKS front" that can be made to misbehave (lib/idp.js).
//
// Covered: RS256 and ES256 tokens with roles mapped from the groups claim (string or
// array) and the principal from client_id; a claim that maps to nothing (403
// role_not_mapped); key rotation with the provider restarted on new keys (refresh on
// the unknown kid); a token of a removed key (401); the JWKS endpoint down (cached keys
// verify, /readyz degraded, then ready again); garbage, an empty or EdDSA-only key set,
// 50 MB (streamed and announced), a slow endpoint and redirects to other schemes — all
// refused with the old keys kept and the server up; alg confusion (HS256 with the RSA
// public key as secret, alg none, an EC alg on an RSA kid and back, a forged and a
// tampered token); reporters scoped by the role map (pool and host scopes, the token's
// own claims under an unscoped entry, an unscoped reporter refused), with nothing of a
// refused batch stored; a server started while its IdP is unreachable (503
// jwks_unavailable, then ready); https with an untrusted certificate refused, and
// trusted through GPUFLEET_JWT_JWKS_CA_FILE; configuration refusals at start. Finally no
// token and no key material in the server log.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');

const { startServer, runBin, freePort, sleep, signJwt, nowSec, decodeJwt, keyPair } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const { startIdp, newKeys, publicJwk, startFrontOn } = require('./lib/idp');
const fleet = require('./lib/fleet');

const AUDIENCE = 'https://gpufleet.test/api';
const POOL_A = 'oidc-pool-a';
const POOL_B = 'oidc-pool-b';
const HOST_B2 = 'oidc-host-b2';

const CLIENTS = [
  { id: 'admin-bot', groups: ['staff', 'platform-admins'], alg: 'RS256' },
  { id: 'ops-bot', groups: ['platform'], alg: 'ES256' },
  { id: 'reader', groups: 'readers', alg: 'RS256' }, // a string claim
  { id: 'nobody', groups: ['staff'], alg: 'RS256' },
  { id: 'rep-a', groups: ['gpu-reporters-a'], alg: 'ES256' },
  { id: 'rep-h', groups: ['gpu-reporters-h'], alg: 'RS256' },
  { id: 'rep-any', groups: ['gpu-reporters'], alg: 'RS256' },
  { id: 'rep-claims', groups: ['gpu-reporters'], alg: 'RS256', claims: { pools: [POOL_B] } },
];
const ROLE_MAP = [
  'platform-admins:admin',
  'platform:operator',
  'readers:viewer',
  `gpu-reporters-a:reporter@${POOL_A}`,
  `gpu-reporters-h:reporter@host=${HOST_B2}`,
  'gpu-reporters:reporter',
].join(',');

let idp;
let srv;
let client;
let admin; // admin-bot's token
let pools = {};
let hosts = {};
const seen = new Set(); // every token used, for the log check

async function tok(id) {
  const t = await idp.token(id);
  seen.add(t);
  return t;
}
const remember = (t) => (seen.add(t), t);

function oidcEnv(extra = {}) {
  return {
    GPUFLEET_JWT_SECRET_FILE: undefined,
    GPUFLEET_JWT_JWKS_URL: idp.jwksUrl(),
    GPUFLEET_JWT_ISSUER: idp.issuer,
    GPUFLEET_JWT_AUDIENCE: AUDIENCE,
    GPUFLEET_JWT_ROLE_MAP: ROLE_MAP,
    GPUFLEET_JWT_PRINCIPAL_CLAIM: 'client_id',
    GPUFLEET_JWT_JWKS_MIN_REFRESH_SECONDS: '1',
    GPUFLEET_JWT_JWKS_TIMEOUT_SECONDS: '2',
    GPUFLEET_WORKERS: '0',
    GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
    ...extra,
  };
}

// Claims as the provider would issue them, for hand-made tokens.
function claims(overrides = {}) {
  return {
    iss: idp.issuer,
    aud: AUDIENCE,
    sub: 'forger',
    client_id: 'forger',
    groups: ['platform-admins'],
    iat: nowSec(),
    exp: nowSec() + 600,
    ...overrides,
  };
}

// RS256 by hand (lib/jwt.js has HS256, ES256 and none).
function signRs256(privateKey, header, body) {
  const b = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const input = `${b({ alg: 'RS256', typ: 'JWT', ...header })}.${b(body)}`;
  return `${input}.${crypto.sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
}

// GET /readyz, validated against the OpenAPI document.
async function readyz(s = srv) {
  const res = await api(s).request('GET', '/readyz');
  return { status: res.status, body: res.body };
}

// Makes gpufleetd fetch the JWK set: a token with a kid it has never seen, which answers
// 401 at once and asks the refresher for a fetch (run unless one ran less than a second
// ago — the rate limit here — or a failure's back-off is not over) — then it is sent
// again a little later. Returns once the fetch has been answered (or timed out) and its
// outcome recorded: /readyz no longer says ok (the callers break the key source).
let triggers = 0;
async function refreshNow(why) {
  await askRefresh();
  const deadline = Date.now() + 10_000;
  const recorded = (j) => j && j.status !== 'ok' && (!why || why.test(j.last_error || ''));
  while (Date.now() < deadline && !recorded((await readyz()).body.jwks)) await sleep(100);
}

async function askRefresh() {
  const hits = idp.front.hits;
  const deadline = Date.now() + 10_000;
  while (idp.front.hits === hits && Date.now() < deadline) {
    await sleep(400);
    const t = remember(
      signJwt({
        alg: 'ES256',
        key: keyPair('ec', { namedCurve: 'P-256' }).privateKey,
        header: { kid: `unknown-${++triggers}` },
        claims: claims(),
      }),
    );
    expectProblem(await client.request('GET', '/v1/pools', { token: t }), 401, 'invalid_token');
  }
  assert.ok(idp.front.hits > hits, 'an unknown kid made gpufleetd fetch the JWK set');
}

async function waitReady(s = srv, ms = 30_000) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    last = await readyz(s);
    if (last.status === 200 && last.body.status === 'ready') return last.body;
    await sleep(200);
  }
  assert.fail(`/readyz did not become ready: ${JSON.stringify(last)}`);
}

function rec(host, h, overrides = {}) {
  const start = Date.parse('2025-03-01T00:00:00Z') + h * 3600e3;
  return {
    host_id: host.id,
    window_start: new Date(start).toISOString(),
    window_end: new Date(start + 3600e3).toISOString(),
    unit: 'requests',
    completed: 10,
    failed: 0,
    retried: 0,
    busy_seconds: 60,
    ...overrides,
  };
}

async function storedFor(host) {
  const page = expectStatus(
    await client.request('GET', `/v1/work-reports?host_id=${host.id}&limit=500`, { token: admin }),
    200,
  );
  return page.items;
}

before(async () => {
  idp = await startIdp({ clients: CLIENTS, audience: AUDIENCE });
  srv = await startServer({ name: 'oidc', env: oidcEnv() });
  client = api(srv);
  admin = await tok('admin-bot');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pools.a = await fleet.createPool(client, admin, { name: POOL_A });
  pools.b = await fleet.createPool(client, admin, { name: POOL_B });
  const operator = await tok('ops-bot');
  const mk = (name, pool) =>
    fleet.createHost(client, operator, {
      name,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  hosts.a1 = await mk('oidc-host-a1', pools.a);
  hosts.b1 = await mk('oidc-host-b1', pools.b);
  hosts.b2 = await mk(HOST_B2, pools.b);
});

after(async () => {
  if (srv) await srv.stop();
  if (idp) await idp.stop();
});

describe('tokens of a real OpenID provider', () => {
  test('RS256: the admin group maps to admin, the principal is client_id (audit trail)', async () => {
    const t = await tok('admin-bot');
    const { header, claims: c } = decodeJwt(t);
    assert.equal(header.alg, 'RS256');
    assert.equal(header.typ, 'at+jwt');
    assert.equal(header.kid, idp.keys.rsa.kid);
    assert.deepEqual(c.groups, ['staff', 'platform-admins']);
    expectStatus(await client.request('GET', '/v1/audit-events?limit=1', { token: t }), 200); // admin only
    const page = expectStatus(
      await client.request('GET', `/v1/audit-events?action=pool.create&limit=5`, { token: t }),
      200,
    );
    assert.ok(
      page.items.length >= 2 && page.items.every((e) => e.principal === 'admin-bot'),
      JSON.stringify(page.items),
    );
  });

  test('ES256: the platform group maps to operator (writes, but no admin routes)', async () => {
    const t = await tok('ops-bot');
    assert.equal(decodeJwt(t).header.alg, 'ES256');
    assert.equal(decodeJwt(t).header.kid, idp.keys.ec.kid);
    expectStatus(await client.request('GET', '/v1/hosts', { token: t }), 200);
    expectProblem(await client.request('GET', '/v1/audit-events', { token: t }), 403, 'insufficient_role');
  });

  test('a string groups claim maps too (viewer reads, may not write)', async () => {
    const t = await tok('reader');
    expectStatus(await client.request('GET', '/v1/pools', { token: t }), 200);
    expectProblem(
      await client.request('POST', '/v1/pools', { token: t, body: { name: 'x' } }),
      403,
      'insufficient_role',
    );
  });

  test('a valid token whose groups map to no role: 403 role_not_mapped', async () => {
    const t = await tok('nobody');
    const p = expectProblem(await client.request('GET', '/v1/pools', { token: t }), 403, 'role_not_mapped');
    assert.match(p.detail, /GPUFLEET_JWT_ROLE_MAP/);
  });

  test('wrong issuer, wrong audience, expired: 401 (with a genuine key)', async () => {
    const key = crypto.createPrivateKey({ key: idp.keys.rsa, format: 'jwk' });
    const kid = idp.keys.rsa.kid;
    expectProblem(
      await client.request('GET', '/v1/pools', {
        token: remember(signRs256(key, { kid }, claims({ iss: 'https://evil.test' }))),
      }),
      401,
      'invalid_token',
    );
    expectProblem(
      await client.request('GET', '/v1/pools', {
        token: remember(signRs256(key, { kid }, claims({ aud: 'someone-else' }))),
      }),
      401,
      'invalid_token',
    );
    expectProblem(
      await client.request('GET', '/v1/pools', {
        token: remember(signRs256(key, { kid }, claims({ exp: nowSec() - 3600 }))),
      }),
      401,
      'token_expired',
    );
    // The same key and claims, well-formed: accepted (the forgeries above differ only there).
    expectStatus(await client.request('GET', '/v1/pools', { token: remember(signRs256(key, { kid }, claims())) }), 200);
  });
});

describe('algorithm confusion', () => {
  test('HS256 with the RSA public key (PEM or DER) as the HMAC secret: 401', async () => {
    const pub = crypto.createPublicKey({ key: publicJwk(idp.keys.rsa), format: 'jwk' });
    for (const secret of [
      pub.export({ type: 'spki', format: 'pem' }),
      pub.export({ type: 'spki', format: 'der' }),
      pub.export({ type: 'pkcs1', format: 'pem' }),
    ]) {
      const t = remember(signJwt({ alg: 'HS256', key: secret, header: { kid: idp.keys.rsa.kid }, claims: claims() }));
      expectProblem(await client.request('GET', '/v1/pools', { token: t }), 401, 'invalid_token');
    }
  });

  test('alg none (with the kid of a real key, signature empty or not): 401', async () => {
    const t = remember(signJwt({ alg: 'none', header: { kid: idp.keys.rsa.kid }, claims: claims() }));
    expectProblem(await client.request('GET', '/v1/pools', { token: t }), 401, 'invalid_token');
    expectProblem(await client.request('GET', '/v1/pools', { token: `${t}AAAA` }), 401, 'invalid_token');
    const none = remember(signJwt({ alg: 'none', header: { alg: 'None', kid: idp.keys.ec.kid }, claims: claims() }));
    expectProblem(await client.request('GET', '/v1/pools', { token: none }), 401, 'invalid_token');
  });

  test('ES256 announced on the RSA kid, RS256 on the EC kid: the key pins the alg (401)', async () => {
    const ecKey = crypto.createPrivateKey({ key: idp.keys.ec, format: 'jwk' });
    const rsaKey = crypto.createPrivateKey({ key: idp.keys.rsa, format: 'jwk' });
    const a = remember(signJwt({ alg: 'ES256', key: ecKey, header: { kid: idp.keys.rsa.kid }, claims: claims() }));
    const p = expectProblem(await client.request('GET', '/v1/pools', { token: a }), 401, 'invalid_token');
    assert.match(p.detail, /algorithm/);
    const b = remember(signRs256(rsaKey, { kid: idp.keys.ec.kid }, claims()));
    expectProblem(await client.request('GET', '/v1/pools', { token: b }), 401, 'invalid_token');
    // RS512 and PS256 on the RSA kid.
    for (const alg of ['RS512', 'PS256']) {
      const c = remember(signRs256(rsaKey, { kid: idp.keys.rsa.kid, alg }, claims()));
      expectProblem(await client.request('GET', '/v1/pools', { token: c }), 401, 'invalid_token');
    }
  });

  test('forged (another RSA key under a real kid) and tampered tokens: 401', async () => {
    const other = keyPair('rsa', { modulusLength: 2048 }).privateKey;
    const forged = remember(signRs256(other, { kid: idp.keys.rsa.kid }, claims()));
    expectProblem(await client.request('GET', '/v1/pools', { token: forged }), 401, 'invalid_token');
    // A genuine reader token with its groups swapped for the admins'.
    const t = await tok('reader');
    const [h, , s] = t.split('.');
    const c = { ...decodeJwt(t).claims, groups: ['platform-admins'] };
    const tampered = remember(`${h}.${Buffer.from(JSON.stringify(c)).toString('base64url')}.${s}`);
    expectProblem(await client.request('GET', '/v1/audit-events', { token: tampered }), 401, 'invalid_token');
    // No kid at all.
    const key = crypto.createPrivateKey({ key: idp.keys.rsa, format: 'jwk' });
    expectProblem(
      await client.request('GET', '/v1/pools', { token: remember(signRs256(key, {}, claims())) }),
      401,
      'invalid_token',
    );
  });
});

describe('reporters scoped by the role map', () => {
  test('rep-a (reporter@pool-a): an in-scope batch is stored, reported_by its client_id', async () => {
    const t = await tok('rep-a');
    const r = expectStatus(
      await client.request('POST', '/v1/work-reports', {
        token: t,
        body: { records: [rec(hosts.a1, 0), rec(hosts.a1, 1)] },
      }),
      201,
    );
    assert.equal(r.accepted, 2);
    const stored = await storedFor(hosts.a1);
    assert.equal(stored.length, 2);
    assert.ok(stored.every((x) => x.reported_by === 'rep-a'));
  });

  test('rep-a: a batch naming a host of pool b is refused whole (403 naming the host), nothing stored, audited', async () => {
    const t = await tok('rep-a');
    const before = (await storedFor(hosts.a1)).length;
    const p = expectProblem(
      await client.request('POST', '/v1/work-reports', {
        token: t,
        body: { records: [rec(hosts.a1, 2), rec(hosts.b1, 2), rec(hosts.b2, 2)] },
      }),
      403,
      'host_out_of_scope',
      'records[1].host_id',
    );
    assert.ok(p.detail.includes(hosts.b1.id), p.detail);
    assert.match(p.detail, /2 of 3 records/);
    assert.match(p.detail, /nothing was stored/);
    assert.equal((await storedFor(hosts.a1)).length, before, 'the in-scope record of the refused batch was not stored');
    assert.equal((await storedFor(hosts.b1)).length, 0);
    const audit = expectStatus(
      await client.request('GET', '/v1/audit-events?action=work_report.denied&principal=rep-a', { token: admin }),
      200,
    );
    assert.equal(audit.items.length, 1);
    assert.equal(audit.items[0].status, 403);
  });

  test('rep-h (reporter@host=NAME): that host only', async () => {
    const t = await tok('rep-h');
    expectStatus(
      await client.request('POST', '/v1/work-reports', { token: t, body: { records: [rec(hosts.b2, 0)] } }),
      201,
    );
    expectProblem(
      await client.request('POST', '/v1/work-reports', { token: t, body: { records: [rec(hosts.b1, 0)] } }),
      403,
      'host_out_of_scope',
      'records[0].host_id',
    );
    assert.equal((await storedFor(hosts.b1)).length, 0);
  });

  test("an unscoped role-map entry: the token's own pools claim scopes it", async () => {
    const t = await tok('rep-claims');
    assert.deepEqual(decodeJwt(t).claims.pools, [POOL_B]);
    expectStatus(
      await client.request('POST', '/v1/work-reports', { token: t, body: { records: [rec(hosts.b1, 5)] } }),
      201,
    );
    expectProblem(
      await client.request('POST', '/v1/work-reports', { token: t, body: { records: [rec(hosts.a1, 5)] } }),
      403,
      'host_out_of_scope',
    );
  });

  test('an unscoped reporter (no scope anywhere) is refused: 403 reporter_scope_required', async () => {
    const t = await tok('rep-any');
    const p = expectProblem(
      await client.request('POST', '/v1/work-reports', { token: t, body: { records: [rec(hosts.a1, 9)] } }),
      403,
      'reporter_scope_required',
    );
    assert.match(p.detail, /GPUFLEET_ALLOW_UNSCOPED_REPORTERS/);
    assert.equal((await storedFor(hosts.a1)).filter((x) => x.window_start.startsWith('2025-03-01T09')).length, 0);
  });

  test('operators are not scoped', async () => {
    const t = await tok('ops-bot');
    expectStatus(
      await client.request('POST', '/v1/work-reports', {
        token: t,
        body: { records: [rec(hosts.a1, 20), rec(hosts.b1, 20)] },
      }),
      201,
    );
  });
});

describe('key rotation and a broken key source', () => {
  let oldToken; // admin-bot, signed by the first RSA key
  let oldKeys;

  test('rotation: the provider restarts with new keys; a token of a new kid is verified after a refresh', async () => {
    oldKeys = idp.keys;
    oldToken = await tok('admin-bot');
    expectStatus(await client.request('GET', '/v1/pools', { token: oldToken }), 200); // cached from now on
    await idp.restart({ keys: newKeys() });
    assert.notEqual(idp.keys.rsa.kid, oldKeys.rsa.kid);
    await sleep(1100); // past the rate limit of the refresh
    const hits = idp.front.hits;
    const t = await tok('admin-bot');
    assert.equal(decodeJwt(t).header.kid, idp.keys.rsa.kid);
    // The first token of the new key is refused at once (no request waits for the
    // provider), naming its kid, and asks for a refresh; the client retries.
    const p = expectProblem(await client.request('GET', '/v1/pools', { token: t }), 401, 'invalid_token');
    assert.ok(p.detail.includes(idp.keys.rsa.kid), p.detail);
    const deadline = Date.now() + 5000;
    let res;
    while ((res = await client.request('GET', '/v1/pools', { token: t })).status !== 200 && Date.now() < deadline)
      await sleep(100);
    expectStatus(res, 200);
    assert.equal(idp.front.hits, hits + 1, 'the unknown kid (asked for again by the retries) caused exactly one fetch');
    const e = await tok('ops-bot');
    assert.equal(decodeJwt(e).header.kid, idp.keys.ec.kid);
    expectStatus(await client.request('GET', '/v1/hosts', { token: e }), 200);
    const body = await waitReady();
    assert.equal(body.jwks.status, 'ok');
    assert.equal(body.jwks.keys, 2);
  });

  test('a token signed by the removed key: 401, although it was verified (and cached) before', async () => {
    const p = expectProblem(await client.request('GET', '/v1/pools', { token: oldToken }), 401, 'invalid_token');
    assert.match(p.detail, /kid/);
    // Forged with the removed private key, fresh claims: also 401.
    const k = crypto.createPrivateKey({ key: oldKeys.rsa, format: 'jwk' });
    expectProblem(
      await client.request('GET', '/v1/pools', { token: remember(signRs256(k, { kid: oldKeys.rsa.kid }, claims())) }),
      401,
      'invalid_token',
    );
  });

  test('the JWKS endpoint down: cached keys still verify, /readyz reports degraded, then recovers', async (tc) => {
    tc.after(async () => {
      if (!idp.front.server) await idp.frontUp();
      idp.front.mode = 'pass';
    });
    await idp.frontDown(); // connection refused
    await sleep(1100);
    const t = remember(
      signJwt({
        alg: 'ES256',
        key: keyPair('ec', { namedCurve: 'P-256' }).privateKey,
        header: { kid: 'unknown-down' },
        claims: claims(),
      }),
    );
    expectProblem(await client.request('GET', '/v1/pools', { token: t }), 401, 'invalid_token');
    // The fetch it asked for runs in the background; its failure shows on /readyz.
    let r;
    const deadline = Date.now() + 10_000;
    while ((r = await readyz()).body.status !== 'degraded' && Date.now() < deadline) await sleep(100);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, 'degraded');
    assert.equal(r.body.jwks.status, 'degraded');
    assert.equal(r.body.jwks.keys, 2);
    assert.ok(r.body.jwks.consecutive_failures >= 1);
    assert.match(r.body.jwks.last_error, /connect|Couldn't/i);
    expectStatus(await client.request('GET', '/v1/pools', { token: await tok('admin-bot') }), 200); // a new token, cached key
    expectStatus(await client.request('GET', '/v1/hosts', { token: await tok('ops-bot') }), 200);
    // A 503 from the endpoint: the same.
    await idp.frontUp();
    idp.front.mode = 'down';
    await refreshNow(/HTTP 503/);
    r = await readyz();
    assert.equal(r.body.status, 'degraded');
    assert.match(r.body.jwks.last_error, /HTTP 503/);
    expectStatus(await client.request('GET', '/v1/pools', { token: await tok('admin-bot') }), 200);
    idp.front.mode = 'pass';
    const body = await waitReady(); // the back-off retry (or the next unknown kid) fetches again
    assert.equal(body.jwks.consecutive_failures, 0);
  });

  const broken = [
    ['garbage', /not a JWK set/],
    ['notjwks', /not a JWK set/],
    ['empty', /no usable signing key/],
    ['okp', /no usable signing key/],
    ['huge', /larger than 1048576 bytes/],
    ['huge-length', /larger than 1048576 bytes/],
    ['slow', /Timeout/i],
    ['reset', /fail|recv|empty|connection/i],
    ['redirect-file', /protocol|redirect/i],
    ['redirect-http', /protocol|redirect/i],
  ];
  for (const [mode, why] of broken) {
    test(`a JWKS answer that is ${mode}: refused, old keys kept, server up`, async (tc) => {
      tc.after(() => (idp.front.mode = 'pass'));
      await waitReady();
      idp.front.mode = mode;
      idp.front.bytesSent = 0;
      await refreshNow(why);
      const r = await readyz();
      assert.equal(r.status, 200);
      assert.equal(r.body.status, 'degraded', JSON.stringify(r.body));
      assert.match(r.body.jwks.last_error, why);
      assert.equal(r.body.jwks.keys, 2, 'the cached keys are kept');
      if (mode.startsWith('huge'))
        assert.ok(
          idp.front.bytesSent < 16 * 1024 * 1024,
          `gpufleetd stopped reading early (${idp.front.bytesSent} bytes sent)`,
        );
      expectStatus(await client.request('GET', '/v1/pools', { token: await tok('admin-bot') }), 200);
      assert.ok(srv.alive());
      idp.front.mode = 'pass';
      await waitReady();
    });
  }

  test('the IdP itself down (the JWK set unreachable behind the front): tokens still verify', async (tc) => {
    await waitReady();
    const t = await tok('admin-bot'); // issued before the provider stops
    tc.after(() => idp.startProvider().catch(() => {}));
    await idp.stopProvider();
    await refreshNow(/HTTP 502/);
    const r = await readyz();
    assert.equal(r.body.status, 'degraded');
    assert.match(r.body.jwks.last_error, /HTTP 502/);
    expectStatus(await client.request('GET', '/v1/pools', { token: t }), 200);
  });
});

describe('start-up and configuration', () => {
  test('a server whose JWKS endpoint is unreachable at start: 503 jwks_unavailable, tokens refused, then ready', async () => {
    const port = await freePort();
    const s = await startServer({
      name: 'oidc-late',
      env: oidcEnv({ GPUFLEET_JWT_JWKS_URL: `http://127.0.0.1:${port}/jwks` }),
    });
    try {
      const c = api(s);
      const p0 = expectProblem(await c.request('GET', '/readyz'), 503, 'jwks_unavailable');
      assert.match(p0.detail, /Couldn't connect|connect/i);
      const t = await tok('admin-bot');
      const p = expectProblem(await c.request('GET', '/v1/pools', { token: t }), 401, 'invalid_token');
      assert.match(p.detail, /no signing keys/);
      const front = await startFrontOn(port, () => idp.issuer);
      try {
        await waitReady(s, 40_000); // the back-off retry (1 s, doubling) finds it
        expectStatus(await c.request('GET', '/v1/pools', { token: t }), 200);
      } finally {
        await front.close();
      }
    } finally {
      await s.stop();
    }
  });

  test('https: the certificate is verified (an unknown CA is refused), GPUFLEET_JWT_JWKS_CA_FILE trusts one', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gft-oidc-tls-'));
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const tls = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, async (req, res) => {
      const r = await fetch(`${idp.issuer}/jwks`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.from(await r.arrayBuffer()));
    });
    await new Promise((resolve) => tls.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${tls.address().port}/jwks`;
    try {
      // a generous fetch timeout: under load (an ASan server beside the fleet suite) the
      // default 5 s once ran out before the handshake failed, and the check is the error's kind
      const untrusted = await startServer({
        name: 'oidc-tls-untrusted',
        env: oidcEnv({ GPUFLEET_JWT_JWKS_URL: url, GPUFLEET_JWT_JWKS_TIMEOUT_SECONDS: '30' }),
      });
      try {
        const p = expectProblem(await api(untrusted).request('GET', '/readyz'), 503, 'jwks_unavailable');
        assert.match(p.detail, /certificate|SSL/i);
      } finally {
        await untrusted.stop();
      }
      const trusted = await startServer({
        name: 'oidc-tls',
        env: oidcEnv({
          GPUFLEET_JWT_JWKS_URL: url,
          GPUFLEET_JWT_JWKS_CA_FILE: cert,
          GPUFLEET_JWT_JWKS_TIMEOUT_SECONDS: '30',
        }),
      });
      try {
        assert.equal((await waitReady(trusted)).jwks.keys, 2);
        expectStatus(await api(trusted).request('GET', '/v1/pools', { token: await tok('admin-bot') }), 200);
      } finally {
        await trusted.stop();
      }
    } finally {
      tls.closeAllConnections();
      await new Promise((resolve) => tls.close(resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('bad OIDC settings stop the server at start with a line naming the variable', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gft-oidc-'));
    const garbage = path.join(dir, 'jwks.json');
    fs.writeFileSync(garbage, '{"keys": garbage');
    const base = { ...srv.env };
    delete base.GPUFLEET_JWT_SECRET_FILE;
    const cases = [
      [{ GPUFLEET_JWT_JWKS_URL: 'http://idp.example.com/jwks' }, /https/],
      [{ GPUFLEET_JWT_JWKS_URL: 'ftp://127.0.0.1/jwks' }, /https/],
      [{ GPUFLEET_JWT_ROLE_MAP: 'platform:root' }, /GPUFLEET_JWT_ROLE_MAP/],
      [{ GPUFLEET_JWT_ROLE_MAP: 'platform:admin@pool-a' }, /only reporter/],
      [{ GPUFLEET_JWT_ROLE_MAP: undefined }, /GPUFLEET_JWT_ROLE_MAP must be set/],
      [{ GPUFLEET_JWT_ISSUER: undefined }, /GPUFLEET_JWT_ISSUER/],
      [{ GPUFLEET_JWT_JWKS_MIN_REFRESH_SECONDS: '0' }, /GPUFLEET_JWT_JWKS_MIN_REFRESH_SECONDS/],
      [{ GPUFLEET_JWT_SECRET_FILE: garbage }, /only one/],
      [
        { GPUFLEET_JWT_JWKS_URL: undefined, GPUFLEET_JWT_JWKS_FILE: garbage },
        /GPUFLEET_JWT_JWKS_FILE: .*not a JWK set/,
      ],
      [{ GPUFLEET_ALLOW_UNSCOPED_REPORTERS: 'yes' }, /GPUFLEET_ALLOW_UNSCOPED_REPORTERS/],
    ];
    try {
      for (const [over, want] of cases) {
        const env = { ...base };
        for (const [k, v] of Object.entries(over)) {
          if (v === undefined) delete env[k];
          else env[k] = v;
        }
        const r = runBin(['serve'], env, { timeout: 20_000 });
        assert.notEqual(r.status, 0, `${JSON.stringify(over)} was accepted`);
        assert.match(r.stderr, want, `${JSON.stringify(over)}: ${r.stderr}`);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('with OIDC, gpufleetd token refuses to mint (tokens come from the IdP)', () => {
    const r = runBin(['token', '--sub', 'x', '--role', 'admin'], srv.env);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /identity provider/);
  });
});

describe('logs', () => {
  test('no token and no key material in the server log', async () => {
    const log = fs.readFileSync(srv.logPath, 'utf8');
    assert.match(log, /JWKS keys loaded/);
    for (const t of seen) {
      assert.ok(!log.includes(t), 'a token is in the log');
      const sig = t.split('.')[2];
      if (sig.length >= 16) assert.ok(!log.includes(sig), 'a token signature is in the log');
    }
    assert.ok(!log.includes(idp.keys.rsa.n.slice(0, 40)), 'an RSA modulus is in the log');
    assert.ok(!log.includes(idp.keys.ec.x), 'an EC point is in the log');
  });
});
