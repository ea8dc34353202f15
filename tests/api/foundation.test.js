'use strict';
// The HTTP foundation: service endpoints, request ids, routing errors, body
// and query parsing. Every answer is validated against the spec by api().

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { startServer, ROOT } = require('./lib/server');
const { api, specRoutes, specText, loadSpec } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

let srv;
let client;
let admin;
let viewer;

// A POST body that is valid except for what a test changes.
let seq = 0;
function validModel(overrides = {}) {
  seq += 1;
  return {
    key: `found_${process.pid}_${seq}`,
    display_name: 'Foundation Test GPU',
    memory_gib: 48,
    supported_formats: ['fp16', 'bf16'],
    ...overrides,
  };
}

before(async () => {
  srv = await startServer({ name: 'foundation' });
  client = api(srv);
  admin = srv.token('admin', { sub: 'found-admin' });
  viewer = srv.token('viewer', { sub: 'found-viewer' });
});

after(async () => {
  if (srv) await srv.stop();
});

describe('service endpoints', () => {
  test('GET /healthz answers ok and a version', async () => {
    const res = await client.request('GET', '/healthz');
    const b = expectStatus(res, 200);
    assert.equal(b.status, 'ok');
    assert.ok(b.version.length > 0);
  });

  test('GET /readyz answers ready with every migration applied', async () => {
    const res = await client.request('GET', '/readyz');
    const b = expectStatus(res, 200);
    const files = fs.readdirSync(path.join(ROOT, 'migrations')).filter((f) => f.endsWith('.sql'));
    assert.equal(b.migrations_applied, files.length, `migrations/ has ${files.length} .sql files`);
  });

  test('GET /metrics exposes HTTP, pool and build series', async () => {
    await client.request('GET', '/v1/gpu-models?limit=1', { token: viewer });
    const res = await client.request('GET', '/metrics');
    expectStatus(res, 200);
    for (const needle of [
      'gpufleet_http_requests_total{',
      'gpufleet_http_request_duration_seconds_bucket',
      'gpufleet_db_pool_',
      'gpufleet_build_info',
    ]) {
      assert.ok(res.text.includes(needle), `metrics lack ${needle}:\n${res.text.slice(0, 2000)}`);
    }
    // Route labels use templates, never raw paths (bounded cardinality).
    await client.request('GET', '/v1/gpu-models/h100_sxm', { token: viewer });
    const again = await client.request('GET', '/metrics');
    assert.ok(!again.text.includes('/v1/gpu-models/h100_sxm'), 'a raw path leaked into a metric label');
  });

  test('GET /openapi.yaml serves this contract, byte for byte', async () => {
    const res = await client.request('GET', '/openapi.yaml');
    expectStatus(res, 200);
    assert.ok(res.text === specText(), 'served /openapi.yaml differs from openapi/openapi.yaml (rebuild?)');
  });

  test('HEAD is answered like GET, without a body', async () => {
    const res = await client.request('HEAD', '/healthz');
    expectStatus(res, 200);
    const g = await client.request('HEAD', '/v1/gpu-models/h100_sxm', { token: viewer });
    expectStatus(g, 200);
    assert.ok(g.headers.get('etag'), 'HEAD lacks the ETag of GET');
  });

  test('every spec operation is routed (never 404/405 for its own path)', async () => {
    // A stream (text/event-stream) never ends: ask for its head only.
    const streams = (method, template) => {
      const ok = loadSpec().spec.paths[template][method.toLowerCase()].responses['200'];
      return Boolean(ok && ok.content && ok.content['text/event-stream']);
    };
    for (const r of specRoutes()) {
      const [method, template] = r.split(' ');
      const p = template.replace('{id}', '00000000-0000-4000-8000-000000000000').replace('{key}', 'no_such_model');
      const res = await client.request(streams(method, template) ? 'HEAD' : method, p, {
        token: admin,
        body: method === 'POST' ? {} : undefined,
      });
      assert.notEqual(res.status, 405, `${r} answered 405`);
      if (!template.includes('{')) assert.notEqual(res.status, 404, `${r} answered 404`);
    }
  });
});

