'use strict';
// Projects on the hosts' side (docs/projects.md, issue 24): two teams on one fleet. A
// member of team-b gets 404 on team-a's host, job, gate run, readiness, health, samples,
// recoveries, GPU events, rollout and baseline, and on every host command, and changes
// nothing; team-b's lists never hold team-a's rows. Registration: a pool or credential of
// a project the caller may not see answers as an unknown one; a credential of another
// project, or one whose allowed_users / allowed_cidrs leave the host out, answers 409
// credential_not_allowed and creates nothing. GPU quotas hold under 20 concurrent
// registrations; a lowered quota touches no host and refuses the next addition; an
// exhausted budget (refuse_new) refuses registrations and provisionings. A pool move into
// another project is a platform admin's, for a drained host, and clears the accepted gate;
// a move within the project into a pool that expects other GPUs clears it too. Work
// reports: a reporter of a project reports only for its hosts.
//
// The server runs without workers (GPUFLEET_WORKERS=0): jobs stay queued, and what a
// worker or the monitor would write (gate runs, GPUs, baselines, recoveries) is written in
// SQL. Pools, credentials and stacks are created through the API (in `default`) and
// handed to their project in SQL, so the test does not depend on how their creates name a
// project.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer, psql, psqlUnguarded } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const NIL = '00000000-0000-4000-8000-000000000000';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const WORKLOAD = { command: ['/opt/bench/run'], metric: 'tokens_per_second', min: 100 };
// What a provisioning would have found (the rollout compares driver_version with the stack's).
const FACTS = JSON.stringify({
  os: {},
  kernel: null,
  cpus: 0,
  memory_bytes: 0,
  numa_nodes: 0,
  filesystems: null,
  gpus: [],
  gpu_count: 0,
  driver_version: '550.127.05',
});

// Enough HTTP threads and connections that concurrent requests really run at once.
const ENV = {
  GPUFLEET_WORKERS: '0',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8,10.0.0.0/8',
  GPUFLEET_THREADS: '8',
  GPUFLEET_DB_POOL_SIZE: '8',
  // The budget tests below plant project_spend rows; the servers' own budget pass (every
  // 60 s, the first at start) would race them (on a loaded machine it wrote the project's
  // row, spend 0, just before the planted one). The pass has its tests in projects_money.
  GPUFLEET_BUDGET_INTERVAL: '0',
};
let srv, replica, client, replicaClient, platform, keyText;
const P = {}; // projects by name: {id, name}
const T = {}; // tokens
let sharedStack, newStack, privateStack;
const uniq = () => crypto.randomBytes(4).toString('hex');
const sql = (q) => psql(srv.database.url, q);
const idOf = (text) => text.split('\n').find((l) => UUID_RE.test(l));

const get = (path, token) => client.request('GET', path, { token });
const post = (path, token, body) => client.request('POST', path, body === undefined ? { token } : { token, body });
const patch = (path, token, body) => client.request('PATCH', path, { token, body });

async function project(name, body = {}) {
  const p = expectStatus(await post('/v1/projects', platform, { name, ...body }), 201);
  P[name] = p;
  return p;
}
async function poolIn(projectName, overrides = {}) {
  const pool = await fleet.createPool(client, platform, overrides);
  sql(`UPDATE pools SET project_id = '${P[projectName].id}' WHERE id = '${pool.id}'`);
  return pool;
}
async function credIn(projectName, { users, cidrs } = {}) {
  const cred = await fleet.createCredential(client, platform, keyText);
  const arr = (a) => (a === undefined ? 'NULL' : `ARRAY[${a.map((x) => `'${x}'`).join(',')}]::text[]`);
  sql(
    `UPDATE credentials SET project_id = '${P[projectName].id}', allowed_users = ${arr(users)},` +
      ` allowed_cidrs = ${arr(cidrs)} WHERE id = '${cred.id}'`,
  );
  return cred;
}
let addr = 1;
function hostBody(pool, cred, overrides = {}) {
  return {
    name: `h-${uniq()}`,
    address: `127.0.77.${addr++}`,
    port: 22,
    user: 'gpufleet',
    credential_id: cred.id,
    pool_id: pool.id,
    trust_on_first_use: true,
    ...overrides,
  };
}
const register = (token, pool, cred, overrides) => post('/v1/hosts', token, hostBody(pool, cred, overrides));
async function host(token, pool, cred, overrides) {
  return expectStatus(await register(token, pool, cred, overrides), 201);
}
// A host in `ready` (or `drained`) on stack with an accepted gate run on it; returns the run.
function serving(h, pool, stack, state = 'ready') {
  for (const ev of ['provision_started', 'provision_succeeded', 'gate_started']) {
    sql(`SELECT host_transition('${h.id}', '${ev}', NULL, 'test', NULL, 'worker:test', NULL)`);
  }
  const run = idOf(
    sql(
      `INSERT INTO gate_runs (kind, host_id, stack_id, pool_id, gate_version, verdict, reason, checks, started_at)` +
        ` VALUES ('gate', '${h.id}', '${stack.id}', '${pool.id}', 1, 'accept', 'every check passed', '[]'::jsonb, now())` +
        ' RETURNING id',
    ),
  );
  sql(`SELECT host_transition('${h.id}', 'gate_accepted', NULL, 'test', NULL, 'worker:test', '${run}')`);
  sql(`UPDATE hosts SET current_stack_id = '${stack.id}', facts = '${FACTS}'::jsonb` + ` WHERE id = '${h.id}'`);
  if (state === 'drained') {
    sql(`SELECT host_transition('${h.id}', 'drain', NULL, 'test', NULL, 'test', NULL)`);
    sql(`SELECT host_transition('${h.id}', 'drained_when_idle', NULL, 'test', NULL, 'test', NULL)`);
  }
  return run;
}
const hostRow = (id) =>
  sql(
    `SELECT state || ' ' || pool_id || ' ' || credential_id || ' ' || labels::text || ' ' ||` +
      ` coalesce(accepted_gate_run_id::text, '-') || ' ' || project_id FROM hosts WHERE id = '${id}'`,
  );
