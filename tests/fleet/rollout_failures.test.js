'use strict';
// Stack rollouts that end `failed` (issue 14, docs/rollouts.md; needs root): the two ways
// a rollout cannot put its hosts back. Three simulated H100 hosts (z-01..z-03) in one
// pool whose monitor samples every 10 s, each provisioned with stack A and accepted by a
// gate (a baseline each).
//
//   1. A → B, canary 1, soak 120 s: during the canary wave's soak the kernel log of z-01
//      gets a real Xid 79 line; the monitor isolates the host (quarantined), the rollout
//      fails with the isolation as its evidence, and the rollback cannot take a
//      quarantined host back: `failed`, z-01 named in failed_hosts and left quarantined,
//      z-02 and z-03 never touched.
//   2. A → C, canary 1, paused after the canary (z-02 on C); A's workload turns failing;
//      abort: z-02 is drained and re-provisioned with A, but its gate on A is not
//      accepted: `failed`, z-02 named and left out of service (never `ready` without an
//      accepted gate), z-01 skipped (quarantined), z-03 never touched.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const fleet = require('../api/lib/fleet');
const R = require('./lib/rollout');

const INTERVAL_S = 10;
const SOAK_S = 120;
let f;
let P; // the pool
let H; // [z-01, z-02, z-03]
const S = {}; // A, B, C -> stack

before(async () => {
  // the monitor on (the test server turns it off unless asked)
  f = await R.setup({
    name: 'fleet-rollout-failures',
    net: 234, // 226 is gate_storage.test.js's
    user: 'gpufleet-rofail',
    count: 3,
    env: { GPUFLEET_MONITOR: '1' },
  });
  for (const k of ['A', 'B', 'C']) S[k] = await f.stack();
  P = await f.pool('z', undefined, { monitor: { interval_seconds: INTERVAL_S } });
  H = await f.enroll(f.sim.hosts, P, S.A, 'z');
});

after(async () => {
  if (f) await f.stop();
});

const byName = (doc) => Object.fromEntries(doc.hosts.map((h) => [h.name, h]));

