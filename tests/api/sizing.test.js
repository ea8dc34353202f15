'use strict';
// Memory sizing: every term checked against hand-computed values (docs/product.md
// §2), the per-GPU answer for catalog models, the options, and that a stored
// brief sizes exactly like the same body posted to /v1/sizing.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

const GiB = 2 ** 30;

let srv;
let client;
let admin;
let operator;
let viewer;
let catalog; // GET /v1/gpu-models, by key

const uniq = () => crypto.randomBytes(4).toString('hex');

/** 7e9 parameters, bf16, interactive, no architecture. */
function chat7b(overrides = {}) {
  return {
    name: `sizing-7b-${uniq()}`,
    kind: 'inference_interactive',
    model: { name: 'acme/chat-7b', parameter_count: 7e9, precision: 'bf16' },
    load: { concurrency: 1, max_input_tokens: 7680, expected_output_tokens: 512 },
    targets: [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }],
    ...overrides,
  };
}

/** Llama-3.1-8B in bf16: 32 layers, 8 KV heads, head_dim 128. */
function llama8b({ concurrency = 1, peak, kvPrecision } = {}) {
  const b = chat7b({
    name: `sizing-llama-${uniq()}`,
    model: {
      name: 'meta-llama/Llama-3.1-8B-Instruct',
      parameter_count: 8030261248,
      architecture: { layers: 32, kv_heads: 8, head_dim: 128, hidden_size: 4096 },
      precision: 'bf16',
    },
  });
  b.load.concurrency = concurrency;
  if (peak !== undefined) b.load.peak_concurrency = peak;
  if (kvPrecision) b.model.kv_cache_precision = kvPrecision;
  return b;
}

function train7b(training, kind = 'training') {
  const b = {
    name: `sizing-train-${uniq()}`,
    kind,
    model: { name: 'acme/base-7b', parameter_count: 7e9, precision: 'bf16' },
    load: { concurrency: 8, max_input_tokens: 4096 },
    targets: [{ metric: 'tokens_per_second', value: 20000 }],
  };
  if (training !== undefined) b.training = training;
  return b;
}

async function size(body, query = '', token = viewer) {
  const res = await client.request('POST', `/v1/sizing${query}`, { token, body });
  return expectStatus(res, 200);
}

const near = (actual, expected, tol, what) =>
  assert.ok(
    typeof actual === 'number' && Math.abs(actual - expected) <= tol,
    `${what}: want ${expected} ± ${tol}, got ${actual}`,
  );

/** Memory per GPU as the contract defines it, from the catalog entry. */
function memGib(m) {
  return m.nvidia_smi_memory_total_mib != null ? m.nvidia_smi_memory_total_mib / 1024 : (m.memory_gib * 1e9) / GiB;
}

/** The sum of the estimated terms that count toward the total. */
function sumOfTerms(s) {
  let sum = 0;
  for (const [name, t] of Object.entries(s.terms)) {
    if (t.status !== 'estimated') continue;
    if (name === 'weights' && t.counted_in_total === false) continue;
    sum += t.bytes;
  }
  return sum;
}

