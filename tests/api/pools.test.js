'use strict';
// Host pools: CRUD (admin writes, viewer reads), defaults, If-Match on PUT,
// gate_version counting changes of the gate only, list filters and pagination,
// and every refusal — above all the strings that later reach a host over SSH
// (stop_command, the paths), which must refuse every injection payload.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

let srv;
let client;
let admin;
let operator;
let viewer;

const uniq = () => crypto.randomBytes(4).toString('hex');
const clone = (v) => JSON.parse(JSON.stringify(v));

const ALL_CHECKS = ['gpu_inventory', 'container_gpu', 'workload', 'topology', 'storage', 'observability', 'bandwidth'];

function minimalPool(overrides = {}) {
  return {
    name: `pool-${uniq()}`,
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    price_per_hour: 98.32,
    durable_path: '/srv/gpufleet/durable',
    scratch_path: '/mnt/nvme/scratch',
    ...overrides,
  };
}

function fullPool(overrides = {}) {
  return minimalPool({
    interconnect: 'nvlink',
    storage_price_per_gb_month: 0.08,
    egress_price_per_gb: 0.09,
    overhead_pct: 12.5,
    idle_stop_after_seconds: 3600,
    auto_stop: true,
    stop_command: 'sudo /usr/sbin/poweroff',
    gate: {
      storage_min_mbps: 500,
      workload: {
        command: ['python3', '-m', 'bench', '--tokens=128'],
        metric: 'tokens_per_second',
        min: 1500,
        timeout_s: 600,
      },
      link_class: 'NV18,NV12',
      observability_url: 'http://127.0.0.1:9400/metrics',
      checks: ['gpu_inventory', 'container_gpu', 'workload', 'topology', 'storage'],
    },
    ...overrides,
  });
}

async function create(body, token = admin) {
  return client.request('POST', '/v1/pools', { token, body });
}

async function getWithEtag(id) {
  const res = await client.request('GET', `/v1/pools/${id}`, { token: viewer });
  return { pool: expectStatus(res, 200), etag: res.headers.get('etag') };
}

async function put(id, body, etag, token = admin) {
  const headers = etag === undefined ? {} : { 'If-Match': etag };
  return client.request('PUT', `/v1/pools/${id}`, { token, body, headers });
}

before(async () => {
  srv = await startServer({ name: 'pools' });
  client = api(srv);
  admin = srv.token('admin', { sub: 'pools-admin' });
  operator = srv.token('operator', { sub: 'pools-operator' });
  viewer = srv.token('viewer', { sub: 'pools-viewer' });
});

after(async () => {
  if (srv) await srv.stop();
});

describe('create and read', () => {
  test('a minimal pool gets every default', async () => {
    const body = minimalPool();
    const res = await create(body);
    const p = expectStatus(res, 201);
    assert.equal(res.headers.get('location'), `/v1/pools/${p.id}`);
    assert.equal(p.revision, 1);
    assert.equal(p.gate_version, 1);
    assert.equal(p.created_by, 'pools-admin');
    for (const [k, v] of Object.entries(body)) assert.deepEqual(p[k], v, k);
    assert.equal(p.interconnect, 'any');
    assert.equal(p.storage_price_per_gb_month, 0);
    assert.equal(p.egress_price_per_gb, 0);
    assert.equal(p.overhead_pct, 0);
    assert.equal(p.idle_stop_after_seconds, 1800);
    assert.equal(p.auto_stop, false);
    assert.equal(p.stop_command, undefined);
    assert.deepEqual(p.gate, { storage_min_mbps: 200, link_class: 'any', checks: ALL_CHECKS });
    const { pool } = await getWithEtag(p.id);
    assert.deepEqual(pool, p);
  });

  test('a full pool is stored as sent (workload timeout defaults to 300)', async () => {
    const body = fullPool();
    const p = expectStatus(await create(body), 201);
    for (const [k, v] of Object.entries(body)) assert.deepEqual(p[k], v, k);
    const b2 = fullPool();
    delete b2.gate.workload.timeout_s;
    const p2 = expectStatus(await create(b2), 201);
    assert.equal(p2.gate.workload.timeout_s, 300);
  });

  test('boundaries are accepted', async () => {
    for (const o of [
      { gpu_count: 1 },
      { gpu_count: 64 },
      { price_per_hour: 0 },
      { price_per_hour: 100000 },
      { overhead_pct: 100 },
      { idle_stop_after_seconds: 60 },
      { idle_stop_after_seconds: 2592000 },
      { stop_command: 'shutdown -h now' },
      { stop_command: '/sbin/shutdown -P now --no-wall' },
      { gate: { link_class: 'NV*' } },
      { gate: { link_class: 'PIX,PXB,PHB,NODE,SYS,NV1' } },
      { gate: { observability_url: 'https://[::1]:8443/api/v1/query' } },
      { durable_path: '/data', scratch_path: '/data2' },
      { durable_path: '/a/b.c/d_e-f', scratch_path: '/a/b.c/x' },
    ]) {
      expectStatus(await create(minimalPool(o)), 201);
    }
  });

  test('unknown or malformed ids answer 404', async () => {
    expectProblem(await client.request('GET', `/v1/pools/${crypto.randomUUID()}`, { token: viewer }), 404, 'not_found');
    expectProblem(await client.request('GET', '/v1/pools/nope', { token: viewer }), 404, 'not_found');
  });

  test('audit: pool.create', async () => {
    const p = expectStatus(await create(minimalPool()), 201);
    const evs = expectStatus(
      await client.request('GET', `/v1/audit-events?action=pool.create&resource_id=${p.id}`, { token: admin }),
      200,
    ).items;
    assert.equal(evs.length, 1);
    assert.equal(evs[0].resource_type, 'pool');
  });
});

