'use strict';
// The monitor's group commit against simulated hosts (issue 28, item 1; needs root). Four
// h100x8 hosts go to ready together (host_transition events in SQL, as bench/monitor
// does), so that their samples fall due together and are committed in the same groups
// (a 4 s window). One host then reports a GPU at 300 C: its parser takes it (up to
// 1000 C), monitor_store refuses it (-100..250), so every group holding its sample fails.
// The group's samples are then stored one by one: the others' samples go on being
// stored, the bad one is logged and not stored. Without that fallback a failed group
// would drop the samples of every host in it.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const { startServer, psql, ROOT } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const fleet = require('../api/lib/fleet');
const { expectStatus } = require('../api/lib/assert');

const INTERVAL_S = 10;
const SIMFLEET = path.join(ROOT, 'tests', 'fleet', 'simfleet');
const N = 4;

let sim, srv, client, admin, pool;
const ids = [];

const sql = (q) => psql(srv.database.url, q);
function simctl(...args) {
  const r = spawnSync(SIMFLEET, [...args, '--dir', sim.dir], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`simfleet ${args.join(' ')}: ${r.status}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}
const rows = (id) => Number(sql(`SELECT count(*) FROM gpu_samples WHERE host_id = '${id}'`));

before(async () => {
  sim = fleet.simfleet.up({
    count: N,
    profile: 'h100x8',
    net: 217,
    user: 'gpufleet-mgtest',
    delay: 0,
    dir: fs.mkdtempSync('/tmp/gft-monitor-group-'),
  });
  srv = await startServer({
    name: 'fleet-monitor-group',
    env: {
      GPUFLEET_WORKERS: '1',
      GPUFLEET_MONITOR: '1',
      GPUFLEET_MONITOR_GROUP_MAX: '64',
      GPUFLEET_MONITOR_GROUP_MS: '4000',
      GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
      GPUFLEET_SSH_QUERY_TIMEOUT: '5',
      GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
    },
  });
  client = api(srv);
  admin = srv.token('admin');
  const cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  pool = await fleet.createSimPool(client, admin, sim, 'mgroup', {
    interconnect: 'nvlink',
    monitor: { interval_seconds: INTERVAL_S },
  });
  for (const s of sim.hosts) {
    const host = await fleet.createHost(
      client,
      srv.token('operator'),
      fleet.simHostBody(s, { name: `mgroup-${fleet.uniq()}`, credential_id: cred.id, pool_id: pool.id }),
    );
    ids.push(host.id);
  }
  // to ready through the state machine, all at once (bench/monitor's release)
  const list = ids.map((id) => `'${id}'`).join(',');
  for (const [ev, to] of [
    ['drain', 'draining'],
    ['drained_when_idle', 'drained'],
    ['resume', 'ready'],
  ]) {
    sql(`SELECT count(host_transition(id, '${ev}', '${to}', 'test', NULL, 'monitor-group', NULL))
           FROM hosts WHERE id IN (${list})`);
  }
});

after(async () => {
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

test("a group holding a sample PostgreSQL refuses still stores the others' samples", async () => {
  // every host sampled and stored through groups first
  const deadline = Date.now() + 60_000;
  while (Number(sql(`SELECT count(*) FROM host_monitor WHERE last_sample_at IS NOT NULL`)) < N) {
    assert.ok(Date.now() < deadline, 'not every host had a sample stored within 60 s');
    await fleet.sleep(500);
  }
  const [bad, ...good] = ids;
  // the refusals logged for the bad host (its samples are taken one after another)
  const refused = () =>
    fs.readFileSync(srv.logPath, 'utf8').split(`host ${bad}: the sample could not be stored`).length - 1;
  simctl('set', sim.hosts[0].name, 'temp.0=300');
  // a sample already taken before the change may still be stored: start counting after
  // the first refused one (it was a fixed INTERVAL_S + 5 s; polled, with a generous deadline)
  let deadline2 = Date.now() + 6 * INTERVAL_S * 1000;
  while (refused() < 1 && Date.now() < deadline2) await fleet.sleep(500);
  const before = ids.map(rows);
  const r0 = refused();
  // two more samples of every host (a fixed 2 × INTERVAL_S + 5 s before): the bad host's
  // two refused, the others' stored; the assertions below say which did not happen
  deadline2 = Date.now() + 6 * INTERVAL_S * 1000;
  while ((refused() < r0 + 2 || good.some((id, i) => rows(id) - before[i + 1] < 2 * 8)) && Date.now() < deadline2)
    await fleet.sleep(1000);
  const after = ids.map(rows);
  assert.ok(refused() >= r0 + 2, `the bad host's samples refused since the count started: ${refused() - r0}`);
  assert.equal(after[0], before[0], "the refused host's samples are not stored");
  for (let i = 1; i < N; i++) {
    assert.ok(after[i] - before[i] >= 2 * 8, `host ${i}: ${after[i] - before[i]} GPU rows stored, want >= 16`);
  }
  assert.equal(Number(sql(`SELECT count(*) FROM hosts WHERE id IN ('${good.join("','")}') AND state = 'ready'`)), 3);
  const log = fs.readFileSync(srv.logPath, 'utf8');
  assert.match(log, /a group of \d+ samples could not be stored together/, 'no group held the refused sample');
  assert.match(log, new RegExp(`host ${bad}: the sample could not be stored`));
});

