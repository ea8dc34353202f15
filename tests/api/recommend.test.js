'use strict';
// Recommendations (issue 6 part 4), end to end with GPUFLEET_WORKERS=0. Time is never
// waited for: every host is registered at T0 (the state history is moved there with
// psql), reports carry explicit windows, and the recommendations are asked for `at` a
// fixed time AT. Every response is validated against the OpenAPI document.
//
// The idle rule needs both signals (issue 13): `idle`, `reuse` and the host of the last
// test also report nothing done up to AT (their reports keep arriving), and have GPU
// samples at 1% or less over [AT-3h, AT), stored raw and rolled up with SQL (monitor_store
// refuses samples older than 30 days, and AT is fixed in 2025).
//
// Hosts (pool P: $4/h, idle window 1800 s, 8 × h100_sxm; pool Q: $2/h, window 7200 s):
//   idle   P  useful report [AT-2h, AT-1h), nothing done [AT-1h, AT): idle 3600 s > 1800,
//             30 samples (100% of the window) at most 1% → stop
//   idleq  Q  the same report: idle 3600 s ≤ 7200 → nothing
//   none   P  no report → no_usage_data, never stopped
//   job    P  idle like `idle`, but a running job → nothing
//   s1,s2  P  serve brief B1 in the last hour, busy 360 s and 720 s: utilization
//             1080 / 7200 = 0.15 < 0.30 → scale_down s1 (the least utilized)
//   up     P  serves brief B2 (p95 TTFT target 500 ms) with p95 600 ms → scale_up B2
//   fail   P  900 completed, 100 failed in the last hour: share 0.1 > 5% → investigate
//   cost   P  1000 tokens the previous day, 700 this day, both days held 24 h at $4/h:
//             96 / 700 against 96 / 1000, +42.86% → investigate cost_per_unit
//   reuse  P  accepted (gate run, state ready), useless reports [AT-3h, AT): idle
//             10800 s → stop, and reuse for B2 (scale_up) and B3 (no host serves it;
//             70B bf16 fits 8 H100s). B1 is served within its targets: no reuse.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer, psql, psqlUnguarded } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const T0 = '2025-03-01T00:00:00Z';
const AT_MS = Date.parse('2025-03-10T12:00:00Z');
const AT = '2025-03-10T12:00:00Z';
const at = (h) => new Date(AT_MS + h * 3600e3).toISOString().replace('.000Z', 'Z');
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let srv;
let client;
let viewer;
let reporter;
let P;
let Q;
const H = {};
const B = {};