describe('roles', () => {
  test('viewer and operator read; only admin writes', async () => {
    const p = expectStatus(await create(minimalPool()), 201);
    for (const token of [viewer, operator]) {
      expectStatus(await client.request('GET', `/v1/pools/${p.id}`, { token }), 200);
      expectStatus(await client.request('GET', '/v1/pools', { token }), 200);
      expectProblem(await create(minimalPool(), token), 403, 'insufficient_role');
      const { etag } = await getWithEtag(p.id);
      expectProblem(await put(p.id, minimalPool(), etag, token), 403, 'insufficient_role');
      expectProblem(await client.request('DELETE', `/v1/pools/${p.id}`, { token }), 403, 'insufficient_role');
    }
    expectProblem(await client.request('GET', '/v1/pools'), 401, 'missing_token');
    const reporter = srv.token('reporter', { sub: 'pools-reporter' });
    expectProblem(await client.request('GET', '/v1/pools', { token: reporter }), 403, 'insufficient_role');
  });
});

describe('refusals', () => {
  test('missing, unknown and out-of-range members name the field', async () => {
    for (const f of ['name', 'gpu_model', 'gpu_count', 'price_per_hour', 'durable_path', 'scratch_path']) {
      const b = minimalPool();
      delete b[f];
      expectProblem(await create(b), 400, 'missing_field', f);
    }
    expectProblem(await create(minimalPool({ colour: 'red' })), 400, 'unknown_field', 'colour');
    expectProblem(await create(minimalPool({ gate: { colour: 'red' } })), 400, 'unknown_field', 'gate.colour');
    const bad = [
      ['name', ''],
      ['name', 'x'.repeat(129)],
      ['gpu_count', 0],
      ['gpu_count', 65],
      ['gpu_count', 1.5],
      ['interconnect', 'infiniband'],
      ['price_per_hour', -1],
      ['price_per_hour', 100001],
      ['price_per_hour', '3'],
      ['storage_price_per_gb_month', -0.01],
      ['egress_price_per_gb', -1],
      ['overhead_pct', 101],
      ['overhead_pct', -1],
      ['idle_stop_after_seconds', 59],
      ['idle_stop_after_seconds', 2592001],
      ['idle_stop_after_seconds', 90.5],
      ['auto_stop', 'yes'],
      ['stop_command', ''],
      ['stop_command', 'x'.repeat(513)],
      ['gate', []],
    ];
    for (const [f, v] of bad) expectProblem(await create(minimalPool({ [f]: v })), 400, 'invalid_field', f);
  });

  test('gate members are checked', async () => {
    const cases = [
      [{ storage_min_mbps: 0 }, 'gate.storage_min_mbps'],
      [{ storage_min_mbps: -5 }, 'gate.storage_min_mbps'],
      [{ link_class: 'NV19' }, 'gate.link_class'],
      [{ link_class: 'NV0' }, 'gate.link_class'],
      [{ link_class: 'pix' }, 'gate.link_class'],
      [{ link_class: 'NV12,' }, 'gate.link_class'],
      [{ link_class: 'any,NV12' }, 'gate.link_class'],
      [{ link_class: 'NV12;reboot' }, 'gate.link_class'],
      [{ observability_url: 'ftp://host/x' }, 'gate.observability_url'],
      [{ observability_url: 'http://host/x?y=1' }, 'gate.observability_url'],
      [{ observability_url: 'http://host/$(reboot)' }, 'gate.observability_url'],
      [{ observability_url: `http://h/${'a'.repeat(260)}` }, 'gate.observability_url'],
      // what curl would expand as a glob (the check also runs curl -g)
      [{ observability_url: 'http://h[1-9].example/metrics' }, 'gate.observability_url'],
      [{ observability_url: 'http://[1-9]/metrics' }, 'gate.observability_url'],
      [{ observability_url: 'http://[::1][a-z]/metrics' }, 'gate.observability_url'],
      [{ observability_url: 'http://[::1]x/metrics' }, 'gate.observability_url'],
      [{ observability_url: 'http://host]/metrics' }, 'gate.observability_url'],
      [{ checks: [] }, 'gate.checks'],
      [{ checks: ['storage', 'storage'] }, 'gate.checks'],
      [{ checks: ['dcgm'] }, 'gate.checks'],
      [{ workload: { command: [], metric: 'x', min: 1 } }, 'gate.workload.command'],
      [{ workload: { command: ['a'], metric: 'Tokens', min: 1 } }, 'gate.workload.metric'],
      [{ workload: { command: ['a'], metric: 'x', min: 1, timeout_s: 0 } }, 'gate.workload.timeout_s'],
      [{ workload: { command: ['a'], metric: 'x', min: 1, timeout_s: 3601 } }, 'gate.workload.timeout_s'],
      [{ workload: { command: ['a\nb'], metric: 'x', min: 1 } }, 'gate.workload.command[0]'],
    ];
    for (const [gate, field] of cases) expectProblem(await create(minimalPool({ gate })), 400, 'invalid_field', field);
    expectProblem(
      await create(minimalPool({ gate: { workload: { command: ['a'], min: 1 } } })),
      400,
      'missing_field',
      'gate.workload.metric',
    );
  });

  test('stop_command refuses every shell metacharacter and injection payload', async () => {
    const payloads = [
      'poweroff; rm -rf /',
      '; rm -rf /',
      '$(reboot)',
      'shutdown `reboot`',
      'poweroff\nreboot',
      'poweroff\rreboot',
      "poweroff 'x'",
      'poweroff "x"',
      'poweroff | tee',
      'poweroff && reboot',
      'poweroff & ',
      'poweroff > /dev/sda',
      'poweroff < /etc/passwd',
      'poweroff \\',
      'poweroff ${IFS}',
      'poweroff # comment',
      '-h now',
      ' poweroff',
      'poweroff\ttab',
      'poweroff*',
      'poweroff~',
      'póweroff',
    ];
    for (const s of payloads) {
      expectProblem(await create(minimalPool({ stop_command: s })), 400, 'invalid_field', 'stop_command');
    }
  });

  test('paths refuse injections, relative paths, / and . or .. components', async () => {
    const payloads = [
      '/data; rm -rf /',
      '/data/$(reboot)',
      '/data/`reboot`',
      '/data\n/etc',
      "/data/'x'",
      '/data/"x"',
      '/data|x',
      '/data&x',
      '/data x',
      '/',
      'data',
      './data',
      '/data/../etc',
      '/data/..',
      '/../data',
      '/data/./x',
      '/data//x',
      '/data/',
      '~/data',
      '/data/*',
    ];
    for (const field of ['durable_path', 'scratch_path']) {
      for (const v of payloads) {
        expectProblem(await create(minimalPool({ [field]: v })), 400, 'invalid_field', field);
      }
    }
  });

  test('durable and scratch must differ and not nest', async () => {
    expectProblem(
      await create(minimalPool({ durable_path: '/data', scratch_path: '/data' })),
      400,
      'invalid_field',
      'scratch_path',
    );
    expectProblem(
      await create(minimalPool({ durable_path: '/data', scratch_path: '/data/scratch' })),
      400,
      'invalid_field',
      'scratch_path',
    );
    expectProblem(
      await create(minimalPool({ durable_path: '/data/durable', scratch_path: '/data' })),
      400,
      'invalid_field',
      'scratch_path',
    );
    expectStatus(await create(minimalPool({ durable_path: '/data', scratch_path: '/data-scratch' })), 201);
  });

  test('auto_stop needs a stop_command', async () => {
    expectProblem(await create(minimalPool({ auto_stop: true })), 400, 'invalid_field', 'stop_command');
  });

  test('an unknown gpu_model: 400 invalid_field gpu_model', async () => {
    expectProblem(await create(minimalPool({ gpu_model: 'h900_sxm' })), 400, 'invalid_field', 'gpu_model');
    expectProblem(await create(minimalPool({ gpu_model: 'H100 SXM' })), 400, 'invalid_field', 'gpu_model');
  });

  test('a duplicate name: 409 already_exists', async () => {
    const name = `dup-${uniq()}`;
    expectStatus(await create(minimalPool({ name })), 201);
    expectProblem(await create(minimalPool({ name })), 409, 'already_exists', 'name');
  });
});

