'use strict';
// Hosts and jobs through the API, without SSH: the server runs with
// GPUFLEET_WORKERS=0, so every job stays queued. Registration and its
// rejections (address policy, strict patterns, injection payloads), list
// filters and pagination, PATCH, DELETE, provision (202 + Location, 409
// host_busy / host_quarantined, Idempotency-Key), cancel, and the audit trail.
// Real provisioning over SSH is in tests/fleet/provision.test.js.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const FP = 'SHA256:uGuZiKLFB1cv6TK4FSkk748vzZ525e0ThqAuUk8l+Bs';
const NIL = '00000000-0000-4000-8000-000000000000';

const INJECTIONS = ['; rm -rf /', '$(id)', '`id`', 'a\nb', "a'b", 'a"b', 'a b', 'a|b', 'a&&b', '../../etc', 'a>b'];

let srv;
let open; // same database, GPUFLEET_SSH_ALLOW_CIDRS=0.0.0.0/0,::/0
let closed; // same database, GPUFLEET_SSH_ALLOW_CIDRS unset
let client;
let admin;
let operator;
let viewer;
let cred;
let poolA; // h100_sxm
let poolB; // l4
let stack;
let key;
let n = 0;

const name = (p = 'h') => `${p}-${process.pid}-${++n}`;
// Without a pinned key a registration must ask for trust on first use in words.
function hostBody(overrides = {}) {
  return {
    name: name(),
    address: '127.0.0.1',
    port: 2222,
    user: 'gpufleet',
    credential_id: cred.id,
    pool_id: poolA.id,
    ...('host_key_sha256' in overrides ? {} : { trust_on_first_use: true }),
    ...overrides,
  };
}
async function register(overrides = {}, token = operator) {
  const res = await client.request('POST', '/v1/hosts', { token, body: hostBody(overrides) });
  return { res, host: res.status === 201 ? res.body : undefined };
}
async function walk(query, limit = 2) {
  const items = [];
  let cursor = null;
  for (let i = 0; i < 100; i++) {
    const sep = query.includes('?') ? '&' : '?';
    const q = `${query}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const page = expectStatus(await client.request('GET', q, { token: viewer }), 200);
    items.push(...page.items);
    cursor = page.next_cursor;
    if (!cursor) return items;
  }
  throw new Error('pagination did not end');
}
async function auditOf(action, resourceId) {
  const q = `/v1/audit-events?action=${action}&resource_id=${resourceId}`;
  return expectStatus(await client.request('GET', q, { token: admin }), 200).items;
}

before(async () => {
  srv = await startServer({
    name: 'hosts',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  key = fleet.sshKey();
  cred = await fleet.createCredential(client, admin, key.text);
  poolA = await fleet.createPool(client, admin, { gpu_model: 'h100_sxm', gpu_count: 8 });
  poolB = await fleet.createPool(client, admin, { gpu_model: 'l4', gpu_count: 1 });
  stack = await fleet.createStack(client, operator);
  open = await startServer({
    name: 'hosts-open',
    databaseUrl: srv.database.url,
    secrets: srv.secrets,
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '0.0.0.0/0,::/0' },
  });
  closed = await startServer({
    name: 'hosts-closed',
    databaseUrl: srv.database.url,
    secrets: srv.secrets,
    env: { GPUFLEET_WORKERS: '0' },
  });
});

after(async () => {
  if (closed) await closed.stop();
  if (open) await open.stop();
  if (srv) await srv.stop();
});

describe('registration', () => {
  let created;

  test('POST /v1/hosts answers 201 with the host and its Location', async () => {
    const body = hostBody({ labels: { rack: 'r1', 'gpufleet.io/team': 'infer' }, host_key_sha256: FP });
    const res = await client.request('POST', '/v1/hosts', { token: operator, body });
    created = expectStatus(res, 201);
    assert.match(created.id, UUID_RE);
    assert.equal(res.headers.get('location'), `/v1/hosts/${created.id}`);
    assert.equal(created.name, body.name);
    assert.equal(created.address, '127.0.0.1');
    assert.equal(created.port, 2222);
    assert.equal(created.user, 'gpufleet');
    assert.equal(created.credential_id, cred.id);
    assert.equal(created.pool_id, poolA.id);
    assert.equal(created.host_key_sha256, FP);
    assert.equal(created.trust_on_first_use, false);
    assert.deepEqual(created.labels, body.labels);
    assert.equal(created.state, 'registered');
    assert.equal(created.facts, null);
    assert.equal(created.current_stack_id, null);
    assert.equal(created.desired_stack_id, null);
    assert.equal(created.last_job, null);
    assert.equal(created.last_seen, null);
    assert.equal(created.created_by, 'test-operator');

    const got = expectStatus(await client.request('GET', `/v1/hosts/${created.id}`, { token: viewer }), 200);
    assert.equal(got.id, created.id);
    assert.equal(got.state_history.length, 1);
    assert.deepEqual(
      {
        from: got.state_history[0].from,
        to: got.state_history[0].to,
        job_id: got.state_history[0].job_id,
        actor: got.state_history[0].actor,
      },
      { from: null, to: 'registered', job_id: null, actor: 'test-operator' },
    );
  });

  test('the 201 answer already shows the registration in state_history', async () => {
    const { res, host } = await register();
    expectStatus(res, 201);
    assert.equal(
      host.state_history.length,
      1,
      `201 body has state_history ${JSON.stringify(host.state_history)}; GET shows the "registered" entry`,
    );
  });

  test('port defaults to 22, labels to {}, host_key_sha256 to null', async () => {
    const body = hostBody();
    delete body.port;
    const h = expectStatus(await client.request('POST', '/v1/hosts', { token: operator, body }), 201);
    assert.equal(h.port, 22);
    assert.deepEqual(h.labels, {});
    assert.equal(h.host_key_sha256, null);
    assert.equal(h.trust_on_first_use, true);
  });

  test('a duplicate name answers 409 already_exists', async () => {
    expectProblem(
      await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ name: created.name }) }),
      409,
      'already_exists',
      'name',
    );
  });

  test('viewer may not register; no token is 401', async () => {
    expectProblem(
      await client.request('POST', '/v1/hosts', { token: viewer, body: hostBody() }),
      403,
      'insufficient_role',
    );
    expectProblem(await client.request('POST', '/v1/hosts', { body: hostBody() }), 401, 'missing_token');
    expectStatus(await client.request('POST', '/v1/hosts', { token: admin, body: hostBody() }), 201);
  });

  test('every required member is required', async () => {
    for (const f of ['name', 'address', 'user', 'credential_id', 'pool_id']) {
      const body = hostBody();
      delete body[f];
      expectProblem(await client.request('POST', '/v1/hosts', { token: operator, body }), 400, 'missing_field', f);
    }
    expectProblem(
      await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ colour: 'red' }) }),
      400,
      'unknown_field',
      'colour',
    );
  });

  test('name and user: strict patterns refuse injection payloads', async () => {
    for (const bad of ['Host', '-a', '.a', 'a'.repeat(64), '', 'a/b', ...INJECTIONS.map((p) => `h${p}`)]) {
      expectProblem(
        await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ name: bad }) }),
        400,
        'invalid_field',
        'name',
      );
    }
    for (const bad of ['Root', '1abc', '-u', 'a'.repeat(33), '', 'u.x', ...INJECTIONS.map((p) => `u${p}`)]) {
      expectProblem(
        await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ user: bad }) }),
        400,
        'invalid_field',
        'user',
      );
    }
    for (const bad of [5, null, true, ['a']]) {
      expectProblem(
        await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ user: bad }) }),
        400,
        'invalid_field',
        'user',
      );
    }
    // the limits themselves are accepted
    expectStatus(
      await client.request('POST', '/v1/hosts', {
        token: operator,
        body: hostBody({ name: `${'a'.repeat(40)}-${process.pid}.x_y`.slice(0, 63), user: `_${'a'.repeat(31)}` }),
      }),
      201,
    );
  });

  test('address: a literal IP only (no names, CIDRs, ports or payloads)', async () => {
    for (const bad of [
      'localhost',
      'example.com',
      '127.0.0.1/32',
      '127.0.0.1:22',
      '127.1',
      '1.2.3',
      '[::1]',
      ' 127.0.0.1',
      '127.0.0.1\n',
      '127.0.0.1;id',
      '$(id)',
      '',
    ]) {
      const res = await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ address: bad }) });
      expectProblem(res, 400, ['invalid_field', 'address_not_allowed'], 'address');
    }
  });

  test('port: an integer 1..65535', async () => {
    for (const bad of [0, 65536, -1, 22.5, '22', null]) {
      expectProblem(
        await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ port: bad }) }),
        400,
        'invalid_field',
        'port',
      );
    }
  });

  test('without host_key_sha256, trust_on_first_use: true is required (400 naming both), and recorded', async () => {
    const bare = hostBody();
    delete bare.trust_on_first_use;
    for (const body of [bare, { ...bare, trust_on_first_use: false }]) {
      const p = expectProblem(
        await client.request('POST', '/v1/hosts', { token: operator, body }),
        400,
        'missing_field',
        'host_key_sha256',
      );
      assert.match(p.detail, /host_key_sha256/);
      assert.match(p.detail, /trust_on_first_use/);
    }
    for (const v of ['yes', 1, null]) {
      expectProblem(
        await client.request('POST', '/v1/hosts', { token: operator, body: { ...bare, trust_on_first_use: v } }),
        400,
        'invalid_field',
        'trust_on_first_use',
      );
    }
    const both = expectProblem(
      await client.request('POST', '/v1/hosts', {
        token: operator,
        body: { ...bare, host_key_sha256: FP, trust_on_first_use: true },
      }),
      400,
      'invalid_field',
      'trust_on_first_use',
    );
    assert.match(both.detail, /not both/);
    assert.equal(
      psql(srv.database.url, `SELECT count(*) FROM hosts WHERE name = '${bare.name}'`),
      '0',
      'a refused registration stored nothing',
    );
    // asked in words: accepted, recorded on the host and in the audit row
    const h = expectStatus(
      await client.request('POST', '/v1/hosts', { token: operator, body: { ...bare, trust_on_first_use: true } }),
      201,
    );
    assert.equal(h.host_key_sha256, null);
    assert.equal(h.trust_on_first_use, true);
    const got = expectStatus(await client.request('GET', `/v1/hosts/${h.id}`, { token: viewer }), 200);
    assert.equal(got.trust_on_first_use, true);
    const [ev] = await auditOf('host.create', h.id);
    assert.deepEqual(ev.after, { host_key_sha256: null, trust_on_first_use: true });
    assert.match(ev.reason, /trust_on_first_use/);
    const pinned = expectStatus(
      await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ host_key_sha256: FP }) }),
      201,
    );
    const [pev] = await auditOf('host.create', pinned.id);
    assert.deepEqual(pev.after, { host_key_sha256: FP, trust_on_first_use: false });
  });

  test('host_key_sha256: SHA256:<43 base64> only', async () => {
    for (const bad of [
      'SHA256:short',
      `sha256:${FP.slice(7)}`,
      `MD5:${FP.slice(7)}`,
      `${FP}=`,
      `SHA256:${FP.slice(7, 49)}=`,
      `SHA256:${FP.slice(7, 44)};id;`,
      `SHA256:${'$'.repeat(43)}`,
      FP.replace('B', '\n'),
    ]) {
      expectProblem(
        await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ host_key_sha256: bad }) }),
        400,
        'invalid_field',
        'host_key_sha256',
      );
    }
  });

  test('labels: an object of ≤ 32 string values ≤ 128 with strict names; values are stored literally', async () => {
    const bads = [
      { '-x': 'a' },
      { 'a b': 'a' },
      { 'a;b': 'a' },
      { '$(id)': 'a' },
      { ['a'.repeat(64)]: 'a' },
      { a: 'x'.repeat(129) },
      { a: 5 },
      { a: null },
      { a: { b: 'c' } },
      Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])),
      ['a'],
      'rack=r1',
    ];
    for (const labels of bads) {
      const res = await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ labels }) });
      const p = expectProblem(res, 400, 'invalid_field');
      assert.match(p.field, /^labels/, `field ${p.field}`);
    }
    const weird = { note: '\'; rm -rf / $(id) `id` "q"', empty: '', ['a'.repeat(63)]: 'x'.repeat(128) };
    const h = expectStatus(
      await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ labels: weird }) }),
      201,
    );
    assert.deepEqual(h.labels, weird);
    const full = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, 'v']));
    expectStatus(await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ labels: full }) }), 201);
  });

  test('an unknown or malformed credential or pool answers 400 invalid_field (credential_id)', async () => {
    expectProblem(
      await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ credential_id: NIL }) }),
      400,
      'invalid_field',
      'credential_id',
    );
    expectProblem(
      await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ pool_id: NIL }) }),
      400,
      'invalid_field',
      'credential_id',
    );
    expectProblem(
      await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ credential_id: 'x' }) }),
      400,
      'invalid_field',
      'credential_id',
    );
    expectProblem(
      await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ pool_id: `${NIL}'` }) }),
      400,
      'invalid_field',
      'pool_id',
    );
  });

  test('the create is in the audit trail as host.create', async () => {
    const evs = await auditOf('host.create', created.id);
    assert.equal(evs.length, 1, JSON.stringify(evs));
    assert.equal(evs[0].resource_type, 'host');
    assert.equal(evs[0].role, 'operator');
    assert.equal(evs[0].status, 201);
  });
});

