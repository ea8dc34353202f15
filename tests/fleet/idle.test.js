'use strict';
// Idle shutdown against the simulated GPU fleet (tests/fleet/simfleet; needs
// root): issue 6 part 5. Five h100x8 hosts are provisioned and accepted by
// the gate, in two pools that stop with `poweroff --no-wall` (the simulated
// `poweroff` logs its argv and stops nothing) and an idle window of 1800 s:
//
//   | host  | pool         | reports (relative to now)               |
//   |-------|--------------|-----------------------------------------|
//   | aIdle | auto_stop    | [−2 h, −1 h]: nothing done → idle ~2 h  |
//   | aBusy | auto_stop    | [−20 min, −5 min]: busy → idle ~5 min   |
//   | aNone | auto_stop    | none (no usage data)                    |
//   | mIdle | manual       | [−2 h, −1 h]: nothing done              |
//   | mBusy | manual       | [−20 min, −5 min]: busy                 |
//
// Time is given by explicit window timestamps (no test sleeps for time); the
// server's idle policy runs every second (GPUFLEET_IDLE_POLICY_INTERVAL=1),
// which the test waits for. (a) the auto_stop pool's idle host is stopped by
// system:idle-policy, nothing else is; (b) examples/idle-shutdown.sh
// --dry-run stops nothing, then without it stops the manual pool's idle host;
// (c) the reporter role posts reports and reads nothing. Every response goes
// through the validating client.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const { startServer, ROOT } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectProblem, expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');

const WORKER_ENV = {
  GPUFLEET_WORKERS: '2',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '10',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
  GPUFLEET_IDLE_POLICY_INTERVAL: '1',
};
const SCRIPT = path.join(ROOT, 'examples', 'idle-shutdown.sh');
const NAMES = ['aIdle', 'aBusy', 'aNone', 'mIdle', 'mBusy'];
const NOW = Math.floor(Date.now() / 1000) * 1000;
const ago = (s) => new Date(NOW - s * 1000).toISOString().replace('.000Z', 'Z');

let sim;
let srv;
let client;
let admin;
let operator;
let viewer;
let reporter;
const pools = {};
const H = {}; // name -> {sim, api}

function poolInput(overrides) {
  return {
    name: `idle-${fleet.uniq()}`,
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    interconnect: 'nvlink',
    price_per_hour: 10,
    durable_path: sim.env.SIMFLEET_DURABLE_PATH,
    scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
    stop_command: 'poweroff --no-wall',
    idle_stop_after_seconds: 1800,
    gate: {
      storage_min_mbps: 20,
      workload: { command: ['python3', 'bench.py'], metric: 'tokens_per_second', min: 1000, timeout_s: 8 },
    },
    ...overrides,
  };
}
const getHost = async (id) => expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
const stopEvents = async (id) =>
  expectStatus(await client.request('GET', `/v1/audit-events?action=host.stop&resource_id=${id}`, { token: admin }), 200).items;
const poweroffs = (name) => sim.argv(H[name].sim.name).filter((a) => a[0] === 'poweroff');
const waitIntervals = (n) => fleet.sleep(n * 1000 + 300); // the scheduler's 1 s, not time in the data

function idleReport(h) {
  return { host_id: h.api.id, window_start: ago(7200), window_end: ago(3600), unit: 'tokens', completed: 0, failed: 0, retried: 0, busy_seconds: 0 };
}
function busyReport(h) {
  return { host_id: h.api.id, window_start: ago(1200), window_end: ago(300), unit: 'tokens', completed: 50000, failed: 0, retried: 0, busy_seconds: 800 };
}

/** Poll until the host is stopped by a stop job; returns {host, job}. */
async function waitStopped(id, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const host = await getHost(id);
    if (host.last_job && host.last_job.kind === 'stop') {
      const job = await fleet.waitJob(client, viewer, host.last_job.id, { timeoutMs: 30_000 });
      return { host: await getHost(id), job };
    }
    if (Date.now() > deadline) throw new Error(`host ${id} was not stopped within ${timeoutMs} ms (state ${host.state})`);
    await fleet.sleep(250);
  }
}

