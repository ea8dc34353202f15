'use strict';
// The acceptance gate and active diagnostics over SSH against the simulated
// GPU fleet (tests/fleet/simfleet; needs root). Every profile is provisioned
// (some provisionings fail, as they should), then gated:
//
//   | profile              | verdict     | failing check            |
//   |----------------------|-------------|--------------------------|
//   | h100x8 a100x8 l4x1   | accept      | none (host ready)        |
//   | rtx4090x8            | accept      | none (pool pcie: any)    |
//   | gpu_missing          | isolate     | gpu_inventory            |
//   | gpu_err              | isolate     | (gpu_inventory)          |
//   | driver_mismatch      | investigate | (gpu_inventory: driver)  |
//   | no_container_runtime | investigate | container_gpu            |
//   | readonly_disk        | —           | storage                  |
//   | slow_workload        | —           | workload (timeout)       |
//   | hang                 | —           | a timeout                |
//
// Then: a topology that misses the pool's link class (the RTX 4090's SYS
// pairs against NV*) isolates; diagnostics are refused on a ready host and
// run after a drain (dcgmi per-test results in the values); resume; the
// readiness answers change as evidence arrives. Every response goes through
// the validating client.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { startServer, ROOT } = require('../api/lib/server');
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
const PROFILES = [
  'h100x8',
  'a100x8',
  'l4x1',
  'rtx4090x8',
  'gpu_missing',
  'gpu_err',
  'driver_mismatch',
  'no_container_runtime',
  'readonly_disk',
  'slow_workload',
  'hang',
];
const HEALTHY = ['h100x8', 'a100x8', 'l4x1', 'rtx4090x8'];
const CHECK_ORDER = ['gpu_inventory', 'container_gpu', 'workload', 'topology', 'storage', 'observability', 'bandwidth'];
const SAMPLE = path.join(ROOT, 'test-artifacts', 'fleet-gate-sample.json');

let sim;
let srv;
let client;
let admin;
let operator;
let viewer;
let cred;
let stack;
const pools = {}; // h100, l4, rtx, a100 -> pool
const hostOf = new Map(); // profile -> API host
const provJob = new Map(); // profile -> final provision job
const gateJob = new Map(); // profile -> final gate job
const gateRun = new Map(); // profile -> gate run
const readinessBefore = new Map(); // profile -> readiness before the gate
const sample = {};

function gateDef() {
  return {
    storage_min_mbps: 20,
    workload: { command: ['python3', 'bench.py'], metric: 'tokens_per_second', min: 1000, timeout_s: 8 },
  };
}
function poolInput(overrides) {
  return {
    name: `gate-${overrides.gpu_model}-${fleet.uniq()}`,
    price_per_hour: 10,
    durable_path: sim.env.SIMFLEET_DURABLE_PATH,
    scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
    gate: gateDef(),
    ...overrides,
  };
}
function poolFor(profile) {
  if (profile === 'l4x1') return pools.l4;
  if (profile === 'rtx4090x8') return pools.rtx;
  if (profile === 'a100x8') return pools.a100;
  return pools.h100; // h100x8 and every failure profile (8x H100 hosts)
}
async function getHost(id) {
  return expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
}
async function readiness(id) {
  const r = expectStatus(await client.request('GET', `/v1/hosts/${id}/readiness`, { token: viewer }), 200);
  return {
    ...r,
    a: Object.fromEntries(r.questions.map((q) => [q.id, q.answer])),
    q: Object.fromEntries(r.questions.map((q) => [q.id, q])),
  };
}
/** Queue a gate (or diagnostics) job and wait for it; return {job, run}. */
async function runGate(hostId, { diagnostics, timeoutMs = 90_000 } = {}) {
  const res = diagnostics
    ? await client.request('POST', `/v1/hosts/${hostId}/diagnostics`, { token: operator, body: { level: diagnostics } })
    : await client.request('POST', `/v1/hosts/${hostId}/gate`, { token: operator });
  const queued = expectStatus(res, 202);
  assert.equal(res.headers.get('location'), `/v1/jobs/${queued.id}`);
  const job = await fleet.waitJob(client, viewer, queued.id, { timeoutMs, intervalMs: 300 });
  const kind = diagnostics ? 'diagnostics' : 'gate';
  const page = expectStatus(
    await client.request('GET', `/v1/hosts/${hostId}/gate-runs?kind=${kind}&limit=1`, { token: viewer }),
    200,
  );
  const run = page.items[0];
  assert.ok(
    run,
    `no ${kind} run for host ${hostId} after job ${job.id} (${job.state} ${job.error_class} ${job.error})`,
  );
  assert.equal(
    run.job_id,
    job.id,
    `the newest ${kind} run belongs to job ${job.id} (${job.state} ${job.error_class} ${job.error})`,
  );
  return { job, run };
}
function check(run, name) {
  return run.checks.find((c) => c.name === name);
}
function failing(run) {
  return run.checks.filter((c) => c.status === 'fail' || c.status === 'timeout').map((c) => c.name);
}
function show(run) {
  return JSON.stringify({
    verdict: run.verdict,
    reason: run.reason,
    checks: run.checks.map((c) => [c.name, c.status, c.message]),
  });
}

