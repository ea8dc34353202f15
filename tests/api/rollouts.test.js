'use strict';
// Stack rollouts, the API side (docs/rollouts.md §2). No workers here (GPUFLEET_WORKERS=0):
// a rollout made through the API stays where the test puts it, and the steps the driver
// would take are written in SQL where a test needs them (the walk itself is
// tests/fleet/rollout.test.js). Covered: every refusal of POST /v1/pools/{id}/rollouts
// (each malformed member, unknown members, roles and force, unknown pool and stack,
// rollout_active, nothing_to_roll_out, driver_mismatch, no_workload, no_baseline and
// force by an admin), the document and its waves, hosts, skipped hosts and cost view
// (every answer is checked against openapi/openapi.yaml by lib/openapi.js), the list
// with its filters and pages, pause/resume/abort and their state errors, the audit
// trail, idempotency, and the rollout / rollout.host events on the stream.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer, psql } = require('./lib/server');
const { api, validateEvent, validateResponse } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const { openStream } = require('./lib/sse');
const fleet = require('./lib/fleet');

let srv, client, admin, operator, viewer, cred;
let oldStack, newStack, otherDriverStack;
const uniq = () => crypto.randomBytes(4).toString('hex');
const sql = (q) => psql(srv.database.url, q);
const DRIVER = '550.127.05';
const WORKLOAD = { command: ['/opt/bench/run'], metric: 'tokens_per_second', min: 100 };

const createPool = (gate) => fleet.createPool(client, admin, gate === undefined ? {} : { gate });

let addr = 1;
// A host of the pool in `ready` on stack (its facts report driver; null: no facts).
async function readyHost(pool, { name = `ro-${uniq()}`, stack = oldStack, driver = DRIVER, ready = true } = {}) {
  const host = await fleet.createHost(client, operator, {
    name,
    address: `127.0.88.${addr++}`,
    port: 22,
    user: 'gpu',
    credential_id: cred.id,
    pool_id: pool.id,
    host_key_sha256: `SHA256:${crypto.randomBytes(32).toString('base64').replace(/=+$/, '')}`,
  });
  if (ready) {
    for (const ev of ['provision_started', 'provision_succeeded', 'gate_started', 'gate_accepted']) {
      sql(`SELECT host_transition('${host.id}', '${ev}', NULL, 'test', NULL, 'worker:test', NULL)`);
    }
  }
  const facts = driver === null ? 'NULL' : `'${JSON.stringify({ driver_version: driver })}'::jsonb`;
  sql(
    `UPDATE hosts SET facts = ${facts}, current_stack_id = ${stack ? `'${stack.id}'` : 'NULL'} WHERE id = '${host.id}'`,
  );
  return host;
}

// A baseline of the pool's workload on stack, measured on host (as an accepted gate
// would record it).
function seedBaseline(pool, host, stack) {
  sql(`INSERT INTO baselines (source, host_id, pool_id, stack_id, image_digest, framework,
         driver_version, gpu_model, gpu_count, workload_hash, metric, value, measured_at)
       SELECT 'gate', '${host.id}', p.id, s.id, s.image_digest, s.framework, s.spec->>'driver_version',
         p.gpu_model, 8, workload_hash((p.spec->'gate'->'workload')::jsonb), 'tokens_per_second', 1000, now()
       FROM pools p, stacks s WHERE p.id = '${pool.id}' AND s.id = '${stack.id}'`);
}

const create = (pool, body, token = operator, headers = {}) =>
  client.request('POST', `/v1/pools/${pool.id}/rollouts`, { token, body, headers });
const control = (id, action, body, token = operator) =>
  client.request('POST', `/v1/rollouts/${id}/${action}`, body === undefined ? { token } : { token, body });
const get = (id, token = viewer) => client.request('GET', `/v1/rollouts/${id}`, { token });
const list = (query = '', token = viewer) => client.request('GET', `/v1/rollouts${query}`, { token });
const audit = (action, id) =>
  sql(`SELECT principal || ' ' || role || ' ' || status || ' ' || coalesce(reason, '-') FROM audit_events
       WHERE action = '${action}' AND resource_id = '${id}' ORDER BY seq`);

