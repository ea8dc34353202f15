'use strict';
// Restore drills, the API side (the job itself runs in tests/fleet/drill.test.js): the
// pool's durable_state and drill and each of their refusals (a 400 naming the field:
// these paths reach a remote command), POST /v1/hosts/{id}/drills's refusals (a host not
// drained, a pool with nothing to restore or no workload, a viewer), and the drill reads
// (GET /v1/drills/{id}, GET /v1/hosts/{id}/drills) validated against the spec.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psqlUnguarded } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const FP = 'SHA256:uGuZiKLFB1cv6TK4FSkk748vzZ525e0ThqAuUk8l+Bs';
const SUM = 'a'.repeat(64);
const ARTS = { artifacts: [{ path: 'models/m/model.safetensors', sha256: SUM }] };
const WORKLOAD = { command: ['python3', 'bench.py'], metric: 'tokens_per_second', min: 1 };

let srv;
let client;
let admin;
let operator;
let viewer;
let cred;

function pool(extra = {}) {
  return {
    name: `drill-${fleet.uniq()}`,
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    price_per_hour: 10,
    durable_path: '/srv/gpufleet/durable',
    scratch_path: '/srv/gpufleet/scratch',
    ...extra,
  };
}
const create = async (body) => client.request('POST', '/v1/pools', { token: admin, body });
async function host(poolId) {
  return fleet.createHost(client, operator, {
    name: `h-${fleet.uniq()}`,
    address: '127.0.0.1',
    port: 22,
    user: 'gpu',
    credential_id: cred.id,
    pool_id: poolId,
    host_key_sha256: FP,
  });
}