describe('access log', () => {
  // One raw request: the path bytes go as they are (no client re-encodes them).
  function rawGet(port, pathBytes, requestId) {
    const net = require('node:net');
    return new Promise((resolve, reject) => {
      const sock = net.connect(port, '127.0.0.1');
      let got = '';
      sock.on('error', reject);
      sock.on('data', (d) => {
        got += d.toString('latin1');
      });
      sock.on('close', () => resolve(got));
      sock.on('connect', () => {
        sock.write(
          Buffer.concat([
            Buffer.from('GET ', 'latin1'),
            pathBytes,
            Buffer.from(
              ` HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${viewer}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n`,
              'latin1',
            ),
          ]),
        );
      });
    });
  }
  async function logLine(requestId) {
    const fs = require('node:fs');
    for (let i = 0; i < 50; i++) {
      const line = fs
        .readFileSync(srv.logPath, 'utf8')
        .split('\n')
        .find((l) => l.includes(`"request_id":"${requestId}"`) && l.includes('"msg":"request"'));
      if (line) return JSON.parse(line);
      await new Promise((r) => setTimeout(r, 100));
    }
    return null;
  }

  test('a request whose path is invalid UTF-8 (raw or percent-encoded) is logged with a cleaned path', async () => {
    const cases = [
      // raw bytes: invalid UTF-8, an escape sequence and a DEL in the path
      [
        Buffer.from([...Buffer.from('/v1/hosts/'), 0xff, 0xfe, 0x1b, ...Buffer.from('[2J'), 0x7f]),
        /^\/v1\/hosts\/\uFFFD\uFFFD\\x1b\[2J\\x7f$/,
      ],
      // percent-encoded: MHD decodes %FF and %0A into the path it hands over
      [Buffer.from('/v1/hosts/%FF%C0%AFx%0Ay'), /^\/v1\/hosts\/\uFFFD\uFFFD\uFFFDx\\x0ay$/],
      // long: bounded
      [Buffer.from(`/v1/hosts/${'%FF'.repeat(1500)}`), /^\/v1\/hosts\/(\uFFFD)+\u2026$/],
    ];
    let i = 0;
    for (const [bytes, want] of cases) {
      const rid = `accesslog-${process.pid}-${++i}`;
      const answer = await rawGet(srv.port, bytes, rid);
      assert.match(answer, /^HTTP\/1\.1 [45]\d\d /, answer.slice(0, 200));
      const line = await logLine(rid);
      assert.ok(line, `no access log line for request ${rid} (${bytes.length} path bytes)`);
      assert.match(line.path, want, JSON.stringify(line.path));
      assert.ok(Buffer.byteLength(line.path) <= 1023, `path of ${Buffer.byteLength(line.path)} bytes`);
      assert.ok(
        ![...line.path].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f),
        JSON.stringify(line.path),
      );
      assert.equal(line.method, 'GET');
    }
  });
});

