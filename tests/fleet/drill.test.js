'use strict';
// Restore drills over SSH against the simulated fleet (tests/fleet/simfleet; needs root):
// restore the pool's durable_state from the durable path onto a fresh scratch directory,
// verify each sha256, start the pinned stack image against the restored copy, run the
// pool's gate workload until its first success; every step timed.
//
//   | host    | profile          | pool  | durable path                          | verdict | why                        |
//   |---------|------------------|-------|---------------------------------------|---------|----------------------------|
//   | pass    | h100x8           | drill | both artifacts as declared            | pass    | measured times             |
//   | corrupt | h100x8           | drill | tokenizer.json altered                | fail    | sha256 mismatch, named     |
//   | missing | h100x8           | drill | tokenizer.json absent                 | fail    | missing artifact, named    |
//   | nowork  | workload_badutf8 | drill | as pass                               | fail    | workload never succeeds    |
//   | slow    | slow_durable     | tight | 3 × 8 MiB read at 4 MB/s (~6 s)       | fail    | over max_recovery_seconds 4 |
//   | fast    | h100x8           | tight | as slow, a normal disk                | pass    | under 4 s                  |
//   | busy    | h100x8           | sched | ready (not drained)                   | —       | 409, never scheduled       |
//   | spare   | h100x8           | sched | drained                               | pass    | the scheduler picks it     |
//
// Readiness question 8 follows the newest drill of the pool.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const { psql } = require('../api/lib/server');
const { expectProblem, expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');

const WORKER_ENV = {
  GPUFLEET_WORKERS: '2',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '10',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
  GPUFLEET_JOB_LEASE_SECONDS: '15',
  GPUFLEET_IDLE_POLICY_INTERVAL: '1', // the drill scheduler's pass, every second
};
const HOSTS = [
  { key: 'pass', profile: 'h100x8', pool: 'drill' },
  { key: 'corrupt', profile: 'h100x8', pool: 'drill' },
  { key: 'missing', profile: 'h100x8', pool: 'drill' },
  { key: 'nowork', profile: 'workload_badutf8', pool: 'drill' },
  { key: 'slow', profile: 'slow_durable', pool: 'tight' },
  { key: 'fast', profile: 'h100x8', pool: 'tight' },
  { key: 'busy', profile: 'h100x8', pool: 'sched' },
  { key: 'spare', profile: 'h100x8', pool: 'sched' },
];
const MIB = 1048576;
const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');
const MODEL = Buffer.alloc(2 * MIB, 3);
const TOKENIZER = Buffer.from('{"vocab": ["a", "b"]}\n');
const SHARD = (i) => Buffer.alloc(8 * MIB, 10 + i);

let sim;
let srv;
let client;
let admin;
let operator;
let viewer;
const hostOf = new Map();
const pools = {};
const drillOf = new Map();

function poolInput(name, extra) {
  return {
    name: `${name}-${fleet.uniq()}`,
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    interconnect: 'nvlink',
    price_per_hour: 10,
    durable_path: sim.env.SIMFLEET_DURABLE_PATH,
    scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
    gate: {
      workload: { command: ['python3', 'serve_check.py'], metric: 'tokens_per_second', min: 1000, timeout_s: 8 },
      storage_min_mbps: 1, // the integrity probe is not under test here (and the disk is shared)
    },
    ...extra,
  };
}
function put(hostName, rel, buf) {
  const file = path.join(sim.dir, hostName, 'fs', 'durable', rel);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
  for (let d = path.dirname(file); d.startsWith(path.join(sim.dir, hostName, 'fs', 'durable', '')); d = path.dirname(d))
    fs.chmodSync(d, 0o755);
  fs.writeFileSync(file, buf, { mode: 0o644 });
}
async function drain(id) {
  expectStatus(await client.request('POST', `/v1/hosts/${id}/drain`, { token: operator }), 200);
  const h = expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
  assert.equal(h.state, 'drained');
}
async function runDrill(key) {
  const id = hostOf.get(key).id;
  const queued = expectStatus(await client.request('POST', `/v1/hosts/${id}/drills`, { token: operator }), 202);
  assert.equal(queued.kind, 'drill');
  const job = await fleet.waitJob(client, viewer, queued.id, { timeoutMs: 120_000, intervalMs: 300 });
  assert.equal(job.state, 'succeeded', `${key}: ${job.error}`);
  const page = expectStatus(await client.request('GET', `/v1/hosts/${id}/drills?limit=1`, { token: viewer }), 200);
  const d = page.items[0];
  assert.ok(d && d.job_id === job.id, `${key}: no drill for job ${job.id}`);
  // the same document by id
  assert.deepEqual(expectStatus(await client.request('GET', `/v1/drills/${d.id}`, { token: viewer }), 200), d);
  const h = expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
  assert.equal(h.state, 'drained', `${key}: the host returns to drained`);
  return { drill: d, job };
}
const show = (d) => JSON.stringify({ verdict: d.verdict, reason: d.reason, steps: d.steps });
async function readiness(id) {
  const r = expectStatus(await client.request('GET', `/v1/hosts/${id}/readiness`, { token: viewer }), 200);
  return r.questions.find((q) => q.id === 'recovery');
}

before(async () => {
  const f = await fleet.startFleet({
    name: 'drill',
    sim: {
      count: HOSTS.length,
      profile: HOSTS.map((h) => h.profile),
      net: 238,
      user: 'gpufleet-drill',
    },
    env: WORKER_ENV,
  });
  ({ sim, srv, client, admin, operator, viewer } = f);
  const { cred, stack } = f;
  const mk = async (body) => expectStatus(await client.request('POST', '/v1/pools', { token: admin, body }), 201);
  const artifacts = [
    { path: 'models/m1/model.safetensors', sha256: sha(MODEL) },
    { path: 'models/m1/tokenizer.json', sha256: sha(TOKENIZER) },
  ];
  const shards = [0, 1, 2].map((i) => ({ path: `ckpt/shard-${i}.bin`, sha256: sha(SHARD(i)) }));
  pools.drill = await mk(poolInput('drill', { durable_state: { artifacts }, drill: { max_recovery_seconds: 900 } }));
  pools.tight = await mk(
    poolInput('tight', { durable_state: { artifacts: shards }, drill: { max_recovery_seconds: 4 } }),
  );
  pools.sched = await mk(poolInput('sched', { durable_state: { artifacts }, drill: { max_recovery_seconds: 900 } }));
  // the durable paths, as each host's own disk holds them
  sim.hosts.forEach((h, i) => {
    const { key, pool } = HOSTS[i];
    if (pool === 'tight') {
      for (let k = 0; k < 3; k++) put(h.name, `ckpt/shard-${k}.bin`, SHARD(k));
      return;
    }
    put(h.name, 'models/m1/model.safetensors', MODEL);
    if (key === 'corrupt') put(h.name, 'models/m1/tokenizer.json', Buffer.from('{"vocab": ["a", "X"]}\n'));
    else if (key !== 'missing') put(h.name, 'models/m1/tokenizer.json', TOKENIZER);
  });
  // the slow host's durable path reads at 4 MB/s (tests/fleet/tools/dd)
  const slow = sim.hosts[HOSTS.findIndex((x) => x.key === 'slow')];
  fs.appendFileSync(path.join(sim.dir, slow.name, 'env'), 'SIM_STORAGE_READ_MBPS=4\n');
  await Promise.all(
    sim.hosts.map(async (h, i) => {
      const { key, pool } = HOSTS[i];
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
      const done = await fleet.waitJob(client, viewer, job.id, { timeoutMs: 90_000, intervalMs: 400 });
      assert.equal(done.state, 'succeeded', `${key}: ${done.error}`);
    }),
  );
  // every host but busy and spare is drained by hand; the sched pool's spare last, after
  // busy was refused (the scheduler picks the spare as soon as it is drained)
  for (const { key } of HOSTS) if (key !== 'busy' && key !== 'spare') await drain(hostOf.get(key).id);
  // the busy host serves: an accepted gate makes it ready
  const busy = hostOf.get('busy').id;
  const g = expectStatus(await client.request('POST', `/v1/hosts/${busy}/gate`, { token: operator }), 202);
  const gj = await fleet.waitJob(client, viewer, g.id, { timeoutMs: 120_000, intervalMs: 400 });
  assert.equal(gj.state, 'succeeded', gj.error);
});

after(async () => {
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('restore drills', () => {
  test('readiness question 8 is no before any drill', async () => {
    const q = await readiness(hostOf.get('pass').id);
    assert.equal(q.answer, 'no', JSON.stringify(q));
    assert.equal(q.evidence.drill_id, null);
  });

  test('a drill passes with its measured times, restores every byte and cleans scratch', async () => {
    const { drill: d, job } = await runDrill('pass');
    drillOf.set('pass', d);
    assert.equal(d.verdict, 'pass', show(d));
    assert.equal(d.bytes_restored, MODEL.length + TOKENIZER.length);
    for (const k of ['restore_seconds', 'start_seconds', 'first_work_seconds', 'recovery_seconds'])
      assert.ok(typeof d[k] === 'number' && d[k] > 0, `${k}: ${d[k]}`);
    const sum = d.restore_seconds + d.start_seconds + d.first_work_seconds;
    assert.ok(Math.abs(d.recovery_seconds - sum) < 0.01, `${d.recovery_seconds} vs ${sum}`);
    assert.ok(d.recovery_seconds < 60, show(d));
    assert.equal(d.max_recovery_seconds, 900);
    assert.deepEqual(
      d.steps.map((s) => [s.name, s.status]),
      [
        ['restore', 'pass'],
        ['verify', 'pass'],
        ['start', 'pass'],
        ['first_work', 'pass'],
        ['cleanup', 'pass'],
      ],
    );
    assert.match(d.reason, /^recovered in /);
    // the commands: dd from the durable path into the fresh scratch directory, the
    // container with the restored copy mounted, the scratch copy removed
    const cmds = fleet.finalSteps(job).map((s) => s.command);
    const dir = `${sim.env.SIMFLEET_SCRATCH_PATH}/.gpufleet-drill-${job.id}`;
    assert.ok(cmds[0].includes(`dd if='${sim.env.SIMFLEET_DURABLE_PATH}/models/m1/model.safetensors'`), cmds[0]);
    assert.ok(cmds[0].includes(`of='${dir}/models/m1/model.safetensors'`), cmds[0]);
    assert.ok(cmds[2].startsWith(`docker run --rm --gpus all -v '${dir}:/gpufleet/restored:ro'`), cmds[2]);
    assert.ok(cmds[3].includes("'python3' 'serve_check.py'"), cmds[3]);
    assert.ok(cmds[4].startsWith(`rm -rf -- '${dir}'`), cmds[4]);
  });

  test('readiness question 8 follows the newest drill: yes after the pass', async () => {
    const q = await readiness(hostOf.get('corrupt').id); // another host of the same pool
    assert.equal(q.answer, 'yes', JSON.stringify(q));
    assert.equal(q.evidence.drill_id, drillOf.get('pass').id);
    assert.equal(q.evidence.verdict, 'pass');
    assert.equal(q.evidence.recovery_seconds, drillOf.get('pass').recovery_seconds);
    assert.ok(q.evidence.age_days >= 0 && q.evidence.age_days < 1);
  });

  test('a corrupted artifact fails the checksum, naming it', async () => {
    const { drill: d } = await runDrill('corrupt');
    drillOf.set('corrupt', d);
    assert.equal(d.verdict, 'fail', show(d));
    assert.match(d.reason, /models\/m1\/tokenizer\.json does not match its sha256/);
    assert.match(d.reason, new RegExp(sha(Buffer.from('{"vocab": ["a", "X"]}\n'))));
    assert.deepEqual(
      d.steps.map((s) => [s.name, s.status]),
      [
        ['restore', 'pass'],
        ['verify', 'fail'],
        ['cleanup', 'pass'],
      ],
    );
    assert.equal(d.start_seconds, null);
    assert.equal(d.first_work_seconds, null);
  });

  test('readiness question 8 follows the newest drill: no after the failure', async () => {
    const q = await readiness(hostOf.get('pass').id);
    assert.equal(q.answer, 'no', JSON.stringify(q));
    assert.equal(q.evidence.drill_id, drillOf.get('corrupt').id);
    assert.equal(q.evidence.verdict, 'fail');
  });

  test('a missing artifact fails, naming it', async () => {
    const { drill: d } = await runDrill('missing');
    assert.equal(d.verdict, 'fail', show(d));
    assert.match(d.reason, /artifact models\/m1\/tokenizer\.json is missing from the durable path/);
    assert.equal(d.steps[0].name, 'restore');
    assert.equal(d.steps[0].status, 'fail');
  });

  test('a workload that never succeeds fails after its attempts, with the evidence', async () => {
    const { drill: d } = await runDrill('nowork');
    assert.equal(d.verdict, 'fail', show(d));
    assert.match(d.reason, /the workload did not succeed within 3 attempts/);
    const work = d.steps.filter((s) => s.name === 'first_work');
    assert.equal(work.length, 3, show(d));
    for (const w of work) assert.equal(w.status, 'fail');
    assert.ok(d.first_work_seconds > 0);
    assert.equal(d.steps.at(-1).name, 'cleanup');
  });

  test('a slow durable path: over max_recovery_seconds fails with the measured time', async () => {
    const { drill: d } = await runDrill('slow');
    assert.equal(d.verdict, 'fail', show(d));
    assert.match(d.reason, /^recovery took [\d.]+ s, over max_recovery_seconds 4$/);
    assert.equal(d.bytes_restored, 3 * 8 * MIB);
    assert.ok(d.restore_seconds > 4, `restore ${d.restore_seconds} s (3 × 2 s of simulated reads)`);
    assert.ok(d.recovery_seconds > 4);
    // every step itself succeeded: only the time fails it
    for (const s of d.steps) assert.equal(s.status, 'pass', show(d));
    // the same pool on a normal disk recovers in time
    const { drill: ok } = await runDrill('fast');
    assert.equal(ok.verdict, 'pass', show(ok));
    assert.ok(ok.restore_seconds < d.restore_seconds, `${ok.restore_seconds} vs ${d.restore_seconds}`);
  });

  test('a drill never starts on a host doing work: 409 on a ready host', async () => {
    const id = hostOf.get('busy').id;
    const h = expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
    assert.equal(h.state, 'ready');
    expectProblem(await client.request('POST', `/v1/hosts/${id}/drills`, { token: operator }), 409, 'host_not_drained');
    // a viewer may not ask for one
    expectProblem(await client.request('POST', `/v1/hosts/${id}/drills`, { token: viewer }), 403, 'insufficient_role');
  });

  test('the scheduler drills one drained host of a due pool, never the host doing work', async () => {
    // drill.every_days on the sched pool: the busy host is ready (not drained)
    const got = await client.request('GET', `/v1/pools/${pools.sched.id}`, { token: viewer });
    const cur = expectStatus(got, 200);
    const body = { ...poolInput('x', {}), name: cur.name };
    body.durable_state = cur.durable_state;
    body.drill = { max_recovery_seconds: 900, every_days: 1 };
    expectStatus(
      await client.request('PUT', `/v1/pools/${pools.sched.id}`, {
        token: admin,
        body,
        headers: { 'If-Match': got.headers.get('etag') },
      }),
      200,
    );
    // a few scheduler passes with no drained host in the pool: nothing is queued
    await new Promise((r) => setTimeout(r, 3500));
    const busy = hostOf.get('busy').id;
    const none = expectStatus(
      await client.request('GET', `/v1/jobs?kind=drill&host_id=${busy}`, { token: viewer }),
      200,
    );
    assert.equal(none.items.length, 0, JSON.stringify(none.items));
    // the spare drained: the scheduler picks it, once
    const spare = hostOf.get('spare').id;
    await drain(spare);
    const deadline = Date.now() + 60_000;
    let jobs;
    for (;;) {
      jobs = expectStatus(await client.request('GET', `/v1/jobs?kind=drill&host_id=${spare}`, { token: viewer }), 200);
      if (jobs.items.length > 0) break;
      assert.ok(Date.now() < deadline, 'the scheduler queued no drill on the drained host');
      await new Promise((r) => setTimeout(r, 500));
    }
    const job = await fleet.waitJob(client, viewer, jobs.items[0].id, { timeoutMs: 120_000, intervalMs: 300 });
    assert.equal(job.state, 'succeeded', job.error);
    assert.equal(job.created_by, 'system:drill-scheduler');
    const page = expectStatus(await client.request('GET', `/v1/hosts/${spare}/drills`, { token: viewer }), 200);
    assert.equal(page.items[0].verdict, 'pass', show(page.items[0]));
    // due no more: no second drill; the busy host never got one
    await new Promise((r) => setTimeout(r, 3000));
    const again = expectStatus(
      await client.request('GET', `/v1/jobs?kind=drill&host_id=${spare}`, { token: viewer }),
      200,
    );
    assert.equal(again.items.length, 1);
    const still = expectStatus(
      await client.request('GET', `/v1/jobs?kind=drill&host_id=${busy}`, { token: viewer }),
      200,
    );
    assert.equal(still.items.length, 0);
    const bd = expectStatus(await client.request('GET', `/v1/hosts/${busy}/drills`, { token: viewer }), 200);
    assert.equal(bd.items.length, 0);
  });

  test('drill.completed: one event per drill, with its verdict and measured time', () => {
    const rows = psql(
      srv.database.url,
      "SELECT data->>'drill_id', data->>'verdict' FROM events WHERE type = 'drill.completed' ORDER BY id",
    )
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('|'));
    const byId = new Map(rows);
    for (const key of ['pass', 'corrupt']) assert.equal(byId.get(drillOf.get(key).id), drillOf.get(key).verdict);
    assert.ok(rows.length >= 7, `${rows.length} drill.completed events`);
  });
});
