'use strict';
// GET /v1/bottlenecks (issue 26, item 4): the query's rejections, scoping, and the
// findings over reports stored in the past. Work reports with phases, gate runs and the
// monitor's hourly rollups are written with psql (the reports' rollup trigger sums the
// phases as the API's inserts do; gate runs and samples are what a worker would have
// recorded), with GPUFLEET_WORKERS=0. Every response is validated against the OpenAPI
// document by lib/openapi.js.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const NIL = '00000000-0000-4000-8000-000000000000';
const T0 = '2025-03-01T00:00:00Z';
const hour = (h) => new Date(Date.parse(T0) + h * 3600e3).toISOString().replace('.000Z', 'Z');
const WINDOW = `from=${hour(0)}&to=${hour(24)}`;

let srv;
let client;
let admin;
let operator;
let viewer;
let db;
let pool;
let slow; // load dominates; its gate read the durable path at 180 MB/s (minimum 1000)
let plain; // reports without phases
let busy; // compute dominates, GPUs at 90%
let brief;

/** Reports of host h for hours [h0, h1) (each 1 h, busy 3000 s) with the given phases. */
function reports(host, h0, h1, phases, extra = {}) {
  const rows = [];
  for (let h = h0; h < h1; h++) {
    const p = phases || {};
    const v = (k) => (p[k] === undefined ? 'NULL' : String(p[k]));
    rows.push(
      `('${host.id}', ${brief ? `'${extra.brief || brief.id}'` : 'NULL'}, '${hour(h)}', '${hour(h + 1)}', 'tokens',` +
        ` 1000, ${extra.failed || 0}, 0, 3000, ${extra.bytes || 0}, 'test',` +
        ` ${v('queue')}, ${v('load')}, ${v('preprocess')}, ${v('compute')}, ${v('communication')}, ${v('write')})`,
    );
  }
  psql(
    db,
    'INSERT INTO work_reports (host_id, brief_id, window_start, window_end, unit, completed, failed, retried,' +
      ' busy_seconds, bytes_moved, reported_by, phase_queue_seconds, phase_load_seconds,' +
      ' phase_preprocess_seconds, phase_compute_seconds, phase_communication_seconds, phase_write_seconds)' +
      ` VALUES ${rows.join(', ')}`,
  );
}

/** A gate (or diagnostics) run of host with one check. */
function gateRun(host, kind, check, at) {
  return psql(
    db,
    `INSERT INTO gate_runs (kind, host_id, pool_id, verdict, reason, checks, started_at, finished_at)
     VALUES ('${kind}', '${host.id}', '${pool.id}', 'accept', 'test', '${JSON.stringify([check])}'::jsonb,
             '${at}', '${at}') RETURNING id`,
  );
}

/** The monitor's hourly rollups: one GPU of host, hours [h0, h1), at util percent. */
function samples(host, h0, h1, util) {
  psql(
    db,
    `INSERT INTO gpu_samples_1h (bucket, host_id, gpu_uuid, samples, util_gpu_avg, mem_used_mib_avg,
       mem_total_mib_max, power_w_avg)
     SELECT '${T0}'::timestamptz + make_interval(hours => h), '${host.id}', 'GPU-0000aaaa-${host.id.slice(0, 8)}', 60,
            ${util}, 40000, 80000, 500 FROM generate_series(${h0}, ${h1 - 1}) h`,
  );
}

const get = (q, token = viewer) => client.request('GET', `/v1/bottlenecks?${q}`, { token });