function runScript(args) {
  const r = spawnSync('bash', [SCRIPT, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, GPUFLEET_URL: srv.url, GPUFLEET_TOKEN: operator },
  });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

before(async () => {
  sim = fleet.simfleet.up({
    count: NAMES.length,
    profile: 'h100x8',
    net: 219,
    user: 'gpufleet-itest',
    delay: 0,
    dir: fs.mkdtempSync('/tmp/gft-idle-fleet-'),
  });
  srv = await startServer({ name: 'fleet-idle', env: WORKER_ENV });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  const stack = await fleet.createStack(client, operator);
  pools.auto = expectStatus(await client.request('POST', '/v1/pools', { token: admin, body: poolInput({ auto_stop: true }) }), 201);
  pools.manual = expectStatus(await client.request('POST', '/v1/pools', { token: admin, body: poolInput({}) }), 201);
  assert.equal(pools.auto.auto_stop, true);
  assert.equal(pools.manual.auto_stop, false);
  reporter = srv.token('reporter', { args: ['--pool', pools.auto.name, '--pool', pools.manual.name] });
  await Promise.all(
    NAMES.map(async (n, i) => {
      const s = sim.hosts[i];
      const host = await fleet.createHost(client, operator, {
        name: `idle-${n.toLowerCase()}-${fleet.uniq()}`,
        address: s.address,
        port: s.port,
        user: s.user,
        credential_id: cred.id,
        pool_id: (n.startsWith('a') ? pools.auto : pools.manual).id,
      });
      H[n] = { sim: s, api: host };
      const pj = await fleet.waitJob(client, viewer, (await fleet.provision(client, operator, host.id, stack.id)).id, { timeoutMs: 90_000, intervalMs: 400 });
      assert.equal(pj.state, 'succeeded', `provision ${n}: ${pj.error_class} ${pj.error}`);
      const gate = expectStatus(await client.request('POST', `/v1/hosts/${host.id}/gate`, { token: operator }), 202);
      const gj = await fleet.waitJob(client, viewer, gate.id, { timeoutMs: 90_000, intervalMs: 400 });
      assert.equal(gj.state, 'succeeded', `gate ${n}: ${gj.error_class} ${gj.error}`);
      const runs = expectStatus(await client.request('GET', `/v1/hosts/${host.id}/gate-runs?kind=gate&limit=1`, { token: viewer }), 200);
      assert.equal(runs.items[0].verdict, 'accept', `gate ${n}: ${JSON.stringify(runs.items[0])}`);
      assert.equal((await getHost(host.id)).state, 'ready');
    }),
  );
  // Nothing is stopped without usage data, whatever the pool says.
  await waitIntervals(2);
  for (const n of NAMES) assert.equal((await getHost(H[n].api.id)).state, 'ready', n);
});

