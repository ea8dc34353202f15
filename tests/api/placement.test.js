'use strict';
// The cheapest place to run a brief (issue 27, items 4 and 5; docs/placement.md):
// brief alternatives and their rejections, GET /v1/briefs/{id}/placement ranking
// measured pools, estimated pools and alternatives checked to the cent, and the
// rightsize recommendation only with enough measured evidence. GPUFLEET_WORKERS=0: no
// SSH; host histories are dated in the past with psql, reports carry explicit windows.
//
// Worked case (docs/placement.md), window [T0, T0 + 8 days) = 192 h:
//   pool H  h100_sxm × 1 at $4/h: host A held 192 h, 1,000,000 tokens an hour, busy 1,800 s
//           → $768 ÷ 192,000,000 tokens = $4.00 per 1M (measured, current)
//   pool L  l4 × 1 at $1/h: host B held 192 h, 500,000 tokens an hour, busy 3,600 s
//           → $192 ÷ 96,000,000 = $2.00 per 1M (measured)
//   pool E  l40s × 1 at $2/h, never ran the brief; baseline 500 tokens/s on l40s × 1
//           → T = 1,800,000 tokens/h; demand D = 288,000,000 ÷ 192 h = 1,500,000/h
//           → 1 host, $2/h ÷ 1,500,000 = $1.33 per 1M (estimated)
//   pool T  t4 × 1: a 7B bf16 model does not fit: not listed
//   managed-api   $0.60 per 1M tokens (declared)
//   on-demand-h100 $2.90/GPU-h, 1 GPU, 240 s cold start; H100 measured 192M tokens in 96
//           busy GPU-hours = 2,000,000/GPU-h → 2.9 × 1.5M ÷ 2M + 240/3600 × 2.9 ÷ 24
//           = $2.183056/h ÷ 1.5M = $1.46 per 1M (estimated)
//   reserved-l4  $0.70/GPU-h × 1 GPU, 12 months; L4 measured 500,000/GPU-h, below the
//           demand → $0.70 ÷ 500,000 = $1.40 per 1M, does not meet the metric.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const T0 = '2025-01-01T00:00:00Z';
const hour = (h) => new Date(Date.parse(T0) + h * 3600e3).toISOString().replace('.000Z', 'Z');
const WINDOW = `from=${hour(0)}&to=${hour(192)}`;

let srv;
let client;
let admin;
let operator;
let viewer;
let cred;
let stack;
const pools = {};

function briefBody(overrides = {}) {
  return {
    name: `place-${fleet.uniq()}`,
    kind: 'inference_interactive',
    model: { name: 'acme/chat-7b', parameter_count: 7e9, precision: 'bf16' },
    load: { concurrency: 1 },
    targets: [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }],
    ...overrides,
  };
}
const ALTERNATIVES = [
  { name: 'managed-api', kind: 'api', price_per_unit: 0.6, per_units: 1000000, unit: 'tokens', latency_ms_p95: 400 },
  { name: 'on-demand-h100', kind: 'on_demand', price_per_gpu_hour: 2.9, gpus: 1, cold_start_seconds: 240 },
  { name: 'reserved-l4', kind: 'reserved', price_per_gpu_hour: 0.7, gpus: 1, commitment_months: 12, gpu_model: 'l4' },
];

async function createBrief(body) {
  return expectStatus(await client.request('POST', '/v1/briefs', { token: operator, body }), 201);
}
async function host(pool) {
  const h = await fleet.createHost(client, operator, {
    name: `place-${fleet.uniq()}`,
    address: '127.0.0.1',
    port: 2222,
    user: 'gpufleet',
    credential_id: cred.id,
    pool_id: pool.id,
  });
  psql(srv.database.url, `UPDATE host_state_history SET at = '${T0}' WHERE host_id = '${h.id}'`);
  return h;
}
// Reports every hour of days [d0, d1) for the brief on the host.
async function report(h, brief, d0, d1, completed, busy) {
  const records = [];
  for (let i = d0 * 24; i < d1 * 24; i++) {
    records.push({
      host_id: h.id,
      brief_id: brief.id,
      window_start: hour(i),
      window_end: hour(i + 1),
      unit: 'tokens',
      completed,
      failed: 0,
      retried: 0,
      busy_seconds: busy,
    });
  }
  for (let i = 0; i < records.length; i += 1000) {
    expectStatus(
      await client.request('POST', '/v1/work-reports', {
        token: operator,
        body: { records: records.slice(i, i + 1000) },
      }),
      201,
    );
  }
}
async function placement(brief, token = viewer, query = WINDOW) {
  return expectStatus(await client.request('GET', `/v1/briefs/${brief.id}/placement?${query}`, { token }), 200);
}
const row = (doc, option) => doc.items.find((r) => r.option === option);