before(async () => {
  srv = await startServer({
    name: 'rollouts',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  oldStack = await fleet.createStack(client, operator);
  newStack = await fleet.createStack(client, operator);
  otherDriverStack = await fleet.createStack(client, operator, { driver_version: '550.90.07' });
});

after(async () => {
  if (srv) await srv.stop();
});

describe('POST /v1/pools/{id}/rollouts refuses', () => {
  let pool;
  before(async () => {
    pool = await createPool();
    await readyHost(pool);
  });

  const bad = [
    [{ stack_id: 'not-a-uuid' }, 'stack_id'],
    [{ stack_id: 7 }, 'stack_id'],
    [{ canary: -1 }, 'canary'],
    [{ canary: 101 }, 'canary'],
    [{ canary: 1.5 }, 'canary'],
    [{ canary: '1' }, 'canary'],
    [{ canary: null }, 'canary'],
    [{ max_unavailable: 0 }, 'max_unavailable'],
    [{ max_unavailable: -2 }, 'max_unavailable'],
    [{ max_unavailable: 2.5 }, 'max_unavailable'],
    [{ max_unavailable: '0%' }, 'max_unavailable'],
    [{ max_unavailable: '101%' }, 'max_unavailable'],
    [{ max_unavailable: '05%' }, 'max_unavailable'],
    [{ max_unavailable: '5' }, 'max_unavailable'],
    [{ max_unavailable: '%' }, 'max_unavailable'],
    [{ max_unavailable: '25 %' }, 'max_unavailable'],
    [{ max_unavailable: true }, 'max_unavailable'],
    [{ max_unavailable: null }, 'max_unavailable'],
    [{ min_baseline_ratio: 0 }, 'min_baseline_ratio'],
    [{ min_baseline_ratio: -0.5 }, 'min_baseline_ratio'],
    [{ min_baseline_ratio: 10.01 }, 'min_baseline_ratio'],
    [{ min_baseline_ratio: '0.9' }, 'min_baseline_ratio'],
    [{ soak_seconds: -1 }, 'soak_seconds'],
    [{ soak_seconds: 86401 }, 'soak_seconds'],
    [{ soak_seconds: 30.5 }, 'soak_seconds'],
    [{ pause_after_canary: 'yes' }, 'pause_after_canary'],
    [{ pause_after_canary: 1 }, 'pause_after_canary'],
    [{ force: 'true' }, 'force'],
  ];
  for (const [member, field] of bad) {
    test(`422 invalid_rollout for ${JSON.stringify(member)}`, async () => {
      const res = await create(pool, { stack_id: newStack.id, ...member }, admin);
      expectProblem(res, 422, 'invalid_rollout', field);
    });
  }

  test('400 for an unknown member, a missing stack_id, a body that is not an object', async () => {
    expectProblem(await create(pool, { stack_id: newStack.id, canaries: 2 }), 400, 'unknown_field', 'canaries');
    expectProblem(await create(pool, { canary: 1 }), 400, 'missing_field', 'stack_id');
    expectProblem(await create(pool, [newStack.id]), 400, 'body_not_object');
  });

  test('roles: a viewer may not create; force is for an admin (403 naming force, audited)', async () => {
    expectProblem(await create(pool, { stack_id: newStack.id }, viewer), 403, 'insufficient_role');
    expectProblem(await create(pool, { stack_id: newStack.id, force: true }), 403, 'insufficient_role', 'force');
    assert.match(
      sql(`SELECT count(*) FROM audit_events WHERE action = 'rollout.denied' AND resource_id = '${pool.id}'`),
      /^[1-9]/,
    );
    assert.equal(sql(`SELECT count(*) FROM rollouts WHERE pool_id = '${pool.id}'`), '0');
  });

  test('404 for an unknown pool or stack', async () => {
    expectProblem(
      await create({ id: crypto.randomUUID() }, { stack_id: newStack.id, min_baseline_ratio: null }),
      404,
      'not_found',
    );
    expectProblem(await create({ id: 'nope' }, { stack_id: newStack.id }), 404, 'not_found');
    expectProblem(
      await create(pool, { stack_id: crypto.randomUUID(), min_baseline_ratio: null }),
      404,
      'not_found',
      'stack_id',
    );
  });

  test('409 nothing_to_roll_out when no host is ready on another stack, with skipped', async () => {
    const p = await createPool();
    const busy = await readyHost(p, { name: `ro-a-${uniq()}`, ready: false });
    const there = await readyHost(p, { name: `ro-b-${uniq()}`, stack: newStack });
    const b = expectProblem(
      await create(p, { stack_id: newStack.id, min_baseline_ratio: null }),
      409,
      'nothing_to_roll_out',
    );
    const ids = (b.skipped || []).map((s) => s.host_id).sort();
    assert.deepEqual(ids, [busy.id, there.id].sort());
  });

  test('409 driver_mismatch names the hosts whose driver differs or is unknown; force does not skip it', async () => {
    const p = await createPool();
    await readyHost(p, { name: `ro-a-${uniq()}` });
    const other = await readyHost(p, { name: `ro-b-${uniq()}`, driver: '535.183.01' });
    const none = await readyHost(p, { name: `ro-c-${uniq()}`, driver: null });
    for (const [body, token] of [
      [{ stack_id: newStack.id, min_baseline_ratio: null }, operator],
      [{ stack_id: newStack.id, min_baseline_ratio: null, force: true }, admin],
    ]) {
      const b = expectProblem(await create(p, body, token), 409, 'driver_mismatch');
      assert.deepEqual(b.hosts.map((h) => h.id).sort(), [other.id, none.id].sort());
      const byId = Object.fromEntries(b.hosts.map((h) => [h.id, h]));
      assert.equal(byId[other.id].driver_version, '535.183.01');
      assert.equal(byId[none.id].driver_version ?? null, null);
    }
    // the stack with the hosts' other driver mismatches the rest
    expectProblem(await create(p, { stack_id: otherDriverStack.id, min_baseline_ratio: null }), 409, 'driver_mismatch');
  });

  test('409 no_workload when a ratio is asked for and the pool gate has no workload', async () => {
    const b = expectProblem(await create(pool, { stack_id: newStack.id }), 409, 'no_workload');
    assert.equal(b.field, 'min_baseline_ratio');
    expectProblem(await create(pool, { stack_id: newStack.id, min_baseline_ratio: 0.9 }), 409, 'no_workload');
  });

  test('409 no_baseline without a baseline; an admin may force it; a baseline lets an operator start', async () => {
    const p = await createPool({ workload: WORKLOAD });
    const h = await readyHost(p);
    expectProblem(await create(p, { stack_id: newStack.id }), 409, 'no_baseline');
    expectProblem(await create(p, { stack_id: newStack.id }, admin), 409, 'no_baseline');
    const forced = expectStatus(await create(p, { stack_id: newStack.id, force: true }, admin), 201);
    assert.equal(forced.force, true);
    assert.equal(forced.min_baseline_ratio, 0.95);
    expectStatus(await control(forced.id, 'abort', {}, admin), 200);

    const q = await createPool({ workload: WORKLOAD });
    const g = await readyHost(q);
    seedBaseline(q, g, oldStack);
    const ok = expectStatus(await create(q, { stack_id: newStack.id }), 201);
    assert.equal(ok.force, false);
    assert.deepEqual(
      ok.hosts.map((x) => x.host_id),
      [g.id],
    );
    assert.ok(h);
  });

  test('422 invalid_rollout when canary exceeds the hosts in scope, with in_scope', async () => {
    const p = await createPool();
    await readyHost(p);
    const b = expectProblem(
      await create(p, { stack_id: newStack.id, min_baseline_ratio: null, canary: 3 }),
      422,
      'invalid_rollout',
      'canary',
    );
    assert.equal(b.in_scope, 1);
  });
});

describe('a rollout', () => {
  let pool, hosts, skipped, ro;
  before(async () => {
    pool = await createPool();
    hosts = [];
    for (const n of ['e', 'c', 'a', 'd', 'b']) hosts.push(await readyHost(pool, { name: `ro-${n}-${uniq()}` }));
    skipped = await readyHost(pool, { name: `ro-z-${uniq()}`, ready: false });
  });

  test('201 with Location, waves by name, skipped hosts and the document of GET', async () => {
    const res = await create(pool, {
      stack_id: newStack.id,
      canary: 1,
      max_unavailable: '40%',
      min_baseline_ratio: null,
      soak_seconds: 0,
      pause_after_canary: true,
    });
    ro = expectStatus(res, 201);
    assert.equal(res.headers.get('location'), `/v1/rollouts/${ro.id}`);
    assert.equal(ro.state, 'running');
    assert.equal(ro.pool_id, pool.id);
    assert.equal(ro.stack_id, newStack.id);
    assert.equal(ro.stack_name, newStack.name);
    assert.equal(ro.max_unavailable, '40%');
    assert.equal(ro.max_unavailable_hosts, 2); // 40% of 5, rounded down
    assert.equal(ro.min_baseline_ratio, null);
    assert.equal(ro.pause_after_canary, true);
    assert.equal(ro.soak_seconds, 0);
    assert.equal(ro.current_wave, 0);
    assert.equal(ro.unavailable, 0);
    assert.equal(ro.error, null);
    assert.equal(ro.finished_at, null);
    const byName = [...hosts].sort((x, y) => (x.name < y.name ? -1 : 1));
    assert.deepEqual(
      ro.hosts.map((h) => h.host_id),
      byName.map((h) => h.id),
    );
    assert.deepEqual(
      ro.hosts.map((h) => h.step),
      ['pending', 'pending', 'pending', 'pending', 'pending'],
    );
    assert.deepEqual(
      ro.hosts.map((h) => h.from_stack_id),
      byName.map(() => oldStack.id),
    );
    assert.deepEqual(
      ro.waves.map((w) => w.hosts.length),
      [1, 2, 2],
    );
    assert.deepEqual(
      ro.waves.map((w) => w.canary),
      [true, false, false],
    );
    assert.deepEqual(
      ro.waves.map((w) => w.state),
      ['running', 'pending', 'pending'],
    );
    assert.equal(ro.wave_count, 3);
    assert.deepEqual(ro.waves[0].hosts, [byName[0].id]);
    assert.deepEqual(ro.counts, { hosts: 5, done: 0, in_flight: 0, pending: 5, rolled_back: 0, skipped: 0, failed: 0 });
    assert.deepEqual(
      ro.skipped.map((s) => s.host_id),
      [skipped.id],
    );
    assert.equal(ro.skipped[0].state, 'registered');
    assert.ok(ro.skipped[0].reason.length > 0);
    for (const side of ['before', 'after']) {
      assert.equal(ro.cost[side].currency, 'USD');
      assert.equal(ro.cost[side].cost_per_unit, null); // no work reports
    }
    const again = expectStatus(await get(ro.id), 200);
    delete again.cost;
    delete ro.cost;
    assert.equal(again.id, ro.id);
    assert.deepEqual(again.hosts, ro.hosts);
    assert.match(audit('rollout.create', ro.id), /^\S+ operator 201 -$/);
  });

  test('409 rollout_active while it is active, naming it', async () => {
    const b = expectProblem(await create(pool, { stack_id: otherDriverStack.id, min_baseline_ratio: null }), 409, [
      'rollout_active',
      'driver_mismatch',
    ]);
    if (b.code === 'rollout_active') assert.equal(b.rollout_id, ro.id);
    const c = expectProblem(
      await create(pool, { stack_id: newStack.id, min_baseline_ratio: null }),
      409,
      'rollout_active',
    );
    assert.equal(c.rollout_id, ro.id);
  });

  test('unavailable, counts and wave state follow the host rows', async () => {
    const first = ro.hosts[0].host_id;
    sql(
      `UPDATE rollout_hosts SET step = 'provisioning', started_at = now() WHERE rollout_id = '${ro.id}' AND host_id = '${first}'`,
    );
    let d = expectStatus(await get(ro.id), 200);
    assert.equal(d.unavailable, 1);
    assert.equal(d.counts.in_flight, 1);
    assert.equal(d.counts.pending, 4);
    assert.notEqual(d.waves[0].started_at, null);
    sql(
      `UPDATE rollout_hosts SET step = 'done', finished_at = now() WHERE rollout_id = '${ro.id}' AND host_id = '${first}'`,
    );
    sql(`UPDATE rollouts SET wave_state = 'soaking', soak_until = now() + interval '1 hour' WHERE id = '${ro.id}'`);
    d = expectStatus(await get(ro.id), 200);
    assert.equal(d.unavailable, 0);
    assert.equal(d.counts.done, 1);
    assert.equal(d.waves[0].state, 'soaking');
    assert.notEqual(d.soak_until, null);
    sql(`UPDATE rollouts SET wave_state = 'running', soak_until = NULL, current_wave = 1 WHERE id = '${ro.id}'`);
    d = expectStatus(await get(ro.id), 200);
    assert.deepEqual(
      d.waves.map((w) => w.state),
      ['done', 'running', 'pending'],
    );
  });

  test('GET: 404 for an unknown id or one that is not a UUID; viewers read', async () => {
    expectProblem(await get(crypto.randomUUID()), 404, 'not_found');
    expectProblem(await get('not-a-uuid'), 404, 'not_found');
    expectStatus(await get(ro.id, operator), 200);
  });

  test('pause, resume, abort and their state errors, audited with the reason', async () => {
    expectProblem(await control(ro.id, 'resume'), 409, 'rollout_state_conflict');
    expectProblem(await control(ro.id, 'pause', {}, viewer), 403, 'insufficient_role');
    let d = expectStatus(await control(ro.id, 'pause', { reason: 'canary looks slow' }), 200);
    assert.equal(d.state, 'paused');
    assert.match(audit('rollout.pause', ro.id), /^\S+ operator 200 canary looks slow$/);
    const b = expectProblem(await control(ro.id, 'pause'), 409, 'rollout_state_conflict');
    assert.equal(b.state, 'paused');
    d = expectStatus(await control(ro.id, 'resume'), 200);
    assert.equal(d.state, 'running');
    assert.match(audit('rollout.resume', ro.id), /^\S+ operator 200 -$/);
    d = expectStatus(await control(ro.id, 'abort', { reason: 'wrong image' }, admin), 200);
    assert.ok(['rolling_back', 'rolled_back', 'aborted'].includes(d.state), d.state);
    assert.match(audit('rollout.abort', ro.id), /^\S+ admin 200 wrong image$/);
  });

  test('control bodies and ids are checked', async () => {
    expectProblem(await control(ro.id, 'pause', { reason: 'x', why: 'y' }), 400, 'unknown_field', 'why');
    expectProblem(await control(ro.id, 'pause', { reason: '' }), 400, 'invalid_field', 'reason');
    expectProblem(await control(ro.id, 'pause', { reason: 'a'.repeat(501) }), 400, 'invalid_field', 'reason');
    expectProblem(await control(ro.id, 'pause', { reason: 'line\nbreak' }), 400, 'invalid_field', 'reason');
    expectProblem(await control(ro.id, 'pause', [1]), 400, 'body_not_object');
    const raw = await client.request('POST', `/v1/rollouts/${ro.id}/pause`, {
      token: operator,
      rawBody: '{"reason":',
      contentType: 'application/json',
    });
    expectProblem(raw, 400, 'invalid_json');
    const text = await client.request('POST', `/v1/rollouts/${ro.id}/pause`, {
      token: operator,
      rawBody: 'reason',
      contentType: 'text/plain',
    });
    expectProblem(text, 415, 'unsupported_media_type');
    for (const a of ['pause', 'resume', 'abort']) {
      expectProblem(await control(crypto.randomUUID(), a), 404, 'not_found');
      expectProblem(await control('nope', a), 404, 'not_found');
    }
  });

  test('a terminal rollout refuses every action; the pool takes a new rollout', async () => {
    sql(
      `UPDATE rollouts SET state = 'rolled_back', finished_at = now() WHERE id = '${ro.id}' AND state NOT IN ('rolled_back', 'aborted', 'failed', 'succeeded')`,
    );
    for (const a of ['pause', 'resume', 'abort']) expectProblem(await control(ro.id, a), 409, 'rollout_state_conflict');
    const next = expectStatus(
      await create(pool, { stack_id: newStack.id, min_baseline_ratio: null, canary: 0, max_unavailable: 5 }),
      201,
    );
    assert.deepEqual(
      next.waves.map((w) => w.hosts.length),
      [5],
    );
    assert.deepEqual(
      next.waves.map((w) => w.canary),
      [false],
    );
    expectStatus(await control(next.id, 'abort'), 200);
  });
});

describe('the cost view', () => {
  test('the pool’s cost per completed unit before and after, from work reports, priced as /v1/costs', async () => {
    const p = await createPool(); // 12.5 per hour
    const h = await readyHost(p);
    sql(`UPDATE host_state_history SET at = now() - interval '10 hours' WHERE host_id = '${h.id}'`);
    const r = expectStatus(await create(p, { stack_id: newStack.id, min_baseline_ratio: null }), 201);
    // it began two hours ago: before = [start - 2 h, start), after = [start, now)
    sql(`UPDATE rollouts SET created_at = now() - interval '2 hours' WHERE id = '${r.id}'`);
    const iso = (hoursAgo) => new Date(Math.floor(Date.now() / 1000) * 1000 - hoursAgo * 3600e3).toISOString();
    const rec = (from, to, completed) => ({
      host_id: h.id,
      window_start: iso(from),
      window_end: iso(to),
      unit: 'tokens',
      completed,
      failed: 0,
      retried: 0,
      busy_seconds: 600,
    });
    expectStatus(
      await client.request('POST', '/v1/work-reports', {
        token: operator,
        body: { records: [rec(3, 2.75, 1000), rec(1, 0.75, 4000)] },
      }),
      201,
    );
    const d = expectStatus(await get(r.id), 200);
    const { before, after } = d.cost;
    assert.equal(before.unit, 'tokens');
    assert.equal(before.units, 1000);
    assert.equal(after.unit, 'tokens');
    assert.equal(after.units, 4000);
    // two held hours at 12.5 on each side (a few seconds more: the windows end at the read)
    for (const side of [before, after]) {
      assert.ok(side.cost >= 25 && side.cost < 25.2, JSON.stringify(side));
      assert.ok(Math.abs(side.cost_per_unit - side.cost / side.units) < 1e-9, JSON.stringify(side));
    }
    assert.equal(before.to, d.created_at);
    assert.ok(Date.parse(before.to) - Date.parse(before.from) >= 2 * 3600e3);
    assert.equal(Date.parse(after.from), Date.parse(d.created_at));
  });
});

describe('GET /v1/rollouts', () => {
  let pools, made;
  before(async () => {
    pools = [await createPool(), await createPool()];
    made = [];
    for (const p of pools) {
      await readyHost(p);
      const a = expectStatus(await create(p, { stack_id: newStack.id, min_baseline_ratio: null }), 201);
      sql(`UPDATE rollouts SET state = 'succeeded', finished_at = now() WHERE id = '${a.id}'`);
      const b = expectStatus(await create(p, { stack_id: newStack.id, min_baseline_ratio: null }), 201);
      made.push(a, b);
    }
  });

  test('filters by pool and state (active = running, paused, rolling_back), newest first', async () => {
    const page = expectStatus(await list(`?pool=${pools[0].id}`), 200);
    assert.deepEqual(
      page.items.map((r) => r.id),
      [made[1].id, made[0].id],
    );
    assert.equal(page.next_cursor, null);
    assert.equal(page.items[0].cost, undefined);
    const done = expectStatus(await list(`?pool=${pools[1].id}&state=succeeded`), 200);
    assert.deepEqual(
      done.items.map((r) => r.id),
      [made[2].id],
    );
    const active = expectStatus(await list(`?pool=${pools[1].id}&state=active`), 200);
    assert.deepEqual(
      active.items.map((r) => r.id),
      [made[3].id],
    );
    const all = expectStatus(await list('?state=active&limit=500'), 200);
    for (const id of [made[1].id, made[3].id]) assert.ok(all.items.some((r) => r.id === id));
    assert.ok(all.items.every((r) => ['running', 'paused', 'rolling_back'].includes(r.state)));
  });

  test('pages with a keyset cursor', async () => {
    const seen = [];
    let q = `?pool=${pools[1].id}&limit=1`;
    for (let i = 0; i < 3; i++) {
      const page = expectStatus(await list(q), 200);
      seen.push(...page.items.map((r) => r.id));
      if (page.next_cursor === null) break;
      q = `?pool=${pools[1].id}&limit=1&cursor=${encodeURIComponent(page.next_cursor)}`;
    }
    assert.deepEqual(seen, [made[3].id, made[2].id]);
  });

  test('refuses bad filters and cursors', async () => {
    expectProblem(await list('?state=done'), 400, 'invalid_parameter', 'state');
    expectProblem(await list('?pool=abc'), 400, 'invalid_parameter', 'pool');
    expectProblem(await list('?cursor=zzz'), 400, 'invalid_cursor');
    expectProblem(await list('?colour=red'), 400, 'unknown_parameter');
    expectProblem(await list('', srv.token('reporter')), 403, 'insufficient_role');
  });
});

describe('idempotency and the event stream', () => {
  test('a repeated Idempotency-Key replays the 201; another body is 422', async () => {
    const p = await createPool();
    await readyHost(p);
    const key = `ro-${uniq()}`;
    const body = { stack_id: newStack.id, min_baseline_ratio: null };
    const one = await create(p, body, operator, { 'Idempotency-Key': key });
    const a = expectStatus(one, 201);
    const two = await create(p, body, operator, { 'Idempotency-Key': key });
    assert.equal(expectStatus(two, 201).id, a.id);
    assert.equal(two.headers.get('idempotent-replayed'), 'true');
    expectProblem(
      await create(p, { ...body, canary: 0 }, operator, { 'Idempotency-Key': key }),
      422,
      'idempotency_key_reused',
    );
    assert.equal(sql(`SELECT count(*) FROM rollouts WHERE pool_id = '${p.id}'`), '1');
  });

  test('rollout and rollout.host events when the state, the wave or a step changes', async () => {
    const p = await createPool();
    const h = await readyHost(p);
    const s = await openStream(srv.url, {
      token: viewer,
      query: `?pool_id=${p.id}&types=rollout,rollout.host`,
      validate: validateEvent,
    });
    try {
      validateResponse('GET', `/v1/events?pool_id=${p.id}`, { status: s.status, headers: s.headers, text: s.text });
      const r = expectStatus(await create(p, { stack_id: newStack.id, min_baseline_ratio: null }), 201);
      await s.waitFor(
        (evs) => evs.some((e) => e.event === 'rollout' && e.json.state === 'running'),
        10_000,
        'rollout running',
      );
      expectStatus(await control(r.id, 'pause'), 200);
      await s.waitFor(
        (evs) => evs.some((e) => e.event === 'rollout' && e.json.state === 'paused'),
        10_000,
        'rollout paused',
      );
      sql(`UPDATE rollout_hosts SET step = 'draining', started_at = now() WHERE rollout_id = '${r.id}'`);
      await s.waitFor((evs) => evs.some((e) => e.event === 'rollout.host'), 10_000, 'rollout.host');
      const ev = s.events.find((e) => e.event === 'rollout.host').json;
      assert.equal(ev.rollout_id, r.id);
      assert.equal(ev.host_id, h.id);
      assert.equal(ev.step, 'draining');
      assert.equal(ev.state, 'paused');
      const first = s.events.find((e) => e.event === 'rollout').json;
      assert.equal(first.rollout_id, r.id);
      assert.equal(first.pool_id, p.id);
      assert.equal(first.current_wave, 0);
      assert.deepEqual(s.errors, []);
    } finally {
      s.close();
    }
  });
});