after(async () => {
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('idle shutdown', () => {
  test('(c) the reporter posts reports and reads nothing', async () => {
    const res = await client.request('POST', '/v1/work-reports', {
      token: reporter,
      body: { records: [idleReport(H.aIdle), busyReport(H.aBusy), idleReport(H.mIdle), busyReport(H.mBusy)] },
    });
    assert.ok(res.status === 200 || res.status === 201, `POST /v1/work-reports: ${res.status} ${res.text}`);
    assert.equal(res.body.accepted, 4);
    for (const p of [
      '/v1/hosts',
      `/v1/hosts/${H.aIdle.api.id}`,
      '/v1/costs',
      '/v1/costs?group_by=pool',
      '/v1/recommendations',
      '/v1/recommendations?action=stop',
      '/v1/work-reports',
      `/v1/work-reports?host_id=${H.aIdle.api.id}`,
    ]) {
      expectProblem(await client.request('GET', p, { token: reporter }), 403, 'insufficient_role');
    }
  });

  test('the recommendations: both idle hosts, the silent host apart', async () => {
    const r = expectStatus(await client.request('GET', '/v1/recommendations?action=stop', { token: viewer }), 200);
    const stopIds = r.items.map((i) => i.target.host_ids[0]);
    // aIdle may already be on its way to stopped (then it has a job and is no longer listed)
    assert.ok(stopIds.includes(H.mIdle.api.id), JSON.stringify(r));
    assert.ok(!stopIds.includes(H.aBusy.api.id) && !stopIds.includes(H.mBusy.api.id) && !stopIds.includes(H.aNone.api.id));
    assert.ok(r.no_usage_data.some((h) => h.host_id === H.aNone.api.id));
  });

  test('(a) an auto_stop pool stops its idle host as system:idle-policy', async () => {
    const { host, job } = await waitStopped(H.aIdle.api.id);
    assert.equal(job.kind, 'stop');
    assert.equal(job.state, 'succeeded', `${job.error_class} ${job.error}`);
    assert.equal(host.state, 'stopped');
    assert.deepEqual(poweroffs('aIdle'), [['poweroff', '--no-wall']]);
    const ev = await stopEvents(H.aIdle.api.id);
    assert.equal(ev.length, 1);
    assert.equal(ev[0].principal, 'system:idle-policy');
    assert.equal(ev[0].role, 'system');
    const m = /^idle for (\d+) s \(pool idle_stop_after_seconds 1800\)$/.exec(ev[0].reason);
    assert.ok(m, ev[0].reason);
    assert.ok(Number(m[1]) >= 7200, ev[0].reason);
    const [last, prev] = host.state_history;
    assert.deepEqual([prev.from, prev.to, last.from, last.to], ['ready', 'stopping', 'stopping', 'stopped']);
    assert.match(prev.reason, /system:idle-policy/);

    // a few more passes: the busy host, the silent host and the manual pool's idle host stay
    await waitIntervals(3);
    for (const n of ['aBusy', 'aNone', 'mIdle', 'mBusy']) {
      const h = await getHost(H[n].api.id);
      assert.equal(h.state, 'ready', n);
      assert.deepEqual(await stopEvents(H[n].api.id), [], n);
      assert.deepEqual(poweroffs(n), [], n);
    }
    // one stop only, however many passes ran
    assert.equal((await stopEvents(H.aIdle.api.id)).length, 1);
  });

  test('(b) examples/idle-shutdown.sh: --dry-run stops nothing, then it stops the idle host', async () => {
    const dry = runScript(['--dry-run']);
    assert.equal(dry.status, 0, dry.out + dry.err);
    assert.match(dry.out, /^1 stop recommendation\(s\) at /m);
    assert.ok(dry.out.includes(`stop ${H.mIdle.api.id}: `), dry.out);
    assert.ok(dry.out.includes(`would run on ${H.mIdle.sim.user}@`), dry.out);
    assert.ok(dry.out.includes('poweroff --no-wall'), dry.out);
    assert.ok(dry.out.includes(`skip ${H.aNone.api.id}: no usage data`), dry.out);
    assert.equal((await getHost(H.mIdle.api.id)).state, 'ready');
    assert.deepEqual(poweroffs('mIdle'), []);
    assert.deepEqual(await stopEvents(H.mIdle.api.id), []);

    const wet = runScript([]);
    assert.equal(wet.status, 0, wet.out + wet.err);
    assert.match(wet.out, /queued job [0-9a-f-]{36} \(queued\)/);
    const { host, job } = await waitStopped(H.mIdle.api.id);
    assert.equal(job.state, 'succeeded', `${job.error_class} ${job.error}`);
    assert.equal(host.state, 'stopped');
    assert.deepEqual(poweroffs('mIdle'), [['poweroff', '--no-wall']]);
    const ev = await stopEvents(H.mIdle.api.id);
    assert.equal(ev.length, 1);
    assert.equal(ev[0].principal, 'test-operator');
    assert.match(ev[0].reason, /^no useful work for \d+ s, more than the pool's idle window of 1800 s, and no running job$/);
    for (const n of ['aBusy', 'aNone', 'mBusy']) assert.equal((await getHost(H[n].api.id)).state, 'ready', n);

    // nothing left to stop: the script says so and exits 0
    const again = runScript([]);
    assert.equal(again.status, 0, again.out + again.err);
    assert.match(again.out, /^0 stop recommendation\(s\)/m);
  });

  test('the script exits non-zero on an API error', async () => {
    const r = spawnSync('bash', [SCRIPT], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, GPUFLEET_URL: srv.url, GPUFLEET_TOKEN: reporter },
    });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /HTTP 403/);
  });
});