/** Checks that hold for every estimate. */
function checkInvariants(s, { reservePct = 10, precision } = {}) {
  assert.equal(s.estimate, true);
  assert.equal(s.lower_bound, true);
  assert.ok(s.assumptions.length >= 1 && s.assumptions.every((a) => a.length > 0), 'assumptions empty');
  for (const [name, t] of Object.entries(s.terms)) {
    if (t.status === 'estimated') {
      assert.equal(typeof t.bytes, 'number', `${name}.bytes`);
      near(t.gib, t.bytes / GiB, 0.006, `${name}.gib`);
      assert.ok(t.formula, `${name} is estimated but has no formula`);
    } else {
      assert.equal(t.bytes, null, `${name} is ${t.status} but has bytes`);
      assert.equal(t.gib, null, `${name} is ${t.status} but has gib`);
      if (t.status === 'not_estimated') assert.ok(t.reason, `${name} is not estimated but gives no reason`);
    }
  }
  assert.equal(s.total.bytes, sumOfTerms(s), 'total is not the sum of the counted terms');
  near(s.total.gib, s.total.bytes / GiB, 0.006, 'total.gib');

  const keys = s.gpu_options.map((o) => o.gpu_model);
  assert.deepEqual(keys, [...keys].sort(), 'gpu_options not ordered by key');
  assert.deepEqual(keys, Object.keys(catalog).sort(), 'gpu_options is not one entry per catalog model');
  for (const o of s.gpu_options) {
    const m = catalog[o.gpu_model];
    const mem = memGib(m);
    near(o.memory_gib_per_gpu, mem, 0.006, `${o.gpu_model}.memory_gib_per_gpu`);
    near(o.usable_gib_per_gpu, mem * (1 - reservePct / 100), 0.006, `${o.gpu_model}.usable_gib_per_gpu`);
    assert.equal(o.display_name, m.display_name);
    const need = Math.max(1, Math.ceil(s.total.bytes / (mem * (1 - reservePct / 100) * GiB)));
    assert.equal(o.gpus_needed, need, `${o.gpu_model}.gpus_needed`);
    assert.equal(o.fits_single_gpu, need === 1, `${o.gpu_model}.fits_single_gpu`);
    assert.equal(o.needs_parallelism, need > 1, `${o.gpu_model}.needs_parallelism`);
    assert.equal(o.topology_matters, need > 1, `${o.gpu_model}.topology_matters`);
    assert.equal(
      o.precision_supported,
      m.supported_formats.includes(precision || s.precision),
      `${o.gpu_model}.precision_supported`,
    );
    if (need > 1) {
      assert.ok(o.warning, `${o.gpu_model} needs ${need} GPUs but has no warning`);
      assert.match(
        o.warning,
        /tensor|pipeline/i,
        `${o.gpu_model}: warning does not mention tensor or pipeline parallelism`,
      );
      assert.match(o.warning, /interconnect|topology/i, `${o.gpu_model}: warning does not mention the interconnect`);
    }
  }
}

before(async () => {
  srv = await startServer({ name: 'sizing' });
  client = api(srv);
  admin = srv.token('admin', { sub: 'sizing-admin' });
  operator = srv.token('operator', { sub: 'sizing-operator' });
  viewer = srv.token('viewer', { sub: 'sizing-viewer' });
  const list = expectStatus(await client.request('GET', '/v1/gpu-models?limit=500', { token: viewer }), 200);
  catalog = Object.fromEntries(list.items.map((m) => [m.key, m]));
});

after(async () => {
  if (srv) await srv.stop();
});

