'use strict';
// Stack rollouts in waves against the simulated fleet (issue 14, docs/rollouts.md; needs
// root). Eight simulated H100 hosts (driver 555.42.06 / CUDA 12.5, simfleet up --driver,
// which every stack pins) in two pools of four, each host provisioned with stack A and
// accepted by a gate whose workload reports tokens_per_second (2400), so every host
// has a baseline on A. Per-image behaviour comes from `simfleet digest` (the workload of a
// stack's image is slower, 2000 tokens/s, or fails).
//
//   pool x: A → B, canary 1, max_unavailable 2: waves [x-01] [x-02 x-03] [x-04];
//           succeeded, every host on B and ready, baselines on B, comparisons in the
//           document, the SSE events in step order, never more than 2 out of service;
//           then B → E with pause_after_canary: paused, 409 rollout-active, abort →
//           rolled_back (the canary back on B, the others never touched).
//   pool y: a stack whose driver the hosts do not have → 409 driver-mismatch;
//           A → D whose workload fails: the canary's gate is not accepted → only the
//           canary is rolled back, the other hosts are never touched;
//           A → C with pause_after_canary: the canary passes (C is fast at first), paused;
//           C becomes slow, resume: wave 1 compares under 0.95 → every touched host back
//           on A and ready, the evidence names the comparison; the last wave never ran.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { expectProblem } = require('../api/lib/assert');
const R = require('./lib/rollout');

const DRIVER = { version: '555.42.06', cuda: '12.5' };
let f;
const P = {}; // x, y -> pool
const H = {}; // x, y -> [hosts] in name order
const S = {}; // A, B, C, D, E -> stack

before(async () => {
  // a driver other than simfleet's default: the stacks pin what the hosts report
  f = await R.setup({ name: 'fleet-rollout', net: 228, user: 'gpufleet-rotest', count: 8, driver: DRIVER });
  S.A = await f.stack();
  for (const k of ['B', 'C', 'D', 'E']) S[k] = await f.stack();
  P.x = await f.pool('x');
  P.y = await f.pool('y');
  [H.x, H.y] = await Promise.all([
    f.enroll(f.sim.hosts.slice(0, 4), P.x, S.A, 'x'),
    f.enroll(f.sim.hosts.slice(4, 8), P.y, S.A, 'y'),
  ]);
});

after(async () => {
  if (f) await f.stop();
});

async function hostsOn(hosts, stack) {
  for (const h of hosts) {
    const d = await f.host(h.id);
    assert.equal(d.state, 'ready', `${h.name} is ${d.state}`);
    assert.equal(d.current_stack_id, stack.id, `${h.name} is on ${d.current_stack_id}, want ${stack.id}`);
  }
}
const byName = (doc) => Object.fromEntries(doc.hosts.map((h) => [h.name, h]));

describe('before a rollout', () => {
  test('baselines were recorded on A by the accepted gates, with their conditions', async () => {
    const page = await f.get(`/v1/baselines?stack=${S.A.id}&limit=100`);
    assert.equal(page.items.length, 8, JSON.stringify(page.items.map((b) => [b.host_id, b.value])));
    const ids = new Set([...H.x, ...H.y].map((h) => h.id));
    for (const b of page.items) {
      assert.ok(ids.has(b.host_id));
      assert.equal(b.source, 'gate');
      assert.equal(b.stack_id, S.A.id);
      assert.equal(b.metric, 'tokens_per_second');
      assert.equal(b.value, R.TPS);
      assert.equal(b.image_digest, R.digestOf(S.A));
      assert.equal(b.gpu_model, page.items[0].gpu_model);
      assert.equal(b.concurrency, 8);
      assert.equal(b.cache, 'warm');
      assert.match(b.workload_hash, /^sha256:[0-9a-f]{64}$/);
    }
    assert.equal(
      new Set(page.items.map((b) => b.workload_hash)).size,
      1,
      'the same workload on both pools hashes alike',
    );
  });

  test('a stack whose driver the hosts do not report → 409 driver-mismatch naming them', async () => {
    const other = await f.stack({ driver_branch: '550', driver_version: '550.127.05', cuda_version: '12.4' });
    const res = await f.req('POST', `/v1/pools/${P.y.id}/rollouts`, f.operator, { stack_id: other.id });
    const b = expectProblem(res, 409, ['driver-mismatch', 'driver_mismatch']);
    assert.deepEqual(
      b.hosts.map((h) => h.name).sort(),
      H.y.map((h) => h.name),
    );
    assert.equal(f.sim.env.SIMFLEET_DRIVER, DRIVER.version);
    for (const h of b.hosts) assert.equal(h.driver_version, DRIVER.version);
    // force does not skip it (drivers are installed out of band)
    const forced = await f.req('POST', `/v1/pools/${P.y.id}/rollouts`, f.admin, { stack_id: other.id, force: true });
    expectProblem(forced, 409, ['driver-mismatch', 'driver_mismatch']);
  });
});