before(async () => {
  srv = await startServer({ name: 'drills', env: { GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' } });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('pool durable_state and drill', () => {
  test('stored as sent and read back', async () => {
    const body = pool({ durable_state: ARTS, drill: { max_recovery_seconds: 900, every_days: 7 } });
    const p = expectStatus(await create(body), 201);
    assert.deepEqual(p.durable_state, ARTS);
    assert.deepEqual(p.drill, { max_recovery_seconds: 900, every_days: 7 });
    const sixteen = Array.from({ length: 16 }, (_, i) => ({ path: `ckpt/shard-${i}.bin`, sha256: SUM }));
    expectStatus(
      await create(pool({ durable_state: { artifacts: sixteen }, drill: { max_recovery_seconds: 1 } })),
      201,
    );
  });

  test('each refusal is a 400 naming the field', async () => {
    const art = (o) => ({ durable_state: { artifacts: [{ path: 'm.bin', sha256: SUM, ...o }] } });
    const cases = [
      [art({ path: '../etc/shadow' }), 'durable_state.artifacts[0].path'],
      [art({ path: 'models/../../x' }), 'durable_state.artifacts[0].path'],
      [art({ path: '/etc/shadow' }), 'durable_state.artifacts[0].path'],
      [art({ path: 'models/./m' }), 'durable_state.artifacts[0].path'],
      [art({ path: "m'; reboot; '" }), 'durable_state.artifacts[0].path'],
      [art({ path: 'm$(reboot)' }), 'durable_state.artifacts[0].path'],
      [art({ path: 'a b' }), 'durable_state.artifacts[0].path'],
      [art({ path: '' }), 'durable_state.artifacts[0].path'],
      [art({ path: 'x'.repeat(201) }), 'durable_state.artifacts[0].path'],
      [art({ sha256: 'A'.repeat(64) }), 'durable_state.artifacts[0].sha256'],
      [art({ sha256: 'a'.repeat(63) }), 'durable_state.artifacts[0].sha256'],
      [art({ sha256: 'g'.repeat(64) }), 'durable_state.artifacts[0].sha256'],
      [{ durable_state: { artifacts: [] } }, 'durable_state.artifacts'],
      [
        {
          durable_state: {
            artifacts: Array.from({ length: 17 }, (_, i) => ({ path: `s${i}`, sha256: SUM })),
          },
        },
        'durable_state.artifacts',
      ],
      [{ drill: { max_recovery_seconds: 0 } }, 'drill.max_recovery_seconds'],
      [{ drill: { max_recovery_seconds: 86401 } }, 'drill.max_recovery_seconds'],
      [{ drill: { max_recovery_seconds: 1.5 } }, 'drill.max_recovery_seconds'],
      [{ drill: { max_recovery_seconds: 900, every_days: 0 } }, 'drill.every_days'],
      [{ drill: { max_recovery_seconds: 900, every_days: 366 } }, 'drill.every_days'],
    ];
    for (const [extra, field] of cases) {
      const b = expectProblem(await create(pool(extra)), 400, ['invalid_field', 'missing_field'], field);
      assert.ok(b.detail.length > 0);
    }
    expectProblem(await create(pool({ durable_state: {} })), 400, 'missing_field', 'durable_state.artifacts');
    expectProblem(await create(pool({ drill: { every_days: 7 } })), 400, 'missing_field', 'drill.max_recovery_seconds');
    expectProblem(
      await create(pool({ durable_state: { artifacts: [{ path: 'm' }] } })),
      400,
      'missing_field',
      'durable_state.artifacts[0].sha256',
    );
    expectProblem(
      await create(pool({ durable_state: { ...ARTS, serve: 'x' } })),
      400,
      'unknown_field',
      'durable_state.serve',
    );
  });
});

describe('POST /v1/hosts/{id}/drills', () => {
  test('a pool without durable_state, or without a gate workload: 409 drill_not_configured', async () => {
    const bare = expectStatus(await create(pool({ gate: { workload: WORKLOAD } })), 201);
    const h1 = await host(bare.id);
    const b = expectProblem(
      await client.request('POST', `/v1/hosts/${h1.id}/drills`, { token: operator }),
      409,
      'drill_not_configured',
    );
    assert.match(b.detail, /durable_state/);
    const noWork = expectStatus(await create(pool({ durable_state: ARTS })), 201);
    const h2 = await host(noWork.id);
    const b2 = expectProblem(
      await client.request('POST', `/v1/hosts/${h2.id}/drills`, { token: operator }),
      409,
      'drill_not_configured',
    );
    assert.match(b2.detail, /workload/);
  });

  test('a host that is not drained: 409 host_not_drained; a viewer: 403; unknown: 404', async () => {
    const p = expectStatus(await create(pool({ durable_state: ARTS, gate: { workload: WORKLOAD } })), 201);
    const h = await host(p.id);
    const b = expectProblem(
      await client.request('POST', `/v1/hosts/${h.id}/drills`, { token: operator }),
      409,
      'host_not_drained',
    );
    assert.match(b.detail, /drained/);
    expectProblem(
      await client.request('POST', `/v1/hosts/${h.id}/drills`, { token: viewer }),
      403,
      'insufficient_role',
    );
    expectProblem(
      await client.request('POST', '/v1/hosts/00000000-0000-4000-8000-00000000abcd/drills', { token: operator }),
      404,
      'not_found',
    );
    // nothing queued
    const jobs = expectStatus(await client.request('GET', `/v1/jobs?host_id=${h.id}`, { token: viewer }), 200);
    assert.equal(jobs.items.length, 0);
  });

  test('a drained host: 202 with the drill job', async () => {
    const p = expectStatus(await create(pool({ durable_state: ARTS, gate: { workload: WORKLOAD } })), 201);
    const h = await host(p.id);
    expectStatus(await client.request('POST', `/v1/hosts/${h.id}/drain`, { token: operator }), 200);
    const res = await client.request('POST', `/v1/hosts/${h.id}/drills`, { token: operator });
    const job = expectStatus(res, 202);
    assert.equal(job.kind, 'drill');
    assert.equal(res.headers.get('location'), `/v1/jobs/${job.id}`);
    const listed = expectStatus(
      await client.request('GET', `/v1/jobs?kind=drill&host_id=${h.id}`, { token: viewer }),
      200,
    );
    assert.ok(listed.items.some((j) => j.id === job.id));
  });
});

describe('drill reads', () => {
  test('GET /v1/drills/{id} and the host list, newest first, filtered by verdict', async () => {
    const p = expectStatus(await create(pool({ durable_state: ARTS, gate: { workload: WORKLOAD } })), 201);
    const h = await host(p.id);
    const url = srv.database.url;
    const ins = (verdict, secs) =>
      psqlUnguarded(
        url,
        `INSERT INTO drills (host_id, pool_id, verdict, reason, restore_seconds, start_seconds, first_work_seconds,` +
          ` recovery_seconds, max_recovery_seconds, bytes_restored, steps, started_at) VALUES ('${h.id}', '${p.id}',` +
          ` '${verdict}', 'r', ${secs}, 1, 1, ${secs + 2}, 900, 1000000,` +
          ` '[{"name":"restore","status":"pass","seconds":${secs},"message":"ok"}]'::jsonb, now()) RETURNING id`,
      ).match(/[0-9a-f-]{36}/)[0];
    const first = ins('pass', 2);
    const second = ins('fail', 4);
    const d = expectStatus(await client.request('GET', `/v1/drills/${first}`, { token: viewer }), 200);
    assert.equal(d.verdict, 'pass');
    assert.equal(d.recovery_seconds, 4);
    assert.equal(d.bytes_restored, 1000000);
    assert.equal(d.restore_mb_per_second, 0.5);
    assert.equal(d.project.name, 'default');
    const page = expectStatus(await client.request('GET', `/v1/hosts/${h.id}/drills`, { token: viewer }), 200);
    assert.deepEqual(
      page.items.map((x) => x.id),
      [second, first],
    );
    const fails = expectStatus(
      await client.request('GET', `/v1/hosts/${h.id}/drills?verdict=fail`, { token: viewer }),
      200,
    );
    assert.deepEqual(
      fails.items.map((x) => x.id),
      [second],
    );
    expectProblem(
      await client.request('GET', `/v1/hosts/${h.id}/drills?verdict=maybe`, { token: viewer }),
      400,
      'invalid_parameter',
    );
    expectProblem(
      await client.request('GET', '/v1/drills/00000000-0000-4000-8000-00000000abcd', { token: viewer }),
      404,
      'not_found',
    );
    // readiness question 8 answers from the pool's newest drill (fail: no)
    const r = expectStatus(await client.request('GET', `/v1/hosts/${h.id}/readiness`, { token: viewer }), 200);
    const q = r.questions.find((x) => x.id === 'recovery');
    assert.equal(q.answer, 'no');
    assert.equal(q.evidence.drill_id, second);
    assert.equal(q.evidence.verdict, 'fail');
    // the list of every drill, by pool (the status page's read)
    const all = expectStatus(await client.request('GET', `/v1/drills?pool_id=${p.id}`, { token: viewer }), 200);
    assert.deepEqual(
      all.items.map((x) => x.id),
      [second, first],
    );
    // the event of each drill
    const ev = psqlUnguarded(url, `SELECT count(*) FROM events WHERE type = 'drill.completed' AND host_id = '${h.id}'`);
    assert.equal(ev.trim(), '2');
  });
});