const jobsOf = (id) => sql(`SELECT count(*) FROM jobs WHERE host_id = '${id}'`);
const denied = (action, id, status) =>
  Number(
    sql(
      `SELECT count(*) FROM audit_events WHERE action = '${action}' AND resource_id = '${id}' AND status = ${status}`,
    ),
  );
const ids = (page) => page.items.map((x) => x.id ?? x.uuid);
async function listAll(path, token) {
  const sep = path.includes('?') ? '&' : '?';
  return expectStatus(await get(`${path}${sep}limit=500`, token), 200);
}

before(async () => {
  srv = await startServer({
    name: 'projects-hosts',
    env: ENV,
  });
  client = api(srv);
  // a second replica on the same database: concurrent registrations race across both
  replica = await startServer({
    name: 'projects-hosts-2',
    databaseUrl: srv.database.url,
    secrets: srv.secrets,
    env: ENV,
  });
  replicaClient = api(replica);
  platform = srv.token('admin');
  keyText = fleet.sshKey().text;
  await project('team-a');
  await project('team-b');
  T.adminA = srv.token('admin', { sub: 'alice', project: 'team-a' });
  T.opA = srv.token('operator', { sub: 'ann', project: 'team-a' });
  T.viewerA = srv.token('viewer', { sub: 'amy', project: 'team-a' });
  T.repA = srv.token('reporter', { sub: 'rep-a', project: 'team-a' });
  T.adminB = srv.token('admin', { sub: 'bea', project: 'team-b' });
  T.opB = srv.token('operator', { sub: 'bob', project: 'team-b' });
  T.viewerB = srv.token('viewer', { sub: 'ben', project: 'team-b' });
  const operator = srv.token('operator');
  sharedStack = await fleet.createStack(client, operator);
  newStack = await fleet.createStack(client, operator);
  privateStack = await fleet.createStack(client, operator);
  sql(`UPDATE stacks SET shared = true WHERE id IN ('${sharedStack.id}', '${newStack.id}')`);
});

after(async () => {
  if (replica) await replica.stop({ dropDatabase: false });
  if (srv) await srv.stop();
});

