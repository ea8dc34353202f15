'use strict';
// Workload briefs: CRUD, cursor pagination (also while others insert),
// filters, ETags, If-Match on PUT, the audit trail, and every rejection the
// validator promises. Every answer is validated against the spec by api().

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer, decodeJwt, sleep } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

let srv;
let client;
let admin;
let operator;
let operatorSub;
let viewer;

const uniq = () => crypto.randomBytes(4).toString('hex');
const clone = (v) => JSON.parse(JSON.stringify(v));

/** A complete, valid brief for a 7B chat assistant. */
function chatBrief(overrides = {}) {
  return {
    name: `chat-${uniq()}`,
    kind: 'inference_interactive',
    description: 'Customer support assistant, 7B chat model.',
    model: {
      name: 'mistralai/Mistral-7B-Instruct-v0.3',
      revision: 'main',
      parameter_count: 7e9,
      architecture: { layers: 32, kv_heads: 8, head_dim: 128, hidden_size: 4096 },
      precision: 'bf16',
      kv_cache_precision: 'bf16',
    },
    load: {
      concurrency: 16,
      peak_concurrency: 32,
      max_input_tokens: 3584,
      expected_output_tokens: 512,
      peak_requests_per_minute: 600,
    },
    targets: [
      { metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' },
      { metric: 'successful_requests_per_minute', value: 600 },
    ],
    data: {
      ephemeral: { location: '/mnt/nvme/scratch' },
      durable: { location: 's3://models/mistral-7b' },
      secrets: { location: 'vault:kv/support-chat' },
    },
    availability: { target_pct: 99.5, recovery_time_objective_s: 900 },
    ...overrides,
  };
}

/** A minimal valid brief of the given kind. */
function minimalBrief(kind, name) {
  const metric = {
    inference_interactive: 'time_to_first_token_ms',
    distributed_serving: 'tail_latency_ms',
    inference_batch: 'items_per_hour',
    training: 'tokens_per_second',
    fine_tuning: 'samples_per_second',
    embeddings: 'vectors_per_second',
  }[kind];
  return {
    name,
    kind,
    model: { name: 'acme/model-1b', parameter_count: 1e9, precision: 'bf16' },
    load: { concurrency: 1 },
    targets: [{ metric, value: 10 }],
  };
}

/** Set (or, with value undefined, delete) a dotted/indexed path: 'a.b[0].c'. */
function withPath(obj, dotted, value) {
  const out = clone(obj);
  const keys = dotted.split('.').flatMap((k) => {
    const m = /^([^[]+)((?:\[\d+\])*)$/.exec(k);
    return [m[1], ...[...m[2].matchAll(/\[(\d+)\]/g)].map((x) => Number(x[1]))];
  });
  let o = out;
  for (const k of keys.slice(0, -1)) {
    if (o[k] === undefined) o[k] = {};
    o = o[k];
  }
  const last = keys[keys.length - 1];
  if (value === undefined) delete o[last];
  else o[last] = value;
  return out;
}

async function create(body, token = operator, headers = {}) {
  const res = await client.request('POST', '/v1/briefs', { token, body, headers });
  return { res, brief: expectStatus(res, 201) };
}

/** Walk a list to the end. Returns {items, pages}. */
async function walk(query, { token = viewer, between } = {}) {
  const items = [];
  let cursor = null;
  let pages = 0;
  do {
    const q = query + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');
    const page = expectStatus(await client.request('GET', `/v1/briefs?${q}`, { token }), 200);
    items.push(...page.items);
    cursor = page.next_cursor;
    assert.ok(++pages < 1000, 'pagination does not end');
    if (between && cursor) await between(pages);
  } while (cursor);
  return { items, pages };
}

async function auditEvents(action, resourceId) {
  const q = `/v1/audit-events?action=${action}&resource_id=${resourceId}`;
  return expectStatus(await client.request('GET', q, { token: admin }), 200).items;
}

before(async () => {
  srv = await startServer({ name: 'briefs' });
  client = api(srv);
  admin = srv.token('admin', { sub: 'briefs-admin' });
  operatorSub = `briefs-operator-${uniq()}`;
  operator = srv.token('operator', { sub: operatorSub });
  viewer = srv.token('viewer', { sub: 'briefs-viewer' });
});

after(async () => {
  if (srv) await srv.stop();
});

describe('create and read', () => {
  let created;
  let body;
  let rid;

  test('POST /v1/briefs answers 201, Location and the stored brief', async () => {
    body = chatBrief();
    rid = `brief-create-${uniq()}`;
    const { res, brief } = await create(body, operator, { 'X-Request-Id': rid });
    created = brief;
    assert.equal(res.headers.get('location'), `/v1/briefs/${created.id}`);
    assert.equal(created.revision, 1);
    assert.equal(created.created_by, operatorSub);
    assert.equal(created.created_by, decodeJwt(operator).claims.sub);
    assert.equal(created.created_at, created.updated_at, 'a new brief has updated_at = created_at');
    const age = Date.now() - Date.parse(created.created_at);
    assert.ok(age > -60_000 && age < 600_000, `created_at ${created.created_at} is not now`);
    for (const [k, v] of Object.entries(body)) assert.deepEqual(created[k], v, `member ${k} is not stored as sent`);
  });

  test('GET /v1/briefs/{id} returns the same brief', async () => {
    const res = await client.request('GET', `/v1/briefs/${created.id}`, { token: viewer });
    assert.deepEqual(expectStatus(res, 200), created);
  });

  test('a minimal brief of every kind is accepted; optional members stay absent', async () => {
    for (const kind of [
      'inference_interactive',
      'inference_batch',
      'training',
      'fine_tuning',
      'embeddings',
      'distributed_serving',
    ]) {
      const b = minimalBrief(kind, `min-${kind}-${uniq()}`);
      const { brief } = await create(b);
      assert.equal(brief.kind, kind);
      for (const k of ['description', 'data', 'availability', 'training']) {
        assert.equal(brief[k], undefined, `${kind}: ${k} should be absent, got ${JSON.stringify(brief[k])}`);
      }
    }
  });

  test('training options are accepted for training and fine_tuning', async () => {
    for (const kind of ['training', 'fine_tuning']) {
      const b = {
        ...minimalBrief(kind, `train-${uniq()}`),
        training: { optimizer: 'adamw_8bit', activation_bytes: 5e9 },
      };
      const { brief } = await create(b);
      assert.deepEqual(brief.training, b.training);
    }
  });

  test('quantization may be a string or null; parameter_count may be written as 7e9', async () => {
    const b = chatBrief();
    b.model.quantization = 'awq';
    b.model.precision = 'int4';
    assert.equal((await create(b)).brief.model.quantization, 'awq');
    const n = chatBrief();
    n.model.quantization = null;
    expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body: n }), 201);
    const raw = JSON.stringify(chatBrief()).replace('"parameter_count":7000000000', '"parameter_count":7e9');
    assert.ok(raw.includes('7e9'));
    const r = await client.request('POST', '/v1/briefs', {
      token: operator,
      rawBody: raw,
      contentType: 'application/json',
    });
    assert.equal(expectStatus(r, 201).model.parameter_count, 7e9);
  });

  test('the boundaries are accepted: parameter_count 1e6 and 1e13, 10M tokens, 8 targets', async () => {
    for (const pc of [1e6, 1e13]) {
      const b = withPath(chatBrief(), 'model.parameter_count', pc);
      expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body: b }), 201);
    }
    let b = withPath(chatBrief(), 'load.max_input_tokens', 10_000_000);
    b = withPath(b, 'load.expected_output_tokens', 10_000_000);
    b.targets = Array.from({ length: 8 }, (_, i) => ({ metric: 'tail_latency_ms', value: 100 + i, percentile: 'p99' }));
    expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body: b }), 201);
  });

  test('an unknown or malformed id answers 404 not_found', async () => {
    expectProblem(
      await client.request('GET', `/v1/briefs/${crypto.randomUUID()}`, { token: viewer }),
      404,
      'not_found',
    );
    expectProblem(await client.request('GET', '/v1/briefs/not-a-uuid', { token: viewer }), 404, 'not_found');
    expectProblem(await client.request('GET', `/v1/briefs/${created.id}x`, { token: viewer }), 404, 'not_found');
  });

  test('roles: viewer may read but not write; no token answers 401', async () => {
    expectProblem(
      await client.request('POST', '/v1/briefs', { token: viewer, body: chatBrief() }),
      403,
      'insufficient_role',
    );
    expectProblem(await client.request('GET', '/v1/briefs'), 401, 'missing_token');
    expectProblem(await client.request('GET', `/v1/briefs/${created.id}`), 401, 'missing_token');
    expectStatus(await client.request('POST', '/v1/briefs', { token: admin, body: chatBrief() }), 201);
    const reporter = srv.token('reporter', { sub: 'briefs-reporter' });
    expectProblem(await client.request('GET', '/v1/briefs', { token: reporter }), 403, 'insufficient_role');
  });

  test('the create is in the audit trail as brief.create', async () => {
    const evs = await auditEvents('brief.create', created.id);
    assert.equal(evs.length, 1, `want one event, got ${JSON.stringify(evs)}`);
    const ev = evs[0];
    assert.equal(ev.resource_type, 'brief');
    assert.equal(ev.resource_id, created.id);
    assert.equal(ev.principal, operatorSub);
    assert.equal(ev.role, 'operator');
    assert.equal(ev.request_id, rid);
    assert.equal(ev.method, 'POST');
    assert.equal(ev.path, '/v1/briefs');
    assert.equal(ev.status, 201);
  });

  test('Idempotency-Key: a replay returns the first answer and creates one brief', async () => {
    const key = `brief-idem-${uniq()}`;
    const b = chatBrief({ name: `idem-${uniq()}` });
    const first = await client.request('POST', '/v1/briefs', {
      token: operator,
      body: b,
      headers: { 'Idempotency-Key': key },
    });
    const b1 = expectStatus(first, 201);
    const second = await client.request('POST', '/v1/briefs', {
      token: operator,
      body: b,
      headers: { 'Idempotency-Key': key },
    });
    assert.deepEqual(expectStatus(second, 201), b1);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.headers.get('location'), first.headers.get('location'));
    const { items } = await walk(`name_prefix=${encodeURIComponent(b.name)}`);
    assert.equal(items.length, 1, 'the replay created a second brief');
    const other = await client.request('POST', '/v1/briefs', {
      token: operator,
      body: { ...b, description: 'different' },
      headers: { 'Idempotency-Key': key },
    });
    expectProblem(other, 422, 'idempotency_key_reused');
  });
});

