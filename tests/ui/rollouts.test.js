'use strict';
// The rollouts in progress on the status page (ui/rollouts.js) in headless Chromium
// against a real gpufleetd and PostgreSQL: a pool's active rollout shows its target
// stack, state, wave k of n, hosts done / in flight / pending, hosts out of service
// against the limit and the last error, and follows the rollout and rollout.host events
// without a reload. The server runs without workers: the driver's moves are written in
// SQL (the hosts' steps, the wave, the state), as the engine writes them; the events come
// from the tables' triggers. An error text with markup stays text.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer, psql } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');
const { launch } = require('./lib/browser');
const view = require('./lib/view');

const LIVE_MS = 15_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let srv, client, admin, operator, viewer, b, page, pool, stack, ro, navigations;
const sql = (q) => psql(srv.database.url, q);

/** What the item of rollout id shows (null when there is none). */
function itemOf(id) {
  return page.evaluate((rid) => {
    const li = document.querySelector(`#rollouts li[data-rollout-id="${rid}"]`);
    if (!li) return null;
    const f = (n) => {
      const x = li.querySelector(`[data-field="${n}"]`);
      if (!x) return null;
      const value = x.querySelector('strong'); // a figure: its label, then its value
      return value ? value.textContent : x.textContent;
    };
    const err = li.querySelector('[data-field="error"]');
    return {
      pool: f('pool'),
      stack: f('stack'),
      state: f('state'),
      wave: f('wave'),
      done: f('done'),
      inFlight: f('in-flight'),
      pending: f('pending'),
      unavailable: f('unavailable'),
      error: f('error'),
      errorElements: err ? err.querySelectorAll('*').length : 0,
      count: document.getElementById('rollout-count').textContent,
      empty: !document.getElementById('rollouts-empty').hidden,
    };
  }, id);
}

async function waitItem(id, pred, what) {
  const deadline = Date.now() + LIVE_MS;
  let item;
  for (;;) {
    item = await itemOf(id);
    if (pred(item)) return item;
    if (Date.now() > deadline)
      assert.fail(`${what}: not shown within ${LIVE_MS} ms; the item shows ${JSON.stringify(item)}`);
    await sleep(100);
  }
}

