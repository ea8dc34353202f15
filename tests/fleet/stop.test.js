'use strict';
// POST /v1/hosts/{id}/stop over SSH against the simulated GPU fleet
// (tests/fleet/simfleet; needs root). Two h100x8 hosts are provisioned; one
// is stopped with the pool's stop_command `poweroff --no-wall` (the
// simulated `poweroff` logs its argv and records the stop in the host's
// state dir; it never stops anything real): the job succeeds with one
// `stop`/`apply` step, the host goes stopping → stopped with the principal
// and the reason in its history and the audit. The other's pool stops with
// `false`: the job fails (step_failed) and the host returns to provisioned.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { startServer } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectProblem, expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');

const WORKER_ENV = {
  GPUFLEET_WORKERS: '1',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '5',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
};

let sim;
let srv;
let client;
let admin;
let operator;
let viewer;
const hosts = []; // [ {sim, api} ] : 0 stops, 1 fails to stop

before(async () => {
  sim = fleet.simfleet.up({
    count: 2,
    profile: 'h100x8',
    net: 218,
    user: 'gpufleet-stest',
    delay: 0,
    dir: fs.mkdtempSync('/tmp/gft-stop-fleet-'),
  });
  srv = await startServer({ name: 'fleet-stop', env: WORKER_ENV });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  const stack = await fleet.createStack(client, operator);
  const paths = { durable_path: sim.env.SIMFLEET_DURABLE_PATH, scratch_path: sim.env.SIMFLEET_SCRATCH_PATH };
  const good = await fleet.createPool(client, admin, { ...paths, stop_command: 'poweroff --no-wall' });
  const bad = await fleet.createPool(client, admin, { ...paths, stop_command: 'false' });
  const jobs = [];
  for (const [i, h] of sim.hosts.entries()) {
    const host = await fleet.createHost(client, operator, {
      name: `stop-${i}-${fleet.uniq()}`,
      address: h.address,
      port: h.port,
      user: h.user,
      credential_id: cred.id,
      pool_id: (i === 0 ? good : bad).id,
    });
    hosts.push({ sim: h, api: host });
    jobs.push((await fleet.provision(client, operator, host.id, stack.id)).id);
  }
  for (const id of jobs) {
    const job = await fleet.waitJob(client, viewer, id, { timeoutMs: 60_000 });
    assert.equal(job.state, 'succeeded', `provisioning: ${job.error_class} ${job.error}`);
  }
});

after(async () => {
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

async function getHost(id) {
  return expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
}

describe('stop over SSH', () => {
  test('the stop command runs on the host; the job succeeds and the host is stopped', async () => {
    const { sim: sh, api: h } = hosts[0];
    assert.equal((await getHost(h.id)).state, 'provisioned');
    const plan = expectStatus(
      await client.request('POST', `/v1/hosts/${h.id}/stop`, {
        token: operator,
        body: { reason: 'idle since Friday', dry_run: true },
      }),
      200,
    );
    assert.equal(plan.command, 'poweroff --no-wall');
    assert.ok(!sim.argv(sh.name).some((a) => a[0] === 'poweroff'), 'a dry run runs nothing');

    const res = await client.request('POST', `/v1/hosts/${h.id}/stop`, {
      token: operator,
      body: { reason: 'idle since Friday' },
    });
    const queued = expectStatus(res, 202);
    const job = await fleet.waitJob(client, viewer, queued.id, { timeoutMs: 30_000 });
    assert.equal(job.state, 'succeeded', `${job.error_class} ${job.error}`);
    assert.equal(job.kind, 'stop');
    assert.deepEqual(job.progress, { step: 1, of: 1 });
    // the intent is recorded before the command is sent (check), then its result (apply)
    const [intent, done] = fleet.finalSteps(job);
    assert.equal(fleet.finalSteps(job).length, 2);
    assert.deepEqual(
      [intent.name, intent.phase, intent.outcome, intent.message],
      ['stop', 'check', 'ok', 'sending the stop command'],
    );
    assert.equal(intent.exit_status, null);
    assert.equal(done.name, 'stop');
    assert.equal(done.phase, 'apply');
    assert.equal(done.command, 'poweroff --no-wall');
    assert.equal(done.exit_status, 0);
    assert.equal(done.outcome, 'changed');
    assert.match(done.stdout_tail, /going down/);

    // the simulated host saw exactly that command, argv split by the remote shell
    const calls = sim.argv(sh.name).filter((a) => a[0] === 'poweroff');
    assert.deepEqual(calls, [['poweroff', '--no-wall']]);
    assert.equal(fs.readFileSync(path.join(sim.dir, sh.name, 'state', 'stopped'), 'utf8'), 'poweroff --no-wall\n');

    const host = await getHost(h.id);
    assert.equal(host.state, 'stopped');
    assert.deepEqual(host.last_job, { id: job.id, kind: 'stop', state: 'succeeded', error_class: null });
    const [last, prev] = host.state_history;
    assert.deepEqual([prev.from, prev.to, last.from, last.to], ['provisioned', 'stopping', 'stopping', 'stopped']);
    assert.equal(last.reason, 'stopped by test-operator: idle since Friday');
    assert.equal(last.job_id, job.id);
    assert.match(prev.reason, /^stop requested by test-operator: idle since Friday/);

    const ev = expectStatus(
      await client.request('GET', `/v1/audit-events?action=host.stop&resource_id=${h.id}`, { token: admin }),
      200,
    ).items;
    assert.equal(ev.length, 1);
    assert.equal(ev[0].principal, 'test-operator');
    assert.equal(ev[0].reason, 'idle since Friday');

    // stopped: a second stop is refused
    expectProblem(
      await client.request('POST', `/v1/hosts/${h.id}/stop`, { token: operator, body: { reason: 'again' } }),
      409,
      'host_stopped',
    );
  });

  test('a stop command that fails fails the job and the host returns to its state', async () => {
    const { api: h } = hosts[1];
    const queued = expectStatus(
      await client.request('POST', `/v1/hosts/${h.id}/stop`, { token: operator, body: { reason: 'idle' } }),
      202,
    );
    const job = await fleet.waitJob(client, viewer, queued.id, { timeoutMs: 30_000 });
    assert.equal(job.state, 'failed');
    assert.equal(job.error_class, 'step_failed');
    assert.equal(job.error, 'step stop: the stop command exited 1');
    const steps = fleet.finalSteps(job);
    assert.deepEqual(
      steps.map((s) => [s.name, s.phase, s.command, s.exit_status, s.outcome]),
      [
        ['stop', 'check', 'false', null, 'ok'],
        ['stop', 'apply', 'false', 1, 'failed'],
      ],
    );
    const host = await getHost(h.id);
    assert.equal(host.state, 'provisioned');
    const [last, prev] = host.state_history;
    assert.deepEqual([prev.to, last.from, last.to], ['stopping', 'stopping', 'provisioned']);
    assert.match(last.reason, /^stop failed \(step_failed\)/);
  });
});
