'use strict';
// Automatic recovery, the API side (no workers here: the driver and the whole walk are in
// tests/fleet/recover.test.js): the pool's monitor.auto_recover and
// monitor.recovery_diagnostics_level and their refusals, the isolation that opens a
// recovery (and the ones that do not: no auto_recover, a host key mismatch, a host already
// quarantined), GET /v1/hosts/{id}/recoveries with its filter, pages and refusals, and the
// host.recovery event.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

let srv, client, admin, operator, viewer, cred;
const uniq = () => crypto.randomBytes(4).toString('hex');
const sql = (q) => psql(srv.database.url, q);

function poolBody(monitor) {
  return {
    name: `rec-${uniq()}`,
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    price_per_hour: 10,
    durable_path: '/srv/gpufleet/durable',
    scratch_path: '/mnt/nvme/scratch',
    ...(monitor === undefined ? {} : { monitor }),
  };
}
const createPool = async (monitor) =>
  expectStatus(await client.request('POST', '/v1/pools', { token: admin, body: poolBody(monitor) }), 201);

let addr = 1;
async function readyHost(pool) {
  const host = await fleet.createHost(client, operator, {
    name: `rec-host-${uniq()}`,
    address: `127.0.77.${addr++}`,
    port: 22,
    user: 'gpu',
    credential_id: cred.id,
    pool_id: pool.id,
    host_key_sha256: `SHA256:${crypto.randomBytes(32).toString('base64').replace(/=+$/, '')}`,
  });
  // the walk a worker would make, through the state machine's own function
  for (const ev of ['provision_started', 'provision_succeeded', 'gate_started', 'gate_accepted']) {
    sql(`SELECT host_transition('${host.id}', '${ev}', NULL, 'test', NULL, 'worker:test', NULL)`);
  }
  assert.equal(sql(`SELECT state FROM hosts WHERE id = '${host.id}'`), 'ready');
  return host;
}
const event = (host, ev, reason) =>
  sql(`SELECT host_transition('${host.id}', '${ev}', NULL, '${reason}', NULL, 'worker:test', NULL)`);
const list = async (hostId, query = '', token = viewer) =>
  client.request('GET', `/v1/hosts/${hostId}/recoveries${query}`, { token });

