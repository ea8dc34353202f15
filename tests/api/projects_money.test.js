'use strict';
// Projects and money (docs/projects.md): the event stream, webhooks, the audit trail,
// costs, recommendations and budgets, each seen from two projects, A and B, on two
// replicas (srvA, srvB) of one database.
//
// Pools, credentials and briefs are created by the platform admin (they land in the
// project named default) and moved into A or B with psql, as their own create bodies will
// name the project (another part of docs/projects.md); hosts registered in a pool take its
// project (the hosts_project trigger). Time is never waited for where it can be written:
// cost windows use 2025 state histories and reports, idleness uses reports and GPU
// samples dated relative to now.
//
// Money: every pool here costs $0/h but $1 per GB moved (egress), with no overhead, so a
// project's spend this month is exactly the GB its hosts' reports of this month moved.
// A's budget is $100 (50/80/100 %, on_exhausted stop_idle); B's is $1000 (notify).
//
// Hosts:
//   a1  A  accepted (state ready), idle by both signals: stop, and reuse for briefs
//          BA (A) and BB (B) — the latter lends A's host to B: platform admins only;
//          stopped by the idle policy once A's budget is exhausted
//   a2  A  idle by both signals but a running job: never recommended, never stopped
//   a3  A  reports the moved bytes that make A's spend
//   b1  B  idle by both signals: stop; never stopped (B is not exhausted)
//   ca  A  costs: $4/h, held [T0, T0+10h), 2000 tokens → $40.00, $0.02 a token
//   cb  B  costs: $2/h, held [T0, T0+10h), 500 requests → $20.00, $0.04 a request

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { Webhook } = require('standardwebhooks');

const { startServer, psql, psqlUnguarded, sleep } = require('./lib/server');
const { api, validateEvent } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const { openStream } = require('./lib/sse');
const fleet = require('./lib/fleet');

const ENV = {
  GPUFLEET_WORKERS: '0',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_EVENTS_HEARTBEAT_SECONDS: '1',
  GPUFLEET_BUDGET_INTERVAL: '1',
  GPUFLEET_IDLE_POLICY_INTERVAL: '1',
};
const T0 = '2025-01-01T00:00:00Z';
const hour = (h) => new Date(Date.parse(T0) + h * 3600e3).toISOString().replace('.000Z', 'Z');
const iso = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const STOP = 'sudo -n /usr/sbin/poweroff';

let srvA;
let srvB;
let client; // on srvA
let clientB; // on srvB
let admin; // platform admin
let projA;
let projB;
let alice; // admin of A
let annie; // viewer of A
let bob; // admin of B
let bert; // viewer of B
let both; // viewer of A by its token, of B by a stored membership
let carol; // admin of A by her token, viewer of B by a stored membership
const P = {};
const H = {};
const B = {};
const streams = [];
const receivers = [];

/** A webhook receiver on loopback: answers 200 and keeps every request. */
class Receiver {
  constructor() {
    this.requests = [];
    receivers.push(this);
  }

