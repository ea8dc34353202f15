'use strict';
// Automatic recovery of hosts the health monitor isolated (issue 13, items 3 and 7; needs
// root). Four simulated hosts, each provisioned and accepted by the gate, are isolated by a
// real Xid 79 block in their kernel log (simfleet xid). In a pool with
// monitor.auto_recover the host then goes drain → diagnostics → gate → ready by itself,
// each step a durable job; a step that fails (the Docker daemon is dead, so the gate's
// container_gpu fails) stops the recovery there and the host is back in quarantine; an
// operator acting on the host cancels it; without auto_recover nothing happens by itself
// and an operator does the same by hand. Two gpufleetd processes share the database, so two
// recovery drivers look at every recovery: each step still happens exactly once. The four
// tests run side by side: each isolates and watches its own host only, every wait a
// deadline polled for a state.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const { startServer, psql, ROOT } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');

const INTERVAL_S = 10;
const SLOW_DIAG_S = 40; // dcgmi diag on the slow_workload host: the window to act in
const SIMFLEET = path.join(ROOT, 'tests', 'fleet', 'simfleet');
const WORKER_ENV = {
  GPUFLEET_WORKERS: '2',
  GPUFLEET_MONITOR: '1',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '10',
  GPUFLEET_SSH_QUERY_TIMEOUT: '5',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
};
// [name, profile, pool]
const HOSTS = [
  ['ok', 'h100x8', 'auto'],
  ['bad', 'h100x8', 'auto'],
  ['manual', 'h100x8', 'manual'],
  ['cancel', 'slow_workload', 'slow'],
];
const RECOVERY_MS = 180_000; // a whole recovery on two shared, busy cores

let sim, srv, srv2, client, admin, operator, viewer;
const H = {}; // name -> {sim, api}
const P = {}; // pool key -> pool

function simctl(...args) {
  const r = spawnSync(SIMFLEET, [...args, '--dir', sim.dir], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`simfleet ${args.join(' ')}: ${r.status}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}
const sql = (q) => psql(srv.database.url, q);
const getHost = async (id) => expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
const recoveries = async (name, query = '') =>
  expectStatus(await client.request('GET', `/v1/hosts/${H[name].api.id}/recoveries${query}`, { token: viewer }), 200)
    .items;
const getJob = async (id) => expectStatus(await client.request('GET', `/v1/jobs/${id}`, { token: viewer }), 200);

/** Polls until fn() answers something truthy; returns it. */
async function until(fn, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms`);
    await fleet.sleep(300);
  }
}
const waitState = (name, states, ms) =>
  until(
    async () => {
      const h = await getHost(H[name].api.id);
      return states.includes(h.state) ? h : null;
    },
    ms,
    `${name} in ${states}`,
  );
const waitRecovery = (name, states, ms) =>
  until(
    async () => {
      const r = (await recoveries(name))[0];
      return r && states.includes(r.state) ? r : null;
    },
    ms,
    `${name}: a recovery ${states}`,
  );

/** The events of the host's state history from its isolation on. */
const eventsSinceIsolation = (name) =>
  sql(`SELECT string_agg(event, ',' ORDER BY id) FROM host_state_history WHERE host_id = '${H[name].api.id}'
        AND id >= (SELECT max(id) FROM host_state_history WHERE host_id = '${H[name].api.id}' AND event = 'monitor_isolated')`);

function poolBody(name, monitor, gate) {
  return {
    name: `${name}-${fleet.uniq()}`,
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    interconnect: 'nvlink',
    price_per_hour: 10,
    durable_path: sim.env.SIMFLEET_DURABLE_PATH,
    scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
    gate,
    monitor: { interval_seconds: INTERVAL_S, unreachable_after: 3, ...monitor },
  };
}