describe('X-Request-Id', () => {
  test('a valid id is echoed', async () => {
    const id = 'Req-1.2_3';
    const res = await client.request('GET', '/healthz', { headers: { 'X-Request-Id': id } });
    assert.equal(res.headers.get('x-request-id'), id);
  });

  test('a 128-character id is echoed', async () => {
    const id = 'a'.repeat(128);
    const res = await client.request('GET', '/healthz', { headers: { 'X-Request-Id': id } });
    assert.equal(res.headers.get('x-request-id'), id);
  });

  test('an id is generated when absent, and differs per request', async () => {
    const a = await client.request('GET', '/healthz');
    const b = await client.request('GET', '/healthz');
    assert.ok(a.headers.get('x-request-id'));
    assert.notEqual(a.headers.get('x-request-id'), b.headers.get('x-request-id'));
  });

  for (const [what, id] of [
    ['a space and a bang', 'bad id!'],
    ['129 characters', 'b'.repeat(129)],
    ['a quote', 'x"y'],
  ]) {
    test(`an invalid id (${what}) is replaced by a generated one`, async () => {
      const res = await client.request('GET', '/healthz', { headers: { 'X-Request-Id': id } });
      const got = res.headers.get('x-request-id');
      assert.ok(got, 'no X-Request-Id');
      assert.notEqual(got, id);
    });
  }

  test('problem documents carry the request id', async () => {
    const res = await client.request('GET', '/v1/nope', { headers: { 'X-Request-Id': 'rid-problem-1' } });
    expectProblem(res, 404, 'not_found');
    assert.equal(res.headers.get('x-request-id'), 'rid-problem-1');
    if (res.body.request_id !== undefined) assert.equal(res.body.request_id, 'rid-problem-1');
  });
});

describe('routing errors', () => {
  test('unknown paths answer 404 not_found', async () => {
    for (const p of ['/nope', '/v1/nope', '/v1', '/v1/gpu-models/h100_sxm/extra', '/healthz/']) {
      expectProblem(await client.request('GET', p, { token: admin }), 404, 'not_found');
    }
  });

  test('a known path with a wrong method answers 405 with Allow', async () => {
    for (const [m, p] of [
      ['DELETE', '/v1/gpu-models'],
      ['PUT', '/v1/gpu-models/h100_sxm'],
      ['POST', '/healthz'],
      ['PATCH', '/v1/audit-events'],
    ]) {
      const res = await client.request(m, p, { token: admin, body: m === 'DELETE' ? undefined : {} });
      expectProblem(res, 405, 'method_not_allowed');
      assert.ok(res.headers.get('allow'), 'Allow header missing');
    }
  });

  test('a URL longer than 8 KiB answers 414', async () => {
    const q = '/v1/gpu-models?vendor=' + 'a'.repeat(9000);
    expectProblem(await client.request('GET', q, { token: viewer }), 414, 'uri_too_long');
    expectProblem(await client.request('GET', '/' + 'p'.repeat(9000)), 414, 'uri_too_long');
  });
});