describe('inference, 7e9 parameters in bf16, no architecture', () => {
  let s;
  before(async () => {
    s = await size(chat7b());
  });

  test('weights: 7e9 × 2 B = 14e9 B = 13.04 GiB', () => {
    const w = s.terms.weights;
    assert.equal(w.status, 'estimated');
    assert.equal(w.bytes, 14_000_000_000);
    near(w.gib, 13.04, 0.005, 'weights.gib');
    if (w.bytes_per_parameter !== undefined) assert.equal(w.bytes_per_parameter, 2);
    if (w.counted_in_total !== undefined) assert.equal(w.counted_in_total, true);
  });

  test('KV cache: not estimated, naming the missing architecture fields', () => {
    const kv = s.terms.kv_cache;
    assert.equal(kv.status, 'not_estimated');
    assert.equal(kv.bytes, null);
    assert.equal(kv.gib, null);
    assert.ok(Array.isArray(kv.missing), 'kv_cache.missing is not a list');
    for (const f of ['model.architecture.layers', 'model.architecture.kv_heads', 'model.architecture.head_dim']) {
      assert.ok(kv.missing.includes(f), `kv_cache.missing lacks ${f}: ${JSON.stringify(kv.missing)}`);
    }
    assert.ok(!kv.missing.includes('model.architecture.hidden_size'), 'hidden_size is not needed for the KV cache');
  });

  test('runtime overhead: 0.2 × 14e9 + 2 GiB = 4947483648 B', () => {
    const o = s.terms.runtime_overhead;
    assert.equal(o.status, 'estimated');
    assert.equal(o.bytes, 2_800_000_000 + 2 * GiB);
    assert.equal(o.bytes, 4_947_483_648);
    if (o.factor !== undefined) assert.equal(o.factor, 1.2);
    if (o.fixed_gib !== undefined) assert.equal(o.fixed_gib, 2);
  });

  test('no training state; activations not counted', () => {
    assert.equal(s.terms.training_state.status, 'not_applicable');
    assert.ok(['not_applicable', 'not_estimated'].includes(s.terms.activations.status));
  });

  test('total 18947483648 B (17.65 GiB), an estimate and a lower bound', () => {
    assert.equal(s.total.bytes, 18_947_483_648);
    near(s.total.gib, 17.646, 0.006, 'total.gib');
    assert.equal(s.estimate, true);
    assert.equal(s.lower_bound, true);
    assert.ok(s.assumptions.length >= 1);
    assert.equal(s.brief_id, null);
    assert.equal(s.brief_revision, null);
    assert.equal(s.kind, 'inference_interactive');
    assert.equal(s.precision, 'bf16');
    assert.equal(s.peak, null);
    assert.deepEqual(s.options, { reserve_pct: 10, overhead_factor: 1.2, overhead_fixed_gib: 2 });
  });

  test('h100_sxm: 81559 MiB = 79.65 GiB, 71.68 usable, one GPU', () => {
    const o = s.gpu_options.find((x) => x.gpu_model === 'h100_sxm');
    assert.ok(o, 'h100_sxm missing from gpu_options');
    near(o.memory_gib_per_gpu, 81559 / 1024, 0.006, 'memory_gib_per_gpu');
    near(o.usable_gib_per_gpu, (81559 / 1024) * 0.9, 0.006, 'usable_gib_per_gpu');
    assert.equal(o.gpus_needed, 1);
    assert.equal(o.fits_single_gpu, true);
    assert.equal(o.needs_parallelism, false);
    assert.equal(o.topology_matters, false);
    assert.equal(o.precision_supported, true);
    assert.equal(o.warning, null);
  });

  test('l4: 23034 MiB = 22.49 GiB, 20.24 usable, fits', () => {
    const o = s.gpu_options.find((x) => x.gpu_model === 'l4');
    near(o.memory_gib_per_gpu, 22.494, 0.006, 'memory_gib_per_gpu');
    near(o.usable_gib_per_gpu, 20.245, 0.006, 'usable_gib_per_gpu');
    assert.equal(o.gpus_needed, 1);
    assert.equal(o.fits_single_gpu, true);
  });

  test('t4: 15 GiB, 13.5 usable, needs 2 GPUs and a parallelism warning', () => {
    const o = s.gpu_options.find((x) => x.gpu_model === 't4');
    near(o.memory_gib_per_gpu, 15, 0.006, 'memory_gib_per_gpu');
    near(o.usable_gib_per_gpu, 13.5, 0.006, 'usable_gib_per_gpu');
    assert.equal(o.gpus_needed, 2);
    assert.equal(o.fits_single_gpu, false);
    assert.equal(o.needs_parallelism, true);
    assert.equal(o.topology_matters, true);
    assert.match(o.warning, /tensor|pipeline/i);
    assert.match(o.warning, /interconnect|topology/i);
  });

  test('a model without an nvidia-smi figure uses memory_gib × 1e9 / 2^30', () => {
    const o = s.gpu_options.find((x) => x.gpu_model === 'mi300x');
    assert.ok(o, 'mi300x missing');
    assert.equal(catalog.mi300x.nvidia_smi_memory_total_mib, null);
    near(o.memory_gib_per_gpu, (192 * 1e9) / GiB, 0.006, 'mi300x memory_gib_per_gpu');
  });

  test('every GPU option follows the formulas', () => checkInvariants(s));
});

