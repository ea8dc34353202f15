'use strict';
// Rate limits (issue 25, item 4; docs/operations.md#rate-limits): token buckets per principal,
// per client address (health and metrics in a bucket of their own), and for authentication
// failures per address; 429 problem+json with Retry-After and the draft RateLimit and
// RateLimit-Policy headers; the connection cap per address; settings refused at start.
//
// Other client addresses are real: the requests that must come from elsewhere are sent
// from 127.0.0.2 or 127.0.0.3 (node:http's localAddress; Linux routes all of 127/8 to lo).
// Buckets are small and refill at 1 per second, and each burst is sent far faster than
// that, so that the figures hold on a loaded machine.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');

const { startServer, runBin, sleep } = require('./lib/server');
const { api, validateResponse } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

// One request from a given local address, validated against the contract like api().
function requestFrom(srv, localAddress, method, path, { token } = {}) {
  return new Promise((resolve, reject) => {
    const headers = { Connection: 'close' };
    if (token) headers.Authorization = `Bearer ${token}`;
    const req = http.request(
      { host: '127.0.0.1', port: srv.port, method, path, headers, localAddress, timeout: 30_000 },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) h.set(k, Array.isArray(v) ? v.join(', ') : v);
          const out = { status: res.statusCode, headers: h, text: Buffer.concat(chunks).toString('utf8') };
          try {
            out.body = validateResponse(method, path, out);
            resolve(out);
          } catch (e) {
            reject(e);
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

// Sends up to n requests one after another until one is refused; returns [answers].
async function burst(send, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const res = await send();
    out.push(res);
    if (res.status === 429) break;
  }
  return out;
}

const POLICY_RE = /^"([a-z-]+)";q=(\d+);w=(\d+)$/;
const STATE_RE = /^"([a-z-]+)";r=(\d+);t=(\d+)$/;

// A 429 of the given policy: problem+json, Retry-After, RateLimit r=0 and its policy.
function expectLimited(res, policy, burstSize) {
  const b = expectProblem(res, 429, 'rate_limited');
  assert.match(b.detail, new RegExp(policy === 'auth-failures' ? 'authentication failures' : 'too many'));
  const retry = Number(res.headers.get('retry-after'));
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After ${res.headers.get('retry-after')}`);
  const pol = POLICY_RE.exec(res.headers.get('ratelimit-policy') || '');
  assert.ok(pol, `RateLimit-Policy ${res.headers.get('ratelimit-policy')}`);
  assert.equal(pol[1], policy);
  assert.equal(Number(pol[2]), burstSize);
  const st = STATE_RE.exec(res.headers.get('ratelimit') || '');
  assert.ok(st, `RateLimit ${res.headers.get('ratelimit')}`);
  assert.equal(st[1], policy);
  assert.equal(Number(st[2]), 0);
  assert.equal(Number(st[3]), retry);
  return retry;
}

describe('per principal', () => {
  let srv;
  let client;
  before(async () => {
    srv = await startServer({
      name: 'ratelimit-principal',
      env: {
        GPUFLEET_RATE_LIMIT_PRINCIPAL_RPS: '1',
        GPUFLEET_RATE_LIMIT_PRINCIPAL_BURST: '5',
        // the reporters' defaults (lib/server.js raises them for the rest of the suite)
        GPUFLEET_RATE_LIMIT_REPORTER_RPS: undefined,
        GPUFLEET_RATE_LIMIT_REPORTER_BURST: undefined,
      },
    });
    client = api(srv);
  });
  after(() => srv && srv.stop());

  test('a burst beyond the limit gets 429 with Retry-After and RateLimit headers; another principal is served; after Retry-After the first is served again', async () => {
    const alice = srv.token('viewer', { sub: 'alice' });
    const bob = srv.token('viewer', { sub: 'bob' });
    const answers = await burst(() => client.request('GET', '/v1/gpu-models/h100_sxm', { token: alice }), 30);
    const last = answers[answers.length - 1];
    assert.equal(last.status, 429, `no 429 after ${answers.length} requests`);
    assert.ok(answers.length >= 6, `refused after only ${answers.length - 1} requests (burst 5)`);
    // Normal answers carry the headers too, counting down.
    const first = answers[0];
    expectStatus(first, 200);
    assert.equal(first.headers.get('ratelimit-policy'), '"principal";q=5;w=5');
    assert.match(first.headers.get('ratelimit'), /^"principal";r=4;t=1$/);
    const retry = expectLimited(last, 'principal', 5);

    // Another principal from the same address is unaffected.
    const res = await client.request('GET', '/v1/gpu-models/h100_sxm', { token: bob });
    expectStatus(res, 200);
    assert.match(res.headers.get('ratelimit'), /^"principal";r=4;/);

    await sleep(retry * 1000 + 100);
    expectStatus(await client.request('GET', '/v1/gpu-models/h100_sxm', { token: alice }), 200);
  });

  test('a reporter has its own, larger bucket: not limited by the principal burst', async () => {
    const rep = srv.token('reporter', { sub: 'collector' });
    for (let i = 0; i < 12; i++) {
      const res = await client.request('GET', '/v1/me', { token: rep });
      expectStatus(res, 200);
      // Defaults: 500 per second, burst 5000 (a window of 10 s).
      assert.equal(res.headers.get('ratelimit-policy'), '"reporter";q=5000;w=10');
    }
  });

  test('the limit is per principal, not per token: a second token of the same subject shares it', async () => {
    const t1 = srv.token('viewer', { sub: 'carol' });
    const t2 = srv.token('operator', { sub: 'carol' });
    const answers = await burst(() => client.request('GET', '/v1/gpu-models/h100_sxm', { token: t1 }), 30);
    assert.equal(answers[answers.length - 1].status, 429);
    expectLimited(await client.request('GET', '/v1/gpu-models/h100_sxm', { token: t2 }), 'principal', 5);
  });
});

describe('per address, probes, authentication failures', () => {
  let srv;
  before(async () => {
    srv = await startServer({
      name: 'ratelimit-address',
      env: {
        GPUFLEET_RATE_LIMIT_ADDRESS_RPS: '1',
        GPUFLEET_RATE_LIMIT_ADDRESS_BURST: '10',
        GPUFLEET_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: '6',
        GPUFLEET_RATE_LIMIT_AUTH_FAILURE_BURST: '3',
      },
    });
  });
  after(() => srv && srv.stop());

  test('a burst from one address gets 429; another address is served; the probes keep their own bucket', async () => {
    const token = srv.token('viewer', { sub: 'dave' });
    const answers = await burst(() => requestFrom(srv, '127.0.0.2', 'GET', '/v1/gpu-models/h100_sxm', { token }), 40);
    const last = answers[answers.length - 1];
    assert.equal(last.status, 429, `no 429 after ${answers.length} requests`);
    expectLimited(last, 'address', 10);
    // An unauthenticated path is charged too (before any token is looked at).
    expectLimited(await requestFrom(srv, '127.0.0.2', 'GET', '/openapi.yaml'), 'address', 10);
    expectLimited(await requestFrom(srv, '127.0.0.2', 'GET', '/v1/no-such-thing'), 'address', 10);
    // The same token from another address is served.
    const other = await requestFrom(srv, '127.0.0.3', 'GET', '/v1/gpu-models/h100_sxm', { token });
    expectStatus(other, 200);
    // Health and readiness from the refused address: their own bucket, not starved.
    expectStatus(await requestFrom(srv, '127.0.0.2', 'GET', '/healthz'), 200);
    const ready = await requestFrom(srv, '127.0.0.2', 'GET', '/readyz');
    expectStatus(ready, 200);
    assert.match(ready.headers.get('ratelimit-policy'), /^"probe";/);
    // ... but a flood of probes is limited per address too.
    const probes = await burst(() => requestFrom(srv, '127.0.0.2', 'GET', '/healthz'), 40);
    expectLimited(probes[probes.length - 1], 'probe', 10);
  });

  test('repeated bad tokens from one address get 429 while good traffic from it is still served', async () => {
    const good = srv.token('viewer', { sub: 'erin' });
    const bad = good.slice(0, -4) + (good.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const from = '127.0.0.4';
    for (let i = 0; i < 3; i++) {
      const res = await requestFrom(srv, from, 'GET', '/v1/gpu-models/h100_sxm', { token: bad });
      expectProblem(res, 401, 'invalid_token');
      assert.match(res.headers.get('ratelimit'), new RegExp(`^"auth-failures";r=${2 - i};`));
    }
    const limited = await requestFrom(srv, from, 'GET', '/v1/gpu-models/h100_sxm', { token: bad });
    const retry = expectLimited(limited, 'auth-failures', 3);
    assert.ok(retry >= 5 && retry <= 10, `Retry-After ${retry} (6 per minute: a failure every 10 s)`);
    // No token at all is a failure too.
    expectLimited(await requestFrom(srv, from, 'GET', '/v1/gpu-models/h100_sxm'), 'auth-failures', 3);
    // A good token from the same address: served (its address bucket had room: 6 of 10).
    const ok = await requestFrom(srv, from, 'GET', '/v1/gpu-models/h100_sxm', { token: good });
    expectStatus(ok, 200);
    // Bad tokens from another address: still 401, not 429.
    expectProblem(
      await requestFrom(srv, '127.0.0.5', 'GET', '/v1/gpu-models/h100_sxm', { token: bad }),
      401,
      'invalid_token',
    );
  });

  test('/metrics counts the refusals by policy', async () => {
    const res = await requestFrom(srv, '127.0.0.6', 'GET', '/metrics');
    expectStatus(res, 200);
    const count = (p) =>
      Number(new RegExp(`^gpufleet_rate_limited_total\\{policy="${p}"\\} (\\d+)$`, 'm').exec(res.text)[1]);
    assert.ok(count('address') >= 3, res.text.match(/gpufleet_rate_limited_total.*/g).join('\n'));
    assert.ok(count('probe') >= 1);
    assert.ok(count('auth-failures') >= 2);
    assert.equal(count('principal'), 0);
  });
});

describe('connections per address', () => {
  let srv;
  before(async () => {
    srv = await startServer({ name: 'ratelimit-conns', env: { GPUFLEET_MAX_CONNECTIONS_PER_IP: '2' } });
  });
  after(() => srv && srv.stop());

  function open(localAddress) {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: '127.0.0.1', port: srv.port, localAddress }, () => resolve(s));
      s.on('error', reject);
    });
  }
  // Resolves 'closed' when the server closes the socket within ms, else 'open'.
  function closedWithin(s, ms) {
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve('open'), ms);
      const done = () => {
        clearTimeout(t);
        resolve('closed');
      };
      s.on('end', done);
      s.on('close', done);
      s.on('error', done);
      s.resume();
    });
  }

  test('a third connection from one address is closed at once; another address still connects', async () => {
    const a = await open('127.0.0.7');
    const b = await open('127.0.0.7');
    const c = await open('127.0.0.7').catch(() => null);
    try {
      if (c !== null) assert.equal(await closedWithin(c, 3000), 'closed', 'the third connection stayed open');
      assert.equal(await closedWithin(a, 200), 'open');
      // Another address is not counted against this one.
      const res = await requestFrom(srv, '127.0.0.8', 'GET', '/healthz');
      expectStatus(res, 200);
    } finally {
      for (const s of [a, b, c]) if (s) s.destroy();
    }
  });
});

describe('settings', () => {
  let srv;
  before(async () => {
    srv = await startServer({ name: 'ratelimit-settings' });
  });
  after(() => srv && srv.stop());

  test('bad rate-limit settings stop the server at start with a line naming the variable', () => {
    const cases = [
      [{ GPUFLEET_RATE_LIMIT_PRINCIPAL_RPS: 'fast' }, /GPUFLEET_RATE_LIMIT_PRINCIPAL_RPS must be a whole number/],
      [{ GPUFLEET_RATE_LIMIT_PRINCIPAL_RPS: '-1' }, /GPUFLEET_RATE_LIMIT_PRINCIPAL_RPS/],
      [
        { GPUFLEET_RATE_LIMIT_PRINCIPAL_BURST: '0' },
        /GPUFLEET_RATE_LIMIT_PRINCIPAL_BURST must be a whole number from 1/,
      ],
      [{ GPUFLEET_RATE_LIMIT_ADDRESS_RPS: '1.5' }, /GPUFLEET_RATE_LIMIT_ADDRESS_RPS/],
      [{ GPUFLEET_RATE_LIMIT_REPORTER_BURST: '99999999' }, /GPUFLEET_RATE_LIMIT_REPORTER_BURST/],
      [{ GPUFLEET_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: 'x' }, /GPUFLEET_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE/],
      [{ GPUFLEET_RATE_LIMIT_TABLE_SIZE: '10' }, /GPUFLEET_RATE_LIMIT_TABLE_SIZE/],
      [{ GPUFLEET_RATE_LIMIT: 'yes' }, /GPUFLEET_RATE_LIMIT must be/],
      [{ GPUFLEET_MAX_CONNECTIONS_PER_IP: '0' }, /GPUFLEET_MAX_CONNECTIONS_PER_IP/],
    ];
    for (const [over, want] of cases) {
      const r = runBin(['serve'], { ...srv.env, ...over }, { timeout: 20_000 });
      assert.notEqual(r.status, 0, `${JSON.stringify(over)} was accepted`);
      assert.match(r.stderr, want, `${JSON.stringify(over)}: ${r.stderr}`);
    }
  });

  test('the effective configuration logs the limits', async () => {
    const fs = require('node:fs');
    const log = fs.readFileSync(srv.logPath, 'utf8');
    assert.match(log, /"rate_limits":\{"enabled":true,"principal":\{"rps":1000000/);
  });

  test('GPUFLEET_RATE_LIMIT=0: no limit and no RateLimit headers', async () => {
    const off = await startServer({
      name: 'ratelimit-off',
      env: {
        GPUFLEET_RATE_LIMIT: '0',
        GPUFLEET_RATE_LIMIT_PRINCIPAL_RPS: '1',
        GPUFLEET_RATE_LIMIT_PRINCIPAL_BURST: '1',
      },
    });
    try {
      const c = api(off);
      const token = off.token('viewer');
      for (let i = 0; i < 5; i++) {
        const res = await c.request('GET', '/v1/gpu-models/h100_sxm', { token });
        expectStatus(res, 200);
        assert.equal(res.headers.get('ratelimit'), null);
      }
    } finally {
      await off.stop();
    }
  });
});