describe('list, pagination and filters', () => {
  test('limit=2 walks every brief once, oldest first', async () => {
    const p = `page-${uniq()}-`;
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await create(minimalBrief('inference_batch', `${p}${i}`))).brief.id);
    const { items, pages } = await walk(`name_prefix=${encodeURIComponent(p)}&limit=2`);
    assert.deepEqual(
      items.map((b) => b.id),
      ids,
      'not every brief, or not in creation order',
    );
    assert.equal(pages, 3);

    // The unfiltered list, walked two at a time, equals one big page.
    const all = expectStatus(await client.request('GET', '/v1/briefs?limit=500', { token: viewer }), 200);
    assert.equal(all.next_cursor, null);
    const walked = (await walk('limit=2')).items.map((b) => b.id);
    assert.equal(new Set(walked).size, walked.length, 'duplicates across pages');
    assert.deepEqual(
      walked,
      all.items.map((b) => b.id),
    );
    for (let i = 1; i < all.items.length; i++) {
      assert.ok(Date.parse(all.items[i - 1].created_at) <= Date.parse(all.items[i].created_at), 'not oldest first');
    }
  });

  test('limit defaults to 50 and is checked', async () => {
    const p = `deflimit-${uniq()}-`;
    const page = expectStatus(await client.request('GET', '/v1/briefs', { token: viewer }), 200);
    assert.ok(page.items.length <= 50);
    for (const bad of ['0', '501', 'abc', '-1']) {
      const r = await client.request('GET', `/v1/briefs?limit=${bad}&name_prefix=${p}`, { token: viewer });
      expectProblem(r, 400, 'invalid_parameter', 'limit');
    }
    expectProblem(await client.request('GET', '/v1/briefs?cursor=garbage', { token: viewer }), 400, 'invalid_cursor');
    expectProblem(
      await client.request('GET', '/v1/briefs?colour=red', { token: viewer }),
      400,
      'unknown_parameter',
      'colour',
    );
  });

  test('pagination is stable while other briefs are being inserted', async () => {
    const p = `conc-${uniq()}-`;
    const before = [];
    for (let i = 0; i < 12; i++)
      before.push((await create(minimalBrief('embeddings', `${p}a${String(i).padStart(2, '0')}`))).brief.id);

    let inserted = 0;
    let inserting = true;
    const inserter = (async () => {
      for (let i = 0; i < 10; i++) {
        await create(minimalBrief('embeddings', `${p}b${String(i).padStart(2, '0')}`));
        inserted += 1;
        await sleep(5);
      }
      inserting = false;
    })();
    // Walk slowly so that inserts land between pages.
    const { items, pages } = await walk(`name_prefix=${encodeURIComponent(p)}&limit=3`, {
      between: async () => {
        if (inserting) await sleep(25);
      },
    });
    await inserter;
    assert.equal(inserted, 10);
    assert.ok(pages >= 4, `only ${pages} pages`);
    const ids = items.map((b) => b.id);
    assert.equal(new Set(ids).size, ids.length, 'a brief appeared twice');
    for (const id of before) {
      assert.equal(ids.filter((x) => x === id).length, 1, `pre-existing brief ${id} did not appear exactly once`);
    }
    // Pre-existing briefs come first, in creation order.
    assert.deepEqual(ids.slice(0, 12), before);
    // And afterwards, everything is there.
    const { items: again } = await walk(`name_prefix=${encodeURIComponent(p)}&limit=3`);
    assert.equal(again.length, 22);

    // The same, unfiltered, over the whole table.
    const snapshot = (await walk('limit=500')).items.map((b) => b.id);
    inserting = true;
    const inserter2 = (async () => {
      for (let i = 0; i < 10; i++) await create(minimalBrief('embeddings', `${p}c${i}`));
      inserting = false;
    })();
    const { items: all } = await walk('limit=3', {
      between: async () => {
        if (inserting) await sleep(10);
      },
    });
    await inserter2;
    const allIds = all.map((b) => b.id);
    assert.equal(new Set(allIds).size, allIds.length, 'a brief appeared twice (unfiltered)');
    for (const id of snapshot)
      assert.equal(allIds.filter((x) => x === id).length, 1, `brief ${id} not seen exactly once`);
  });

  test('kind filter', async () => {
    const p = `kind-${uniq()}-`;
    const t = (await create(minimalBrief('training', `${p}t`))).brief;
    await create(minimalBrief('embeddings', `${p}e`));
    await create(minimalBrief('inference_interactive', `${p}i`));
    const { items } = await walk(`kind=training&name_prefix=${encodeURIComponent(p)}`);
    assert.deepEqual(
      items.map((b) => b.id),
      [t.id],
    );
    const { items: allTraining } = await walk('kind=training&limit=2');
    assert.ok(allTraining.length >= 1);
    assert.ok(allTraining.every((b) => b.kind === 'training'));
    expectProblem(
      await client.request('GET', '/v1/briefs?kind=gaming', { token: viewer }),
      400,
      'invalid_parameter',
      'kind',
    );
  });

  test('name_prefix is a literal prefix: % _ and \\ are not wildcards', async () => {
    const p = `lit-${uniq()}-`;
    const names = [`${p}100%_off`, `${p}100x_off`, `${p}1_0a`, `${p}100b`, `${p}c\\d`, `${p}cxd`, `${p}C-upper`];
    const ids = {};
    for (const n of names) ids[n] = (await create(minimalBrief('inference_batch', n))).brief.id;
    const q = async (prefix) =>
      (await walk(`name_prefix=${encodeURIComponent(prefix)}`)).items.map((b) => b.name).sort();
    assert.deepEqual(await q(`${p}100%`), [`${p}100%_off`]);
    assert.deepEqual(await q(`${p}100%_`), [`${p}100%_off`]);
    assert.deepEqual(await q(`${p}1_0`), [`${p}1_0a`]);
    assert.deepEqual(await q(`${p}c\\`), [`${p}c\\d`]);
    assert.deepEqual(await q(`${p}%`), []);
    assert.deepEqual(await q(`${p}_`), []);
    assert.deepEqual(await q(`${p}c`), [`${p}c\\d`, `${p}cxd`].sort());
    assert.equal((await q(p)).length, names.length);
    const long = 'x'.repeat(129);
    expectProblem(
      await client.request('GET', `/v1/briefs?name_prefix=${long}`, { token: viewer }),
      400,
      'invalid_parameter',
      'name_prefix',
    );
  });

  test('filters are kept across pages', async () => {
    const p = `keep-${uniq()}-`;
    for (let i = 0; i < 4; i++) await create(minimalBrief('fine_tuning', `${p}${i}`));
    await create(minimalBrief('training', `${p}x`));
    const { items, pages } = await walk(`kind=fine_tuning&name_prefix=${encodeURIComponent(p)}&limit=1`);
    assert.equal(items.length, 4);
    assert.ok(pages >= 4);
    assert.ok(items.every((b) => b.kind === 'fine_tuning' && b.name.startsWith(p)));
  });
});