before(async () => {
  sim = fleet.simfleet.up({
    count: PROFILES.length,
    profile: PROFILES,
    net: 215,
    user: 'gpufleet-gtest',
    delay: 0,
    dir: fs.mkdtempSync('/tmp/gft-gate-fleet-'),
    extra: ['--slow', '30'],
  });
  srv = await startServer({ name: 'fleet-gate', env: WORKER_ENV });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  stack = await fleet.createStack(client, operator);
  const mk = async (body) =>
    expectStatus(await client.request('POST', '/v1/pools', { token: admin, body: poolInput(body) }), 201);
  pools.h100 = await mk({ gpu_model: 'h100_sxm', gpu_count: 8, interconnect: 'nvlink' });
  pools.l4 = await mk({ gpu_model: 'l4', gpu_count: 1 });
  pools.rtx = await mk({ gpu_model: 'rtx_4090', gpu_count: 8, interconnect: 'pcie' });
  pools.a100 = await mk({ gpu_model: 'a100_sxm4_80gb', gpu_count: 8, interconnect: 'nvlink' });

  // Register and provision every host at once; wait for every provision job to end.
  const waits = [];
  for (const h of sim.hosts) {
    const host = await fleet.createHost(client, operator, {
      name: `${h.profile}-${fleet.uniq()}`,
      address: h.address,
      port: h.port,
      user: h.user,
      credential_id: cred.id,
      pool_id: poolFor(h.profile).id,
    });
    hostOf.set(h.profile, host);
    // nothing to gate yet
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/gate`, { token: operator }),
      409,
      'not_provisioned',
    );
    const job = await fleet.provision(client, operator, host.id, stack.id);
    expectProblem(await client.request('POST', `/v1/hosts/${host.id}/gate`, { token: operator }), 409, 'host_busy');
    waits.push(
      fleet
        .waitJob(client, viewer, job.id, { timeoutMs: 90_000, intervalMs: 400 })
        .then((j) => provJob.set(h.profile, j)),
    );
  }
  await Promise.all(waits);
  for (const p of PROFILES) readinessBefore.set(p, await readiness(hostOf.get(p).id));

  // Gate every host at once.
  await Promise.all(
    PROFILES.map(async (p) => {
      const { job, run } = await runGate(hostOf.get(p).id);
      gateJob.set(p, job);
      gateRun.set(p, run);
    }),
  );
});

after(async () => {
  try {
    fs.mkdirSync(path.dirname(SAMPLE), { recursive: true });
    fs.writeFileSync(SAMPLE, JSON.stringify(sample, null, 2));
  } catch {
    /* a sample for docs/hosts-and-gates.md only */
  }
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('provisioning before the gate', () => {
  test('healthy hosts are provisioned; the failure profiles fail as expected', () => {
    for (const p of [...HEALTHY, 'gpu_missing', 'gpu_err', 'slow_workload']) {
      const j = provJob.get(p);
      assert.equal(j.state, 'succeeded', `${p}: ${j.error_class} ${j.error}`);
    }
    for (const p of ['driver_mismatch', 'no_container_runtime', 'readonly_disk', 'hang']) {
      assert.equal(provJob.get(p).state, 'failed', p);
    }
  });

  test('before the gate: topology and baseline are no, access is yes', () => {
    for (const p of HEALTHY) {
      const r = readinessBefore.get(p);
      assert.equal(r.state, 'provisioned', p);
      assert.equal(r.a.topology, 'no', p);
      assert.equal(r.a.baseline, 'no', p);
      assert.equal(r.a.access, 'yes', `${p}: the key was recorded on first contact; ${JSON.stringify(r.q.access)}`);
      assert.equal(r.a.stack_pinned, 'yes', p);
      assert.equal(r.a.recovery, 'no', p);
      assert.equal(r.a.idle_stop, 'no', p);
    }
    sample.readiness_before = readinessBefore.get('h100x8');
  });
});

describe('the gate on every profile', () => {
  test('every gate job records one check step per command; only a hung host fails the job (timed_out)', () => {
    for (const p of PROFILES) {
      const j = gateJob.get(p);
      assert.equal(j.kind, 'gate');
      if (p === 'hang') {
        // its first query timed out twice: the verdict is recorded, and the job says why
        assert.equal(j.state, 'failed');
        assert.equal(j.error_class, 'timed_out');
        assert.match(
          j.error,
          /nvidia-smi did not answer in \d+ s: the GPU may have fallen off the bus \(tried twice\)/,
        );
      } else {
        assert.equal(j.state, 'succeeded', `${p}: ${j.error_class} ${j.error}`);
      }
      const steps = fleet.finalSteps(j);
      assert.ok(steps.length > 0, p);
      for (const s of steps) {
        assert.equal(s.phase, 'check', `${p} ${s.name}`);
        assert.ok(CHECK_ORDER.includes(s.name), `${p}: step ${s.name}`);
        assert.ok(['ok', 'error'].includes(s.outcome), `${p} ${s.name}: ${s.outcome}`);
      }
    }
    sample.gate_job = gateJob.get('h100x8');
  });

  test('every run records the host, stack, pool, gate version, phases and bounded evidence', () => {
    for (const p of PROFILES) {
      const run = gateRun.get(p);
      const host = hostOf.get(p);
      assert.equal(run.kind, 'gate');
      assert.equal(run.host_id, host.id);
      assert.equal(run.stack_id, stack.id, `${p}: the current stack, or the desired one after a failed provisioning`);
      assert.equal(run.pool_id, poolFor(p).id);
      assert.equal(run.gate_version, 1);
      assert.equal(run.diag_level, null);
      assert.ok(run.connect_ms > 0, `${p}: connect_ms ${run.connect_ms}`);
      assert.ok(Date.parse(run.finished_at) >= Date.parse(run.started_at));
      assert.deepEqual(
        run.checks.map((c) => c.name),
        CHECK_ORDER,
        p,
      );
      for (const c of run.checks) {
        assert.ok(c.evidence.length <= 8192, `${p} ${c.name}: ${c.evidence.length} characters of evidence`);
        assert.equal(typeof c.phases.command_ms, 'number');
        assert.equal(typeof c.phases.parse_ms, 'number');
        assert.ok(Math.abs(c.duration_ms - (c.phases.command_ms + c.phases.parse_ms)) < 1, `${p} ${c.name}`);
        if (c.status !== 'skip') assert.ok(c.phases.command_ms > 0, `${p} ${c.name}: command_ms`);
      }
      // no observability_url in these pools
      assert.equal(check(run, 'observability').status, 'skip', p);
    }
  });

  for (const p of HEALTHY) {
    test(`${p}: accept, no failing check, host ready`, async () => {
      const run = gateRun.get(p);
      assert.equal(run.verdict, 'accept', show(run));
      assert.deepEqual(failing(run), []);
      const host = await getHost(hostOf.get(p).id);
      assert.equal(host.state, 'ready');
      assert.deepEqual(
        host.state_history.slice(0, 2).map((x) => [x.from, x.to]),
        [
          ['gating', 'ready'],
          ['provisioned', 'gating'],
        ],
      );
      assert.equal(host.state_history[0].job_id, run.job_id);
      assert.match(host.state_history[0].reason, /accept/);
      const inv = check(run, 'gpu_inventory');
      assert.equal(inv.status, 'pass');
      assert.equal(inv.values.gpu_count, p === 'l4x1' ? 1 : 8);
      const wl = check(run, 'workload');
      assert.equal(wl.status, 'pass', show(run));
      assert.equal(wl.values.metric, 'tokens_per_second');
      assert.equal(wl.values.value, 2400);
      assert.equal(wl.values.min, 1000);
      assert.match(wl.evidence, /tokens_per_second=2400/);
      assert.equal(check(run, 'storage').status, 'pass');
      assert.equal(check(run, 'container_gpu').status, 'pass');
      assert.equal(check(run, 'topology').status, p === 'l4x1' ? 'skip' : 'pass', show(run));
    });
  }

  test('the gate ran the pinned image and the workload argv literally', () => {
    const h = sim.ofProfile('h100x8')[0];
    const calls = sim.argv(h.name);
    const runs = calls.filter((a) => a[0] === 'docker' && a[1] === 'run');
    assert.ok(
      runs.some((a) => a.includes('python3') && a.includes('bench.py')),
      JSON.stringify(runs),
    );
    const image = stack.image.replace(/:[^:/@]+@/, '@');
    assert.ok(
      runs.every((a) => a.includes(image)),
      `every docker run uses ${image}: ${JSON.stringify(runs)}`,
    );
    assert.ok(calls.some((a) => a[0] === 'nvidia-smi' && a[1] === 'topo'));
  });

  test('gpu_missing: isolate, gpu_inventory fails with hardware evidence, host quarantined', async () => {
    const run = gateRun.get('gpu_missing');
    assert.equal(run.verdict, 'isolate', show(run));
    const inv = check(run, 'gpu_inventory');
    assert.equal(inv.status, 'fail');
    assert.equal(inv.hardware_evidence, true);
    assert.equal(inv.values.gpu_count, 7);
    assert.equal(inv.values.expected_gpus, 8);
    assert.match(run.reason, /gpu_inventory/);
    assert.equal((await getHost(hostOf.get('gpu_missing').id)).state, 'quarantined');
    sample.isolate_run = run;
  });

  test('gpu_err: isolate, host quarantined', async () => {
    const run = gateRun.get('gpu_err');
    assert.equal(run.verdict, 'isolate', show(run));
    assert.ok(
      run.checks.some((c) => c.hardware_evidence && c.status === 'fail'),
      show(run),
    );
    assert.equal((await getHost(hostOf.get('gpu_err').id)).state, 'quarantined');
  });

  test('driver_mismatch: investigate (a configuration mismatch is not hardware)', async () => {
    const run = gateRun.get('driver_mismatch');
    assert.equal(run.verdict, 'investigate', show(run));
    assert.ok(failing(run).length > 0, show(run));
    assert.ok(
      run.checks.every((c) => !c.hardware_evidence),
      show(run),
    );
    assert.equal((await getHost(hostOf.get('driver_mismatch').id)).state, 'investigating');
  });

  test('no_container_runtime: investigate, container_gpu fails', async () => {
    const run = gateRun.get('no_container_runtime');
    assert.equal(run.verdict, 'investigate', show(run));
    assert.ok(failing(run).includes('container_gpu'), show(run));
    assert.equal(check(run, 'gpu_inventory').status, 'pass', show(run));
    assert.equal((await getHost(hostOf.get('no_container_runtime').id)).state, 'investigating');
  });

  test('readonly_disk: storage fails', () => {
    const run = gateRun.get('readonly_disk');
    const st = check(run, 'storage');
    assert.equal(st.status, 'fail', show(run));
    assert.match(st.evidence, /Read-only file system/);
    assert.notEqual(run.verdict, 'accept');
  });

  test('slow_workload: workload times out (8 s < 30 s)', () => {
    const run = gateRun.get('slow_workload');
    const wl = check(run, 'workload');
    assert.equal(wl.status, 'timeout', show(run));
    assert.ok(wl.phases.command_ms >= 7000 && wl.phases.command_ms < 20_000, `${wl.phases.command_ms} ms`);
    assert.equal(run.verdict, 'investigate', show(run));
    const steps = fleet.finalSteps(gateJob.get('slow_workload')).filter((s) => s.name === 'workload');
    assert.deepEqual(
      steps.map((s) => s.outcome),
      ['error'],
    );
  });

  test('hang: a check times out, verdict investigate', async () => {
    const run = gateRun.get('hang');
    assert.ok(
      run.checks.some((c) => c.status === 'timeout'),
      show(run),
    );
    assert.equal(run.verdict, 'investigate', show(run));
    // the first query that hangs stops the gate: the rest are recorded as not run
    const inv = check(run, 'gpu_inventory');
    assert.equal(inv.status, 'timeout', show(run));
    assert.match(inv.message, /nvidia-smi did not answer/);
    for (const c of run.checks.filter((x) => x.name !== 'gpu_inventory')) {
      assert.equal(c.status, 'skip', show(run));
    }
    assert.ok(
      run.checks.some((c) => /not run: an earlier query did not answer/.test(c.message)),
      show(run),
    );
    assert.equal((await getHost(hostOf.get('hang').id)).state, 'investigating');
  });

  test('gate runs are listed and filtered', async () => {
    const all = expectStatus(await client.request('GET', '/v1/gate-runs?kind=gate&limit=500', { token: viewer }), 200);
    assert.equal(all.items.length, PROFILES.length);
    const ids = all.items.map((r) => r.id);
    for (const p of PROFILES) assert.ok(ids.includes(gateRun.get(p).id), p);
    const iso = expectStatus(await client.request('GET', '/v1/gate-runs?verdict=isolate', { token: viewer }), 200);
    assert.deepEqual(
      new Set(iso.items.map((r) => r.host_id)),
      new Set([hostOf.get('gpu_missing').id, hostOf.get('gpu_err').id]),
    );
    const one = expectStatus(
      await client.request('GET', `/v1/gate-runs/${gateRun.get('h100x8').id}`, { token: viewer }),
      200,
    );
    assert.deepEqual(one, gateRun.get('h100x8'));
    // keyset pagination, newest first
    const p1 = expectStatus(await client.request('GET', '/v1/gate-runs?kind=gate&limit=4', { token: viewer }), 200);
    assert.equal(p1.items.length, 4);
    assert.deepEqual(
      p1.items.map((r) => r.id),
      ids.slice(0, 4),
    );
    const p2 = expectStatus(
      await client.request('GET', `/v1/gate-runs?kind=gate&limit=4&cursor=${encodeURIComponent(p1.next_cursor)}`, {
        token: viewer,
      }),
      200,
    );
    assert.deepEqual(
      p2.items.map((r) => r.id),
      ids.slice(4, 8),
    );
    sample.accept_run = gateRun.get('h100x8');
  });
});

describe('after the gate', () => {
  test('readiness: topology and baseline become yes after an accepted gate', async () => {
    for (const p of HEALTHY) {
      const r = await readiness(hostOf.get(p).id);
      assert.equal(r.state, 'ready');
      assert.equal(r.a.topology, 'yes', `${p}: ${JSON.stringify(r.q.topology)}`);
      assert.equal(r.a.baseline, 'yes', `${p}: ${JSON.stringify(r.q.baseline)}`);
      assert.equal(r.q.topology.evidence.gate_run_id, gateRun.get(p).id);
      assert.equal(r.q.baseline.evidence.values.value, 2400);
      assert.equal(r.a.access, 'yes');
      assert.equal(r.a.observability, 'unknown', 'skipped without an observability_url');
      assert.ok(r.summary.yes > readinessBefore.get(p).summary.yes, p);
    }
    // a failed gate leaves them no
    const r = await readiness(hostOf.get('gpu_missing').id);
    assert.equal(r.a.topology, 'no');
    assert.equal(r.a.baseline, 'no');
  });

  test('a topology that misses the pool link class fails: isolate (degraded link)', async () => {
    const id = hostOf.get('rtx4090x8').id;
    const got = await client.request('GET', `/v1/pools/${pools.rtx.id}`, { token: viewer });
    const cur = expectStatus(got, 200);
    assert.equal(cur.gate.link_class, 'PIX,PXB,PHB,NODE,SYS', 'a pcie pool accepts every PCIe link class by default');
    const body = poolInput({
      name: cur.name,
      gpu_model: 'rtx_4090',
      gpu_count: 8,
      interconnect: 'pcie',
      gate: { ...gateDef(), link_class: 'NV*' },
    });
    const put = await client.request('PUT', `/v1/pools/${pools.rtx.id}`, {
      token: admin,
      body,
      headers: { 'If-Match': got.headers.get('etag') },
    });
    const updated = expectStatus(put, 200);
    assert.equal(updated.gate_version, 2);
    const { run } = await runGate(id);
    assert.equal(run.gate_version, 2);
    const topo = check(run, 'topology');
    assert.equal(topo.status, 'fail', show(run));
    assert.equal(topo.hardware_evidence, true, show(run));
    assert.match(topo.evidence, /SYS/);
    assert.equal(run.verdict, 'isolate', show(run));
    const host = await getHost(id);
    assert.equal(host.state, 'quarantined');
    // the acceptance is gone with it
    const r = await readiness(id);
    assert.equal(r.a.topology, 'no');
    sample.topology_run = run;
  });

  test('diagnostics: refused on a ready host, run after a drain, then resume', async () => {
    const id = hostOf.get('h100x8').id;
    expectProblem(
      await client.request('POST', `/v1/hosts/${id}/diagnostics`, { token: operator, body: { level: 1 } }),
      409,
      'host_not_drained',
    );
    const d = expectStatus(await client.request('POST', `/v1/hosts/${id}/drain`, { token: operator }), 200);
    assert.equal(d.state, 'drained');
    expectProblem(await client.request('POST', `/v1/hosts/${id}/gate`, { token: operator }), 409, 'host_drained');
    const { job, run } = await runGate(id, { diagnostics: 1 });
    assert.equal(job.kind, 'diagnostics');
    assert.deepEqual(job.params, { level: 1 });
    assert.equal(job.state, 'succeeded', `${job.error_class} ${job.error}`);
    assert.deepEqual(
      fleet.finalSteps(job).map((s) => [s.name, s.phase, s.outcome]),
      [['diagnostics', 'check', 'ok']],
    );
    assert.equal(run.kind, 'diagnostics');
    assert.equal(run.diag_level, 1);
    assert.equal(run.gate_version, null);
    assert.equal(run.verdict, 'accept', show(run));
    assert.deepEqual(
      run.checks.map((c) => c.name),
      ['diagnostics'],
    );
    const dc = run.checks[0];
    assert.equal(dc.status, 'pass', show(run));
    assert.ok(dc.values && typeof dc.values === 'object', 'per-test results are parsed');
    assert.match(JSON.stringify(dc.values), /Deployment|deployment|software|Software/i, JSON.stringify(dc.values));
    assert.match(dc.evidence, /Diagnostic/);
    const calls = sim.argv(sim.ofProfile('h100x8')[0].name).filter((a) => a[0] === 'dcgmi');
    assert.deepEqual(calls.at(-1).slice(0, 3), ['dcgmi', 'diag', '-r']);
    assert.equal(calls.at(-1)[3], '1');
    const host = await getHost(id);
    assert.equal(host.state, 'drained');
    assert.deepEqual(
      host.state_history.slice(0, 2).map((x) => [x.from, x.to]),
      [
        ['diagnosing', 'drained'],
        ['drained', 'diagnosing'],
      ],
    );
    const res = expectStatus(await client.request('POST', `/v1/hosts/${id}/resume`, { token: operator }), 200);
    assert.equal(res.state, 'ready');
    sample.diagnostics_run = run;
  });

  let gpuErrDiag;
  test('diagnostics on gpu_err: the failing test and its error are parsed', async () => {
    const id = hostOf.get('gpu_err').id;
    // isolated by its gate: quarantined; a drain is refused (quarantine holds), while
    // diagnostics run on it as it is and it stays quarantined
    assert.equal((await getHost(id)).state, 'quarantined');
    expectProblem(await client.request('POST', `/v1/hosts/${id}/drain`, { token: operator }), 409, 'host_quarantined');
    const { run } = await runGate(id, { diagnostics: 1 });
    assert.equal((await getHost(id)).state, 'quarantined');
    gpuErrDiag = run;
    const dc = run.checks[0];
    assert.equal(dc.status, 'fail', show(run));
    assert.match(dc.evidence, /uncorrectable memory errors/);
    const t = dc.values.tests.find((x) => x.name === 'Page Retirement/Row Remap');
    assert.ok(['fail', 'error'].includes(t.result), JSON.stringify(dc.values));
    assert.deepEqual(t.gpus, [{ gpu: 'all', result: 'fail' }]);
    assert.match(t.message, /GPU 3 has uncorrectable memory errors and row remappings are pending/);
    for (const x of dc.values.tests.filter((y) => y !== t)) assert.equal(x.result, 'pass', x.name);
    assert.notEqual(run.verdict, 'accept');
  });

  // docs/product.md §5: pending row remaps / uncorrectable ECC errors are hardware
  // evidence. Today the parser turns the failing test with its `Error` row
  // into result `error` (verdict `error`), so the check says "diagnostics did
  // not complete (errors)" without hardware evidence: investigate, and the
  // host goes back to drained. Reported to the lead.
  test('diagnostics on gpu_err isolate the host (hardware evidence)', async () => {
    assert.ok(gpuErrDiag, 'the diagnostics run above');
    assert.equal(gpuErrDiag.checks[0].hardware_evidence, true, show(gpuErrDiag));
    assert.equal(gpuErrDiag.verdict, 'isolate');
    assert.equal((await getHost(hostOf.get('gpu_err').id)).state, 'quarantined');
  });

  test('readiness: a second accepted gate is no restore test (recovery stays no); auto_stop flips idle_stop', async () => {
    const id = hostOf.get('h100x8').id;
    const { run } = await runGate(id);
    assert.equal(run.verdict, 'accept', show(run));
    let r = await readiness(id);
    // question 8 answers from restore drills only (tests/fleet/drill.test.js)
    assert.equal(r.a.recovery, 'no', JSON.stringify(r.q.recovery));
    assert.equal(r.q.recovery.evidence.drill_id, null);
    assert.equal(r.a.idle_stop, 'no');
    const got = await client.request('GET', `/v1/pools/${pools.h100.id}`, { token: viewer });
    const cur = expectStatus(got, 200);
    const body = poolInput({
      name: cur.name,
      gpu_model: 'h100_sxm',
      gpu_count: 8,
      interconnect: 'nvlink',
      auto_stop: true,
      stop_command: 'sudo /usr/sbin/poweroff',
    });
    const put = expectStatus(
      await client.request('PUT', `/v1/pools/${pools.h100.id}`, {
        token: admin,
        body,
        headers: { 'If-Match': got.headers.get('etag') },
      }),
      200,
    );
    assert.equal(put.gate_version, 1, 'the gate did not change');
    r = await readiness(id);
    assert.equal(r.a.idle_stop, 'yes', JSON.stringify(r.q.idle_stop));
    assert.equal(r.q.idle_stop.evidence.stop_command, 'sudo /usr/sbin/poweroff');
    sample.readiness_after = r;
    delete sample.readiness_after.a;
    delete sample.readiness_after.q;
  });
});