before(async () => {
  srv = await startServer({
    name: 'placement',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  stack = await fleet.createStack(client, admin);
  const mk = (key, gpu, price) =>
    fleet.createPool(client, admin, {
      name: `${key}-${fleet.uniq()}`,
      gpu_model: gpu,
      gpu_count: 1,
      price_per_hour: price,
    });
  pools.H = await mk('h100', 'h100_sxm', 4);
  pools.L = await mk('l4', 'l4', 1);
  pools.E = await mk('l40s', 'l40s', 2);
  pools.T = await mk('t4', 't4', 0.5);
  psql(
    srv.database.url,
    `INSERT INTO baselines (source, window_start, window_end, pool_id, stack_id, image_digest, framework,
       gpu_model, gpu_count, metric, value, measured_at)
     VALUES ('work_report', '${hour(0)}', '${hour(1)}', '${pools.E.id}', '${stack.id}', 'sha256:x', 'vllm',
       'l40s', 1, 'tokens_per_second', 500, '${hour(0)}')`,
  );
});

after(async () => {
  if (srv) await srv.stop();
});

describe('alternatives on a brief', () => {
  test('a brief stores its alternatives and rightsize settings', async () => {
    const b = await createBrief(
      briefBody({ alternatives: ALTERNATIVES, rightsize_margin_pct: 30, rightsize_min_days: 3 }),
    );
    assert.equal(b.alternatives.length, 3);
    assert.equal(b.rightsize_margin_pct, 30);
    assert.equal(b.rightsize_min_days, 3);
  });

  const bad = [
    ['an unknown kind', [{ name: 'x', kind: 'spot' }], 'invalid_field', 'alternatives[0].kind'],
    [
      'an api without its price',
      [ALTERNATIVES[0], { name: 'b', kind: 'api', per_units: 1e6, unit: 'tokens' }],
      'invalid_field',
      'alternatives[1].price_per_unit',
    ],
    ['a price of 0', [{ ...ALTERNATIVES[0], price_per_unit: 0 }], 'invalid_field', 'alternatives[0].price_per_unit'],
    ['a negative per_units', [{ ...ALTERNATIVES[0], per_units: -1 }], 'invalid_field', 'alternatives[0].per_units'],
    ['an unknown unit', [{ ...ALTERNATIVES[0], unit: 'bananas' }], 'invalid_field', 'alternatives[0].unit'],
    [
      'an api without a unit',
      [{ name: 'a', kind: 'api', price_per_unit: 1, per_units: 1e6 }],
      'invalid_field',
      'alternatives[0].unit',
    ],
    [
      'two alternatives of one name',
      [ALTERNATIVES[0], { ...ALTERNATIVES[1], name: 'managed-api' }],
      'invalid_field',
      'alternatives[1].name',
    ],
    ['a name with a space', [{ ...ALTERNATIVES[0], name: 'my api' }], 'invalid_field', 'alternatives[0].name'],
    [
      'an on_demand without its cold start',
      [{ name: 'o', kind: 'on_demand', price_per_gpu_hour: 2, gpus: 1 }],
      'invalid_field',
      'alternatives[0].cold_start_seconds',
    ],
    [
      'an on_demand without gpus',
      [{ name: 'o', kind: 'on_demand', price_per_gpu_hour: 2, cold_start_seconds: 1 }],
      'invalid_field',
      'alternatives[0].gpus',
    ],
    [
      'an on_demand with a per-unit price',
      [{ ...ALTERNATIVES[1], price_per_unit: 1 }],
      'invalid_field',
      'alternatives[0].price_per_unit',
    ],
    [
      'an api with a GPU-hour price',
      [{ ...ALTERNATIVES[0], price_per_gpu_hour: 1 }],
      'invalid_field',
      'alternatives[0].price_per_gpu_hour',
    ],
    [
      'a reserved without a commitment',
      [{ name: 'r', kind: 'reserved', price_per_gpu_hour: 1, gpus: 1 }],
      'invalid_field',
      'alternatives[0].commitment_months',
    ],
    [
      'a reserved with a cold start',
      [{ ...ALTERNATIVES[2], cold_start_seconds: 5 }],
      'invalid_field',
      'alternatives[0].cold_start_seconds',
    ],
    [
      'an on_demand with a commitment',
      [{ ...ALTERNATIVES[1], commitment_months: 1 }],
      'invalid_field',
      'alternatives[0].commitment_months',
    ],
    ['zero gpus', [{ ...ALTERNATIVES[1], gpus: 0 }], 'invalid_field', 'alternatives[0].gpus'],
    ['an unknown member', [{ ...ALTERNATIVES[0], discount: 3 }], 'unknown_field', 'alternatives[0].discount'],
    [
      'availability over 100',
      [{ ...ALTERNATIVES[0], availability_pct: 101 }],
      'invalid_field',
      'alternatives[0].availability_pct',
    ],
    ['alternatives not an array', { name: 'x' }, 'invalid_field', 'alternatives'],
    [
      'more than 16',
      Array.from({ length: 17 }, (_, i) => ({ ...ALTERNATIVES[0], name: `api-${i}` })),
      'invalid_field',
      'alternatives',
    ],
  ];
  for (const [what, alternatives, code, field] of bad) {
    test(`refuses ${what}`, async () => {
      expectProblem(
        await client.request('POST', '/v1/briefs', { token: operator, body: briefBody({ alternatives }) }),
        400,
        code,
        field,
      );
    });
  }
  test('refuses a margin over 100 and min days of 0', async () => {
    expectProblem(
      await client.request('POST', '/v1/briefs', { token: operator, body: briefBody({ rightsize_margin_pct: 101 }) }),
      400,
      'invalid_field',
      'rightsize_margin_pct',
    );
    expectProblem(
      await client.request('POST', '/v1/briefs', { token: operator, body: briefBody({ rightsize_min_days: 0 }) }),
      400,
      'invalid_field',
      'rightsize_min_days',
    );
  });
});

describe('placement: the worked case', () => {
  let brief;
  before(async () => {
    brief = await createBrief(briefBody({ alternatives: ALTERNATIVES }));
    await report(await host(pools.H), brief, 0, 8, 1000000, 1800);
    await report(await host(pools.L), brief, 0, 8, 500000, 3600);
  });

  test('ranks measured, estimated and alternatives, cheapest first, to the cent', async () => {
    const doc = await placement(brief);
    assert.equal(doc.unit, 'tokens');
    assert.equal(doc.demand_per_hour, 1500000);
    assert.deepEqual(
      doc.items.map((r) => [r.option, r.basis, r.cost_per_million_units]),
      [
        ['managed-api', 'declared', 0.6],
        [pools.E.name, 'estimated', 1.33],
        ['reserved-l4', 'estimated', 1.4],
        ['on-demand-h100', 'estimated', 1.46],
        [pools.L.name, 'measured', 2],
        [pools.H.name, 'measured', 4],
      ],
    );
    assert.equal(row(doc, pools.T.name), undefined, 'a pool the brief does not fit is not listed');
    const h = row(doc, pools.H.name);
    assert.equal(h.current, true);
    assert.equal(h.evidence.total, 768);
    assert.equal(h.evidence.completed, 192000000);
    assert.equal(h.evidence.days, 8);
    assert.equal(h.evidence.held_hours, 192);
    assert.equal(h.evidence.idle_hours, 96);
    assert.equal(h.evidence.utilization, 0.5);
    assert.equal(h.evidence.failed_retried_share, 0);
    assert.equal(h.cost_per_unit, 0.000004);
    const l = row(doc, pools.L.name);
    assert.equal(l.evidence.total, 192);
    assert.equal(l.current, false);
    const e = row(doc, pools.E.name);
    assert.equal(e.assumptions.throughput_per_host_hour, 1800000);
    assert.equal(e.assumptions.hosts, 1);
    assert.equal(e.meets_success_metric, null);
    const api = row(doc, 'managed-api');
    assert.equal(api.cost_per_unit, 0.0000006);
    assert.equal(api.meets_success_metric, true, 'declared p95 400 ms under the 500 ms target');
    const od = row(doc, 'on-demand-h100');
    assert.equal(od.assumptions.throughput_per_gpu_hour, 2000000);
    assert.equal(od.assumptions.throughput_source, 'measured');
    assert.equal(od.cost_per_hour, 2.18);
    const res = row(doc, 'reserved-l4');
    assert.equal(res.cost_per_hour, 0.7);
    assert.equal(res.meets_success_metric, false);
  });

  test('rightsize to the declared API against the measured current pool, both sides in the evidence', async () => {
    const doc = await placement(brief);
    const rec = doc.recommendation;
    assert.ok(rec, 'a rightsize recommendation');
    assert.equal(rec.action, 'rightsize');
    assert.equal(rec.target.pool_id, pools.H.id);
    assert.equal(rec.target.brief_id, brief.id);
    assert.equal(rec.evidence.current.option, pools.H.name);
    assert.equal(rec.evidence.current.cost_per_million_units, 4);
    assert.equal(rec.evidence.proposed.option, 'managed-api');
    assert.equal(rec.evidence.proposed.cost_per_million_units, 0.6);
    assert.equal(rec.evidence.saving_pct, 85);
    // savings: 1.5M tokens/h × ($4 − $0.60) per 1M = $5.10/h
    assert.equal(rec.estimated_savings_per_hour, 5.1);
  });

  test('GET /v1/recommendations lists the same rightsize (action=rightsize)', async () => {
    const res = expectStatus(
      await client.request('GET', `/v1/recommendations?action=rightsize&at=${hour(192)}`, { token: viewer }),
      200,
    );
    const rec = res.items.find((r) => r.target.brief_id === brief.id);
    assert.ok(rec, 'the pass carries the rightsize');
    assert.equal(rec.action, 'rightsize');
    assert.equal(rec.rule, 'rightsize');
    assert.equal(rec.evidence.proposed.option, 'managed-api');
    assert.equal(rec.project.name, 'default');
    assert.ok(res.items.every((r) => r.action === 'rightsize'));
  });

  test('an api priced in another unit has no cost and is never proposed', async () => {
    const b = await createBrief(briefBody({ alternatives: [{ ...ALTERNATIVES[0], unit: 'requests' }] }));
    await report(await host(pools.H), b, 0, 8, 1000000, 1800);
    const doc = await placement(b);
    const api = row(doc, 'managed-api');
    assert.equal(api.cost_per_unit, null);
    assert.equal(doc.items[doc.items.length - 1].option, 'managed-api', 'rows without a cost last');
    assert.equal(doc.recommendation, null);
  });
});

describe('rightsize needs enough measured evidence', () => {
  test('not with 6 days of reports; with 7 it appears (pool to pool, measured both sides)', async () => {
    const b = await createBrief(briefBody());
    const a = await host(pools.H);
    const l = await host(pools.L);
    await report(a, b, 0, 6, 1000000, 1800);
    await report(l, b, 0, 6, 500000, 3600);
    let doc = await placement(b);
    assert.equal(row(doc, pools.H.name).evidence.days, 6);
    assert.equal(doc.recommendation, null, 'six days are not enough');
    const recs = (at) => client.request('GET', `/v1/recommendations?action=rightsize&at=${at}`, { token: viewer });
    let res = expectStatus(await recs(hour(192)), 200);
    assert.equal(res.items.filter((r) => r.target.brief_id === b.id).length, 0, 'nor in the pass');
    await report(a, b, 6, 7, 1000000, 1800);
    await report(l, b, 6, 7, 500000, 3600);
    doc = await placement(b);
    assert.equal(row(doc, pools.H.name).evidence.days, 7);
    const rec = doc.recommendation;
    assert.ok(rec, 'seven days are');
    assert.equal(rec.evidence.proposed.option, pools.L.name);
    assert.equal(rec.evidence.proposed.basis, 'measured');
    assert.equal(rec.evidence.current.basis, 'measured');
    res = expectStatus(await recs(hour(192)), 200);
    assert.equal(res.items.filter((r) => r.target.brief_id === b.id).length, 1, 'the pass has it');
  });

  test('the pass prices a brief with a report starting in [at - 48 h, at): whole hours and the partial hour', async () => {
    // The pass reads which briefs ran on a connection of its own (db_rec_briefs_ran): the
    // whole hours of its two days from the hour rollup, the partial hour at the start from
    // the reports, as the usage rows it read before did.
    const b = await createBrief(briefBody());
    await report(await host(pools.H), b, 0, 7, 1000000, 1800);
    await report(await host(pools.L), b, 0, 7, 500000, 3600);
    const ran = async (at) => {
      const res = expectStatus(
        await client.request('GET', `/v1/recommendations?action=rightsize&at=${at}`, { token: viewer }),
        200,
      );
      return res.items.some((r) => r.target.brief_id === b.id);
    };
    const min = (h, m) => new Date(Date.parse(hour(h)) + m * 60e3).toISOString().replace('.000Z', 'Z');
    // the last reports start at hour 167
    assert.equal(await ran(hour(215)), true, 'a whole hour at the start of the two days');
    assert.equal(await ran(min(215, 30)), false, 'a report starting 30 min before the two days');
    const c = await host(pools.H);
    expectStatus(
      await client.request('POST', '/v1/work-reports', {
        token: operator,
        body: {
          records: [
            {
              host_id: c.id,
              brief_id: b.id,
              window_start: min(167, 40),
              window_end: hour(168),
              unit: 'tokens',
              completed: 1000,
              failed: 0,
              retried: 0,
              busy_seconds: 60,
            },
          ],
        },
      }),
      201,
    );
    assert.equal(await ran(min(215, 30)), true, 'a report in the partial hour at the start');
    assert.equal(await ran(min(215, 50)), false, 'and not once it starts before the two days');
  });

  test('never on estimates alone: an estimated pool and on-demand capacity far cheaper', async () => {
    const b = await createBrief(briefBody({ alternatives: [{ ...ALTERNATIVES[1], price_per_gpu_hour: 0.1 }] }));
    await report(await host(pools.H), b, 0, 8, 1000000, 1800);
    const doc = await placement(b);
    assert.equal(doc.items[0].basis, 'estimated');
    assert.ok(doc.items[0].cost_per_unit < row(doc, pools.H.name).cost_per_unit * 0.5);
    assert.equal(doc.recommendation, null);
  });

  test('the brief margin: a 50% cheaper pool is not enough against a 60% margin', async () => {
    const b = await createBrief(briefBody({ rightsize_margin_pct: 60 }));
    await report(await host(pools.H), b, 0, 8, 1000000, 1800);
    await report(await host(pools.L), b, 0, 8, 500000, 3600);
    const doc = await placement(b);
    assert.equal(doc.rightsize_margin_pct, 60);
    assert.equal(doc.recommendation, null);
  });
});

describe('placement: reads and rejections', () => {
  test('a brief without reports: estimated rows without demand, no recommendation', async () => {
    const b = await createBrief(briefBody({ alternatives: ALTERNATIVES }));
    const doc = await placement(b);
    assert.equal(doc.unit, null);
    assert.equal(doc.recommendation, null);
    assert.equal(row(doc, 'managed-api').cost_per_million_units, 0.6);
  });
  test('bad windows and unknown briefs', async () => {
    const b = await createBrief(briefBody());
    const get = (q, id = b.id) => client.request('GET', `/v1/briefs/${id}/placement?${q}`, { token: viewer });
    expectProblem(await get('from=yesterday'), 400, 'invalid_parameter', 'from');
    expectProblem(await get(`from=${hour(10)}&to=${hour(5)}`), 400, 'invalid_parameter', 'to');
    expectProblem(await get(`from=2020-01-01T00:00:00Z&to=2022-01-01T00:00:00Z`), 400, 'invalid_parameter', 'to');
    expectProblem(await get('bogus=1'), 400, ['invalid_parameter', 'unknown_parameter']);
    expectProblem(await get('', '00000000-0000-4000-8000-000000000000'), 404, 'not_found');
    expectProblem(await get('', 'not-a-uuid'), 404, 'not_found');
  });
  test('another project sees 404', async () => {
    const b = await createBrief(briefBody());
    expectStatus(
      await client.request('POST', '/v1/projects', { token: admin, body: { name: `other-${fleet.uniq()}` } }),
      201,
    );
    const projects = expectStatus(await client.request('GET', '/v1/projects', { token: admin }), 200);
    const other = projects.items.find((p) => p.name.startsWith('other-'));
    const outsider = srv.token('viewer', { project: other.name });
    expectProblem(await client.request('GET', `/v1/briefs/${b.id}/placement`, { token: outsider }), 404, 'not_found');
  });
});