describe('request bodies', () => {
  const post = (opts) => client.request('POST', '/v1/gpu-models', { token: admin, ...opts });

  test('a body over 1 MiB answers 413', async () => {
    const big = JSON.stringify({ ...validModel(), display_name: 'x'.repeat(1024 * 1024 + 10) });
    expectProblem(await post({ rawBody: big, contentType: 'application/json' }), 413, 'payload_too_large');
  });

  test('an oversized body is read to its end before the 413, so the client sees the answer (chunked too, 10 times)', async () => {
    const http = require('node:http');
    const chunk = Buffer.alloc(64 * 1024, 'x');
    for (let i = 0; i < 10; i++) {
      for (const chunked of [false, true]) {
        const n = 40; // 2.5 MiB
        const res = await new Promise((resolve, reject) => {
          const headers = { Authorization: `Bearer ${admin}`, 'Content-Type': 'application/json' };
          if (!chunked) headers['Content-Length'] = String(chunk.length * n);
          const req = http.request(`${srv.url}/v1/gpu-models`, { method: 'POST', headers }, (r) => {
            let text = '';
            r.on('data', (d) => (text += d)).on('end', () => resolve({ status: r.statusCode, text }));
          });
          req.on('error', reject);
          for (let k = 0; k < n; k++) req.write(chunk);
          req.end();
        });
        assert.equal(res.status, 413, `${chunked ? 'chunked' : 'with Content-Length'}: ${res.text}`);
        assert.equal(JSON.parse(res.text).code, 'payload_too_large');
      }
    }
  });

  test('a body without application/json answers 415', async () => {
    const body = JSON.stringify(validModel());
    expectProblem(await post({ rawBody: body, contentType: 'text/plain' }), 415, 'unsupported_media_type');
    expectProblem(await post({ rawBody: body, contentType: null }), 415, 'unsupported_media_type');
    expectProblem(
      await post({ rawBody: body, contentType: 'application/x-www-form-urlencoded' }),
      415,
      'unsupported_media_type',
    );
  });

  test('application/json with a charset parameter is accepted', async () => {
    const res = await post({ rawBody: JSON.stringify(validModel()), contentType: 'application/json; charset=utf-8' });
    expectStatus(res, 201);
  });

  test('malformed JSON answers invalid_json', async () => {
    for (const raw of ['{"key":', '{key: 1}', '', '{"a":1} trailing', '\u00ff\u00fe']) {
      expectProblem(await post({ rawBody: raw, contentType: 'application/json' }), 400, 'invalid_json');
    }
  });

  test('deeply nested JSON answers 400, not 5xx', async () => {
    const raw = '['.repeat(5000) + ']'.repeat(5000);
    const res = await post({ rawBody: `{"dense_tflops":${raw}}`, contentType: 'application/json' });
    assert.equal(res.status, 400, `want 400; got ${res.status} ${res.text.slice(0, 300)}`);
  });

  test('a JSON array (or scalar) answers body_not_object', async () => {
    for (const raw of ['[]', '[{"key":"a"}]', '42', '"x"', 'null']) {
      expectProblem(await post({ rawBody: raw, contentType: 'application/json' }), 400, 'body_not_object');
    }
  });

  test('duplicate member names answer duplicate_key', async () => {
    const m = validModel();
    const raw = `{"key":"${m.key}","key":"other_key","display_name":"x","memory_gib":1,"supported_formats":["fp16"]}`;
    expectProblem(await post({ rawBody: raw, contentType: 'application/json' }), 400, 'duplicate_key');
  });

  test('an unknown member answers unknown_field naming it', async () => {
    expectProblem(await post({ body: validModel({ colour: 'green' }) }), 400, 'unknown_field', 'colour');
  });

  for (const f of ['key', 'display_name', 'memory_gib', 'supported_formats']) {
    test(`a missing ${f} answers missing_field`, async () => {
      const b = validModel();
      delete b[f];
      expectProblem(await post({ body: b }), 400, 'missing_field', f);
    });
  }

  const invalid = [
    ['key', 'Bad Key'],
    ['key', 'a'],
    ['key', 'a'.repeat(65)],
    ['key', '_leading'],
    ['key', 42],
    ['display_name', ''],
    ['display_name', 'x'.repeat(129)],
    ['display_name', ['x']],
    ['memory_gib', '80'],
    ['memory_gib', 0],
    ['memory_gib', -1],
    ['memory_gib', 4097],
    ['memory_gib', true],
    ['supported_formats', []],
    ['supported_formats', ['fp64']],
    ['supported_formats', ['fp16', 'fp16']],
    ['supported_formats', 'fp16'],
    ['vendor', ''],
    ['vendor', 'v'.repeat(65)],
    ['memory_bandwidth_gbps', 0],
    ['memory_bandwidth_gbps', 100001],
    ['interconnect_bandwidth_gbps', -1],
    ['compute_capability', '9'],
    ['compute_capability', '9.0.1'],
    ['compute_capability', 9.0],
    ['nvidia_smi_name', ''],
    ['nvidia_smi_name', 'n'.repeat(97)],
    ['nvidia_smi_name', 'tab\there'],
    ['nvidia_smi_memory_total_mib', 1.5],
    ['nvidia_smi_memory_total_mib', 0],
    ['nvidia_smi_memory_total_mib', 10000001],
    ['memory_type', 'm'.repeat(129)],
    ['form_factor', 7],
    ['dense_tflops', 'fast'],
  ];
  for (const [field, value] of invalid) {
    test(`${field} = ${JSON.stringify(value).slice(0, 40)} answers invalid_field`, async () => {
      expectProblem(await post({ body: validModel({ [field]: value }) }), 400, 'invalid_field', field);
    });
  }

  test('an unknown member inside dense_tflops is refused', async () => {
    const res = await post({ body: validModel({ dense_tflops: { fp64: 1 } }) });
    expectProblem(res, 400, ['unknown_field', 'invalid_field']);
  });
});

