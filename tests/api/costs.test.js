'use strict';
// Work reports and cost per completed work (issue 6, parts 1-3), through the
// API with GPUFLEET_WORKERS=0 (no SSH). Time is never waited for: host state
// histories are dated in the past with psql (the registration row moved to
// 2025-01-01T00:00Z, stops and restarts inserted), and reports and cost
// windows use explicit timestamps. Every response is validated against the
// OpenAPI document by lib/openapi.js.
//
// The pool prices are those of the worked example of issue 6: $4/h,
// $0.08/GB-month storage, $0.05/GB egress, 10% overhead.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql, psqlHolding } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const NIL = '00000000-0000-4000-8000-000000000000';
const T0 = '2025-01-01T00:00:00Z';
const hour = (h) => new Date(Date.parse(T0) + h * 3600e3).toISOString().replace('.000Z', 'Z');

let srv;
let client;
let admin;
let operator;
let viewer;
let reporter;
let pool;
let hostA; // held all the time, reports the worked example
let hostB; // stopped 05:00-08:00, no reports
let hostC; // for the ingestion rules
let brief;

function rec(host, h, overrides = {}) {
  return {
    host_id: host.id,
    window_start: hour(h),
    window_end: hour(h + 1),
    unit: 'tokens',
    completed: 120000,
    failed: 6000,
    retried: 0,
    busy_seconds: 2880,
    ...overrides,
  };
}
const post = (records, token = reporter, headers = {}) =>
  client.request('POST', '/v1/work-reports', { token, body: { records }, headers });
async function listAll(query) {
  const items = [];
  let cursor = null;
  do {
    const q = `${query}${query.includes('?') ? '&' : '?'}limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const page = expectStatus(await client.request('GET', q, { token: viewer }), 200);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

before(async () => {
  srv = await startServer({ name: 'costs', env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' } });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const key = fleet.sshKey();
  const cred = await fleet.createCredential(client, admin, key.text);
  pool = await fleet.createPool(client, admin, {
    price_per_hour: 4,
    storage_price_per_gb_month: 0.08,
    egress_price_per_gb: 0.05,
    overhead_pct: 10,
  });
  reporter = srv.token('reporter', { args: ['--pool', pool.name] }); // scoped to its pool
  const host = (n) =>
    fleet.createHost(client, operator, {
      name: `cost-${n}-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  hostA = await host('a');
  hostB = await host('b');
  hostC = await host('c');
  brief = expectStatus(
    await client.request('POST', '/v1/briefs', {
      token: operator,
      body: {
        name: `cost-brief-${fleet.uniq()}`,
        kind: 'inference_interactive',
        model: { name: 'acme/chat-7b', parameter_count: 7e9, precision: 'bf16' },
        load: { concurrency: 1 },
        targets: [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }],
      },
    }),
    201,
  );
  // Registered at T0 (all three); B stopped at 05:00 and registered again at 08:00.
  const db = srv.database.url;
  psql(db, `UPDATE host_state_history SET at = '${T0}' WHERE host_id IN ('${hostA.id}', '${hostB.id}', '${hostC.id}')`);
  psql(
    db,
    `INSERT INTO host_state_history (host_id, from_state, to_state, reason, actor, at) VALUES
     ('${hostB.id}', 'registered', 'stopped', 'test', 'test', '${hour(5)}'),
     ('${hostB.id}', 'stopped', 'registered', 'test', 'test', '${hour(8)}')`,
  );
});

after(async () => {
  if (srv) await srv.stop();
});

describe('roles', () => {
  test('the reporter role posts work reports and reads nothing', async () => {
    const res = await post([rec(hostC, 100, { unit: 'requests' })]);
    assert.deepEqual(expectStatus(res, 201), { accepted: 1, duplicates: 0 });
    for (const path of [
      '/v1/work-reports',
      '/v1/costs',
      '/v1/hosts',
      '/v1/pools',
      `/v1/hosts/${hostC.id}`,
      '/v1/briefs',
    ]) {
      expectProblem(await client.request('GET', path, { token: reporter }), 403, 'insufficient_role');
    }
  });
  test('operators and admins may post; viewers may not', async () => {
    expectStatus(await post([rec(hostC, 101, { unit: 'requests' })], operator), 201);
    expectStatus(await post([rec(hostC, 102, { unit: 'requests' })], admin), 201);
    expectProblem(await post([rec(hostC, 103, { unit: 'requests' })], viewer), 403, 'insufficient_role');
  });
});