describe('replace with If-Match', () => {
  test('428 without If-Match, 412 with a stale one, 200 with the current one', async () => {
    const p = expectStatus(await create(fullPool()), 201);
    const { etag } = await getWithEtag(p.id);
    const next = fullPool({ name: p.name, price_per_hour: 50 });
    expectProblem(await put(p.id, next), 428, 'precondition_required');
    expectProblem(await put(p.id, next, '"0000000000000000000000000000000"'), 412, 'precondition_failed');
    const res = await put(p.id, next, etag);
    const u = expectStatus(res, 200);
    assert.equal(u.revision, 2);
    assert.equal(u.price_per_hour, 50);
    assert.equal(u.gate_version, 1, 'the gate did not change');
    assert.equal(u.id, p.id);
    assert.equal(u.created_at, p.created_at);
    const after = await getWithEtag(p.id);
    assert.equal(res.headers.get('etag'), after.etag);
    assert.deepEqual(after.pool, u);
    expectProblem(await put(p.id, next, etag), 412, 'precondition_failed');
    const evs = expectStatus(
      await client.request('GET', `/v1/audit-events?action=pool.update&resource_id=${p.id}`, { token: admin }),
      200,
    ).items;
    assert.equal(evs.length, 1);
  });

  test('pool.update audit rows carry the changed members, before and after', async () => {
    const p = expectStatus(await create(fullPool()), 201);
    const { etag } = await getWithEtag(p.id);
    const next = fullPool({ name: p.name, stop_command: 'sudo /usr/local/bin/halt-node --now' });
    next.gate = { ...next.gate, storage_min_mbps: 600 };
    expectStatus(await put(p.id, next, etag), 200);
    const [ev] = expectStatus(
      await client.request('GET', `/v1/audit-events?action=pool.update&resource_id=${p.id}`, { token: admin }),
      200,
    ).items;
    assert.deepEqual(ev.before, { stop_command: 'sudo /usr/sbin/poweroff', gate: { storage_min_mbps: 500 } });
    assert.deepEqual(ev.after, {
      stop_command: 'sudo /usr/local/bin/halt-node --now',
      gate: { storage_min_mbps: 600 },
    });
    // an unchanged PUT records an empty change, not the whole pool
    const again = await getWithEtag(p.id);
    expectStatus(await put(p.id, next, again.etag), 200);
    const evs = expectStatus(
      await client.request('GET', `/v1/audit-events?action=pool.update&resource_id=${p.id}`, { token: admin }),
      200,
    ).items;
    assert.equal(evs.length, 2);
    assert.deepEqual([evs[0].before, evs[0].after], [{}, {}]);
  });

  test('gate_version grows only when gate changes', async () => {
    const body = fullPool();
    const p = expectStatus(await create(body), 201);
    let { etag } = await getWithEtag(p.id);
    const step = async (b) => {
      const res = await put(p.id, b, etag);
      const u = expectStatus(res, 200);
      etag = res.headers.get('etag');
      return u;
    };
    let u = await step({ ...clone(body), overhead_pct: 1 });
    assert.deepEqual([u.revision, u.gate_version], [2, 1]);
    const g = clone(body);
    g.gate.storage_min_mbps = 800;
    u = await step(g);
    assert.deepEqual([u.revision, u.gate_version], [3, 2]);
    u = await step(clone(g)); // the same gate again
    assert.deepEqual([u.revision, u.gate_version], [4, 2]);
    const reordered = clone(g);
    reordered.gate = Object.fromEntries(Object.entries(g.gate).reverse()); // same members, other order
    u = await step(reordered);
    assert.equal(u.gate_version, 2, 'member order is not a change');
    const noGate = clone(g);
    delete noGate.gate; // back to the defaults: a change
    u = await step(noGate);
    assert.equal(u.gate_version, 3);
    // The default link class follows the pool's interconnect (nvlink: NV*, pcie: the PCIe
    // classes, any: any).
    const defaultLink = { nvlink: 'NV*', pcie: 'PIX,PXB,PHB,NODE,SYS' }[noGate.interconnect] || 'any';
    assert.equal(u.gate.link_class, defaultLink);
    u = await step({ ...clone(noGate), gate: { storage_min_mbps: 200, link_class: defaultLink, checks: ALL_CHECKS } });
    assert.equal(u.gate_version, 3, 'the defaults written out are the same gate');
  });

  test('PUT validates like POST; unknown id 404; duplicate name 409; bad gpu_model 400', async () => {
    const a = expectStatus(await create(minimalPool()), 201);
    const b = expectStatus(await create(minimalPool()), 201);
    const { etag } = await getWithEtag(a.id);
    expectProblem(
      await put(a.id, minimalPool({ stop_command: '$(reboot)' }), etag),
      400,
      'invalid_field',
      'stop_command',
    );
    expectProblem(await put(a.id, minimalPool({ name: b.name }), etag), 409, 'already_exists', 'name');
    expectProblem(await put(a.id, minimalPool({ gpu_model: 'nope_gpu' }), etag), 400, 'invalid_field', 'gpu_model');
    expectProblem(await put(crypto.randomUUID(), minimalPool(), etag), 404, 'not_found');
    const same = await getWithEtag(a.id);
    assert.equal(same.etag, etag, 'a refused PUT changed the pool');
  });
});