describe('query parameters', () => {
  test('an unknown query parameter answers unknown_parameter', async () => {
    expectProblem(
      await client.request('GET', '/v1/gpu-models?colour=green', { token: viewer }),
      400,
      'unknown_parameter',
      'colour',
    );
    expectProblem(
      await client.request('GET', '/v1/audit-events?colour=green', { token: admin }),
      400,
      'unknown_parameter',
      'colour',
    );
  });

  for (const v of ['0', '501', 'abc', '-1', '1.5', '', '10abc']) {
    test(`limit=${v} answers invalid_parameter`, async () => {
      const res = await client.request('GET', `/v1/gpu-models?limit=${v}`, { token: viewer });
      expectProblem(res, 400, 'invalid_parameter', 'limit');
    });
  }

  test('limit=1 and limit=500 are accepted', async () => {
    const one = expectStatus(await client.request('GET', '/v1/gpu-models?limit=1', { token: viewer }), 200);
    assert.equal(one.items.length, 1);
    expectStatus(await client.request('GET', '/v1/gpu-models?limit=500', { token: viewer }), 200);
  });

  test('an invalid source filter answers invalid_parameter', async () => {
    const res = await client.request('GET', '/v1/gpu-models?source=bogus', { token: viewer });
    expectProblem(res, 400, 'invalid_parameter', 'source');
  });

  test('an invalid since/until answers invalid_parameter', async () => {
    for (const p of ['since', 'until']) {
      const res = await client.request('GET', `/v1/audit-events?${p}=yesterday`, { token: admin });
      expectProblem(res, 400, 'invalid_parameter', p);
    }
  });

  for (const c of ['garbage!!', 'AAAA', 'eyJrIjoiaDEwMF9zeG0ifQ', 'x'.repeat(600)]) {
    test(`cursor=${c.slice(0, 24)} answers invalid_cursor`, async () => {
      const res = await client.request('GET', `/v1/gpu-models?cursor=${encodeURIComponent(c)}`, { token: viewer });
      expectProblem(res, 400, 'invalid_cursor');
      const res2 = await client.request('GET', `/v1/audit-events?cursor=${encodeURIComponent(c)}`, { token: admin });
      expectProblem(res2, 400, 'invalid_cursor');
    });
  }

  test('a cursor from one list is refused by another', async () => {
    const page = expectStatus(await client.request('GET', '/v1/gpu-models?limit=1', { token: viewer }), 200);
    assert.ok(page.next_cursor, 'expected a next_cursor with limit=1');
    const res = await client.request('GET', `/v1/audit-events?cursor=${encodeURIComponent(page.next_cursor)}`, {
      token: admin,
    });
    expectProblem(res, 400, 'invalid_cursor');
  });
});