describe('ETags and If-Match', () => {
  test('GET answers an ETag; If-None-Match answers 304', async () => {
    const { brief } = await create(chatBrief());
    const a = await client.request('GET', `/v1/briefs/${brief.id}`, { token: viewer });
    expectStatus(a, 200);
    const etag = a.headers.get('etag');
    const b = await client.request('GET', `/v1/briefs/${brief.id}`, {
      token: viewer,
      headers: { 'If-None-Match': etag },
    });
    expectStatus(b, 304);
    assert.equal(b.headers.get('etag'), etag);
    const c = await client.request('GET', `/v1/briefs/${brief.id}`, {
      token: viewer,
      headers: { 'If-None-Match': '"nope"' },
    });
    expectStatus(c, 200);

    const l1 = await client.request('GET', '/v1/briefs?limit=500', { token: viewer });
    const le = l1.headers.get('etag');
    expectStatus(
      await client.request('GET', '/v1/briefs?limit=500', { token: viewer, headers: { 'If-None-Match': le } }),
      304,
    );
    await create(chatBrief());
    const l2 = await client.request('GET', '/v1/briefs?limit=500', { token: viewer, headers: { 'If-None-Match': le } });
    expectStatus(l2, 200);
    assert.notEqual(l2.headers.get('etag'), le);
  });

  test('PUT needs If-Match (428), refuses a stale one (412), and bumps revision', async () => {
    const { brief } = await create(chatBrief());
    const url = `/v1/briefs/${brief.id}`;
    const g0 = await client.request('GET', url, { token: viewer });
    expectStatus(g0, 200);
    const etag0 = g0.headers.get('etag');
    await sleep(1100); // so that updated_at differs even at one-second resolution

    const next = chatBrief({ name: `${brief.name}-v2`, description: 'Second revision.' });
    next.load.concurrency = 24;

    expectProblem(await client.request('PUT', url, { token: operator, body: next }), 428, 'precondition_required');
    expectProblem(
      await client.request('PUT', url, { token: operator, body: next, headers: { 'If-Match': '"0123456789abcdef"' } }),
      412,
      'precondition_failed',
    );
    const still = expectStatus(await client.request('GET', url, { token: viewer }), 200);
    assert.equal(still.revision, 1, 'a refused PUT changed the brief');

    const put = await client.request('PUT', url, { token: operator, body: next, headers: { 'If-Match': etag0 } });
    const v2 = expectStatus(put, 200);
    assert.equal(v2.revision, 2);
    assert.equal(v2.id, brief.id);
    assert.equal(v2.created_at, brief.created_at);
    assert.equal(v2.created_by, brief.created_by);
    assert.notEqual(v2.updated_at, brief.updated_at);
    assert.ok(Date.parse(v2.updated_at) > Date.parse(brief.updated_at));
    for (const [k, v] of Object.entries(next)) assert.deepEqual(v2[k], v, `member ${k} not replaced`);
    const etag1 = put.headers.get('etag');
    assert.ok(etag1, 'PUT answer lacks ETag');
    assert.notEqual(etag1, etag0);

    const g1 = await client.request('GET', url, { token: viewer });
    assert.deepEqual(expectStatus(g1, 200), v2);
    assert.equal(g1.headers.get('etag'), etag1, 'the ETag of the PUT answer is not the one GET answers');

    // The old ETag no longer matches; the new one does.
    expectProblem(
      await client.request('PUT', url, { token: operator, body: next, headers: { 'If-Match': etag0 } }),
      412,
      'precondition_failed',
    );
    const v3 = expectStatus(
      await client.request('PUT', url, { token: admin, body: next, headers: { 'If-Match': etag1 } }),
      200,
    );
    assert.equal(v3.revision, 3);
    expectStatus(await client.request('GET', url, { token: viewer, headers: { 'If-None-Match': etag1 } }), 200);
  });

  test('PUT replaces the whole brief: members left out are removed', async () => {
    const { brief } = await create(chatBrief());
    const url = `/v1/briefs/${brief.id}`;
    const etag = (await client.request('GET', url, { token: viewer })).headers.get('etag');
    const minimal = minimalBrief('inference_interactive', brief.name);
    const v2 = expectStatus(
      await client.request('PUT', url, { token: operator, body: minimal, headers: { 'If-Match': etag } }),
      200,
    );
    for (const k of ['description', 'data', 'availability'])
      assert.equal(v2[k], undefined, `${k} survived a full replacement`);
    assert.deepEqual(v2.model, minimal.model);
  });

  test('PUT validates the body like POST, and changes nothing when refused', async () => {
    const { brief } = await create(chatBrief());
    const url = `/v1/briefs/${brief.id}`;
    const etag = (await client.request('GET', url, { token: viewer })).headers.get('etag');
    const bad = [
      [{ ...chatBrief(), colour: 'red' }, 'unknown_field', 'colour'],
      [withPath(chatBrief(), 'model.precision', undefined), 'missing_field', 'model.precision'],
      [withPath(chatBrief(), 'targets[0].metric', 'items_per_hour'), 'invalid_field', 'targets[0].metric'],
      [{ ...chatBrief(), id: brief.id }, 'unknown_field', 'id'],
      [{ ...chatBrief(), revision: 7 }, 'unknown_field', 'revision'],
    ];
    for (const [body, code, field] of bad) {
      const r = await client.request('PUT', url, { token: operator, body, headers: { 'If-Match': etag } });
      expectProblem(r, 400, code, field);
    }
    const g = await client.request('GET', url, { token: viewer });
    assert.deepEqual(expectStatus(g, 200), brief);
    assert.equal(g.headers.get('etag'), etag);
  });

  test('PUT: roles, unknown ids, media type', async () => {
    const { brief } = await create(chatBrief());
    const url = `/v1/briefs/${brief.id}`;
    const etag = (await client.request('GET', url, { token: viewer })).headers.get('etag');
    expectProblem(
      await client.request('PUT', url, { token: viewer, body: chatBrief(), headers: { 'If-Match': etag } }),
      403,
      'insufficient_role',
    );
    expectProblem(
      await client.request('PUT', `/v1/briefs/${crypto.randomUUID()}`, {
        token: operator,
        body: chatBrief(),
        headers: { 'If-Match': etag },
      }),
      404,
      'not_found',
    );
    expectProblem(
      await client.request('PUT', url, {
        token: operator,
        rawBody: JSON.stringify(chatBrief()),
        contentType: 'text/plain',
        headers: { 'If-Match': etag },
      }),
      415,
      'unsupported_media_type',
    );
  });

  test('the updates are in the audit trail as brief.update', async () => {
    const { brief } = await create(chatBrief());
    const url = `/v1/briefs/${brief.id}`;
    const etag = (await client.request('GET', url, { token: viewer })).headers.get('etag');
    const rid = `brief-update-${uniq()}`;
    expectStatus(
      await client.request('PUT', url, {
        token: operator,
        body: chatBrief(),
        headers: { 'If-Match': etag, 'X-Request-Id': rid },
      }),
      200,
    );
    const evs = await auditEvents('brief.update', brief.id);
    assert.equal(evs.length, 1, `want one event, got ${JSON.stringify(evs)}`);
    assert.equal(evs[0].resource_type, 'brief');
    assert.equal(evs[0].method, 'PUT');
    assert.equal(evs[0].path, url);
    assert.equal(evs[0].status, 200);
    assert.equal(evs[0].principal, operatorSub);
    assert.equal(evs[0].request_id, rid);
  });
});

