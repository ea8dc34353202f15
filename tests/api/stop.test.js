'use strict';
// POST /v1/hosts/{id}/stop through the API, without SSH: the server runs with
// GPUFLEET_WORKERS=0, so every job stays queued. The dry run (the exact
// command and the host, nothing queued or audited), the queued stop job and
// its params, the audit event with the principal and the reason, the
// refusals (409 host_busy / no_stop_command / host_stopped, 403 force for an
// operator), an admin's forced stop (the busy job is superseded), body
// validation, roles and 404s. The stop over SSH is in tests/fleet/stop.test.js.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const NIL = '00000000-0000-4000-8000-000000000000';
const STOP = 'sudo -n /usr/sbin/poweroff';

let srv;
let client;
let admin;
let operator;
let viewer;
let cred;
let pool;
let bare; // a pool without stop_command
let stack;
let n = 0;

async function register(overrides = {}) {
  return fleet.createHost(client, operator, {
    name: `s-${process.pid}-${++n}`,
    address: '127.0.0.1',
    port: 2222,
    user: 'gpufleet',
    credential_id: cred.id,
    pool_id: pool.id,
    ...overrides,
  });
}
async function getHost(id) {
  return expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
}
async function stop(id, body, { token = operator, headers } = {}) {
  return client.request('POST', `/v1/hosts/${id}/stop`, { token, body, headers });
}
async function auditOf(action, resourceId) {
  const q = `/v1/audit-events?action=${action}&resource_id=${resourceId}`;
  return expectStatus(await client.request('GET', q, { token: admin }), 200).items;
}
async function stopJobs(hostId) {
  return expectStatus(await client.request('GET', `/v1/jobs?kind=stop&host_id=${hostId}`, { token: viewer }), 200)
    .items;
}