before(async () => {
  srv = await startServer({
    name: 'bottlenecks',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  db = srv.database.url;
  const key = fleet.sshKey();
  const cred = await fleet.createCredential(client, admin, key.text);
  pool = await fleet.createPool(client, admin, { price_per_hour: 4 });
  const host = (n) =>
    fleet.createHost(client, operator, {
      name: `bn-${n}-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  slow = await host('slow');
  plain = await host('plain');
  busy = await host('busy');
  brief = expectStatus(
    await client.request('POST', '/v1/briefs', {
      token: operator,
      body: {
        name: `bn-brief-${fleet.uniq()}`,
        kind: 'inference_interactive',
        model: { name: 'acme/chat-7b', parameter_count: 7e9, precision: 'bf16' },
        load: { concurrency: 1 },
        targets: [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }],
      },
    }),
    201,
  );
  // slow: load 1230 s of 3000 busy (41%), compute 900, preprocess 300, write 300, queue 270;
  // 3 GB moved every hour it loads.
  reports(slow, 0, 24, { queue: 270, load: 1230, preprocess: 300, compute: 900, write: 300 }, { bytes: 3e9 });
  reports(plain, 0, 24, null);
  reports(busy, 0, 24, { load: 100, compute: 2700, write: 200 });
  samples(plain, 0, 24, 10);
  samples(busy, 0, 24, 90);
  gateRun(
    slow,
    'gate',
    {
      name: 'storage_throughput',
      status: 'fail',
      values: { read_mbps: 180, read_bytes: 1073741824, read_tool: 'dd', direct: true, min_read_mbps: 1000 },
    },
    hour(30),
  );
});

after(async () => {
  if (srv) await srv.stop();
});

describe('the query', () => {
  test('exactly one of pool, brief and host', async () => {
    expectProblem(await get(WINDOW), 400, 'invalid_parameter', 'pool');
    expectProblem(await get(`pool=${pool.id}&host=${slow.id}&${WINDOW}`), 400, 'invalid_parameter', 'brief');
  });
  test('ids are validated', async () => {
    expectProblem(await get('host=gpu-1'), 400, 'invalid_parameter', 'host');
    expectProblem(await get("pool=1' OR '1'='1"), 400, 'invalid_parameter', 'pool');
    expectProblem(await get('brief=00000000-0000-4000-8000'), 400, 'invalid_parameter', 'brief');
  });
  test('from before to, a bounded window, dates checked, no unknown parameters', async () => {
    expectProblem(await get(`host=${slow.id}&from=${hour(5)}&to=${hour(5)}`), 400, 'invalid_parameter', 'to');
    expectProblem(await get(`host=${slow.id}&from=${hour(6)}&to=${hour(5)}`), 400, 'invalid_parameter', 'to');
    expectProblem(
      await get(`host=${slow.id}&from=2024-01-01T00:00:00Z&to=2025-01-02T00:00:01Z`),
      400,
      'invalid_parameter',
      'from',
    );
    expectProblem(await get(`host=${slow.id}&from=yesterday`), 400, 'invalid_parameter', 'from');
    expectProblem(await get(`host=${slow.id}&window=7d`), 400, 'unknown_parameter');
  });
  test('an unknown target answers 404', async () => {
    expectProblem(await get(`pool=${NIL}&${WINDOW}`), 404, 'not_found', 'pool');
    expectProblem(await get(`host=${NIL}&${WINDOW}`), 404, 'not_found', 'host');
  });
  test('a reporter may not read it', async () => {
    const reporter = srv.token('reporter', { args: ['--pool', pool.name] });
    expectProblem(await get(`host=${slow.id}&${WINDOW}`, reporter), 403, 'insufficient_role');
  });
});

describe('findings', () => {
  test('load dominates with a slow durable path: the storage test, with the gate as evidence', async () => {
    const b = expectStatus(await get(`host=${slow.id}&${WINDOW}`), 200);
    assert.equal(b.grain, 'hour');
    const f = b.finding;
    assert.equal(f.verdict, 'storage');
    assert.equal(f.dominant_phase, 'load');
    assert.equal(f.share_of_busy_time, 0.41);
    assert.equal(f.trend.direction, 'steady');
    assert.deepEqual(f.next_test.tests, ['storage']);
    assert.equal(f.next_test.kind, 'diagnostics');
    assert.equal(f.next_test.host_id, slow.id);
    assert.match(
      f.next_test.why,
      /^load is 41% of busy time .* durable path read at 180 MB\/s in the last gate \(pool minimum 1000\): run the storage test on a drained host$/,
    );
    assert.equal(f.evidence.storage_reference.read_mbps, 180);
    assert.equal(f.evidence.storage_reference.min_read_mbps, 1000);
    assert.equal(f.evidence.storage_test, null);
    // 24 hours with load and 3 GB each: repeated loads
    assert.deepEqual(
      b.repeated_loads.map((r) => [r.host_id, r.load_buckets]),
      [[slow.id, 24]],
    );
  });

  test('the storage test result is attached once it ran', async () => {
    const run = gateRun(
      slow,
      'diagnostics',
      { name: 'storage_throughput', status: 'fail', values: { read_mbps: 175, min_read_mbps: 1000 } },
      hour(31),
    );
    const f = expectStatus(await get(`host=${slow.id}&${WINDOW}`), 200).finding;
    assert.equal(f.evidence.storage_test.diagnostics_run_id, run);
    assert.equal(f.evidence.storage_test.read_mbps, 175);
    assert.match(f.next_test.why, new RegExp(`the storage test \\(diagnostics run ${run}\\) read at 175 MB/s`));
  });

  test('reports without phases: unknown, never GPU-bound; low utilization alone proves nothing', async () => {
    const f = expectStatus(await get(`host=${plain.id}&${WINDOW}`), 200).finding;
    assert.equal(f.verdict, 'unknown');
    assert.equal(f.dominant_phase, 'unknown');
    assert.equal(f.share_of_busy_time, null);
    assert.equal(f.next_test.kind, 'report_phases');
    assert.ok(f.notes.some((n) => /low utilization alone says nothing about the CPU or storage/.test(n)));
  });

  test('compute dominates with busy GPUs: GPU-bound', async () => {
    const b = expectStatus(await get(`host=${busy.id}&${WINDOW}`), 200);
    assert.equal(b.finding.verdict, 'gpu_bound');
    assert.equal(b.hosts[0].signals.gpu.utilization_pct, 90);
    assert.equal(b.hosts[0].signals.gpu.memory_used_pct, 50);
  });

  test('a pool and a brief sum their hosts', async () => {
    // Σ phases: load 24 × (1230 + 100) = 31,920 of 24 × (3000 + 3000) = 144,000 phase
    // seconds: compute 24 × 3600 = 86,400 (60%) dominates; the busy host's GPUs at 90%.
    for (const q of [`pool=${pool.id}`, `brief=${brief.id}`]) {
      const b = expectStatus(await get(`${q}&${WINDOW}`), 200);
      assert.equal(b.finding.dominant_phase, 'compute', q);
      assert.equal(b.finding.share_of_phase_time, 0.6, q);
      assert.equal(b.finding.coverage.reports, 72, q);
      assert.equal(b.finding.coverage.phase_reports, 48, q);
      assert.equal(b.hosts[0].host_id, busy.id, q);
      assert.equal(b.finding.verdict, 'gpu_bound', q);
    }
  });

  test('a window of days reads the day rollups, with its halves; a few days the quarters', async () => {
    const b = expectStatus(await get(`host=${slow.id}&from=${hour(0)}&to=${hour(24 * 12)}`), 200);
    assert.equal(b.grain, 'day');
    assert.equal(b.middle, '2025-03-07T00:00:00.000000Z');
    // up to 10 days: 6-hour quarters (from rounded down to one: 05:00 → 00:00)
    const q = expectStatus(await get(`host=${slow.id}&from=${hour(5)}&to=${hour(24 * 3)}`), 200);
    assert.equal(q.grain, 'quarter');
    assert.equal(q.from, '2025-03-01T00:00:00.000000Z');
    assert.equal(q.finding.coverage.reports, 24);
    assert.equal(b.finding.trend.direction, 'unknown'); // nothing in the second half
    assert.equal(b.finding.verdict, 'storage');
  });
});

describe('projects', () => {
  test("another project's host, pool or brief answers 404", async () => {
    const other = expectStatus(
      await client.request('POST', '/v1/projects', { token: srv.token('admin'), body: { name: `bn-${fleet.uniq()}` } }),
      201,
    );
    const outsider = srv.token('viewer', { project: other.name });
    expectProblem(await get(`host=${slow.id}&${WINDOW}`, outsider), 404, 'not_found', 'host');
    expectProblem(await get(`pool=${pool.id}&${WINDOW}`, outsider), 404, 'not_found', 'pool');
    expectProblem(await get(`brief=${brief.id}&${WINDOW}`, outsider), 404, 'not_found', 'brief');
  });
});

describe('recommendations', () => {
  let single;
  let multi;
  let multiPool;
  let singlePool;
  before(async () => {
    const key = fleet.sshKey();
    const cred = await fleet.createCredential(client, admin, key.text);
    singlePool = await fleet.createPool(client, admin, { gpu_count: 1, price_per_hour: 4 });
    multiPool = await fleet.createPool(client, admin, { gpu_count: 8, price_per_hour: 30 });
    const host = (n, p) =>
      fleet.createHost(client, operator, {
        name: `bn-${n}-${fleet.uniq()}`,
        address: '127.0.0.1',
        port: 2222,
        user: 'gpufleet',
        credential_id: cred.id,
        pool_id: p.id,
      });
    single = await host('single', singlePool);
    multi = await host('multi', multiPool);
    // The same brief, 1000 tokens an hour in 3000 busy seconds on each: per GPU-second
    // 1000 / 3000 = 0.333 on one GPU, 1000 / (3000 × 8) = 0.0417 on eight, where
    // communication takes 2000 of 3000 phase seconds (67%).
    reports(single, 0, 24, { compute: 2800, load: 200 });
    reports(multi, 0, 24, { compute: 1000, communication: 2000 });
  });

  test('investigate carries the finding; scale_down when eight GPUs do not speed the brief up', async () => {
    const body = expectStatus(
      await client.request('GET', `/v1/recommendations?at=${hour(24)}`, { token: viewer }),
      200,
    );
    const mine = (rule, p) => body.items.filter((r) => r.rule === rule && r.target.pool_id === p.id);
    // the multi-GPU pool: communication dominates → the bandwidth test
    const [inv] = mine('bottleneck', multiPool);
    assert.ok(inv, JSON.stringify(body.items.map((r) => [r.rule, r.target.pool_id])));
    assert.equal(inv.action, 'investigate');
    assert.deepEqual(inv.target.host_ids, [multi.id]);
    assert.equal(inv.evidence.verdict, 'bandwidth');
    assert.deepEqual(inv.evidence.next_test.tests, ['bandwidth']);
    assert.equal(inv.reason, inv.evidence.next_test.why);
    // the first pool is GPU-bound (its busy host's GPUs at 90%): nothing to investigate
    assert.deepEqual(mine('bottleneck', pool), []);
    assert.deepEqual(mine('bottleneck', singlePool), []);
    const [down] = mine('multi_gpu_no_speedup', multiPool);
    assert.ok(down);
    assert.equal(down.action, 'scale_down');
    assert.equal(down.target.brief_id, brief.id);
    assert.deepEqual(down.target.host_ids, [multi.id]);
    assert.equal(down.evidence.single_gpu_pool_id, singlePool.id);
    assert.equal(down.evidence.per_gpu_throughput, 0.041667);
    assert.equal(down.evidence.single_gpu_per_gpu_throughput, 0.333333);
    assert.equal(down.estimated_savings_per_hour, 30);
    // without the single-GPU pool's reports there is nothing to compare with
    const later = expectStatus(
      await client.request('GET', `/v1/recommendations?at=${hour(24 * 3)}`, { token: viewer }),
      200,
    );
    assert.deepEqual(
      later.items.filter((r) => r.rule === 'multi_gpu_no_speedup' || r.rule === 'bottleneck'),
      [],
    );
  });
});