describe('pool x: A → B in waves', () => {
  let ro;
  let done;
  let stats;
  let stream;
  test('201 with the waves: canary x-01, then x-02 x-03, then x-04', async () => {
    stream = await f.events();
    ro = await f.createRollout(P.x.id, { stack_id: S.B.id, canary: 1, max_unavailable: 2, soak_seconds: 0 });
    const w = R.watch(f, ro, 2);
    assert.equal(ro.state, 'running');
    assert.equal(ro.max_unavailable, 2);
    assert.equal(ro.max_unavailable_hosts, 2);
    assert.equal(ro.min_baseline_ratio, 0.95);
    assert.deepEqual(
      ro.waves.map((wv) => [wv.index, wv.canary, wv.hosts.length]),
      [
        [0, true, 1],
        [1, false, 2],
        [2, false, 1],
      ],
    );
    const names = byName(ro);
    assert.deepEqual(
      H.x.map((h) => names[h.name].wave),
      [0, 1, 1, 2],
    );
    for (const h of ro.hosts) {
      assert.equal(h.from_stack_id, S.A.id);
      assert.equal(h.to_stack_id, S.B.id);
    }
    assert.deepEqual(ro.skipped, []);
    done = await f.waitRollout(ro.id, ['succeeded']);
    stats = await w.stop();
  });

  test('succeeded: every host on B and ready, every step done, nothing unavailable', async () => {
    assert.ok(done, 'the rollout did not succeed');
    await hostsOn(H.x, S.B);
    assert.equal(done.unavailable, 0);
    assert.equal(done.error, null);
    assert.ok(done.finished_at);
    assert.deepEqual(done.failed_hosts, []);
    for (const wv of done.waves) assert.equal(wv.state, 'done', JSON.stringify(wv));
    for (const h of done.hosts) {
      assert.equal(h.step, 'done', `${h.name}: ${h.step}`);
      assert.ok(
        h.rollback_step == null || h.rollback_step === 'not_needed',
        `${h.name}: rollback_step ${h.rollback_step}`,
      );
      assert.ok(h.provision_job_id && h.gate_job_id && h.gate_run_id, JSON.stringify(h));
      assert.ok(Date.parse(h.finished_at) >= Date.parse(h.started_at));
    }
    // waves in order: a wave starts when the previous one is done
    const hs = byName(done);
    const end = (w) => Math.max(...done.hosts.filter((h) => h.wave === w).map((h) => Date.parse(h.finished_at)));
    const start = (w) => Math.min(...done.hosts.filter((h) => h.wave === w).map((h) => Date.parse(h.started_at)));
    assert.ok(
      start(1) >= end(0) && start(2) >= end(1),
      JSON.stringify(Object.values(hs).map((h) => [h.name, h.started_at, h.finished_at])),
    );
  });

  test('each host was compared with its baselines on A: ratio 1 over the same conditions', async () => {
    for (const h of done.hosts) {
      const c = h.comparison;
      assert.ok(c, `${h.name} has no comparison`);
      assert.equal(c.metric, 'tokens_per_second');
      assert.equal(c.value, R.TPS);
      assert.equal(c.reference, R.TPS);
      assert.equal(c.ratio, 1);
      assert.ok(Array.isArray(c.baselines) && c.baselines.length >= 1, JSON.stringify(c));
    }
  });

  test('the accepted gates on B recorded baselines on B, one per host', async () => {
    const page = await f.get(`/v1/baselines?stack=${S.B.id}&limit=100`);
    assert.deepEqual(page.items.map((b) => b.host_id).sort(), H.x.map((h) => h.id).sort());
    for (const b of page.items) {
      assert.equal(b.value, R.TPS);
      assert.equal(b.image_digest, R.digestOf(S.B));
      assert.equal(b.pool_id, P.x.id);
    }
    const runs = new Set(done.hosts.map((h) => h.gate_run_id));
    for (const b of page.items) assert.ok(runs.has(b.gate_run_id), `baseline ${b.id} from run ${b.gate_run_id}`);
  });

  test('never more than max_unavailable (2) out of service, checked every 100 ms', () => {
    assert.deepEqual(stats.violations, []);
    assert.deepEqual(stats.errors, []);
    assert.ok(stats.samples > 20, `only ${stats.samples} samples`);
    assert.ok(stats.maxSteps >= 1 && stats.maxSteps <= 2, JSON.stringify(stats));
  });

  test('GET /v1/rollouts lists it; the SSE stream carried every state and step in order', async () => {
    const list = await f.get(`/v1/rollouts?pool=${P.x.id}`);
    assert.deepEqual(
      list.items.map((r) => [r.id, r.state]),
      [[ro.id, 'succeeded']],
    );
    await stream.waitFor(
      (evs) => evs.some((e) => e.event === 'rollout' && e.json.rollout_id === ro.id && e.json.state === 'succeeded'),
      10_000,
    );
    stream.close();
    assert.deepEqual(stream.errors, []);
    const states = stream.events
      .filter((e) => e.event === 'rollout' && e.json.rollout_id === ro.id)
      .map((e) => e.json.state);
    assert.equal(states[states.length - 1], 'succeeded');
    assert.ok(!states.includes('rolling_back'), JSON.stringify(states));
    const waves = stream.events
      .filter((e) => e.event === 'rollout' && e.json.rollout_id === ro.id)
      .map((e) => e.json.current_wave);
    R.assertOrdered(waves, [0, 1, 2, 3], 'current_wave'); // = waves once the last one passed
    assert.equal(waves[waves.length - 1], 3);
    for (const h of H.x) {
      const steps = R.stepsOf(stream.events, ro.id, h.id);
      R.assertOrdered(steps, ['pending', ...R.OUT_STEPS, 'done'], `${h.name} steps`);
      for (const s of ['draining', 'provisioning', 'gating', 'done'])
        assert.ok(steps.includes(s), `${h.name}: ${JSON.stringify(steps)}`);
      for (const e of stream.events.filter((x) => x.event === 'rollout.host' && x.json.host_id === h.id))
        assert.equal(e.json.pool_id, P.x.id);
    }
  });

  test('a second rollout of B finds nothing to roll out (409)', async () => {
    const res = await f.req('POST', `/v1/pools/${P.x.id}/rollouts`, f.operator, { stack_id: S.B.id });
    expectProblem(res, 409, ['nothing-to-roll-out', 'nothing_to_roll_out']);
  });

  test('B → E paused after the canary; 409 rollout-active; abort rolls the canary back to B', async () => {
    const m = await R.marks(f);
    const e = await f.createRollout(P.x.id, {
      stack_id: S.E.id,
      canary: 1,
      max_unavailable: 1,
      soak_seconds: 0,
      pause_after_canary: true,
    });
    const paused = await f.waitRollout(e.id, ['paused']);
    const hs = byName(paused);
    assert.equal(hs['x-01'].step, 'done');
    for (const n of ['x-02', 'x-03', 'x-04']) assert.equal(hs[n].step, 'pending');
    assert.equal((await f.host(H.x[0].id)).current_stack_id, S.E.id);
    const again = await f.req('POST', `/v1/pools/${P.x.id}/rollouts`, f.operator, { stack_id: S.C.id });
    expectProblem(again, 409, ['rollout-active', 'rollout_active']);
    await f.control(e.id, 'pause', 409); // already paused
    await f.control(e.id, 'abort', 200);
    const back = await f.waitRollout(e.id, ['rolled_back']);
    const bh = byName(back);
    assert.equal(bh['x-01'].rollback_step, 'done');
    for (const n of ['x-02', 'x-03', 'x-04']) assert.equal(bh[n].step, 'pending');
    await hostsOn(H.x, S.B);
    assert.deepEqual(
      await R.touchedSince(
        f,
        H.x.slice(1).map((h) => h.id),
        m.jobSeq,
        m.histId,
      ),
      { jobs: 0, hist: 0 },
    );
    for (const a of ['resume', 'pause', 'abort']) await f.control(e.id, a, 409); // terminal
  });
});

