'use strict';
// The recommendations and the health monitor (issue 13), end to end with
// GPUFLEET_WORKERS=0: samples are stored the way the monitor stores them, by calling
// monitor_store(host, document) through psql, and the recommendations are asked for a
// fixed `at` (the test's start), so no time is waited for. Every response is validated
// against the OpenAPI document.
//
// Idle needs positive evidence (item 5). Pool P: idle window 1800 s, monitor every 60 s,
// threshold 5% (the default). Every host reports nothing done over [AT-2h, AT) unless
// said otherwise; samples are 8 GPUs at AT-30s, AT-90s, ... (60 s apart):
//   both    30 samples at 0-2%                 → stop, both signals in the evidence
//   none    no sample (monitor off)            → no_usage_data: no_gpu_samples
//   thin    26 samples (86.67% < 90%)          → no_usage_data: low_sample_coverage
//   unread  30 samples, 4 without utilization  → 26 count: low_sample_coverage
//   hot     30 samples, one GPU at 40% once    → busy: nothing
//   edge    30 samples, at most 4%             → stop (4 < 5); with a 4% pool: nothing
//   stale   reports end at AT-1h, 30 samples   → no_usage_data: reports_stale
//   working a useful report ending AT-5min     → busy: nothing
// Pool L (window 3 h): 180 samples rolled up into 5-minute and 1-hour buckets, read back
// from the rollups and the raw edges: the same figures as from raw samples alone.
// Monitor isolation (item 3): a host moved to quarantined by monitor_isolated gets an
// investigate recommendation with its open isolating events; released, it goes.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer, psql, psqlUnguarded } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const AT_MS = Math.floor(Date.now() / 1000) * 1000;
const AT = new Date(AT_MS).toISOString();
const iso = (ms) => new Date(ms).toISOString();
const ago = (s) => iso(AT_MS - s * 1000);

let srv;
let client;
let admin;
let viewer;
let reporter;
let P;
let L;
const H = {};

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

const lit = (v) => `'${JSON.stringify(v).replace(/'/g, "''")}'`;
const gpuUuid = (host, g) => `GPU-${host.id.slice(0, 8)}-0000-4000-8000-00000000000${g}`;
/** n samples of host, 60 s apart from AT-30s back; util(k, g) gives GPU g's reading of
 * sample k (undefined: not read). */
function samples(host, n, util = () => 1, events = () => []) {
  const calls = [];
  for (let k = n - 1; k >= 0; k--) {
    const gpus = [];
    for (let g = 0; g < 8; g++) {
      const u = util(k, g);
      gpus.push({
        uuid: gpuUuid(host, g),
        pci_bus_id: `00000000:${(0x18 + g).toString(16).toUpperCase()}:00.0`,
        index: g,
        ...(u === undefined ? {} : { util_gpu: u }),
      });
    }
    calls.push(`SELECT monitor_store('${host.id}', ${lit({ at: ago(30 + 60 * k), gpus, events: events(k) })}::jsonb);`);
  }
  for (let i = 0; i < calls.length; i += 50) psql(srv.database.url, calls.slice(i, i + 50).join('\n')); // (an argument is at most 128 KiB)
}

const nothing = (h, from = 7200, to = 0) => ({
  host_id: h.id,
  window_start: ago(from),
  window_end: ago(to),
  unit: 'tokens',
  completed: 0,
  failed: 0,
  retried: 0,
  busy_seconds: 0,
});
const recs = async (q = '') =>
  expectStatus(await client.request('GET', `/v1/recommendations?at=${AT}${q}`, { token: viewer }), 200);
const stopOf = (body, h) => body.items.find((r) => r.action === 'stop' && r.target.host_ids[0] === h.id);
const listed = (body, h) => body.no_usage_data.find((x) => x.host_id === h.id);

async function putPool(pool, changes) {
  const res = await client.request('GET', `/v1/pools/${pool.id}`, { token: admin });
  const body = { ...expectStatus(res, 200), ...changes };
  for (const k of ['id', 'revision', 'gate_version', 'created_at', 'updated_at', 'created_by']) delete body[k];
  return client.request('PUT', `/v1/pools/${pool.id}`, {
    token: admin,
    body,
    headers: { 'If-Match': res.headers.get('etag') },
  });
}

