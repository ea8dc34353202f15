'use strict';
// Work report phases (issue 26, item 3): the optional `phases` of a record (seconds per
// phase), every rejection, storage, the rollups, and the cost report's split by phase,
// checked to the cent with a worked example. GPUFLEET_WORKERS=0 (no SSH); host histories
// are dated in the past with psql as in costs.test.js.
//
// Worked example (pool "ph": $1.96 per host-hour, no other price, 2 GPUs per host):
//   host P, hour 10 of Monday 2025-01-06: 100,000 tokens, busy 3,600 s, phases
//   load 1,304 s, compute 2,000 s, write 296 s (Σ 3,600 s).
//   Cost of P over that hour: $1.96, i.e. 0.0196 per 1,000 tokens. Load is
//   1,304 / 3,600 = 36.22% of the phase time, so of 0.0196 per 1,000 tokens,
//   0.0196 × 0.36222 = 0.0071 went to loading the model ($0.71 of $1.96).
//   Host Q (same pool, same hour) reports 100,000 tokens, busy 2,400 s, no phases.
//   Pool: $3.92 for 200,000 tokens (0.0196 per 1,000 again); phases cover
//   3,600 / 6,000 = 60% of busy time: load 3.92 × 0.6 × 0.36222 = $0.85, compute
//   3.92 × 0.6 × 2000/3600 = $1.31, write 3.92 × 0.6 × 296/3600 = $0.19, not broken
//   down 3.92 × 0.4 = $1.57; load per 1,000 tokens 0.0196 × 0.6 × 0.36222 = 0.00426.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const T0 = '2025-01-06T00:00:00Z'; // a Monday
const hour = (h) => new Date(Date.parse(T0) + h * 3600e3).toISOString().replace('.000Z', 'Z');
const r4 = (x) => Math.round(x * 1e4) / 1e4;

let srv;
let client;
let operator;
let viewer;
let pool;
let hostP; // the worked example, with phases
let hostQ; // the same pool and hour, without phases
let hostR; // the rejections
let hostF; // facts.gpu_count 4 (the pool says 2)