describe('delete', () => {
  test('operator may not delete (403); admin deletes (204), then 404', async () => {
    const { brief } = await create(chatBrief());
    const url = `/v1/briefs/${brief.id}`;
    expectProblem(await client.request('DELETE', url, { token: operator }), 403, 'insufficient_role');
    expectProblem(await client.request('DELETE', url, { token: viewer }), 403, 'insufficient_role');
    expectStatus(await client.request('GET', url, { token: viewer }), 200);

    const rid = `brief-delete-${uniq()}`;
    const del = await client.request('DELETE', url, { token: admin, headers: { 'X-Request-Id': rid } });
    expectStatus(del, 204);
    assert.equal(del.text, '');
    expectProblem(await client.request('GET', url, { token: viewer }), 404, 'not_found');
    expectProblem(await client.request('DELETE', url, { token: admin }), 404, 'not_found');
    expectProblem(await client.request('DELETE', '/v1/briefs/not-a-uuid', { token: admin }), 404, 'not_found');
    const { items } = await walk(`name_prefix=${encodeURIComponent(brief.name)}`);
    assert.deepEqual(items, []);

    const evs = await auditEvents('brief.delete', brief.id);
    assert.equal(evs.length, 1, `want one event, got ${JSON.stringify(evs)}`);
    assert.equal(evs[0].method, 'DELETE');
    assert.equal(evs[0].status, 204);
    assert.equal(evs[0].principal, 'briefs-admin');
    assert.equal(evs[0].role, 'admin');
    assert.equal(evs[0].request_id, rid);
  });

  test('a deleted brief cannot be updated', async () => {
    const { brief } = await create(chatBrief());
    const url = `/v1/briefs/${brief.id}`;
    const etag = (await client.request('GET', url, { token: viewer })).headers.get('etag');
    expectStatus(await client.request('DELETE', url, { token: admin }), 204);
    expectProblem(
      await client.request('PUT', url, { token: operator, body: chatBrief(), headers: { 'If-Match': etag } }),
      404,
      'not_found',
    );
  });
});

