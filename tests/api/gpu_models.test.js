'use strict';
// GPU catalog: seeded models, pagination, filters, creation, ETags,
// idempotency and the audit trail it leaves.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer, decodeJwt } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

let srv;
let client;
let admin;
let adminSub;
let viewer;

const uniq = () => crypto.randomBytes(4).toString('hex');

function customModel(overrides = {}) {
  const id = uniq();
  return {
    key: `lab_${id}`,
    vendor: 'ACME',
    display_name: 'ACME Lab Accelerator 96GB',
    memory_gib: 96,
    memory_type: 'HBM3',
    memory_bandwidth_gbps: 4000,
    form_factor: 'OAM',
    interconnect_bandwidth_gbps: 0,
    supported_formats: ['fp16', 'bf16', 'fp8'],
    dense_tflops: { bf16: 500, fp16: 500, fp8: 1000 },
    compute_capability: '9.0',
    max_power_w: 750,
    nvidia_smi_name: `ACME Lab 96GB ${id}`, // unique, like the key (409 otherwise)
    nvidia_smi_memory_total_mib: 98304,
    ...overrides,
  };
}

async function listAll(query, token = viewer) {
  const items = [];
  let cursor = null;
  let pages = 0;
  do {
    const q = query + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');
    const page = expectStatus(await client.request('GET', `/v1/gpu-models?${q}`, { token }), 200);
    items.push(...page.items);
    cursor = page.next_cursor;
    assert.ok(++pages < 1000, 'pagination does not end');
  } while (cursor);
  return { items, pages };
}

before(async () => {
  srv = await startServer({ name: 'gpu_models' });
  client = api(srv);
  adminSub = `catalog-admin-${uniq()}`;
  admin = srv.token('admin', { sub: adminSub });
  viewer = srv.token('viewer', { sub: 'catalog-viewer' });
});

after(async () => {
  if (srv) await srv.stop();
});

describe('seeded catalog', () => {
  test('has at least 20 models, including h100_sxm', async () => {
    const { items } = await listAll('limit=500');
    assert.ok(items.length >= 20, `only ${items.length} models`);
    assert.ok(
      items.every((m) => m.source === 'catalog'),
      'a fresh database holds only catalog models',
    );
    const h100 = items.find((m) => m.key === 'h100_sxm');
    assert.ok(h100, 'h100_sxm missing');
    assert.equal(h100.nvidia_smi_name, 'NVIDIA H100 80GB HBM3');
    assert.equal(h100.memory_gib, 80);
    assert.equal(h100.vendor, 'NVIDIA');
    assert.equal(h100.nvidia_smi_memory_total_mib, 81559);
    assert.equal(h100.compute_capability, '9.0');
    assert.equal(h100.interconnect_bandwidth_gbps, 900);
    assert.ok(h100.supported_formats.includes('fp8'), 'H100 supports fp8');
  });

  test('PCIe-only models report interconnect 0; unknown values are null', async () => {
    const l4 = expectStatus(await client.request('GET', '/v1/gpu-models/l4', { token: viewer }), 200);
    assert.equal(l4.interconnect_bandwidth_gbps, 0);
    const mi300x = expectStatus(await client.request('GET', '/v1/gpu-models/mi300x', { token: viewer }), 200);
    assert.equal(mi300x.nvidia_smi_name, null);
    assert.equal(mi300x.compute_capability, null);
  });

  test('limit defaults to 50', async () => {
    const page = expectStatus(await client.request('GET', '/v1/gpu-models', { token: viewer }), 200);
    const { items } = await listAll('limit=500');
    assert.equal(page.items.length, Math.min(50, items.length));
  });

  test('limit=5 pagination walks the whole list once, in key order', async () => {
    const all = (await listAll('limit=500')).items.map((m) => m.key);
    const { items, pages } = await listAll('limit=5');
    const keys = items.map((m) => m.key);
    assert.equal(new Set(keys).size, keys.length, 'duplicates across pages');
    assert.deepEqual(keys, all);
    assert.equal(pages, Math.max(1, Math.ceil(all.length / 5)));
    assert.deepEqual([...keys].sort(), keys, 'not ordered by key');
  });

  test('vendor=AMD returns only AMD models', async () => {
    const { items } = await listAll('vendor=AMD&limit=500');
    assert.ok(items.length >= 2, `want the MI300X and MI250X, got ${items.map((m) => m.key)}`);
    assert.ok(items.every((m) => m.vendor === 'AMD'));
    assert.ok(items.some((m) => m.key === 'mi300x'));
  });

  test('vendor filter with pagination keeps the filter', async () => {
    const { items } = await listAll('vendor=NVIDIA&limit=3');
    assert.ok(items.length >= 20);
    assert.ok(items.every((m) => m.vendor === 'NVIDIA'));
  });

  test('GET by key', async () => {
    const m = expectStatus(await client.request('GET', '/v1/gpu-models/h100_sxm', { token: viewer }), 200);
    assert.equal(m.key, 'h100_sxm');
    assert.equal(m.source, 'catalog');
  });

  test('an unknown key answers 404 not_found', async () => {
    expectProblem(await client.request('GET', '/v1/gpu-models/no_such_gpu', { token: viewer }), 404, 'not_found');
    expectProblem(await client.request('GET', '/v1/gpu-models/NOT%20A%20KEY', { token: viewer }), 404, 'not_found');
  });
});