before(async () => {
  srv = await startServer({
    name: 'recovery',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('pool monitor.auto_recover and recovery_diagnostics_level', () => {
  test('stored as sent; omitted means no automatic recovery', async () => {
    const p = await createPool({ auto_recover: true, recovery_diagnostics_level: 3 });
    assert.equal(p.monitor.auto_recover, true);
    assert.equal(p.monitor.recovery_diagnostics_level, 3);
    const q = await createPool({ interval_seconds: 30 });
    assert.equal(q.monitor.auto_recover, undefined);
  });

  const bad = [
    [{ auto_recover: 'yes' }, 'monitor.auto_recover'],
    [{ auto_recover: 1 }, 'monitor.auto_recover'],
    [{ auto_recover: null }, 'monitor.auto_recover'],
    [{ recovery_diagnostics_level: 0 }, 'monitor.recovery_diagnostics_level'],
    [{ recovery_diagnostics_level: 4 }, 'monitor.recovery_diagnostics_level'],
    [{ recovery_diagnostics_level: 2.5 }, 'monitor.recovery_diagnostics_level'],
    [{ recovery_diagnostics_level: '2' }, 'monitor.recovery_diagnostics_level'],
  ];
  for (const [monitor, field] of bad) {
    test(`refuses monitor ${JSON.stringify(monitor)} naming ${field}`, async () => {
      const res = await client.request('POST', '/v1/pools', { token: admin, body: poolBody(monitor) });
      expectProblem(res, 400, 'invalid_field', field);
    });
  }

  test('refuses an unknown monitor member', async () => {
    const res = await client.request('POST', '/v1/pools', { token: admin, body: poolBody({ auto_recovery: true }) });
    expectProblem(res, 400, 'unknown_field', 'monitor.auto_recovery');
  });
});

describe('the isolation opens a recovery', () => {
  let auto, manual;
  before(async () => {
    auto = await createPool({ auto_recover: true, recovery_diagnostics_level: 1 });
    manual = await createPool({});
  });

  test('a monitor isolation in an auto_recover pool opens one, running at its drain', async () => {
    const host = await readyHost(auto);
    assert.deepEqual(expectStatus(await list(host.id), 200).items, []);
    event(host, 'monitor_isolated', 'Xid 79 on GPU 0 (00000000:18:00.0): GPU has fallen off the bus');
    const page = expectStatus(await list(host.id), 200);
    assert.equal(page.items.length, 1);
    const r = page.items[0];
    assert.equal(r.host_id, host.id);
    assert.equal(r.pool_id, auto.id);
    assert.equal(r.state, 'running');
    assert.equal(r.step, 'drain');
    assert.equal(r.diagnostics_level, 1);
    assert.match(r.cause, /^Xid 79 on GPU 0/);
    assert.equal(r.error, null);
    assert.equal(r.finished_at, null);
    assert.deepEqual(
      r.steps.map((s) => [s.name, s.state]),
      [
        ['drain', 'running'],
        ['diagnostics', 'pending'],
        ['gate', 'pending'],
      ],
    );
    assert.equal(r.steps[1].job_id, null);
    assert.equal(r.steps[1].run, null);
    // the event stream has it, in the isolation's transaction
    const ev = JSON.parse(sql(`SELECT data FROM events WHERE type = 'host.recovery' AND host_id = '${host.id}'`));
    assert.deepEqual(ev, { recovery_id: r.id, state: 'running', step: 'drain', error: null });
    // isolated again while quarantined: no second one (one running per host, and a
    // quarantined host's isolation changes no state)
    event(host, 'monitor_isolated', 'Xid 79 again');
    assert.equal(expectStatus(await list(host.id), 200).items.length, 1);
    // filters
    assert.equal(expectStatus(await list(host.id, '?state=running'), 200).items.length, 1);
    assert.equal(expectStatus(await list(host.id, '?state=failed'), 200).items.length, 0);
  });

  test('the level defaults to 2', async () => {
    const pool = await createPool({ auto_recover: true });
    const host = await readyHost(pool);
    event(host, 'monitor_isolated', 'Xid 64');
    assert.equal(expectStatus(await list(host.id), 200).items[0].diagnostics_level, 2);
  });

  test('none without auto_recover, and none for a host key mismatch or a gate isolation', async () => {
    const m = await readyHost(manual);
    event(m, 'monitor_isolated', 'Xid 79');
    assert.equal(sql(`SELECT state FROM hosts WHERE id = '${m.id}'`), 'quarantined');
    assert.deepEqual(expectStatus(await list(m.id), 200).items, []);
    const k = await readyHost(auto);
    event(k, 'key_mismatch', 'host key mismatch: SHA256:x');
    assert.deepEqual(expectStatus(await list(k.id), 200).items, []);
    const g = await readyHost(auto);
    sql(`SELECT host_transition('${g.id}', 'gate_started', NULL, 'test', NULL, 'worker:test', NULL)`);
    event(g, 'gate_isolated', 'hardware evidence in gpu_inventory');
    assert.deepEqual(expectStatus(await list(g.id), 200).items, []);
  });

  test('pages newest first with a cursor', async () => {
    const host = await readyHost(auto);
    // three isolations in a row, each ended (the driver would have): one running at a time
    for (let i = 0; i < 3; i++) {
      event(host, 'monitor_isolated', `Xid 79 #${i}`);
      sql(
        `UPDATE host_recoveries SET state = 'cancelled', error = 'test', finished_at = now() WHERE host_id = '${host.id}' AND state = 'running'`,
      );
      sql(`SELECT host_transition('${host.id}', 'release', 'provisioned', 'test', NULL, 'admin', NULL)`);
      for (const ev of ['gate_started', 'gate_accepted']) event(host, ev, 'test');
    }
    const first = expectStatus(await list(host.id, '?limit=2'), 200);
    assert.equal(first.items.length, 2);
    assert.ok(first.next_cursor);
    assert.match(first.items[0].cause, /#2$/);
    const second = expectStatus(await list(host.id, `?limit=2&cursor=${encodeURIComponent(first.next_cursor)}`), 200);
    assert.equal(second.items.length, 1);
    assert.match(second.items[0].cause, /#0$/);
    assert.equal(second.next_cursor, null);
    assert.deepEqual(
      second.items[0].steps.map((s) => s.state),
      ['cancelled', 'skipped', 'skipped'],
    );
  });
});

describe('GET /v1/hosts/{id}/recoveries refusals', () => {
  test('404 for an unknown host and for an id that is not a UUID', async () => {
    expectProblem(await list(crypto.randomUUID()), 404, 'not_found');
    expectProblem(await list('not-a-uuid'), 404, 'not_found');
  });

  test('400 for a bad state filter, a bad cursor, a bad limit', async () => {
    const pool = await createPool({});
    const host = await readyHost(pool);
    expectProblem(await list(host.id, '?state=done'), 400, 'invalid_parameter', 'state');
    expectProblem(await list(host.id, '?cursor=zzz'), 400, 'invalid_cursor');
    expectProblem(await list(host.id, '?limit=0'), 400, 'invalid_parameter', 'limit');
    expectProblem(await list(host.id, '?color=red'), 400, 'unknown_parameter', 'color');
  });

  test('401 without a token', async () => {
    const res = await client.request('GET', `/v1/hosts/${crypto.randomUUID()}/recoveries`, {});
    assert.equal(res.status, 401);
  });
});
