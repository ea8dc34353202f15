'use strict';
// The health monitor with several worker processes on one database (issue 13; needs root):
// each host is sampled by exactly one worker at a time, the hosts are spread evenly and
// rebalanced when a worker joins, and a worker killed with SIGKILL has its hosts taken
// over. Three `gpufleetd serve` processes with one worker thread each share the database
// (the second and third are extra replicas: same secrets, no migration). Six h100x8 hosts,
// sampled every 10 s.
//
// Checked from what the workers stored: no host has two samples less than an interval
// apart (the writes are fenced by the lease, so a sample is stored only by the host's
// owner), and no host goes more than two intervals without one, across the join and the
// kill. Then a second kill: the worker taking a host over starts from the host's stored
// uncorrectable ECC counts, so growth across the takeover isolates and the takeover alone
// does not.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const { startServer, psql } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');

const INTERVAL_S = 10;
const COUNT = 6;
const WORKER_ENV = {
  GPUFLEET_WORKERS: '1',
  GPUFLEET_MONITOR: '1',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '10',
  GPUFLEET_SSH_QUERY_TIMEOUT: '5',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
};

let sim, a, b, c, client, admin, operator, viewer;
const ids = [];
const sql = (q) => psql(a.database.url, q);
const inIds = () => ids.map((id) => `'${id}'`).join(',');
const simOf = {}; // host id -> its simfleet host
const SIMFLEET = path.join(__dirname, 'simfleet');

