'use strict';
// One bottleneck end to end (issue 26, "Done when"; docs/bottlenecks.md) against the
// simulated fleet (tests/fleet/simfleet; needs root):
//
//   1. a slow_durable host (its durable path reads at 180 MB/s) and a healthy h100x8
//      host, in a pool whose gate measures the data path (storage_throughput, minimum
//      1,000 MB/s read), provisioned and gated: the slow host's reference is recorded;
//   2. the slow host reports phases where load dominates (41% of busy time), the healthy
//      one reports no phases;
//   3. the brief's finding names load, the storage test and the slow host, quoting the
//      gate's 180 MB/s against the pool's minimum; the healthy host's is "unknown";
//   4. the slow host is drained and POST /v1/hosts/{id}/diagnostics {"tests":["storage"]}
//      runs: the finding then carries that run (its id and its read rate).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');

const { expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');

const WORKER_ENV = {
  GPUFLEET_WORKERS: '2',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '20',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
  GPUFLEET_JOB_LEASE_SECONDS: '15',
};
const T0 = Date.parse('2026-01-05T00:00:00Z');
const hour = (h) => new Date(T0 + h * 3600e3).toISOString().replace('.000Z', 'Z');
const WINDOW = `from=${hour(0)}&to=${hour(24)}`;

let sim;
let srv;
let client;
let admin;
let operator;
let viewer;
let pool;
let brief;
let slow;
let healthy;

async function runJob(res, timeoutMs = 120_000) {
  const queued = expectStatus(res, 202);
  return fleet.waitJob(client, viewer, queued.id, { timeoutMs, intervalMs: 300 });
}

/** 24 hourly reports of host, each 3000 busy seconds, with phases (or none). */
async function report(host, phases) {
  const records = [];
  for (let h = 0; h < 24; h++) {
    records.push({
      host_id: host.id,
      brief_id: brief.id,
      window_start: hour(h),
      window_end: hour(h + 1),
      unit: 'tokens',
      completed: 1200000,
      failed: 0,
      retried: 0,
      busy_seconds: 3000,
      bytes_moved: 3000000000,
      ...(phases ? { phases } : {}),
    });
  }
  const res = await client.request('POST', '/v1/work-reports', { token: operator, body: { records } });
  assert.deepEqual(expectStatus(res, 201), { accepted: 24, duplicates: 0 });
}

const finding = async (q) =>
  expectStatus(await client.request('GET', `/v1/bottlenecks?${q}&${WINDOW}`, { token: viewer }), 200);

before(async () => {
  const f = await fleet.startFleet({
    name: 'bottleneck',
    sim: {
      count: 2,
      profile: ['slow_durable', 'h100x8'],
      net: 237,
      user: 'gpufleet-bntest',
    },
    env: WORKER_ENV,
  });
  ({ sim, srv, client, admin, operator, viewer } = f);
  const { cred, stack } = f;
  pool = expectStatus(
    await client.request('POST', '/v1/pools', {
      token: admin,
      body: {
        name: `bn-${fleet.uniq()}`,
        gpu_model: 'h100_sxm',
        gpu_count: 8,
        interconnect: 'nvlink',
        price_per_hour: 10,
        durable_path: sim.env.SIMFLEET_DURABLE_PATH,
        scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
        gate: {
          checks: ['gpu_inventory', 'storage', 'storage_throughput'],
          storage: { read_size_mib: 64, write_size_mib: 16, min_read_mbps: 1000 },
          storage_min_mbps: 1, // the 16 MiB integrity probe is not under test (the disk is shared)
        },
      },
    }),
    201,
  );
  brief = expectStatus(
    await client.request('POST', '/v1/briefs', {
      token: operator,
      body: {
        name: `bn-brief-${fleet.uniq()}`,
        kind: 'inference_interactive',
        model: { name: 'acme/chat-70b', parameter_count: 70e9, precision: 'bf16' },
        load: { concurrency: 4 },
        targets: [{ metric: 'time_to_first_token_ms', value: 800, percentile: 'p95' }],
      },
    }),
    201,
  );
  const hosts = {};
  for (const h of sim.hosts) {
    hosts[h.profile] = await fleet.createHost(client, operator, {
      name: `${h.profile}-${fleet.uniq()}`,
      address: h.address,
      port: h.port,
      user: h.user,
      credential_id: cred.id,
      pool_id: pool.id,
    });
  }
  slow = hosts.slow_durable;
  healthy = hosts.h100x8;
  for (const h of [slow, healthy]) {
    const p = await fleet.waitJob(client, viewer, (await fleet.provision(client, operator, h.id, stack.id)).id, {
      timeoutMs: 120_000,
      intervalMs: 400,
    });
    assert.equal(p.state, 'succeeded', `${p.error_class} ${p.error}`);
    await runJob(await client.request('POST', `/v1/hosts/${h.id}/gate`, { token: operator }));
  }
  // load 1230 of 3000 busy seconds (41%), compute 900, preprocess 300, write 300, queue 270
  await report(slow, { queue: 270, load: 1230, preprocess: 300, compute: 900, write: 300 });
  await report(healthy, null);
});

after(async () => {
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('a brief whose model loads from a slow durable path', () => {
  test('the gate recorded the slow read', async () => {
    const page = expectStatus(
      await client.request('GET', `/v1/hosts/${slow.id}/gate-runs?kind=gate&limit=1`, { token: viewer }),
      200,
    );
    const c = page.items[0].checks.find((x) => x.name === 'storage_throughput');
    assert.ok(c, JSON.stringify(page.items[0].checks.map((x) => x.name)));
    // the simulated dd prints 180 MB/s for the bytes it really read (its time is derived)
    assert.ok(Math.abs(c.values.read_mbps - 180) < 0.5, JSON.stringify(c));
    assert.equal(c.values.min_read_mbps, 1000);
  });

  test('the finding names load, the storage test and the slow host, with the gate as evidence', async () => {
    const b = await finding(`brief=${brief.id}`);
    const f = b.finding;
    assert.equal(f.verdict, 'storage', JSON.stringify(f));
    assert.equal(f.dominant_phase, 'load');
    assert.equal(f.coverage.phase_reports, 24);
    assert.equal(f.coverage.reports, 48);
    assert.equal(f.next_test.kind, 'diagnostics');
    assert.deepEqual(f.next_test.tests, ['storage']);
    assert.equal(f.next_test.host_id, slow.id);
    assert.match(
      f.next_test.why,
      /^load is 41% of busy time .*the durable path read at 180 MB\/s in the last gate \(pool minimum 1000\): run the storage test on a drained host$/,
    );
    assert.equal(f.evidence.host_id, slow.id);
    assert.equal(f.evidence.storage_test, null);
    assert.deepEqual(
      b.repeated_loads.map((r) => r.host_id),
      [slow.id],
    );
  });

  test('reports without phases get "unknown"', async () => {
    const f = (await finding(`host=${healthy.id}`)).finding;
    assert.equal(f.verdict, 'unknown');
    assert.equal(f.dominant_phase, 'unknown');
    assert.equal(f.next_test.kind, 'report_phases');
  });

  test('after the storage test on the drained host, the finding carries its run and read rate', async () => {
    const d = expectStatus(await client.request('POST', `/v1/hosts/${slow.id}/drain`, { token: operator }), 200);
    assert.equal(d.state, 'drained');
    const job = await runJob(
      await client.request('POST', `/v1/hosts/${slow.id}/diagnostics`, {
        token: operator,
        body: { tests: ['storage'] },
      }),
    );
    const page = expectStatus(
      await client.request('GET', `/v1/hosts/${slow.id}/gate-runs?kind=diagnostics&limit=1`, { token: viewer }),
      200,
    );
    const run = page.items[0];
    assert.equal(run.job_id, job.id, `${job.state} ${job.error_class} ${job.error}`);
    const f = (await finding(`brief=${brief.id}`)).finding;
    assert.equal(f.verdict, 'storage');
    assert.equal(f.evidence.storage_test.diagnostics_run_id, run.id);
    assert.equal(f.evidence.storage_test.read_mbps, 180);
    assert.match(f.next_test.why, new RegExp(`the storage test \\(diagnostics run ${run.id}\\) read at 180 MB/s`));
  });
});
