'use strict';
// Retry budgets (issue 27, item 2) and repeated loads (item 3): the `retry_budget_pct` of
// pools and briefs (validation), the `investigate` recommendations with rules
// `retry_budget` and `repeated_loads`, checked to the cent. GPUFLEET_WORKERS=0; every host
// is registered at T0 (its state history moved there with psql) and the recommendations
// are asked for at a fixed AT, as in recommend.test.js. Responses are validated against
// the OpenAPI document.
//
// Retry budgets (the day [AT-24h, AT); every host held all day):
//   pool RB ($1/h, budget 5%): h1 800 completed, 100 failed, 100 retried, failures
//     {hardware: 150, oom: 20}; h2 950 completed, 50 failed, failures {hardware: 10,
//     timeout: 40}. Spend $48, N = 2,000 units, 250 failed or retried: 48 × 250 / 2,000 =
//     $6.00 = 12.5% > 5% → investigate. Classified 220 units: hardware 160 (48 × 160 /
//     2,000 = $3.84), oom 20 ($0.48), timeout 40 ($0.96), not broken down 30 ($0.72).
//     Dominant hardware, 160 / 250 = 64% of the failure cost; h1 carries 150 / 160 =
//     93.75% of it → the target is h1, the evidence points at its health history.
//   pool EQ ($1/h, budget 12.5%): the same two reports: exactly at the budget → nothing.
//   pool NB ($1/h, no budget): the same → nothing for the pool. Its host h5 serves brief
//     BR (budget 10%): 700 completed, 300 failed, failures {oom: 200}: $24 spent, 24 ×
//     300 / 1,000 = $7.20 = 30% > 10% → investigate the brief: dominant oom, 200 / 300 =
//     66.67% of the failure cost, target {brief BR, pool NB}, no host.
// Repeated loads (the quarters from AT-24h): pool LP ($2/h, egress $0.09/GB): host L
//   reports brief BL in 3 quarters, each 5 GB moved, phases {load: 900, compute: 2700}:
//   load in 3 buckets with 5 GB per bucket → investigate. data movement 15 GB × 0.09 =
//   $1.35; L's day cost 48 + 1.35 = $49.35, load is 2,700 / 10,800 = 25% of its phase time,
//   all busy time covered: $12.3375 → $12.34; cost $13.69. Host L2 loads in 2 quarters
//   only → nothing; L3 too, with reports in two units in each (a bucket counts once).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const T0 = '2025-03-01T00:00:00Z';
const AT_MS = Date.parse('2025-03-10T12:00:00Z');
const AT = '2025-03-10T12:00:00Z';
const at = (h) => new Date(AT_MS + h * 3600e3).toISOString().replace('.000Z', 'Z');

let srv;
let client;
let admin;
let operator;
let viewer;
const P = {};
const H = {};
const B = {};

const briefBody = (name, o = {}) => ({
  name: `${name}-${fleet.uniq()}`,
  kind: 'inference_interactive',
  model: { name: 'acme/chat', parameter_count: 7e9, precision: 'bf16' },
  load: { concurrency: 1 },
  targets: [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }],
  ...o,
});

function rec(host, from, o = {}) {
  return {
    host_id: host.id,
    window_start: at(from),
    window_end: at(from + 1),
    unit: 'tokens',
    completed: 1000,
    failed: 0,
    retried: 0,
    busy_seconds: 3600,
    ...o,
  };
}

const recs = async () =>
  expectStatus(await client.request('GET', `/v1/recommendations?at=${AT}`, { token: viewer }), 200).items;
const rule = (items, r) => items.filter((i) => i.rule === r);

