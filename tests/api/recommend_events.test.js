'use strict';
// Recommendations on the event stream (issue 7): the idle policy's pass (here every
// second, GPUFLEET_IDLE_POLICY_INTERVAL=1; no pool has auto_stop, so nothing is
// stopped) compares the recommendations with those of its last pass and writes
// recommendation.opened for a new one and recommendation.withdrawn for one that no
// longer holds. Time is given by report windows relative to now: useless reports of the
// last two hours, with GPU samples at 0-1% over the last 30 minutes (stored as the
// monitor stores them, monitor_store through psql), make the host idle (stop opens); a
// busy report of five minutes ago makes it busy again (stop withdrawn). A host the
// monitor isolates opens an investigate recommendation, withdrawn once it is released.
// Every event is checked against the spec.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql, psqlUnguarded } = require('./lib/server');
const { api, validateEvent } = require('./lib/openapi');
const { expectStatus } = require('./lib/assert');
const { openStream } = require('./lib/sse');
const fleet = require('./lib/fleet');

const NOW = Math.floor(Date.now() / 1000) * 1000;
const ago = (s) => new Date(NOW - s * 1000).toISOString().replace('.000Z', 'Z');

let srv;
let client;
let viewer;
let reporter;
let pool;
let host;
let other;
let s;

before(async () => {
  srv = await startServer({
    name: 'recommend-events',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_IDLE_POLICY_INTERVAL: '1', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  const admin = srv.token('admin');
  const operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pool = await fleet.createPool(client, admin, { price_per_hour: 5 });
  reporter = srv.token('reporter', { args: ['--pool', pool.name] }); // scoped to its pool
  const mk = (n) =>
    fleet.createHost(client, operator, {
      name: `recev-${n}-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  host = await mk('a');
  other = await mk('b');
  s = await openStream(srv.url, {
    token: viewer,
    query: '?types=recommendation.opened,recommendation.withdrawn',
    validate: validateEvent,
  });
  assert.equal(s.status, 200);
});

after(async () => {
  if (s) s.close();
  if (srv) await srv.stop();
});

const post = async (records) =>
  expectStatus(await client.request('POST', '/v1/work-reports', { token: reporter, body: { records } }), 201);
const rec = (h, from, to, o) => ({
  host_id: h.id,
  window_start: ago(from),
  window_end: ago(to),
  unit: 'tokens',
  completed: 0,
  failed: 0,
  retried: 0,
  busy_seconds: 0,
  ...o,
});
/** 30 samples of h's 8 GPUs at 0-1%, 60 s apart, the newest 10 s ago (now: the test's). */
function idleSamples(h) {
  const calls = [];
  for (let k = 29; k >= 0; k--) {
    const gpus = [...Array(8).keys()].map((g) => ({
      uuid: `GPU-${h.id.slice(0, 8)}-0000-4000-8000-00000000000${g}`,
      util_gpu: (k + g) % 2,
    }));
    calls.push(`SELECT monitor_store('${h.id}', '${JSON.stringify({ at: ago(10 + 60 * k), gpus })}'::jsonb);`);
  }
  psql(srv.database.url, calls.join('\n'));
}
const about = (e, id) => (e.json.recommendation ? e.json.recommendation.id : e.json.recommendation_id) === id;

describe('recommendations on the event stream', () => {
  test('a stop recommendation opens when the host goes idle, and is withdrawn when it works again', async () => {
    idleSamples(host);
    await post([rec(host, 7200, 0), rec(other, 600, 300, { completed: 100, busy_seconds: 300 })]);
    await s.waitFor(
      (evs) => evs.some((e) => e.event === 'recommendation.opened' && e.json.recommendation.action === 'stop'),
      15000,
      'recommendation.opened',
    );
    const opened = s.events.filter((e) => e.event === 'recommendation.opened');
    assert.equal(opened.length, 1, 'only the idle host is recommended for stopping');
    const o = opened[0].json;
    assert.equal(o.recommendation.evidence.gpu_utilization.max_pct, 1);
    assert.equal(o.recommendation.evidence.work_reports.reports, 1);
    assert.equal(o.pool_id, pool.id);
    assert.equal(o.host_id, host.id);
    assert.deepEqual(o.recommendation.target, { host_ids: [host.id], pool_id: pool.id, brief_id: null });
    // The same recommendation, by its stable id, as GET /v1/recommendations lists it.
    const listed = expectStatus(
      await client.request('GET', `/v1/recommendations?action=stop&pool_id=${pool.id}`, { token: viewer }),
      200,
    );
    assert.deepEqual(
      listed.items.map((r) => r.id),
      [o.recommendation.id],
    );
    // Later passes find it again: no second opened event.
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(s.events.filter((e) => e.event === 'recommendation.opened').length, 1);

    await post([rec(host, 600, 300, { completed: 500, busy_seconds: 290 })]);
    await s.waitFor(
      (evs) => evs.some((e) => e.event === 'recommendation.withdrawn'),
      15000,
      'recommendation.withdrawn',
    );
    const w = s.events.find((e) => e.event === 'recommendation.withdrawn').json;
    assert.equal(w.recommendation_id, o.recommendation.id);
    assert.equal(w.action, 'stop');
    assert.equal(w.host_id, host.id);
    assert.ok(s.events.every((e) => about(e, o.recommendation.id)));
    assert.deepEqual(
      expectStatus(
        await client.request('GET', `/v1/recommendations?action=stop&pool_id=${pool.id}`, { token: viewer }),
        200,
      ).items,
      [],
    );
    assert.deepEqual(s.errors, []);
  });

  test('a host isolated by the monitor opens investigate; released, it is withdrawn', async () => {
    const seen = s.events.length;
    psqlUnguarded(
      srv.database.url,
      `SET CONSTRAINTS ALL IMMEDIATE; UPDATE hosts SET state = 'ready' WHERE id = '${other.id}'`,
    );
    psql(
      srv.database.url,
      `SELECT host_transition('${other.id}', 'monitor_isolated', NULL, 'Xid 79 on GPU 0', NULL, 'worker:test', NULL)`,
    );
    const isOpened = (e) => e.event === 'recommendation.opened' && e.json.recommendation.rule === 'monitor_isolated';
    await s.waitFor((evs) => evs.slice(seen).some(isOpened), 15000, 'investigate opened');
    const o = s.events.slice(seen).find(isOpened).json;
    assert.equal(o.recommendation.action, 'investigate');
    assert.equal(o.host_id, other.id);
    assert.equal(o.recommendation.evidence.quarantine_reason, 'Xid 79 on GPU 0');
    psql(
      srv.database.url,
      `SELECT host_transition('${other.id}', 'release', 'registered', 'released', NULL, 'test-admin', NULL)`,
    );
    await s.waitFor(
      (evs) =>
        evs
          .slice(seen)
          .some((e) => e.event === 'recommendation.withdrawn' && e.json.recommendation_id === o.recommendation.id),
      15000,
      'investigate withdrawn',
    );
    assert.deepEqual(s.errors, []);
  });
});