function rec(host, h, overrides = {}) {
  return {
    host_id: host.id,
    window_start: hour(h),
    window_end: hour(h + 1),
    unit: 'tokens',
    completed: 100000,
    failed: 0,
    retried: 0,
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
    name: 'work_report_phases',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  const admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pool = await fleet.createPool(client, admin, { name: `ph-${fleet.uniq()}`, gpu_count: 2, price_per_hour: 1.96 });
  const host = (n) =>
    fleet.createHost(client, operator, {
      name: `ph-${n}-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  hostP = await host('p');
  hostQ = await host('q');
  hostR = await host('r');
  hostF = await host('f');
  const db = srv.database.url;
  psql(db, `UPDATE host_state_history SET at = '${T0}' WHERE host_id IN ('${hostP.id}', '${hostQ.id}')`);
  psql(db, `UPDATE hosts SET facts = '{"gpu_count": 4}'::jsonb WHERE id = '${hostF.id}'`);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('phases in work reports: rejections', () => {
  test('an unknown phase answers 400 naming it; nothing is stored', async () => {
    const res = await post([rec(hostR, 300), rec(hostR, 301, { phases: { load: 10, tokenize: 5 } })]);
    const p = expectProblem(res, 400, 'unknown_field', 'records[1].phases.tokenize');
    assert.match(p.detail, /tokenize/);
    assert.equal(count(hostR), 0);
  });
  test('a phase that is negative, not a number or null-like answers 400 naming it', async () => {
    for (const [phases, field] of [
      [{ load: -1 }, 'records[0].phases.load'],
      [{ compute: '12' }, 'records[0].phases.compute'],
      [{ write: true }, 'records[0].phases.write'],
      [{ queue: [1] }, 'records[0].phases.queue'],
      [{ communication: 1e12 }, 'records[0].phases.communication'],
    ]) {
      expectProblem(await post([rec(hostR, 302, { phases })]), 400, 'invalid_field', field);
    }
    assert.equal(count(hostR), 0);
  });
  test('phases that are not an object answer 400', async () => {
    for (const phases of [[1, 2], 5, 'load', true]) {
      const p = expectProblem(await post([rec(hostR, 303, { phases })]), 400, 'invalid_field', 'records[0].phases');
      assert.match(p.detail, /object/);
    }
  });
  test('an empty phases object answers 400 (say nothing rather than nothing)', async () => {
    const p = expectProblem(await post([rec(hostR, 304, { phases: {} })]), 400, 'invalid_field', 'records[0].phases');
    assert.match(p.detail, /no phase/);
    assert.equal(count(hostR), 0);
  });
  test('phases adding up to more than the window × the host GPUs answer 400 with the sums', async () => {
    // pool gpu_count 2: at most 7,200 s in a 1-hour window
    const res = await post([
      rec(hostR, 305, { phases: { compute: 7200 } }),
      rec(hostR, 306, { phases: { load: 3000, compute: 4000, write: 300 } }),
      rec(hostR, 307, { phases: { compute: 9000 } }),
    ]);
    const p = expectProblem(res, 400, 'invalid_field', 'records[1].phases');
    assert.match(p.detail, /7300 s/);
    assert.match(p.detail, /3600 s/);
    assert.match(p.detail, /2 GPU/);
    assert.match(p.detail, /7200 s/);
    assert.match(p.detail, /and so do other records/);
    assert.equal(count(hostR), 0);
  });
  test('a record over the limit after records within their window is still found (records[2])', async () => {
    // records within their window need no look at the host's GPUs; the batch is checked
    // whole as soon as one record's phases exceed its window
    const p = expectProblem(
      await post([
        rec(hostR, 311, { phases: { compute: 3000 } }),
        rec(hostR, 312, { phases: { load: 3600 } }),
        rec(hostR, 313, { phases: { compute: 8000 } }),
      ]),
      400,
      'invalid_field',
      'records[2].phases',
    );
    assert.match(p.detail, /8000 s/);
    assert.equal(count(hostR), 0);
  });
  test('the host GPU count of its facts wins over the pool', async () => {
    // facts.gpu_count 4: 14,000 s fit in an hour, 14,500 do not
    expectStatus(await post([rec(hostF, 308, { phases: { compute: 14000 } })]), 201);
    const p = expectProblem(
      await post([rec(hostF, 309, { phases: { compute: 14500 } })]),
      400,
      'invalid_field',
      'records[0].phases',
    );
    assert.match(p.detail, /4 GPU/);
  });
  test('the sum exactly at the limit is accepted (float tolerance); a re-send with other phases is a conflict', async () => {
    const r = rec(hostR, 310, { phases: { load: 0.1, compute: 7199.9 } });
    assert.deepEqual(expectStatus(await post([r]), 201), { accepted: 1, duplicates: 0 });
    assert.deepEqual(expectStatus(await post([r]), 200), { accepted: 0, duplicates: 1 });
    expectProblem(
      await post([{ ...r, phases: { load: 0.2, compute: 7199.8 } }]),
      409,
      'work_report_conflict',
      'records[0]',
    );
    expectProblem(await post([{ ...r, phases: null }]), 409, 'work_report_conflict', 'records[0]');
  });
});

describe('phases: stored, listed and rolled up', () => {
  test('the worked example is stored and listed with its phases; null phases mean none', async () => {
    const res = await post([
      rec(hostP, 10, { phases: { load: 1304, compute: 2000, write: 296 } }),
      rec(hostQ, 10, { busy_seconds: 2400, phases: null }),
    ]);
    assert.deepEqual(expectStatus(res, 201), { accepted: 2, duplicates: 0 });
    const list = async (h) =>
      expectStatus(await client.request('GET', `/v1/work-reports?host_id=${h.id}`, { token: viewer }), 200).items;
    assert.deepEqual((await list(hostP))[0].phases, { load: 1304, compute: 2000, write: 296 });
    assert.equal((await list(hostQ))[0].phases, null);
  });
  test('the four rollups sum the phases, the reports that gave them and their busy time', () => {
    psql(srv.database.url, 'SELECT work_report_rollups_settle()'); // what a reader does first (0045)
    for (const t of ['work_report_hours', 'work_report_quarters', 'work_report_days', 'work_report_weeks']) {
      const row = psql(
        srv.database.url,
        `SELECT sum(phase_load_seconds), sum(phase_compute_seconds), sum(phase_write_seconds),
                sum(phase_queue_seconds + phase_preprocess_seconds + phase_communication_seconds),
                sum(phase_reports), sum(phase_busy_seconds), sum(reports)
         FROM ${t} WHERE host_id IN ('${hostP.id}', '${hostQ.id}')`,
      ).trim();
      assert.equal(row, '1304|2000|296|0|1|3600|2', t);
    }
  });
});

describe('the cost report splits cost per unit by phase', () => {
  test('one host, all of its busy time broken down: of 0.0196 per 1,000 tokens, 0.0071 went to loading', async () => {
    const body = await costs(`from=${hour(10)}&to=${hour(11)}&group_by=host`);
    const g = body.items.find((i) => i.id === hostP.id);
    assert.equal(g.total, 1.96);
    assert.equal(r4(g.cost_per_completed_unit.tokens.per_1000), 0.0196);
    const ph = g.phases;
    assert.equal(ph.reports, 1);
    assert.equal(ph.of_reports, 1);
    assert.equal(ph.covered_busy_share, 1);
    assert.deepEqual(ph.seconds, { queue: 0, load: 1304, preprocess: 0, compute: 2000, communication: 0, write: 296 });
    assert.equal(ph.share.load, 0.3622);
    assert.deepEqual(ph.cost, {
      queue: 0,
      load: 0.71,
      preprocess: 0,
      compute: 1.09,
      communication: 0,
      write: 0.16,
      not_broken_down: 0,
    });
    const k = ph.cost_per_completed_unit.tokens.per_1000;
    assert.equal(r4(k.load), 0.0071);
    assert.equal(r4(k.compute), 0.0109);
    assert.equal(k.not_broken_down, 0);
    assert.ok(Math.abs(k.load + k.compute + k.write - 0.0196) < 1e-12);
    assert.match(ph.note, /100% of busy time \(1 of 1 reports\)/);
  });
  test('a report without phases contributes nothing: its part is not broken down and the coverage is stated', async () => {
    const body = await costs(`from=${hour(10)}&to=${hour(11)}&group_by=pool`);
    const g = body.items.find((i) => i.id === pool.id);
    assert.equal(g.total, 3.92);
    const ph = g.phases;
    assert.equal(ph.reports, 1);
    assert.equal(ph.of_reports, 2);
    assert.equal(ph.covered_busy_share, 0.6);
    assert.equal(ph.busy_hours, 1);
    // seconds and shares are those of P alone (Q gave none)
    assert.equal(ph.seconds.load, 1304);
    assert.equal(ph.share.load, 0.3622);
    assert.deepEqual(ph.cost, {
      queue: 0,
      load: 0.85,
      preprocess: 0,
      compute: 1.31,
      communication: 0,
      write: 0.19,
      not_broken_down: 1.57,
    });
    const k = ph.cost_per_completed_unit.tokens.per_1000;
    assert.equal(r4(g.cost_per_completed_unit.tokens.per_1000), 0.0196);
    assert.equal(Math.round(k.load * 1e5) / 1e5, 0.00426);
    assert.equal(r4(k.not_broken_down), 0.0078);
    assert.match(ph.note, /60% of busy time \(1 of 2 reports\); the rest of the cost is not broken down/);
  });
  test('over a whole week (the week rollup) the same phase seconds are read', async () => {
    const body = await costs(`from=${hour(0)}&to=${hour(7 * 24)}&group_by=pool`);
    const ph = body.items.find((i) => i.id === pool.id).phases;
    assert.equal(ph.seconds.load, 1304);
    assert.equal(ph.reports, 1);
    assert.equal(ph.of_reports, 2);
    assert.equal(ph.covered_busy_share, 0.6);
  });
  test('reports without phases: the breakdown is unknown, nothing is split', async () => {
    const body = await costs(`from=${hour(10)}&to=${hour(11)}&group_by=host`);
    const ph = body.items.find((i) => i.id === hostQ.id).phases;
    assert.equal(ph.reports, 0);
    assert.equal(ph.of_reports, 1);
    assert.equal(ph.seconds, null);
    assert.equal(ph.share, null);
    assert.equal(ph.cost, null);
    assert.equal(ph.cost_per_completed_unit, null);
    assert.match(ph.note, /unknown/);
  });
});