describe('KV cache with the architecture', () => {
  test('Llama-3.1-8B bf16: 131072 B per token, 1 GiB for one 8192-token sequence', async () => {
    const s = await size(llama8b());
    const kv = s.terms.kv_cache;
    assert.equal(kv.status, 'estimated');
    assert.equal(kv.per_token_bytes, 131072);
    assert.equal(kv.tokens_per_sequence, 8192);
    assert.equal(kv.sequences, 1);
    assert.equal(kv.bytes_per_element, 2);
    assert.equal(kv.bytes, 1_073_741_824);
    near(kv.gib, 1.0, 0.001, 'kv_cache.gib');
    assert.ok(!kv.missing || kv.missing.length === 0, `nothing is missing: ${JSON.stringify(kv.missing)}`);
    assert.equal(s.terms.weights.bytes, 8030261248 * 2);
    near(s.terms.runtime_overhead.bytes, 0.2 * 8030261248 * 2 + 2 * GiB, 1, 'runtime_overhead.bytes');
    assert.equal(s.total.bytes, s.terms.weights.bytes + kv.bytes + s.terms.runtime_overhead.bytes);
    checkInvariants(s);
  });

  test('concurrency multiplies the KV cache; peak_concurrency gives the peak', async () => {
    const base = await size(llama8b());
    const s = await size(llama8b({ concurrency: 4, peak: 8 }));
    assert.equal(s.terms.kv_cache.sequences, 4);
    assert.equal(s.terms.kv_cache.bytes, 4 * GiB);
    assert.equal(s.total.bytes, base.total.bytes + 3 * GiB);
    assert.ok(s.peak, 'peak missing although peak_concurrency is given');
    assert.equal(s.peak.concurrency, 8);
    assert.equal(s.peak.kv_cache_bytes, 8 * GiB);
    assert.equal(s.peak.total_bytes, s.total.bytes + 4 * GiB);
    near(s.peak.total_gib, s.peak.total_bytes / GiB, 0.006, 'peak.total_gib');
    checkInvariants(s);
  });

  test('peak_concurrency without an architecture: a peak whose KV cache is not estimated', async () => {
    const b = chat7b();
    b.load.peak_concurrency = 2;
    const s = await size(b);
    assert.equal(s.terms.kv_cache.status, 'not_estimated');
    assert.ok(s.peak, `peak is ${JSON.stringify(s.peak)} although load.peak_concurrency is given`);
    assert.equal(s.peak.concurrency, 2);
    assert.equal(s.peak.kv_cache_bytes, null);
    assert.equal(s.peak.total_bytes, s.total.bytes, 'nothing but the KV cache grows with concurrency');
  });

  test('kv_cache_precision fp8 halves the KV cache', async () => {
    const s = await size(llama8b({ kvPrecision: 'fp8' }));
    assert.equal(s.terms.kv_cache.bytes_per_element, 1);
    assert.equal(s.terms.kv_cache.per_token_bytes, 65536);
    assert.equal(s.terms.kv_cache.bytes, GiB / 2);
    assert.equal(s.terms.weights.bytes, 8030261248 * 2, 'the KV precision changed the weights');
  });

  test('a partial architecture names only what is missing', async () => {
    const b = chat7b();
    b.model.architecture = { layers: 32, hidden_size: 4096 };
    const kv = (await size(b)).terms.kv_cache;
    assert.equal(kv.status, 'not_estimated');
    assert.deepEqual([...kv.missing].sort(), ['model.architecture.head_dim', 'model.architecture.kv_heads']);
  });
});

describe('precision', () => {
  const cases = [
    ['fp32', 28_000_000_000],
    ['bf16', 14_000_000_000],
    ['fp16', 14_000_000_000],
    ['fp8', 7_000_000_000],
    ['int8', 7_000_000_000],
    ['int4', 3_500_000_000],
  ];
  for (const [precision, bytes] of cases) {
    test(`${precision}: weights ${bytes} B`, async () => {
      const b = chat7b();
      b.model.precision = precision;
      const s = await size(b);
      assert.equal(s.precision, precision);
      assert.equal(s.terms.weights.bytes, bytes);
      checkInvariants(s, { precision });
    });
  }

  test('fp8 is not supported on a100_sxm4_80gb, and is on h100_sxm', async () => {
    const b = chat7b();
    b.model.precision = 'fp8';
    const s = await size(b);
    assert.equal(s.gpu_options.find((o) => o.gpu_model === 'a100_sxm4_80gb').precision_supported, false);
    assert.equal(s.gpu_options.find((o) => o.gpu_model === 'h100_sxm').precision_supported, true);
  });

  test('70e9 parameters in bf16 need more than one h100_sxm', async () => {
    const b = chat7b();
    b.model.parameter_count = 70e9;
    const s = await size(b);
    assert.equal(s.terms.weights.bytes, 140_000_000_000);
    const o = s.gpu_options.find((x) => x.gpu_model === 'h100_sxm');
    assert.ok(o.gpus_needed >= 2, `gpus_needed ${o.gpus_needed}`);
    assert.equal(o.fits_single_gpu, false);
    assert.equal(o.needs_parallelism, true);
    assert.equal(o.topology_matters, true);
    assert.match(o.warning, /tensor|pipeline/i);
    checkInvariants(s);
  });
});

