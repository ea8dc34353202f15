'use strict';
// The health monitor's events on the live stream (issue 13, item 6): gpu.event (a GPU event
// row opened) and host.health (a host's health summary changed). Samples are stored the way
// the monitor stores them, by monitor_store(host, document) through psql (GPUFLEET_WORKERS=0:
// no monitor runs), and missed samples the way db_mon_missed records them; a real SSE client
// reads GET /v1/events, and every event's data is checked against the spec's Event schema.
// Covered: unknown → ok on the first sample, nothing on repeated samples, one gpu.event per
// new or re-opened row (never for a repeat, in one document or across samples), degraded
// (a record event seen in the last hour, a missed sample; ok once it is an hour old),
// critical (an isolating event, a missing GPU), unreachable (with the monitor's reason),
// nothing from a rolled-back sample, bounded host text, HostHealth.monitor.state, and the
// type filters of streams and webhooks.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql } = require('./lib/server');
const { api, validateResponse, validateEvent } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const { openStream } = require('./lib/sse');
const fleet = require('./lib/fleet');

const GPU = [0, 1, 2, 3].map((i) => ({
  uuid: `GPU-7f3a${i}c2e-1b4d-4e8a-9c0f-3d5e6a7b8c9${i}`,
  pci_bus_id: `00000000:${['18', '2A', '3A', '5D'][i]}:00.0`,
  index: i,
  name: 'NVIDIA H100 80GB HBM3',
  util_gpu: 90 + i,
  util_mem: 40,
  mem_used_mib: 61000,
  mem_total_mib: 81559,
  temp_c: 60 + i,
  power_w: 512.5,
  clock_event_reasons: 0,
  ecc_uncorrected_volatile: 0,
  retired_pages_pending: null,
  remapped_rows_pending: false,
  remapped_rows_failure: false,
}));
const XID13 = {
  kind: 'xid',
  code: 13,
  category: 'application',
  policy: 'record',
  pci_bus_id: GPU[1].pci_bus_id,
  raw: '[ 812.4] NVRM: Xid (PCI:0000:2a:00): 13, Graphics Exception',
  message: 'Xid 13: Graphics Engine Exception',
};
const XID79 = {
  kind: 'xid',
  code: 79,
  category: 'hardware',
  policy: 'isolate',
  pci_bus_id: GPU[2].pci_bus_id,
  raw: '[ 4254.1] NVRM: Xid (PCI:0000:3a:00): 79, GPU has fallen off the bus.',
  message: 'Xid 79: GPU has fallen off the bus.',
};

let srv;
let client;
let admin;
let operator;
let viewer;
let pool;
let host;
let other; // a second host of the pool, never sampled
let s; // the stream of host's health events
let seen = 0; // events of s already checked
let t0;
let minute = 0;

// psql over the harness's kept connection (the text is one query, its statements one
// transaction); throws with psql's error on a failure
const sql = (text) => psql(srv.database.url, text);
const lit = (doc) => `$doc$${JSON.stringify(doc)}$doc$`;
/** One sample a minute after the previous one, in its own transaction. */
function sample(gpus, events = [], hostId = host.id) {
  minute++;
  return JSON.parse(
    sql(
      `SELECT monitor_store('${hostId}', ${lit({ at: new Date(t0 + minute * 60_000).toISOString(), gpus, events })}::jsonb)`,
    ),
  );
}
/** What db_mon_missed writes for a missed sample. */
function missed(n, reason) {
  sql(`UPDATE host_monitor SET missed = ${n}, miss_reason = left($r$${reason}$r$, 256) WHERE host_id = '${host.id}'`);
}

/** The next `n` events of the stream, and nothing else so far. */
async function next(n, what) {
  await s.waitFor((evs) => evs.length >= seen + n, 10_000, what);
  const got = s.events.slice(seen, seen + n);
  seen += n;
  return got;
}
/** The stream holds no event beyond those checked (after a marker event proves delivery). */
async function nothingMore(what) {
  // A host.updated event of the same host is the marker: events are delivered in id order,
  // so anything a previous transaction emitted would arrive before it.
  const marker = await client.request('PATCH', `/v1/hosts/${host.id}`, {
    token: operator,
    body: { labels: { probe: String(seen) } },
  });
  expectStatus(marker, 200);
  await s.waitFor((evs) => evs.slice(seen).some((e) => e.event === 'host.updated'), 10_000, `marker after ${what}`);
  const extra = s.events.slice(seen).filter((e) => e.event !== 'host.updated');
  assert.deepEqual(
    extra.map((e) => [e.event, e.json.to || e.json.code]),
    [],
    `no event expected after ${what}`,
  );
  seen = s.events.length;
}
const health = (e) => [e.event, e.json.from, e.json.to];

