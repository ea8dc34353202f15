'use strict';
// Scoped reporter tokens (issue 15, part 2) with the server's own HS256 tokens:
// `gpufleetd token --role reporter --pool NAME|ID --host NAME|ID` (repeatable) mints a
// token with `pools`/`hosts` claims; a work-report batch naming any host outside the
// scope is refused whole (403 host_out_of_scope naming the host; nothing stored,
// audited); an unscoped reporter token is refused (403 reporter_scope_required) unless
// the server runs with GPUFLEET_ALLOW_UNSCOPED_REPORTERS=1. Operators are not scoped.
// (Scopes from an identity provider's role map: oidc.test.js.)

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, runBin, signJwt, decodeJwt, nowSec } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

let srv;
let client;
let admin;
let operator;
const pools = {};
const hosts = {};

function rec(host, h, overrides = {}) {
  const start = Date.parse('2025-04-01T00:00:00Z') + h * 3600e3;
  return {
    host_id: host.id,
    window_start: new Date(start).toISOString(),
    window_end: new Date(start + 3600e3).toISOString(),
    unit: 'tokens',
    completed: 100,
    failed: 1,
    retried: 0,
    busy_seconds: 600,
    ...overrides,
  };
}
const post = (token, records) => client.request('POST', '/v1/work-reports', { token, body: { records } });

async function stored(host) {
  return expectStatus(
    await client.request('GET', `/v1/work-reports?host_id=${host.id}&limit=500`, { token: admin }),
    200,
  ).items;
}