describe('address policy', () => {
  const ALWAYS = [
    '169.254.169.254',
    '169.254.0.1',
    'fd00:ec2::254',
    'fe80::1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '100.100.100.200',
    '168.63.129.16',
    '::',
    '::169.254.169.254',
    '64:ff9b::a9fe:a9fe',
  ];

  test('link-local and metadata addresses are refused even with GPUFLEET_SSH_ALLOW_CIDRS=0.0.0.0/0,::/0', async () => {
    const c = api(open);
    const tok = open.token('operator');
    for (const address of ALWAYS) {
      const res = await c.request('POST', '/v1/hosts', { token: tok, body: hostBody({ address }) });
      expectProblem(res, 400, 'address_not_allowed', 'address');
      assert.ok(!res.body.detail.includes('\n'));
    }
    // the open server does accept an ordinary address
    expectStatus(await c.request('POST', '/v1/hosts', { token: tok, body: hostBody({ address: '10.1.2.3' }) }), 201);
    const v6 = expectStatus(
      await c.request('POST', '/v1/hosts', { token: tok, body: hostBody({ address: '2001:DB8:0:0:0:0:0:10' }) }),
      201,
    );
    assert.equal(v6.address, '2001:db8::10', 'stored in canonical form');
  });

  test('IPv4-mapped IPv6 forms of metadata addresses are refused too', async () => {
    const c = api(open);
    const tok = open.token('operator');
    for (const address of ['::ffff:169.254.169.254', '::ffff:a9fe:a9fe']) {
      const res = await c.request('POST', '/v1/hosts', { token: tok, body: hostBody({ address }) });
      expectProblem(res, 400, 'address_not_allowed', 'address');
    }
  });

  test('6to4, Teredo, local-use NAT64 and IPv4-translated forms are refused even with ::/0 allowed', async () => {
    const c = api(open);
    const tok = open.token('operator');
    for (const address of [
      '2002:a9fe:a9fe::', // 6to4 relay to 169.254.169.254
      '2002:a9fe:a9fe::1',
      '2001:0:a9fe:a9fe::1', // Teredo
      '64:ff9b:1::a9fe:a9fe', // local-use NAT64
      '::ffff:0:a9fe:a9fe', // IPv4-translated 169.254.169.254
      '::ffff:0:a00:1',
    ]) {
      const res = await c.request('POST', '/v1/hosts', { token: tok, body: hostBody({ address }) });
      expectProblem(res, 400, 'address_not_allowed', 'address');
    }
  });

  test('addresses outside GPUFLEET_SSH_ALLOW_CIDRS are refused', async () => {
    for (const address of ['10.0.0.5', '192.168.1.10', '8.8.8.8', '2001:db8::1', '128.0.0.1']) {
      expectProblem(
        await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ address }) }),
        400,
        'address_not_allowed',
        'address',
      );
    }
    expectStatus(
      await client.request('POST', '/v1/hosts', { token: operator, body: hostBody({ address: '127.255.0.9' }) }),
      201,
    );
  });

  test('without GPUFLEET_SSH_ALLOW_CIDRS no address is allowed', async () => {
    const c = api(closed);
    const tok = closed.token('operator');
    for (const address of ['127.0.0.1', '10.0.0.1', '::1']) {
      expectProblem(
        await c.request('POST', '/v1/hosts', { token: tok, body: hostBody({ address }) }),
        400,
        'address_not_allowed',
        'address',
      );
    }
  });
});

