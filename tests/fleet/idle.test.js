'use strict';
// Idle shutdown against the simulated GPU fleet (tests/fleet/simfleet; needs root):
// issue 6 part 5, and issue 13 item 5: idle needs positive evidence. Nine h100x8 hosts
// are provisioned and accepted by the gate, in three pools that stop with
// `poweroff --no-wall` (the simulated `poweroff` logs its argv and stops nothing) and an
// idle window of 60 s (the smallest idle_stop_after_seconds), six intervals of the server's
// health monitor, which samples every 10 s (the pools' monitor.interval_seconds, the
// smallest) over SSH; `simfleet set HOST util=N` sets what the hosts'
// nvidia-smi reports. A reporter loop in the test posts "nothing done" work reports every
// few seconds for the hosts said to report nothing, and "work done" reports for the busy
// ones, as a real exporter would.
//
//   | host   | pool                 | work reports            | GPU utilization samples    |
//   |--------|----------------------|-------------------------|----------------------------|
//   | aIdle  | auto                 | nothing done, fresh     | monitor, 1%                | → stopped
//   | aBusy  | auto                 | work done, fresh        | monitor, 1%                |
//   | aNone  | auto                 | none (no usage data)    | monitor, 1%                |
//   | aHot   | auto                 | nothing done, fresh     | monitor, 60%               |
//   | aStale | auto                 | nothing done, ended 1 h ago | monitor, 1%            |
//   | aOff   | auto, monitor off    | nothing done, fresh     | none                       |
//   | aThin  | auto, monitor off    | nothing done, fresh     | 4 stored, 10 s apart: 67%  |
//   | mIdle  | manual               | nothing done, fresh     | monitor, 1%                |
//   | mBusy  | manual               | work done, fresh        | monitor, 1%                |
//   | sIdle  | short: manual        | nothing done, fresh     | monitor, 1%, ~3 s per sample|
//
// Every window is six intervals. On sIdle each nvidia-smi call takes 1.2 s more (simfleet
// smi_delay; two calls per sample), so a sample is in flight ~30% of the time: the coverage
// must count it (issue 25: it read 83% or 100% by phase), and the host reads idle at every
// moment, except while its window lacks a sample the loaded machine made the monitor miss
// or start late (the stored samples say so; see missedSample).
// Time is given by report windows relative to now and by the monitor's own samples; the
// server's idle policy runs every second (GPUFLEET_IDLE_POLICY_INTERVAL=1). (a) the auto
// pool's idle host is stopped by system:idle-policy once its samples cover 90% of the
// window, and nothing else is, however long the others wait: unknown signals (no samples,
// thin coverage, stale reports) are listed, work (utilization, reports) is work; (b)
// examples/idle-shutdown.sh --dry-run stops nothing, then without it stops the manual
// pool's idle host; (c) the reporter role posts reports and reads nothing. Every response
// goes through the validating client.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const { startServer, psql, ROOT } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectProblem, expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');

// The smallest window and interval the API accepts (api/pools.c): six intervals. The
// suite used 180 s (18 intervals) before; the idle rule is the same at any ratio, and six
// intervals is the case where a sample in flight matters most (issue 25).
const WINDOW_S = 60;
const INTERVAL_S = 10;
const WORKER_ENV = {
  GPUFLEET_WORKERS: '2',
  GPUFLEET_MONITOR: '1',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '10',
  GPUFLEET_SSH_QUERY_TIMEOUT: '5',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
  GPUFLEET_IDLE_POLICY_INTERVAL: '1',
};
const SCRIPT = path.join(ROOT, 'examples', 'idle-shutdown.sh');
const SIMFLEET = path.join(ROOT, 'tests', 'fleet', 'simfleet');
const SHORT_S = 6 * INTERVAL_S; // the short pool's idle window: six intervals (WINDOW_S too)
const NAMES = ['aIdle', 'aBusy', 'aNone', 'aHot', 'aStale', 'aOff', 'aThin', 'mIdle', 'mBusy', 'sIdle'];
const POOL_OF = { aOff: 'off', aThin: 'off', mIdle: 'manual', mBusy: 'manual', sIdle: 'short' };
const REPORTING_NOTHING = ['aIdle', 'aHot', 'aOff', 'aThin', 'mIdle', 'sIdle'];
const REPORTING_WORK = ['aBusy', 'mBusy'];
const iso = (ms) => new Date(ms).toISOString();
const ago = (s) => iso(Date.now() - s * 1000);