before(async () => {
  srv = await startServer({
    name: 'recommend-health',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  const operator = srv.token('operator');
  viewer = srv.token('viewer');
  psql(srv.database.url, "UPDATE gpu_samples_retention SET width = '1 hour'");
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  P = await fleet.createPool(client, admin, { price_per_hour: 4, monitor: { interval_seconds: 60 } });
  L = await fleet.createPool(client, admin, { price_per_hour: 2, idle_stop_after_seconds: 10800 });
  reporter = srv.token('reporter', { args: ['--pool', P.name, '--pool', L.name] });
  for (const [n, pool] of [
    ['both', P],
    ['none', P],
    ['thin', P],
    ['unread', P],
    ['hot', P],
    ['edge', P],
    ['stale', P],
    ['working', P],
    ['long', L],
    ['iso', P],
    ['keyed', P],
  ]) {
    H[n] = await fleet.createHost(client, operator, {
      name: `rh-${n}-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  }
  const ids = Object.values(H)
    .map((h) => `'${h.id}'`)
    .join(',');
  psql(srv.database.url, `UPDATE host_state_history SET at = now() - interval '2 days' WHERE host_id IN (${ids})`);
  const records = ['both', 'none', 'thin', 'unread', 'hot', 'edge'].map((n) => nothing(H[n]));
  records.push(nothing(H.stale, 7200, 3600), nothing(H.working, 7200, 1200));
  records.push({ ...nothing(H.working, 1200, 300), completed: 500, busy_seconds: 600 });
  records.push(nothing(H.long, 6 * 3600, 0));
  expectStatus(await client.request('POST', '/v1/work-reports', { token: reporter, body: { records } }), 201);
  samples(H.both, 30, (k, g) => (k + g) % 3);
  samples(H.thin, 26);
  samples(H.unread, 30, (k, g) => (k % 7 === 3 && g === 5 ? undefined : 0));
  samples(H.hot, 30, (k, g) => (k === 12 && g === 2 ? 40 : 1));
  samples(H.edge, 30, (k) => (k === 4 ? 4 : 0));
  samples(H.stale, 30);
  samples(H.working, 30);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('idle needs positive evidence', () => {
  test('both signals: stop, with each in the evidence', async () => {
    const body = await recs();
    const s = stopOf(body, H.both);
    assert.ok(s, JSON.stringify(body));
    assert.equal(s.id, stableId('stop', 'idle', [H.both.id], P.id, null));
    // readings (k + g) % 3 over 30 samples × 8 GPUs: 0, 1 and 2 equally often, mean 1
    assert.deepEqual(s.evidence.gpu_utilization, {
      samples: 30,
      unread_samples: 0,
      interval_seconds: 60,
      window_seconds: 1800,
      coverage_pct: 100,
      required_coverage_pct: 90,
      max_pct: 2,
      mean_pct: 1,
      threshold_pct: 5,
    });
    assert.deepEqual(s.evidence.work_reports, {
      reports: 1,
      last_report_end: AT.replace('.000Z', '.000000Z'),
      last_report_age_seconds: 0,
      last_useful_end: null,
      idle_seconds: 7200,
    });
    assert.equal(s.evidence.idle_seconds, 7200);
    assert.match(s.reason, /GPU utilization at most 2% \(under 5%\) over 100% of the window/);
    assert.ok(stopOf(body, H.edge), 'at most 4% is under 5%');
  });

  test('unknown signals are listed, never stopped', async () => {
    const body = await recs();
    const stops = body.items.filter((r) => r.action === 'stop').map((r) => r.target.host_ids[0]);
    assert.deepEqual(stops.sort(), [H.both.id, H.edge.id].sort());
    assert.equal(listed(body, H.none).reason, 'no_gpu_samples');
    assert.equal(listed(body, H.none).evidence.gpu_utilization.samples, 0);
    assert.equal(listed(body, H.none).evidence.gpu_utilization.max_pct, null);
    const thin = listed(body, H.thin);
    assert.equal(thin.reason, 'low_sample_coverage');
    assert.equal(thin.evidence.gpu_utilization.coverage_pct, 86.67);
    assert.equal(thin.evidence.gpu_utilization.samples, 26);
    // 4 of the 30 samples miss GPU 5's utilization (k = 3, 10, 17, 24): 26 count
    const unread = listed(body, H.unread);
    assert.equal(unread.reason, 'low_sample_coverage');
    assert.equal(unread.evidence.gpu_utilization.samples, 26);
    assert.equal(unread.evidence.gpu_utilization.unread_samples, 4);
    const stale = listed(body, H.stale);
    assert.equal(stale.reason, 'reports_stale');
    assert.equal(stale.evidence.work_reports.last_report_age_seconds, 3600);
    assert.equal(stale.evidence.gpu_utilization.coverage_pct, 100);
    // busy by one signal: neither recommended nor listed
    for (const n of ['hot', 'working']) {
      assert.equal(stopOf(body, H[n]), undefined, n);
      assert.equal(listed(body, H[n]), undefined, n);
    }
  });

  test("the pool's threshold, and its validation", async () => {
    assert.equal(P.idle_gpu_utilization_pct, 5);
    const strict = expectStatus(await putPool(P, { idle_gpu_utilization_pct: 4 }), 200);
    assert.equal(strict.idle_gpu_utilization_pct, 4);
    let body = await recs();
    assert.equal(stopOf(body, H.edge), undefined, '4% is not under 4%');
    assert.equal(listed(body, H.edge), undefined, 'and it is work, not unknown');
    assert.ok(stopOf(body, H.both));
    expectStatus(await putPool(P, { idle_gpu_utilization_pct: 50 }), 200);
    body = await recs();
    assert.ok(stopOf(body, H.hot), '40% is under 50%');
    assert.equal(stopOf(body, H.hot).evidence.gpu_utilization.threshold_pct, 50);
    for (const bad of [-1, 100.5, '5%', null, true]) {
      expectProblem(
        await putPool(P, { idle_gpu_utilization_pct: bad }),
        400,
        'invalid_field',
        'idle_gpu_utilization_pct',
      );
    }
    expectProblem(
      await client.request('POST', '/v1/pools', {
        token: admin,
        body: {
          ...P,
          id: undefined,
          revision: undefined,
          gate_version: undefined,
          created_at: undefined,
          updated_at: undefined,
          created_by: undefined,
          name: `x-${fleet.uniq()}`,
          idle_gpu_utilization_pct: 101,
        },
      }),
      400,
      'invalid_field',
      'idle_gpu_utilization_pct',
    );
    assert.equal(expectStatus(await putPool(P, { idle_gpu_utilization_pct: 0 }), 200).idle_gpu_utilization_pct, 0);
    assert.equal(
      (await recs()).items.filter((r) => r.action === 'stop' && r.target.pool_id === P.id).length,
      0,
      'at 0% nothing is idle',
    );
    const res = await client.request('GET', `/v1/pools/${P.id}`, { token: admin });
    const body2 = { ...expectStatus(res, 200) };
    for (const k of [
      'id',
      'revision',
      'gate_version',
      'created_at',
      'updated_at',
      'created_by',
      'idle_gpu_utilization_pct',
    ])
      delete body2[k];
    const reset = expectStatus(
      await client.request('PUT', `/v1/pools/${P.id}`, {
        token: admin,
        body: body2,
        headers: { 'If-Match': res.headers.get('etag') },
      }),
      200,
    );
    assert.equal(reset.idle_gpu_utilization_pct, 5, 'omitted: the default again');
  });

  test('a long window read from the rollups gives the raw figures', async () => {
    // 3 h of samples, every 60 s from AT-30s back (180, all at 1% but one at 3%): read
    // first from the raw samples alone, then once rolled up to 5-minute and 1-hour
    // buckets (the window's whole hours and 5-minute buckets then come from those).
    samples(H.long, 180, (k, g) => (k === 100 && g === 0 ? 3 : 1));
    const raw = stopOf(await recs(), H.long);
    assert.ok(raw);
    assert.deepEqual(raw.evidence.gpu_utilization, {
      samples: 180,
      unread_samples: 0,
      interval_seconds: 60,
      window_seconds: 10800,
      coverage_pct: 100,
      required_coverage_pct: 90,
      max_pct: 3,
      mean_pct: 1,
      threshold_pct: 5,
    });
    for (let i = 0; i < 6; i++) psql(srv.database.url, `SELECT gpu_samples_rollup('${AT}')`);
    const done = psql(
      srv.database.url,
      "SELECT string_agg(grain || '=' || (done_upto <= now()), ',' ORDER BY grain) FROM gpu_samples_rollup_state",
    );
    assert.equal(done, '1h=true,5m=true');
    assert.ok(
      Number(psql(srv.database.url, `SELECT count(*) FROM gpu_samples_1h WHERE host_id = '${H.long.id}'`)) >= 16,
      'whole hours rolled up',
    );
    const rolled = stopOf(await recs(), H.long);
    assert.deepEqual(rolled.evidence.gpu_utilization, raw.evidence.gpu_utilization);
    // Without the raw samples of the window's inside, the rollups alone still count them:
    // proof that they were read (the raw edges stay).
    const d1 = psql(srv.database.url, "SELECT done_upto FROM gpu_samples_rollup_state WHERE grain = '1h'");
    const gone = psql(
      srv.database.url,
      `WITH d AS (DELETE FROM gpu_samples WHERE host_id = '${H.long.id}' AND at >= date_bin('1 hour', '${ago(10800)}'::timestamptz + interval '1 hour' - interval '1 microsecond', timestamptz '2000-01-01 00:00Z') AND at < date_bin('1 hour', least('${AT}'::timestamptz, '${d1}'::timestamptz), timestamptz '2000-01-01 00:00Z') RETURNING 1) SELECT count(*) FROM d`,
    );
    assert.ok(Number(gone) >= 8 * 60, `raw samples of whole hours deleted: ${gone}`);
    assert.deepEqual(stopOf(await recs(), H.long).evidence.gpu_utilization.samples, 180);
  });
});

describe('monitor isolation', () => {
  test('an investigate recommendation with the isolating events, gone once released', async () => {
    const h = H.iso;
    const reason = 'Xid 79 on GPU 0 (00000000:18:00.0): GPU has fallen off the bus';
    samples(
      h,
      1,
      () => 0,
      () => [
        {
          kind: 'xid',
          code: 79,
          category: 'hardware',
          policy: 'isolate',
          pci_bus_id: '00000000:18:00.0',
          raw: 'NVRM: Xid (PCI:0000:18:00): 79, pid=1910, name=python3, GPU has fallen off the bus.',
          message: 'GPU has fallen off the bus',
        },
        {
          kind: 'xid',
          code: 13,
          category: 'application',
          policy: 'record',
          pci_bus_id: '00000000:19:00.0',
          raw: 'NVRM: Xid (PCI:0000:19:00): 13, Graphics SM Warp Exception',
          message: 'application error',
        },
        {
          kind: 'fabric',
          category: 'nvlink',
          policy: 'isolate',
          raw: `State: In Progress ${'é'.repeat(400)}`,
          message: 'fabric not trained',
        },
      ],
    );
    psqlUnguarded(
      srv.database.url,
      `SET CONSTRAINTS ALL IMMEDIATE; UPDATE hosts SET state = 'ready' WHERE id = '${h.id}'`,
    );
    psql(
      srv.database.url,
      `SELECT host_transition('${h.id}', 'monitor_isolated', NULL, '${reason}', NULL, 'worker:test', NULL)`,
    );
    // a host quarantined for another cause (a host key mismatch) is not the monitor's
    psqlUnguarded(
      srv.database.url,
      `SET CONSTRAINTS ALL IMMEDIATE; UPDATE hosts SET state = 'ready' WHERE id = '${H.keyed.id}'`,
    );
    psql(
      srv.database.url,
      `SELECT host_transition('${H.keyed.id}', 'key_mismatch', NULL, 'host key mismatch', NULL, 'worker:test', NULL)`,
    );

    const body = await recs('&action=investigate');
    const mine = body.items.filter((r) => r.rule === 'monitor_isolated');
    assert.equal(mine.length, 1, JSON.stringify(body.items));
    const r = mine[0];
    assert.equal(r.id, stableId('investigate', 'monitor_isolated', [h.id], P.id, null));
    assert.deepEqual(r.target, { host_ids: [h.id], pool_id: P.id, brief_id: null });
    assert.equal(r.estimated_savings_per_hour, 0);
    assert.equal(r.evidence.quarantine_reason, reason);
    assert.match(r.evidence.quarantined_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.equal(r.evidence.open_isolating_events, 2);
    assert.deepEqual(
      r.evidence.events.map((e) => `${e.kind}:${e.code}`),
      ['xid:79', 'fabric:null'],
    );
    const x = r.evidence.events[0];
    assert.equal(x.category, 'hardware');
    assert.equal(x.gpu_uuid, gpuUuid(h, 0));
    assert.equal(x.pci_bus_id, '00000000:18:00.0');
    assert.equal(x.count, 1);
    assert.equal(x.first_seen, x.last_seen);
    assert.match(x.raw, /GPU has fallen off the bus\.$/);
    assert.ok(Buffer.byteLength(r.evidence.events[1].raw) <= 512, 'raw is bounded');
    assert.match(r.reason, /Xid 79 on GPU 0/);
    assert.ok(!stopOf(await recs(), h), 'a quarantined host is not stopped as idle');

    psql(
      srv.database.url,
      `SELECT host_transition('${h.id}', 'release', 'provisioned', 'released by the test', NULL, 'test-admin', NULL)`,
    );
    assert.equal((await recs('&action=investigate')).items.filter((i) => i.rule === 'monitor_isolated').length, 0);
  });
});