describe('list, filters, pagination', () => {
  const mine = [];
  before(async () => {
    for (let i = 0; i < 5; i++) {
      const { res, host } = await register({
        name: name('list'),
        pool_id: i < 3 ? poolA.id : poolB.id,
        labels: { rack: i % 2 ? 'r-odd' : 'r-even', batch: `b${process.pid}` },
      });
      expectStatus(res, 201);
      mine.push(host);
    }
  });

  test('pages of 2 walk every host once, in registration order', async () => {
    const all = await walk('/v1/hosts');
    const ids = all.map((h) => h.id);
    assert.equal(new Set(ids).size, ids.length, 'a host appeared twice');
    const pos = mine.map((h) => ids.indexOf(h.id));
    assert.ok(
      pos.every((p) => p >= 0),
      'a host is missing',
    );
    assert.deepEqual(
      [...pos].sort((a, b) => a - b),
      pos,
      'not in registration order',
    );
    const one = expectStatus(await client.request('GET', '/v1/hosts?limit=500', { token: viewer }), 200);
    assert.equal(one.items.length, all.length);
    assert.equal(one.next_cursor, null);
  });

  test('label=KEY=VALUE', async () => {
    const got = await walk(`/v1/hosts?label=batch%3Db${process.pid}`);
    assert.deepEqual(
      got.map((h) => h.id),
      mine.map((h) => h.id),
    );
    const odd = await walk(`/v1/hosts?label=rack%3Dr-odd&pool_id=${poolB.id}`);
    assert.deepEqual(
      odd.map((h) => h.id),
      [mine[3].id],
    );
    assert.equal((await walk('/v1/hosts?label=rack%3Dnope')).length, 0);
  });

  test("pool_id and gpu_model (the pool's model)", async () => {
    const b = await walk(`/v1/hosts?pool_id=${poolB.id}`);
    assert.deepEqual(
      b.map((h) => h.id),
      [mine[3].id, mine[4].id],
    );
    const l4 = await walk('/v1/hosts?gpu_model=l4');
    assert.deepEqual(
      l4.map((h) => h.id),
      [mine[3].id, mine[4].id],
    );
    const h100 = await walk(`/v1/hosts?gpu_model=h100_sxm&label=batch%3Db${process.pid}`);
    assert.deepEqual(
      h100.map((h) => h.id),
      mine.slice(0, 3).map((h) => h.id),
    );
    assert.equal((await walk('/v1/hosts?gpu_model=rtx_4090')).length, 0);
  });

  test('state and stale', async () => {
    const reg = await walk(`/v1/hosts?state=registered&label=batch%3Db${process.pid}`);
    assert.equal(reg.length, 5);
    assert.equal((await walk(`/v1/hosts?state=ready&label=batch%3Db${process.pid}`)).length, 0);
    assert.equal((await walk(`/v1/hosts?stale=true&label=batch%3Db${process.pid}`)).length, 5, 'never seen is stale');
    assert.equal((await walk(`/v1/hosts?stale=false&label=batch%3Db${process.pid}`)).length, 0);
    psql(srv.database.url, `UPDATE hosts SET last_seen = now() WHERE id = '${mine[0].id}'`);
    assert.deepEqual(
      (await walk(`/v1/hosts?stale=false&label=batch%3Db${process.pid}`)).map((h) => h.id),
      [mine[0].id],
    );
    psql(srv.database.url, `UPDATE hosts SET last_seen = now() - interval '11 minutes' WHERE id = '${mine[0].id}'`);
    assert.equal((await walk(`/v1/hosts?stale=false&label=batch%3Db${process.pid}`)).length, 0);
  });

  test('bad filter values answer 400 invalid_parameter; unknown ones unknown_parameter', async () => {
    for (const [q, field] of [
      ['state=bogus', 'state'],
      ['pool_id=nope', 'pool_id'],
      ['label=novalue', 'label'],
      ['label=%3Dv', 'label'],
      ['label=a%20b%3Dc', 'label'],
      ['gpu_model=H100', 'gpu_model'],
      ['stale=yes', 'stale'],
      ['limit=0', 'limit'],
    ]) {
      expectProblem(await client.request('GET', `/v1/hosts?${q}`, { token: viewer }), 400, 'invalid_parameter', field);
    }
    expectProblem(
      await client.request('GET', '/v1/hosts?colour=red', { token: viewer }),
      400,
      'unknown_parameter',
      'colour',
    );
    expectProblem(await client.request('GET', '/v1/hosts?cursor=bogus', { token: viewer }), 400, 'invalid_cursor');
  });

  test('GET of an unknown or malformed id is 404', async () => {
    expectProblem(await client.request('GET', `/v1/hosts/${NIL}`, { token: viewer }), 404, 'not_found');
    expectProblem(await client.request('GET', '/v1/hosts/not-a-uuid', { token: viewer }), 404, 'not_found');
  });

  test('ETag and 304', async () => {
    const res = await client.request('GET', `/v1/hosts/${mine[1].id}`, { token: viewer });
    const etag = res.headers.get('etag');
    assert.ok(etag);
    const again = await client.request('GET', `/v1/hosts/${mine[1].id}`, {
      token: viewer,
      headers: { 'If-None-Match': etag },
    });
    assert.equal(again.status, 304);
  });
});