  async start() {
    this.server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        this.requests.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get url() {
    return `http://127.0.0.1:${this.server.address().port}/hook`;
  }

  /** The payloads, each verified with the secret (throws on a bad signature). */
  verified(secret) {
    const wh = new Webhook(secret);
    return this.requests.map((r) => ({ id: r.headers['webhook-id'], payload: wh.verify(r.body, r.headers) }));
  }
}

async function until(fn, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const db = () => srvA.database.url;
const get = async (path, token, c = client) => expectStatus(await c.request('GET', path, { token }), 200);

/** Opens a validated stream with a ticket minted by token on server s. */
async function ticketStream(s, token, query = '') {
  const c = api(s);
  const t = expectStatus(await c.request('POST', '/v1/event-tickets', { token }), 201);
  const st = await openStream(s.url, { query: `?ticket=${t.ticket}${query}`, validate: validateEvent });
  assert.equal(st.status, 200, st.text);
  streams.push(st);
  return st;
}

async function register(name, pool, c = client) {
  return fleet.createHost(c, admin, {
    name: `${name}-${fleet.uniq()}`,
    address: '127.0.0.1',
    port: 2222,
    user: 'gpufleet',
    credential_id: pool.credential,
    pool_id: pool.id,
  });
}

/** A pool of project, with its own credential, both moved there. */
async function pool(project, overrides) {
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  const p = await fleet.createPool(client, admin, {
    price_per_hour: 0,
    egress_price_per_gb: 1,
    stop_command: STOP,
    ...overrides,
  });
  psql(db(), `UPDATE credentials SET project_id = '${project.id}' WHERE id = '${cred.id}'`);
  psql(db(), `UPDATE pools SET project_id = '${project.id}' WHERE id = '${p.id}'`);
  return { ...p, credential: cred.id };
}

async function brief(name, project) {
  const b = expectStatus(
    await client.request('POST', '/v1/briefs', {
      token: admin,
      body: {
        name: `${name}-${fleet.uniq()}`,
        kind: 'inference_interactive',
        model: { name: 'acme/chat', parameter_count: 7e9, precision: 'bf16' },
        load: { concurrency: 1 },
        targets: [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }],
      },
    }),
    201,
  );
  psql(db(), `UPDATE briefs SET project_id = '${project.id}' WHERE id = '${b.id}'`);
  return b;
}

const reports = async (records) =>
  expectStatus(await client.request('POST', '/v1/work-reports', { token: admin, body: { records } }), 201);

/** Idle by both signals as of now (recommend_events.test.js): a report of nothing done
 * over the last two hours, and 30 samples of 8 GPUs at 0-1 % a minute apart up to 10 s
 * ago, stored as the monitor stores them. */
async function idle(h, now = Date.now()) {
  const t = Math.floor(now / 1000) * 1000;
  const calls = [];
  for (let k = 29; k >= 0; k--) {
    const gpus = [...Array(8).keys()].map((g) => ({
      uuid: `GPU-${h.id.slice(0, 8)}-0000-4000-8000-00000000000${g}`,
      util_gpu: (k + g) % 2,
    }));
    calls.push(`SELECT monitor_store('${h.id}', '${JSON.stringify({ at: iso(t - 10e3 - 60e3 * k), gpus })}'::jsonb);`);
  }
  psql(db(), calls.join('\n'));
}

/** Reports of moved bytes on a3 (its cost: $1 a GB): ten seconds, the n-th call's
 * 90 - 20n seconds ago (the calls are seconds apart: their windows never overlap). */
async function spend(gb) {
  const start = Date.now() - 90e3 + spend.n * 20e3;
  await reports([
    {
      host_id: H.a3.id,
      window_start: iso(start),
      window_end: iso(start + 10e3),
      unit: 'items',
      completed: 1,
      failed: 0,
      retried: 0,
      busy_seconds: 0,
      bytes_moved: gb * 1e9,
    },
  ]);
  spend.n++;
}
spend.n = 0;

const thresholdEvents = (project) =>
  psql(
    db(),
    `SELECT coalesce(string_agg(data->>'threshold_pct', ',' ORDER BY id), '') FROM events` +
      ` WHERE type = 'budget.threshold' AND project_id = '${project.id}'`,
  );

before(async () => {
  // The budget pass counts from the first of the month (UTC): keep three minutes of room
  // for the reports of this month.
  const d = new Date();
  const monthStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  if (Date.now() - monthStart < 180e3) await sleep(180e3 - (Date.now() - monthStart));
  srvA = await startServer({ name: 'projects-money', env: ENV });
  srvB = await startServer({
    name: 'projects-money-b',
    databaseUrl: srvA.database.url,
    migrate: false,
    secrets: srvA.secrets,
    env: ENV,
  });
  client = api(srvA);
  clientB = api(srvB);
  admin = srvA.token('admin', { sub: 'platform' });
  const mk = async (body) => expectStatus(await client.request('POST', '/v1/projects', { token: admin, body }), 201);
  projA = await mk({ name: `a-${fleet.uniq()}`, budget: { monthly: 100, on_exhausted: 'stop_idle' } });
  projB = await mk({ name: `b-${fleet.uniq()}`, budget: { monthly: 1000 } });
  alice = srvA.token('admin', { sub: 'alice', project: projA.name });
  annie = srvA.token('viewer', { sub: 'annie', project: projA.name });
  bob = srvA.token('admin', { sub: 'bob', project: projB.name });
  bert = srvA.token('viewer', { sub: 'bert', project: projB.name });
  both = srvA.token('viewer', { sub: 'both', project: projA.name });
  carol = srvA.token('admin', { sub: 'carol', project: projA.name });
  for (const sub of ['both', 'carol']) {
    expectStatus(
      await client.request('PUT', `/v1/projects/${projB.id}/members/${sub}`, {
        token: admin,
        body: { role: 'viewer' },
      }),
      200,
    );
  }
  P.a = await pool(projA);
  P.b = await pool(projB);
  P.ca = await pool(projA, { price_per_hour: 4, egress_price_per_gb: 0 });
  P.cb = await pool(projB, { price_per_hour: 2, egress_price_per_gb: 0 });
  B.ba = await brief('ba', projA);
  B.bb = await brief('bb', projB);
});

after(async () => {
  for (const s of streams) if (!s.endedFlag) s.close();
  for (const r of receivers) if (r.server) r.server.close();
  if (srvB) await srvB.stop({ dropDatabase: false });
  if (srvA) await srvA.stop();
});

describe('the event stream', () => {
  test("a B member's stream (opened with a ticket) never receives A's events; an A member's never B's; a platform admin's gets both", async () => {
    const sB = await ticketStream(srvB, bert);
    const sA = await ticketStream(srvA, annie);
    const sAll = await ticketStream(srvB, admin);
    // The member of both (A by its token, B by a stored membership) sees both.
    const sBoth = await ticketStream(srvA, both);
    H.a1 = await register('a1', P.a);
    H.b1 = await register('b1', P.b, clientB);
    H.a2 = await register('a2', P.a);
    H.a3 = await register('a3', P.a);
    // An event of no project: the platform's own.
    psql(
      db(),
      `INSERT INTO events (type, data) VALUES ('recommendation.withdrawn', '{"recommendation_id":"${projB.id}","action":"stop"}')`,
    );
    const created = (s) => s.events.filter((e) => e.event === 'host.created').map((e) => e.json.host_id);
    await until(() => created(sAll).length >= 4 && sAll.events.some((e) => e.json.project_id === null), 15000, 'admin');
    await until(() => created(sB).includes(H.b1.id) && created(sA).includes(H.a3.id), 15000, 'members');
    await until(() => created(sBoth).length >= 4, 15000, 'the member of both');
    await sleep(1500); // nothing more may come
    assert.deepEqual(created(sB), [H.b1.id]);
    assert.deepEqual(new Set(created(sA)), new Set([H.a1.id, H.a2.id, H.a3.id]));
    assert.ok(
      sB.events.every((e) => e.json.project_id === projB.id),
      JSON.stringify(sB.events.map((e) => e.json)),
    );
    assert.ok(sA.events.every((e) => e.json.project_id === projA.id));
    assert.ok(sBoth.events.every((e) => [projA.id, projB.id].includes(e.json.project_id)));
    // each event names its project as {id, name} too; the platform's own: null
    const named = { [projA.id]: projA.name, [projB.id]: projB.name };
    for (const e of sAll.events) {
      const want = e.json.project_id === null ? null : { id: e.json.project_id, name: named[e.json.project_id] };
      assert.deepEqual(e.json.project, want, JSON.stringify(e.json));
    }
    assert.ok(sB.events.every((e) => e.json.project.id === projB.id && e.json.project.name === projB.name));
    assert.deepEqual(new Set(created(sAll)), new Set([H.a1.id, H.b1.id, H.a2.id, H.a3.id]));
    for (const s of [sA, sB, sAll, sBoth]) assert.deepEqual(s.errors, []);
  });

  test('?project= narrows a stream to one project the caller may read; another answers 400 as an unknown one', async () => {
    const s = await ticketStream(srvA, admin, `&project=${projB.name}`);
    const sb = await ticketStream(srvA, both, `&project=${projB.id}`);
    const h = await register('narrow-a', P.a);
    const g = await register('narrow-b', P.b);
    await until(() => s.events.some((e) => e.json.host_id === g.id), 15000, 'B event');
    await until(() => sb.events.some((e) => e.json.host_id === g.id), 15000, 'B event (member of both)');
    await sleep(500);
    assert.ok(!s.events.some((e) => e.json.host_id === h.id));
    assert.ok(!sb.events.some((e) => e.json.host_id === h.id));
    for (const q of [`?project=${projA.name}`, '?project=no-such-project']) {
      expectProblem(
        await client.request('GET', `/v1/events${q}`, { token: bert }),
        400,
        'invalid_parameter',
        'project',
      );
    }
  });
});

describe('webhooks', () => {
  let ra;
  let rb;
  let wa;
  let wb;
  test("A's webhook never receives B's events, B's never A's", async () => {
    ra = await new Receiver().start();
    rb = await new Receiver().start();
    const types = ['host.created', 'host.deleted', 'budget.threshold'];
    // alice is an admin of A only: her webhook is A's without naming it.
    wa = expectStatus(
      await client.request('POST', '/v1/webhooks', { token: alice, body: { url: ra.url, event_types: types } }),
      201,
    );
    assert.deepEqual(wa.project, { id: projA.id, name: projA.name });
    wb = expectStatus(
      await clientB.request('POST', '/v1/webhooks', {
        token: admin,
        body: { url: rb.url, event_types: types, project: projB.name },
      }),
      201,
    );
    assert.deepEqual(wb.project, { id: projB.id, name: projB.name });
    const ha = await register('wh-a', P.a);
    const hb = await register('wh-b', P.b);
    expectStatus(await client.request('DELETE', `/v1/hosts/${ha.id}`, { token: admin }), 204);
    expectStatus(await client.request('DELETE', `/v1/hosts/${hb.id}`, { token: admin }), 204);
    const hosts = (r, secret) => r.verified(secret).map((x) => `${x.payload.type}:${x.payload.data.host_id}`);
    await until(() => ra.requests.length >= 2 && rb.requests.length >= 2, 20000, 'deliveries');
    await sleep(1500);
    assert.deepEqual(hosts(ra, wa.secret), [`host.created:${ha.id}`, `host.deleted:${ha.id}`]);
    assert.deepEqual(hosts(rb, wb.secret), [`host.created:${hb.id}`, `host.deleted:${hb.id}`]);
    for (const x of ra.verified(wa.secret)) {
      assert.equal(x.payload.data.project_id, projA.id);
      assert.deepEqual(x.payload.data.project, { id: projA.id, name: projA.name });
    }
  });

  test("another project's webhook answers 404 (writes audited as webhook.denied); lists show the caller's projects", async () => {
    expectProblem(await client.request('GET', `/v1/webhooks/${wa.id}`, { token: bob }), 404, 'not_found');
    expectProblem(await client.request('DELETE', `/v1/webhooks/${wa.id}`, { token: bob }), 404, 'not_found');
    expectProblem(
      await client.request('POST', `/v1/webhooks/${wa.id}/replay`, { token: bob, body: { from_event_id: 1 } }),
      404,
      'not_found',
    );
    expectProblem(await client.request('GET', `/v1/webhooks/${wa.id}/deliveries`, { token: bob }), 404, 'not_found');
    // Creating in a project it may see but does not administer: 403; one it may not see: 404.
    expectProblem(
      await client.request('POST', '/v1/webhooks', {
        token: carol,
        body: { url: rb.url, event_types: ['host.created'], project: projB.name },
      }),
      403,
      'insufficient_role',
      'project',
    );
    expectProblem(
      await client.request('POST', '/v1/webhooks', {
        token: bob,
        body: { url: rb.url, event_types: ['host.created'], project: projA.name },
      }),
      404,
      'not_found',
      'project',
    );
    assert.equal((await get(`/v1/webhooks/${wa.id}`, alice)).id, wa.id);
    assert.deepEqual(
      (await get('/v1/webhooks', bob)).items.map((w) => w.id),
      [wb.id],
    );
    assert.deepEqual(
      (await get('/v1/webhooks', alice)).items.map((w) => w.id),
      [wa.id],
    );
    assert.deepEqual(
      (await get(`/v1/webhooks?project=${projA.name}`, admin)).items.map((w) => w.id),
      [wa.id],
    );
    // Still there, still A's.
    assert.equal((await get(`/v1/webhooks/${wa.id}`, admin)).enabled, true);
    const denied = (await get(`/v1/audit-events?action=webhook.denied&project=${projA.id}`, admin)).items;
    assert.deepEqual(denied.map((e) => [e.principal, e.method, e.status]).sort(), [
      ['bob', 'DELETE', 404],
      ['bob', 'POST', 404],
    ]);
    // The refused creates name no existing webhook: audited in no project.
    const creates = (await get('/v1/audit-events?action=webhook.denied&resource_type=webhook', admin)).items.filter(
      (e) => e.path === '/v1/webhooks',
    );
    assert.deepEqual(creates.map((e) => [e.principal, e.status]).sort(), [
      ['bob', 404],
      ['carol', 403],
    ]);
  });
});

describe('the audit trail', () => {
  test("a project's admin reads its project's rows only; a platform admin reads all; rows carry project, before and after", async () => {
    const rowsA = (await get('/v1/audit-events?limit=500', alice)).items;
    assert.ok(rowsA.length > 0);
    assert.ok(
      rowsA.every((e) => e.project && e.project.id === projA.id),
      JSON.stringify(rowsA.slice(0, 3)),
    );
    const created = rowsA.find((e) => e.action === 'project.create');
    assert.equal(created.before, null);
    assert.equal(created.after.name, projA.name);
    assert.equal(created.after.budget.monthly, 100);
    assert.ok(rowsA.some((e) => e.action === 'webhook.create' && e.principal === 'alice'));
    const rowsB = (await get('/v1/audit-events?limit=500', bob)).items;
    assert.ok(rowsB.every((e) => e.project.id === projB.id));
    const member = rowsB.find((e) => e.action === 'project.member');
    assert.equal(member.before, null);
    assert.deepEqual(member.after, { role: 'viewer' });
    // One of B's rows is not found for A's admin; the platform admin reads it.
    const oneB = rowsB[0];
    expectProblem(await client.request('GET', `/v1/audit-events/${oneB.id}`, { token: alice }), 404, 'not_found');
    assert.equal((await get(`/v1/audit-events/${oneB.id}`, admin)).id, oneB.id);
    // The platform admin's ?project= filter; the platform's own rows (no project) are its.
    const filtered = (await get(`/v1/audit-events?project=${projB.name}&limit=500`, admin)).items;
    assert.deepEqual(
      filtered.map((e) => e.id),
      rowsB.map((e) => e.id),
    );
    const all = (await get('/v1/audit-events?limit=500', admin)).items;
    assert.ok(all.some((e) => e.project === null));
    assert.ok(!rowsA.some((e) => e.project === null));
    // The route stays admin-only: a viewer of A is refused at the door.
    expectProblem(await client.request('GET', '/v1/audit-events', { token: annie }), 403, 'insufficient_role');
    // A's admin may not filter on B: nothing of B is listed (the same 400 as an unknown project).
    expectProblem(
      await client.request('GET', `/v1/audit-events?project=${projB.name}`, { token: alice }),
      400,
      'invalid_parameter',
      'project',
    );
  });
});

describe('costs', () => {
  test('group_by=project: hand-computed figures per project; members see their projects only', async () => {
    H.ca = await register('ca', P.ca);
    H.cb = await register('cb', P.cb);
    // Held from T0, stopped at T0 + 10 h: 10 held hours in 2025, nothing this month. One
    // transaction: a budget pass between the two statements would see them held all month.
    psql(
      db(),
      `UPDATE host_state_history SET at = '${T0}' WHERE host_id IN ('${H.ca.id}', '${H.cb.id}');` +
        ` INSERT INTO host_state_history (host_id, from_state, to_state, reason, actor, at) VALUES` +
        ` ('${H.ca.id}', 'registered', 'stopped', 'test', 'test', '${hour(10)}'),` +
        ` ('${H.cb.id}', 'registered', 'stopped', 'test', 'test', '${hour(10)}')`,
    );
    const r = (h, from, unit, completed) => ({
      host_id: h.id,
      window_start: hour(from),
      window_end: hour(from + 1),
      unit,
      completed,
      failed: 0,
      retried: 0,
      busy_seconds: 1800,
    });
    await reports([r(H.ca, 1, 'tokens', 1000), r(H.ca, 2, 'tokens', 1000), r(H.cb, 1, 'requests', 500)]);
    const q = `/v1/costs?group_by=project&from=${T0}&to=${hour(24)}`;
    const body = await get(q, admin);
    assert.equal(body.group_by, 'project');
    const by = Object.fromEntries(body.items.map((i) => [i.id, i]));
    assert.deepEqual(Object.keys(by).sort(), [projA.id, projB.id].sort());
    // A: $4/h × 10 h = $40.00 for 2000 tokens: $0.02 a token ($20 per 1000).
    assert.equal(by[projA.id].name, projA.name);
    assert.equal(by[projA.id].total, 40);
    assert.equal(by[projA.id].held_hours, 10);
    assert.deepEqual(by[projA.id].completed_units, { tokens: 2000 });
    assert.deepEqual(by[projA.id].cost_per_completed_unit, { tokens: { per_unit: 0.02, per_1000: 20 } });
    // B: $2/h × 10 h = $20.00 for 500 requests: $0.04 a request.
    assert.equal(by[projB.id].total, 20);
    assert.deepEqual(by[projB.id].cost_per_completed_unit, { requests: { per_unit: 0.04, per_1000: 40 } });
    // A member of B sees B's hosts only; the filter narrows the platform admin's report.
    assert.deepEqual(
      (await get(q, bert)).items.map((i) => i.id),
      [projB.id],
    );
    assert.deepEqual(
      (await get(`/v1/costs?group_by=host&from=${T0}&to=${hour(24)}`, bert)).items.map((i) => i.id),
      [H.cb.id],
    );
    assert.deepEqual(
      (await get(`${q}&project=${projA.name}`, admin)).items.map((i) => i.id),
      [projA.id],
    );
    expectProblem(
      await client.request('GET', `${q}&project=${projA.name}`, { token: bert }),
      400,
      'invalid_parameter',
      'project',
    );
  });
});

describe('recommendations', () => {
  test("members see their projects' recommendations; lending A's idle host to B's brief is for platform admins only", async () => {
    const now = Date.now();
    // a1 accepted: a gate run and state ready (as a worker would record them).
    const run = psql(
      db(),
      `INSERT INTO gate_runs (kind, host_id, pool_id, gate_version, verdict, reason, checks, started_at)` +
        ` VALUES ('gate', '${H.a1.id}', '${P.a.id}', 1, 'accept', 'every check passed', '[]'::jsonb, now()) RETURNING id;`,
    )
      .split('\n')
      .find((l) => /^[0-9a-f-]{36}$/.test(l.trim()))
      .trim();
    psqlUnguarded(
      db(),
      `SET CONSTRAINTS ALL IMMEDIATE; UPDATE hosts SET state = 'ready', accepted_gate_run_id = '${run}' WHERE id = '${H.a1.id}'`,
    );
    psql(
      db(),
      `INSERT INTO jobs (kind, host_id, state, created_by) VALUES ('diagnostics', '${H.a2.id}', 'running', 'test')`,
    );
    const nothing = (h) => ({
      host_id: h.id,
      window_start: iso(now - 7200e3),
      window_end: iso(now),
      unit: 'tokens',
      completed: 0,
      failed: 0,
      retried: 0,
      busy_seconds: 0,
    });
    await reports([nothing(H.a1), nothing(H.a2), nothing(H.b1)]);
    for (const h of [H.a1, H.a2, H.b1]) await idle(h, now);
    const key = (x) => `${x.action}:${x.target.host_ids.join('+')}:${x.target.brief_id || '-'}`;
    const recs = async (token, q = '') => (await get(`/v1/recommendations${q}`, token)).items.map(key).sort();
    const stopA1 = `stop:${H.a1.id}:-`;
    const stopB1 = `stop:${H.b1.id}:-`;
    const reuseA = `reuse:${H.a1.id}:${B.ba.id}`;
    const lend = `reuse:${H.a1.id}:${B.bb.id}`;
    assert.deepEqual(await recs(admin), [lend, reuseA, stopA1, stopB1].sort());
    assert.deepEqual(await recs(annie), [reuseA, stopA1].sort());
    assert.deepEqual(await recs(bert), [stopB1]);
    // Even one who reads both projects does not see the lending.
    assert.deepEqual(await recs(both), [reuseA, stopA1, stopB1].sort());
    assert.deepEqual(await recs(admin, `?project=${projB.name}`), [lend, stopB1].sort());
    assert.deepEqual(await recs(both, `?project=${projA.id}`), [reuseA, stopA1].sort());
    expectProblem(
      await client.request('GET', `/v1/recommendations?project=${projA.name}`, { token: bert }),
      400,
      'invalid_parameter',
      'project',
    );
    // Each names its hosts' project, the lending included (A's host).
    const pa = { id: projA.id, name: projA.name };
    const pb = { id: projB.id, name: projB.name };
    const projects = Object.fromEntries(
      (await get('/v1/recommendations', admin)).items.map((x) => [key(x), x.project]),
    );
    assert.deepEqual(projects, { [lend]: pa, [reuseA]: pa, [stopA1]: pa, [stopB1]: pb });
    // no_usage_data follows the hosts' projects, and names them.
    const nuB = (await get('/v1/recommendations', bert)).no_usage_data;
    const nu = nuB.map((x) => x.host_id);
    assert.ok(!nu.includes(H.a3.id) && !nu.includes(H.ca.id));
    assert.ok(nuB.length > 0 && nuB.every((x) => x.project.id === pb.id && x.project.name === pb.name));
    const nuA = (await get('/v1/recommendations', annie)).no_usage_data;
    assert.ok(nuA.length > 0 && nuA.every((x) => x.project.id === pa.id && x.project.name === pa.name));
  });

  test("the idle policy's events of the lending name no project: only platform admins' streams carry them", async () => {
    const lending = (e) =>
      e.event === 'recommendation.opened' &&
      e.json.recommendation.action === 'reuse' &&
      e.json.recommendation.target.brief_id === B.bb.id;
    const sAll = streams[2];
    await until(() => sAll.events.some(lending), 20000, 'the lending on the admin stream');
    const ev = sAll.events.find(lending).json;
    assert.equal(ev.project_id, null);
    assert.equal(ev.project, null);
    assert.equal(ev.pool_id, null);
    // the recommendation itself names the lent host's project
    assert.deepEqual(ev.recommendation.project, { id: projA.id, name: projA.name });
    for (const s of [streams[0], streams[1], streams[3]]) assert.ok(!s.events.some(lending));
    // Their own projects' opened recommendations do reach the members.
    await until(
      () => streams[0].events.some((e) => e.event === 'recommendation.opened' && e.json.host_id === H.b1.id),
      20000,
      "b1's stop on B's stream",
    );
  });
});

describe('budgets', () => {
  test("spend crossing 50, 80 and 100 % of A's budget: each threshold's event and webhook delivery happen exactly once across two replicas", async () => {
    const [sB, sA, sAll] = streams;
    const ra = receivers[0];
    const rb = receivers[1];
    const atA = () => sA.events.filter((e) => e.event === 'budget.threshold');
    const steps = [
      [60, '50'],
      [25, '50,80'],
      [20, '50,80,100'],
    ];
    for (const [gb, want] of steps) {
      if (want.endsWith('100')) {
        // Fresh idle evidence for the stop that exhaustion brings (samples of the last 30 min).
        for (const h of [H.a1, H.a2, H.b1]) await idle(h);
      }
      await spend(gb);
      await until(() => thresholdEvents(projA) === want, 20000, `thresholds ${want}`);
      await sleep(3000); // both replicas run the pass about three more times
      assert.equal(thresholdEvents(projA), want);
    }
    // Exactly once on A's stream, A's webhook and the admin's stream; never on B's.
    await until(
      () => atA().length >= 3 && ra.requests.filter((x) => x.body.includes('budget.threshold')).length >= 3,
      20000,
      'deliveries',
    );
    await sleep(1500);
    assert.deepEqual(
      atA().map((e) => e.json.threshold_pct),
      [50, 80, 100],
    );
    assert.deepEqual(
      sAll.events.filter((e) => e.event === 'budget.threshold').map((e) => e.json.threshold_pct),
      [50, 80, 100],
    );
    assert.ok(!sB.events.some((e) => e.event === 'budget.threshold'));
    const wa = (await get('/v1/webhooks', alice)).items[0];
    const got = ra.requests.filter((x) => x.body.includes('"budget.threshold"')).map((x) => JSON.parse(x.body).data);
    assert.deepEqual(
      got.map((d) => d.threshold_pct),
      [50, 80, 100],
    );
    assert.equal(new Set(ra.requests.map((x) => x.headers['webhook-id'])).size, ra.requests.length);
    assert.ok(wa.last_event_id > 0);
    assert.ok(!rb.requests.some((x) => x.body.includes('budget.threshold')));
    // The figures of each event: the spend when it was crossed ($60, $85, $105 of $100).
    const e100 = atA()[2].json;
    assert.deepEqual(e100.project, { id: projA.id, name: projA.name });
    assert.equal(e100.budget, 100);
    assert.equal(e100.spend, 105);
    assert.match(e100.month, /^\d{4}-\d{2}-01$/);
    assert.ok(e100.forecast >= 105);
    assert.deepEqual(
      atA().map((e) => e.json.spend),
      [60, 85, 105],
    );
    // One row per threshold; the project shows its usage; B crossed nothing.
    assert.equal(psql(db(), `SELECT count(*) FROM budget_alerts WHERE project_id = '${projA.id}'`), '3');
    const usage = (await get(`/v1/projects/${projA.id}`, annie)).usage;
    assert.equal(usage.month_to_date, 105);
    assert.equal(usage.exhausted, true);
    assert.equal(usage.budget_used_pct, 105);
    assert.equal(thresholdEvents(projB), '');
    assert.equal((await get(`/v1/projects/${projB.id}`, bert)).usage.exhausted, false);
  });

  test("stop_idle: once A's budget is exhausted the idle policy stops A's idle host, with the evidence; not B's, not one with running work", async () => {
    const stops = (h) =>
      psql(
        db(),
        `SELECT coalesce(string_agg(params->>'reason', '|'), '') FROM jobs WHERE host_id = '${h.id}' AND kind = 'stop'`,
      );
    const reason = await until(() => stops(H.a1), 20000, "a1's stop");
    assert.match(
      reason,
      new RegExp(`project ${projA.name}'s monthly budget is exhausted \\(spend 105\\.00 of 100\\.00`),
    );
    assert.match(reason, /idle for \d+ s \(pool idle_stop_after_seconds 1800\); GPU utilization at most 1%/);
    const audit = (await get(`/v1/audit-events?action=host.stop&resource_id=${H.a1.id}`, alice)).items;
    assert.equal(audit.length, 1);
    assert.equal(audit[0].principal, 'system:idle-policy');
    assert.equal(audit[0].project.id, projA.id);
    await sleep(3000); // more passes of the idle policy on both replicas
    assert.equal(stops(H.b1), '', "B's idle host is not stopped: B is not exhausted and its pool has no auto_stop");
    assert.equal(stops(H.a2), '', 'a host with running work is never stopped');
    assert.equal(stops(H.a1).split('|').length, 1);
  });
});