// The claim (db/monitor_lease.c, every 2 s) reads the pools' settings once per pool
// (DB_MON_POOLS): a change of a pool's monitor settings must still reach each host's
// configuration fingerprint, and a pool whose monitor is turned off must give its hosts
// up, and take them back once it is on again.
test("a change of the pool's monitor settings is read again; turned off, its hosts are given up; on again, taken back", async () => {
  const list = `'${ids.join("','")}'`;
  const putMonitor = async (monitor) => {
    const res = await client.request('GET', `/v1/pools/${pool.id}`, { token: admin });
    const body = { ...expectStatus(res, 200) };
    for (const k of ['id', 'revision', 'gate_version', 'created_at', 'updated_at', 'created_by']) delete body[k];
    body.monitor = monitor;
    const put = await client.request('PUT', `/v1/pools/${pool.id}`, {
      token: admin,
      body,
      headers: { 'If-Match': res.headers.get('etag') },
    });
    expectStatus(put, 200);
  };
  const until = async (q, want, what, ms = 30_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = sql(q);
      if (v === want) return;
      assert.ok(Date.now() < deadline, `${what}: ${v}, want ${want}, after ${ms} ms`);
      await fleet.sleep(500);
    }
  };
  await until(
    `SELECT count(*) FROM host_monitor WHERE host_id IN (${list}) AND owner IS NOT NULL
                 AND seen_config IS NOT NULL`,
    String(N),
    'hosts owned and read',
  );
  const seen = sql(`SELECT string_agg(seen_config, ',' ORDER BY host_id) FROM host_monitor WHERE host_id IN (${list})`);
  // another interval: every host's fingerprint changes (the claim read the pool again)
  await putMonitor({ interval_seconds: INTERVAL_S + 1 });
  await until(
    `SELECT count(*) FROM host_monitor m WHERE host_id IN (${list}) AND owner IS NOT NULL
       AND seen_config IS NOT NULL AND position(seen_config IN '${seen}') = 0`,
    String(N),
    "hosts whose configuration was read again after the pool's change",
  );
  // off: every host given up, and no sample stored from then on
  await putMonitor({ interval_seconds: INTERVAL_S, enabled: false });
  await until(
    `SELECT count(*) FROM host_monitor WHERE host_id IN (${list}) AND owner IS NOT NULL`,
    '0',
    'hosts still owned',
  );
  const stored = sql(`SELECT count(*) FROM gpu_samples WHERE host_id IN (${list})`);
  await fleet.sleep((INTERVAL_S + 2) * 1000);
  assert.equal(
    sql(`SELECT count(*) FROM gpu_samples WHERE host_id IN (${list})`),
    stored,
    'a sample stored while the monitor was off',
  );
  // on again: taken back, and sampled (the first test's refused host excepted: its
  // samples are still refused)
  const t0 = sql('SELECT now()');
  await putMonitor({ interval_seconds: INTERVAL_S, enabled: true });
  await until(
    `SELECT count(*) FROM host_monitor WHERE host_id IN (${list}) AND owner IS NOT NULL`,
    String(N),
    'hosts taken back',
  );
  await until(
    `SELECT count(*) FROM host_monitor WHERE host_id IN ('${ids.slice(1).join("','")}') AND last_sample_at > '${t0}'`,
    String(N - 1),
    'hosts sampled again once the monitor is on',
    6 * INTERVAL_S * 1000,
  );
});