describe('custom models', () => {
  let created;
  let rid;

  test('POST creates a custom model (201 + Location)', async () => {
    const body = customModel();
    rid = `create-${uniq()}`;
    const res = await client.request('POST', '/v1/gpu-models', {
      token: admin,
      body,
      headers: { 'X-Request-Id': rid },
    });
    created = expectStatus(res, 201);
    assert.equal(res.headers.get('location'), `/v1/gpu-models/${body.key}`);
    assert.equal(res.headers.get('idempotent-replayed'), null);
    assert.equal(created.source, 'custom');
    for (const [k, v] of Object.entries(body)) {
      if (k === 'dense_tflops') continue;
      assert.deepEqual(created[k], v, `field ${k}`);
    }
    // dense_tflops: the given figures back; the others null or absent.
    for (const f of ['fp8', 'bf16', 'fp16', 'int8', 'tf32']) {
      assert.equal(created.dense_tflops[f] ?? null, body.dense_tflops[f] ?? null, `dense_tflops.${f}`);
    }
    const age = Date.now() - Date.parse(created.created_at);
    assert.ok(age > -60_000 && age < 600_000, `created_at ${created.created_at} is not now`);
  });

  test('GET returns it', async () => {
    const res = await client.request('GET', `/v1/gpu-models/${created.key}`, { token: viewer });
    assert.deepEqual(expectStatus(res, 200), created);
  });

  test('source=custom lists it; source=catalog does not', async () => {
    const custom = (await listAll('source=custom&limit=500')).items.map((m) => m.key);
    assert.ok(custom.includes(created.key));
    const catalog = (await listAll('source=catalog&limit=500')).items.map((m) => m.key);
    assert.ok(!catalog.includes(created.key));
  });

  test('vendor defaults to NVIDIA and optional members default to null', async () => {
    const key = `min_${uniq()}`;
    const res = await client.request('POST', '/v1/gpu-models', {
      token: admin,
      body: { key, display_name: 'Minimal', memory_gib: 8, supported_formats: ['int8'] },
    });
    const m = expectStatus(res, 201);
    assert.equal(m.vendor, 'NVIDIA');
    for (const f of ['memory_type', 'memory_bandwidth_gbps', 'form_factor', 'compute_capability', 'nvidia_smi_name']) {
      assert.equal(m[f], null, `${f} should be null`);
    }
  });

  test('POST with an existing key answers 409 already_exists', async () => {
    const res = await client.request('POST', '/v1/gpu-models', {
      token: admin,
      body: customModel({ key: created.key }),
    });
    expectProblem(res, 409, 'already_exists');
    const cat = await client.request('POST', '/v1/gpu-models', {
      token: admin,
      body: customModel({ key: 'h100_sxm' }),
    });
    expectProblem(cat, 409, 'already_exists');
  });

  test('POST with an existing nvidia_smi_name answers 409 already_exists', async () => {
    const res = await client.request('POST', '/v1/gpu-models', {
      token: admin,
      body: customModel({ nvidia_smi_name: created.nvidia_smi_name }),
    });
    expectProblem(res, 409, 'already_exists');
    const cat = await client.request('POST', '/v1/gpu-models', {
      token: admin,
      body: customModel({ nvidia_smi_name: 'NVIDIA H100 80GB HBM3' }),
    });
    expectProblem(cat, 409, 'already_exists');
  });

  test('the create is in the audit trail with principal, role and request id', async () => {
    const q = `/v1/audit-events?action=gpu_model.create&resource_id=${created.key}`;
    const list = expectStatus(await client.request('GET', q, { token: admin }), 200);
    assert.equal(list.items.length, 1, `want one event, got ${JSON.stringify(list.items)}`);
    const ev = list.items[0];
    assert.equal(ev.action, 'gpu_model.create');
    assert.equal(ev.resource_type, 'gpu_model');
    assert.equal(ev.resource_id, created.key);
    assert.equal(ev.principal, adminSub);
    assert.equal(ev.principal, decodeJwt(admin).claims.sub);
    assert.equal(ev.role, 'admin');
    assert.equal(ev.request_id, rid);
    assert.equal(ev.method, 'POST');
    assert.equal(ev.path, '/v1/gpu-models');
    assert.equal(ev.status, 201);

    const one = await client.request('GET', `/v1/audit-events/${ev.id}`, { token: admin });
    assert.deepEqual(expectStatus(one, 200), ev);
  });
});

