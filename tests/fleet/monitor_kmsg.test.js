'use strict';
// The kernel log without loss under a flood (issue 25; needs root). Three h100x8 hosts are
// provisioned and accepted into a pool sampled every 10 s; two have journald, one only
// dmesg (profile no_journald). A tenant's segfault storm (`simfleet flood`: 200,000
// kernel records that are not GPU news) hides one Xid 79 in its middle: before issue 25
// the monitor read `journalctl … | tail -c 3000` and moved its cursor to the newest entry,
// so the Xid was cut off the front and never seen. Now the host filters the lines that
// matter and the monitor reads forward in pages of GPUFLEET_MONITOR_KMSG_PAGE entries
// (100,000 here, the default) from the cursor of the last entry read: the Xid isolates
// within two intervals. A host further behind than GPUFLEET_MONITOR_KMSG_BACKLOG after a
// page (300,000 journal sequence numbers here) is skipped to its newest entry with a
// kernel_log_gap event that says how many entries went unread.

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
const SIMFLEET = path.join(ROOT, 'tests', 'fleet', 'simfleet');
const WORKER_ENV = {
  GPUFLEET_WORKERS: '2',
  GPUFLEET_MONITOR: '1',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '10',
  GPUFLEET_SSH_QUERY_TIMEOUT: '10',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
  GPUFLEET_MONITOR_KMSG_PAGE: '100000',
  GPUFLEET_MONITOR_KMSG_BACKLOG: '300000',
};
const NAMES = ['flood', 'dmflood', 'gap'];
const PROFILE = { flood: 'h100x8', dmflood: 'no_journald', gap: 'h100x8' };

let sim, srv, client, admin, operator, viewer;
const H = {}; // name -> {sim, api}

function simctl(...args) {
  const r = spawnSync(SIMFLEET, [...args, '--dir', sim.dir], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`simfleet ${args.join(' ')}: ${r.status}\n${r.stdout}${r.stderr}`);
  return r.stdout.trim();
}
const sql = (q) => psql(srv.database.url, q);
const getHost = async (id) => expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
const events = (name) =>
  sql(`SELECT kind || ':' || coalesce(code::text, '') || ':' || policy FROM gpu_events
        WHERE host_id = '${H[name].api.id}' ORDER BY id`);

async function waitState(name, states, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const host = await getHost(H[name].api.id);
    if (states.includes(host.state)) return host;
    if (Date.now() > deadline) throw new Error(`${name} is ${host.state}, not ${states} after ${timeoutMs} ms`);
    await fleet.sleep(250);
  }
}
async function waitSql(q, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = sql(q);
    if (v !== '') return v;
    if (Date.now() > deadline) throw new Error(`${what}: nothing after ${timeoutMs} ms`);
    await fleet.sleep(250);
  }
}

before(async () => {
  sim = fleet.simfleet.up({
    count: NAMES.length,
    profile: NAMES.map((n) => PROFILE[n]).join(','),
    net: 231,
    user: 'gpufleet-kmsg',
    delay: 0,
    dir: fs.mkdtempSync('/tmp/gft-kmsg-fleet-'),
  });
  srv = await startServer({ name: 'fleet-kmsg', env: WORKER_ENV });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  const stack = await fleet.createStack(client, operator);
  const pool = expectStatus(
    await client.request('POST', '/v1/pools', {
      token: admin,
      body: {
        name: `kmsg-${fleet.uniq()}`,
        gpu_model: 'h100_sxm',
        gpu_count: 8,
        interconnect: 'nvlink',
        price_per_hour: 10,
        durable_path: sim.env.SIMFLEET_DURABLE_PATH,
        scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
        gate: {
          storage_min_mbps: 1,
          workload: { command: ['python3', 'bench.py'], metric: 'tokens_per_second', min: 1000, timeout_s: 8 },
        },
        monitor: { interval_seconds: INTERVAL_S, unreachable_after: 2 },
      },
    }),
    201,
  );
  await Promise.all(
    NAMES.map(async (n, i) => {
      const s = sim.hosts[i];
      assert.equal(s.profile, PROFILE[n]);
      const host = await fleet.createHost(client, operator, {
        name: `kmsg-${n}-${fleet.uniq()}`,
        address: s.address,
        port: s.port,
        user: s.user,
        credential_id: cred.id,
        pool_id: pool.id,
        host_key_sha256: s.host_key_sha256,
      });
      H[n] = { sim: s, api: host };
      const pj = await fleet.waitJob(client, viewer, (await fleet.provision(client, operator, host.id, stack.id)).id, {
        timeoutMs: 90_000,
        intervalMs: 400,
      });
      assert.equal(pj.state, 'succeeded', `provision ${n}: ${pj.error_class} ${pj.error}`);
      const gate = expectStatus(await client.request('POST', `/v1/hosts/${host.id}/gate`, { token: operator }), 202);
      const gj = await fleet.waitJob(client, viewer, gate.id, { timeoutMs: 90_000, intervalMs: 400 });
      assert.equal(gj.state, 'succeeded', `gate ${n}: ${gj.error_class} ${gj.error}`);
      assert.equal((await getHost(host.id)).state, 'ready', n);
    }),
  );
  // every host sampled once: the journald hosts have a cursor, the dmesg host a mark
  const ids = NAMES.map((n) => `'${H[n].api.id}'`).join(',');
  await waitSql(
    `SELECT 1 WHERE (SELECT count(DISTINCT host_id) FROM gpu_samples WHERE host_id IN (${ids})) = ${NAMES.length}`,
    4 * INTERVAL_S * 1000,
    'a sample of every host',
  );
});

