'use strict';
// The same answers (issue 28, item 5): the recommendations and a brief's placement over a
// fixed fixture must stay what the read path before issue 28 answered. The expected
// documents in tests/api/fixtures/recommend_same.json were recorded with gpufleetd built
// from main before the read path changed (commit 4e3ee4c: place_pools reading the day
// rollup's heap, the retry budgets' own 24 h cost read), by running this file with
//   RECOMMEND_SAME_RECORD=1 GPUFLEET_BIN=<that binary> tests/api/run tests/api/recommend_same.test.js
// Every recommendation is compared item by item (ids replaced by the fixture's names, items
// sorted by their JSON, numbers equal to 1e-9 relative), so a change of the read path that
// changes any recommendation, evidence figure or placement row fails here.
//
// The fixture (GPUFLEET_WORKERS=0, hosts held since T0, every figure distinct per host so
// that no tie depends on the order of random ids): pools A ($4/h), B ($2/h) and C ($1/h,
// retry budget 5%), four hosts each, hourly work reports over the 10 days before AT:
//   a1 a2 b1     brief SAME (tokens; mostly on A, B's host cheaper per unit: rightsize to
//                B), a2 idle for its last 3 hours;
//   b2           no brief, tokens;
//   a3 b3        brief RETRY (retry budget 10%) failing 20-30% with classes oom/timeout;
//   a4           no brief, requests, high p95 latency and queue delay;
//   b4           brief LOAD with load-dominated phases and 4 GB moved per hour;
//   c1 c2 c3     no brief, failing with hardware (c1 most) and data classes;
//   c4           no brief, idle for its last 6 hours.
// A third of the reports of b1 give phases; a1 and b2 report storage.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const EXPECTED = path.join(__dirname, 'fixtures', 'recommend_same.json');
const T0 = '2025-02-20T00:00:00Z';
const AT_MS = Date.parse('2025-03-10T12:00:00Z');
const AT = '2025-03-10T12:00:00Z';
const HOURS = 240;
const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');
const at = (h) => iso(AT_MS + h * 3600e3);

let srv;
let client;
let viewer;
const P = {};
const H = {};
const B = {};
const names = new Map(); // id -> fixture name
const labels = []; // [the random name of a pool, host or brief, its fixture name]

const briefBody = (name, o = {}) => ({
  name: `${name}-${fleet.uniq()}`,
  kind: 'inference_interactive',
  model: { name: 'acme/chat', parameter_count: 7e9, precision: 'bf16' },
  load: { concurrency: 1 },
  targets: [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }],
  ...o,
});

// A deterministic pseudo-random figure in [0, 1) for (host index k, hour h, salt s).
const rnd = (k, h, s) => {
  let x = (k * 7919 + h * 104729 + s * 1299709) >>> 0;
  x ^= x << 13;
  x >>>= 0;
  x ^= x >>> 17;
  x ^= x << 5;
  return (x >>> 0) / 4294967296;
};