describe('ETags', () => {
  test('GET by key answers an ETag; If-None-Match answers 304', async () => {
    const a = await client.request('GET', '/v1/gpu-models/h100_sxm', { token: viewer });
    expectStatus(a, 200);
    const etag = a.headers.get('etag');
    const b = await client.request('GET', '/v1/gpu-models/h100_sxm', {
      token: viewer,
      headers: { 'If-None-Match': etag },
    });
    expectStatus(b, 304);
    assert.equal(b.headers.get('etag'), etag);
    const c = await client.request('GET', '/v1/gpu-models/h100_sxm', {
      token: viewer,
      headers: { 'If-None-Match': '"something-else"' },
    });
    expectStatus(c, 200);
    const d = await client.request('GET', '/v1/gpu-models/h100_sxm', {
      token: viewer,
      headers: { 'If-None-Match': '*' },
    });
    expectStatus(d, 304);
  });

  test('a list answers 304 while unchanged, and a new ETag after a POST', async () => {
    const a = await client.request('GET', '/v1/gpu-models?limit=500', { token: viewer });
    expectStatus(a, 200);
    const etag = a.headers.get('etag');
    const b = await client.request('GET', '/v1/gpu-models?limit=500', {
      token: viewer,
      headers: { 'If-None-Match': etag },
    });
    expectStatus(b, 304);

    expectStatus(await client.request('POST', '/v1/gpu-models', { token: admin, body: customModel() }), 201);

    const c = await client.request('GET', '/v1/gpu-models?limit=500', {
      token: viewer,
      headers: { 'If-None-Match': etag },
    });
    expectStatus(c, 200);
    assert.notEqual(c.headers.get('etag'), etag, 'list ETag unchanged after a POST');
  });

  test('an ETag is not valid for a different page', async () => {
    const a = await client.request('GET', '/v1/gpu-models?limit=2', { token: viewer });
    const etag = a.headers.get('etag');
    const b = await client.request('GET', '/v1/gpu-models?limit=3', {
      token: viewer,
      headers: { 'If-None-Match': etag },
    });
    expectStatus(b, 200);
  });

  test('304 still requires a token', async () => {
    const a = await client.request('GET', '/v1/gpu-models/h100_sxm', { token: viewer });
    const b = await client.request('GET', '/v1/gpu-models/h100_sxm', {
      headers: { 'If-None-Match': a.headers.get('etag') },
    });
    expectProblem(b, 401, 'missing_token');
  });
});