before(async () => {
  srv = await startServer({
    name: 'recommend_retry',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  P.RB = await fleet.createPool(client, admin, { price_per_hour: 1, retry_budget_pct: 5 });
  P.EQ = await fleet.createPool(client, admin, { price_per_hour: 1, retry_budget_pct: 12.5 });
  P.NB = await fleet.createPool(client, admin, { price_per_hour: 1 });
  P.LP = await fleet.createPool(client, admin, { price_per_hour: 2, egress_price_per_gb: 0.09 });
  for (const [n, pool] of [
    ['h1', P.RB],
    ['h2', P.RB],
    ['h3', P.EQ],
    ['h4', P.EQ],
    ['h5', P.NB],
    ['h6', P.NB],
    ['L', P.LP],
    ['L2', P.LP],
    ['L3', P.LP],
  ]) {
    H[n] = await fleet.createHost(client, operator, {
      name: `rr-${n.toLowerCase()}-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  }
  B.BR = expectStatus(
    await client.request('POST', '/v1/briefs', { token: operator, body: briefBody('br', { retry_budget_pct: 10 }) }),
    201,
  );
  B.BL = expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body: briefBody('bl') }), 201);
  const ids = Object.values(H)
    .map((h) => `'${h.id}'`)
    .join(',');
  psql(srv.database.url, `UPDATE host_state_history SET at = '${T0}' WHERE host_id IN (${ids})`);
  const a = { completed: 800, failed: 100, retried: 100, failures: { hardware: 150, oom: 20 } };
  const b = { completed: 950, failed: 50, failures: { hardware: 10, timeout: 40 } };
  const load = { bytes_moved: 5e9, brief_id: B.BL.id, phases: { load: 900, compute: 2700 } };
  const res = await client.request('POST', '/v1/work-reports', {
    token: operator,
    body: {
      records: [
        rec(H.h1, -2, a),
        rec(H.h2, -2, b),
        rec(H.h3, -2, a),
        rec(H.h4, -2, b),
        rec(H.h6, -2, b),
        rec(H.h5, -2, { completed: 700, failed: 300, brief_id: B.BR.id, failures: { oom: 200 } }),
        rec(H.L, -23, load),
        rec(H.L, -17, load),
        rec(H.L, -11, load),
        rec(H.L2, -23, load),
        rec(H.L2, -17, load),
        rec(H.L3, -23, load),
        rec(H.L3, -17, load),
        rec(H.L3, -23, { ...load, unit: 'requests' }),
        rec(H.L3, -17, { ...load, unit: 'requests' }),
      ],
    },
  });
  expectStatus(res, 201);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('retry_budget_pct is validated on pools and briefs', () => {
  test('0, over 100 and a string answer 400 naming the field; 100 is accepted and stored', async () => {
    for (const v of [0, -1, 100.5, '5']) {
      const res = await client.request('POST', '/v1/pools', {
        token: admin,
        body: fleet.poolBody({ retry_budget_pct: v }),
      });
      expectProblem(res, 400, 'invalid_field', 'retry_budget_pct');
      const rb = await client.request('POST', '/v1/briefs', {
        token: operator,
        body: briefBody('bad', { retry_budget_pct: v }),
      });
      expectProblem(rb, 400, 'invalid_field', 'retry_budget_pct');
    }
    const pool = await fleet.createPool(client, admin, { retry_budget_pct: 100 });
    assert.equal(pool.retry_budget_pct, 100);
    const got = expectStatus(await client.request('GET', `/v1/briefs/${B.BR.id}`, { token: viewer }), 200);
    assert.equal(got.retry_budget_pct, 10);
  });
});

describe('investigate: retry_budget', () => {
  test('over budget with hardware failures on one host: the host is the target, with its health history', async () => {
    const items = rule(await recs(), 'retry_budget');
    const mine = items.filter((i) => i.target.pool_id === P.RB.id);
    assert.equal(mine.length, 1);
    const r = mine[0];
    assert.equal(r.action, 'investigate');
    assert.deepEqual(r.target, { host_ids: [H.h1.id], pool_id: P.RB.id, brief_id: null });
    assert.equal(r.project.name, 'default');
    assert.match(r.reason, /12\.5% of this pool's spend over the day \(\$6\.00 of \$48\.00\)/);
    assert.match(r.reason, /retry budget of 5%/);
    assert.match(r.reason, /dominant failure class is hardware, 64% of the failure cost/);
    assert.match(r.reason, new RegExp(`host ${H.h1.id} carries 94% of the hardware failures`));
    const e = r.evidence;
    assert.equal(e.retry_budget_pct, 5);
    assert.equal(e.spent_pct, 12.5);
    assert.equal(e.total, 48);
    assert.equal(e.failed_retried_cost, 6);
    assert.equal(e.dominant_class, 'hardware');
    assert.equal(e.dominant_share_of_failure_cost, 0.64);
    assert.equal(e.failed_retried_units, 250);
    assert.equal(e.classified_units, 220);
    assert.deepEqual(e.cost_by_class, {
      oom: 0.48,
      timeout: 0.96,
      data: 0,
      hardware: 3.84,
      preempted: 0,
      other: 0,
      not_broken_down: 0.72,
    });
    assert.equal(e.hardware_host.host_id, H.h1.id);
    assert.equal(e.hardware_host.share, 0.9375);
    assert.equal(e.hardware_host.health_history, `/v1/hosts/${H.h1.id}/health`);
    // the path it points at answers
    expectStatus(await client.request('GET', e.hardware_host.health_history, { token: viewer }), 200);
  });
  test('exactly at the budget, or without a budget, a pool gets none', async () => {
    const items = rule(await recs(), 'retry_budget');
    assert.deepEqual(
      items.filter((i) => i.target.pool_id === P.EQ.id || (i.target.pool_id === P.NB.id && !i.target.brief_id)),
      [],
    );
  });
  test("a brief over its budget: the dominant class and its share, the brief and its host's pool as the target", async () => {
    const items = rule(await recs(), 'retry_budget').filter((i) => i.target.brief_id === B.BR.id);
    assert.equal(items.length, 1);
    const r = items[0];
    assert.deepEqual(r.target, { host_ids: [], pool_id: P.NB.id, brief_id: B.BR.id });
    assert.match(r.reason, /30% of this brief's spend over the day \(\$7\.20 of \$24\.00\)/);
    assert.match(r.reason, /dominant failure class is oom, 66\.67% of the failure cost/);
    assert.equal(r.evidence.dominant_share_of_failure_cost, 0.6667);
    assert.equal(r.evidence.cost_by_class.oom, 4.8);
    assert.equal(r.evidence.cost_by_class.not_broken_down, 2.4);
    assert.equal(r.evidence.hardware_host, undefined);
  });
});

describe('investigate: repeated_loads', () => {
  test('a host that loads in 3 buckets with 5 GB each: the bytes and the cost of moving them, to the cent', async () => {
    const items = rule(await recs(), 'repeated_loads');
    const mine = items.filter((i) => i.target.host_ids.includes(H.L.id));
    assert.equal(mine.length, 1);
    const r = mine[0];
    assert.equal(r.action, 'investigate');
    assert.deepEqual(r.target, { host_ids: [H.L.id], pool_id: P.LP.id, brief_id: B.BL.id });
    const e = r.evidence;
    assert.equal(e.load_buckets, 3);
    assert.equal(e.bytes_moved, 15e9);
    assert.equal(e.bytes_per_bucket, 5e9);
    assert.equal(e.load_seconds, 2700);
    assert.equal(e.egress_price_per_gb, 0.09);
    assert.equal(e.data_movement_cost, 1.35);
    assert.equal(e.load_phase_cost, 12.34);
    assert.equal(e.cost, 13.69);
    assert.match(r.reason, /3 buckets with 15 GB moved in them \(5 GB per bucket\), costing \$13\.69/);
  });
  test('loads in only 2 buckets are not repeated loads, even when each bucket has reports in two units', async () => {
    const items = rule(await recs(), 'repeated_loads');
    assert.deepEqual(
      items.filter((i) => i.target.host_ids.includes(H.L2.id) || i.target.host_ids.includes(H.L3.id)),
      [],
    );
  });
});