before(async () => {
  srv = await startServer({
    name: 'healthev',
    env: {
      GPUFLEET_WORKERS: '0',
      GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
      GPUFLEET_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pool = await fleet.createPool(client, admin, { gpu_model: 'h100_sxm', gpu_count: 4 });
  const mk = (name) =>
    fleet.createHost(client, operator, {
      name,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  host = await mk(`gpu-h100-${process.pid}-a`);
  other = await mk(`gpu-h100-${process.pid}-b`);
  t0 = Date.now() - 60 * 60_000;
  s = await openStream(srv.url, {
    token: viewer,
    query: `?host_id=${host.id}&types=gpu.event,host.health,host.updated`,
    validate: validateEvent,
  });
  validateResponse('GET', `/v1/events?host_id=${host.id}`, { status: s.status, headers: s.headers, text: s.text });
  assert.equal(s.status, 200);
});

after(async () => {
  if (s) s.close();
  if (srv) await srv.stop();
});

describe('host.health and gpu.event', () => {
  test('the first sample: unknown → ok, no gpu.event; the same sample again: nothing', async () => {
    sample(GPU);
    const [e] = await next(1, 'unknown → ok');
    assert.deepEqual(health(e), ['host.health', 'unknown', 'ok']);
    assert.equal(e.json.host_id, host.id);
    assert.equal(e.json.pool_id, pool.id);
    assert.equal(e.json.host_name, host.name);
    assert.equal(e.json.reason, 'the last sample shows no open event');
    assert.equal(e.json.last_sample_at, new Date(t0 + minute * 60_000).toISOString().replace('Z', '000Z'));
    assert.equal(e.json.missed, 0);
    sample(GPU);
    sample(GPU);
    await nothingMore('two unchanged samples');
    const h = expectStatus(await client.request('GET', `/v1/hosts/${host.id}/health`, { token: viewer }), 200);
    assert.equal(h.monitor.state, 'ok');
  });

  test('a record event: one gpu.event with its GPU, and ok → degraded naming it; a repeat: nothing', async () => {
    const out = sample(GPU, [XID13]);
    const [g, hh] = await next(2, 'Xid 13');
    assert.equal(g.event, 'gpu.event');
    assert.deepEqual(
      { ...g.json, id: undefined, at: undefined },
      {
        id: undefined,
        at: undefined,
        type: 'gpu.event',
        pool_id: pool.id,
        host_id: host.id,
        project_id: '00000000-0000-4000-8000-000000000001', // the host's project: default
        project: { id: '00000000-0000-4000-8000-000000000001', name: 'default' },
        gpu_event_id: out.events[0].id,
        host_name: host.name,
        gpu_uuid: GPU[1].uuid,
        gpu_index: 1,
        pci_bus_id: GPU[1].pci_bus_id,
        kind: 'xid',
        code: 13,
        category: 'application',
        policy: 'record',
        message: 'Xid 13: Graphics Engine Exception',
        first_seen: new Date(t0 + minute * 60_000).toISOString().replace('Z', '000Z'),
      },
    );
    assert.deepEqual(health(hh), ['host.health', 'ok', 'degraded']);
    assert.equal(
      hh.json.reason,
      `1 event in the last hour, the latest Xid 13 on ${GPU[1].uuid}: Xid 13: Graphics Engine Exception`,
    );
    assert.ok(g.id < hh.id, 'the event before the health it caused');
    sample(GPU, [XID13]);
    sample(GPU, [XID13, XID13]);
    await nothingMore('the same Xid 13 three more times');
    assert.equal(psql(srv.database.url, `SELECT count FROM gpu_events WHERE id = ${out.events[0].id}`), '4');
  });

  test('an isolating event: gpu.event and degraded → critical; repeated in one document: one gpu.event', async () => {
    const out = sample(GPU, [XID79, XID79, XID13]);
    const [g, hh] = await next(2, 'Xid 79');
    assert.equal(g.event, 'gpu.event');
    assert.equal(g.json.gpu_event_id, out.events.find((e) => e.code === 79).id);
    assert.equal(g.json.policy, 'isolate');
    assert.equal(g.json.gpu_index, 2);
    assert.equal(g.json.gpu_uuid, GPU[2].uuid);
    assert.deepEqual(health(hh), ['host.health', 'degraded', 'critical']);
    assert.equal(
      hh.json.reason,
      `1 open isolating event, the latest Xid 79 on ${GPU[2].uuid}: Xid 79: GPU has fallen off the bus.`,
    );
    sample(GPU, [XID79]);
    await nothingMore('Xid 79 again');
    const h = expectStatus(await client.request('GET', `/v1/hosts/${host.id}/health`, { token: viewer }), 200);
    assert.equal(h.monitor.state, 'critical');
  });

  test('events closed (the host returned to service): critical → ok; the same Xid again re-opens: a new gpu.event', async () => {
    sql(`SELECT monitor_close_events('${host.id}')`);
    const [hh] = await next(1, 'closed');
    assert.deepEqual(health(hh), ['host.health', 'critical', 'ok']);
    const out = sample(GPU, [XID79]);
    const [g, h2] = await next(2, 'Xid 79 re-opened');
    assert.equal(g.event, 'gpu.event');
    assert.equal(g.json.gpu_event_id, out.events[0].id);
    assert.equal(out.events[0].new, true);
    assert.deepEqual(health(h2), ['host.health', 'ok', 'critical']);
    assert.equal(
      psql(srv.database.url, `SELECT count(*) FROM gpu_events WHERE host_id = '${host.id}' AND code = 79`),
      '2',
    );
    sql(`SELECT monitor_close_events('${host.id}')`);
    assert.deepEqual(health((await next(1, 'closed again'))[0]), ['host.health', 'critical', 'ok']);
  });

  test('a GPU missing from the inventory: critical; listed again: ok', async () => {
    sample(GPU.slice(0, 3));
    const [hh] = await next(1, 'missing GPU');
    assert.deepEqual(health(hh), ['host.health', 'ok', 'critical']);
    assert.equal(hh.json.reason, '1 GPU missing from the inventory');
    sample(GPU);
    assert.deepEqual(health((await next(1, 'GPU back'))[0]), ['host.health', 'critical', 'ok']);
  });

  test("missed samples: degraded with the monitor's reason, unreachable at unreachable_after, ok when samples resume", async () => {
    missed(1, 'ssh: connect to 127.0.0.1:2222: Connection refused');
    const [a] = await next(1, 'one missed');
    assert.deepEqual(health(a), ['host.health', 'ok', 'degraded']);
    assert.equal(
      a.json.reason,
      '1 sample missed (unreachable after 3): ssh: connect to 127.0.0.1:2222: Connection refused',
    );
    assert.equal(a.json.missed, 1);
    missed(2, 'ssh: connect to 127.0.0.1:2222: Connection refused');
    await nothingMore('a second miss');
    missed(3, 'ssh: timed out after 20 s');
    const [b] = await next(1, 'unreachable');
    assert.deepEqual(health(b), ['host.health', 'degraded', 'unreachable']);
    assert.equal(b.json.reason, '3 samples missed in a row: ssh: timed out after 20 s');
    assert.equal(b.json.missed, 3);
    const h = expectStatus(await client.request('GET', `/v1/hosts/${host.id}/health`, { token: viewer }), 200);
    assert.equal(h.monitor.state, 'unreachable');
    missed(4, 'ssh: timed out after 20 s');
    await nothingMore('a fourth miss');
    sample(GPU);
    assert.deepEqual(health((await next(1, 'back'))[0]), ['host.health', 'unreachable', 'ok']);
  });

  test('a rolled-back sample emits nothing', async () => {
    const doc = { at: new Date(t0 + ++minute * 60_000).toISOString(), gpus: GPU, events: [XID79] };
    sql(`BEGIN; SELECT monitor_store('${host.id}', ${lit(doc)}::jsonb); ROLLBACK;`);
    await nothingMore('a rolled-back sample');
    assert.equal(
      psql(srv.database.url, `SELECT count(*) FROM gpu_events WHERE host_id = '${host.id}' AND closed_at IS NULL`),
      '0',
    );
  });

  test('host text is bounded and stays literal; a host without a sample has no health event', async () => {
    const long = `<img src=x onerror=alert(1)> \u00e9\u2603 ${'y'.repeat(3000)}`;
    sample(GPU, [{ ...XID13, code: 31, message: long }]);
    const [g] = await next(2, 'a long message').then((evs) => evs.filter((e) => e.event === 'gpu.event'));
    assert.equal(g.json.message, long.slice(0, 1024));
    assert.equal(g.json.code, 31);
    // The other host: a state change, no sample: never a host.health event.
    const o = await openStream(srv.url, { token: viewer, query: `?host_id=${other.id}`, validate: validateEvent });
    try {
      sql(`SELECT host_transition('${other.id}', 'drain', 'draining', 'test', NULL, 'test', NULL)`);
      await o.waitFor((evs) => evs.some((e) => e.event === 'host.state'), 10_000, 'host.state of the other host');
      await client.request('PATCH', `/v1/hosts/${other.id}`, { token: operator, body: { labels: { probe: 'x' } } });
      await o.waitFor((evs) => evs.some((e) => e.event === 'host.updated'), 10_000, 'marker');
      assert.deepEqual(
        o.events.filter((e) => e.event === 'host.health'),
        [],
      );
    } finally {
      o.close();
    }
    assert.equal(psql(srv.database.url, `SELECT count(*) FROM host_monitor WHERE host_id = '${other.id}'`), '0');
  });
});

describe('the hour of a record event', () => {
  test('record events last seen over an hour ago: degraded → ok at the next sample, saying so', async () => {
    assert.equal(
      expectStatus(await client.request('GET', `/v1/hosts/${host.id}/health`, { token: viewer }), 200).monitor.state,
      'degraded',
    );
    sql(
      `UPDATE gpu_events SET first_seen = first_seen - interval '2 hours', last_seen = last_seen - interval '2 hours' WHERE host_id = '${host.id}' AND closed_at IS NULL`,
    );
    await nothingMore('events aged (no sample, no evaluation)');
    sample(GPU);
    const [e] = await next(1, 'aged out');
    assert.deepEqual(health(e), ['host.health', 'degraded', 'ok']);
    assert.equal(e.json.reason, '1 open event, none seen in the last hour');
  });
});

describe('type filters', () => {
  test('streams select the new types; a misspelt one is a 400 naming types', async () => {
    const f = await openStream(srv.url, { token: viewer, query: '?types=gpu.event', validate: validateEvent });
    try {
      assert.equal(f.status, 200);
      sample(GPU, [{ ...XID13, code: 43, message: 'Xid 43: Reset Channel Verif Error' }]);
      await f.waitFor((evs) => evs.length >= 1, 10_000, 'gpu.event');
      assert.deepEqual(
        f.events.map((e) => [e.event, e.json.code]),
        [['gpu.event', 43]],
      );
    } finally {
      f.close();
    }
    for (const q of ['?types=gpu.events', '?types=host.healthy', '?types=host.health,']) {
      const r = await openStream(srv.url, { token: viewer, query: q });
      assert.equal(r.status, 400, q);
      const p = JSON.parse(r.text);
      assert.equal(p.code, 'invalid_parameter', q);
      assert.equal(p.field, 'types', q);
      r.close();
    }
  });

  test('webhooks accept gpu.event and host.health; an unknown type is a 400 naming event_types', async () => {
    const res = await client.request('POST', '/v1/webhooks', {
      token: admin,
      body: { url: 'http://127.0.0.1:9/hooks/health', event_types: ['gpu.event', 'host.health'] },
    });
    const w = expectStatus(res, 201);
    assert.deepEqual(w.event_types, ['gpu.event', 'host.health']);
    expectStatus(await client.request('DELETE', `/v1/webhooks/${w.id}`, { token: admin }), 204);
    expectProblem(
      await client.request('POST', '/v1/webhooks', {
        token: admin,
        body: { url: 'http://127.0.0.1:9/hooks/health', event_types: ['gpu.events'] },
      }),
      400,
      'invalid_field',
      'event_types',
    );
  });
});