describe('training', () => {
  test('AdamW (the default): 18 B/param = 126e9 B; weights not counted twice', async () => {
    for (const training of [undefined, { optimizer: 'adamw' }]) {
      const s = await size(train7b(training));
      const ts = s.terms.training_state;
      assert.equal(ts.status, 'estimated');
      assert.equal(ts.bytes, 126_000_000_000);
      if (ts.bytes_per_parameter !== undefined) assert.equal(ts.bytes_per_parameter, 18);
      if (ts.optimizer !== undefined) assert.equal(ts.optimizer, 'adamw');
      assert.equal(s.terms.weights.counted_in_total, false);
      assert.equal(s.terms.activations.status, 'not_estimated');
      assert.equal(s.terms.activations.bytes, null);
      assert.ok(s.total.bytes >= 126_000_000_000);
      checkInvariants(s);
    }
  });

  test('8-bit Adam: 12 B/param = 84e9 B; SGD with momentum: 14 B/param = 98e9 B', async () => {
    const a8 = await size(train7b({ optimizer: 'adamw_8bit' }));
    assert.equal(a8.terms.training_state.bytes, 84_000_000_000);
    if (a8.terms.training_state.bytes_per_parameter !== undefined)
      assert.equal(a8.terms.training_state.bytes_per_parameter, 12);
    const sgd = await size(train7b({ optimizer: 'sgd_momentum' }));
    assert.equal(sgd.terms.training_state.bytes, 98_000_000_000);
    if (sgd.terms.training_state.optimizer !== undefined)
      assert.equal(sgd.terms.training_state.optimizer, 'sgd_momentum');
    const adam = await size(train7b({ optimizer: 'adamw' }));
    assert.equal(adam.total.bytes - a8.total.bytes, 42_000_000_000);
    assert.equal(sgd.total.bytes - a8.total.bytes, 14_000_000_000);
  });

  test('activation_bytes, when given, are estimated and counted', async () => {
    const without = await size(train7b({ optimizer: 'adamw' }));
    const s = await size(train7b({ optimizer: 'adamw', activation_bytes: 5e9 }));
    assert.equal(s.terms.activations.status, 'estimated');
    assert.equal(s.terms.activations.bytes, 5_000_000_000);
    assert.equal(s.total.bytes, without.total.bytes + 5_000_000_000);
    checkInvariants(s);
  });

  test('fine_tuning is sized like training', async () => {
    const s = await size(train7b({ optimizer: 'adamw' }, 'fine_tuning'));
    assert.equal(s.kind, 'fine_tuning');
    assert.equal(s.terms.training_state.bytes, 126_000_000_000);
  });
});

describe('options', () => {
  test('reserve_pct=0 makes all memory usable', async () => {
    const s = await size(chat7b(), '?reserve_pct=0');
    assert.equal(s.options.reserve_pct, 0);
    for (const o of s.gpu_options) near(o.usable_gib_per_gpu, o.memory_gib_per_gpu, 0.006, `${o.gpu_model} usable`);
    checkInvariants(s, { reservePct: 0 });
  });

  test('reserve_pct=90 and 12.5 are applied', async () => {
    for (const pct of [90, 12.5]) {
      const s = await size(chat7b(), `?reserve_pct=${pct}`);
      assert.equal(s.options.reserve_pct, pct);
      checkInvariants(s, { reservePct: pct });
    }
  });

  test('overhead_factor and overhead_fixed_gib change the runtime overhead', async () => {
    const none = await size(chat7b(), '?overhead_factor=1&overhead_fixed_gib=0');
    assert.equal(none.terms.runtime_overhead.bytes, 0);
    assert.equal(none.total.bytes, 14_000_000_000);
    assert.deepEqual(none.options, { reserve_pct: 10, overhead_factor: 1, overhead_fixed_gib: 0 });
    const more = await size(chat7b(), '?overhead_factor=1.5&overhead_fixed_gib=4');
    assert.equal(more.terms.runtime_overhead.bytes, 7_000_000_000 + 4 * GiB);
    assert.equal(more.total.bytes, 14_000_000_000 + 7_000_000_000 + 4 * GiB);
    checkInvariants(more);
  });

  const bad = [
    ['reserve_pct', '95'],
    ['reserve_pct', '-1'],
    ['reserve_pct', 'abc'],
    ['reserve_pct', ''],
    ['reserve_pct', 'NaN'],
    ['overhead_factor', '0.5'],
    ['overhead_factor', '4.5'],
    ['overhead_factor', 'inf'],
    ['overhead_fixed_gib', '65'],
    ['overhead_fixed_gib', '-0.1'],
    ['overhead_fixed_gib', '1e400'],
  ];
  for (const [param, value] of bad) {
    test(`${param}=${JSON.stringify(value)} → 400 invalid_parameter`, async () => {
      const q = `?${param}=${encodeURIComponent(value)}`;
      expectProblem(
        await client.request('POST', `/v1/sizing${q}`, { token: viewer, body: chat7b() }),
        400,
        'invalid_parameter',
        param,
      );
    });
  }

  test('an unknown query parameter → 400 unknown_parameter', async () => {
    const res = await client.request('POST', '/v1/sizing?reserve=5', { token: viewer, body: chat7b() });
    expectProblem(res, 400, 'unknown_parameter', 'reserve');
  });
});