describe('team-a and team-b', () => {
  const A = {}; // team-a's objects
  const B = {}; // team-b's objects

  before(async () => {
    A.pool = await poolIn('team-a', { gate: { workload: WORKLOAD } });
    A.cred = await credIn('team-a');
    B.pool = await poolIn('team-b');
    B.cred = await credIn('team-b');
    A.host = await host(T.opA, A.pool, A.cred);
    A.job = expectStatus(await post(`/v1/hosts/${A.host.id}/provision`, T.opA, { stack_id: sharedStack.id }), 202);
    A.run = idOf(
      sql(
        `INSERT INTO gate_runs (kind, host_id, stack_id, pool_id, gate_version, verdict, reason, checks, started_at)` +
          ` VALUES ('gate', '${A.host.id}', '${sharedStack.id}', '${A.pool.id}', 1, 'investigate', 'test',` +
          ` '[]'::jsonb, now()) RETURNING id`,
      ),
    );
    A.baseline = idOf(
      sql(
        `INSERT INTO baselines (source, gate_run_id, host_id, pool_id, stack_id, image_digest, framework,` +
          ` driver_version, gpu_model, gpu_count, workload_hash, metric, value, measured_at)` +
          ` SELECT 'gate', '${A.run}', '${A.host.id}', p.id, s.id, s.image_digest, s.framework,` +
          ` s.spec->>'driver_version', p.gpu_model, 8, workload_hash((p.spec->'gate'->'workload')::jsonb),` +
          ` 'tokens_per_second', 1000, now() FROM pools p, stacks s` +
          ` WHERE p.id = '${A.pool.id}' AND s.id = '${sharedStack.id}' RETURNING id`,
      ),
    );
    A.gpu = `GPU-${crypto.randomUUID()}`;
    sql(
      `INSERT INTO gpus (uuid, host_id, index, name, first_seen, last_seen) VALUES` +
        ` ('${A.gpu}', '${A.host.id}', 0, 'NVIDIA H100 80GB HBM3', now(), now())`,
    );
    sql(
      `INSERT INTO gpu_events (host_id, gpu_uuid, kind, code, policy, first_seen, last_seen) VALUES` +
        ` ('${A.host.id}', '${A.gpu}', 'xid', 13, 'record', now(), now())`,
    );
    sql(
      `INSERT INTO host_recoveries (host_id, pool_id, cause, hold_since, diag_level, state, error, finished_at)` +
        ` VALUES ('${A.host.id}', '${A.pool.id}', 'test', now(), 2, 'failed', 'test', now())`,
    );
    // a rollout of team-a's pool: a ready host on the shared stack, rolled to another
    A.ready = await host(T.opA, A.pool, A.cred);
    serving(A.ready, A.pool, sharedStack);
    A.rollout = expectStatus(
      await post(`/v1/pools/${A.pool.id}/rollouts`, T.opA, { stack_id: newStack.id, min_baseline_ratio: null }),
      201,
    );
    expectStatus(await post('/v1/work-reports', T.repA, { records: [report(A.host, 0)] }), 201);
    B.host = await host(T.opB, B.pool, B.cred);
  });

  function report(h, hour) {
    const start = Date.parse('2026-01-01T00:00:00Z') + hour * 3600e3;
    return {
      host_id: h.id,
      window_start: new Date(start).toISOString(),
      window_end: new Date(start + 3600e3).toISOString(),
      unit: 'tokens',
      completed: 100,
      failed: 0,
      retried: 0,
      busy_seconds: 600,
    };
  }

  test("a host document carries its pool's project", async () => {
    const doc = expectStatus(await get(`/v1/hosts/${A.host.id}`, T.viewerA), 200);
    assert.deepEqual(doc.project, { id: P['team-a'].id, name: 'team-a' });
    const b = expectStatus(await get(`/v1/hosts/${B.host.id}`, T.viewerB), 200);
    assert.deepEqual(b.project, { id: P['team-b'].id, name: 'team-b' });
  });

  test("every document of team-a's host, GPU and pool carries team-a's project", async () => {
    const want = { id: P['team-a'].id, name: 'team-a' };
    const one = async (path) => expectStatus(await get(path, T.viewerA), 200);
    const items = async (path) => {
      const page = await listAll(path, T.viewerA);
      assert.ok(page.items.length > 0, `${path} lists nothing`);
      return page.items;
    };
    const docs = {
      'job (the provision reply)': [A.job],
      job: [await one(`/v1/jobs/${A.job.id}`)],
      'job list': await items(`/v1/jobs?host_id=${A.host.id}`),
      'gate run': [await one(`/v1/gate-runs/${A.run}`)],
      'gate run list': await items(`/v1/hosts/${A.host.id}/gate-runs`),
      readiness: [await one(`/v1/hosts/${A.host.id}/readiness`)],
      samples: [await one(`/v1/hosts/${A.host.id}/samples`)],
      recoveries: await items(`/v1/hosts/${A.host.id}/recoveries`),
      gpus: await items(`/v1/gpus?host_id=${A.host.id}`),
      'gpu events': await items(`/v1/gpus/${A.gpu}/events`),
      rollout: [await one(`/v1/rollouts/${A.rollout.id}`)],
      'rollout list': (await items(`/v1/rollouts?pool=${A.pool.id}`)).filter((x) => x.id === A.rollout.id),
      baseline: [await one(`/v1/baselines/${A.baseline}`)],
      'baseline list': (await items(`/v1/baselines?pool=${A.pool.id}`)).filter((x) => x.id === A.baseline),
      'work reports': (await items('/v1/work-reports')).filter((x) => x.host_id === A.host.id),
    };
    const health = await one(`/v1/hosts/${A.host.id}/health`);
    docs.health = [health];
    docs['health gpus'] = health.gpus;
    docs['health open events'] = health.open_events;
    for (const [what, list] of Object.entries(docs)) {
      assert.ok(list.length > 0, `no ${what}`);
      for (const doc of list) assert.deepEqual(doc.project, want, what);
    }
    // the platform admin's lists, over every project, name each row's own
    for (const x of (await listAll('/v1/jobs', platform)).items) {
      const p = x.host_id === B.host.id ? 'team-b' : x.host_id === A.host.id ? 'team-a' : null;
      if (p) assert.deepEqual(x.project, { id: P[p].id, name: p });
    }
  });

  test("team-a's reads answer 404 to team-b, and 200 to team-a", async () => {
    const reads = [
      `/v1/hosts/${A.host.id}`,
      `/v1/jobs/${A.job.id}`,
      `/v1/gate-runs/${A.run}`,
      `/v1/hosts/${A.host.id}/readiness`,
      `/v1/hosts/${A.host.id}/health`,
      `/v1/hosts/${A.host.id}/samples`,
      `/v1/hosts/${A.host.id}/recoveries`,
      `/v1/gpus/${A.gpu}/events`,
      `/v1/rollouts/${A.rollout.id}`,
      `/v1/baselines/${A.baseline}`,
      `/v1/gate-runs/${A.run}/baseline-comparison?stack=${sharedStack.id}`,
    ];
    for (const path of reads) {
      expectStatus(await get(path, T.viewerA), 200);
      for (const token of [T.viewerB, T.opB, T.adminB]) expectProblem(await get(path, token), 404, 'not_found');
    }
  });

  test("team-b's lists never hold team-a's rows; team-a's and the platform admin's do", async () => {
    const lists = [
      ['/v1/hosts', [A.host.id]],
      ['/v1/jobs', [A.job.id]],
      ['/v1/gate-runs', [A.run]],
      [`/v1/hosts/${A.host.id}/gate-runs`, [A.run]],
      ['/v1/gpus', [A.gpu]],
      ['/v1/rollouts', [A.rollout.id]],
      ['/v1/baselines', [A.baseline]],
      [`/v1/jobs?host_id=${A.host.id}`, [A.job.id]],
      [`/v1/gpus?host_id=${A.host.id}`, [A.gpu]],
    ];
    for (const [path, want] of lists) {
      const seenB = ids(await listAll(path, T.viewerB));
      for (const id of want) assert.ok(!seenB.includes(id), `${path} lists ${id} to team-b`);
      for (const token of [T.viewerA, platform]) {
        const seen = ids(await listAll(path, token));
        for (const id of want) assert.ok(seen.includes(id), `${path} leaves out ${id}`);
      }
    }
    const hostsB = ids(await listAll('/v1/hosts', T.viewerB));
    assert.ok(hostsB.includes(B.host.id));
    const reportsB = await listAll('/v1/work-reports', T.viewerB);
    assert.ok(!reportsB.items.some((x) => x.host_id === A.host.id));
    const reportsA = await listAll('/v1/work-reports', T.viewerA);
    assert.ok(reportsA.items.some((x) => x.host_id === A.host.id));
  });

  test('?project= narrows a list, and names no project the caller may not see', async () => {
    const all = ids(await listAll('/v1/hosts', platform));
    assert.ok(all.includes(A.host.id) && all.includes(B.host.id));
    const onlyB = ids(await listAll('/v1/hosts?project=team-b', platform));
    assert.ok(onlyB.includes(B.host.id) && !onlyB.includes(A.host.id));
    const byId = ids(await listAll(`/v1/jobs?project=${P['team-a'].id}`, platform));
    assert.ok(byId.includes(A.job.id));
    for (const path of [
      '/v1/hosts',
      '/v1/jobs',
      '/v1/gate-runs',
      '/v1/gpus',
      '/v1/rollouts',
      '/v1/baselines',
      '/v1/work-reports',
    ]) {
      expectProblem(await get(`${path}?project=team-a`, T.viewerB), 400, 'invalid_parameter', 'project');
      expectProblem(await get(`${path}?project=no-such-team`, T.viewerB), 400, 'invalid_parameter', 'project');
    }
  });

  test("every host command of team-b on team-a's host answers 404 and changes nothing (audited)", async () => {
    const before = hostRow(A.host.id);
    const jobs = jobsOf(A.host.id);
    const audited = denied('host.denied', A.host.id, 404);
    const commands = [
      ['POST', 'provision', T.opB, { stack_id: sharedStack.id }],
      ['POST', 'gate', T.opB],
      ['POST', 'diagnostics', T.opB, { level: 1 }],
      ['POST', 'drain', T.opB],
      ['POST', 'resume', T.opB],
      ['POST', 'release', T.adminB, { reason: 'mine now', repin: true }],
      ['POST', 'stop', T.opB, { reason: 'save money' }],
      ['DELETE', '', T.adminB],
      ['PATCH', '', T.opB, { labels: { owner: 'b' } }],
      ['PATCH', '', T.adminB, { pool_id: B.pool.id }],
    ];
    for (const [method, verb, token, body] of commands) {
      const path = `/v1/hosts/${A.host.id}${verb ? `/${verb}` : ''}`;
      const res = await client.request(method, path, body === undefined ? { token } : { token, body });
      expectProblem(res, 404, 'not_found');
    }
    assert.equal(hostRow(A.host.id), before);
    assert.equal(jobsOf(A.host.id), jobs);
    assert.equal(denied('host.denied', A.host.id, 404), audited + commands.length);
    expectStatus(await get(`/v1/hosts/${A.host.id}`, T.viewerA), 200);
  });

  test("a viewer of the host's project gets 403 for a command (it may see the host)", async () => {
    const before = hostRow(A.host.id);
    const audited = denied('host.denied', A.host.id, 403);
    // a viewer of team-a who operates team-b passes the door, then meets the host's scope
    T.mixed = srv.token('operator', { sub: 'mix', project: 'team-b' });
    expectStatus(
      await client.request('PUT', '/v1/projects/team-a/members/mix', { token: platform, body: { role: 'viewer' } }),
      200,
    );
    expectProblem(await post(`/v1/hosts/${A.host.id}/drain`, T.mixed), 403, 'insufficient_role');
    assert.equal(hostRow(A.host.id), before);
    assert.equal(denied('host.denied', A.host.id, 403), audited + 1);
  });

  test("team-b may not cancel team-a's job, nor pause, resume, abort or start its rollouts", async () => {
    expectProblem(await post(`/v1/jobs/${A.job.id}/cancel`, T.opB), 404, 'not_found');
    assert.equal(sql(`SELECT state FROM jobs WHERE id = '${A.job.id}'`), 'queued');
    assert.equal(denied('job.denied', A.job.id, 404), 1);
    for (const action of ['pause', 'resume', 'abort']) {
      expectProblem(await post(`/v1/rollouts/${A.rollout.id}/${action}`, T.opB), 404, 'not_found');
    }
    assert.equal(sql(`SELECT state FROM rollouts WHERE id = '${A.rollout.id}'`), 'running');
    assert.equal(denied('rollout.denied', A.rollout.id, 404), 3);
    const rollouts = sql(`SELECT count(*) FROM rollouts WHERE pool_id = '${A.pool.id}'`);
    expectProblem(await post(`/v1/pools/${A.pool.id}/rollouts`, T.opB, { stack_id: sharedStack.id }), 404, 'not_found');
    assert.equal(sql(`SELECT count(*) FROM rollouts WHERE pool_id = '${A.pool.id}'`), rollouts);
    // team-a itself still may
    expectStatus(await post(`/v1/rollouts/${A.rollout.id}/pause`, T.opA), 200);
  });

  test("a host is provisioned only with its project's stack or a shared one", async () => {
    const jobs = jobsOf(B.host.id);
    expectProblem(
      await post(`/v1/hosts/${B.host.id}/provision`, T.opB, { stack_id: privateStack.id }),
      400,
      'invalid_field',
      'stack_id',
    );
    assert.equal(jobsOf(B.host.id), jobs);
    expectStatus(await post(`/v1/hosts/${B.host.id}/provision`, T.opB, { stack_id: sharedStack.id }), 202);
  });

  describe('registration', () => {
    test('a pool or a credential of a project the caller may not see answers as an unknown one', async () => {
      const unknownPool = expectProblem(
        await register(T.opB, { id: NIL }, B.cred),
        400,
        'invalid_field',
        'credential_id',
      );
      const otherPool = expectProblem(await register(T.opB, A.pool, B.cred), 400, 'invalid_field', 'credential_id');
      assert.equal(otherPool.detail, unknownPool.detail);
      const unknownCred = expectProblem(
        await register(T.opB, B.pool, { id: NIL }),
        400,
        'invalid_field',
        'credential_id',
      );
      const otherCred = expectProblem(await register(T.opB, B.pool, A.cred), 400, 'invalid_field', 'credential_id');
      assert.equal(otherCred.detail, unknownCred.detail);
      assert.equal(sql(`SELECT count(*) FROM hosts WHERE pool_id = '${A.pool.id}' AND created_by = 'bob'`), '0');
    });

    test("an operator of both projects using team-a's credential for team-b's pool: 409 credential_not_allowed, nothing runs", async () => {
      const dual = srv.token('operator', { sub: 'dual', project: 'team-a' });
      expectStatus(
        await client.request('PUT', '/v1/projects/team-b/members/dual', {
          token: platform,
          body: { role: 'operator' },
        }),
        200,
      );
      const jobs = sql('SELECT count(*) FROM jobs');
      const body = hostBody(B.pool, A.cred);
      const p = expectProblem(await post('/v1/hosts', dual, body), 409, 'credential_not_allowed', 'credential_id');
      assert.match(p.detail, /another project/);
      assert.equal(sql(`SELECT count(*) FROM hosts WHERE name = '${body.name}'`), '0');
      assert.equal(sql('SELECT count(*) FROM jobs'), jobs);
      // the same operator with team-b's credential registers
      expectStatus(await post('/v1/hosts', dual, hostBody(B.pool, B.cred)), 201);
    });

    test("a viewer of the pool's project gets 403 (audited)", async () => {
      const before = Number(
        sql(`SELECT count(*) FROM audit_events WHERE action = 'host.denied' AND status = 403 AND principal = 'mix'`),
      );
      expectProblem(await register(T.mixed, A.pool, A.cred), 403, 'insufficient_role', 'pool_id');
      const after = Number(
        sql(`SELECT count(*) FROM audit_events WHERE action = 'host.denied' AND status = 403 AND principal = 'mix'`),
      );
      assert.equal(after, before + 1);
    });

    test("the credential's allowed_users and allowed_cidrs", async () => {
      const users = await credIn('team-b', { users: ['ubuntu', 'ops'] });
      const p = expectProblem(
        await register(T.opB, B.pool, users, { user: 'gpufleet' }),
        409,
        'credential_not_allowed',
        'user',
      );
      assert.match(p.detail, /allowed_users.*gpufleet/);
      expectProblem(await register(T.opB, B.pool, users, { user: 'ubunt' }), 409, 'credential_not_allowed', 'user');
      expectStatus(await register(T.opB, B.pool, users, { user: 'ubuntu' }), 201);
      const none = await credIn('team-b', { users: [] });
      expectProblem(await register(T.opB, B.pool, none, { user: 'ubuntu' }), 409, 'credential_not_allowed', 'user');

      const cidrs = await credIn('team-b', { cidrs: ['10.0.0.0/8'] });
      const q = expectProblem(
        await register(T.opB, B.pool, cidrs, { address: '127.0.0.9' }),
        409,
        'credential_not_allowed',
        'address',
      );
      assert.match(q.detail, /127\.0\.0\.9.*allowed_cidrs/);
      expectStatus(await register(T.opB, B.pool, cidrs, { address: '10.20.30.40' }), 201);
      assert.equal(sql(`SELECT count(*) FROM hosts WHERE credential_id = '${cidrs.id}'`), '1');
    });

    test('names are unique within a project, not across projects', async () => {
      const name = `twin-${uniq()}`;
      expectStatus(await register(T.opA, A.pool, A.cred, { name }), 201);
      expectStatus(await register(T.opB, B.pool, B.cred, { name }), 201);
      expectProblem(await register(T.opB, B.pool, B.cred, { name }), 409, 'already_exists', 'name');
    });
  });

  describe('pool moves', () => {
    test('into another project: a platform admin moves a drained host, and its accepted gate is cleared', async () => {
      const h = await host(T.opA, A.pool, A.cred);
      const run = serving(h, A.pool, sharedStack, 'drained');
      assert.equal(expectStatus(await get(`/v1/hosts/${h.id}`, T.viewerA), 200).accepted_gate_run_id, run);
      const before = hostRow(h.id);

      // team-b's admin may not see the host
      expectProblem(
        await patch(`/v1/hosts/${h.id}`, T.adminB, { pool_id: B.pool.id, credential_id: B.cred.id }),
        404,
        'not_found',
      );
      // team-a's admin may not see team-b's pool: as an unknown pool
      const unknown = expectProblem(
        await patch(`/v1/hosts/${h.id}`, T.adminA, { pool_id: NIL }),
        400,
        'invalid_field',
        'pool_id',
      );
      const hidden = expectProblem(
        await patch(`/v1/hosts/${h.id}`, T.adminA, { pool_id: B.pool.id, credential_id: B.cred.id }),
        400,
        'invalid_field',
        'pool_id',
      );
      assert.equal(hidden.detail, unknown.detail);
      // an admin of both projects is not a platform admin
      const both = srv.token('admin', { sub: 'duo', project: 'team-a' });
      expectStatus(
        await client.request('PUT', '/v1/projects/team-b/members/duo', { token: platform, body: { role: 'admin' } }),
        200,
      );
      const audited = denied('host.denied', h.id, 403);
      expectProblem(
        await patch(`/v1/hosts/${h.id}`, both, { pool_id: B.pool.id, credential_id: B.cred.id }),
        403,
        'insufficient_role',
        'pool_id',
      );
      assert.equal(denied('host.denied', h.id, 403), audited + 1);
      // the platform admin: team-a's credential is not bound to team-b
      expectProblem(
        await patch(`/v1/hosts/${h.id}`, platform, { pool_id: B.pool.id }),
        409,
        'credential_not_allowed',
        'credential_id',
      );
      assert.equal(hostRow(h.id), before);

      const moved = expectStatus(
        await patch(`/v1/hosts/${h.id}`, platform, { pool_id: B.pool.id, credential_id: B.cred.id }),
        200,
      );
      assert.deepEqual(moved.project, { id: P['team-b'].id, name: 'team-b' });
      assert.equal(moved.pool_id, B.pool.id);
      assert.equal(moved.credential_id, B.cred.id);
      assert.equal(moved.state, 'drained');
      assert.equal(moved.accepted_gate_run_id, null);
      expectProblem(await get(`/v1/hosts/${h.id}`, T.viewerA), 404, 'not_found');
      expectStatus(await get(`/v1/hosts/${h.id}`, T.viewerB), 200);
      // its gate run and readiness name the host's project now
      const teamB = { id: P['team-b'].id, name: 'team-b' };
      assert.deepEqual(expectStatus(await get(`/v1/gate-runs/${run}`, T.viewerB), 200).project, teamB);
      assert.deepEqual(expectStatus(await get(`/v1/hosts/${h.id}/readiness`, T.viewerB), 200).project, teamB);
      // audited in both projects
      const rows = sql(
        `SELECT project_id FROM audit_events WHERE action = 'host.update' AND resource_id = '${h.id}' ORDER BY project_id`,
      ).split('\n');
      assert.deepEqual(rows.sort(), [P['team-a'].id, P['team-b'].id].sort());
    });

    test('into another project: a host that serves or works answers 409 host_not_drained', async () => {
      const h = await host(T.opA, A.pool, A.cred);
      serving(h, A.pool, sharedStack, 'ready');
      const before = hostRow(h.id);
      expectProblem(
        await patch(`/v1/hosts/${h.id}`, platform, { pool_id: B.pool.id, credential_id: B.cred.id }),
        409,
        'host_not_drained',
        'pool_id',
      );
      assert.equal(hostRow(h.id), before);
    });

    test('within the project: a ready host answers 409 host_not_drained naming its state, even into a like pool', async () => {
      const l4 = await poolIn('team-a', { gpu_model: 'l4', gpu_count: 1 });
      const twin = await poolIn('team-a', { gate: { workload: WORKLOAD } });
      const w = await host(T.opA, A.pool, A.cred);
      const run = serving(w, A.pool, sharedStack, 'ready');
      const before = hostRow(w.id);
      for (const target of [l4, twin]) {
        const p = expectProblem(
          await patch(`/v1/hosts/${w.id}`, T.opA, { pool_id: target.id }),
          409,
          'host_not_drained',
          'pool_id',
        );
        assert.match(p.detail, /this one is ready/);
        assert.match(p.detail, /drain/);
      }
      assert.equal(hostRow(w.id), before);
      assert.equal(expectStatus(await get(`/v1/hosts/${w.id}`, T.viewerA), 200).accepted_gate_run_id, run);
      // labels alone still change on a ready host
      expectStatus(await patch(`/v1/hosts/${w.id}`, T.opA, { labels: { k: 'v' } }), 200);
      // and the database refuses the event from ready too (the state machine's rows)
      assert.throws(() => sql(`SELECT host_transition('${w.id}', 'pool_moved', NULL, 'test', NULL, 'test', NULL)`));
    });

    test('within the project: a drained host moves, into a like pool too, and its accepted gate is cleared', async () => {
      const twin = await poolIn('team-a', { gate: { workload: WORKLOAD } });
      const v = await host(T.opA, A.pool, A.cred);
      const run = serving(v, A.pool, sharedStack, 'drained');
      assert.equal(expectStatus(await get(`/v1/hosts/${v.id}`, T.viewerA), 200).accepted_gate_run_id, run);
      const like = expectStatus(await patch(`/v1/hosts/${v.id}`, T.opA, { pool_id: twin.id }), 200);
      assert.equal(like.state, 'drained');
      assert.equal(like.pool_id, twin.id);
      assert.equal(like.accepted_gate_run_id, null);
      // resume needs a new gate now
      expectProblem(await post(`/v1/hosts/${v.id}/resume`, T.opA), 409, 'gate_required');
      assert.equal(
        sql(`SELECT count(*) FROM host_state_history WHERE host_id = '${v.id}' AND event = 'pool_moved'`),
        '0',
        'drained → drained is no state change; the gate is cleared in place',
      );
      // the same pool again is no move: nothing changes
      const same = expectStatus(await patch(`/v1/hosts/${v.id}`, T.opA, { pool_id: twin.id }), 200);
      assert.equal(same.state, 'drained');
    });

    test('the credential is re-checked against the new pool: a binding that no longer allows the host refuses the move', async () => {
      const other = await poolIn('team-a');
      const bound = await credIn('team-a', { cidrs: ['127.0.77.0/24'] });
      const h = await host(T.opA, A.pool, bound);
      sql(`SELECT host_transition('${h.id}', 'drain', NULL, 'test', NULL, 'test', NULL)`);
      sql(`SELECT host_transition('${h.id}', 'drained_when_idle', NULL, 'test', NULL, 'test', NULL)`);
      // the binding narrowed after the host registered
      sql(`UPDATE credentials SET allowed_cidrs = ARRAY['10.9.0.0/16']::text[] WHERE id = '${bound.id}'`);
      const before = hostRow(h.id);
      expectProblem(
        await patch(`/v1/hosts/${h.id}`, T.opA, { pool_id: other.id }),
        409,
        'credential_not_allowed',
        'address',
      );
      assert.equal(hostRow(h.id), before);
      // labels alone do not re-check it
      expectStatus(await patch(`/v1/hosts/${h.id}`, T.opA, { labels: { x: 'y' } }), 200);
      sql(`UPDATE credentials SET allowed_cidrs = ARRAY['127.0.77.0/24']::text[] WHERE id = '${bound.id}'`);
      expectStatus(await patch(`/v1/hosts/${h.id}`, T.opA, { pool_id: other.id }), 200);
    });
  });

  describe('work reports', () => {
    test("a reporter of team-a reports only for team-a's hosts; nothing of a mixed batch is stored", async () => {
      const before = sql(`SELECT count(*) FROM work_reports WHERE host_id = '${A.host.id}'`);
      const p = expectProblem(
        await post('/v1/work-reports', T.repA, { records: [report(A.host, 1), report(B.host, 1)] }),
        403,
        'host_out_of_scope',
        'records[1].host_id',
      );
      assert.match(p.detail, new RegExp(B.host.id));
      assert.equal(sql(`SELECT count(*) FROM work_reports WHERE host_id = '${A.host.id}'`), before);
      assert.ok(
        Number(sql(`SELECT count(*) FROM audit_events WHERE action = 'work_report.denied' AND principal = 'rep-a'`)) >=
          1,
      );
      expectStatus(await post('/v1/work-reports', T.repA, { records: [report(A.host, 1)] }), 201);
    });

    test("a reporter's pool names its own project's pool, never another's of the same name", async () => {
      const name = `wr-${uniq()}`;
      const poolA = await poolIn('team-a', { name });
      const poolB = await poolIn('team-b', { name });
      const hA = await host(T.opA, poolA, A.cred);
      const hB = await host(T.opB, poolB, B.cred);
      const rep = srv.token('reporter', { sub: 'rep-b', project: 'team-b', args: ['--pool', name] });
      expectStatus(await post('/v1/work-reports', rep, { records: [report(hB, 2)] }), 201);
      expectProblem(
        await post('/v1/work-reports', rep, { records: [report(hA, 2)] }),
        403,
        'host_out_of_scope',
        'records[0].host_id',
      );
      assert.equal(sql(`SELECT count(*) FROM work_reports WHERE host_id = '${hA.id}'`), '0');
    });
  });
});