describe('PATCH and DELETE', () => {
  let h;
  before(async () => {
    ({ host: h } = await register({ labels: { a: '1', b: '2' } }));
  });

  test('PATCH labels replaces the label set; pool_id moves the host', async () => {
    const res = await client.request('PATCH', `/v1/hosts/${h.id}`, { token: operator, body: { labels: { c: '3' } } });
    const p = expectStatus(res, 200);
    assert.deepEqual(p.labels, { c: '3' });
    assert.equal(p.pool_id, poolA.id);
    const q = expectStatus(
      await client.request('PATCH', `/v1/hosts/${h.id}`, { token: operator, body: { pool_id: poolB.id } }),
      200,
    );
    assert.equal(q.pool_id, poolB.id);
    assert.deepEqual(q.labels, { c: '3' }, 'labels left out are kept');
    const r = expectStatus(await client.request('PATCH', `/v1/hosts/${h.id}`, { token: operator, body: {} }), 200);
    assert.equal(r.pool_id, poolB.id);
    const got = expectStatus(await client.request('GET', `/v1/hosts/${h.id}`, { token: viewer }), 200);
    assert.deepEqual(got.labels, { c: '3' });
    const evs = await auditOf('host.update', h.id);
    assert.equal(evs.length, 3);
  });

  test('PATCH refusals', async () => {
    expectProblem(
      await client.request('PATCH', `/v1/hosts/${h.id}`, { token: operator, body: { pool_id: NIL } }),
      400,
      'invalid_field',
      'pool_id',
    );
    expectProblem(
      await client.request('PATCH', `/v1/hosts/${h.id}`, { token: operator, body: { pool_id: 'x' } }),
      400,
      'invalid_field',
      'pool_id',
    );
    expectProblem(
      await client.request('PATCH', `/v1/hosts/${h.id}`, { token: operator, body: { address: '127.0.0.2' } }),
      400,
      'unknown_field',
      'address',
    );
    const p = expectProblem(
      await client.request('PATCH', `/v1/hosts/${h.id}`, { token: operator, body: { labels: { 'a;b': 'x' } } }),
      400,
      'invalid_field',
    );
    assert.match(p.field, /^labels/);
    expectProblem(
      await client.request('PATCH', `/v1/hosts/${NIL}`, { token: operator, body: { labels: {} } }),
      404,
      'not_found',
    );
    expectProblem(
      await client.request('PATCH', `/v1/hosts/${h.id}`, { token: viewer, body: { labels: {} } }),
      403,
      'insufficient_role',
    );
    expectProblem(
      await client.request('PATCH', `/v1/hosts/${h.id}`, {
        token: operator,
        rawBody: '{"labels":{}}',
        contentType: 'text/plain',
      }),
      415,
      'unsupported_media_type',
    );
  });

  test('DELETE is admin only: 403 for operator, 204 for admin, then 404', async () => {
    expectProblem(await client.request('DELETE', `/v1/hosts/${h.id}`, { token: operator }), 403, 'insufficient_role');
    expectStatus(await client.request('DELETE', `/v1/hosts/${h.id}`, { token: admin }), 204);
    expectProblem(await client.request('GET', `/v1/hosts/${h.id}`, { token: viewer }), 404, 'not_found');
    expectProblem(await client.request('DELETE', `/v1/hosts/${h.id}`, { token: admin }), 404, 'not_found');
    const evs = await auditOf('host.delete', h.id);
    assert.equal(evs.length, 1);
    assert.equal(evs[0].status, 204);
  });

  test('a credential or pool in use by a host cannot be deleted', async () => {
    expectProblem(
      await client.request('DELETE', `/v1/credentials/${cred.id}`, { token: admin }),
      409,
      'credential_in_use',
    );
    expectProblem(await client.request('DELETE', `/v1/pools/${poolA.id}`, { token: admin }), 409, 'pool_in_use');
  });
});

