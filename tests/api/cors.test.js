'use strict';
// CORS for web frontends. Preflight (OPTIONS) answers are deliberately not in
// the spec, so they go through api().request(..., {validate: false}) — the
// only place the suite skips contract validation — and are checked here by
// hand. Ordinary requests with an Origin are validated as usual.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

const ALLOWED = 'https://ui.example.com';
const DENIED = 'https://evil.example.com';

let srv;
let client;
let viewer;

const list = (v) =>
  (v || '')
    .split(',')
    .map((x) => x.trim().toLowerCase())
    .filter(Boolean);

before(async () => {
  srv = await startServer({ name: 'cors', env: { GPUFLEET_CORS_ORIGINS: ALLOWED } });
  client = api(srv);
  viewer = srv.token('viewer', { sub: 'cors-viewer' });
});

after(async () => {
  if (srv) await srv.stop();
});

test('preflight from an allowed origin answers 204 with the CORS headers', async () => {
  const res = await client.request('OPTIONS', '/v1/gpu-models', {
    validate: false,
    headers: { Origin: ALLOWED, 'Access-Control-Request-Method': 'GET' },
  });
  assert.equal(res.status, 204, `got ${res.status} ${res.text}`);
  assert.equal(res.text, '', 'a 204 has no body');
  assert.equal(res.headers.get('access-control-allow-origin'), ALLOWED);
  assert.ok(list(res.headers.get('access-control-allow-methods')).includes('get'), 'Allow-Methods lacks GET');
  assert.ok(
    list(res.headers.get('access-control-allow-headers')).includes('authorization'),
    'Allow-Headers lacks Authorization',
  );
  assert.match(res.headers.get('vary') || '', /\borigin\b/i, 'Vary lacks Origin');
  assert.ok(res.headers.get('x-request-id'), 'X-Request-Id missing');
});

test('preflight for a POST allows the headers a client sends', async () => {
  const res = await client.request('OPTIONS', '/v1/gpu-models', {
    validate: false,
    headers: {
      Origin: ALLOWED,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type, idempotency-key, x-request-id',
    },
  });
  assert.equal(res.status, 204, `got ${res.status} ${res.text}`);
  assert.ok(list(res.headers.get('access-control-allow-methods')).includes('post'));
  const allowed = list(res.headers.get('access-control-allow-headers'));
  for (const h of ['authorization', 'content-type', 'idempotency-key']) {
    assert.ok(allowed.includes(h), `Allow-Headers lacks ${h}: ${allowed}`);
  }
});

test('preflight works on parameterised and service paths', async () => {
  for (const p of ['/v1/gpu-models/h100_sxm', '/v1/audit-events', '/healthz']) {
    const res = await client.request('OPTIONS', p, {
      validate: false,
      headers: { Origin: ALLOWED, 'Access-Control-Request-Method': 'GET' },
    });
    assert.equal(res.status, 204, `${p}: got ${res.status} ${res.text}`);
    assert.equal(res.headers.get('access-control-allow-origin'), ALLOWED);
  }
});

test('a GET from an allowed origin gets Access-Control-Allow-Origin and Vary: Origin', async () => {
  const res = await client.request('GET', '/v1/gpu-models?limit=1', { token: viewer, headers: { Origin: ALLOWED } });
  expectStatus(res, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), ALLOWED);
  assert.match(res.headers.get('vary') || '', /\borigin\b/i);
  // A browser must be able to read these response headers.
  const exposed = list(res.headers.get('access-control-expose-headers'));
  for (const h of ['etag', 'x-request-id', 'retry-after', 'ratelimit', 'ratelimit-policy'])
    assert.ok(exposed.includes(h), `Expose-Headers lacks ${h}: ${exposed}`);
});

test('error answers to an allowed origin carry the CORS headers too', async () => {
  const res = await client.request('GET', '/v1/gpu-models', { headers: { Origin: ALLOWED } });
  expectProblem(res, 401, 'missing_token');
  assert.equal(res.headers.get('access-control-allow-origin'), ALLOWED);
});

test('a GET from another origin gets no Access-Control-Allow-Origin', async () => {
  const res = await client.request('GET', '/v1/gpu-models?limit=1', { token: viewer, headers: { Origin: DENIED } });
  expectStatus(res, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), null);
  assert.match(res.headers.get('vary') || '', /\borigin\b/i, 'Vary: Origin also on answers without ACAO (caches)');
});

test('a GET without Origin gets no Access-Control-Allow-Origin', async () => {
  const res = await client.request('GET', '/v1/gpu-models?limit=1', { token: viewer });
  expectStatus(res, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), null);
});

test('preflight from another origin answers 403 origin_not_allowed', async () => {
  const res = await client.request('OPTIONS', '/v1/gpu-models', {
    validate: false,
    headers: { Origin: DENIED, 'Access-Control-Request-Method': 'GET' },
  });
  assert.equal(res.status, 403, `got ${res.status} ${res.text}`);
  assert.equal(res.headers.get('access-control-allow-origin'), null);
  assert.match(res.headers.get('content-type') || '', /^application\/problem\+json/);
  assert.equal(res.body && res.body.code, 'origin_not_allowed');
  assert.equal(res.body.status, 403);
  assert.equal(res.body.type, 'urn:gpufleet:problem:origin_not_allowed');
});

test('an origin differing only by scheme or port is not allowed', async () => {
  for (const o of ['http://ui.example.com', 'https://ui.example.com:8443', 'https://ui.example.com.evil.com', 'null']) {
    const res = await client.request('GET', '/v1/gpu-models?limit=1', { token: viewer, headers: { Origin: o } });
    expectStatus(res, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), null, `${o} was allowed`);
  }
});

test('preflight on an unknown path answers 404', async () => {
  const res = await client.request('OPTIONS', '/v1/nope', {
    validate: false,
    headers: { Origin: ALLOWED, 'Access-Control-Request-Method': 'GET' },
  });
  assert.equal(res.status, 404, `got ${res.status} ${res.text}`);
});