let sim;
let srv;
let client;
let admin;
let operator;
let viewer;
let reporter;
let reportTimer;
const pools = {};
const H = {}; // name -> {sim, api}
const lastEnd = {}; // name -> end (ms) of its last report from the loop

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
    idle_stop_after_seconds: WINDOW_S,
    monitor: { interval_seconds: INTERVAL_S },
    gate: {
      storage_min_mbps: 1, // the gate is not under test here (and the disk is shared)
      workload: { command: ['python3', 'bench.py'], metric: 'tokens_per_second', min: 1000, timeout_s: 8 },
    },
    ...overrides,
  };
}
function simctl(...args) {
  const r = spawnSync(SIMFLEET, [...args, '--dir', sim.dir], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`simfleet ${args.join(' ')}: ${r.status}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}
const getHost = async (id) => expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
const stopEvents = async (id) =>
  expectStatus(
    await client.request('GET', `/v1/audit-events?action=host.stop&resource_id=${id}`, { token: admin }),
    200,
  ).items;
const poweroffs = (name) => sim.argv(H[name].sim.name).filter((a) => a[0] === 'poweroff');
const recs = async () => expectStatus(await client.request('GET', '/v1/recommendations', { token: viewer }), 200);
const waitIntervals = (n) => fleet.sleep(n * 1000 + 300); // the policy's 1 s, not time in the data
// What the stored samples of a host say about its last window (and an interval more), in
// the database's time: '' when the monitor sampled it every interval, else how it did not:
// a sample there more than 1.1 intervals after the one before it (that one started over a
// tenth of an interval late on the loaded machine, so the next was anchored an interval
// after it and the window holds one fewer: planner/monitor_policy.h, plan_mon_next_due;
// or one timed out), or the newest 2 intervals old; and the ages of its samples of the
// last 2 minutes, newest first, for the message.
function missedSample(hostId) {
  const [gap, age, ages] = psql(
    srv.database.url,
    `WITH s AS (SELECT DISTINCT at FROM gpu_samples WHERE host_id = '${hostId}'
                  AND at > now() - interval '10 minutes'),
          g AS (SELECT at, at - lag(at) OVER (ORDER BY at) AS d FROM s)
     SELECT coalesce(extract(epoch FROM (SELECT max(d) FROM g
                                         WHERE at > now() - make_interval(secs => ${SHORT_S + INTERVAL_S}))), 0),
            coalesce(extract(epoch FROM now() - (SELECT max(at) FROM s)), 1e9),
            (SELECT string_agg(round(extract(epoch FROM now() - at)::numeric, 1)::text, ' ' ORDER BY at DESC)
               FROM s WHERE at > now() - interval '2 minutes')`,
  ).split('|');
  const why =
    Number(gap) > 1.1 * INTERVAL_S
      ? `two samples ${Number(gap).toFixed(1)} s apart`
      : Number(age) >= 2 * INTERVAL_S
        ? `the newest sample ${Number(age).toFixed(1)} s old`
        : '';
  return { why, ages };
}

function nothingDone(name, fromMs, toMs) {
  return {
    host_id: H[name].api.id,
    window_start: iso(fromMs),
    window_end: iso(toMs),
    unit: 'tokens',
    completed: 0,
    failed: 0,
    retried: 0,
    busy_seconds: 0,
  };
}
function workDone(name, fromMs, toMs) {
  return { ...nothingDone(name, fromMs, toMs), completed: 50000, busy_seconds: (toMs - fromMs) / 2000 };
}
async function postReports(records) {
  const res = await client.request('POST', '/v1/work-reports', { token: reporter, body: { records } });
  assert.ok(res.status === 200 || res.status === 201, `POST /v1/work-reports: ${res.status} ${res.text}`);
  return res.body;
}
/** The reporter loop: "nothing done" (or "work done") since each host's last report. */
async function report() {
  const now = Date.now();
  const records = [
    ...REPORTING_NOTHING.map((n) => nothingDone(n, lastEnd[n] || now - 7200e3, now)),
    ...REPORTING_WORK.map((n) => workDone(n, lastEnd[n] || now - 600e3, now)),
  ];
  await postReports(records);
  for (const n of [...REPORTING_NOTHING, ...REPORTING_WORK]) lastEnd[n] = now;
}

/** Poll until the host is stopped by a stop job; returns {host, job}. */
async function waitStopped(id, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const host = await getHost(id);
    if (host.last_job && host.last_job.kind === 'stop') {
      const job = await fleet.waitJob(client, viewer, host.last_job.id, { timeoutMs: 30_000 });
      return { host: await getHost(id), job };
    }
    if (Date.now() > deadline)
      throw new Error(`host ${id} was not stopped within ${timeoutMs} ms (state ${host.state})`);
    await fleet.sleep(500);
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
  NAMES.forEach((n, i) => simctl('set', sim.hosts[i].name, n === 'aHot' ? 'util=60' : 'util=1'));
  srv = await startServer({ name: 'fleet-idle', env: WORKER_ENV });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  const stack = await fleet.createStack(client, operator);
  const mkPool = async (o) =>
    expectStatus(await client.request('POST', '/v1/pools', { token: admin, body: poolInput(o) }), 201);
  pools.auto = await mkPool({ auto_stop: true });
  pools.off = await mkPool({ auto_stop: true, monitor: { enabled: false, interval_seconds: INTERVAL_S } });
  pools.manual = await mkPool({});
  pools.short = await mkPool({ idle_stop_after_seconds: SHORT_S });
  assert.equal(pools.auto.auto_stop, true);
  assert.equal(pools.manual.auto_stop, false);
  assert.equal(pools.auto.idle_gpu_utilization_pct, 5);
  reporter = srv.token('reporter', {
    args: [
      '--pool',
      pools.auto.name,
      '--pool',
      pools.off.name,
      '--pool',
      pools.manual.name,
      '--pool',
      pools.short.name,
    ],
  });
  await Promise.all(
    NAMES.map(async (n, i) => {
      const s = sim.hosts[i];
      const host = await fleet.createHost(client, operator, {
        name: `idle-${n.toLowerCase()}-${fleet.uniq()}`,
        address: s.address,
        port: s.port,
        user: s.user,
        credential_id: cred.id,
        pool_id: pools[POOL_OF[n] || 'auto'].id,
      });
      H[n] = { sim: s, api: host };
      const pj = await fleet.waitJob(client, viewer, (await fleet.provision(client, operator, host.id, stack.id)).id, {
        timeoutMs: 120_000,
        intervalMs: 400,
      });
      assert.equal(pj.state, 'succeeded', `provision ${n}: ${pj.error_class} ${pj.error}`);
      const gate = expectStatus(await client.request('POST', `/v1/hosts/${host.id}/gate`, { token: operator }), 202);
      const gj = await fleet.waitJob(client, viewer, gate.id, { timeoutMs: 120_000, intervalMs: 400 });
      assert.equal(gj.state, 'succeeded', `gate ${n}: ${gj.error_class} ${gj.error}`);
      const runs = expectStatus(
        await client.request('GET', `/v1/hosts/${host.id}/gate-runs?kind=gate&limit=1`, { token: viewer }),
        200,
      );
      assert.equal(runs.items[0].verdict, 'accept', `gate ${n}: ${JSON.stringify(runs.items[0])}`);
      assert.equal((await getHost(host.id)).state, 'ready');
    }),
  );
  simctl('set', H.sIdle.sim.name, 'smi_delay=1.2'); // after its gate: its two nvidia-smi calls take 2.4 s more
  // Nothing is stopped without usage data, whatever the pool says.
  await waitIntervals(2);
  for (const n of NAMES) assert.equal((await getHost(H[n].api.id)).state, 'ready', n);
  await report();
  reportTimer = setInterval(() => report().catch(() => {}), 5000);
});

/** aThin: 4 samples 10 s apart, the newest 5 s ago, stored as the monitor would (its pool's
 * monitor is off): at most 40 s of the 60 s window (50 s with the sample "in flight" once
 * the newest is an interval old: 83%), and less as time passes. Stored when it is read
 * (the window is a minute: samples stored in before() may have left it by then, and
 * no samples at all reads no_gpu_samples, not thin coverage). */
function storeThin() {
  const calls = [];
  for (let k = 3; k >= 0; k--) {
    const gpus = [...Array(8).keys()].map((g) => ({
      uuid: `GPU-${H.aThin.api.id.slice(0, 8)}-0000-4000-8000-00000000000${g}`,
      util_gpu: 1,
    }));
    calls.push(`SELECT monitor_store('${H.aThin.api.id}', '${JSON.stringify({ at: ago(5 + 10 * k), gpus })}'::jsonb);`);
  }
  psql(srv.database.url, calls.join('\n'));
}

after(async () => {
  if (reportTimer) clearInterval(reportTimer);
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('idle shutdown', () => {
  test('(c) the reporter posts reports and reads nothing', async () => {
    const body = await postReports([nothingDone('aStale', Date.now() - 7200e3, Date.now() - 3600e3)]);
    assert.equal(body.accepted, 1);
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

  test('(a) an auto_stop pool stops its idle host as system:idle-policy, once both signals say idle', async () => {
    // The monitor needs 0.9 × 60 s of samples after the gate: a minute or more.
    const { host, job } = await waitStopped(H.aIdle.api.id, 6 * WINDOW_S * 1000);
    assert.equal(job.kind, 'stop');
    assert.equal(job.state, 'succeeded', `${job.error_class} ${job.error}`);
    assert.equal(host.state, 'stopped');
    assert.deepEqual(poweroffs('aIdle'), [['poweroff', '--no-wall']]);
    const ev = await stopEvents(H.aIdle.api.id);
    assert.equal(ev.length, 1);
    assert.equal(ev[0].principal, 'system:idle-policy');
    assert.equal(ev[0].role, 'system');
    const m = new RegExp(
      `^idle for (\\d+) s \\(pool idle_stop_after_seconds ${WINDOW_S}\\); GPU utilization at most 1% \\(under 5%\\) over ([\\d.]+)% of the window$`,
    ).exec(ev[0].reason);
    assert.ok(m, ev[0].reason);
    assert.ok(Number(m[1]) > WINDOW_S, ev[0].reason);
    assert.ok(Number(m[2]) >= 90, ev[0].reason);
    const [last, prev] = host.state_history;
    assert.deepEqual([prev.from, prev.to, last.from, last.to], ['ready', 'stopping', 'stopping', 'stopped']);
    assert.match(prev.reason, /system:idle-policy/);
  });

  test('unknown is never idle, and work is work', async () => {
    // By now aIdle's twin hosts have been sampled as long as it was.
    storeThin();
    const r = await recs();
    const byHost = Object.fromEntries(r.no_usage_data.map((x) => [x.host_id, x]));
    assert.equal(byHost[H.aNone.api.id].reason, 'no_usage_data');
    assert.equal(byHost[H.aOff.api.id].reason, 'no_gpu_samples');
    assert.equal(byHost[H.aOff.api.id].evidence.gpu_utilization.samples, 0);
    assert.equal(byHost[H.aThin.api.id].reason, 'low_sample_coverage');
    assert.ok(byHost[H.aThin.api.id].evidence.gpu_utilization.coverage_pct < 90);
    assert.equal(byHost[H.aStale.api.id].reason, 'reports_stale');
    assert.ok(byHost[H.aStale.api.id].evidence.gpu_utilization.samples > 0, 'the monitor samples it');
    for (const n of ['aHot', 'aBusy', 'mBusy']) assert.equal(byHost[H[n].api.id], undefined, `${n} works: not unknown`);
    const stopIds = r.items.filter((i) => i.action === 'stop').map((i) => i.target.host_ids[0]);
    for (const n of ['aBusy', 'aNone', 'aHot', 'aStale', 'aOff', 'aThin', 'mBusy'])
      assert.ok(!stopIds.includes(H[n].api.id), n);
    // aHot's samples show the work the reports do not.
    const hot = psql(srv.database.url, `SELECT max(util_gpu) FROM gpu_samples WHERE host_id = '${H.aHot.api.id}'`);
    assert.equal(hot, '60');

    // More passes: none of them is stopped, whatever the pool says.
    await waitIntervals(5);
    for (const n of ['aBusy', 'aNone', 'aHot', 'aStale', 'aOff', 'aThin', 'mIdle', 'mBusy']) {
      const h = await getHost(H[n].api.id);
      assert.equal(h.state, 'ready', n);
      assert.deepEqual(await stopEvents(H[n].api.id), [], n);
      assert.deepEqual(poweroffs(n), [], n);
    }
    // one stop only, however many passes ran
    assert.equal((await stopEvents(H.aIdle.api.id)).length, 1);
  });

  test('a host idle by both signals over a six-interval window is found idle whatever the phase', async () => {
    const isStop = (r) => r.items.find((i) => i.action === 'stop' && i.target.host_ids[0] === H.sIdle.api.id);
    const deadline = Date.now() + 3 * SHORT_S * 1000;
    while (!isStop(await recs())) {
      if (Date.now() > deadline) throw new Error('sIdle was never recommended for stopping');
      await fleet.sleep(1000);
    }
    // Every read over more than an interval finds it idle: ~30% of them while a sample is
    // in flight (counted 5 of 6 intervals before issue 25: low_sample_coverage). A read
    // that falls short is excused only when the stored samples show that the monitor
    // did not sample it every interval (missedSample: a sample started late or timed out
    // on the loaded machine, where failing closed is right), and the reads go on until 13
    // unexcused ones have all found it idle.
    let clean = 0;
    const excused = [];
    const readsUntil = Date.now() + 13_000 + 3 * SHORT_S * 1000;
    try {
      while (clean < 13) {
        if (Date.now() > readsUntil) throw new Error(`only ${clean} of 13 reads without a missed sample: ${excused}`);
        const r = await recs();
        const stop = isStop(r);
        if (stop) {
          assert.ok(stop.evidence.gpu_utilization.coverage_pct >= 90, JSON.stringify(stop.evidence));
          clean++;
        } else {
          const unknown = r.no_usage_data.find((x) => x.host_id === H.sIdle.api.id);
          const evidence = JSON.stringify(unknown && unknown.evidence.gpu_utilization);
          const { why, ages } = missedSample(H.sIdle.api.id);
          assert.ok(why, `read ${clean + excused.length}: not idle, and no sample missing (ages ${ages}): ${evidence}`);
          excused.push(`${why} (${evidence})`);
        }
        await fleet.sleep(1000);
      }
    } finally {
      // it works from now on: no longer recommended (test (b) counts the manual pool's
      // only, pass or fail here)
      REPORTING_NOTHING.splice(REPORTING_NOTHING.indexOf('sIdle'), 1);
      REPORTING_WORK.push('sIdle');
      await report();
    }
    if (excused.length) console.log(`# sIdle: ${excused.length} read(s) excused by a missed sample: ${excused[0]}`);
    const until = Date.now() + 30_000;
    while (isStop(await recs())) {
      if (Date.now() > until) throw new Error('sIdle is still recommended for stopping');
      await fleet.sleep(1000);
    }
  });

  test('(b) examples/idle-shutdown.sh: --dry-run stops nothing, then it stops the idle host', async () => {
    // mIdle is idle by both signals too (its monitor started with aIdle's, give or take).
    const deadline = Date.now() + 4 * WINDOW_S * 1000;
    while (!(await recs()).items.some((i) => i.action === 'stop' && i.target.host_ids[0] === H.mIdle.api.id)) {
      if (Date.now() > deadline) throw new Error('mIdle was never recommended for stopping');
      await fleet.sleep(1000);
    }
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
    const { host, job } = await waitStopped(H.mIdle.api.id, 60_000);
    assert.equal(job.state, 'succeeded', `${job.error_class} ${job.error}`);
    assert.equal(host.state, 'stopped');
    assert.deepEqual(poweroffs('mIdle'), [['poweroff', '--no-wall']]);
    const ev = await stopEvents(H.mIdle.api.id);
    assert.equal(ev.length, 1);
    assert.equal(ev[0].principal, 'test-operator');
    assert.match(
      ev[0].reason,
      new RegExp(
        `^no useful work for \\d+ s, more than the pool's idle window of ${WINDOW_S} s; GPU utilization at most 1% \\(under 5%\\) over [\\d.]+% of the window; no running job$`,
      ),
    );
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