describe('ingestion', () => {
  test('an identical re-send is accepted and counted once', async () => {
    const batch = [rec(hostC, 200), rec(hostC, 201, { p95_latency_ms: 12.5, storage_gb: 3.25, bytes_moved: 7 })];
    assert.deepEqual(expectStatus(await post(batch), 201), { accepted: 2, duplicates: 0 });
    assert.deepEqual(expectStatus(await post(batch), 200), { accepted: 0, duplicates: 2 });
    // One new, one old: 201, counted apart. A repeat inside one batch counts once too.
    const more = [batch[1], rec(hostC, 202), rec(hostC, 202)];
    assert.deepEqual(expectStatus(await post(more), 201), { accepted: 1, duplicates: 2 });
    const stored = await listAll(
      `/v1/work-reports?host_id=${hostC.id}&unit=tokens&since=${hour(200)}&until=${hour(203)}`,
    );
    assert.equal(stored.length, 3);
    const r201 = stored.find((r) => r.window_start === '2025-01-09T09:00:00.000000Z');
    assert.equal(r201.p95_latency_ms, 12.5);
    assert.equal(r201.storage_gb, 3.25);
    assert.equal(r201.bytes_moved, 7);
    assert.equal(r201.reported_by, 'test-reporter');
  });

  test('a conflicting re-send answers 409 and stores nothing of the batch', async () => {
    const res = await post([rec(hostC, 210), rec(hostC, 200, { completed: 1 })]);
    expectProblem(res, 409, 'work_report_conflict', 'records[1]');
    assert.equal(
      (await listAll(`/v1/work-reports?host_id=${hostC.id}&since=${hour(210)}&until=${hour(211)}`)).length,
      0,
    );
    // Same key twice in one batch with other figures: a conflict as well.
    expectProblem(
      await post([rec(hostC, 211), rec(hostC, 211, { failed: 0 })]),
      409,
      'work_report_conflict',
      'records[1]',
    );
  });

  test('one bad record: 400 naming it by index, and nothing stored', async () => {
    const res = await post([rec(hostC, 220), rec(hostC, 221, { busy_seconds: 3601 }), rec(hostC, 222)]);
    const p = expectProblem(res, 400, 'invalid_field', 'records[1].busy_seconds');
    assert.match(p.detail, /records\[1\]\.busy_seconds/);
    assert.equal(
      (await listAll(`/v1/work-reports?host_id=${hostC.id}&since=${hour(220)}&until=${hour(223)}`)).length,
      0,
    );
  });

  test('several bad records: the first is named, the detail counts them', async () => {
    const res = await post([rec(hostC, 230), rec(hostC, 231, { completed: -1 }), rec(hostC, 232, { unit: 'bytes' })]);
    const p = expectProblem(res, 400, 'invalid_field', 'records[1].completed');
    assert.match(p.detail, /2 of 3 records are invalid/);
  });

  test('window rules', async () => {
    const cases = [
      [{ window_end: hour(230) }, 'invalid_field', 'records[0].window_end'], // end == start
      [{ window_end: hour(229) }, 'invalid_field', 'records[0].window_end'], // end < start
      [{ window_end: hour(255) }, 'invalid_field', 'records[0].window_end'], // 25 h
      [{ window_start: 'yesterday' }, 'invalid_field', 'records[0].window_start'],
      [{ busy_seconds: 3600.5 }, 'invalid_field', 'records[0].busy_seconds'],
      [{ retried: 1.5 }, 'invalid_field', 'records[0].retried'],
      [{ unit: 'bytes' }, 'invalid_field', 'records[0].unit'],
      [{ colour: 'red' }, 'unknown_field', 'records[0].colour'],
      [{ host_id: NIL }, 'invalid_field', 'records[0].host_id'],
      [{ brief_id: NIL }, 'invalid_field', 'records[0].brief_id'],
      [{ host_id: 'not-a-uuid' }, 'invalid_field', 'records[0].host_id'],
    ];
    for (const [o, code, field] of cases) {
      expectProblem(await post([rec(hostC, 230, o)]), 400, code, field);
    }
    const missing = rec(hostC, 230);
    delete missing.busy_seconds;
    expectProblem(await post([missing]), 400, 'missing_field', 'records[0].busy_seconds');
    // Exactly 24 h is allowed, and busy_seconds may equal the window.
    expectStatus(await post([rec(hostC, 240, { window_end: hour(264), busy_seconds: 86400 })]), 201);
    // Batch size 1..1000, and nothing but records.
    expectProblem(await post([]), 400, 'invalid_field', 'records');
    expectProblem(
      await post(Array.from({ length: 1001 }, (_, i) => rec(hostC, 300 + i))),
      400,
      'invalid_field',
      'records',
    );
    expectProblem(
      await client.request('POST', '/v1/work-reports', { token: reporter, body: {} }),
      400,
      'missing_field',
      'records',
    );
    expectProblem(
      await client.request('POST', '/v1/work-reports', { token: reporter, body: { records: [rec(hostC, 250)], x: 1 } }),
      400,
      'unknown_field',
      'x',
    );
    // Unknown hosts in several records: the first is named, and they are counted.
    const p = expectProblem(
      await post([rec(hostC, 251), rec(hostC, 252, { host_id: NIL }), rec(hostC, 253, { host_id: NIL })]),
      400,
      'invalid_field',
      'records[1].host_id',
    );
    assert.match(p.detail, /2 of 3 records/);
  });

  test('1,000 records in one batch', async () => {
    const batch = Array.from({ length: 1000 }, (_, i) => rec(hostC, 2000 + i, { unit: 'items' }));
    assert.deepEqual(expectStatus(await post(batch), 201), { accepted: 1000, duplicates: 0 });
    assert.deepEqual(expectStatus(await post(batch), 200), { accepted: 0, duplicates: 1000 });
  });

  test('each batch is audited once as work_report.ingest', async () => {
    const before = expectStatus(
      await client.request('GET', '/v1/audit-events?action=work_report.ingest&limit=500', { token: admin }),
      200,
    ).items.length;
    expectStatus(await post([rec(hostC, 260), rec(hostC, 261)]), 201);
    const after = expectStatus(
      await client.request('GET', '/v1/audit-events?action=work_report.ingest&limit=500', { token: admin }),
      200,
    ).items;
    assert.equal(after.length, before + 1);
    assert.equal(after[after.length - 1].principal, 'test-reporter');
    assert.equal(after[after.length - 1].resource_type, 'work_report');
  });

  test('list filters and pagination', async () => {
    const all = await listAll(`/v1/work-reports?host_id=${hostC.id}&unit=requests`);
    assert.equal(all.length, 3);
    assert.ok(all.every((r) => r.unit === 'requests' && r.host_id === hostC.id));
    expectProblem(
      await client.request('GET', '/v1/work-reports?unit=bytes', { token: viewer }),
      400,
      'invalid_parameter',
      'unit',
    );
    expectProblem(
      await client.request('GET', '/v1/work-reports?since=yesterday', { token: viewer }),
      400,
      'invalid_parameter',
      'since',
    );
  });
});

