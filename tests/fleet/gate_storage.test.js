'use strict';
// The storage reference in the gate (storage_throughput) and the targeted storage test of
// diagnostics, over SSH against the simulated fleet (tests/fleet/simfleet; needs root).
//
//   | profile      | pool gate.storage              | storage_throughput | verdict     | host          |
//   |--------------|--------------------------------|--------------------|-------------|---------------|
//   | h100x8       | min read 20 MB/s, write 5 MB/s | pass (real dd)     | accept      | ready         |
//   | slow_durable | min read 1,000 MB/s            | fail (180 MB/s)    | investigate | investigating |
//
// The simulated hosts have no fio, so the read is dd's (fio absent: the tool is dd, or, when
// the pool asks for fio, the check says so). Then: diagnostics with tests ["storage"] are
// refused on a ready host (409 host_not_drained) and, after a drain, run the check again and
// compare it with the host's accepted gate; the host goes back to drained.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');

const { startServer } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectProblem, expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');

const WORKER_ENV = {
  GPUFLEET_WORKERS: '2',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '5',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
  GPUFLEET_JOB_LEASE_SECONDS: '9',
};
const PROFILES = ['h100x8', 'slow_durable'];
const MIB = 1048576;

let sim;
let srv;
let client;
let admin;
let operator;
let viewer;
let stack;
const hostOf = new Map();
const gateRun = new Map();
const gateJob = new Map();

function poolInput(name, storage) {
  return {
    name: `${name}-${fleet.uniq()}`,
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    interconnect: 'nvlink',
    price_per_hour: 10,
    durable_path: sim.env.SIMFLEET_DURABLE_PATH,
    scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
    gate: {
      storage_min_mbps: 5,
      workload: { command: ['python3', 'bench.py'], metric: 'tokens_per_second', min: 1000, timeout_s: 8 },
      storage,
    },
  };
}
async function runJob(res, kind, hostId) {
  const queued = expectStatus(res, 202);
  const job = await fleet.waitJob(client, viewer, queued.id, { timeoutMs: 90_000, intervalMs: 300 });
  const page = expectStatus(
    await client.request('GET', `/v1/hosts/${hostId}/gate-runs?kind=${kind}&limit=1`, { token: viewer }),
    200,
  );
  const run = page.items[0];
  assert.ok(run && run.job_id === job.id, `no ${kind} run for job ${job.id} (${job.state} ${job.error})`);
  return { job, run };
}
function check(run, name) {
  return run.checks.find((c) => c.name === name);
}
function show(run) {
  return JSON.stringify({
    verdict: run.verdict,
    reason: run.reason,
    checks: run.checks.map((c) => [c.name, c.status, c.message]),
  });
}
async function getHost(id) {
  return expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
}

before(async () => {
  sim = fleet.simfleet.up({
    count: PROFILES.length,
    profile: PROFILES,
    net: 226,
    user: 'gpufleet-gstor',
    delay: 0,
    dir: fs.mkdtempSync('/tmp/gft-gstor-fleet-'),
  });
  srv = await startServer({ name: 'fleet-gate-storage', env: WORKER_ENV });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  stack = await fleet.createStack(client, operator);
  const mk = async (body) => expectStatus(await client.request('POST', '/v1/pools', { token: admin, body }), 201);
  const pools = {
    h100x8: await mk(
      poolInput('stor-ok', { read_size_mib: 32, write_size_mib: 16, min_read_mbps: 20, min_write_mbps: 5 }),
    ),
    slow_durable: await mk(poolInput('stor-slow', { read_size_mib: 64, write_size_mib: 16, min_read_mbps: 1000 })),
  };
  await Promise.all(
    sim.hosts.map(async (h) => {
      const host = await fleet.createHost(client, operator, {
        name: `${h.profile}-${fleet.uniq()}`,
        address: h.address,
        port: h.port,
        user: h.user,
        credential_id: cred.id,
        pool_id: pools[h.profile].id,
      });
      hostOf.set(h.profile, host);
      const job = await fleet.provision(client, operator, host.id, stack.id);
      const done = await fleet.waitJob(client, viewer, job.id, { timeoutMs: 90_000, intervalMs: 400 });
      assert.equal(done.state, 'succeeded', `${h.profile}: ${done.error}`);
      const { job: gj, run } = await runJob(
        await client.request('POST', `/v1/hosts/${host.id}/gate`, { token: operator }),
        'gate',
        host.id,
      );
      gateRun.set(h.profile, run);
      gateJob.set(h.profile, gj);
    }),
  );
});