describe('provision and jobs (no worker)', () => {
  let h;
  let job;
  let jobRes;
  before(async () => {
    ({ host: h } = await register());
  });

  test('POST /v1/hosts/{id}/provision answers 202 with the queued job and its Location', async () => {
    jobRes = await client.request('POST', `/v1/hosts/${h.id}/provision`, {
      token: operator,
      body: { stack_id: stack.id },
    });
    job = expectStatus(jobRes, 202);
    assert.equal(jobRes.headers.get('location'), `/v1/jobs/${job.id}`);
    assert.equal(job.kind, 'provision');
    assert.equal(job.host_id, h.id);
    assert.equal(job.stack_id, stack.id);
    assert.equal(job.state, 'queued');
    assert.equal(job.attempt, 0);
    assert.equal(job.max_attempts, 3);
    assert.deepEqual(job.steps, []);
    assert.equal(job.cancel_requested, false);
    assert.equal(job.error_class, null);
    assert.equal(job.started_at, null);
    assert.equal(job.finished_at, null);
    assert.equal(job.created_by, 'test-operator');
    const got = expectStatus(await client.request('GET', `/v1/jobs/${job.id}`, { token: viewer }), 200);
    assert.equal(got.state, 'queued');
    const host = expectStatus(await client.request('GET', `/v1/hosts/${h.id}`, { token: viewer }), 200);
    assert.equal(host.desired_stack_id, stack.id);
    assert.equal(host.current_stack_id, null);
    assert.deepEqual(host.last_job, { id: job.id, kind: 'provision', state: 'queued', error_class: null });
    assert.equal(host.state, 'registered', 'nothing ran yet');
  });

  test('a second provision while one is queued answers 409 host_busy', async () => {
    expectProblem(
      await client.request('POST', `/v1/hosts/${h.id}/provision`, { token: operator, body: { stack_id: stack.id } }),
      409,
      'host_busy',
    );
  });

  test('GET /v1/jobs lists it (without steps) and filters', async () => {
    const byHost = expectStatus(await client.request('GET', `/v1/jobs?host_id=${h.id}`, { token: viewer }), 200);
    assert.deepEqual(
      byHost.items.map((j) => j.id),
      [job.id],
    );
    assert.equal(byHost.items[0].steps, undefined);
    const q = expectStatus(
      await client.request('GET', `/v1/jobs?host_id=${h.id}&state=queued&kind=provision`, { token: viewer }),
      200,
    );
    assert.equal(q.items.length, 1);
    assert.equal(
      expectStatus(await client.request('GET', `/v1/jobs?host_id=${h.id}&state=running`, { token: viewer }), 200).items
        .length,
      0,
    );
    assert.equal(
      expectStatus(await client.request('GET', `/v1/jobs?host_id=${h.id}&kind=gate`, { token: viewer }), 200).items
        .length,
      0,
    );
    for (const [qs, field] of [
      ['state=done', 'state'],
      ['kind=reboot', 'kind'],
      ['host_id=1', 'host_id'],
    ]) {
      expectProblem(await client.request('GET', `/v1/jobs?${qs}`, { token: viewer }), 400, 'invalid_parameter', field);
    }
    expectProblem(await client.request('GET', '/v1/jobs?host=1', { token: viewer }), 400, 'unknown_parameter', 'host');
    expectProblem(await client.request('GET', `/v1/jobs/${NIL}`, { token: viewer }), 404, 'not_found');
    expectProblem(await client.request('GET', '/v1/jobs/x', { token: viewer }), 404, 'not_found');
  });

  test('cancel of a queued job: 202, cancelled at once; again: 409 job_finished', async () => {
    expectProblem(
      await client.request('POST', `/v1/jobs/${job.id}/cancel`, { token: viewer }),
      403,
      'insufficient_role',
    );
    const res = await client.request('POST', `/v1/jobs/${job.id}/cancel`, { token: operator });
    const c = expectStatus(res, 202);
    assert.equal(c.id, job.id);
    assert.equal(c.state, 'cancelled');
    assert.ok(c.finished_at);
    expectProblem(await client.request('POST', `/v1/jobs/${job.id}/cancel`, { token: operator }), 409, 'job_finished');
    expectProblem(await client.request('POST', `/v1/jobs/${NIL}/cancel`, { token: operator }), 404, 'not_found');
    const evs = await auditOf('job.cancel', job.id);
    assert.equal(evs.length, 1, JSON.stringify(evs));
    assert.equal(evs[0].resource_type, 'job');
    assert.equal(evs[0].status, 202);
  });

  test('after the cancel the host can be provisioned again', async () => {
    const j2 = expectStatus(
      await client.request('POST', `/v1/hosts/${h.id}/provision`, { token: operator, body: { stack_id: stack.id } }),
      202,
    );
    assert.notEqual(j2.id, job.id);
    expectStatus(await client.request('POST', `/v1/jobs/${j2.id}/cancel`, { token: operator }), 202);
  });

  test('provision is in the audit trail as host.provision', async () => {
    const evs = await auditOf('host.provision', h.id);
    assert.equal(evs.length, 2, JSON.stringify(evs));
    assert.equal(evs[0].status, 202);
    assert.equal(evs[0].role, 'operator');
  });

  test('Idempotency-Key: a replay returns the same job and queues nothing else', async () => {
    const { host } = await register();
    const k = `prov-${fleet.uniq()}`;
    const first = await client.request('POST', `/v1/hosts/${host.id}/provision`, {
      token: operator,
      body: { stack_id: stack.id },
      headers: { 'Idempotency-Key': k },
    });
    const j = expectStatus(first, 202);
    const second = await client.request('POST', `/v1/hosts/${host.id}/provision`, {
      token: operator,
      body: { stack_id: stack.id },
      headers: { 'Idempotency-Key': k },
    });
    const j2 = expectStatus(second, 202);
    assert.equal(j2.id, j.id);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.headers.get('location'), `/v1/jobs/${j.id}`);
    const list = expectStatus(await client.request('GET', `/v1/jobs?host_id=${host.id}`, { token: viewer }), 200);
    assert.equal(list.items.length, 1);
    const other = await fleet.createStack(client, operator);
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, {
        token: operator,
        body: { stack_id: other.id },
        headers: { 'Idempotency-Key': k },
      }),
      422,
      'idempotency_key_reused',
    );
    assert.equal((await auditOf('host.provision', host.id)).length, 1);
  });

  test('provision refusals: unknown stack, bad body, unknown host, viewer', async () => {
    const { host } = await register();
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, { token: operator, body: { stack_id: NIL } }),
      400,
      'invalid_field',
      'stack_id',
    );
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, { token: operator, body: { stack_id: "x'; id" } }),
      400,
      'invalid_field',
      'stack_id',
    );
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, { token: operator, body: {} }),
      400,
      'missing_field',
      'stack_id',
    );
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, {
        token: operator,
        body: { stack_id: stack.id, force: true },
      }),
      400,
      'unknown_field',
      'force',
    );
    expectProblem(
      await client.request('POST', `/v1/hosts/${NIL}/provision`, { token: operator, body: { stack_id: stack.id } }),
      404,
      'not_found',
    );
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, { token: viewer, body: { stack_id: stack.id } }),
      403,
      'insufficient_role',
    );
    assert.equal(
      expectStatus(await client.request('GET', `/v1/jobs?host_id=${host.id}`, { token: viewer }), 200).items.length,
      0,
    );
  });

  test('a quarantined host answers 409 host_quarantined', async () => {
    const { host } = await register();
    psql(
      srv.database.url,
      `SELECT host_transition('${host.id}', 'key_mismatch', NULL, 'test', NULL, 'worker:test', NULL)`,
    );
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, { token: operator, body: { stack_id: stack.id } }),
      409,
      'host_quarantined',
    );
    assert.equal(
      expectStatus(await client.request('GET', `/v1/jobs?host_id=${host.id}`, { token: viewer }), 200).items.length,
      0,
    );
  });

  test('a running job: cancel sets cancel_requested; DELETE of its host is 409 host_busy', async () => {
    const { host } = await register();
    const j = expectStatus(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, { token: operator, body: { stack_id: stack.id } }),
      202,
    );
    // no worker runs here: pretend one claimed it
    psql(
      srv.database.url,
      `UPDATE jobs SET state = 'running', attempt = 1, started_at = now(), lease_owner = 'test', lease_expires_at = now() + interval '1 hour' WHERE id = '${j.id}'`,
    );
    expectProblem(await client.request('DELETE', `/v1/hosts/${host.id}`, { token: admin }), 409, 'host_busy');
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, { token: operator, body: { stack_id: stack.id } }),
      409,
      'host_busy',
    );
    const c = expectStatus(await client.request('POST', `/v1/jobs/${j.id}/cancel`, { token: operator }), 202);
    assert.equal(c.state, 'running');
    assert.equal(c.cancel_requested, true);
    assert.equal(c.finished_at, null);
    psql(srv.database.url, `UPDATE jobs SET state = 'cancelled', finished_at = now() WHERE id = '${j.id}'`);
    expectStatus(await client.request('DELETE', `/v1/hosts/${host.id}`, { token: admin }), 204);
    expectProblem(await client.request('GET', `/v1/jobs/${j.id}`, { token: viewer }), 404, 'not_found');
  });
});

