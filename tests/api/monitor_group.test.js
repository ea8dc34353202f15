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
let hosts; // A, B, C, D, E: created in this order

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
  for (let i = 0; i < 5; i++) {
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
  const [a, b, c, d, e] = hosts;
  // w-live holds A, C and E, w-other holds B (both live); w-lapsed holds D, its lease is over
  psql(
    srv.database.url,
    `INSERT INTO monitor_workers (owner, lease_until) VALUES
       ('w-live', now() + interval '1 hour'), ('w-other', now() + interval '1 hour'),
       ('w-lapsed', now() - interval '1 second');
     INSERT INTO host_monitor (host_id, owner) VALUES
       ('${a}', 'w-live'), ('${b}', 'w-other'), ('${c}', 'w-live'), ('${d}', 'w-lapsed'),
       ('${e}', 'w-live')`,
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

// Migration 0044: a plain sample (no event, the host's GPUs unchanged) is stored set-wise
// with its host's health; any other goes through monitor_store. Each case runs twice from
// the same rows, each in a transaction rolled back: once through monitor_store_fenced with
// monitor_store renamed away (so the call fails if the group used it), once through
// monitor_store alone with the deferred health re-evaluation; the answers and every row
// written (host_monitor, gpus, gpu_samples, gpu_events, events) must be the same.
describe('plain samples stored set-wise (migration 0044)', () => {
  const E = () => hosts[4];
  const rows = (h) => `SELECT jsonb_build_object(
      'monitor', (SELECT to_jsonb(m) - 'updated_at' - 'health_changed_at'
                         || jsonb_build_object('changed_now', m.health_changed_at = now())
                    FROM host_monitor m WHERE m.host_id = '${h}'),
      'gpus', (SELECT jsonb_agg(to_jsonb(g) ORDER BY g.uuid) FROM gpus g WHERE g.host_id = '${h}'),
      'samples', (SELECT jsonb_agg(to_jsonb(s) ORDER BY s.at, s.gpu_uuid) FROM gpu_samples s
                   WHERE s.host_id = '${h}'),
      'gpu_events', (SELECT jsonb_agg(to_jsonb(x) - 'id' ORDER BY x.id) FROM gpu_events x
                      WHERE x.host_id = '${h}'),
      'events', (SELECT jsonb_agg(jsonb_build_array(v.type, v.data - 'gpu_event_id') ORDER BY v.id) FROM events v
                  WHERE v.host_id = '${h}' AND v.xmin::text = (txid_current() % 4294967296)::text))`;
  // the answer and the rows, after setup (SQL) and the sample, the group's way or monitor_store's
  function run(h, setup, d, grouped) {
    const store = grouped
      ? `ALTER FUNCTION monitor_store(uuid, jsonb) RENAME TO monitor_store_away;
         SELECT o_result FROM monitor_store_fenced('w-live', ARRAY['${h}']::uuid[], ${lit([d])}::jsonb);
         ALTER FUNCTION monitor_store_away(uuid, jsonb) RENAME TO monitor_store;`
      : `SELECT monitor_store('${h}', ${lit(d)}::jsonb)::text;`;
    // the setup's output is not kept (\o): the answer and the rows are the last two lines
    const r = sql(
      `BEGIN; \\o /dev/null\n${setup};\n\\o\n${store} SET CONSTRAINTS ALL IMMEDIATE; ${rows(h)}; ROLLBACK;`,
    );
    return r;
  }
  function same(setup, d, what) {
    const h = E();
    const g = run(h, setup, d, true);
    assert.ok(g.ok, `${what}: the group did not store it set-wise: ${g.err}`);
    const one = run(h, setup, d, false);
    assert.ok(one.ok, `${what}: monitor_store failed: ${one.err}`);
    const [ga, gr] = g.out.split('\n');
    const [oa, or] = one.out.split('\n');
    assert.deepEqual(JSON.parse(ga), JSON.parse(oa), `${what}: the answers differ`);
    assert.deepEqual(JSON.parse(gr), JSON.parse(or), `${what}: the rows differ`);
    return { answer: JSON.parse(ga), rows: JSON.parse(gr) };
  }
  const gpus8 = (h) => [0, 1, 2, 3].map((i) => ({ ...gpu(h, i), ecc_uncorrected_volatile: 0, temp_c: 40 + i }));
  let t0;

  before(() => {
    // the host's first sample (monitor_store's: a first sample is never plain)
    t0 = Date.now() - 5 * 60_000;
    const out = group('w-live', [E()], [{ at: new Date(t0).toISOString(), gpus: gpus8(E()), events: [] }]);
    assert.equal(out[0].fenced, false);
  });

  test('the same answer and rows as monitor_store, in every health the host can be in', () => {
    const h = E();
    const d = (extra = {}) => ({ at: new Date(t0 + 60_000).toISOString(), gpus: gpus8(h), events: [], ...extra });
    // the same times in both transactions (minutes ago)
    const ago = (min) => `timestamptz '${new Date(Date.now() - min * 60_000).toISOString()}'`;
    const ev = (kind, code, policy, min) =>
      `INSERT INTO gpu_events (host_id, gpu_uuid, kind, code, category, policy, message, first_seen, last_seen)
       VALUES ('${h}', '${gpu(h, 1).uuid}', '${kind}', ${code}, 'hardware', '${policy}', 'a test event',
               ${ago(min)}, ${ago(min)})`;
    let r = same('', d(), 'nothing open');
    assert.equal(r.rows.monitor.health, 'ok');
    assert.equal(r.answer.samples, 4);
    assert.equal(r.rows.samples.length, 8);
    same(
      '',
      d({
        at: new Date(t0 + 61_000).toISOString().replace('Z', '+00:00'),
        kmsg_cursor: 's=0a1b;i=2c',
        kmsg_mono: 1234.5,
        kmsg_note: 'n',
        kmsg_dropped: 0,
        container_runtime: true,
        derived_policy: { ecc: 'isolate', remap: 'record', gpu_missing: 'isolate' },
        events: null,
      }),
      'every member',
    );
    r = same(ev('xid', 79, 'isolate', 5), d(), 'an isolating event open');
    assert.equal(r.rows.monitor.health, 'critical');
    const health = (x) => x.rows.events.filter(([type]) => type === 'host.health');
    assert.equal(health(r).length, 1, 'host.health emitted once');
    assert.equal(health(r)[0][1].to, 'critical');
    r = same(`${ev('xid', 79, 'isolate', 5)}; ${ev('xid', 48, 'isolate', 2)}`, d(), 'two');
    assert.match(r.rows.monitor.health_reason, /^2 open isolating events, the latest Xid 48/);
    r = same(ev('xid', 13, 'record', 10), d(), 'a recent event');
    assert.equal(r.rows.monitor.health, 'degraded');
    r = same(ev('xid', 13, 'record', 120), d(), 'an old event');
    assert.equal(r.rows.monitor.health, 'ok');
    assert.match(r.rows.monitor.health_reason, /^1 open event, none seen/);
    const missing = `INSERT INTO gpus (uuid, host_id, first_seen, last_seen, missing_since)
                     VALUES ('GPU-eeeeeeee-0000-4000-8000-000000000009', '${h}', ${ago(1440)},
                             ${ago(1440)}, ${ago(60)})`;
    r = same(missing, d(), 'a GPU missing (not listed)');
    assert.equal(r.rows.monitor.health, 'critical');
    r = same(`${missing}; ${ev('xid', 79, 'isolate', 5)}`, d(), 'both');
    assert.match(r.rows.monitor.health_reason, /; 1 GPU missing from the inventory$/);
    r = same(
      `UPDATE host_monitor SET missed = 2, miss_reason = 'x', health = 'degraded', state = 'degraded'
        WHERE host_id = '${h}'`,
      d(),
      'back from missed samples',
    );
    assert.equal(r.rows.monitor.health, 'ok');
    assert.equal(r.rows.monitor.changed_now, true);
    assert.deepEqual(
      health(r).map(([, x]) => [x.from, x.to, x.missed]),
      [['degraded', 'ok', 0]],
    );
    same(
      `UPDATE gpus SET ecc_uncorrected_volatile = 0 WHERE host_id = '${h}'`,
      d({ gpus: gpus8(h).map((g) => ({ ...g, ecc_uncorrected_volatile: 3 })) }),
      'ECC growth, derived policy off',
    );
  });

  test('a sample that is not plain goes through monitor_store', () => {
    const h = E();
    const at = new Date(t0 + 60_000).toISOString();
    const cases = [
      ['an event', { at, gpus: gpus8(h), events: [{ kind: 'xid', code: 79, policy: 'isolate' }] }],
      ['a GPU new to the host', { at, gpus: [...gpus8(h), gpu(h, 5)], events: [] }],
      ['a GPU not listed', { at, gpus: gpus8(h).slice(1), events: [] }],
      ['an older sample', { at: new Date(t0 - 1000).toISOString(), gpus: gpus8(h), events: [] }],
      ['an empty list', { at, gpus: [], events: [] }],
      ['no list', { at, events: [] }],
      [
        'ECC growth, derived',
        { at, gpus: gpus8(h).map((g) => ({ ...g, ecc_uncorrected_volatile: 1 })), derived_policy: { ecc: 'record' } },
      ],
      ['a lowercase t', { at: at.replace('T', 't'), gpus: gpus8(h) }],
      ['a bad member', { at, gpus: gpus8(h).map((g) => ({ ...g, util_gpu: 140 })) }],
      ['a bad time', { at: '2026-02-30T00:00:00Z', gpus: gpus8(h) }],
      ['an unknown member', { at, gpus: gpus8(h), extra: 1 }],
    ];
    for (const [what, d] of cases) {
      const r = run(h, '', d, true);
      assert.ok(!r.ok, `${what}: stored set-wise`);
      assert.match(r.err, /monitor_store\(uuid, jsonb\) does not exist/, `${what}: ${r.err}`);
    }
    // and the rows are monitor_store's (the whole call, without the rename)
    const d = cases[0][1];
    const g =
      sql(`BEGIN; SELECT o_result FROM monitor_store_fenced('w-live', ARRAY['${h}']::uuid[], ${lit([d])}::jsonb);
                   SET CONSTRAINTS ALL IMMEDIATE; ${rows(h)}; ROLLBACK;`);
    const one = run(h, '', d, false);
    assert.ok(g.ok && one.ok, g.err + one.err);
    const strip = (o) => o.split('\n').map((l) => JSON.parse(l));
    const [ga, gr] = strip(g.out);
    const [oa, or] = strip(one.out);
    assert.deepEqual(
      ga.events.map((e) => e.kind),
      oa.events.map((e) => e.kind),
    );
    delete gr.gpu_events;
    delete or.gpu_events; // the ids differ (the sequence is not rolled back)
    assert.deepEqual(gr.monitor, or.monitor);
    assert.deepEqual(gr.samples, or.samples);
  });
});
