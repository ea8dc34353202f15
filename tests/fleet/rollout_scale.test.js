'use strict';
// Rollouts at pool scale, and a worker killed mid-wave (issue 14, docs/rollouts.md; needs
// root). Twenty simulated H100 hosts in one pool, provisioned with stack A and accepted by
// a gate with a workload (baselines on A). The API server runs no workers; the job
// workers and the rollout driver run in a separate `gpufleetd worker` process.
//
//   A → B, canary 2, max_unavailable 5: waves of 2, 5, 5, 5, 3. A watcher reads every
//   100 ms, in one snapshot, how many of the rollout's hosts are out of service (their
//   steps) and how many of the pool's hosts are not ready: never more than 5. Succeeds,
//   every host on B and ready.
//
//   B → C, canary 0, max_unavailable "25%" (5 hosts): once a host of wave 1 is
//   provisioning or gating with its job running, the worker process gets SIGKILL; nothing
//   moves for 3 s; it is started again, the jobs it held are taken over after their lease
//   (a second attempt), and the rollout finishes: succeeded, every host on C and ready,
//   one successful provisioning per host, the limit never exceeded.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const fleet = require('../api/lib/fleet');
const R = require('./lib/rollout');

const N = 20;
let f;
let pool;
const S = {};

before(async () => {
  f = await R.setup({ name: 'fleet-rollout-scale', net: 229, user: 'gpufleet-rostest', count: N, workers: 'separate' });
  S.A = await f.stack();
  S.B = await f.stack();
  S.C = await f.stack();
  pool = await f.pool('scale');
  await f.enroll(f.sim.hosts, pool, S.A, 's');
});

after(async () => {
  if (f) await f.stop();
});

async function allOn(stack) {
  const page = await f.get(`/v1/hosts?pool_id=${pool.id}&limit=100`);
  assert.equal(page.items.length, N);
  for (const h of page.items) {
    assert.equal(h.state, 'ready', `${h.name} is ${h.state}`);
    assert.equal(h.current_stack_id, stack.id, `${h.name} on ${h.current_stack_id}`);
  }
}

describe('20 hosts, max_unavailable 5', () => {
  test('A → B: waves 2, 5, 5, 5, 3; never more than 5 out of service; succeeded', async () => {
    const ro = await f.createRollout(pool.id, { stack_id: S.B.id, canary: 2, max_unavailable: 5, soak_seconds: 0 });
    const w = R.watch(f, ro, 5);
    assert.equal(ro.max_unavailable_hosts, 5);
    assert.deepEqual(
      ro.waves.map((wv) => wv.hosts.length),
      [2, 5, 5, 5, 3],
    );
    const done = await f.waitRollout(ro.id, ['succeeded'], 170_000);
    const stats = await w.stop();
    console.log(`# A → B watcher: ${JSON.stringify({ ...stats, violations: stats.violations.length })}`);
    assert.deepEqual(stats.violations, []);
    assert.deepEqual(stats.errors, []);
    assert.ok(stats.samples > 50, `only ${stats.samples} samples`);
    // a wave of 5 runs its hosts at once: the limit is reached, not just respected
    assert.ok(
      stats.maxSteps >= 3,
      `at most ${stats.maxSteps} hosts out of service at once: the waves ran one host at a time`,
    );
    for (const h of done.hosts) assert.equal(h.step, 'done', `${h.name}: ${h.step}`);
    for (const wv of done.waves) assert.equal(wv.state, 'done');
    await allOn(S.B);
  });

  test('B → C with "25%": SIGKILL of the worker mid-wave, restart, the rollout finishes', async () => {
    const m = await R.marks(f);
    const ro = await f.createRollout(pool.id, { stack_id: S.C.id, canary: 0, max_unavailable: '25%', soak_seconds: 0 });
    assert.equal(ro.max_unavailable, '25%');
    assert.equal(ro.max_unavailable_hosts, 5);
    assert.deepEqual(
      ro.waves.map((wv) => wv.hosts.length),
      [5, 5, 5, 5],
    );
    const w = R.watch(f, ro, 5);
    // mid-wave: hosts of wave 1 provisioning or gating, their jobs running in the worker
    const running = `SELECT coalesce(string_agg(j.id::text, ','), '') FROM rollout_hosts rh
        JOIN jobs j ON j.id = CASE rh.step WHEN 'provisioning' THEN rh.provision_job_id ELSE rh.gate_job_id END
       WHERE rh.rollout_id = '${ro.id}' AND rh.wave = 1 AND rh.step IN ('provisioning', 'gating') AND j.state = 'running'`;
    const jobs = await R.until(
      async () => {
        const ids = await f.sql(running);
        return ids ? { value: ids.split(',') } : { ok: false };
      },
      120_000,
      'a job of wave 1 running',
      100,
    );
    const exit = await f.killWorker('SIGKILL');
    assert.equal(exit.signal, 'SIGKILL');
    const rows = await R.stepRows(f, ro.id);
    const inFlight = Object.entries(rows).filter(([, h]) => R.OUT_STEPS.includes(h.step));
    // nothing moves the rollout while no worker runs
    const frozen = await R.stepRows(f, ro.id);
    await fleet.sleep(3000);
    assert.deepEqual(await R.stepRows(f, ro.id), frozen, 'steps changed with no worker running');
    f.startWorker();
    const done = await f.waitRollout(ro.id, ['succeeded'], 170_000);
    const stats = await w.stop();
    console.log(
      `# kill at ${JSON.stringify(inFlight)}; watcher ${JSON.stringify({ ...stats, violations: stats.violations.length })}`,
    );
    assert.deepEqual(stats.violations, []);
    assert.deepEqual(stats.errors, []);
    for (const h of done.hosts) {
      assert.equal(h.step, 'done', `${h.name}: ${h.step}`);
      assert.ok(h.rollback_step == null || h.rollback_step === 'not_needed');
    }
    await allOn(S.C);
    // every host was provisioned with C by exactly one successful job, started by the rollout
    const prov = await f.sql(
      `SELECT count(DISTINCT host_id) || ' ' || count(*) FROM jobs WHERE seq > ${m.jobSeq} AND kind = 'provision' AND state = 'succeeded'`,
    );
    assert.equal(prov, `${N} ${N}`, 'one successful provisioning per host');
    // the worker that was killed held jobs: they were taken over (a second attempt) or
    // had not been claimed yet; either way none failed
    const failed = await f.sql(`SELECT count(*) FROM jobs WHERE seq > ${m.jobSeq} AND state <> 'succeeded'`);
    assert.equal(failed, '0');
    const retried = await f.sql(`SELECT count(*) FROM jobs WHERE seq > ${m.jobSeq} AND attempt > 1`);
    console.log(`# jobs taken over after the kill: ${retried}`);
    // the jobs that were running in the killed worker ended succeeded, taken over after
    // their lease (a second attempt; one may have finished in the instant before the kill)
    const after = (
      await f.sql(
        `SELECT string_agg(state || ':' || attempt, ',') FROM jobs WHERE id IN (${jobs.map((j) => `'${j}'`).join(',')})`,
      )
    ).split(',');
    assert.ok(
      after.every((x) => x.startsWith('succeeded:')),
      JSON.stringify(after),
    );
    assert.ok(
      after.some((x) => Number(x.split(':')[1]) >= 2),
      `no job of the killed worker was taken over: ${JSON.stringify(after)}`,
    );
  });
});