describe('validation', () => {
  const base = () => chatBrief({ name: 'validation' });
  const trainingBase = () => ({ ...minimalBrief('training', 'validation-training'), training: { optimizer: 'adamw' } });

  // [title, body, code, field]
  const cases = [
    ['unknown top-level member', () => ({ ...base(), colour: 'red' }), 'unknown_field', 'colour'],
    [
      'unknown nested member',
      () => withPath(base(), 'model.architecture.foo', 1),
      'unknown_field',
      'model.architecture.foo',
    ],
    ['unknown member in model', () => withPath(base(), 'model.vendor', 'x'), 'unknown_field', 'model.vendor'],
    ['unknown member in load', () => withPath(base(), 'load.qps', 3), 'unknown_field', 'load.qps'],
    ['unknown member in a target', () => withPath(base(), 'targets[1].unit', 'ms'), 'unknown_field', 'targets[1].unit'],
    [
      'unknown member in data',
      () => withPath(base(), 'data.durable.bucket', 'b'),
      'unknown_field',
      'data.durable.bucket',
    ],
    ['unknown member in training', () => withPath(trainingBase(), 'training.lr', 0.1), 'unknown_field', 'training.lr'],
    ['missing name', () => withPath(base(), 'name', undefined), 'missing_field', 'name'],
    ['missing kind', () => withPath(base(), 'kind', undefined), 'missing_field', 'kind'],
    ['missing model', () => withPath(base(), 'model', undefined), 'missing_field', 'model'],
    [
      'missing model.precision',
      () => withPath(base(), 'model.precision', undefined),
      'missing_field',
      'model.precision',
    ],
    ['missing model.name', () => withPath(base(), 'model.name', undefined), 'missing_field', 'model.name'],
    [
      'missing model.parameter_count',
      () => withPath(base(), 'model.parameter_count', undefined),
      'missing_field',
      'model.parameter_count',
    ],
    ['missing load', () => withPath(base(), 'load', undefined), 'missing_field', 'load'],
    [
      'missing load.concurrency',
      () => withPath(base(), 'load.concurrency', undefined),
      'missing_field',
      'load.concurrency',
    ],
    ['missing targets', () => withPath(base(), 'targets', undefined), 'missing_field', 'targets'],
    [
      'missing targets[0].value',
      () => withPath(base(), 'targets[0].value', undefined),
      'missing_field',
      'targets[0].value',
    ],
    [
      'missing data.durable.location',
      () => withPath(base(), 'data.durable', {}),
      'missing_field',
      'data.durable.location',
    ],
    [
      'parameter_count 1e5',
      () => withPath(base(), 'model.parameter_count', 1e5),
      'invalid_field',
      'model.parameter_count',
    ],
    [
      'parameter_count 1e14',
      () => withPath(base(), 'model.parameter_count', 1e14),
      'invalid_field',
      'model.parameter_count',
    ],
    [
      'parameter_count not integral',
      () => withPath(base(), 'model.parameter_count', 7e9 + 0.5),
      'invalid_field',
      'model.parameter_count',
    ],
    [
      'parameter_count as a string',
      () => withPath(base(), 'model.parameter_count', '7e9'),
      'invalid_field',
      'model.parameter_count',
    ],
    [
      'max_input_tokens 10000001',
      () => withPath(base(), 'load.max_input_tokens', 10_000_001),
      'invalid_field',
      'load.max_input_tokens',
    ],
    [
      'expected_output_tokens 10000001',
      () => withPath(base(), 'load.expected_output_tokens', 10_000_001),
      'invalid_field',
      'load.expected_output_tokens',
    ],
    ['negative tokens', () => withPath(base(), 'load.max_input_tokens', -1), 'invalid_field', 'load.max_input_tokens'],
    [
      'fractional tokens',
      () => withPath(base(), 'load.max_input_tokens', 10.5),
      'invalid_field',
      'load.max_input_tokens',
    ],
    ['concurrency 0', () => withPath(base(), 'load.concurrency', 0), 'invalid_field', 'load.concurrency'],
    ['concurrency 1000001', () => withPath(base(), 'load.concurrency', 1_000_001), 'invalid_field', 'load.concurrency'],
    ['concurrency as a string', () => withPath(base(), 'load.concurrency', '16'), 'invalid_field', 'load.concurrency'],
    [
      'peak_concurrency < concurrency',
      () => withPath(base(), 'load.peak_concurrency', 8),
      'invalid_field',
      'load.peak_concurrency',
    ],
    ['item_size_bytes 0', () => withPath(base(), 'load.item_size_bytes', 0), 'invalid_field', 'load.item_size_bytes'],
    [
      'peak_requests_per_minute 0',
      () => withPath(base(), 'load.peak_requests_per_minute', 0),
      'invalid_field',
      'load.peak_requests_per_minute',
    ],
    [
      'metric not allowed for the kind',
      () => withPath(base(), 'targets[0].metric', 'items_per_hour'),
      'invalid_field',
      'targets[0].metric',
    ],
    [
      'metric not allowed for the kind (second target)',
      () => withPath(base(), 'targets[1].metric', 'step_time_s'),
      'invalid_field',
      'targets[1].metric',
    ],
    [
      'training metric on embeddings',
      () => withPath(minimalBrief('embeddings', 'e'), 'targets[0].metric', 'tokens_per_second'),
      'invalid_field',
      'targets[0].metric',
    ],
    [
      'serving metric on training',
      () => withPath(trainingBase(), 'targets[0].metric', 'time_to_first_token_ms'),
      'invalid_field',
      'targets[0].metric',
    ],
    ['unknown metric', () => withPath(base(), 'targets[0].metric', 'happiness'), 'invalid_field', 'targets[0].metric'],
    ['target value 0', () => withPath(base(), 'targets[0].value', 0), 'invalid_field', 'targets[0].value'],
    ['target value 1e13', () => withPath(base(), 'targets[0].value', 1e13), 'invalid_field', 'targets[0].value'],
    [
      'bad percentile',
      () => withPath(base(), 'targets[0].percentile', 'p42'),
      'invalid_field',
      'targets[0].percentile',
    ],
    ['no targets', () => withPath(base(), 'targets', []), 'invalid_field', 'targets'],
    [
      'nine targets',
      () =>
        withPath(
          base(),
          'targets',
          Array.from({ length: 9 }, () => ({ metric: 'tail_latency_ms', value: 1 })),
        ),
      'invalid_field',
      'targets',
    ],
    [
      'targets not an array',
      () => withPath(base(), 'targets', { metric: 'tail_latency_ms', value: 1 }),
      'invalid_field',
      'targets',
    ],
    [
      'training on an inference kind',
      () => ({ ...base(), training: { optimizer: 'adamw' } }),
      'invalid_field',
      'training',
    ],
    [
      'bad optimizer',
      () => withPath(trainingBase(), 'training.optimizer', 'adam'),
      'invalid_field',
      'training.optimizer',
    ],
    [
      'activation_bytes 1e16',
      () => withPath(trainingBase(), 'training.activation_bytes', 1e16),
      'invalid_field',
      'training.activation_bytes',
    ],
    ['bad precision enum', () => withPath(base(), 'model.precision', 'fp64'), 'invalid_field', 'model.precision'],
    [
      'int4 KV cache',
      () => withPath(base(), 'model.kv_cache_precision', 'int4'),
      'invalid_field',
      'model.kv_cache_precision',
    ],
    ['bad kind', () => withPath(base(), 'kind', 'gaming'), 'invalid_field', 'kind'],
    ['empty name', () => withPath(base(), 'name', ''), 'invalid_field', 'name'],
    ['name of 129 characters', () => withPath(base(), 'name', 'n'.repeat(129)), 'invalid_field', 'name'],
    ['name not a string', () => withPath(base(), 'name', 42), 'invalid_field', 'name'],
    [
      'description of 2001 characters',
      () => withPath(base(), 'description', 'd'.repeat(2001)),
      'invalid_field',
      'description',
    ],
    ['model name with a space', () => withPath(base(), 'model.name', 'my model'), 'invalid_field', 'model.name'],
    ['model name injection', () => withPath(base(), 'model.name', 'x;rm -rf /'), 'invalid_field', 'model.name'],
    [
      'model name of 201 characters',
      () => withPath(base(), 'model.name', 'm'.repeat(201)),
      'invalid_field',
      'model.name',
    ],
    [
      'model revision injection',
      () => withPath(base(), 'model.revision', 'main$(reboot)'),
      'invalid_field',
      'model.revision',
    ],
    [
      'quantization with a space',
      () => withPath(base(), 'model.quantization', 'a w q'),
      'invalid_field',
      'model.quantization',
    ],
    ['layers 0', () => withPath(base(), 'model.architecture.layers', 0), 'invalid_field', 'model.architecture.layers'],
    [
      'layers 1001',
      () => withPath(base(), 'model.architecture.layers', 1001),
      'invalid_field',
      'model.architecture.layers',
    ],
    [
      'kv_heads 1025',
      () => withPath(base(), 'model.architecture.kv_heads', 1025),
      'invalid_field',
      'model.architecture.kv_heads',
    ],
    [
      'head_dim fractional',
      () => withPath(base(), 'model.architecture.head_dim', 64.5),
      'invalid_field',
      'model.architecture.head_dim',
    ],
    [
      'hidden_size 1048577',
      () => withPath(base(), 'model.architecture.hidden_size', 1_048_577),
      'invalid_field',
      'model.architecture.hidden_size',
    ],
    [
      'data location injection',
      () => withPath(base(), 'data.durable.location', '/data; rm -rf /'),
      'invalid_field',
      'data.durable.location',
    ],
    [
      'data location with a newline',
      () => withPath(base(), 'data.ephemeral.location', '/scratch\n/etc'),
      'invalid_field',
      'data.ephemeral.location',
    ],
    [
      'availability 101 %',
      () => withPath(base(), 'availability.target_pct', 101),
      'invalid_field',
      'availability.target_pct',
    ],
    [
      'availability 0 %',
      () => withPath(base(), 'availability.target_pct', 0),
      'invalid_field',
      'availability.target_pct',
    ],
    [
      'recovery time negative',
      () => withPath(base(), 'availability.recovery_time_objective_s', -1),
      'invalid_field',
      'availability.recovery_time_objective_s',
    ],
    ['model not an object', () => withPath(base(), 'model', 'llama'), 'invalid_field', 'model'],
    ['load null', () => withPath(base(), 'load', null), 'invalid_field', 'load'],
  ];

  for (const [title, make, code, field] of cases) {
    test(`${title} → 400 ${code} (${field})`, async () => {
      const res = await client.request('POST', '/v1/briefs', { token: operator, body: make() });
      expectProblem(res, 400, code, field);
    });
  }

  test('a duplicate JSON key answers 400 duplicate_key', async () => {
    const raw = JSON.stringify(base()).replace(/^\{/, '{"name":"first",');
    const res = await client.request('POST', '/v1/briefs', {
      token: operator,
      rawBody: raw,
      contentType: 'application/json',
    });
    expectProblem(res, 400, 'duplicate_key');
    const nested = JSON.stringify(base()).replace('"model":{', '"model":{"precision":"fp16",');
    const r2 = await client.request('POST', '/v1/briefs', {
      token: operator,
      rawBody: nested,
      contentType: 'application/json',
    });
    expectProblem(r2, 400, 'duplicate_key');
  });

  test('a body that is not an object answers 400 body_not_object', async () => {
    for (const raw of ['[]', '"brief"', '42', 'null', `[${JSON.stringify(base())}]`]) {
      const res = await client.request('POST', '/v1/briefs', {
        token: operator,
        rawBody: raw,
        contentType: 'application/json',
      });
      expectProblem(res, 400, 'body_not_object');
    }
  });

  test('malformed JSON, a wrong media type and an oversized body', async () => {
    const bad = await client.request('POST', '/v1/briefs', {
      token: operator,
      rawBody: '{"name":',
      contentType: 'application/json',
    });
    expectProblem(bad, 400, 'invalid_json');
    const txt = await client.request('POST', '/v1/briefs', {
      token: operator,
      rawBody: JSON.stringify(base()),
      contentType: 'text/plain',
    });
    expectProblem(txt, 415, 'unsupported_media_type');
    const huge = await client.request('POST', '/v1/briefs', {
      token: operator,
      body: { ...base(), description: 'x'.repeat(1024 * 1024 + 10) },
    });
    expectProblem(huge, 413, 'payload_too_large');
  });

  test('nothing was stored by the refused requests', async () => {
    const { items } = await walk('name_prefix=validation');
    assert.deepEqual(items, [], `refused briefs were stored: ${items.map((b) => b.name)}`);
  });
});