// The record of host n (index k) for hour h (0 = the oldest), or null for none.
function record(n, k, h) {
  const host = H[n];
  const ws = at(h - HOURS);
  const we = at(h - HOURS + 1);
  const busy = Math.round(2400 + rnd(k, h, 1) * 1100 + k);
  const done = Math.round(busy * (1000 + k * 37) * (0.8 + rnd(k, h, 2) * 0.4));
  const base = { host_id: host.id, window_start: ws, window_end: we, unit: 'tokens', retried: 0 };
  const idle = { ...base, completed: 0, failed: 0, busy_seconds: 0 };
  const left = HOURS - h; // hours to AT
  switch (n) {
    case 'a1':
    case 'a2':
    case 'b1':
    case 'b2': {
      if (n === 'b2') return { ...base, completed: done, failed: 0, busy_seconds: busy, storage_gb: 100 + k };
      if (n === 'a2' && left <= 3) return { ...idle, brief_id: B.SAME.id };
      const r = { ...base, brief_id: B.SAME.id, completed: done, failed: Math.round(done * 0.001), busy_seconds: busy };
      r.p95_latency_ms = Math.round(200 + rnd(k, h, 3) * 200 + k);
      if (n === 'b1' && h % 3 === 0)
        r.phases = { queue: busy * 0.05, load: busy * 0.1, preprocess: busy * 0.05, compute: busy * 0.8 };
      if (n === 'a1' || n === 'b2') r.storage_gb = 100 + k;
      return r;
    }
    case 'a3':
    case 'b3': {
      const failed = Math.round(done * (0.2 + rnd(k, h, 4) * 0.1));
      const retried = Math.round(failed * 0.5);
      const oom = Math.round((failed + retried) * 0.6);
      return {
        ...base,
        brief_id: B.RETRY.id,
        completed: done,
        failed,
        retried,
        busy_seconds: busy,
        failures: { oom, timeout: Math.round((failed + retried) * 0.3) },
      };
    }
    case 'a4':
      return {
        ...base,
        unit: 'requests',
        completed: Math.round(busy / 10),
        failed: 0,
        busy_seconds: busy,
        p95_latency_ms: 900 + k,
        queue_delay_ms: 400 + k,
      };
    case 'b4':
      return {
        ...base,
        brief_id: B.LOAD.id,
        completed: done,
        failed: 0,
        busy_seconds: busy,
        bytes_moved: 4e9 + k,
        phases: { load: busy * 0.45, compute: busy * 0.5, write: busy * 0.05 },
      };
    case 'c1':
    case 'c2':
    case 'c3': {
      const failed = Math.round(done * (0.05 + k * 0.01));
      const hw = n === 'c1' ? Math.round(failed * 0.9) : Math.round(failed * (0.1 + k * 0.02));
      return {
        ...base,
        completed: done,
        failed,
        busy_seconds: busy,
        failures: { hardware: hw, data: Math.round((failed - hw) / 2) },
      };
    }
    case 'c4':
      if (left <= 6) return idle;
      return { ...base, completed: done, failed: 0, busy_seconds: busy };
    default:
      return null;
  }
}

// The document with every known id and random name replaced by its fixture name, unknown uuids by
// "<uuid>", arrays of names sorted, and items sorted by their JSON.
function normalize(doc) {
  let text = JSON.stringify(doc);
  for (const [name, label] of labels) text = text.split(name).join(label);
  text = text.replace(
    /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g,
    (id) => names.get(id) || '<uuid>',
  );
  const sortArrays = (v) => {
    if (Array.isArray(v)) {
      const out = v.map(sortArrays);
      return out.every((x) => typeof x === 'string') ? out.sort() : out;
    }
    if (v && typeof v === 'object')
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((key) => [key, sortArrays(v[key])]),
      );
    return v;
  };
  const out = sortArrays(JSON.parse(text));
  for (const key of ['items', 'no_usage_data'])
    if (Array.isArray(out[key]))
      out[key] = out[key]
        .map((x) => [JSON.stringify(x), x])
        .sort()
        .map(([, x]) => x);
  return out;
}

// Equal documents, numbers to 1e-9 relative; the message names the path of a difference.
function same(got, want, where = '') {
  if (typeof want === 'number' && typeof got === 'number') {
    assert.ok(Math.abs(got - want) <= 1e-9 * Math.max(1, Math.abs(want)), `${where}: ${got} != ${want}`);
    return;
  }
  if (Array.isArray(want)) {
    assert.ok(Array.isArray(got), `${where}: not an array`);
    assert.equal(got.length, want.length, `${where}: ${got.length} items, expected ${want.length}`);
    want.forEach((w, i) => same(got[i], w, `${where}[${i}]`));
    return;
  }
  if (want && typeof want === 'object') {
    assert.ok(got && typeof got === 'object', `${where}: not an object`);
    assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort(), `${where}: members`);
    for (const k of Object.keys(want)) same(got[k], want[k], `${where}.${k}`);
    return;
  }
  assert.equal(got, want, where);
}