describe('POST /v1/sizing validates like POST /v1/briefs and stores nothing', () => {
  const cases = [
    ['unknown field', (b) => ({ ...b, colour: 'red' }), 'unknown_field', 'colour'],
    [
      'unknown nested field',
      (b) => ({ ...b, model: { ...b.model, architecture: { foo: 1 } } }),
      'unknown_field',
      'model.architecture.foo',
    ],
    [
      'missing precision',
      (b) => ({ ...b, model: { name: b.model.name, parameter_count: 7e9 } }),
      'missing_field',
      'model.precision',
    ],
    [
      'parameter_count 1e14',
      (b) => ({ ...b, model: { ...b.model, parameter_count: 1e14 } }),
      'invalid_field',
      'model.parameter_count',
    ],
    [
      'metric for another kind',
      (b) => ({ ...b, targets: [{ metric: 'items_per_hour', value: 1 }] }),
      'invalid_field',
      'targets[0].metric',
    ],
    ['training on inference', (b) => ({ ...b, training: { optimizer: 'sgd_momentum' } }), 'invalid_field', 'training'],
    [
      'missing name',
      (b) => {
        const c = { ...b };
        delete c.name;
        return c;
      },
      'missing_field',
      'name',
    ],
  ];
  for (const [title, mutate, code, field] of cases) {
    test(`${title} → 400 ${code}`, async () => {
      expectProblem(
        await client.request('POST', '/v1/sizing', { token: viewer, body: mutate(chat7b()) }),
        400,
        code,
        field,
      );
    });
  }

  test('body errors: duplicate key, not an object, media type', async () => {
    const dup = JSON.stringify(chat7b()).replace(/^\{/, '{"kind":"training",');
    expectProblem(
      await client.request('POST', '/v1/sizing', { token: viewer, rawBody: dup, contentType: 'application/json' }),
      400,
      'duplicate_key',
    );
    expectProblem(
      await client.request('POST', '/v1/sizing', { token: viewer, rawBody: '[]', contentType: 'application/json' }),
      400,
      'body_not_object',
    );
    expectProblem(
      await client.request('POST', '/v1/sizing', {
        token: viewer,
        rawBody: JSON.stringify(chat7b()),
        contentType: 'text/plain',
      }),
      415,
      'unsupported_media_type',
    );
  });

  test('any role that reads may size; no token answers 401', async () => {
    for (const t of [viewer, operator, admin]) await size(chat7b(), '', t);
    expectProblem(await client.request('POST', '/v1/sizing', { body: chat7b() }), 401, 'missing_token');
  });

  test('sizing is neither stored nor audited', async () => {
    const before = expectStatus(await client.request('GET', '/v1/audit-events?limit=500', { token: admin }), 200).items;
    const name = `not-stored-${uniq()}`;
    await size(chat7b({ name }));
    await size(chat7b({ name }), '?reserve_pct=5');
    const afterEv = expectStatus(
      await client.request('GET', '/v1/audit-events?limit=500', { token: admin }),
      200,
    ).items;
    assert.deepEqual(
      afterEv.map((e) => e.id),
      before.map((e) => e.id),
      'POST /v1/sizing left an audit event',
    );
    const briefs = expectStatus(await client.request('GET', `/v1/briefs?name_prefix=${name}`, { token: viewer }), 200);
    assert.deepEqual(briefs.items, []);
  });

  test('the answer is the same every time', async () => {
    const b = llama8b({ concurrency: 3, peak: 5 });
    assert.deepEqual(await size(b), await size(b));
  });
});

describe('GET /v1/briefs/{id}/sizing', () => {
  test('a stored brief sizes exactly like the same body, plus brief_id and revision', async () => {
    const body = llama8b({ concurrency: 2, peak: 4 });
    const created = expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body }), 201);
    const url = `/v1/briefs/${created.id}/sizing`;
    const stored = expectStatus(await client.request('GET', url, { token: viewer }), 200);
    const posted = await size(body);
    assert.equal(stored.brief_id, created.id);
    assert.equal(stored.brief_revision, 1);
    assert.deepEqual({ ...stored, brief_id: null, brief_revision: null }, posted);

    const q = '?reserve_pct=0&overhead_factor=1.5&overhead_fixed_gib=1';
    const storedQ = expectStatus(await client.request('GET', url + q, { token: viewer }), 200);
    const postedQ = await size(body, q);
    assert.deepEqual({ ...storedQ, brief_id: null, brief_revision: null }, postedQ);
    checkInvariants(storedQ, { reservePct: 0 });

    // After an update the estimate follows the new revision.
    const get = await client.request('GET', `/v1/briefs/${created.id}`, { token: viewer });
    const next = { ...body, model: { ...body.model, precision: 'fp8' } };
    expectStatus(
      await client.request('PUT', `/v1/briefs/${created.id}`, {
        token: operator,
        body: next,
        headers: { 'If-Match': get.headers.get('etag') },
      }),
      200,
    );
    const v2 = expectStatus(await client.request('GET', url, { token: viewer }), 200);
    assert.equal(v2.brief_revision, 2);
    assert.equal(v2.precision, 'fp8');
    assert.equal(v2.terms.weights.bytes, 8030261248);
    assert.deepEqual({ ...v2, brief_id: null, brief_revision: null }, await size(next));
  });

  test('a training brief sizes like its body', async () => {
    const body = train7b({ optimizer: 'adamw_8bit', activation_bytes: 3e9 });
    const created = expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body }), 201);
    const stored = expectStatus(await client.request('GET', `/v1/briefs/${created.id}/sizing`, { token: viewer }), 200);
    assert.deepEqual({ ...stored, brief_id: null, brief_revision: null }, await size(body));
    assert.equal(stored.terms.training_state.bytes, 84_000_000_000);
  });

  test('ETag and If-None-Match', async () => {
    const created = expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body: chat7b() }), 201);
    const url = `/v1/briefs/${created.id}/sizing`;
    const a = await client.request('GET', url, { token: viewer });
    expectStatus(a, 200);
    const etag = a.headers.get('etag');
    expectStatus(await client.request('GET', url, { token: viewer, headers: { 'If-None-Match': etag } }), 304);
    const other = await client.request('GET', `${url}?reserve_pct=0`, {
      token: viewer,
      headers: { 'If-None-Match': etag },
    });
    expectStatus(other, 200);
  });

  test('unknown brief → 404; bad options → 400; no token → 401', async () => {
    expectProblem(
      await client.request('GET', `/v1/briefs/${crypto.randomUUID()}/sizing`, { token: viewer }),
      404,
      'not_found',
    );
    expectProblem(await client.request('GET', '/v1/briefs/nope/sizing', { token: viewer }), 404, 'not_found');
    const created = expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body: chat7b() }), 201);
    const url = `/v1/briefs/${created.id}/sizing`;
    expectProblem(
      await client.request('GET', `${url}?reserve_pct=95`, { token: viewer }),
      400,
      'invalid_parameter',
      'reserve_pct',
    );
    expectProblem(
      await client.request('GET', `${url}?overhead_factor=0`, { token: viewer }),
      400,
      'invalid_parameter',
      'overhead_factor',
    );
    expectProblem(
      await client.request('GET', `${url}?overhead_fixed_gib=100`, { token: viewer }),
      400,
      'invalid_parameter',
      'overhead_fixed_gib',
    );
    expectProblem(await client.request('GET', `${url}?limit=1`, { token: viewer }), 400, 'unknown_parameter', 'limit');
    expectProblem(await client.request('GET', url), 401, 'missing_token');
  });

  test('a deleted brief has no sizing', async () => {
    const created = expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body: chat7b() }), 201);
    expectStatus(await client.request('DELETE', `/v1/briefs/${created.id}`, { token: admin }), 204);
    expectProblem(await client.request('GET', `/v1/briefs/${created.id}/sizing`, { token: viewer }), 404, 'not_found');
  });
});