describe('GPU quota', () => {
  let pool, cred, l4;
  const body = () => hostBody(pool, cred);
  before(async () => {
    await project('quota-q', { quotas: { gpus: { h100_sxm: 8 } } });
    T.opQ = srv.token('operator', { sub: 'quinn', project: 'quota-q' });
    pool = await poolIn('quota-q', { gpu_model: 'h100_sxm', gpu_count: 2 });
    l4 = await poolIn('quota-q', { gpu_model: 'l4', gpu_count: 1 });
    cred = await credIn('quota-q');
  });

  const hostsOfPool = () => sql(`SELECT count(*) FROM hosts WHERE pool_id = '${pool.id}'`);

  test('20 concurrent registrations against 8 GPUs (2 a host), on two replicas, leave exactly 4 hosts', async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? replicaClient : client).request('POST', '/v1/hosts', { token: T.opQ, body: body() }),
      ),
    );
    const created = answers.filter((r) => r.status === 201);
    const refused = answers.filter((r) => r.status === 409);
    assert.equal(created.length, 4);
    assert.equal(refused.length, 16);
    for (const r of refused) {
      const p = expectProblem(r, 409, 'quota_exceeded');
      assert.match(p.detail, /h100_sxm/);
      assert.match(p.detail, /\b8\b/);
    }
    assert.equal(hostsOfPool(), '4');
    const doc = expectStatus(await get('/v1/projects/quota-q', platform), 200);
    assert.equal(doc.usage.gpus.h100_sxm, 8);
    assert.deepEqual(doc.usage.over_quota, []);
    // a model without a quota is not capped
    expectStatus(await post('/v1/hosts', T.opQ, hostBody(l4, cred)), 201);
  });

  test('a quota lowered below usage touches no host; the next addition is refused', async () => {
    const before = sql(`SELECT string_agg(id || state, ',' ORDER BY id) FROM hosts WHERE pool_id = '${pool.id}'`);
    expectStatus(await patch('/v1/projects/quota-q', platform, { quotas: { gpus: { h100_sxm: 4 } } }), 200);
    assert.equal(
      sql(`SELECT string_agg(id || state, ',' ORDER BY id) FROM hosts WHERE pool_id = '${pool.id}'`),
      before,
    );
    const doc = expectStatus(await get('/v1/projects/quota-q', platform), 200);
    assert.deepEqual(doc.usage.over_quota, ['h100_sxm']);
    const p = expectProblem(await post('/v1/hosts', T.opQ, body()), 409, 'quota_exceeded');
    assert.match(p.detail, /quota for h100_sxm is 4; its hosts hold 8 and this would add 2/);
    assert.equal(hostsOfPool(), '4');
  });

  test('provisioning a stopped host brings its GPUs back: checked against the quota', async () => {
    const id = sql(`SELECT id FROM hosts WHERE pool_id = '${pool.id}' ORDER BY seq LIMIT 1`);
    psqlUnguarded(srv.database.url, `UPDATE hosts SET state = 'stopped' WHERE id = '${id}'`);
    const jobs = jobsOf(id);
    expectProblem(await post(`/v1/hosts/${id}/provision`, T.opQ, { stack_id: sharedStack.id }), 409, 'quota_exceeded');
    assert.equal(jobsOf(id), jobs);
    // 3 hosts hold 6 GPUs: a quota of 8 takes the stopped one back, exactly
    expectStatus(await patch('/v1/projects/quota-q', platform, { quotas: { gpus: { h100_sxm: 8 } } }), 200);
    expectStatus(await post(`/v1/hosts/${id}/provision`, T.opQ, { stack_id: sharedStack.id }), 202);
  });

  test('a move into the project counts against its quota', async () => {
    await project('mover');
    const moverPool = await poolIn('mover', { gpu_model: 'h100_sxm', gpu_count: 2 });
    const moverCred = await credIn('mover');
    const opM = srv.token('operator', { sub: 'mo', project: 'mover' });
    const h = await host(opM, moverPool, moverCred);
    sql(`SELECT host_transition('${h.id}', 'drain', NULL, 'test', NULL, 'test', NULL)`);
    sql(`SELECT host_transition('${h.id}', 'drained_when_idle', NULL, 'test', NULL, 'test', NULL)`);
    const before = hostRow(h.id);
    // quota-q's 3 hosts that are not stopped hold 6 GPUs: a quota of 6 has no room for 2
    expectStatus(await patch('/v1/projects/quota-q', platform, { quotas: { gpus: { h100_sxm: 6 } } }), 200);
    expectProblem(
      await patch(`/v1/hosts/${h.id}`, platform, { pool_id: pool.id, credential_id: cred.id }),
      409,
      'quota_exceeded',
    );
    assert.equal(hostRow(h.id), before);
  });
});