after(async () => {
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('kernel log under a flood', () => {
  test('an Xid 79 in the middle of 200,000 unrelated lines isolates within two intervals (journald, dmesg)', async () => {
    // Each host's clock starts when its flood is written (one append each; making 200,000
    // lines is the harness's time, not the monitor's: on a loaded machine it took seconds).
    const last = simctl('flood', H.flood.sim.name, '200000', '--xid79');
    const t0 = { flood: Date.now() };
    simctl('flood', H.dmflood.sim.name, '200000', '--xid79');
    t0.dmflood = Date.now();
    const limit = 2 * INTERVAL_S * 1000 + 5000;
    const took = {};
    const isolated = (n) =>
      waitState(n, ['quarantined'], limit).then((h) => {
        took[n] = Date.now() - t0[n];
        return h;
      });
    const [a, b] = await Promise.all([isolated('flood'), isolated('dmflood')]);
    for (const n of ['flood', 'dmflood']) assert.ok(took[n] <= limit + 2000, `${n} isolated after ${took[n]} ms`);
    for (const h of [a, b]) assert.match(h.quarantine.reason, /Xid 79/);
    // the flood cost nothing: the Xid is the only event, nothing was skipped
    for (const n of ['flood', 'dmflood']) assert.match(events(n), /^xid:79:isolate$/, n);
    // the journald host reads on to the end of the flood: its cursor becomes the last record's
    assert.match(last, /^s=[0-9a-f]{32};i=[0-9a-f]+;/);
    await waitSql(
      `SELECT 1 FROM host_monitor WHERE host_id = '${H.flood.api.id}' AND kmsg_cursor = '${last}'`,
      3 * INTERVAL_S * 1000,
      'the cursor of the last record of the flood',
    );
  });

  test('a host further behind than the backlog is skipped to its newest entry, with a kernel_log_gap event', async () => {
    const before = sql(`SELECT kmsg_cursor FROM host_monitor WHERE host_id = '${H.gap.api.id}'`);
    const seq0 = parseInt(/;i=([0-9a-f]+)/.exec(before)[1], 16);
    const last = simctl('flood', H.gap.sim.name, '400000');
    const seq1 = parseInt(/;i=([0-9a-f]+)/.exec(last)[1], 16);
    const msg = await waitSql(
      `SELECT message FROM gpu_events WHERE host_id = '${H.gap.api.id}' AND kind = 'kernel_log_gap'`,
      3 * INTERVAL_S * 1000,
      'a kernel_log_gap event',
    );
    const m = /^(\d+) kernel log entries skipped unread \(journal sequence numbers\): after reading 100000 /.exec(msg);
    assert.ok(m, msg);
    const skipped = Number(m[1]);
    // 300,000 records were left after the first page; journal sequence numbers count more
    assert.ok(skipped >= 300000 && skipped < seq1 - seq0, `${skipped} of ${seq1 - seq0}`);
    assert.match(events('gap'), /^kernel_log_gap::record$/m);
    assert.equal((await getHost(H.gap.api.id)).state, 'ready', 'a gap records, it does not isolate');
    // the API lists it (GpuEventKind)
    const api = expectStatus(await client.request('GET', `/v1/hosts/${H.gap.api.id}/health`, { token: viewer }), 200);
    assert.ok(JSON.stringify(api).includes('kernel_log_gap'), JSON.stringify(api).slice(0, 2000));
    // reading goes on from the newest entry: an Xid after the flood isolates
    await waitSql(
      `SELECT 1 FROM host_monitor WHERE host_id = '${H.gap.api.id}' AND kmsg_cursor = '${last}'`,
      2 * INTERVAL_S * 1000,
      'the cursor skipped to the newest entry',
    );
    simctl('xid', H.gap.sim.name, '79');
    const host = await waitState('gap', ['quarantined'], 2 * INTERVAL_S * 1000 + 5000);
    assert.match(host.quarantine.reason, /Xid 79/);
  });
});