before(async () => {
  sim = fleet.simfleet.up({
    count: HOSTS.length,
    profile: HOSTS.map((h) => h[1]),
    net: 225,
    user: 'gpufleet-rtest',
    delay: 0,
    extra: ['--slow', String(SLOW_DIAG_S)],
    dir: fs.mkdtempSync('/tmp/gft-recover-fleet-'),
  });
  srv = await startServer({ name: 'fleet-recover', env: WORKER_ENV });
  srv2 = await startServer({
    name: 'fleet-recover-b',
    databaseUrl: srv.database.url,
    secrets: srv.secrets,
    migrate: false,
    env: WORKER_ENV,
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  const stack = await fleet.createStack(client, operator);
  const gate = {
    storage_min_mbps: 1,
    workload: { command: ['python3', 'bench.py'], metric: 'tokens_per_second', min: 1000, timeout_s: 8 },
  };
  const bodies = {
    auto: poolBody('auto', { auto_recover: true, recovery_diagnostics_level: 1 }, gate),
    manual: poolBody('manual', {}, gate),
    // the slow_workload host's workload never ends in time: its pool's gate has none
    slow: poolBody('slow', { auto_recover: true, recovery_diagnostics_level: 1 }, { storage_min_mbps: 1 }),
  };
  for (const [k, body] of Object.entries(bodies)) {
    P[k] = expectStatus(await client.request('POST', '/v1/pools', { token: admin, body }), 201);
  }
  assert.equal(P.auto.monitor.auto_recover, true);
  assert.equal(P.auto.monitor.recovery_diagnostics_level, 1);
  await Promise.all(
    HOSTS.map(async ([n, , pool], i) => {
      const s = sim.hosts[i];
      const host = await fleet.createHost(client, operator, {
        name: `rec-${n}-${fleet.uniq()}`,
        address: s.address,
        port: s.port,
        user: s.user,
        credential_id: cred.id,
        pool_id: P[pool].id,
        host_key_sha256: s.host_key_sha256,
      });
      H[n] = { sim: s, api: host };
      const pj = await fleet.waitJob(client, viewer, (await fleet.provision(client, operator, host.id, stack.id)).id, {
        timeoutMs: 90_000,
        intervalMs: 400,
      });
      assert.equal(pj.state, 'succeeded', `provision ${n}: ${pj.error_class} ${pj.error}`);
      const g = expectStatus(await client.request('POST', `/v1/hosts/${host.id}/gate`, { token: operator }), 202);
      const gj = await fleet.waitJob(client, viewer, g.id, { timeoutMs: 90_000, intervalMs: 400 });
      assert.equal(gj.state, 'succeeded', `gate ${n}: ${gj.error_class} ${gj.error}`);
      assert.equal((await getHost(host.id)).state, 'ready', n);
    }),
  );
});

after(async () => {
  if (srv2) await srv2.stop();
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('automatic recovery', { concurrency: true }, () => {
  test('with auto_recover an isolated host goes drain → diagnostics → gate → ready by itself', async () => {
    const before = await getHost(H.ok.api.id);
    simctl('xid', H.ok.sim.name, '79');
    const rec = await waitRecovery('ok', ['succeeded', 'failed', 'cancelled'], RECOVERY_MS);
    assert.equal(rec.state, 'succeeded', `${rec.step}: ${rec.error}`);
    assert.match(rec.cause, /Xid 79/);
    assert.equal(rec.diagnostics_level, 1);
    assert.equal(rec.step, 'gate');
    assert.equal(rec.error, null);
    assert.deepEqual(
      rec.steps.map((s) => [s.name, s.state]),
      [
        ['drain', 'passed'],
        ['diagnostics', 'passed'],
        ['gate', 'passed'],
      ],
    );
    assert.ok(rec.steps[0].started_at && rec.steps[0].finished_at, 'the drain has its times');
    // each step's job: an ordinary durable job, created by the recovery
    const [, diag, gate] = rec.steps;
    const dj = await getJob(diag.job_id);
    assert.equal(dj.kind, 'diagnostics');
    assert.equal(dj.state, 'succeeded');
    assert.deepEqual(dj.params, { level: 1 });
    assert.equal(dj.created_by, `recovery:${rec.id}`);
    assert.equal(diag.run.verdict, 'accept');
    const gj = await getJob(gate.job_id);
    assert.equal(gj.kind, 'gate');
    assert.equal(gj.state, 'succeeded');
    assert.equal(gj.created_by, `recovery:${rec.id}`);
    assert.equal(gate.run.verdict, 'accept');
    assert.equal(
      sql(`SELECT count(*) FROM jobs WHERE created_by = 'recovery:${rec.id}'`),
      '2',
      'one job per step, whichever driver queued it',
    );
    // ready again, with the recovery's gate run as its accepted gate
    const host = await getHost(H.ok.api.id);
    assert.equal(host.state, 'ready');
    assert.equal(host.quarantine, null);
    assert.equal(host.accepted_gate_run_id, gate.run.id);
    assert.notEqual(host.accepted_gate_run_id, before.accepted_gate_run_id);
    assert.equal(
      eventsSinceIsolation('ok'),
      'monitor_isolated,recovery_started,drained_when_idle,diagnostics_started,diagnostics_finished,gate_started,gate_accepted',
    );
    assert.equal(
      sql(`SELECT string_agg(DISTINCT actor, ',') FROM host_state_history WHERE host_id = '${H.ok.api.id}'
            AND event IN ('recovery_started', 'drained_when_idle')`),
      `recovery:${rec.id}`,
    );
    // audited: the hold lifted and the return to service, by the recovery (role system)
    const audit = sql(`SELECT string_agg(action || ':' || role, ',' ORDER BY seq) FROM audit_events
                        WHERE resource_id = '${H.ok.api.id}' AND principal = 'recovery:${rec.id}'`);
    assert.equal(audit, 'host.recovery:system,host.recovery:system');
    // the event stream: opened, diagnostics, gate, succeeded
    const evs = sql(`SELECT string_agg(data->>'state' || '/' || (data->>'step'), ',' ORDER BY id) FROM events
                      WHERE type = 'host.recovery' AND host_id = '${H.ok.api.id}'`);
    assert.equal(evs, 'running/drain,running/diagnostics,running/gate,succeeded/gate');
    assert.equal((await recoveries('ok', '?state=succeeded')).length, 1);
    assert.equal((await recoveries('ok', '?state=failed')).length, 0);
  });

  test('a step that fails stops the recovery there; the host is back in quarantine and it is not retried', async () => {
    simctl('set', H.bad.sim.name, 'docker_down=1'); // the gate's container_gpu check fails
    simctl('xid', H.bad.sim.name, '79');
    const rec = await waitRecovery('bad', ['succeeded', 'failed', 'cancelled'], RECOVERY_MS);
    assert.equal(rec.state, 'failed');
    assert.equal(rec.step, 'gate');
    assert.match(rec.error, /^gate: verdict investigate \(.*container_gpu.*\); the host is investigating$/);
    assert.deepEqual(
      rec.steps.map((s) => s.state),
      ['passed', 'passed', 'failed'],
    );
    assert.equal(rec.steps[1].run.verdict, 'accept');
    assert.equal(rec.steps[2].run.verdict, 'investigate');
    assert.equal((await getJob(rec.steps[2].job_id)).state, 'succeeded', 'the gate ran; its verdict failed the step');
    const host = await getHost(H.bad.api.id);
    assert.equal(host.state, 'quarantined');
    assert.match(host.quarantine.reason, /^automatic recovery failed at gate: gate: verdict investigate \(/);
    assert.equal(host.accepted_gate_run_id, null);
    assert.equal(
      eventsSinceIsolation('bad'),
      'monitor_isolated,recovery_started,drained_when_idle,diagnostics_started,diagnostics_finished,gate_started,gate_investigate,recovery_failed',
    );
    // it stays so: samples go on, no second recovery starts by itself
    await fleet.sleep(INTERVAL_S * 1000 + 5000);
    assert.equal((await recoveries('bad')).length, 1);
    assert.equal((await getHost(H.bad.api.id)).state, 'quarantined');
    assert.equal(
      sql(`SELECT count(*) FROM jobs WHERE host_id = '${H.bad.api.id}' AND created_at > '${rec.finished_at}'`),
      '0',
    );
  });

  test('an operator acting on the host cancels the recovery, which leaves the host as the operator did', async () => {
    simctl('xid', H.cancel.sim.name, '79');
    // dcgmi diag takes SLOW_DIAG_S on this host: the recovery waits in its diagnostics step,
    // the host diagnosing (a job is running before its first step moves the host: a drain
    // then finds the host drained already and has nothing to do)
    const running = await until(
      async () => {
        const r = (await recoveries('cancel'))[0];
        if (!(r && r.step === 'diagnostics' && r.steps[1].job_state === 'running')) return null;
        return (await getHost(H.cancel.api.id)).state === 'diagnosing' ? r : null;
      },
      RECOVERY_MS,
      'the recovery runs its diagnostics',
    );
    expectStatus(await client.request('POST', `/v1/hosts/${H.cancel.api.id}/drain`, { token: operator }), 200);
    const rec = await waitRecovery('cancel', ['succeeded', 'failed', 'cancelled'], 30_000);
    assert.equal(rec.id, running.id);
    assert.equal(rec.state, 'cancelled');
    assert.match(rec.error, /^an operator acted on the host: host\.drain by .* \(operator\)$/);
    assert.equal(rec.steps[2].job_id, null, 'no gate was queued');
    // the diagnostics job ends on its own; the host stays drained (the operator's drain)
    const dj = await fleet.waitJob(client, viewer, running.steps[1].job_id, { timeoutMs: 120_000, intervalMs: 500 });
    assert.equal(dj.state, 'succeeded');
    const host = await waitState('cancel', ['drained'], 30_000);
    assert.equal(host.quarantine, null);
    assert.equal(host.accepted_gate_run_id, null, 'it serves nothing until a gate accepts it again');
    assert.equal(
      sql(
        `SELECT count(*) FROM jobs WHERE host_id = '${H.cancel.api.id}' AND kind = 'gate' AND created_at > '${rec.created_at}'`,
      ),
      '0',
    );
  });

  test('without auto_recover nothing happens by itself; an operator recovers the host by hand', async () => {
    simctl('xid', H.manual.sim.name, '79');
    const q = await waitState('manual', ['quarantined'], 2 * INTERVAL_S * 1000 + 10_000);
    await fleet.sleep(8000); // four passes of the recovery driver
    assert.deepEqual(await recoveries('manual'), []);
    assert.equal((await getHost(H.manual.api.id)).state, 'quarantined');
    // by hand: diagnostics on the quarantined host, the release (admin), the gate
    const d = expectStatus(
      await client.request('POST', `/v1/hosts/${H.manual.api.id}/diagnostics`, { token: operator, body: { level: 1 } }),
      202,
    );
    assert.equal(
      (await fleet.waitJob(client, viewer, d.id, { timeoutMs: 90_000, intervalMs: 400 })).state,
      'succeeded',
    );
    assert.equal((await getHost(H.manual.api.id)).state, 'quarantined', 'diagnostics do not lift the hold');
    const rel = expectStatus(
      await client.request('POST', `/v1/hosts/${H.manual.api.id}/release`, {
        token: admin,
        body: { reason: 'Xid 79 checked: dcgmi diag passed', host_key_sha256: q.host_key_sha256 },
      }),
      200,
    );
    assert.equal(rel.state, 'provisioned');
    const g = expectStatus(await client.request('POST', `/v1/hosts/${H.manual.api.id}/gate`, { token: operator }), 202);
    assert.equal(
      (await fleet.waitJob(client, viewer, g.id, { timeoutMs: 90_000, intervalMs: 400 })).state,
      'succeeded',
    );
    assert.equal((await getHost(H.manual.api.id)).state, 'ready');
    assert.deepEqual(await recoveries('manual'), []);
  });
});
