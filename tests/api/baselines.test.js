'use strict';
// Throughput baselines (docs/rollouts.md §1), the API side. No workers run here, so a gate
// run is recorded as a worker records it (an INSERT into gate_runs, as tests/api/gates.test.js
// does); the trigger of migrations/0020 turns an accepted one whose workload passed into a
// baseline. The real gate's path is covered by the fleet tests (tests/fleet/rollout.test.js).
// Covered here: the pool gate workload's input/concurrency/cache and their refusals; which
// gate runs record a baseline and with which conditions (the workload hash checked against a
// canonical JSON computed here); GET /v1/baselines with its filters, pages and refusals; GET
// /v1/baselines/{id}; the work report `baseline` object (recorded once, its 400s and the 422
// of a host without a stack); and the comparison a rollout makes (svc_baseline_compare, through
// GET /v1/gate-runs/{id}/baseline-comparison): conditions must match, the median, unmatched.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer, psql, psqlUnguarded } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

let srv, client, admin, operator, viewer, cred;
const uniq = () => crypto.randomBytes(4).toString('hex');
const sql = (q) => psql(srv.database.url, q);
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const H100 = 'NVIDIA H100 80GB HBM3';

/** The canonical JSON of the contract: keys sorted, no whitespace. */
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}
function workloadHash(w) {
  const { min, timeout_s, ...rest } = w;
  return `sha256:${crypto.createHash('sha256').update(canonical(rest)).digest('hex')}`;
}

const WORKLOAD = {
  command: ['python3', '/bench/serve_bench.py', '--prompts', '/bench/sharegpt.json'],
  metric: 'tokens_per_second',
  min: 1000,
  input: 'sharegpt-1k',
  concurrency: 16,
  cache: 'warm',
};

const createPool = async (gate) => fleet.createPool(client, admin, { name: `bl-${uniq()}`, ...(gate ? { gate } : {}) });
const createStack = async (overrides = {}) => fleet.createStack(client, operator, overrides);

