'use strict';
// Work report failure classes (issue 27, item 2): the optional `failures` of a record
// (units per class), every rejection, storage, the rollups, and the cost report's split of
// the cost of failed and retried work by class, checked to the cent with a worked example.
// GPUFLEET_WORKERS=0 (no SSH); host histories are dated in the past with psql as in
// costs.test.js.
//
// Worked example (pool "fl": $1.37 per host-hour, no other price):
//   host A, hour 10 of Monday 2025-01-06: 900 tokens completed, 40 failed, 60 retried
//   (N = 1,000 units), failures {oom: 30, hardware: 55} (85 of the 100 classified).
//   Cost of A over that hour: $1.37; failed + retried: 1.37 × 100 / 1,000 = $0.14.
//   oom 1.37 × 30 / 1,000 = 0.0411 → $0.04; hardware 1.37 × 55 / 1,000 = 0.07535 → $0.08;
//   not broken down 1.37 × 15 / 1,000 = 0.02055 → $0.02; coverage 85 / 100 = 85%.
//   Host B (same pool, same hour): 955 completed, 45 failed, no failures given.
//   Pool: $2.74 over N = 2,000 units, 145 failed or retried: $0.19865 → $0.20; oom
//   2.74 × 30 / 2,000 = $0.04, hardware 2.74 × 55 / 2,000 = 0.07535 → $0.08, not broken
//   down 2.74 × 60 / 2,000 = 0.0822 → $0.08; coverage 85 / 145 = 58.62%.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const T0 = '2025-01-06T00:00:00Z'; // a Monday
const hour = (h) => new Date(Date.parse(T0) + h * 3600e3).toISOString().replace('.000Z', 'Z');

let srv;
let client;
let operator;
let viewer;
let pool;
let hostA; // the worked example, with failures
let hostB; // the same pool and hour, without failures
let hostR; // the rejections

function rec(host, h, overrides = {}) {
  return {
    host_id: host.id,
    window_start: hour(h),
    window_end: hour(h + 1),
    unit: 'tokens',
    completed: 900,
    failed: 40,
    retried: 60,
    busy_seconds: 3600,
    ...overrides,
  };
}
const post = (records) => client.request('POST', '/v1/work-reports', { token: operator, body: { records } });
const costs = async (q) => expectStatus(await client.request('GET', `/v1/costs?${q}`, { token: viewer }), 200);
const count = (host) =>
  Number(psql(srv.database.url, `SELECT count(*) FROM work_reports WHERE host_id = '${host.id}'`).trim());