describe('Idempotency-Key', () => {
  test('a replay returns the first answer with Idempotent-Replayed: true', async () => {
    const key = `idem-${uniq()}`;
    const body = customModel();
    const first = await client.request('POST', '/v1/gpu-models', {
      token: admin,
      body,
      headers: { 'Idempotency-Key': key },
    });
    const b1 = expectStatus(first, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);

    const second = await client.request('POST', '/v1/gpu-models', {
      token: admin,
      body,
      headers: { 'Idempotency-Key': key },
    });
    const b2 = expectStatus(second, 201);
    assert.deepEqual(b2, b1);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.headers.get('location'), first.headers.get('location'));

    // It acted once: exactly one audit event for the key.
    const ev = expectStatus(
      await client.request('GET', `/v1/audit-events?action=gpu_model.create&resource_id=${body.key}`, { token: admin }),
      200,
    );
    assert.equal(ev.items.length, 1, `want one create event, got ${ev.items.length}`);
  });

  test('the same key with a different body answers 422 idempotency_key_reused', async () => {
    const key = `idem-${uniq()}`;
    const body = customModel();
    expectStatus(
      await client.request('POST', '/v1/gpu-models', { token: admin, body, headers: { 'Idempotency-Key': key } }),
      201,
    );
    const other = { ...body, display_name: 'Something else' };
    const res = await client.request('POST', '/v1/gpu-models', {
      token: admin,
      body: other,
      headers: { 'Idempotency-Key': key },
    });
    expectProblem(res, 422, 'idempotency_key_reused');
  });

  test('without a key, a repeated POST is not replayed (409)', async () => {
    const body = customModel();
    expectStatus(await client.request('POST', '/v1/gpu-models', { token: admin, body }), 201);
    expectProblem(await client.request('POST', '/v1/gpu-models', { token: admin, body }), 409, 'already_exists');
  });

  test('an invalid key answers 400 invalid_idempotency_key', async () => {
    for (const key of ['k'.repeat(256), '']) {
      const res = await client.request('POST', '/v1/gpu-models', {
        token: admin,
        body: customModel(),
        headers: { 'Idempotency-Key': key },
      });
      expectProblem(res, 400, 'invalid_idempotency_key');
    }
  });

  test('a 255-character key is accepted', async () => {
    const res = await client.request('POST', '/v1/gpu-models', {
      token: admin,
      body: customModel(),
      headers: { 'Idempotency-Key': 'k'.repeat(254) + uniq().slice(0, 1) },
    });
    expectStatus(res, 201);
  });
});

describe('audit events', () => {
  test('limit=1 pagination walks the trail newest first, without duplicates', async () => {
    const all = expectStatus(await client.request('GET', '/v1/audit-events?limit=500', { token: admin }), 200).items;
    assert.ok(all.length >= 3, `want at least 3 events, got ${all.length}`);
    const seen = [];
    let cursor = null;
    let guard = 0;
    do {
      const q = '/v1/audit-events?limit=1' + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');
      const page = expectStatus(await client.request('GET', q, { token: admin }), 200);
      assert.ok(page.items.length <= 1);
      seen.push(...page.items.map((e) => e.id));
      cursor = page.next_cursor;
      assert.ok(++guard < 1000);
    } while (cursor && seen.length < all.length + 5);
    assert.equal(new Set(seen).size, seen.length, 'duplicates across pages');
    // Events may have been added by the listing itself only if reads were
    // audited; compare with the snapshot's ids.
    for (const e of all) assert.ok(seen.includes(e.id), `event ${e.id} not reached by pagination`);
    for (let i = 1; i < all.length; i++) {
      assert.ok(Date.parse(all[i - 1].at) >= Date.parse(all[i].at), 'not newest first');
    }
  });

  test('filters: principal, resource_type, since/until', async () => {
    const mine = expectStatus(
      await client.request('GET', `/v1/audit-events?principal=${encodeURIComponent(adminSub)}&limit=500`, {
        token: admin,
      }),
      200,
    ).items;
    assert.ok(mine.length >= 1);
    assert.ok(mine.every((e) => e.principal === adminSub));
    const typed = expectStatus(
      await client.request('GET', '/v1/audit-events?resource_type=gpu_model&limit=500', { token: admin }),
      200,
    ).items;
    assert.ok(typed.every((e) => e.resource_type === 'gpu_model'));
    const future = new Date(Date.now() + 3600_000).toISOString();
    const none = expectStatus(
      await client.request('GET', `/v1/audit-events?since=${encodeURIComponent(future)}`, { token: admin }),
      200,
    );
    assert.deepEqual(none.items, []);
    assert.equal(none.next_cursor, null);
    const past = '2000-01-01T00:00:00Z';
    const none2 = expectStatus(
      await client.request('GET', `/v1/audit-events?until=${encodeURIComponent(past)}`, { token: admin }),
      200,
    );
    assert.deepEqual(none2.items, []);
  });

  test('GET /v1/audit-events/{id} of an unknown id answers 404', async () => {
    expectProblem(
      await client.request('GET', `/v1/audit-events/${crypto.randomUUID()}`, { token: admin }),
      404,
      'not_found',
    );
    expectProblem(await client.request('GET', '/v1/audit-events/not-a-uuid', { token: admin }), 404, 'not_found');
  });
});
