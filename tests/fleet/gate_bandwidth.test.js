'use strict';
// The gate's bandwidth reference (issue 26) over SSH against the simulated fleet
// (tests/fleet/simfleet; needs root). The simulated all_reduce_perf and nvbandwidth print
// real captures (tests/fixtures/perf, SOURCES.md there); each profile gets its verdict:
//
//   | host (profile, pool)             | bandwidth | verdict     | why                                   |
//   |----------------------------------|-----------|-------------|---------------------------------------|
//   | bw_healthy, h100                 | pass      | accept      | 479.93 GB/s >= catalog 296            |
//   | bw_healthy, h100 tool both       | pass      | accept      | + nvbandwidth D2D 171.88 >= pool 150  |
//   | bw_degraded, h100                | fail      | investigate | 155.57 GB/s < 296                     |
//   | bw_nop2p, rtx (pcie)             | fail      | investigate | 14.45 GB/s < catalog 17.5 (no P2P)    |
//   | bw_wrong, h100                   | fail      | investigate | #wrong / Test failure                 |
//   | bw_hang, h100                    | timeout   | investigate | the tool sleeps past timeout_seconds  |
//   | h100x8 (no tool), h100           | skip      | accept      | not found, not required               |
//   | h100x8 (no tool), h100 require   | fail      | investigate | not found, required                   |
//
// Every response goes through the validating client (the openapi contract).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');

const { expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');

const WORKER_ENV = {
  GPUFLEET_WORKERS: '2',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '5',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
  GPUFLEET_JOB_LEASE_SECONDS: '9',
};
// [key, profile, pool]
const HOSTS = [
  ['healthy', 'bw_healthy', 'h100'],
  ['healthy_both', 'bw_healthy', 'h100both'],
  ['degraded', 'bw_degraded', 'h100'],
  ['nop2p', 'bw_nop2p', 'rtx'],
  ['wrong', 'bw_wrong', 'h100'],
  ['hang', 'bw_hang', 'h100'],
  ['missing', 'h100x8', 'h100'],
  ['missing_required', 'h100x8', 'h100req'],
];
const CHECKS = ['gpu_inventory', 'topology', 'bandwidth'];

let sim;
let srv;
let client;
let admin;
let operator;
let viewer;
const pools = {};
const hostOf = new Map(); // key -> API host
const runOf = new Map(); // key -> {job, run}

async function runGate(hostId) {
  const queued = expectStatus(await client.request('POST', `/v1/hosts/${hostId}/gate`, { token: operator }), 202);
  const job = await fleet.waitJob(client, viewer, queued.id, { timeoutMs: 120_000, intervalMs: 300 });
  const page = expectStatus(
    await client.request('GET', `/v1/hosts/${hostId}/gate-runs?kind=gate&limit=1`, { token: viewer }),
    200,
  );
  const run = page.items[0];
  assert.ok(run && run.job_id === job.id, `no gate run for job ${job.id} (${job.state} ${job.error})`);
  return { job, run };
}
const bw = (key) => runOf.get(key).run.checks.find((c) => c.name === 'bandwidth');
const show = (key) => {
  const { job, run } = runOf.get(key);
  return JSON.stringify({
    job: [job.state, job.error_class, job.error],
    verdict: run.verdict,
    checks: run.checks.map((c) => [c.name, c.status, c.message]),
  });
};

before(async () => {
  const f = await fleet.startFleet({
    name: 'gate-bandwidth',
    sim: {
      count: HOSTS.length,
      profile: HOSTS.map((h) => h[1]),
      net: 236,
      user: 'gpufleet-bwtest',
    },
    env: WORKER_ENV,
  });
  ({ sim, srv, client, admin, operator, viewer } = f);
  const { cred, stack } = f;
  const mk = async (body, bandwidth) =>
    expectStatus(
      await client.request('POST', '/v1/pools', {
        token: admin,
        body: {
          name: `bw-${body.gpu_model}-${fleet.uniq()}`,
          price_per_hour: 10,
          durable_path: sim.env.SIMFLEET_DURABLE_PATH,
          scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
          gate: { checks: CHECKS, bandwidth },
          ...body,
        },
      }),
      201,
    );
  const h100 = { gpu_model: 'h100_sxm', gpu_count: 8, interconnect: 'nvlink' };
  pools.h100 = await mk(h100, { timeout_seconds: 6 });
  pools.h100both = await mk(h100, { tool: 'both', min_d2d_gbps: 150, timeout_seconds: 20 });
  pools.h100req = await mk(h100, { require: true, timeout_seconds: 20 });
  pools.rtx = await mk({ gpu_model: 'rtx_4090', gpu_count: 8, interconnect: 'pcie' }, { timeout_seconds: 20 });

  const hosts = [...sim.hosts];
  const waits = [];
  for (const [key, profile, pool] of HOSTS) {
    const i = hosts.findIndex((h) => h.profile === profile);
    const [h] = hosts.splice(i, 1);
    const host = await fleet.createHost(client, operator, {
      name: `${key}-${fleet.uniq()}`,
      address: h.address,
      port: h.port,
      user: h.user,
      credential_id: cred.id,
      pool_id: pools[pool].id,
    });
    hostOf.set(key, host);
    const job = await fleet.provision(client, operator, host.id, stack.id);
    waits.push(fleet.waitJob(client, viewer, job.id, { timeoutMs: 90_000, intervalMs: 400 }));
  }
  for (const j of await Promise.all(waits)) assert.equal(j.state, 'succeeded', `${j.error_class} ${j.error}`);
  await Promise.all(HOSTS.map(async ([key]) => runOf.set(key, await runGate(hostOf.get(key).id))));
});

after(async () => {
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('the bandwidth check on every profile', () => {
  test('healthy NVSwitch box: pass against the catalog, affinity recorded, host accepted', async () => {
    const c = bw('healthy');
    assert.equal(c.status, 'pass', show('healthy'));
    assert.equal(runOf.get('healthy').run.verdict, 'accept', show('healthy'));
    assert.equal(c.values.tool, 'nccl');
    assert.equal(c.values.gpus, 8);
    assert.equal(c.values.allreduce_busbw_gbps, 479.93);
    assert.match(
      c.message,
      /all_reduce busbw 479\.93 GB\/s at 8192 MiB \(minimum 296\.00\); minimums from the catalog/,
    );
    assert.equal(c.values.allreduce_avg_busbw_gbps, 145.47);
    assert.deepEqual(c.values.expected, {
      min_allreduce_busbw_gbps: 296,
      source: 'catalog',
      reference_allreduce_busbw_gbps: 480,
    });
    assert.equal(c.values.d2d_min_gbps, undefined, 'a value that was not measured is absent');
    assert.equal(c.values.affinity.gpus.length, 8, JSON.stringify(c.values.affinity));
    assert.ok(c.values.affinity.numa_nodes >= 1, JSON.stringify(c.values.affinity));
    assert.match(c.evidence, /Avg bus bandwidth/);
    const host = expectStatus(
      await client.request('GET', `/v1/hosts/${hostOf.get('healthy').id}`, { token: viewer }),
      200,
    );
    assert.equal(host.state, 'ready');
    // the command: all_reduce_perf inside the stack's image, sizes and iterations bounded
    const argv = sim.argvText(sim.ofProfile('bw_healthy')[0].name) + sim.argvText(sim.ofProfile('bw_healthy')[1].name);
    assert.match(argv, /"all_reduce_perf","-b","8M","-e","1024M","-f","2","-g","8","-n","20"/);
  });

  test('tool both: nvbandwidth D2D judged against the pool minimum', () => {
    const c = bw('healthy_both');
    assert.equal(c.status, 'pass', show('healthy_both'));
    assert.equal(c.values.tool, 'both');
    assert.ok(c.values.d2d_min_gbps > 171 && c.values.d2d_median_gbps > 171, JSON.stringify(c.values));
    assert.equal(c.values.expected.source, 'pool');
    assert.equal(c.values.expected.min_d2d_gbps, 150);
  });

  test('degraded box: fail with the measured figure and the minimum (investigate, no hardware evidence)', () => {
    const c = bw('degraded');
    assert.equal(c.status, 'fail', show('degraded'));
    assert.equal(c.hardware_evidence, false);
    assert.match(c.message, /155\.57 GB\/s .*below the minimum 296/);
    assert.equal(c.values.allreduce_busbw_gbps, 155.57);
    assert.equal(runOf.get('degraded').run.verdict, 'investigate', show('degraded'));
  });

  test('PCIe without P2P: below the catalog reference for 8x RTX 4090 (investigate)', () => {
    const c = bw('nop2p');
    assert.equal(c.status, 'fail', show('nop2p'));
    assert.match(c.message, /14\.45 GB\/s .*below the minimum 17\.5/);
    assert.equal(runOf.get('nop2p').run.verdict, 'investigate');
  });

  test('failing collective: wrong results fail with the evidence', () => {
    const c = bw('wrong');
    assert.equal(c.status, 'fail', show('wrong'));
    assert.match(c.message, /Test failure common\.cu:1189/);
    assert.match(c.evidence, /Out of bounds values : 4 FAILED/);
    assert.equal(c.values.allreduce_wrong, 128);
    assert.equal(runOf.get('wrong').run.verdict, 'investigate');
  });

  test('hang: the tool runs past timeout_seconds: timeout, investigate; the job itself succeeds', () => {
    const c = bw('hang');
    assert.equal(c.status, 'timeout', show('hang'));
    assert.match(c.message, /6 s/, show('hang'));
    const { job, run } = runOf.get('hang');
    assert.equal(run.verdict, 'investigate');
    assert.equal(job.state, 'succeeded', show('hang'));
  });

  test('missing tool: skip with the reason when not required, investigate when required', () => {
    const c = bw('missing');
    assert.equal(c.status, 'skip', show('missing'));
    assert.match(c.message, /all_reduce_perf not found in the stack's image; the pool does not require it/);
    assert.ok(c.values.affinity, 'the affinity is recorded even when the tool is missing');
    assert.equal(runOf.get('missing').run.verdict, 'accept', show('missing'));
    const r = bw('missing_required');
    assert.equal(r.status, 'fail', show('missing_required'));
    assert.match(r.message, /required \(gate\.bandwidth\.require\): all_reduce_perf not found/);
    assert.equal(runOf.get('missing_required').run.verdict, 'investigate');
  });
});