describe('GPU quota: a pool change', () => {
  let pool, cred, opP;
  // PUT of the pool as read, with changes; the answer and the stored revision after it
  const putPool = async (changes) => {
    const res = await get(`/v1/pools/${pool.id}`, opP);
    const body = { ...expectStatus(res, 200), ...changes };
    for (const k of ['id', 'project', 'revision', 'gate_version', 'created_at', 'updated_at', 'created_by'])
      delete body[k];
    return client.request('PUT', `/v1/pools/${pool.id}`, {
      token: opP,
      body,
      headers: { 'If-Match': res.headers.get('etag') },
    });
  };
  const revision = () =>
    sql(`SELECT revision || ':' || gpu_model || ':' || (spec->>'gpu_count') FROM pools WHERE id = '${pool.id}'`);
  before(async () => {
    await project('quota-pool', { quotas: { gpus: { h100_sxm: 4, l4: 2 } } });
    opP = srv.token('admin', { sub: 'pam', project: 'quota-pool' });
    pool = await poolIn('quota-pool', { gpu_model: 'h100_sxm', gpu_count: 1 });
    cred = await credIn('quota-pool');
    await host(opP, pool, cred);
    await host(opP, pool, cred);
  });

  test('more GPUs per host past the quota: 409 quota_exceeded, the pool unchanged', async () => {
    const before = revision();
    const p = expectProblem(await putPool({ gpu_count: 4 }), 409, 'quota_exceeded');
    assert.match(p.detail, /quota for h100_sxm is 4; its hosts hold 2 and this would add 6/);
    assert.equal(revision(), before);
    // within the quota: 2 hosts × 2 GPUs
    assert.equal(expectStatus(await putPool({ gpu_count: 2 }), 200).gpu_count, 2);
  });

  test("another model counts the hosts' GPUs under it", async () => {
    const before = revision();
    const p = expectProblem(await putPool({ gpu_model: 'l4' }), 409, 'quota_exceeded');
    assert.match(p.detail, /quota for l4 is 2; its hosts hold 0 and this would add 4/);
    assert.equal(revision(), before);
  });

  test('a change that adds no GPU is never refused, even over a lowered quota', async () => {
    expectStatus(await patch('/v1/projects/quota-pool', platform, { quotas: { gpus: { h100_sxm: 1, l4: 2 } } }), 200);
    assert.equal(expectStatus(await putPool({ price_per_hour: 9 }), 200).price_per_hour, 9);
    assert.equal(expectStatus(await putPool({ gpu_count: 1 }), 200).gpu_count, 1);
    // the stopped hosts hold none: with both stopped, a bigger count adds nothing
    psqlUnguarded(srv.database.url, `UPDATE hosts SET state = 'stopped' WHERE pool_id = '${pool.id}'`);
    assert.equal(expectStatus(await putPool({ gpu_count: 8 }), 200).gpu_count, 8);
  });
});