describe('pool y: failures roll back', () => {
  test('A → D whose workload fails: only the canary is rolled back, the others are never touched', async () => {
    f.simctl('digest', R.digestOf(S.D), 'fail');
    const m = await R.marks(f);
    const ro = await f.createRollout(P.y.id, { stack_id: S.D.id, canary: 1, max_unavailable: 2, soak_seconds: 0 });
    const w = R.watch(f, ro, 2);
    const done = await f.waitRollout(ro.id, ['rolled_back']);
    const stats = await w.stop();
    assert.deepEqual(stats.violations, []);
    const hs = byName(done);
    const canary = hs['y-01'];
    assert.equal(canary.wave, 0);
    assert.equal(canary.rollback_step, 'done', R.brief(done));
    assert.ok(canary.gate_job_id, 'the canary was gated');
    // the evidence names the host, the gate job and the run that was not accepted
    const ev = done.evidence || {};
    assert.equal(ev.host_id, H.y[0].id, JSON.stringify(ev));
    assert.equal(ev.job_id, canary.gate_job_id, JSON.stringify(ev));
    assert.equal(ev.verdict, 'investigate', JSON.stringify(ev));
    assert.ok(ev.gate_run_id, `evidence names the gate run: ${JSON.stringify(ev)}`);
    const run = await f.get(`/v1/hosts/${H.y[0].id}/gate-runs?limit=5`);
    const failed = run.items.find((r) => r.id === ev.gate_run_id);
    assert.ok(failed, 'the canary gate run is listed');
    assert.equal(failed.verdict, 'investigate');
    assert.equal(failed.stack_id, S.D.id);
    assert.equal(failed.checks.find((c) => c.name === 'workload').status, 'fail');
    assert.ok(canary.gate_run_id == null || canary.gate_run_id === ev.gate_run_id);
    assert.match(done.error || '', /y-01/, 'the rollout names its error and the host');
    for (const n of ['y-02', 'y-03', 'y-04']) {
      assert.equal(hs[n].step, 'pending', `${n}: ${hs[n].step}`);
      assert.ok(hs[n].rollback_step == null || hs[n].rollback_step === 'not_needed', `${n}: ${hs[n].rollback_step}`);
      assert.equal(hs[n].provision_job_id, null);
    }
    assert.deepEqual(
      done.waves.map((wv) => wv.state),
      ['rolled_back', 'pending', 'pending'],
    );
    await hostsOn(H.y, S.A);
    assert.deepEqual(
      await R.touchedSince(
        f,
        H.y.slice(1).map((h) => h.id),
        m.jobSeq,
        m.histId,
      ),
      { jobs: 0, hist: 0 },
    );
    for (const h of H.y.slice(1))
      assert.ok(!f.sim.argvText(h.sim.name).includes(R.digestOf(S.D)), `${h.name} saw D's image`);
    assert.equal(done.unavailable, 0);
    assert.deepEqual(done.failed_hosts, []);
  });

  test('A → C: the canary passes, paused; C turns slow; resume: wave 1 under 0.95 → all back on A', async () => {
    const m = await R.marks(f);
    const ro = await f.createRollout(P.y.id, {
      stack_id: S.C.id,
      canary: 1,
      max_unavailable: 2,
      soak_seconds: 0,
      pause_after_canary: true,
    });
    const w = R.watch(f, ro, 2);
    const paused = await f.waitRollout(ro.id, ['paused']);
    assert.equal(byName(paused)['y-01'].step, 'done');
    assert.equal(byName(paused)['y-01'].comparison.ratio, 1);
    assert.equal((await f.host(H.y[0].id)).current_stack_id, S.C.id);
    f.simctl('digest', R.digestOf(S.C), 'slow');
    await f.control(ro.id, 'resume', 200);
    const done = await f.waitRollout(ro.id, ['rolled_back']);
    const stats = await w.stop();
    assert.deepEqual(stats.violations, []);
    const hs = byName(done);
    // the comparison that failed, in the evidence and on the hosts of wave 1
    const cmp = R.findDeep(done.evidence, (o) => typeof o.ratio === 'number' && 'reference' in o);
    assert.ok(cmp, `the evidence names the comparison: ${JSON.stringify(done.evidence)}`);
    assert.equal(cmp.metric, 'tokens_per_second');
    assert.equal(cmp.value, R.SLOW_TPS);
    assert.equal(cmp.reference, R.TPS);
    assert.ok(Math.abs(cmp.ratio - R.SLOW_TPS / R.TPS) < 1e-6, JSON.stringify(cmp));
    const compared = ['y-02', 'y-03'].filter((n) => hs[n].comparison);
    assert.ok(compared.length >= 1, R.brief(done));
    for (const n of compared) assert.ok(hs[n].comparison.ratio < 0.95, JSON.stringify(hs[n].comparison));
    for (const n of ['y-01', 'y-02', 'y-03']) assert.equal(hs[n].rollback_step, 'done', `${n}: ${R.brief(done)}`);
    assert.equal(hs['y-04'].step, 'pending');
    await hostsOn(H.y, S.A);
    assert.deepEqual(await R.touchedSince(f, [H.y[3].id], m.jobSeq, m.histId), { jobs: 0, hist: 0 });
    assert.equal(done.unavailable, 0);
    assert.ok(done.finished_at);
    // back on A: the rollback ran a provisioning with A and a gate on every touched host
    for (const n of ['y-01', 'y-02', 'y-03']) {
      const rb = hs[n].rollback_jobs || {};
      if (n === 'y-01' || hs[n].provision_job_id) {
        assert.ok(rb.provision_job_id && rb.gate_job_id, `${n}: rollback_jobs ${JSON.stringify(rb)}`);
      }
    }
  });
});