describe('costs', () => {
  const FROM = hour(1);
  const TO = hour(11);

  before(async () => {
    // Host A: ten hourly reports 01:00-11:00 for the brief: 1.2e6 tokens completed,
    // 6e4 failed, 8 h busy, 2,000 GB stored, 50 GB moved.
    const batch = [];
    for (let h = 1; h <= 10; h++) {
      batch.push(rec(hostA, h, { brief_id: brief.id, storage_gb: 2000, bytes_moved: 5e9, p95_latency_ms: 80 }));
    }
    expectStatus(await post(batch), 201);
  });

  const costs = async (q) => expectStatus(await client.request('GET', `/v1/costs?${q}`, { token: viewer }), 200);

  test('the worked example, per host', async () => {
    const report = await costs(`from=${FROM}&to=${TO}&group_by=host`);
    assert.equal(report.group_by, 'host');
    assert.equal(report.from, '2025-01-01T01:00:00.000000Z');
    assert.equal(report.to, '2025-01-01T11:00:00.000000Z');
    const a = report.items.find((g) => g.id === hostA.id);
    assert.equal(a.name, hostA.name);
    assert.equal(a.compute, 40);
    assert.equal(a.storage, 2.19);
    assert.equal(a.data_movement, 2.5);
    assert.equal(a.overhead, 4.47);
    assert.equal(a.total, 49.16);
    assert.deepEqual(a.failed_retried, { amount: 2.34, share: 0.0476 });
    assert.deepEqual(a.completed_units, { tokens: 1200000 });
    assert.equal(Math.round(a.cost_per_completed_unit.tokens.per_1000 * 1000) / 1000, 0.041);
    assert.ok(Math.abs(a.cost_per_completed_unit.tokens.per_unit - 49.16 / 1.2e6) < 1e-15);
    assert.equal(a.held_hours, 10);
    assert.equal(a.busy_hours, 8);
    assert.ok(Math.abs(a.utilization - 0.8) < 1e-12);
    assert.ok(Math.abs(a.idle_hours - 2) < 1e-12);
    assert.equal(a.no_usage_data, false);

    // B: held 01:00-05:00 and 08:00-11:00 = 7 h → $28.00 + 10% = $30.80; no reports.
    const b = report.items.find((g) => g.id === hostB.id);
    assert.equal(b.held_hours, 7);
    assert.equal(b.compute, 28);
    assert.equal(b.overhead, 2.8);
    assert.equal(b.total, 30.8);
    assert.equal(b.no_usage_data, true);
    assert.equal(b.utilization, null);
    assert.equal(b.idle_hours, null);
    assert.deepEqual(b.failed_retried, { amount: 0, share: null });
    assert.deepEqual(b.completed_units, {});
  });

  test('per pool: the hosts sum before rounding', async () => {
    const report = await costs(`from=${FROM}&to=${TO}&group_by=pool`);
    const p = report.items.find((g) => g.id === pool.id);
    assert.equal(p.name, pool.name);
    // compute 40 + 28 (+ host C, held 10 h too: $40) = 108; storage 2.19; data 2.50;
    // overhead 10% × (108 + 2.19178… + 2.5) = 11.269… → 11.27; total 123.96.
    assert.equal(p.compute, 108);
    assert.equal(p.storage, 2.19);
    assert.equal(p.data_movement, 2.5);
    assert.equal(p.overhead, 11.27);
    assert.equal(p.total, 123.96);
    assert.equal(p.held_hours, 27);
    assert.equal(p.no_usage_data, false);
  });

  test('per brief: reports name the brief; hosts without reports have id null', async () => {
    const report = await costs(`from=${FROM}&to=${TO}&group_by=brief`);
    const g = report.items.find((x) => x.id === brief.id);
    assert.equal(g.name, brief.name);
    assert.equal(g.total, 49.16);
    assert.deepEqual(g.failed_retried, { amount: 2.34, share: 0.0476 });
    const none = report.items.find((x) => x.id === null);
    assert.equal(none.compute, 68); // B 7 h + C 10 h at $4
    assert.equal(none.no_usage_data, true);
    assert.equal(report.items[report.items.length - 1].id, null);
  });

  test('held time stops at a stop, and never runs past now', async () => {
    // B in [05:00, 08:00): stopped all along.
    const stopped = await costs(`from=${hour(5)}&to=${hour(8)}`);
    assert.equal(
      stopped.items.find((g) => g.id === hostB.id),
      undefined,
    );
    // A window that starts before registration counts from registration.
    const early = await costs(`from=2024-12-31T20:00:00Z&to=${hour(2)}`);
    assert.equal(early.items.find((g) => g.id === hostA.id).held_hours, 2);
    // A window wholly in the future holds nothing yet.
    const future = await costs('from=2999-01-01T00:00:00Z&to=2999-01-02T00:00:00Z');
    assert.deepEqual(future.items, []);
  });

  test('query rules and the default window', async () => {
    const d = await costs('');
    assert.equal(d.group_by, 'host');
    assert.equal(Date.parse(d.to) - Date.parse(d.from), 24 * 3600e3);
    expectProblem(
      await client.request('GET', `/v1/costs?from=${TO}&to=${FROM}`, { token: viewer }),
      400,
      'invalid_parameter',
      'to',
    );
    expectProblem(
      await client.request('GET', '/v1/costs?group_by=rack', { token: viewer }),
      400,
      'invalid_parameter',
      'group_by',
    );
    expectProblem(
      await client.request('GET', '/v1/costs?from=2020-01-01T00:00:00Z&to=2022-01-01T00:00:00Z', { token: viewer }),
      400,
      'invalid_parameter',
      'to',
    );
    expectProblem(
      await client.request('GET', '/v1/costs?window=1h', { token: viewer }),
      400,
      'unknown_parameter',
      'window',
    );
  });

  test('windows read from the day and hour rollups agree with the reports', async () => {
    // A host that reports every 10 minutes for three days of February 2025 (432 reports),
    // then hourly for 18 days,
    // figures varying per report. Each window's sums are computed here from the records
    // whose window_start lies in it, and must equal the report's, whether the window is
    // made of whole weeks, days, hours, minutes, or all of them.
    const cred = expectStatus(
      await client.request('GET', `/v1/hosts/${hostA.id}`, { token: viewer }),
      200,
    ).credential_id;
    const d = await fleet.createHost(client, operator, {
      name: `cost-roll-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred,
      pool_id: pool.id,
    });
    const base = Date.parse('2025-02-01T00:00:00Z');
    const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');
    const records = [];
    for (let i = 0; i < 432; i++) {
      const s = base + i * 600e3;
      records.push({
        host_id: d.id,
        window_start: iso(s),
        window_end: iso(s + 600e3),
        unit: i % 7 === 3 ? 'requests' : 'tokens',
        completed: i * 7 + 1,
        failed: i % 5,
        retried: i % 3,
        busy_seconds: 100 + (i % 400),
        bytes_moved: i * 1e7,
        ...(i % 4 === 1 ? { storage_gb: 100 + i } : {}),
      });
    }
    // Then hourly reports from Feb 4 to Feb 22 (432 more): windows of whole ISO weeks.
    for (let i = 0; i < 432; i++) {
      const s = Date.parse('2025-02-04T00:00:00Z') + i * 3600e3;
      records.push({
        host_id: d.id,
        window_start: iso(s),
        window_end: iso(s + 3600e3),
        unit: 'tokens',
        completed: 5000 + i * 3,
        failed: i % 7,
        retried: i % 2,
        busy_seconds: 1000 + (i % 50) * 20,
        bytes_moved: i * 3e6,
      });
    }
    for (let k = 0; k < records.length; k += 300) expectStatus(await post(records.slice(k, k + 300)), 201);
    const windows = [
      ['2025-02-01T00:00:00Z', '2025-02-04T00:00:00Z'],
      ['2025-02-01T05:17:00Z', '2025-02-03T19:43:00Z'],
      ['2025-02-02T10:05:00Z', '2025-02-02T10:55:00Z'],
      ['2025-02-02T10:05:00Z', '2025-02-02T11:35:00Z'],
      ['2025-02-01T23:30:00Z', '2025-02-03T00:10:00Z'],
      ['2025-01-31T12:00:00Z', '2025-02-02T00:00:00Z'],
      ['2025-02-02T00:00:00Z', '2025-02-02T01:00:00Z'],
      ['2025-02-03T22:00:00Z', '2025-02-05T00:00:00Z'],
      ['2025-02-03T00:00:00Z', '2025-02-17T00:00:00Z'], // two whole weeks (Monday to Monday)
      ['2025-02-01T05:17:00Z', '2025-02-19T13:43:00Z'], // weeks, days, hours and minutes
      ['2025-02-02T23:30:00Z', '2025-02-10T00:10:00Z'], // one week and the edges
      ['2025-02-05T10:00:00Z', '2025-02-08T10:00:00Z'], // within one week
      ['2025-01-27T00:00:00Z', '2025-02-24T00:00:00Z'], // weeks only, partly empty
    ];
    const check = async () => {
      for (const [f, t] of windows) {
        const inside = records.filter(
          (r) => Date.parse(r.window_start) >= Date.parse(f) && Date.parse(r.window_start) < Date.parse(t),
        );
        const sum = (k, pred = () => true) => inside.filter(pred).reduce((a, r) => a + (r[k] || 0), 0);
        const g = (await costs(`from=${f}&to=${t}&group_by=host`)).items.find((x) => x.id === d.id);
        const where = `window ${f} .. ${t}`;
        assert.ok(g, `${where}: the host is listed`);
        const units = {};
        for (const u of ['tokens', 'requests'])
          if (inside.some((r) => r.unit === u)) units[u] = sum('completed', (r) => r.unit === u);
        assert.deepEqual(g.completed_units, units, where);
        assert.ok(Math.abs(g.busy_hours - sum('busy_seconds') / 3600) < 1e-9, where);
        const bad = sum('failed') + sum('retried');
        assert.equal(g.failed_retried.share, Math.round((bad / (bad + sum('completed'))) * 1e4) / 1e4, where);
        assert.equal(g.data_movement, Math.round((sum('bytes_moved') / 1e9) * 0.05 * 100) / 100, where);
        assert.equal(g.held_hours, 0, where); // registered in 2026: reporting, not held
      }
    };
    await check();
    // An identical re-send is counted once, in the rollups too.
    assert.deepEqual(expectStatus(await post(records.slice(100, 300)), 200), { accepted: 0, duplicates: 200 });
    assert.deepEqual(expectStatus(await post(records.slice(500, 700)), 200), { accepted: 0, duplicates: 200 });
    await check();
    // Deleting the host takes its reports and every rollup row with it.
    const left = () =>
      psql(
        srv.database.url,
        `SELECT (SELECT count(*) FROM work_reports WHERE host_id = '${d.id}') || ',' ||
        (SELECT count(*) FROM work_report_hours WHERE host_id = '${d.id}') || ',' ||
        (SELECT count(*) FROM work_report_quarters WHERE host_id = '${d.id}') || ',' ||
        (SELECT count(*) FROM work_report_days WHERE host_id = '${d.id}') || ',' ||
        (SELECT count(*) FROM work_report_weeks WHERE host_id = '${d.id}')`,
      );
    // Rows per (bucket, unit): 10-minute hours mostly hold both units; quarters 12 × 2 + 72,
    // days 3 × 2 + 18, weeks 6.
    assert.equal(left(), '864,566,96,24,6');
    assert.equal((await client.request('DELETE', `/v1/hosts/${d.id}`, { token: admin })).status, 204);
    assert.equal(left(), '0,0,0,0,0');
  });

  test('a query past the statement timeout answers 503 query_timeout, and the server recovers', async () => {
    // A second server on the same database with a 300 ms statement timeout; a psql session
    // holds an exclusive lock on the day rollup for 3 s, so the cost query waits past it.
    const slow = await startServer({
      name: 'costs-timeout',
      databaseUrl: srv.database.url,
      migrate: false,
      secrets: srv.secrets,
      env: { GPUFLEET_WORKERS: '0', GPUFLEET_DB_STATEMENT_TIMEOUT_MS: '300' },
    });
    const holder = await psqlHolding(
      srv.database.url,
      'BEGIN; LOCK TABLE work_report_days IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT;',
      () =>
        psql(
          srv.database.url,
          "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'work_report_days' AND l.mode = 'AccessExclusiveLock' AND l.granted",
        ) === '1',
    );
    try {
      const c2 = api(slow);
      const res = await c2.request('GET', '/v1/costs?from=2025-01-01T00:00:00Z&to=2025-01-20T00:00:00Z', {
        token: slow.token('viewer'),
      });
      expectProblem(res, 503, 'query_timeout');
      await holder.done;
      expectStatus(
        await c2.request('GET', '/v1/costs?from=2025-01-01T00:00:00Z&to=2025-01-20T00:00:00Z', {
          token: slow.token('viewer'),
        }),
        200,
      );
    } finally {
      holder.stop();
      await slow.stop({ dropDatabase: false });
    }
  });
});