before(async () => {
  srv = await startServer({
    name: 'ui-rollouts',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8', GPUFLEET_IDLE_POLICY_INTERVAL: '0' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer', { sub: 'ui-rollouts-viewer' });
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  const old = await fleet.createStack(client, operator, { name: 'vllm-0.6.2' });
  stack = await fleet.createStack(client, operator, { name: 'vllm-0.6.3' });
  pool = await fleet.createPool(client, admin, { name: 'rollout-pool' });
  for (let i = 1; i <= 5; i++) {
    const h = await fleet.createHost(client, operator, {
      name: `ro-ui-${i}`,
      address: `127.0.227.${i}`,
      port: 22,
      user: 'gpu',
      credential_id: cred.id,
      pool_id: pool.id,
      host_key_sha256: `SHA256:${crypto.randomBytes(32).toString('base64').replace(/=+$/, '')}`,
    });
    for (const ev of ['provision_started', 'provision_succeeded', 'gate_started', 'gate_accepted']) {
      sql(`SELECT host_transition('${h.id}', '${ev}', NULL, 'test', NULL, 'worker:test', NULL)`);
    }
    sql(
      `UPDATE hosts SET facts = '{"driver_version": "550.127.05"}', current_stack_id = '${old.id}' WHERE id = '${h.id}'`,
    );
  }
  ro = expectStatus(
    await client.request('POST', `/v1/pools/${pool.id}/rollouts`, {
      token: operator,
      body: { stack_id: stack.id, canary: 1, max_unavailable: 2, min_baseline_ratio: null },
    }),
    201,
  );

  b = await launch();
  page = await b.page();
  await page.goto(`${srv.url}/ui/`);
  await view.signIn(page, viewer);
  await page.waitForFunction(() => document.getElementById('live').textContent === 'live', null, { timeout: LIVE_MS });
  navigations = b.navigations.length;
});

after(async () => {
  if (b) await b.close().catch(() => {});
  if (srv) await srv.stop();
});

describe('rollouts in progress', () => {
  test('the pool’s active rollout: target stack, state, wave k of n, hosts, out of service vs the limit', async () => {
    const it = await waitItem(ro.id, (x) => x !== null, 'the rollout');
    assert.equal(it.pool, 'rollout-pool');
    assert.equal(it.stack, 'vllm-0.6.3');
    assert.equal(it.state, 'running');
    assert.equal(it.wave, '1 of 3');
    assert.equal(it.done, '0');
    assert.equal(it.inFlight, '0');
    assert.equal(it.pending, '5');
    assert.equal(it.unavailable, '0 of 2');
    assert.equal(it.error, null);
    assert.equal(it.count, '(1)');
    assert.equal(it.empty, false);
  });

  test('follows the hosts’ steps and the waves live (rollout.host, rollout events)', async () => {
    const [first, second, third] = ro.hosts.map((h) => h.host_id);
    sql(
      `UPDATE rollout_hosts SET step = 'provisioning', started_at = now() WHERE rollout_id = '${ro.id}' AND host_id = '${first}'`,
    );
    await waitItem(
      ro.id,
      (x) => x && x.inFlight === '1' && x.unavailable === '1 of 2' && x.pending === '4',
      'a host in flight',
    );
    sql(
      `UPDATE rollout_hosts SET step = 'done', finished_at = now() WHERE rollout_id = '${ro.id}' AND host_id = '${first}'`,
    );
    sql(`UPDATE rollouts SET current_wave = 1, updated_at = now() WHERE id = '${ro.id}'`);
    sql(
      `UPDATE rollout_hosts SET step = 'draining', started_at = now() WHERE rollout_id = '${ro.id}' AND host_id IN ('${second}', '${third}')`,
    );
    const it = await waitItem(
      ro.id,
      (x) => x && x.wave === '2 of 3' && x.done === '1' && x.inFlight === '2',
      'the second wave',
    );
    assert.equal(it.unavailable, '2 of 2');
    assert.equal(it.pending, '2');
    assert.equal(b.navigations.length, navigations, 'no reload');
  });

  test('paused, then rolling back with the last error (shown as text)', async () => {
    expectStatus(
      await client.request('POST', `/v1/rollouts/${ro.id}/pause`, { token: operator, body: { reason: 'look first' } }),
      200,
    );
    await waitItem(ro.id, (x) => x && x.state === 'paused', 'paused');
    const why = 'gate on ro-ui-2: <b>workload</b> 812 tokens_per_second < 0.95 × 1000';
    sql(
      `UPDATE rollouts SET state = 'rolling_back', error = '${why.replace(/'/g, "''")}', updated_at = now() WHERE id = '${ro.id}'`,
    );
    const it = await waitItem(ro.id, (x) => x && x.state === 'rolling back', 'rolling back');
    assert.equal(it.error, why);
    assert.equal(it.errorElements, 0, 'the error text made no element');
  });

  test('an ended rollout leaves the list', async () => {
    sql(`UPDATE rollout_hosts SET step = 'done', rollback_step = 'done' WHERE rollout_id = '${ro.id}'`);
    sql(`UPDATE rollouts SET state = 'rolled_back', finished_at = now(), updated_at = now() WHERE id = '${ro.id}'`);
    await waitItem(ro.id, (x) => x === null, 'gone');
    const empty = await page.evaluate(() => !document.getElementById('rollouts-empty').hidden);
    assert.equal(empty, true);
    assert.equal(await page.textContent('#rollout-count'), '(0)');
    assert.deepEqual(
      b.consoleErrors.filter((m) => /Content Security Policy|Refused to/i.test(m)),
      [],
    );
    assert.deepEqual(b.pageErrors, []);
  });
});