let addr = 1;
/** A host of pool on stack (null: none), with GPUs in its facts. */
async function host(pool, stack, gpus = [H100, H100]) {
  const h = await fleet.createHost(client, operator, {
    name: `bl-host-${uniq()}`,
    address: `127.0.78.${addr++}`,
    port: 22,
    user: 'gpu',
    credential_id: cred.id,
    pool_id: pool.id,
    host_key_sha256: `SHA256:${crypto.randomBytes(32).toString('base64').replace(/=+$/, '')}`,
  });
  const facts = JSON.stringify({
    gpus: gpus.map((name, index) => ({ index, name, uuid: `GPU-${uniq()}`, memory_mib: 81559 })),
    gpu_count: gpus.length,
    driver_version: '550.127.05',
  }).replace(/'/g, "''");
  psqlUnguarded(
    srv.database.url,
    `UPDATE hosts SET facts = '${facts}'::jsonb${stack ? `, current_stack_id = '${stack.id}', desired_stack_id = '${stack.id}'` : ''} WHERE id = '${h.id}'`,
  );
  return h;
}

/** Records a gate run as the worker does; returns its id. */
function gateRun(
  h,
  pool,
  stack,
  {
    verdict = 'accept',
    value = 2400,
    status = 'pass',
    kind = 'gate',
    gateVersion = 1,
    metric = 'tokens_per_second',
    inventory = [H100, H100],
    finished = 'now()',
  } = {},
) {
  const checks = [];
  if (inventory) {
    checks.push({
      name: 'gpu_inventory',
      status: 'pass',
      hardware_evidence: false,
      message: 'ok',
      evidence: '',
      values: {
        gpu_count: inventory.length,
        expected_gpus: 8,
        gpus: inventory.map((name, index) => ({ index, name })),
      },
      duration_ms: 3,
      phases: { command_ms: 2, parse_ms: 1 },
    });
  }
  if (value !== null) {
    checks.push({
      name: 'workload',
      status,
      hardware_evidence: false,
      message: 'm',
      evidence: `${metric}=${value}`,
      values: { metric, value, min: 1000 },
      duration_ms: 3,
      phases: { command_ms: 2, parse_ms: 1 },
    });
  }
  const text = JSON.stringify(checks).replace(/'/g, "''");
  return sql(
    `INSERT INTO gate_runs (kind, host_id, stack_id, pool_id, gate_version, verdict, reason, checks, started_at, finished_at)` +
      ` VALUES ('${kind}', '${h.id}', '${stack.id}', '${pool.id}', ${gateVersion}, '${verdict}', 'r', '${text}'::jsonb, now(), ${finished}) RETURNING id`,
  );
}

const list = async (query = '', token = viewer) => client.request('GET', `/v1/baselines${query}`, { token });
const ofRun = (runId) => sql(`SELECT count(*) FROM baselines WHERE gate_run_id = '${runId}'`);
const compare = async (runId, stackId, token = viewer) =>
  client.request('GET', `/v1/gate-runs/${runId}/baseline-comparison?stack=${stackId}`, { token });

before(async () => {
  srv = await startServer({
    name: 'baselines',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('the pool gate workload: input, concurrency, cache', () => {
  test('stored as sent; all three optional', async () => {
    const p = await createPool({ workload: WORKLOAD });
    assert.equal(p.gate.workload.input, 'sharegpt-1k');
    assert.equal(p.gate.workload.concurrency, 16);
    assert.equal(p.gate.workload.cache, 'warm');
    const q = await createPool({ workload: { command: ['true'], metric: 'items_per_second', min: 1 } });
    assert.equal(q.gate.workload.input, undefined);
    assert.equal(q.gate.workload.cache, undefined);
  });

  const bad = [
    [{ input: '' }, 'gate.workload.input'],
    [{ input: 'x'.repeat(201) }, 'gate.workload.input'],
    [{ input: 'a\u0001b' }, 'gate.workload.input'],
    [{ input: 7 }, 'gate.workload.input'],
    [{ concurrency: 0 }, 'gate.workload.concurrency'],
    [{ concurrency: 1000001 }, 'gate.workload.concurrency'],
    [{ concurrency: 2.5 }, 'gate.workload.concurrency'],
    [{ concurrency: '8' }, 'gate.workload.concurrency'],
    [{ cache: 'hot' }, 'gate.workload.cache'],
    [{ cache: null }, 'gate.workload.cache'],
  ];
  for (const [extra, field] of bad) {
    test(`refuses ${JSON.stringify(extra).slice(0, 60)} naming ${field}`, async () => {
      const body = fleet.poolBody({ name: `bl-${uniq()}`, gate: { workload: { ...WORKLOAD, ...extra } } });
      const res = await client.request('POST', '/v1/pools', { token: admin, body });
      expectProblem(res, 400, 'invalid_field', field);
    });
  }
  test('an input of 200 characters and a concurrency of 1000000 are accepted', async () => {
    const p = await createPool({
      workload: { ...WORKLOAD, input: 'é'.repeat(100), concurrency: 1000000, cache: 'cold' },
    });
    assert.equal(p.gate.workload.concurrency, 1000000);
  });
});

describe('an accepted gate run with a workload records a baseline', () => {
  let pool, stack, h;
  before(async () => {
    pool = await createPool({ workload: WORKLOAD });
    stack = await createStack({ model_revision: 'rev-a1' });
    h = await host(pool, stack);
  });

  test('with the stack, the GPUs the gate saw, the workload and its value', async () => {
    const runId = gateRun(h, pool, stack, { value: 2400.5 });
    const page = expectStatus(await list(`?pool=${pool.id}`), 200);
    assert.equal(page.items.length, 1);
    const b = page.items[0];
    assert.match(b.id, UUID_RE);
    assert.equal(b.source, 'gate');
    assert.equal(b.gate_run_id, runId);
    assert.equal(b.work_report_id, null);
    assert.equal(b.window_start, null);
    assert.equal(b.host_id, h.id);
    assert.equal(b.pool_id, pool.id);
    assert.equal(b.stack_id, stack.id);
    assert.equal(b.image_digest, stack.image_digest);
    assert.equal(b.framework, 'vllm');
    assert.equal(b.framework_version, '0.6.3');
    assert.equal(b.driver_version, '550.127.05');
    assert.equal(b.cuda_version, '12.4');
    assert.equal(b.model_revision, 'rev-a1');
    assert.equal(b.gpu_model, H100);
    assert.equal(b.gpu_count, 2);
    assert.equal(b.workload_hash, workloadHash(WORKLOAD));
    assert.equal(b.input, 'sharegpt-1k');
    assert.equal(b.concurrency, 16);
    assert.equal(b.cache, 'warm');
    assert.equal(b.metric, 'tokens_per_second');
    assert.equal(b.value, 2400.5);
    const run = expectStatus(await client.request('GET', `/v1/gate-runs/${runId}`, { token: viewer }), 200);
    assert.equal(b.measured_at, run.finished_at);
    const one = expectStatus(await client.request('GET', `/v1/baselines/${b.id}`, { token: viewer }), 200);
    assert.deepEqual(one, b);
  });

  test('the same workload with another min and timeout in another pool has the same hash', async () => {
    const other = await createPool({ workload: { ...WORKLOAD, min: 5, timeout_s: 60 } });
    const h2 = await host(other, stack);
    gateRun(h2, other, stack);
    const [b] = expectStatus(await list(`?pool=${other.id}`), 200).items;
    assert.equal(b.workload_hash, workloadHash(WORKLOAD));
    const changed = await createPool({ workload: { ...WORKLOAD, cache: 'cold' } });
    const h3 = await host(changed, stack);
    gateRun(h3, changed, stack);
    const [c] = expectStatus(await list(`?pool=${changed.id}`), 200).items;
    assert.notEqual(c.workload_hash, b.workload_hash);
    assert.equal(c.workload_hash, workloadHash({ ...WORKLOAD, cache: 'cold' }));
    assert.equal(c.cache, 'cold');
  });

  test('without a gate inventory, the GPUs come from the host facts', async () => {
    const h4 = await host(pool, stack, [H100, H100, H100, H100]);
    const runId = gateRun(h4, pool, stack, { inventory: null });
    const b = JSON.parse(sql(`SELECT row_to_json(b) FROM baselines b WHERE gate_run_id = '${runId}'`));
    assert.equal(b.gpu_model, H100);
    assert.equal(b.gpu_count, 4);
  });

  test('nothing is recorded for a run not accepted, without a passing workload, or not on the host stack', async () => {
    assert.equal(ofRun(gateRun(h, pool, stack, { verdict: 'investigate' })), '0');
    assert.equal(ofRun(gateRun(h, pool, stack, { verdict: 'isolate' })), '0');
    assert.equal(ofRun(gateRun(h, pool, stack, { status: 'fail', value: 10 })), '0');
    assert.equal(ofRun(gateRun(h, pool, stack, { value: null })), '0');
    assert.equal(ofRun(gateRun(h, pool, stack, { metric: 'items_per_second' })), '0');
    assert.equal(ofRun(gateRun(h, pool, stack, { kind: 'diagnostics' })), '0');
    // gated against a stack the host does not run (its provisioning has not succeeded)
    const other = await createStack();
    assert.equal(ofRun(gateRun(h, pool, other)), '0');
    const noWorkload = await createPool(null);
    const h5 = await host(noWorkload, stack);
    assert.equal(ofRun(gateRun(h5, noWorkload, stack)), '0');
  });

  test('a figure the table refuses records nothing, and the gate run is still recorded', async () => {
    const runId = gateRun(h, pool, stack, { value: 1e301 });
    assert.equal(ofRun(runId), '0');
    const p = await createPool({ workload: WORKLOAD });
    const h7 = await host(p, stack);
    sql(
      `UPDATE pools SET spec = jsonb_set(spec::jsonb, '{gate,workload,metric}', '"Bad-Metric"')::json WHERE id = '${p.id}'`,
    );
    const bad = gateRun(h7, p, stack, { metric: 'Bad-Metric' });
    assert.equal(sql(`SELECT verdict FROM gate_runs WHERE id = '${bad}'`), 'accept');
    assert.equal(ofRun(bad), '0');
  });

  test('a run of an older gate version records nothing (the workload that ran is unknown)', async () => {
    const p = await createPool({ workload: WORKLOAD });
    const h6 = await host(p, stack);
    sql(`UPDATE pools SET gate_version = 2 WHERE id = '${p.id}'`);
    assert.equal(ofRun(gateRun(h6, p, stack, { gateVersion: 1 })), '0');
    assert.equal(ofRun(gateRun(h6, p, stack, { gateVersion: 2 })), '1');
  });
});

describe('GET /v1/baselines', () => {
  let pool, stackA, stackB, ids;
  before(async () => {
    pool = await createPool({ workload: WORKLOAD });
    stackA = await createStack();
    stackB = await createStack();
    const ha = await host(pool, stackA);
    const hb = await host(pool, stackB, ['NVIDIA A100-SXM4-80GB']);
    ids = [];
    for (let i = 0; i < 5; i++) {
      const runId = gateRun(ha, pool, stackA, { value: 1000 + i });
      ids.push(sql(`SELECT id FROM baselines WHERE gate_run_id = '${runId}'`));
    }
    gateRun(hb, pool, stackB, { inventory: ['NVIDIA A100-SXM4-80GB'] });
  });

  test('newest first, paged with a cursor', async () => {
    const seen = [];
    let cursor = null;
    for (let i = 0; i < 3; i++) {
      const q = `?stack=${stackA.id}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = expectStatus(await list(q), 200);
      seen.push(...page.items.map((b) => b.id));
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    assert.deepEqual(seen, [...ids].reverse());
    assert.equal(cursor, null);
  });

  test('filters: pool, stack, gpu_model, combined', async () => {
    assert.equal(expectStatus(await list(`?pool=${pool.id}`), 200).items.length, 6);
    const b = expectStatus(await list(`?stack=${stackB.id}`), 200).items;
    assert.equal(b.length, 1);
    assert.equal(b[0].gpu_model, 'NVIDIA A100-SXM4-80GB');
    const byModel = expectStatus(
      await list(`?pool=${pool.id}&gpu_model=${encodeURIComponent('NVIDIA A100-SXM4-80GB')}`),
      200,
    ).items;
    assert.deepEqual(
      byModel.map((x) => x.id),
      b.map((x) => x.id),
    );
    assert.equal(
      expectStatus(await list(`?stack=${stackB.id}&gpu_model=${encodeURIComponent(H100)}`), 200).items.length,
      0,
    );
    assert.equal(expectStatus(await list(`?pool=${crypto.randomUUID()}`), 200).items.length, 0);
  });

  test('malformed filters, unknown parameters and bad cursors: 400 naming them', async () => {
    expectProblem(await list('?pool=not-a-uuid'), 400, 'invalid_parameter', 'pool');
    expectProblem(await list('?stack=1234'), 400, 'invalid_parameter', 'stack');
    expectProblem(await list(`?gpu_model=${'x'.repeat(300)}`), 400, 'invalid_parameter', 'gpu_model');
    expectProblem(await list('?gpu_model=a%01b'), 400, 'invalid_parameter', 'gpu_model');
    expectProblem(await list('?host=abc'), 400, 'unknown_parameter', 'host');
    expectProblem(
      await list(`?pool=${pool.id}&pool=${pool.id}`),
      400,
      ['invalid_parameter', 'unknown_parameter'],
      'pool',
    );
    expectProblem(await list('?limit=0'), 400, 'invalid_parameter', 'limit');
    expectProblem(await list('?cursor=garbage'), 400, 'invalid_cursor', 'cursor');
  });

  test('GET /v1/baselines/{id}: 404 for unknown and malformed ids; a token is needed', async () => {
    expectProblem(
      await client.request('GET', `/v1/baselines/${crypto.randomUUID()}`, { token: viewer }),
      404,
      'not_found',
    );
    expectProblem(await client.request('GET', '/v1/baselines/nope', { token: viewer }), 404, 'not_found');
    expectProblem(await client.request('GET', '/v1/baselines'), 401, 'missing_token');
    expectProblem(await client.request('GET', `/v1/baselines/${ids[0]}`), 401, 'missing_token');
  });
});

describe('a work report record that names a baseline', () => {
  let pool, stack, h, bare;
  const t0 = Date.parse('2026-03-01T10:00:00Z');
  const at = (s) => new Date(t0 + s * 1000).toISOString();
  const record = (hostId, i, extra = {}) => ({
    host_id: hostId,
    window_start: at(i * 600),
    window_end: at(i * 600 + 300),
    unit: 'tokens',
    completed: 300000,
    failed: 0,
    retried: 0,
    busy_seconds: 300,
    ...extra,
  });
  const post = async (records, token = operator) =>
    client.request('POST', '/v1/work-reports', { token, body: { records } });

  before(async () => {
    pool = await createPool({ workload: WORKLOAD });
    stack = await createStack({ model_revision: 'rev-wr' });
    h = await host(pool, stack, [H100, H100, H100, H100, H100, H100, H100, H100]);
    bare = await host(pool, null);
  });

  test('records one baseline per record, once: <unit>_per_second, the host stack and GPUs', async () => {
    const body = [record(h.id, 0, { baseline: { input: 'chat', concurrency: 8, cache: 'warm' } }), record(h.id, 1)];
    const res = expectStatus(await post(body), 201);
    assert.deepEqual(res, { accepted: 2, duplicates: 0, baselines: 1 });
    const [b] = expectStatus(await list(`?stack=${stack.id}`), 200).items;
    assert.equal(b.source, 'work_report');
    assert.match(b.work_report_id, UUID_RE);
    assert.equal(b.gate_run_id, null);
    assert.equal(b.window_start, '2026-03-01T10:00:00.000000Z');
    assert.equal(b.window_end, '2026-03-01T10:05:00.000000Z');
    assert.equal(b.measured_at, b.window_end);
    assert.equal(b.metric, 'tokens_per_second');
    assert.equal(b.value, 1000); // 300000 tokens in 300 s
    assert.equal(b.workload_hash, null);
    assert.equal(b.input, 'chat');
    assert.equal(b.concurrency, 8);
    assert.equal(b.cache, 'warm');
    assert.equal(b.gpu_model, H100);
    assert.equal(b.gpu_count, 8);
    assert.equal(b.model_revision, 'rev-wr');
    assert.equal(b.host_id, h.id);
    assert.equal(b.pool_id, pool.id);
    // the same batch again: duplicates, and no second baseline
    assert.deepEqual(expectStatus(await post(body), 200), { accepted: 0, duplicates: 2, baselines: 0 });
    assert.equal(expectStatus(await list(`?stack=${stack.id}`), 200).items.length, 1);
  });

  test('an empty baseline object: every condition undeclared', async () => {
    expectStatus(await post([record(h.id, 5, { unit: 'requests', completed: 600, baseline: {} })]), 201);
    const [b] = expectStatus(await list(`?stack=${stack.id}&limit=1`), 200).items;
    assert.equal(b.metric, 'requests_per_second');
    assert.equal(b.value, 2);
    assert.equal(b.input, null);
    assert.equal(b.concurrency, null);
    assert.equal(b.cache, null);
  });

  test('a host without a current stack: 422 naming the record, nothing stored', async () => {
    const before = sql('SELECT count(*) FROM work_reports');
    const res = await post([record(h.id, 10, { baseline: {} }), record(bare.id, 10, { baseline: { cache: 'cold' } })]);
    const p = expectProblem(res, 422, 'no_current_stack', 'records[1].baseline');
    assert.match(p.detail, new RegExp(bare.id));
    assert.equal(sql('SELECT count(*) FROM work_reports'), before);
    // without a baseline the same host reports as before (and the answer has no baselines)
    assert.deepEqual(expectStatus(await post([record(bare.id, 10)]), 201), { accepted: 1, duplicates: 0 });
  });

  const bad = [
    [{ baseline: 'yes' }, 'records[0].baseline', 'invalid_field'],
    [{ baseline: null }, 'records[0].baseline', 'invalid_field'],
    [{ baseline: [] }, 'records[0].baseline', 'invalid_field'],
    [{ baseline: { input: '' } }, 'records[0].baseline.input', 'invalid_field'],
    [{ baseline: { input: 'y'.repeat(201) } }, 'records[0].baseline.input', 'invalid_field'],
    [{ baseline: { input: 'a\nb' } }, 'records[0].baseline.input', 'invalid_field'],
    [{ baseline: { concurrency: 0 } }, 'records[0].baseline.concurrency', 'invalid_field'],
    [{ baseline: { concurrency: 1.5 } }, 'records[0].baseline.concurrency', 'invalid_field'],
    [{ baseline: { concurrency: 1000001 } }, 'records[0].baseline.concurrency', 'invalid_field'],
    [{ baseline: { cache: 'lukewarm' } }, 'records[0].baseline.cache', 'invalid_field'],
    [{ baseline: { warm: true } }, 'records[0].baseline.warm', 'unknown_field'],
  ];
  for (const [extra, field, code] of bad) {
    test(`refuses ${JSON.stringify(extra).slice(0, 50)} naming ${field}`, async () => {
      const before = sql('SELECT count(*) FROM baselines');
      expectProblem(await post([record(h.id, 20, extra)]), 400, code, field);
      assert.equal(sql('SELECT count(*) FROM baselines'), before);
    });
  }
});

describe('the comparison a rollout makes (svc_baseline_compare)', () => {
  let pool, oldStack, newStack, h, hNew;
  before(async () => {
    pool = await createPool({ workload: WORKLOAD });
    oldStack = await createStack({ model_revision: 'rev-c' });
    newStack = await createStack({ model_revision: 'rev-c' });
    h = await host(pool, oldStack);
    hNew = await host(pool, newStack);
    // the old stack's baselines: three that match, one on other GPUs, one other cache
    for (const v of [1000, 1200, 1100]) gateRun(h, pool, oldStack, { value: v });
    gateRun(h, pool, oldStack, { value: 9999, inventory: [H100] });
    const cold = await createPool({ workload: { ...WORKLOAD, cache: 'cold' } });
    const hc = await host(cold, oldStack);
    gateRun(hc, cold, oldStack, { value: 5 });
  });

  test('matching conditions: the median reference and the ratio', async () => {
    const runId = gateRun(hNew, pool, newStack, { value: 990 });
    const c = expectStatus(await compare(runId, oldStack.id), 200);
    assert.equal(c.metric, 'tokens_per_second');
    assert.equal(c.value, 990);
    assert.equal(c.matched, 3);
    assert.equal(c.candidates, 5);
    assert.equal(c.reference, 1100);
    assert.ok(Math.abs(c.ratio - 0.9) < 1e-9);
    assert.equal(c.baselines.length, 3);
    assert.equal(c.unmatched, undefined);
    const used = expectStatus(await list(`?stack=${oldStack.id}&gpu_model=${encodeURIComponent(H100)}`), 200)
      .items.filter((b) => b.gpu_count === 2 && b.cache === 'warm')
      .map((b) => b.id);
    assert.deepEqual([...c.baselines].sort(), used.sort());
  });

  test('the same stack in another pool with the same workload and GPUs still matches (the pool is no condition)', async () => {
    const p2 = await createPool({ workload: { ...WORKLOAD, min: 1 } });
    const h2 = await host(p2, newStack);
    const runId = gateRun(h2, p2, newStack, { value: 1100 });
    const c = expectStatus(await compare(runId, oldStack.id), 200);
    assert.equal(c.matched, 3);
    assert.equal(c.ratio, 1);
  });

  test('no matching condition: unmatched says which differed, with the values seen', async () => {
    const p8 = await createPool({ workload: { ...WORKLOAD, concurrency: 64 } });
    const h8 = await host(p8, newStack, Array(8).fill(H100));
    const runId = gateRun(h8, p8, newStack, { value: 1000, inventory: Array(8).fill(H100) });
    const c = expectStatus(await compare(runId, oldStack.id), 200);
    assert.equal(c.matched, 0);
    assert.equal(c.reference, undefined);
    assert.equal(c.ratio, undefined);
    assert.deepEqual(c.unmatched.concurrency, { wanted: 64, seen: [16] });
    assert.deepEqual(c.unmatched.gpu_count.wanted, 8);
    assert.deepEqual([...c.unmatched.gpu_count.seen].sort(), [1, 2]);
    assert.equal(c.unmatched.workload_hash.wanted, workloadHash({ ...WORKLOAD, concurrency: 64 }));
    assert.equal(c.unmatched.framework, undefined);
    assert.equal(c.unmatched.gpu_model, undefined);
  });

  test('a model revision that differs is a condition; a stack with no baselines: nothing matched', async () => {
    const revised = await createStack({ model_revision: 'rev-d' });
    const hr = await host(pool, revised);
    const runId = gateRun(hr, pool, revised, { value: 1000 });
    const c = expectStatus(await compare(runId, oldStack.id), 200);
    assert.equal(c.matched, 0);
    assert.deepEqual(c.unmatched.model_revision, { wanted: 'rev-d', seen: ['rev-c'] });
    const empty = await createStack();
    const d = expectStatus(await compare(runId, empty.id), 200);
    assert.deepEqual(d, { metric: 'tokens_per_second', value: 1000, matched: 0, candidates: 0, unmatched: {} });
  });

  test('a run with no baseline, or unknown: 404; a missing or malformed stack: 400', async () => {
    const rejected = gateRun(hNew, pool, newStack, { verdict: 'investigate' });
    expectProblem(await compare(rejected, oldStack.id), 404, 'not_found');
    expectProblem(await compare(crypto.randomUUID(), oldStack.id), 404, 'not_found');
    expectProblem(await compare('nope', oldStack.id), 404, 'not_found');
    const ok = gateRun(hNew, pool, newStack, { value: 1 });
    expectProblem(
      await client.request('GET', `/v1/gate-runs/${ok}/baseline-comparison`, { token: viewer }),
      400,
      'invalid_parameter',
      'stack',
    );
    expectProblem(await compare(ok, 'bad'), 400, 'invalid_parameter', 'stack');
    expectProblem(
      await client.request('GET', `/v1/gate-runs/${ok}/baseline-comparison?stack=${oldStack.id}&limit=1`, {
        token: viewer,
      }),
      400,
      'unknown_parameter',
      'limit',
    );
  });
});