describe('list', () => {
  test('filters by gpu_model and name_prefix, paginated in creation order', async () => {
    const p = `list-${uniq()}-`;
    const l4 = [];
    for (let i = 0; i < 3; i++)
      l4.push(expectStatus(await create(minimalPool({ name: `${p}l4-${i}`, gpu_model: 'l4', gpu_count: 1 })), 201).id);
    expectStatus(await create(minimalPool({ name: `${p}h100` })), 201);
    const seen = [];
    let cursor = null;
    let pages = 0;
    do {
      const q = `/v1/pools?gpu_model=l4&name_prefix=${encodeURIComponent(p)}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = expectStatus(await client.request('GET', q, { token: viewer }), 200);
      assert.ok(page.items.every((x) => x.gpu_model === 'l4'));
      seen.push(...page.items.map((x) => x.id));
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor && pages < 10);
    assert.deepEqual(seen, l4);
    assert.equal(pages, 2);
    const all = expectStatus(
      await client.request('GET', `/v1/pools?name_prefix=${encodeURIComponent(p)}`, { token: viewer }),
      200,
    );
    assert.equal(all.items.length, 4);
    expectProblem(
      await client.request('GET', '/v1/pools?gpu_model=H100!', { token: viewer }),
      400,
      'invalid_parameter',
      'gpu_model',
    );
    expectProblem(
      await client.request('GET', '/v1/pools?limit=0', { token: viewer }),
      400,
      'invalid_parameter',
      'limit',
    );
    expectProblem(
      await client.request('GET', '/v1/pools?state=x', { token: viewer }),
      400,
      'unknown_parameter',
      'state',
    );
  });
});

describe('delete', () => {
  test('204 then 404; pool.delete audited', async () => {
    const p = expectStatus(await create(minimalPool()), 201);
    expectStatus(await client.request('DELETE', `/v1/pools/${p.id}`, { token: admin }), 204);
    expectProblem(await client.request('GET', `/v1/pools/${p.id}`, { token: viewer }), 404, 'not_found');
    expectProblem(await client.request('DELETE', `/v1/pools/${p.id}`, { token: admin }), 404, 'not_found');
    const evs = expectStatus(
      await client.request('GET', `/v1/audit-events?action=pool.delete&resource_id=${p.id}`, { token: admin }),
      200,
    ).items;
    assert.equal(evs.length, 1);
  });

  test('a referenced pool: 409 pool_in_use', async () => {
    const p = expectStatus(await create(minimalPool()), 201);
    // A stand-in for hosts.pool_id (ON DELETE RESTRICT), independent of the hosts schema.
    psql(
      srv.database.url,
      'CREATE TABLE IF NOT EXISTS test_pool_refs (pool_id uuid REFERENCES pools (id) ON DELETE RESTRICT)',
    );
    psql(srv.database.url, `INSERT INTO test_pool_refs VALUES ('${p.id}')`);
    expectProblem(await client.request('DELETE', `/v1/pools/${p.id}`, { token: admin }), 409, 'pool_in_use');
    psql(srv.database.url, 'DELETE FROM test_pool_refs');
    expectStatus(await client.request('DELETE', `/v1/pools/${p.id}`, { token: admin }), 204);
  });
});