/** Polls the rollout until pred(document) holds; returns the document. */
async function waitDoc(id, pred, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = await f.rollout(id);
    if (pred(d)) return d;
    if (['succeeded', 'failed', 'rolled_back'].includes(d.state))
      throw new Error(`${what}: the rollout ended ${d.state}: ${R.brief(d)}`);
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms: ${R.brief(d)}`);
    await fleet.sleep(250);
  }
}

describe('rollouts that cannot put their hosts back', () => {
  test('A → B: the monitor isolates the canary during its soak → failed, the canary left quarantined and named', async () => {
    const m = await R.marks(f);
    const ro = await f.createRollout(P.id, { stack_id: S.B.id, canary: 1, max_unavailable: 1, soak_seconds: SOAK_S });
    const soaking = await waitDoc(
      ro.id,
      (d) => d.waves[0] && d.waves[0].state === 'soaking',
      120_000,
      'the canary wave soaking',
    );
    assert.equal(byName(soaking)['z-01'].step, 'done');
    assert.equal((await f.host(H[0].id)).state, 'ready');
    const xidAt = Date.now();
    f.simctl('xid', H[0].sim.name, '79');
    const done = await f.waitRollout(ro.id, ['failed'], 3 * INTERVAL_S * 1000 + 60_000);
    // it failed because of the isolation, well before the soak would have ended
    assert.ok(Date.now() - xidAt < SOAK_S * 1000, `failed ${Date.now() - xidAt} ms after the Xid`);
    const ev = done.evidence || {};
    assert.equal(ev.host_id, H[0].id, JSON.stringify(ev));
    assert.ok(ev.isolation, `the evidence names the isolation: ${JSON.stringify(ev)}`);
    assert.match(done.error || '', /z-01/);
    assert.match(done.error || '', /isolated/);
    const hs = byName(done);
    assert.equal(hs['z-01'].step, 'failed', 'the host that failed the rollout');
    assert.equal(hs['z-01'].rollback_step, 'failed', R.brief(done));
    assert.deepEqual(
      done.failed_hosts.map((h) => [h.host_id, h.name, h.host_state]),
      [[H[0].id, 'z-01', 'quarantined']],
    );
    const h1 = await f.host(H[0].id);
    assert.equal(h1.state, 'quarantined');
    assert.equal(h1.current_stack_id, S.B.id, 'the rollback did not touch the quarantined host');
    // the monitor's event on the host's GPU
    assert.equal(
      Number(
        await f.sql(`SELECT count(*) FROM gpu_events WHERE host_id = '${H[0].id}' AND kind = 'xid' AND code = 79`),
      ),
      1,
    );
    for (const n of ['z-02', 'z-03']) {
      assert.equal(hs[n].step, 'pending', `${n}: ${hs[n].step}`);
      assert.equal(hs[n].provision_job_id, null);
    }
    assert.deepEqual(await R.touchedSince(f, [H[1].id, H[2].id], m.jobSeq, m.histId), { jobs: 0, hist: 0 });
    for (const h of H.slice(1)) {
      const d = await f.host(h.id);
      assert.equal(d.state, 'ready', `${h.name}: ${d.state}`);
      assert.equal(d.current_stack_id, S.A.id);
    }
    assert.equal(done.unavailable, 1, 'the quarantined canary is out of service because of the rollout');
    for (const a of ['resume', 'pause', 'abort']) await f.control(ro.id, a, 409); // terminal
  });

  test('A → C, aborted after the canary while A fails its workload: the rollback gate is not accepted → failed, the host named and held out', async () => {
    const m = await R.marks(f);
    const ro = await f.createRollout(P.id, {
      stack_id: S.C.id,
      canary: 1,
      max_unavailable: 1,
      soak_seconds: 0,
      pause_after_canary: true,
    });
    assert.deepEqual(
      ro.skipped.map((s) => [s.host_id, s.state]),
      [[H[0].id, 'quarantined']],
      'the quarantined host is not in scope',
    );
    const paused = await f.waitRollout(ro.id, ['paused']);
    assert.equal(byName(paused)['z-02'].step, 'done');
    assert.equal((await f.host(H[1].id)).current_stack_id, S.C.id);
    f.simctl('digest', R.digestOf(S.A), 'fail');
    try {
      await f.control(ro.id, 'abort', 200);
      const done = await f.waitRollout(ro.id, ['failed']);
      const hs = byName(done);
      const z2 = hs['z-02'];
      assert.equal(z2.rollback_step, 'failed', R.brief(done));
      const rb = z2.rollback_jobs || {};
      assert.ok(rb.provision_job_id && rb.gate_job_id, `rollback_jobs ${JSON.stringify(rb)}`);
      const pj = await f.get(`/v1/jobs/${rb.provision_job_id}`);
      assert.equal(pj.state, 'succeeded', 'the host was put back on A');
      // the gate on A ran its workload and was not accepted
      const runs = await f.get(`/v1/hosts/${H[1].id}/gate-runs?limit=5`);
      const last = runs.items[0];
      assert.equal(last.stack_id, S.A.id);
      assert.equal(last.verdict, 'investigate');
      assert.equal(last.checks.find((c) => c.name === 'workload').status, 'fail');
      assert.match(done.error || '', /z-02/);
      const h2 = await f.host(H[1].id);
      assert.notEqual(h2.state, 'ready', 'never ready without an accepted gate');
      assert.equal(h2.current_stack_id, S.A.id);
      assert.deepEqual(
        done.failed_hosts.map((h) => [h.host_id, h.name, h.host_state]),
        [[H[1].id, 'z-02', h2.state]],
      );
      assert.match(done.failed_hosts[0].error || '', /gat/, JSON.stringify(done.failed_hosts));
      assert.equal(done.unavailable, 1);
      assert.equal(hs['z-03'].step, 'pending');
      assert.deepEqual(await R.touchedSince(f, [H[2].id], m.jobSeq, m.histId), { jobs: 0, hist: 0 });
      assert.equal((await f.host(H[2].id)).state, 'ready');
      assert.ok(done.finished_at);
    } finally {
      f.simctl('digest', R.digestOf(S.A), 'ok');
    }
  });
});
