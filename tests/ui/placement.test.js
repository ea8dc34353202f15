'use strict';
// The placement table per brief on the status page (ui/placement.js, docs/placement.md)
// in headless Chromium against a real gpufleetd and PostgreSQL, without workers: a brief
// that ran 8 days on an h100 pool ($4.00 per 1M tokens) and on an l4 pool ($2.00), with a
// managed API alternative at $0.60 per 1M, shows its rows cheapest first with their basis
// and the rightsize recommendation; a brief name with markup stays text.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');
const { launch } = require('./lib/browser');
const view = require('./lib/view');

const LIVE_MS = 15_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const T0 = new Date(Date.now() - 9 * 86400e3);
T0.setUTCHours(0, 0, 0, 0);
const hour = (h) => new Date(T0.getTime() + h * 3600e3).toISOString().replace('.000Z', 'Z');

let srv, client, admin, operator, viewer, b, page, brief;

async function host(cred, pool) {
  const h = await fleet.createHost(client, operator, {
    name: `pl-${fleet.uniq()}`,
    address: '127.0.0.1',
    port: 2222,
    user: 'gpufleet',
    credential_id: cred.id,
    pool_id: pool.id,
  });
  psql(srv.database.url, `UPDATE host_state_history SET at = '${hour(0)}' WHERE host_id = '${h.id}'`);
  // stopped at the end of day 8: the window then holds exactly 192 held hours
  psql(
    srv.database.url,
    `INSERT INTO host_state_history (host_id, from_state, to_state, reason, actor, at)
     VALUES ('${h.id}', 'registered', 'stopped', 'test', 'test', '${hour(192)}')`,
  );
  return h;
}
async function report(h, completed, busy) {
  const records = [];
  for (let i = 0; i < 192; i++) {
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
  expectStatus(await client.request('POST', '/v1/work-reports', { token: operator, body: { records } }), 201);
}

function itemOf(id) {
  return page.evaluate((bid) => {
    const li = document.querySelector(`#placements li[data-brief-id="${bid}"]`);
    if (!li) return null;
    return {
      name: li.querySelector('h3').textContent,
      nameElements: li.querySelector('h3').querySelectorAll('*').length,
      rows: [...li.querySelectorAll('tbody tr')].map((tr) =>
        ['option', 'kind', 'basis', 'cost', 'meets'].map((c) => tr.querySelector(`td[data-col="${c}"]`).textContent),
      ),
      rec: li.querySelector('[data-field="recommendation"]').textContent,
    };
  }, id);
}

before(async () => {
  srv = await startServer({
    name: 'ui-placement',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8', GPUFLEET_IDLE_POLICY_INTERVAL: '0' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer', { sub: 'ui-placement-viewer' });
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  const h100 = await fleet.createPool(client, admin, {
    name: 'h100-pool',
    gpu_model: 'h100_sxm',
    gpu_count: 1,
    price_per_hour: 4,
  });
  const l4 = await fleet.createPool(client, admin, {
    name: 'l4-pool',
    gpu_model: 'l4',
    gpu_count: 1,
    price_per_hour: 1,
  });
  brief = expectStatus(
    await client.request('POST', '/v1/briefs', {
      token: operator,
      body: {
        name: 'chat <b>7b</b>',
        kind: 'inference_interactive',
        model: { name: 'acme/chat-7b', parameter_count: 7e9, precision: 'bf16' },
        load: { concurrency: 1 },
        targets: [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }],
        alternatives: [{ name: 'managed-api', kind: 'api', price_per_unit: 0.6, per_units: 1e6, unit: 'tokens' }],
      },
    }),
    201,
  );
  await report(await host(cred, h100), 1000000, 1800);
  await report(await host(cred, l4), 500000, 3600);

  b = await launch();
  page = await b.page();
  await page.goto(`${srv.url}/ui/`);
  await view.signIn(page, viewer);
});

after(async () => {
  if (b) await b.close().catch(() => {});
  if (srv) await srv.stop();
});

describe('placement per brief', () => {
  test('rows cheapest first with their basis, and the rightsize', async () => {
    const deadline = Date.now() + LIVE_MS;
    let it;
    while (!(it = await itemOf(brief.id))) {
      if (Date.now() > deadline) assert.fail('the brief’s placement is not shown');
      await sleep(100);
    }
    assert.equal(it.name, 'chat <b>7b</b>');
    assert.equal(it.nameElements, 0, 'markup in a name stays text');
    assert.deepEqual(it.rows, [
      ['managed-api', 'api', 'declared', '$0.60', 'unknown'],
      ['l4-pool', 'pool', 'measured', '$2.00', 'unknown'],
      ['h100-pool (current)', 'pool', 'measured', '$4.00', 'unknown'],
    ]);
    assert.match(it.rec, /^rightsize: .*managed-api costs 0\.60 per 1M/);
  });
});
