'use strict';
// Recommendations on the event stream (issue 7): the idle policy's pass (here every
// second, GPUFLEET_IDLE_POLICY_INTERVAL=1; no pool has auto_stop, so nothing is
// stopped) compares the recommendations with those of its last pass and writes
// recommendation.opened for a new one and recommendation.withdrawn for one that no
// longer holds. Time is given by report windows relative to now: a useless report of
// two hours ago makes the host idle (stop opens); a busy report of five minutes ago
// makes it busy again (stop withdrawn). Every event is checked against the spec.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer } = require('./lib/server');
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
  srv = await startServer({ name: 'recommend-events', env: { GPUFLEET_WORKERS: '0', GPUFLEET_IDLE_POLICY_INTERVAL: '1', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' } });
  client = api(srv);
  const admin = srv.token('admin');
  const operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pool = await fleet.createPool(client, admin, { price_per_hour: 5 });
  reporter = srv.token('reporter', { args: ['--pool', pool.name] }); // scoped to its pool
  const mk = (n) => fleet.createHost(client, operator, { name: `recev-${n}-${fleet.uniq()}`, address: '127.0.0.1', port: 2222, user: 'gpufleet', credential_id: cred.id, pool_id: pool.id });
  host = await mk('a');
  other = await mk('b');
  s = await openStream(srv.url, { token: viewer, query: '?types=recommendation.opened,recommendation.withdrawn', validate: validateEvent });
  assert.equal(s.status, 200);
});

after(async () => {
  if (s) s.close();
  if (srv) await srv.stop();
});

const post = async (records) => expectStatus(await client.request('POST', '/v1/work-reports', { token: reporter, body: { records } }), 201);
const rec = (h, from, to, o) => ({ host_id: h.id, window_start: ago(from), window_end: ago(to), unit: 'tokens', completed: 0, failed: 0, retried: 0, busy_seconds: 0, ...o });
const about = (e, id) => (e.json.recommendation ? e.json.recommendation.id : e.json.recommendation_id) === id;

describe('recommendations on the event stream', () => {
  test('a stop recommendation opens when the host goes idle, and is withdrawn when it works again', async () => {
    await post([rec(host, 7200, 3600), rec(other, 600, 300, { completed: 100, busy_seconds: 300 })]);
    await s.waitFor((evs) => evs.some((e) => e.event === 'recommendation.opened' && e.json.recommendation.action === 'stop'), 15000, 'recommendation.opened');
    const opened = s.events.filter((e) => e.event === 'recommendation.opened');
    assert.equal(opened.length, 1, 'only the idle host is recommended for stopping');
    const o = opened[0].json;
    assert.equal(o.pool_id, pool.id);
    assert.equal(o.host_id, host.id);
    assert.deepEqual(o.recommendation.target, { host_ids: [host.id], pool_id: pool.id, brief_id: null });
    // The same recommendation, by its stable id, as GET /v1/recommendations lists it.
    const listed = expectStatus(await client.request('GET', `/v1/recommendations?action=stop&pool_id=${pool.id}`, { token: viewer }), 200);
    assert.deepEqual(listed.items.map((r) => r.id), [o.recommendation.id]);
    // Later passes find it again: no second opened event.
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(s.events.filter((e) => e.event === 'recommendation.opened').length, 1);

    await post([rec(host, 600, 300, { completed: 500, busy_seconds: 290 })]);
    await s.waitFor((evs) => evs.some((e) => e.event === 'recommendation.withdrawn'), 15000, 'recommendation.withdrawn');
    const w = s.events.find((e) => e.event === 'recommendation.withdrawn').json;
    assert.equal(w.recommendation_id, o.recommendation.id);
    assert.equal(w.action, 'stop');
    assert.equal(w.host_id, host.id);
    assert.ok(s.events.every((e) => about(e, o.recommendation.id)));
    assert.deepEqual(expectStatus(await client.request('GET', `/v1/recommendations?action=stop&pool_id=${pool.id}`, { token: viewer }), 200).items, []);
    assert.deepEqual(s.errors, []);
  });
});