before(async () => {
  srv = await startServer({
    name: 'stop',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const key = fleet.sshKey();
  cred = await fleet.createCredential(client, admin, key.text);
  pool = await fleet.createPool(client, admin, { stop_command: STOP });
  bare = await fleet.createPool(client, admin);
  stack = await fleet.createStack(client, operator);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('stop', () => {
  test('dry_run answers 200 with the exact command and the host, and queues and audits nothing', async () => {
    const h = await register();
    const plan = expectStatus(await stop(h.id, { reason: 'idle for 3 days', dry_run: true }), 200);
    assert.deepEqual(plan, {
      dry_run: true,
      host: { id: h.id, name: h.name, address: '127.0.0.1', port: 2222, user: 'gpufleet', state: 'registered' },
      pool_id: pool.id,
      command: STOP,
      reason: 'idle for 3 days',
      cancels_job_id: null,
    });
    assert.deepEqual(await stopJobs(h.id), []);
    const host = await getHost(h.id);
    assert.equal(host.last_job, null);
    assert.equal(host.state, 'registered');
    assert.equal((await auditOf('host.stop', h.id)).length, 0);
  });

  test('a stop queues a stop job (202, Location) and the audit has the principal and the reason', async () => {
    const h = await register();
    const res = await stop(h.id, { reason: 'idle: no work reports since Monday' });
    const job = expectStatus(res, 202);
    assert.equal(res.headers.get('location'), `/v1/jobs/${job.id}`);
    assert.equal(job.kind, 'stop');
    assert.equal(job.host_id, h.id);
    assert.equal(job.state, 'queued');
    assert.equal(job.created_by, 'test-operator');
    assert.deepEqual(job.params, {
      reason: 'idle: no work reports since Monday',
      requested_by: 'test-operator',
      command: STOP,
      previous_state: 'registered',
      force: false,
      superseded_job_id: null,
    });
    const ev = await auditOf('host.stop', h.id);
    assert.equal(ev.length, 1);
    assert.equal(ev[0].principal, 'test-operator');
    assert.equal(ev[0].role, 'operator');
    assert.equal(ev[0].status, 202);
    assert.equal(ev[0].reason, 'idle: no work reports since Monday');
    assert.equal(ev[0].path, `/v1/hosts/${h.id}/stop`);
    // the create row's reason is only the trust-on-first-use note (the host has no pinned key)
    const created = await auditOf('host.create', h.id);
    assert.equal(created[0].reason, 'trust_on_first_use: the host key will be recorded on first contact');
    // the host changes only when a worker takes the job
    assert.equal((await getHost(h.id)).state, 'registered');
    // a second stop is refused while the first is queued
    expectProblem(await stop(h.id, { reason: 'again' }), 409, 'host_busy');
  });

  test('a host with a running or queued job answers 409 host_busy (also for a dry run)', async () => {
    const h = await register();
    await fleet.provision(client, operator, h.id, stack.id); // stays queued: no workers
    expectProblem(await stop(h.id, { reason: 'r' }), 409, 'host_busy');
    expectProblem(await stop(h.id, { reason: 'r', dry_run: true }), 409, 'host_busy');
    expectProblem(await stop(h.id, { reason: 'r' }, { token: admin }), 409, 'host_busy');
    assert.deepEqual(await stopJobs(h.id), []);
  });

  test('force is for admins: an operator gets 403 insufficient_role (audited as host.denied)', async () => {
    const h = await register();
    const prov = await fleet.provision(client, operator, h.id, stack.id);
    expectProblem(await stop(h.id, { reason: 'please', force: true }), 403, 'insufficient_role', 'force');
    expectProblem(
      await stop(h.id, { reason: 'please', force: true, dry_run: true }),
      403,
      'insufficient_role',
      'force',
    );
    const denied = await auditOf('host.denied', h.id);
    assert.equal(denied.length, 2);
    assert.equal(denied[0].principal, 'test-operator');
    assert.equal(denied[0].status, 403);
    assert.equal(denied[0].reason, 'please');
    const job = expectStatus(await client.request('GET', `/v1/jobs/${prov.id}`, { token: viewer }), 200);
    assert.equal(job.state, 'queued');
  });

  test("an admin's force supersedes the busy job and queues the stop in its place", async () => {
    const h = await register();
    const prov = await fleet.provision(client, operator, h.id, stack.id);
    // a running job: as a worker would have claimed it
    psql(
      srv.database.url,
      `UPDATE jobs SET state = 'running', attempt = 1, lease_owner = 'w', lease_expires_at = now() + interval '1 minute' WHERE id = '${prov.id}'`,
    );
    const plan = expectStatus(
      await stop(h.id, { reason: 'runaway', force: true, dry_run: true }, { token: admin }),
      200,
    );
    assert.equal(plan.cancels_job_id, prov.id);
    assert.equal(plan.command, STOP);
    assert.equal(
      expectStatus(await client.request('GET', `/v1/jobs/${prov.id}`, { token: viewer }), 200).state,
      'running',
    );

    const res = await stop(h.id, { reason: 'runaway', force: true }, { token: admin });
    const job = expectStatus(res, 202);
    assert.equal(job.kind, 'stop');
    assert.equal(job.params.force, true);
    assert.equal(job.params.superseded_job_id, prov.id);
    assert.equal(job.params.requested_by, 'test-admin');
    const old = expectStatus(await client.request('GET', `/v1/jobs/${prov.id}`, { token: viewer }), 200);
    assert.equal(old.state, 'cancelled');
    assert.equal(old.cancel_requested, true);
    assert.equal(old.error_class, 'superseded');
    assert.match(old.error, /forced stop requested by test-admin/);
    assert.equal((await getHost(h.id)).last_job.id, job.id);
    const ev = await auditOf('host.stop', h.id);
    assert.equal(ev.length, 1);
    assert.equal(ev[0].principal, 'test-admin');
    assert.equal(ev[0].reason, 'runaway');
  });

  test('force on an idle host is a plain stop', async () => {
    const h = await register();
    const job = expectStatus(await stop(h.id, { reason: 'idle', force: true }, { token: admin }), 202);
    assert.equal(job.params.superseded_job_id, null);
  });

  test('a pool without stop_command answers 409 no_stop_command', async () => {
    const h = await register({ pool_id: bare.id });
    expectProblem(await stop(h.id, { reason: 'idle' }), 409, 'no_stop_command');
    expectProblem(await stop(h.id, { reason: 'idle', dry_run: true }), 409, 'no_stop_command');
    expectProblem(await stop(h.id, { reason: 'idle', force: true }, { token: admin }), 409, 'no_stop_command');
    assert.deepEqual(await stopJobs(h.id), []);
    assert.equal((await auditOf('host.stop', h.id)).length, 0);
  });

  test('a stopped host answers 409 host_stopped', async () => {
    const h = await register();
    for (const ev of ['stop_started', 'stop_done'])
      psql(srv.database.url, `SELECT host_transition('${h.id}', '${ev}', NULL, 'test', NULL, 'worker:test', NULL)`);
    expectProblem(await stop(h.id, { reason: 'idle' }), 409, 'host_stopped');
  });

  test('the body is validated', async () => {
    const h = await register();
    expectProblem(await stop(h.id, {}), 400, 'missing_field', 'reason');
    expectProblem(await stop(h.id, { reason: '' }), 400, 'invalid_field', 'reason');
    expectProblem(await stop(h.id, { reason: 'x'.repeat(501) }), 400, 'invalid_field', 'reason');
    expectProblem(await stop(h.id, { reason: 'a\nb' }), 400, 'invalid_field', 'reason');
    expectProblem(await stop(h.id, { reason: 'r', dry_run: 'yes' }), 400, 'invalid_field', 'dry_run');
    expectProblem(await stop(h.id, { reason: 'r', force: 1 }), 400, 'invalid_field', 'force');
    expectProblem(await stop(h.id, { reason: 'r', command: 'rm -rf /' }), 400, 'unknown_field', 'command');
    assert.deepEqual(await stopJobs(h.id), []);
  });

  test('viewer and reporter may not stop; unknown hosts answer 404', async () => {
    const h = await register();
    for (const token of [viewer, srv.token('reporter')]) {
      expectProblem(await stop(h.id, { reason: 'r' }, { token }), 403, 'insufficient_role');
    }
    expectProblem(
      await client.request('POST', `/v1/hosts/${h.id}/stop`, { body: { reason: 'r' } }),
      401,
      'missing_token',
    );
    for (const id of [NIL, 'not-a-uuid']) {
      expectProblem(await stop(id, { reason: 'r' }), 404, 'not_found');
    }
    assert.deepEqual(await stopJobs(h.id), []);
  });
});