describe('budget', () => {
  let pool, cred, h, opBud;
  const spend = (exhausted, month = "date_trunc('month', now() AT TIME ZONE 'UTC')::date") =>
    sql(
      `INSERT INTO project_spend (project_id, month, spend, burn_per_hour, forecast, exhausted)` +
        ` VALUES ('${P['budget-b'].id}', ${month}, 150, 2, 250, ${exhausted})` +
        ' ON CONFLICT (project_id) DO UPDATE SET month = EXCLUDED.month, spend = EXCLUDED.spend,' +
        ' burn_per_hour = EXCLUDED.burn_per_hour, forecast = EXCLUDED.forecast, exhausted = EXCLUDED.exhausted',
    );
  before(async () => {
    await project('budget-b', { budget: { monthly: 100, on_exhausted: 'refuse_new' } });
    opBud = srv.token('operator', { sub: 'bud', project: 'budget-b' });
    pool = await poolIn('budget-b');
    cred = await credIn('budget-b');
    h = await host(opBud, pool, cred);
  });

  test('refuse_new at 100 %: registration and provisioning answer 409 budget_exhausted', async () => {
    spend(true);
    const body = hostBody(pool, cred);
    const p = expectProblem(await post('/v1/hosts', opBud, body), 409, 'budget_exhausted');
    assert.match(p.detail, /150\.00.*100\.00/);
    assert.equal(sql(`SELECT count(*) FROM hosts WHERE name = '${body.name}'`), '0');
    const jobs = jobsOf(h.id);
    expectProblem(
      await post(`/v1/hosts/${h.id}/provision`, opBud, { stack_id: sharedStack.id }),
      409,
      'budget_exhausted',
    );
    assert.equal(jobsOf(h.id), jobs);
  });

  test("last month's spend refuses nothing", async () => {
    spend(true, "(date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date");
    expectStatus(await post('/v1/hosts', opBud, hostBody(pool, cred)), 201);
  });

  test('notify: an exhausted budget refuses nothing', async () => {
    spend(true);
    expectProblem(await post('/v1/hosts', opBud, hostBody(pool, cred)), 409, 'budget_exhausted');
    expectStatus(await patch('/v1/projects/budget-b', platform, { budget: { on_exhausted: 'notify' } }), 200);
    expectStatus(await post('/v1/hosts', opBud, hostBody(pool, cred)), 201);
    expectStatus(await post(`/v1/hosts/${h.id}/provision`, opBud, { stack_id: sharedStack.id }), 202);
  });
});