before(async () => {
  srv = await startServer({
    name: 'work_report_failures',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  const admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pool = await fleet.createPool(client, admin, { name: `fl-${fleet.uniq()}`, price_per_hour: 1.37 });
  const host = (n) =>
    fleet.createHost(client, operator, {
      name: `fl-${n}-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  hostA = await host('a');
  hostB = await host('b');
  hostR = await host('r');
  psql(srv.database.url, `UPDATE host_state_history SET at = '${T0}' WHERE host_id IN ('${hostA.id}', '${hostB.id}')`);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('failures in work reports: rejections', () => {
  test('an unknown class answers 400 naming it; nothing is stored', async () => {
    const res = await post([rec(hostR, 300), rec(hostR, 301, { failures: { oom: 1, gpu: 2 } })]);
    const p = expectProblem(res, 400, 'unknown_field', 'records[1].failures.gpu');
    assert.match(p.detail, /gpu/);
    assert.equal(count(hostR), 0);
  });
  test('a count that is negative or not a number answers 400 naming it', async () => {
    for (const [failures, field] of [
      [{ oom: -1 }, 'records[0].failures.oom'],
      [{ timeout: '3' }, 'records[0].failures.timeout'],
      [{ data: true }, 'records[0].failures.data'],
      [{ hardware: [1] }, 'records[0].failures.hardware'],
      [{ preempted: null }, 'records[0].failures.preempted'],
    ]) {
      expectProblem(await post([rec(hostR, 302, { failures })]), 400, 'invalid_field', field);
    }
    assert.equal(count(hostR), 0);
  });
  test('failures that are not an object answer 400', async () => {
    for (const failures of [[1, 2], 5, 'oom', true]) {
      const p = expectProblem(await post([rec(hostR, 303, { failures })]), 400, 'invalid_field', 'records[0].failures');
      assert.match(p.detail, /object/);
    }
    assert.equal(count(hostR), 0);
  });
  test('an empty failures object answers 400', async () => {
    const p = expectProblem(
      await post([rec(hostR, 304, { failures: {} })]),
      400,
      'invalid_field',
      'records[0].failures',
    );
    assert.match(p.detail, /no class/);
  });
  test('classes adding up to more than failed + retried answer 400 naming the record and both sums', async () => {
    const res = await post([
      rec(hostR, 305, { failures: { oom: 100 } }),
      rec(hostR, 306, { failed: 3, retried: 4, failures: { timeout: 5, other: 2.5 } }),
    ]);
    const p = expectProblem(res, 400, 'invalid_field', 'records[1].failures');
    assert.match(p.detail, /7\.5 units/);
    assert.match(p.detail, /3 \+ 4 = 7\b/);
    assert.match(p.detail, /nothing was stored/);
    assert.equal(count(hostR), 0);
  });
  test('the sum exactly at failed + retried is accepted; a re-send with other failures is a conflict', async () => {
    const r = rec(hostR, 310, { failures: { oom: 0.1, hardware: 99.9 } });
    assert.deepEqual(expectStatus(await post([r]), 201), { accepted: 1, duplicates: 0 });
    assert.deepEqual(expectStatus(await post([r]), 200), { accepted: 0, duplicates: 1 });
    expectProblem(
      await post([{ ...r, failures: { oom: 0.2, hardware: 99.8 } }]),
      409,
      'work_report_conflict',
      'records[0]',
    );
    expectProblem(await post([{ ...r, failures: null }]), 409, 'work_report_conflict', 'records[0]');
    assert.equal(count(hostR), 1);
  });
});

describe('failures: stored, listed and rolled up', () => {
  test('the worked example is stored and listed with its failures; null failures mean none', async () => {
    const res = await post([
      rec(hostA, 10, { failures: { oom: 30, hardware: 55 } }),
      rec(hostB, 10, { completed: 955, failed: 45, retried: 0, failures: null }),
    ]);
    assert.deepEqual(expectStatus(res, 201), { accepted: 2, duplicates: 0 });
    const list = async (h) =>
      expectStatus(await client.request('GET', `/v1/work-reports?host_id=${h.id}`, { token: viewer }), 200).items;
    assert.deepEqual((await list(hostA))[0].failures, { oom: 30, hardware: 55 });
    assert.equal((await list(hostB))[0].failures, null);
  });
  test('the four rollups sum the classes, the reports that gave them and their failed + retried', () => {
    psql(srv.database.url, 'SELECT work_report_rollups_settle()'); // what a reader does first (0045)
    for (const t of ['work_report_hours', 'work_report_quarters', 'work_report_days', 'work_report_weeks']) {
      const row = psql(
        srv.database.url,
        `SELECT sum(failures_oom), sum(failures_hardware),
                sum(failures_timeout + failures_data + failures_preempted + failures_other),
                sum(failures_reports), sum(failures_units), sum(reports)
         FROM ${t} WHERE host_id IN ('${hostA.id}', '${hostB.id}')`,
      ).trim();
      assert.equal(row, '30|55|0|1|100|2', t);
    }
  });
});

describe('the cost report splits the cost of failed and retried work by class', () => {
  test('one host: $0.14 of $1.37 went to failed and retried work, $0.08 of it to hardware', async () => {
    const body = await costs(`from=${hour(10)}&to=${hour(11)}&group_by=host`);
    const g = body.items.find((i) => i.id === hostA.id);
    assert.equal(g.total, 1.37);
    assert.equal(g.failed_retried.amount, 0.14);
    const f = g.failures;
    assert.equal(f.reports, 1);
    assert.equal(f.of_reports, 1);
    assert.equal(f.units, 100);
    assert.equal(f.of_units, 100);
    assert.equal(f.covered_share, 0.85);
    assert.deepEqual(f.counts, { oom: 30, timeout: 0, data: 0, hardware: 55, preempted: 0, other: 0 });
    assert.equal(f.share.hardware, 0.6471);
    assert.equal(f.share.oom, 0.3529);
    assert.deepEqual(f.cost, {
      oom: 0.04,
      timeout: 0,
      data: 0,
      hardware: 0.08,
      preempted: 0,
      other: 0,
      not_broken_down: 0.02,
    });
    assert.equal(f.dominant, 'hardware');
    assert.match(f.note, /85% of the failed and retried units \(1 of 1 reports\); the rest/);
  });
  test('a report without failures adds nothing to the classes: its part is not broken down', async () => {
    const body = await costs(`from=${hour(10)}&to=${hour(11)}&group_by=pool`);
    const g = body.items.find((i) => i.id === pool.id);
    assert.equal(g.total, 2.74);
    assert.equal(g.failed_retried.amount, 0.2);
    const f = g.failures;
    assert.equal(f.reports, 1);
    assert.equal(f.of_reports, 2);
    assert.equal(f.units, 100);
    assert.equal(f.of_units, 145);
    assert.equal(f.covered_share, 0.5862);
    assert.deepEqual(f.cost, {
      oom: 0.04,
      timeout: 0,
      data: 0,
      hardware: 0.08,
      preempted: 0,
      other: 0,
      not_broken_down: 0.08,
    });
  });
  test('over a whole week (the week rollup) the same classes are read', async () => {
    const body = await costs(`from=${hour(0)}&to=${hour(7 * 24)}&group_by=pool`);
    const f = body.items.find((i) => i.id === pool.id).failures;
    assert.equal(f.counts.hardware, 55);
    assert.equal(f.reports, 1);
    assert.equal(f.of_units, 145);
  });
  test('reports without failures: the split by class is unknown', async () => {
    const body = await costs(`from=${hour(10)}&to=${hour(11)}&group_by=host`);
    const f = body.items.find((i) => i.id === hostB.id).failures;
    assert.equal(f.reports, 0);
    assert.equal(f.counts, null);
    assert.equal(f.share, null);
    assert.equal(f.cost, null);
    assert.equal(f.dominant, null);
    assert.match(f.note, /unknown/);
  });
});