function stableId(action, rule, hostIds, poolId, briefId) {
  const d = crypto
    .createHash('sha256')
    .update(`${action}|${rule}|${hostIds.join(',')}|${poolId || ''}|${briefId || ''}`)
    .digest();
  d[6] = (d[6] & 0x0f) | 0x50;
  d[8] = (d[8] & 0x3f) | 0x80;
  const x = d.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

function rec(host, from, to, o = {}) {
  return {
    host_id: host.id,
    window_start: at(from),
    window_end: at(to),
    unit: 'tokens',
    completed: 100,
    failed: 0,
    retried: 0,
    busy_seconds: 600,
    ...o,
  };
}

const briefBody = (name, params, targets) => ({
  name: `${name}-${fleet.uniq()}`,
  kind: 'inference_interactive',
  model: { name: 'acme/chat', parameter_count: params, precision: 'bf16' },
  load: { concurrency: 1 },
  targets,
});

/** GPU samples of host over [from, to) (whole hours): 8 GPUs sampled every 60 s at 0% and
 * 1% in turn (max 1, mean 0.5), stored raw as monitor_store would (its partitions made
 * first) and rolled up with the migrations' own gpu_samples_aggregate. */
function gpuSamples(host, from, to) {
  const rollup = (table, width) =>
    `INSERT INTO ${table} SELECT * FROM gpu_samples_aggregate('${width}', '${from}', '${to}') WHERE host_id = '${host.id}';`;
  psql(
    srv.database.url,
    `SELECT gpu_samples_partition(t) FROM generate_series('${from}'::timestamptz, '${to}'::timestamptz, interval '1 hour') t;` +
      ` INSERT INTO gpu_samples (at, host_id, gpu_uuid, util_gpu)` +
      ` SELECT t, '${host.id}', 'GPU-${host.id.slice(0, 8)}-' || g, (extract(epoch FROM t)::bigint / 60 % 2)::smallint` +
      ` FROM generate_series('${from}'::timestamptz, '${to}'::timestamptz - interval '1 minute', interval '1 minute') t, generate_series(0, 7) g;` +
      rollup('gpu_samples_5m', '5 minutes') +
      rollup('gpu_samples_1h', '1 hour'),
  );
}

const get = async (q = '', token = viewer) => client.request('GET', `/v1/recommendations${q}`, { token });
const recs = async (q = '') => expectStatus(await get(`?at=${AT}${q}`), 200);
const post = async (records) => client.request('POST', '/v1/work-reports', { token: reporter, body: { records } });
const key = (r) =>
  `${r.action}:${r.rule}:${r.target.host_ids.map((id) => Object.keys(H).find((k) => H[k].id === id)).join('+')}:${Object.keys(B).find((k) => B[k].id === r.target.brief_id) || '-'}`;

before(async () => {
  srv = await startServer({
    name: 'recommend',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  const admin = srv.token('admin');
  const operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  P = await fleet.createPool(client, admin, { price_per_hour: 4 });
  Q = await fleet.createPool(client, admin, { price_per_hour: 2, idle_stop_after_seconds: 7200 });
  reporter = srv.token('reporter', { args: ['--pool', P.name, '--pool', Q.name] }); // scoped to P and Q
  for (const [n, pool] of [
    ['idle', P],
    ['idleq', Q],
    ['none', P],
    ['job', P],
    ['s1', P],
    ['s2', P],
    ['up', P],
    ['fail', P],
    ['cost', P],
    ['reuse', P],
  ]) {
    H[n] = await fleet.createHost(client, operator, {
      name: `rec-${n}-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  }
  for (const [n, params, targets] of [
    ['b1', 7e9, [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }]],
    ['b2', 7e9, [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }]],
    ['b3', 70e9, [{ metric: 'tail_latency_ms', value: 2000, percentile: 'p99' }]],
  ]) {
    B[n] = expectStatus(
      await client.request('POST', '/v1/briefs', { token: operator, body: briefBody(n, params, targets) }),
      201,
    );
  }
  const db = srv.database.url;
  const ids = Object.values(H)
    .map((h) => `'${h.id}'`)
    .join(',');
  psql(db, `UPDATE host_state_history SET at = '${T0}' WHERE host_id IN (${ids})`);
  psql(
    db,
    `INSERT INTO jobs (kind, host_id, state, created_by) VALUES ('diagnostics', '${H.job.id}', 'running', 'test')`,
  );
  const run = psql(
    db,
    `INSERT INTO gate_runs (kind, host_id, pool_id, gate_version, verdict, reason, checks, started_at)` +
      ` VALUES ('gate', '${H.reuse.id}', '${P.id}', 1, 'accept', 'every check passed', '[]'::jsonb, '${T0}') RETURNING id;`,
  )
    .split('\n')
    .find((l) => UUID_RE.test(l.trim()))
    .trim();
  // (deferred triggers fire now: ALTER TABLE refuses a transaction with pending ones)
  psqlUnguarded(
    db,
    `SET CONSTRAINTS ALL IMMEDIATE; UPDATE hosts SET state = 'ready', accepted_gate_run_id = '${run}' WHERE id = '${H.reuse.id}'`,
  );
  for (const h of [H.idle, H.reuse]) gpuSamples(h, at(-3), AT);
  const nothing = { completed: 0, busy_seconds: 0 };
  const records = [
    rec(H.idle, -2, -1),
    rec(H.idle, -1, 0, nothing),
    rec(H.idleq, -2, -1),
    rec(H.job, -2, -1),
    rec(H.s1, -1, 0, { brief_id: B.b1.id, busy_seconds: 360 }),
    rec(H.s2, -1, 0, { brief_id: B.b1.id, busy_seconds: 720 }),
    rec(H.up, -1, 0, { brief_id: B.b2.id, busy_seconds: 1800, p95_latency_ms: 600, queue_delay_ms: 40 }),
    rec(H.fail, -1, 0, { completed: 900, failed: 100, busy_seconds: 1200 }),
    rec(H.cost, -25, -24, { completed: 1000 }),
    rec(H.cost, -1, 0, { completed: 700, busy_seconds: 700 }),
    rec(H.reuse, -3, -2, nothing),
    rec(H.reuse, -2, 0, nothing),
  ];
  expectStatus(await client.request('POST', '/v1/work-reports', { token: reporter, body: { records } }), 201);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('recommendations', () => {
  test('every rule, with its evidence', async () => {
    const body = await recs();
    assert.equal(body.at, '2025-03-10T12:00:00.000000Z');
    assert.equal(body.next_cursor, null);
    assert.deepEqual(body.items.map(key).sort(), [
      'investigate:cost_per_unit:cost:-',
      'investigate:failed_share:fail:-',
      'reuse:reuse:reuse:b2',
      'reuse:reuse:reuse:b3',
      'scale_down:scale_down:s1:b1',
      'scale_up:scale_up:up:b2',
      'stop:idle:idle:-',
      'stop:idle:reuse:-',
    ]);
    assert.deepEqual(body.no_usage_data, [
      {
        host_id: H.none.id,
        pool_id: P.id,
        project: { id: '00000000-0000-4000-8000-000000000001', name: 'default' },
        state: 'registered',
        reason: 'no_usage_data',
      },
    ]);
    const by = Object.fromEntries(body.items.map((r) => [key(r), r]));
    for (const r of body.items) assert.match(r.id, UUID_RE);

    const stop = by['stop:idle:idle:-'];
    assert.equal(stop.id, stableId('stop', 'idle', [H.idle.id], P.id, null));
    assert.deepEqual(stop.target, { host_ids: [H.idle.id], pool_id: P.id, brief_id: null });
    assert.deepEqual(stop.evidence, {
      idle_seconds: 3600,
      idle_stop_after_seconds: 1800,
      running_job: false,
      price_per_hour: 4,
      work_reports: {
        reports: 2,
        last_report_end: '2025-03-10T12:00:00.000000Z',
        last_report_age_seconds: 0,
        last_useful_end: '2025-03-10T11:00:00.000000Z',
        idle_seconds: 3600,
      },
      gpu_utilization: {
        samples: 30,
        unread_samples: 0,
        interval_seconds: 60,
        window_seconds: 1800,
        coverage_pct: 100,
        required_coverage_pct: 90,
        max_pct: 1,
        mean_pct: 0.5,
        threshold_pct: 5,
      },
    });
    assert.equal(stop.estimated_savings_per_hour, 4);
    assert.equal(
      stop.reason,
      "no useful work for 3600 s, more than the pool's idle window of 1800 s; GPU utilization at most 1% (under 5%) over 100% of the window; no running job",
    );
    assert.equal(by['stop:idle:reuse:-'].evidence.idle_seconds, 10800);
    assert.equal(by['stop:idle:reuse:-'].evidence.work_reports.last_useful_end, null);

    const down = by['scale_down:scale_down:s1:b1'];
    assert.deepEqual(down.target, { host_ids: [H.s1.id], pool_id: P.id, brief_id: B.b1.id });
    assert.deepEqual(down.evidence, {
      utilization: 0.15,
      hosts: 2,
      host_utilization: { [H.s1.id]: 0.1, [H.s2.id]: 0.2 },
      price_per_hour: 4,
      threshold: 0.3,
    });
    assert.equal(down.estimated_savings_per_hour, 4);
    assert.equal(down.id, stableId('scale_down', 'scale_down', [H.s1.id], P.id, B.b1.id));

    const up = by['scale_up:scale_up:up:b2'];
    assert.deepEqual(up.target, { host_ids: [H.up.id], pool_id: P.id, brief_id: B.b2.id });
    assert.deepEqual(up.evidence, {
      p95_latency_ms: 600,
      latency_target_ms: 500,
      latency_metric: 'time_to_first_token_ms',
      utilization: 0.5,
      hosts: [H.up.id],
    });
    assert.equal(up.estimated_savings_per_hour, 0);

    assert.deepEqual(by['investigate:failed_share:fail:-'].evidence, { failed_retried_share: 0.1, threshold: 0.05 });
    const cost = by['investigate:cost_per_unit:cost:-'].evidence.units.tokens;
    assert.equal(cost.previous_cost_per_unit, 96 / 1000);
    assert.ok(Math.abs(cost.cost_per_unit - 96 / 700) < 1e-12);
    assert.equal(cost.change, 0.4286);

    const r2 = by['reuse:reuse:reuse:b2'];
    assert.deepEqual(r2.target, { host_ids: [H.reuse.id], pool_id: P.id, brief_id: B.b2.id });
    assert.equal(r2.evidence.need, 'scale_up');
    assert.equal(r2.evidence.gpus_needed, 1);
    assert.equal(r2.evidence.gpu_count, 8);
    assert.equal(r2.evidence.gpu_model, 'h100_sxm');
    assert.equal(r2.estimated_savings_per_hour, 0);
    const r3 = by['reuse:reuse:reuse:b3'];
    assert.equal(r3.evidence.need, 'no_host');
    assert.ok(r3.evidence.gpus_needed >= 2 && r3.evidence.gpus_needed <= 8);
  });

  test('ids are stable across calls', async () => {
    const a = (await recs()).items.map((r) => r.id).sort();
    const b = (await recs()).items.map((r) => r.id).sort();
    assert.deepEqual(a, b);
    assert.equal(new Set(a).size, a.length);
  });

  test('the idle window moves with `at`', async () => {
    // Half an hour earlier `idle` has been idle exactly 1800 s: not more than the window.
    const early = expectStatus(await get(`?at=${at(-0.5)}&action=stop`), 200);
    assert.deepEqual(
      early.items.map((r) => r.target.host_ids[0]),
      [H.reuse.id],
    );
  });

  test('filters', async () => {
    assert.deepEqual((await recs('&action=stop')).items.map(key).sort(), ['stop:idle:idle:-', 'stop:idle:reuse:-']);
    assert.deepEqual((await recs(`&brief_id=${B.b2.id}`)).items.map(key).sort(), [
      'reuse:reuse:reuse:b2',
      'scale_up:scale_up:up:b2',
    ]);
    const q = await recs(`&pool_id=${Q.id}`);
    assert.deepEqual(q.items, []);
    assert.deepEqual(q.no_usage_data, []);
    assert.equal((await recs(`&pool_id=${P.id}`)).items.length, 8);
    assert.deepEqual((await recs(`&brief_id=${B.b1.id}`)).no_usage_data, []);
    assert.deepEqual((await recs('&action=reuse')).no_usage_data, []);
    assert.equal((await recs('&action=stop')).no_usage_data.length, 1);
    expectProblem(await get('?action=delete'), 400, 'invalid_parameter', 'action');
    expectProblem(await get('?pool_id=nope'), 400, 'invalid_parameter', 'pool_id');
    expectProblem(await get('?brief_id=nope'), 400, 'invalid_parameter', 'brief_id');
    expectProblem(await get('?at=yesterday'), 400, 'invalid_parameter', 'at');
    expectProblem(await get('?colour=red'), 400, 'unknown_parameter');
    expectProblem(await get('?limit=5'), 400, 'unknown_parameter');
  });

  test("each pool's thresholds", async () => {
    const admin = srv.token('admin');
    const put = async (thresholds) => {
      const res = await client.request('GET', `/v1/pools/${P.id}`, { token: admin });
      const cur = expectStatus(res, 200);
      const body = { ...cur };
      for (const k of ['id', 'revision', 'gate_version', 'created_at', 'updated_at', 'created_by']) delete body[k];
      if (thresholds === undefined) delete body.recommendation_thresholds;
      else body.recommendation_thresholds = thresholds;
      return client.request('PUT', `/v1/pools/${P.id}`, {
        token: admin,
        body,
        headers: { 'If-Match': res.headers.get('etag') },
      });
    };
    // Stricter where the defaults fired: s1/s2 at 0.15 are not under 0.1, the failed share
    // 0.1 is not over 0.2, +42.86% is not over +50%; the latency rule has no threshold.
    const strict = expectStatus(
      await put({ scale_down_utilization: 0.1, investigate_failed_share: 0.2, investigate_cost_increase: 0.5 }),
      200,
    );
    assert.deepEqual(strict.recommendation_thresholds, {
      scale_down_utilization: 0.1,
      investigate_failed_share: 0.2,
      investigate_cost_increase: 0.5,
      scale_up_utilization: 0.85,
    });
    assert.deepEqual((await recs()).items.map(key).sort(), [
      'reuse:reuse:reuse:b2',
      'reuse:reuse:reuse:b3',
      'scale_up:scale_up:up:b2',
      'stop:idle:idle:-',
      'stop:idle:reuse:-',
    ]);
    // Looser: up at 0.5 utilization is over 0.4; s1/s2 at 0.15 are under 0.2; fail at 0.1 over 0.09.
    expectStatus(
      await put({ scale_up_utilization: 0.4, scale_down_utilization: 0.2, investigate_failed_share: 0.09 }),
      200,
    );
    const loose = await recs();
    assert.deepEqual(loose.items.map(key).sort(), [
      'investigate:cost_per_unit:cost:-',
      'investigate:failed_share:fail:-',
      'reuse:reuse:reuse:b2',
      'reuse:reuse:reuse:b3',
      'scale_down:scale_down:s1:b1',
      'scale_up:scale_up:up:b2',
      'stop:idle:idle:-',
      'stop:idle:reuse:-',
    ]);
    const up = loose.items.find((r) => r.action === 'scale_up');
    assert.equal(up.evidence.threshold, 0.4);
    assert.equal(
      up.reason,
      "utilization 0.5 over the pool's 0.4; p95 latency 600 ms over the time_to_first_token_ms target 500",
    );
    assert.equal(loose.items.find((r) => r.rule === 'failed_share').evidence.threshold, 0.09);
    // Rejections name the member; the stored pool is unchanged by them.
    expectProblem(
      await put({ scale_up_utilization: 0.3, scale_down_utilization: 0.3 }),
      400,
      'invalid_field',
      'recommendation_thresholds.scale_down_utilization',
    );
    expectProblem(
      await put({ scale_up_utilization: 0.2 }),
      400,
      'invalid_field',
      'recommendation_thresholds.scale_up_utilization',
    );
    expectProblem(
      await put({ scale_up_utilization: 0 }),
      400,
      'invalid_field',
      'recommendation_thresholds.scale_up_utilization',
    );
    expectProblem(
      await put({ scale_up_utilization: 1.5 }),
      400,
      'invalid_field',
      'recommendation_thresholds.scale_up_utilization',
    );
    expectProblem(
      await put({ investigate_failed_share: -0.1 }),
      400,
      'invalid_field',
      'recommendation_thresholds.investigate_failed_share',
    );
    expectProblem(
      await put({ investigate_cost_increase: 0 }),
      400,
      'invalid_field',
      'recommendation_thresholds.investigate_cost_increase',
    );
    expectProblem(
      await put({ investigate_cost_increase: '25%' }),
      400,
      'invalid_field',
      'recommendation_thresholds.investigate_cost_increase',
    );
    expectProblem(await put({ idle: 5 }), 400, 'unknown_field', 'recommendation_thresholds.idle');
    expectProblem(await put([0.5]), 400, 'invalid_field', 'recommendation_thresholds');
    assert.equal(
      expectStatus(await client.request('GET', `/v1/pools/${P.id}`, { token: admin }), 200).recommendation_thresholds
        .scale_up_utilization,
      0.4,
    );
    // Omitted: the defaults again.
    const back = expectStatus(await put(undefined), 200);
    assert.deepEqual(back.recommendation_thresholds, {
      scale_up_utilization: 0.85,
      scale_down_utilization: 0.3,
      investigate_failed_share: 0.05,
      investigate_cost_increase: 0.25,
    });
    assert.equal((await recs()).items.length, 8);
  });

  test('the reporter role reads no recommendations', async () => {
    expectProblem(await get('', reporter), 403, 'insufficient_role');
  });

  test('windows at any minute: 10-minute reports, read from the hour rollup and the reports', async () => {
    // A host in its own pool R ($3/h) reports every 10 minutes over [AT-50h, AT). At
    // `at` = AT - 17 min every window edge falls inside an hour, so each window is made
    // of rollup hours and of reports read one by one. The figures are computed here
    // from the records whose window_start lies in each window.
    const admin = srv.token('admin');
    const cred = expectStatus(
      await client.request('GET', `/v1/hosts/${H.idle.id}`, { token: viewer }),
      200,
    ).credential_id;
    const R = await fleet.createPool(client, admin, { price_per_hour: 3 });
    reporter = srv.token('reporter', { args: ['--pool', P.name, '--pool', Q.name, '--pool', R.name] });
    const h = await fleet.createHost(client, srv.token('operator'), {
      name: `rec-fine-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred,
      pool_id: R.id,
    });
    psql(srv.database.url, `UPDATE host_state_history SET at = '${T0}' WHERE host_id = '${h.id}'`);
    gpuSamples(h, at(-3), AT);
    const records = [];
    for (let i = 0; i < 300; i++) {
      const s = AT_MS - 50 * 3600e3 + i * 600e3;
      const recent = s >= AT_MS - 90 * 60e3; // the last 90 minutes: nothing useful
      records.push({
        host_id: h.id,
        window_start: new Date(s).toISOString(),
        window_end: new Date(s + 600e3).toISOString(),
        unit: 'tokens',
        completed: recent ? 0 : 1000 + (i % 17) * 50 - (i > 150 ? 600 : 0),
        failed: recent ? 0 : i % 9 === 0 ? 400 : 3,
        retried: i % 4,
        busy_seconds: recent ? 0 : 300 + (i % 5) * 10,
      });
    }
    for (let k = 0; k < records.length; k += 100) expectStatus(await post(records.slice(k, k + 100)), 201);
    const atMs = AT_MS - 17 * 60e3;
    const inWin = (r, f, t) => Date.parse(r.window_start) >= f && Date.parse(r.window_start) < t;
    const sum = (rs, k) => rs.reduce((a, r) => a + r[k], 0);
    const day = records.filter((r) => inWin(r, atMs - 24 * 3600e3, atMs));
    const prev = records.filter((r) => inWin(r, atMs - 48 * 3600e3, atMs - 24 * 3600e3));
    const body = expectStatus(await get(`?at=${new Date(atMs).toISOString()}&pool_id=${R.id}`), 200);
    const by = Object.fromEntries(body.items.map((r) => [`${r.action}:${r.rule}`, r]));
    assert.deepEqual(Object.keys(by).sort(), ['investigate:cost_per_unit', 'investigate:failed_share', 'stop:idle']);
    // Idle since the end of the last useful report (AT - 90 min) until at: 73 minutes.
    assert.equal(by['stop:idle'].evidence.idle_seconds, 73 * 60);
    const bad = sum(day, 'failed') + sum(day, 'retried');
    assert.equal(
      by['investigate:failed_share'].evidence.failed_retried_share,
      Math.round((bad / (bad + sum(day, 'completed'))) * 1e4) / 1e4,
    );
    const t = by['investigate:cost_per_unit'].evidence.units.tokens;
    // Held all day at $3/h in both windows: $72 over the completed tokens of each.
    assert.ok(Math.abs(t.cost_per_unit - 72 / sum(day, 'completed')) < 1e-12);
    assert.ok(Math.abs(t.previous_cost_per_unit - 72 / sum(prev, 'completed')) < 1e-12);
  });
});