after(async () => {
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('storage_throughput in the gate', () => {
  test('healthy: accept, the rates recorded (dd, the probe on the durable path)', async () => {
    const run = gateRun.get('h100x8');
    assert.equal(run.verdict, 'accept', show(run));
    const st = check(run, 'storage_throughput');
    assert.ok(st, show(run));
    assert.equal(st.status, 'pass', show(run));
    assert.equal(st.hardware_evidence, false);
    const v = st.values;
    assert.ok(v.read_mbps > 0 && v.write_mbps > 0, JSON.stringify(v));
    assert.equal(v.read_bytes, 32 * MIB);
    assert.equal(v.write_bytes, 16 * MIB);
    assert.equal(v.read_tool, 'dd'); // no fio on the simulated hosts
    assert.equal(v.read_source, 'probe');
    assert.equal(v.read_path, `${sim.env.SIMFLEET_DURABLE_PATH}/.gpufleet-storage-probe`);
    assert.equal(typeof v.direct, 'boolean');
    assert.equal(v.min_read_mbps, 20);
    assert.equal(v.min_write_mbps, 5);
    assert.match(st.evidence, /copied, /);
    assert.match(st.message, v.direct ? /O_DIRECT/ : /not a direct rate/);
    // after the old integrity probe, before observability
    const names = run.checks.map((c) => c.name);
    assert.equal(names.indexOf('storage_throughput'), names.indexOf('storage') + 1, names.join());
    assert.equal((await getHost(hostOf.get('h100x8').id)).state, 'ready');
    // the commands: dd with O_DIRECT, the probe kept, the write removed
    const cmds = fleet
      .finalSteps(gateJob.get('h100x8'))
      .filter((s) => s.name === 'storage_throughput')
      .map((s) => s.command);
    assert.equal(cmds.length, 2);
    assert.match(cmds[0], /iflag=direct/);
    assert.match(cmds[1], /oflag=direct conv=fsync/);
  });

  test('slow durable path: the check fails with the rate and the pool minimum; verdict investigate', async () => {
    const run = gateRun.get('slow_durable');
    const st = check(run, 'storage_throughput');
    assert.equal(st.status, 'fail', show(run));
    assert.equal(st.hardware_evidence, false);
    assert.ok(Math.abs(st.values.read_mbps - 180) < 1, JSON.stringify(st.values));
    assert.equal(st.values.read_bytes, 64 * MIB);
    assert.equal(st.values.min_read_mbps, 1000);
    assert.match(st.message, /read 180 MB\/s \(dd, .*\); below the pool's minimum of 1000 MB\/s/);
    assert.match(st.evidence, /67108864 bytes \(67 MB, 64 MiB\) copied, 0\.372827 s, 180 MB\/s/);
    assert.equal(run.verdict, 'investigate', show(run));
    assert.match(run.reason, /storage_throughput \(fail\)/);
    // every other check passed: the data path alone keeps it out of service
    for (const c of run.checks) if (c.name !== 'storage_throughput') assert.notEqual(c.status, 'fail', show(run));
    assert.equal((await getHost(hostOf.get('slow_durable').id)).state, 'investigating');
  });
});

describe('targeted diagnostics: tests ["storage"]', () => {
  test('refused on a ready host (409 host_not_drained)', async () => {
    const id = hostOf.get('h100x8').id;
    expectProblem(
      await client.request('POST', `/v1/hosts/${id}/diagnostics`, { token: operator, body: { tests: ['storage'] } }),
      409,
      'host_not_drained',
    );
  });

  test('on a drained host: the check runs again, compared with the accepted gate; host back to drained', async () => {
    const id = hostOf.get('h100x8').id;
    const d = expectStatus(await client.request('POST', `/v1/hosts/${id}/drain`, { token: operator }), 200);
    assert.equal(d.state, 'drained');
    const { job, run } = await runJob(
      await client.request('POST', `/v1/hosts/${id}/diagnostics`, { token: operator, body: { tests: ['storage'] } }),
      'diagnostics',
      id,
    );
    assert.equal(job.state, 'succeeded', `${job.error_class} ${job.error}`);
    assert.equal(run.kind, 'diagnostics');
    assert.equal(run.diag_level, null);
    assert.deepEqual(
      run.checks.map((c) => c.name),
      ['storage_throughput'],
    );
    const st = check(run, 'storage_throughput');
    assert.equal(st.status, 'pass', show(run));
    assert.equal(st.values.read_bytes, 32 * MIB);
    const cmp = st.comparison;
    assert.ok(cmp, JSON.stringify(st));
    assert.equal(cmp.test, 'storage');
    assert.equal(cmp.previous.gate_run_id, gateRun.get('h100x8').id);
    assert.equal(cmp.comparable, true, JSON.stringify(cmp));
    assert.deepEqual(cmp.differing, []);
    assert.equal(cmp.conditions.read_bytes, 32 * MIB);
    assert.equal(cmp.conditions.read_tool, 'dd');
    const rd = cmp.values.read_mbps;
    assert.equal(
      rd.previous,
      gateRun.get('h100x8').checks.find((c) => c.name === 'storage_throughput').values.read_mbps,
    );
    assert.equal(rd.now, st.values.read_mbps);
    assert.equal(typeof rd.delta_pct, 'number');
    assert.equal(cmp.pool.min_read_mbps, 20);
    const host = await getHost(id);
    assert.equal(host.state, 'drained');
    assert.deepEqual(
      host.state_history.slice(0, 2).map((x) => [x.from, x.to]),
      [
        ['diagnosing', 'drained'],
        ['drained', 'diagnosing'],
      ],
    );
  });
});