before(async () => {
  srv = await startServer({
    name: 'reporter-scope',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pools.a = await fleet.createPool(client, admin, { name: `scope a ${fleet.uniq()}` }); // a name with spaces
  pools.b = await fleet.createPool(client, admin);
  pools.c = await fleet.createPool(client, admin);
  const mk = (n, pool) =>
    fleet.createHost(client, operator, {
      name: `scope-${n}-${fleet.uniq()}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  hosts.a1 = await mk('a1', pools.a);
  hosts.a2 = await mk('a2', pools.a);
  hosts.b1 = await mk('b1', pools.b);
  hosts.c1 = await mk('c1', pools.c);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('minting', () => {
  test('--pool and --host go into pools and hosts claims, repeatable', () => {
    const t = srv.token('reporter', { args: ['--pool', pools.a.name, '--pool', pools.b.id, '--host', hosts.c1.name] });
    const c = decodeJwt(t).claims;
    assert.equal(c.role, 'reporter');
    assert.deepEqual(c.pools, [pools.a.name, pools.b.id]);
    assert.deepEqual(c.hosts, [hosts.c1.name]);
    const only = decodeJwt(srv.token('reporter', { args: ['--host', hosts.c1.id] })).claims;
    assert.equal(only.pools, undefined);
    assert.deepEqual(only.hosts, [hosts.c1.id]);
    assert.equal(decodeJwt(srv.token('reporter')).claims.pools, undefined);
  });

  test('--pool on another role, or an empty name, is refused', () => {
    for (const args of [
      ['--role', 'operator', '--pool', 'x'],
      ['--role', 'admin', '--host', 'x'],
      ['--role', 'reporter', '--pool', ''],
    ]) {
      const r = runBin(['token', '--sub', 'x', ...args], srv.env);
      assert.notEqual(r.status, 0, args.join(' '));
      assert.match(r.stderr, /--pool|--host/);
    }
  });
});

describe('a scoped reporter', () => {
  test('pool by name (with spaces): in-scope batches are stored', async () => {
    const t = srv.token('reporter', { sub: 'rep-pool-a', args: ['--pool', pools.a.name] });
    assert.equal(expectStatus(await post(t, [rec(hosts.a1, 0), rec(hosts.a2, 0)]), 201).accepted, 2);
    assert.equal((await stored(hosts.a1))[0].reported_by, 'rep-pool-a');
  });

  test('a batch with one host outside: 403 naming the first such host; nothing of it stored; audited', async () => {
    const t = srv.token('reporter', { sub: 'rep-pool-a', args: ['--pool', pools.a.name] });
    const before = (await stored(hosts.a1)).length;
    const p = expectProblem(
      await post(t, [rec(hosts.a1, 1), rec(hosts.a2, 1), rec(hosts.b1, 1)]),
      403,
      'host_out_of_scope',
      'records[2].host_id',
    );
    assert.ok(p.detail.includes(hosts.b1.id), p.detail);
    assert.match(p.detail, /nothing was stored/);
    assert.equal((await stored(hosts.a1)).length, before);
    assert.equal((await stored(hosts.b1)).length, 0);
    // Several outside: the count is given.
    const q = expectProblem(
      await post(t, [rec(hosts.c1, 1), rec(hosts.a1, 1), rec(hosts.b1, 1)]),
      403,
      'host_out_of_scope',
      'records[0].host_id',
    );
    assert.match(q.detail, /2 of 3 records/);
    const audit = expectStatus(
      await client.request('GET', '/v1/audit-events?action=work_report.denied&principal=rep-pool-a', { token: admin }),
      200,
    );
    assert.equal(audit.items.length, 2);
    assert.ok(audit.items.every((e) => e.status === 403 && e.role === 'reporter'));
  });

  test('pool by id (any case), host by name and by id', async () => {
    const byId = srv.token('reporter', { args: ['--pool', pools.b.id.toUpperCase()] });
    expectStatus(await post(byId, [rec(hosts.b1, 2)]), 201);
    expectProblem(await post(byId, [rec(hosts.a1, 2)]), 403, 'host_out_of_scope');
    const byName = srv.token('reporter', { args: ['--host', hosts.c1.name] });
    expectStatus(await post(byName, [rec(hosts.c1, 2)]), 201);
    expectProblem(await post(byName, [rec(hosts.b1, 3)]), 403, 'host_out_of_scope');
    const mixed = srv.token('reporter', { args: ['--pool', pools.b.name, '--host', hosts.c1.id] });
    expectStatus(await post(mixed, [rec(hosts.b1, 4), rec(hosts.c1, 4)]), 201);
    expectProblem(
      await post(mixed, [rec(hosts.b1, 5), rec(hosts.a1, 5)]),
      403,
      'host_out_of_scope',
      'records[1].host_id',
    );
  });

  test('an unknown host is still 400 invalid_field (the scope does not hide the usual answer)', async () => {
    const t = srv.token('reporter', { args: ['--pool', pools.a.name] });
    expectProblem(
      await post(t, [rec({ id: '00000000-0000-4000-8000-000000000000' }, 6)]),
      400,
      'invalid_field',
      'records[0].host_id',
    );
  });

  test('a pool that does not exist, and an empty pools claim, scope nothing', async () => {
    const none = srv.token('reporter', { args: ['--pool', 'no-such-pool'] });
    expectProblem(await post(none, [rec(hosts.a1, 7)]), 403, 'host_out_of_scope');
    // pools: [] (hand-made with the server's secret): scoped, to nothing.
    const base = decodeJwt(none).claims;
    const empty = signJwt({
      alg: 'HS256',
      key: srv.jwtSecret(),
      claims: { ...base, pools: [], iat: nowSec(), exp: nowSec() + 600 },
    });
    expectProblem(await post(empty, [rec(hosts.a1, 7)]), 403, 'host_out_of_scope');
  });

  test('a malformed pools or hosts claim: 401 invalid_token', async () => {
    const base = decodeJwt(srv.token('reporter', { args: ['--pool', 'x'] })).claims;
    for (const bad of [
      { pools: 'x' },
      { pools: [1] },
      { hosts: [''] },
      { hosts: {} },
      { pools: null },
      { pools: Array.from({ length: 257 }, (_, i) => `p${i}`) },
    ]) {
      const t = signJwt({
        alg: 'HS256',
        key: srv.jwtSecret(),
        claims: { ...base, ...bad, iat: nowSec(), exp: nowSec() + 600 },
      });
      expectProblem(await post(t, [rec(hosts.a1, 8)]), 401, 'invalid_token');
    }
  });

  test('operators and admins are not scoped (pools claims on them are ignored)', async () => {
    expectStatus(await post(operator, [rec(hosts.a1, 9), rec(hosts.b1, 9), rec(hosts.c1, 9)]), 201);
    const base = decodeJwt(admin).claims;
    const t = signJwt({
      alg: 'HS256',
      key: srv.jwtSecret(),
      claims: { ...base, pools: ['no-such-pool'], iat: nowSec(), exp: nowSec() + 600 },
    });
    expectStatus(await post(t, [rec(hosts.a1, 10)]), 201);
  });
});

describe('unscoped reporter tokens', () => {
  test('are refused by default: 403 reporter_scope_required, nothing stored, audited', async () => {
    const t = srv.token('reporter', { sub: 'rep-unscoped' });
    const p = expectProblem(await post(t, [rec(hosts.a1, 11)]), 403, 'reporter_scope_required');
    assert.match(p.detail, /--pool/);
    assert.match(p.detail, /GPUFLEET_ALLOW_UNSCOPED_REPORTERS=1/);
    assert.equal((await stored(hosts.a1)).filter((r) => r.window_start.startsWith('2025-04-01T11')).length, 0);
    const audit = expectStatus(
      await client.request('GET', '/v1/audit-events?action=work_report.denied&principal=rep-unscoped', {
        token: admin,
      }),
      200,
    );
    assert.equal(audit.items.length, 1);
    // They still read nothing.
    expectProblem(await client.request('GET', '/v1/work-reports', { token: t }), 403, 'insufficient_role');
  });

  test('are accepted with GPUFLEET_ALLOW_UNSCOPED_REPORTERS=1 (and scoped ones stay scoped)', async () => {
    const s = await startServer({
      name: 'reporter-unscoped',
      env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8', GPUFLEET_ALLOW_UNSCOPED_REPORTERS: '1' },
      databaseUrl: srv.database.url, // the same database and schema
      migrate: false,
      secrets: srv.secrets,
    });
    try {
      const c = api(s);
      const t = s.token('reporter', { sub: 'rep-legacy' });
      expectStatus(
        await c.request('POST', '/v1/work-reports', {
          token: t,
          body: { records: [rec(hosts.a1, 12), rec(hosts.b1, 12)] },
        }),
        201,
      );
      const scoped = s.token('reporter', { args: ['--pool', pools.a.name] });
      expectProblem(
        await c.request('POST', '/v1/work-reports', { token: scoped, body: { records: [rec(hosts.b1, 13)] } }),
        403,
        'host_out_of_scope',
      );
    } finally {
      await s.stop({ dropDatabase: false });
    }
  });
});