function simctl(...args) {
  const r = spawnSync(SIMFLEET, [...args, '--dir', sim.dir], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`simfleet ${args.join(' ')}: ${r.status}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}
const getHost = async (id) => expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);

/** Owners of the hosts now: {owner: count}. */
function owners() {
  const out = {};
  // a host is its owner's while the owner's lease (monitor_workers) lasts
  for (const line of sql(`SELECT m.owner, count(*) FROM host_monitor m JOIN monitor_workers w ON w.owner = m.owner
                            WHERE m.host_id IN (${inIds()}) AND w.lease_until > now() GROUP BY m.owner`).split('\n')) {
    if (!line) continue;
    const [o, n] = line.split('|');
    out[o] = Number(n);
  }
  return out;
}

async function waitOwners(pred, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const o = owners();
    if (pred(o)) return o;
    if (Date.now() > deadline) throw new Error(`${what}: owners ${JSON.stringify(o)}`);
    await fleet.sleep(500);
  }
}

/** Gaps between a host's consecutive stored samples since `since` (ISO), in seconds. */
function gaps(since) {
  return sql(`SELECT host_id, extract(epoch FROM at - lag(at) OVER (PARTITION BY host_id ORDER BY at))
                FROM (SELECT DISTINCT host_id, at FROM gpu_samples
                       WHERE host_id IN (${inIds()}) AND at >= '${since}') d`)
    .split('\n')
    .map((l) => l.split('|'))
    .filter(([, g]) => g !== '' && g !== undefined)
    .map(([h, g]) => ({ host: h, gap: Number(g) }));
}

before(async () => {
  sim = fleet.simfleet.up({
    count: COUNT,
    profile: 'h100x8',
    net: 224,
    user: 'gpufleet-mtake',
    delay: 0,
    dir: fs.mkdtempSync('/tmp/gft-takeover-fleet-'),
  });
  a = await startServer({ name: 'fleet-takeover-a', env: WORKER_ENV });
  b = await startServer({
    name: 'fleet-takeover-b',
    databaseUrl: a.database.url,
    secrets: a.secrets,
    migrate: false,
    env: WORKER_ENV,
  });
  client = api(a);
  admin = a.token('admin');
  operator = a.token('operator');
  viewer = a.token('viewer');
  const cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  const stack = await fleet.createStack(client, operator);
  const pool = await fleet.createSimPool(client, admin, sim, 'takeover', {
    gate: {
      storage_min_mbps: 1,
      workload: { command: ['python3', 'bench.py'], metric: 'tokens_per_second', min: 1000, timeout_s: 8 },
    },
    monitor: { interval_seconds: INTERVAL_S },
  });
  await Promise.all(
    sim.hosts.map(async (s) => {
      const host = await fleet.createHost(
        client,
        operator,
        fleet.simHostBody(s, { name: `take-${s.name}-${fleet.uniq()}`, credential_id: cred.id, pool_id: pool.id }),
      );
      ids.push(host.id);
      simOf[host.id] = s;
      const pj = await fleet.waitJob(client, viewer, (await fleet.provision(client, operator, host.id, stack.id)).id, {
        timeoutMs: 90_000,
        intervalMs: 400,
      });
      assert.equal(pj.state, 'succeeded', `provision: ${pj.error_class} ${pj.error}`);
      const gate = expectStatus(await client.request('POST', `/v1/hosts/${host.id}/gate`, { token: operator }), 202);
      const gj = await fleet.waitJob(client, viewer, gate.id, { timeoutMs: 90_000, intervalMs: 400 });
      assert.equal(gj.state, 'succeeded', `gate: ${gj.error_class} ${gj.error}`);
    }),
  );
});

after(async () => {
  for (const s of [c, b]) if (s) await s.stop({ dropDatabase: false });
  if (a) await a.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('monitor ownership across worker processes', () => {
  test('two workers split the hosts, a third joins, one is killed: every host sampled by one owner, never twice in an interval, never three intervals late', async () => {
    const since = new Date().toISOString();
    let o = await waitOwners(
      (x) => Object.keys(x).length === 2 && Object.values(x).every((n) => n === 3),
      30_000,
      'two workers, three hosts each',
    );
    // a third worker joins: shares of two
    c = await startServer({
      name: 'fleet-takeover-c',
      databaseUrl: a.database.url,
      secrets: a.secrets,
      migrate: false,
      env: WORKER_ENV,
    });
    o = await waitOwners(
      (x) => Object.keys(x).length === 3 && Object.values(x).every((n) => n === 2),
      40_000,
      'three workers, two hosts each',
    );
    // kill -9 the second: its hosts go to the others within the lease
    const killedOwnerPrefix = `worker:`;
    b.process.kill('SIGKILL');
    await fleet.sleep(500);
    const killedAt = Date.now();
    o = await waitOwners(
      (x) => Object.keys(x).length === 2 && Object.values(x).reduce((s, n) => s + n, 0) === COUNT,
      30_000,
      "the killed worker's hosts taken over",
    );
    assert.ok(Date.now() - killedAt <= 2 * INTERVAL_S * 1000, `taken over in ${Date.now() - killedAt} ms`);
    assert.ok(Object.keys(o).every((k) => k.startsWith(killedOwnerPrefix)));
    // two and a half more intervals of sampling, then judge the gaps
    await fleet.sleep(INTERVAL_S * 2500);
    const g = gaps(since);
    const hostsSeen = new Set(g.map((x) => x.host));
    assert.equal(hostsSeen.size, COUNT, `every host sampled again after the kill: ${g.length} gaps`);
    const tight = g.filter((x) => x.gap < INTERVAL_S * 0.8);
    assert.deepEqual(tight, [], 'no host sampled twice within one interval');
    const late = g.filter((x) => x.gap > 2 * INTERVAL_S + 1);
    assert.deepEqual(late, [], 'no host unsampled for more than two intervals');
    // and the samples did go on: at least two gaps per host over the run (~5 intervals)
    assert.ok(g.length >= COUNT * 2, `samples since the start: ${g.length} gaps`);
  });

  test('a host taken over keeps its ECC baseline: growth across the takeover isolates, the takeover alone does not', async () => {
    // the two workers left (a and c) hold three hosts each; c's are the ones taken over
    await waitOwners(
      (x) => Object.keys(x).length === 2 && Object.values(x).every((n) => n === 3),
      30_000,
      'two workers, three hosts each',
    );
    const cOwner = sql(`SELECT DISTINCT owner FROM host_monitor WHERE owner LIKE 'worker:%:${c.process.pid}:%'`);
    assert.match(cOwner, /^worker:/, 'the third worker owns hosts');
    const taken = sql(
      `SELECT host_id FROM host_monitor WHERE owner = '${cOwner}' AND host_id IN (${inIds()}) ORDER BY host_id`,
    ).split('\n');
    assert.equal(taken.length, 3, `c's hosts: ${taken}`);
    const [grown, ...steady] = taken;
    // what c stored: every GPU read with 0 uncorrectable errors
    for (const id of taken) {
      assert.equal(
        sql(
          `SELECT count(*) FILTER (WHERE ecc_uncorrected_volatile = 0) || '/' || count(*) FROM gpus WHERE host_id = '${id}'`,
        ),
        '8/8',
        `${id}: 8 GPUs stored with 0`,
      );
    }
    const since = sql('SELECT now()');
    c.process.kill('SIGKILL'); // stopped again (a no-op) in after()
    // while no one samples it, the count of one GPU of one host grows
    simctl('set', simOf[grown].name, 'ecc_uncorrected.3=2');
    // the lease lapses (3 claim periods), then a takes the hosts over and samples them
    const deadline = Date.now() + 6 * INTERVAL_S * 1000;
    let host;
    for (;;) {
      host = await getHost(grown);
      if (host.state === 'quarantined' || Date.now() > deadline) break;
      await fleet.sleep(500);
    }
    assert.equal(host.state, 'quarantined', 'growth across the takeover isolates');
    assert.match(host.quarantine.reason, /uncorrectable ECC errors on GPU \S+ grew from 0 to 2/);
    // the others were sampled by their new owner and stay ready, without an ECC event
    const aOwner = sql(`SELECT owner FROM host_monitor WHERE host_id = '${grown}'`);
    assert.notEqual(aOwner, cOwner);
    for (const id of steady) {
      // each is sampled one interval after its last sample: maybe after the grown one
      const sampled = () => sql(`SELECT count(*) FROM gpu_samples WHERE host_id = '${id}' AND at > '${since}'`);
      let n = sampled();
      while (Number(n) < 8 && Date.now() <= deadline) {
        await fleet.sleep(500);
        n = sampled();
      }
      assert.ok(Number(n) >= 8, `${id}: sampled after the takeover (${n} GPU rows)`);
      assert.equal((await getHost(id)).state, 'ready', `${id}: the takeover alone does not isolate`);
      assert.equal(sql(`SELECT count(*) FROM gpu_events WHERE host_id = '${id}' AND kind = 'ecc'`), '0');
    }
  });
});