before(async () => {
  srv = await startServer({
    name: 'recommend_same',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  const admin = srv.token('admin');
  const operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  P.A = await fleet.createPool(client, admin, { price_per_hour: 4 });
  P.B = await fleet.createPool(client, admin, { price_per_hour: 2, egress_price_per_gb: 0.09 });
  P.C = await fleet.createPool(client, admin, { price_per_hour: 1, retry_budget_pct: 5 });
  for (const [n, p] of Object.entries(P)) {
    names.set(p.id, `pool ${n}`);
    labels.push([p.name, `pool ${n}`]);
  }
  const order = ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3', 'b4', 'c1', 'c2', 'c3', 'c4'];
  for (const n of order) {
    H[n] = await fleet.createHost(client, operator, {
      name: `same-${n}-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: P[n[0].toUpperCase()].id,
    });
    names.set(H[n].id, `host ${n}`);
    labels.push([H[n].name, `host ${n}`]);
  }
  B.SAME = expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body: briefBody('same') }), 201);
  B.RETRY = expectStatus(
    await client.request('POST', '/v1/briefs', { token: operator, body: briefBody('retry', { retry_budget_pct: 10 }) }),
    201,
  );
  B.LOAD = expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body: briefBody('load') }), 201);
  for (const [n, b] of Object.entries(B)) {
    names.set(b.id, `brief ${n}`);
    labels.push([b.name, `brief ${n}`]);
  }
  const ids = Object.values(H)
    .map((h) => `'${h.id}'`)
    .join(',');
  psql(srv.database.url, `UPDATE host_state_history SET at = '${T0}' WHERE host_id IN (${ids})`);
  const records = [];
  order.forEach((n, k) => {
    for (let h = 0; h < HOURS; h++) {
      const r = record(n, k, h);
      if (r) records.push(r);
    }
  });
  for (let i = 0; i < records.length; i += 1000) {
    const res = await client.request('POST', '/v1/work-reports', {
      token: operator,
      body: { records: records.slice(i, i + 1000) },
    });
    expectStatus(res, 201);
  }
});

after(async () => {
  if (srv) await srv.stop();
});

describe('the read path answers as before', () => {
  test('GET /v1/recommendations and the placement of a brief, item by item', async () => {
    const recs = expectStatus(await client.request('GET', `/v1/recommendations?at=${AT}`, { token: viewer }), 200);
    const from = iso(AT_MS - 9.5 * 86400e3);
    const place = expectStatus(
      await client.request('GET', `/v1/briefs/${B.SAME.id}/placement?from=${from}&to=${AT}`, { token: viewer }),
      200,
    );
    const place30 = expectStatus(
      await client.request('GET', `/v1/briefs/${B.SAME.id}/placement?from=${iso(AT_MS - 30 * 86400e3)}&to=${AT}`, {
        token: viewer,
      }),
      200,
    );
    const got = { recommendations: normalize(recs), placement: normalize(place), placement_30d: normalize(place30) };
    if (process.env.RECOMMEND_SAME_RECORD) {
      fs.mkdirSync(path.dirname(EXPECTED), { recursive: true });
      fs.writeFileSync(EXPECTED, `${JSON.stringify(got, null, 1)}\n`);
    }
    const want = JSON.parse(fs.readFileSync(EXPECTED, 'utf8'));
    // the fixture exercises what changed: retry budgets, a rightsize from the placement
    const rules = new Set(want.recommendations.items.map((i) => i.rule));
    assert.ok(rules.has('retry_budget'), `rules recorded: ${[...rules].join(' ')}`);
    assert.ok(
      want.recommendations.items.some((i) => i.action === 'rightsize'),
      'a rightsize recommendation is recorded',
    );
    same(got, want, '');
  });
});