describe('the host state machine and quarantine (no worker: events applied as a worker would)', () => {
  const ev = (id, event, hint = null) =>
    psql(
      srv.database.url,
      `SELECT host_transition('${id}', '${event}', ${hint ? `'${hint}'` : 'NULL'}, 'test: ${event}', NULL, 'worker:test', NULL)`,
    );

  test('a quarantined host refuses drain, resume, provision and gate (409 host_quarantined)', async () => {
    const { host } = await register();
    ev(host.id, 'key_mismatch');
    const h = expectStatus(await client.request('GET', `/v1/hosts/${host.id}`, { token: viewer }), 200);
    assert.equal(h.state, 'quarantined');
    assert.match(h.quarantine.reason, /key_mismatch/);
    for (const [path, body] of [
      ['drain', undefined],
      ['resume', undefined],
      ['gate', undefined],
      ['provision', { stack_id: stack.id }],
    ]) {
      expectProblem(
        await client.request('POST', `/v1/hosts/${host.id}/${path}`, { token: operator, body }),
        409,
        'host_quarantined',
      );
    }
    // stopped while quarantined: still held
    ev(host.id, 'stop_started');
    ev(host.id, 'stop_done');
    const stopped = expectStatus(await client.request('GET', `/v1/hosts/${host.id}`, { token: viewer }), 200);
    assert.equal(stopped.state, 'stopped');
    assert.ok(stopped.quarantine);
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, { token: operator, body: { stack_id: stack.id } }),
      409,
      'host_quarantined',
    );
    // a stopped host is neither drained nor gated (it would be billed again)
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/drain`, { token: operator }),
      409,
      'host_quarantined',
    );
    const rel = expectStatus(
      await client.request('POST', `/v1/hosts/${host.id}/release`, {
        token: admin,
        body: { reason: 'checked', repin: true },
      }),
      200,
    );
    assert.equal(rel.state, 'stopped');
    assert.equal(rel.quarantine, null);
    expectProblem(await client.request('POST', `/v1/hosts/${host.id}/drain`, { token: operator }), 409, 'host_stopped');
    expectProblem(await client.request('POST', `/v1/hosts/${host.id}/gate`, { token: operator }), 409, 'host_stopped');
  });

  test('release: 404, 403, 400 for each malformed body, 409 host_not_quarantined, then 200 audited', async () => {
    const { host } = await register();
    const url = `/v1/hosts/${host.id}/release`;
    expectProblem(
      await client.request('POST', `/v1/hosts/${NIL}/release`, { token: admin, body: { reason: 'x', repin: true } }),
      404,
      'not_found',
    );
    expectProblem(
      await client.request('POST', url, { token: operator, body: { reason: 'x', repin: true } }),
      403,
      'insufficient_role',
    );
    expectProblem(
      await client.request('POST', url, { token: admin, body: { reason: 'x', repin: true } }),
      409,
      'host_not_quarantined',
    );
    ev(host.id, 'key_mismatch');
    for (const body of [
      {},
      { repin: true },
      { reason: '', repin: true },
      { reason: 'x' },
      { reason: 'x', repin: false },
      { reason: 'x', repin: 'yes' },
      { reason: 'x', repin: true, host_key_sha256: FP },
      { reason: 'x', host_key_sha256: 'SHA256:short' },
      { reason: 'x', host_key_sha256: `${FP.slice(0, -1)}!` },
      { reason: 'x', host_key_sha256: "'; DROP TABLE hosts; --" },
      { reason: 'x'.repeat(501), repin: true },
      { reason: 'x', repin: true, extra: 1 },
    ]) {
      expectProblem(await client.request('POST', url, { token: admin, body }), 400, [
        'invalid_field',
        'missing_field',
        'unknown_field',
        'string_too_long',
        'invalid_type',
      ]);
    }
    const before = expectStatus(await client.request('GET', `/v1/hosts/${host.id}`, { token: viewer }), 200);
    assert.equal(before.state, 'quarantined', 'a refused release changes nothing');
    const rel = expectStatus(
      await client.request('POST', url, { token: admin, body: { reason: 'reinstalled', host_key_sha256: FP } }),
      200,
    );
    assert.equal(rel.state, 'registered', 'never provisioned: back to registered');
    assert.equal(rel.host_key_sha256, FP);
    assert.equal(rel.quarantine, null);
    assert.deepEqual([rel.state_history[0].from, rel.state_history[0].to], ['quarantined', 'registered']);
    const audit = await auditOf('host.release', host.id);
    assert.equal(audit.length, 1);
    assert.equal(audit[0].reason, 'reinstalled');
    expectProblem(
      await client.request('POST', url, { token: admin, body: { reason: 'again', repin: true } }),
      409,
      'host_not_quarantined',
    );
  });

  test('PostgreSQL refuses a state change outside the state machine', async () => {
    const { host } = await register();
    for (const q of [
      `UPDATE hosts SET state = 'ready' WHERE id = '${host.id}'`,
      `UPDATE hosts SET quarantined_at = now() WHERE id = '${host.id}'`,
      `SELECT host_transition('${host.id}', 'gate_accepted', NULL, 'x', NULL, 'x', NULL)`,
      `SELECT host_transition('${host.id}', 'no_such_event', NULL, 'x', NULL, 'x', NULL)`,
      `INSERT INTO hosts (name, address, ssh_user, credential_id, pool_id, created_by, state) VALUES ('${name()}', '127.0.0.1', 'u', '${cred.id}', '${poolA.id}', 'x', 'ready')`,
    ]) {
      assert.throws(
        () => psql(srv.database.url, q),
        /state machine|not allowed|unknown host event|starts registered|hosts_quarantine_hold/,
        q,
      );
    }
    const h = expectStatus(await client.request('GET', `/v1/hosts/${host.id}`, { token: viewer }), 200);
    assert.equal(h.state, 'registered');
    assert.equal(h.state_history.length, 1);
  });

  test('PostgreSQL refuses a forged gate or hold effect even with the event setting of a real transition', async () => {
    const { host } = await register();
    const run = psql(
      srv.database.url,
      `INSERT INTO gate_runs (kind, host_id, pool_id, gate_version, verdict, reason, checks, started_at)` +
        ` VALUES ('gate', '${host.id}', '${poolA.id}', 1, 'accept', 'forged', '[]'::jsonb, now()) RETURNING id`,
    ).trim();
    // drain is registered → draining with the gate and the hold kept: setting the gate (or
    // clearing nothing but setting a hold) on the way is not that transition
    const forged = (set) =>
      `BEGIN; SELECT set_config('gpufleet.host_event', 'drain', true); ` +
      `UPDATE hosts SET state = 'draining', ${set} WHERE id = '${host.id}'; COMMIT;`;
    assert.throws(
      () => psql(srv.database.url, forged(`accepted_gate_run_id = '${run}'`)),
      /gate set, hold kept\) is not a transition of the state machine with these gate and hold effects/,
    );
    assert.throws(
      () => psql(srv.database.url, forged(`quarantine_reason = 'forged'`)),
      /with these gate and hold effects/,
    );
    // gate_accepted sets a gate of this host only
    const other = (await register()).host;
    const foreign = psql(
      srv.database.url,
      `INSERT INTO gate_runs (kind, host_id, pool_id, gate_version, verdict, reason, checks, started_at)` +
        ` VALUES ('gate', '${other.id}', '${poolA.id}', 1, 'accept', 'forged', '[]'::jsonb, now()) RETURNING id`,
    ).trim();
    psql(srv.database.url, `SELECT host_transition('${host.id}', 'gate_started', NULL, 'x', NULL, 'x', NULL)`);
    assert.throws(
      () =>
        psql(
          srv.database.url,
          `SELECT host_transition('${host.id}', 'gate_accepted', NULL, 'x', NULL, 'x', '${foreign}')`,
        ),
      /with these gate and hold effects/,
    );
    psql(srv.database.url, `SELECT host_transition('${host.id}', 'gate_accepted', NULL, 'x', NULL, 'x', '${run}')`);
    const h = expectStatus(await client.request('GET', `/v1/hosts/${host.id}`, { token: viewer }), 200);
    assert.equal(h.state, 'ready');
    assert.equal(h.accepted_gate_run_id, run);
  });

  test("the application's database role cannot write a host's state, its hold or the state machine", async () => {
    const { host } = await register();
    const app = srv.database.appUrl;
    assert.ok(app && app !== srv.database.url, 'serve runs as a role of its own');
    assert.equal(psql(app, 'SELECT current_user'), 'gpufleet_app');
    // serve's own connection is that role (not the harness's kept connection of the line above)
    assert.equal(
      psql(
        srv.database.url,
        `SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = 'gpufleet_app' AND datname = current_database()
           AND application_name IS DISTINCT FROM 'pgpipe'`,
      ),
      't',
    );
    for (const q of [
      `UPDATE hosts SET state = 'ready' WHERE id = '${host.id}'`,
      `UPDATE hosts SET quarantined_at = NULL, quarantine_reason = NULL WHERE id = '${host.id}'`,
      `INSERT INTO host_transitions (event, from_state, to_state, gate, hold) VALUES ('drain', 'registered', 'ready', 'keep', 'keep')`,
      `DELETE FROM host_transitions`,
      `UPDATE host_events SET refused_when_held = false`,
      `DELETE FROM schema_migrations`,
      `SELECT gpufleet_grant_app('gpufleet_app')`,
    ]) {
      assert.throws(() => psql(app, q), /permission denied/, q);
    }
    assert.throws(() => psql(app, 'ALTER TABLE hosts DISABLE TRIGGER hosts_guard_transition'), /must be owner/);
    // the event setting is any role's to set: the trigger does not take it as proof. A role
    // that may UPDATE every column of hosts (the app's grants plus UPDATE on hosts), with
    // the setting of a real transition whose effects match, is still refused: it is not
    // the owner that host_transition() runs as.
    psql(
      srv.database.url,
      `DO $$ BEGIN CREATE ROLE gft_forger NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$; ` +
        `SELECT gpufleet_grant_app('gft_forger'); GRANT UPDATE ON hosts TO gft_forger;`,
    );
    assert.throws(
      () =>
        psql(
          srv.database.url,
          `BEGIN; SET LOCAL ROLE gft_forger; SELECT set_config('gpufleet.host_event', 'drain', true); ` +
            `UPDATE hosts SET state = 'draining' WHERE id = '${host.id}'; COMMIT;`,
        ),
      /only through host_transition\(\) \(role gft_forger is not the owner/,
    );
    const run = psql(
      srv.database.url,
      `INSERT INTO gate_runs (kind, host_id, pool_id, gate_version, verdict, reason, checks, started_at)` +
        ` VALUES ('gate', '${host.id}', '${poolA.id}', 1, 'accept', 'forged', '[]'::jsonb, now()) RETURNING id`,
    ).trim();
    psql(app, `SELECT host_transition('${host.id}', 'gate_started', NULL, 'x', NULL, 'x', NULL)`);
    assert.throws(
      () =>
        psql(
          app,
          `BEGIN; SELECT set_config('gpufleet.host_event', 'gate_accepted', true); ` +
            `UPDATE hosts SET accepted_gate_run_id = '${run}' WHERE id = '${host.id}'; COMMIT;`,
        ),
      /with these gate and hold effects|only through host_transition\(\)/,
    );
    // what serve needs still works: labels, and the state machine through host_transition()
    psql(app, `UPDATE hosts SET labels = '{"k": "v"}'::jsonb WHERE id = '${host.id}'`);
    psql(app, `SELECT host_transition('${host.id}', 'gate_accepted', NULL, 'x', NULL, 'x', '${run}')`);
    const h = expectStatus(await client.request('GET', `/v1/hosts/${host.id}`, { token: viewer }), 200);
    assert.equal(h.state, 'ready');
    assert.equal(h.accepted_gate_run_id, run);
    assert.deepEqual(h.labels, { k: 'v' });
  });

  test("the state filter takes exactly the state machine's states", async () => {
    expectStatus(await client.request('GET', '/v1/hosts?state=quarantined', { token: viewer }), 200);
    expectStatus(await client.request('GET', '/v1/hosts?state=unreachable', { token: viewer }), 200);
    expectProblem(await client.request('GET', '/v1/hosts?state=offline', { token: viewer }), 400, 'invalid_parameter');
  });
});

describe('secrets', () => {
  test('the private key never appears in any answer or in the server logs', async () => {
    const lines = fleet.keyBodyLines(key.text);
    const fs = require('node:fs');
    for (const s of [srv, open, closed]) {
      const log = fs.readFileSync(s.logPath, 'utf8');
      for (const l of lines) assert.ok(!log.includes(l), `a line of the private key is in ${s.logPath}`);
    }
    for (const p of [
      '/v1/credentials',
      `/v1/credentials/${cred.id}`,
      '/v1/hosts?limit=500',
      '/v1/jobs?limit=500',
      '/v1/audit-events?limit=500',
    ]) {
      const res = await client.request('GET', p, { token: admin });
      expectStatus(res, 200);
      for (const l of lines) assert.ok(!res.text.includes(l), `a line of the private key is in GET ${p}`);
    }
  });
});
