'use strict';
// The monitor's group commit (issue 28, item 1): monitor_store_fenced (migrations/0037)
// stores the samples of many hosts in one statement, each fenced by its own lease. A
// sample of a host whose lease is another worker's, or whose worker's lease lapsed, is not
// stored and changes nothing, while the others of the group are; an invalid document
// fails the whole call (nothing kept: the monitor then stores each sample alone,
// provisioner/monitor/monitor_group.c). Called through psql as the monitor's writer
// calls it, with GPUFLEET_WORKERS=0 so that no monitor runs beside the test.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const fleet = require('./lib/fleet');

let srv;
let hosts; // A, B, C, D: created in this order

function sql(text) {
  const r = spawnSync(
    'psql',
    ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-v', 'VERBOSITY=verbose', '-d', srv.database.url],
    { encoding: 'utf8', input: text, timeout: 60_000 },
  );
  return { ok: r.status === 0, out: (r.stdout || '').trim(), err: (r.stderr || '') + (r.error ? String(r.error) : '') };
}

const gpu = (host, i) => ({
  uuid: `GPU-${host.slice(0, 8)}-0000-4000-8000-00000000000${i}`,
  pci_bus_id: `00000000:1${i}:00.0`,
  index: i,
  name: 'NVIDIA H100 80GB HBM3',
  util_gpu: 10 + i,
  mem_total_mib: 81_559,
});
const doc = (host, at, extra = {}) => ({
  at: new Date(at).toISOString(),
  gpus: [gpu(host, 0), gpu(host, 1)],
  events: [],
  ...extra,
});
const lit = (x) => `$doc$${JSON.stringify(x)}$doc$`;

// monitor_store_fenced(owner, hosts, docs) -> [{i, fenced, state}] in o_i order
function group(owner, ids, docs) {
  const r = sql(
    `SELECT o_i || '|' || o_fenced || '|' || coalesce(o_state, '') || '|' || (o_result IS NOT NULL)
       FROM monitor_store_fenced('${owner}', ARRAY[${ids.map((id) => `'${id}'`).join(',')}]::uuid[],
                                 ${lit(docs)}::jsonb) ORDER BY o_i`,
  );
  assert.ok(r.ok, `monitor_store_fenced failed: ${r.err}`);
  return r.out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [i, fenced, state, result] = line.split('|');
      return { i: Number(i), fenced: fenced === 'true', state, result: result === 'true' };
    });
}
const samples = (id) => Number(psql(srv.database.url, `SELECT count(*) FROM gpu_samples WHERE host_id = '${id}'`));
const lastAt = (id) =>
  psql(srv.database.url, `SELECT coalesce(last_sample_at::text, '') FROM host_monitor WHERE host_id = '${id}'`);
const gpus = (id) => Number(psql(srv.database.url, `SELECT count(*) FROM gpus WHERE host_id = '${id}'`));

before(async () => {
  srv = await startServer({
    name: 'monitor_group',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  const client = api(srv);
  const admin = srv.token('admin');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  const pool = await fleet.createPool(client, admin, { gpu_model: 'h100_sxm', gpu_count: 8 });
  hosts = [];
  for (let i = 0; i < 4; i++) {
    const h = await fleet.createHost(client, srv.token('operator'), {
      name: `mgroup-${process.pid}-${i}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
    hosts.push(h.id);
  }
  const [a, b, c, d] = hosts;
  // w-live holds A and C, w-other holds B (both live); w-lapsed holds D, its lease is over
  psql(
    srv.database.url,
    `INSERT INTO monitor_workers (owner, lease_until) VALUES
       ('w-live', now() + interval '1 hour'), ('w-other', now() + interval '1 hour'),
       ('w-lapsed', now() - interval '1 second');
     INSERT INTO host_monitor (host_id, owner) VALUES
       ('${a}', 'w-live'), ('${b}', 'w-other'), ('${c}', 'w-live'), ('${d}', 'w-lapsed')`,
  );
});

after(async () => {
  if (srv) await srv.stop();
});

describe('monitor_store_fenced', () => {
  test('a fenced-out sample in a group is not stored; the others of the group are', () => {
    const [a, b, c] = hosts;
    const at = Date.now() - 60_000;
    // C before A: the answer is by position, whatever order the rows are locked in
    const out = group('w-live', [c, b, a], [doc(c, at), doc(b, at), doc(a, at)]);
    assert.deepEqual(
      out.map((o) => [o.i, o.fenced, o.result]),
      [
        [1, false, true],
        [2, true, false],
        [3, false, true],
      ],
    );
    assert.equal(out[0].state, 'registered', 'the host state comes back with a stored sample');
    assert.equal(out[1].state, '', 'nothing is read for a fenced-out sample');
    assert.equal(samples(a), 2);
    assert.equal(samples(c), 2);
    assert.equal(samples(b), 0, "B's lease is w-other's: its sample is not stored");
    assert.equal(gpus(b), 0);
    assert.equal(lastAt(b), '', "B's monitor row is untouched");
    assert.notEqual(lastAt(a), '');
  });

  test('a worker whose lease lapsed stores nothing, even for hosts it still names', () => {
    const d = hosts[3];
    const out = group('w-lapsed', [d], [doc(d, Date.now() - 30_000)]);
    assert.deepEqual(
      out.map((o) => o.fenced),
      [true],
    );
    assert.equal(samples(d), 0);
    assert.equal(lastAt(d), '');
  });

  test("a host taken over by another worker is fenced out of the old owner's next group", () => {
    const [a, , c] = hosts;
    psql(srv.database.url, `UPDATE host_monitor SET owner = 'w-other' WHERE host_id = '${c}'`);
    try {
      const at = Date.now() - 20_000;
      const out = group('w-live', [a, c], [doc(a, at), doc(c, at)]);
      assert.deepEqual(
        out.map((o) => o.fenced),
        [false, true],
      );
      assert.equal(samples(a), 4);
      assert.equal(samples(c), 2, "C's sample from its old owner is not stored");
    } finally {
      psql(srv.database.url, `UPDATE host_monitor SET owner = 'w-live' WHERE host_id = '${c}'`);
    }
  });

  test('an invalid document fails the whole call and keeps nothing of the group', () => {
    const [a, , c] = hosts;
    const before = [samples(a), samples(c)];
    const at = Date.now() - 10_000;
    const r = sql(
      `SELECT count(*) FROM monitor_store_fenced('w-live', ARRAY['${a}', '${c}']::uuid[],
         ${lit([doc(a, at), doc(c, at, { at: 'not a time' })])}::jsonb)`,
    );
    assert.ok(!r.ok, 'an invalid document in a group was accepted');
    assert.match(r.err, /ERROR:\s+22023:/);
    assert.deepEqual([samples(a), samples(c)], before, "A's valid sample is not kept either");
  });

  test('as many documents as hosts, or nothing', () => {
    const [a, , c] = hosts;
    const r = sql(
      `SELECT count(*) FROM monitor_store_fenced('w-live', ARRAY['${a}', '${c}']::uuid[],
         ${lit([doc(a, Date.now())])}::jsonb)`,
    );
    assert.ok(!r.ok);
    assert.match(r.err, /ERROR:\s+22023:/);
  });
});
