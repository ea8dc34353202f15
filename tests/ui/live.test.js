'use strict';
// Live updates of the status page: the event stream (POST /v1/event-tickets, then an
// EventSource on /v1/events?ticket=…) in headless Chromium against a real gpufleetd
// and PostgreSQL. Changes made through the API (a drain, a label, a host
// registered and deleted, work reports) and the health monitor's samples (stored with
// monitor_store, as the monitor stores them: a host's health, its GPUs and a new GPU
// event, from the gpu.event and host.health events) reach the page without a reload; when the
// server goes away the page says so, mints a new ticket (tickets are single use) and
// reopens the stream with last_event_id, and what changed meanwhile shows up.
// No SSH is involved: the server runs without workers.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');

const { startServer, waitExit, psql, BIN, LOG_DIR } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');
const { launch } = require('./lib/browser');
const view = require('./lib/view');

const LIVE_MS = 15_000; // a change must show within this, without a reload

let srv;
let second = null; // the server process after the restart
let client;
let admin;
let operator;
let viewer;
let cred;
let pool;
let host;
let b;
let page;
let navigations; // main-frame navigations once signed in

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const waitRow = (id, pred, what, timeout = LIVE_MS) => view.waitRow(page, id, pred, what, timeout);
const liveText = () => page.textContent('#live');
const pathOf = (u) => new URL(u).pathname;
const eventRequests = () => b.requests.filter((r) => pathOf(r.url) === '/v1/events');
const ticketRequests = () => b.requests.filter((r) => pathOf(r.url) === '/v1/event-tickets');

async function waitLive(what) {
  await page
    .waitForFunction(() => document.getElementById('live').textContent === 'live', null, { timeout: LIVE_MS })
    .catch(async () => {
      assert.fail(`${what}: the live indicator never said live; it says ${await liveText()}`);
    });
}

async function register(name, address) {
  return fleet.createHost(client, operator, {
    name,
    address,
    port: 2222,
    user: 'gpufleet',
    credential_id: cred.id,
    pool_id: pool.id,
  });
}

/** Starts `gpufleetd serve` again on the same port and database (the first one is gone). */
async function restart() {
  const fd = fs.openSync(path.join(LOG_DIR, 'ui-live.log'), 'a');
  second = spawn(BIN, ['serve'], { env: srv.env, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${srv.url}/healthz`, {
        headers: { Connection: 'close' }, // no idle socket left in the pool (see api() in openapi.js)
        signal: AbortSignal.timeout(1000),
      });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      /* not yet */
    }
    await sleep(100);
  }
  assert.fail('the restarted server did not answer /healthz');
}

before(async () => {
  srv = await startServer({
    name: 'ui-live',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8', GPUFLEET_IDLE_POLICY_INTERVAL: '0' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer', { sub: 'ui-live-viewer' });
  cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pool = await fleet.createPool(client, admin, { name: 'live-pool', gpu_model: 'h100_sxm', gpu_count: 8 });
  host = await register('live-a', '127.0.226.1');

  b = await launch();
  page = await b.page();
  await page.goto(`${srv.url}/ui/`);
  await view.signIn(page, viewer);
  await waitRow(host.id, (r) => r && r.state === 'registered', 'the registered host');
  await page.evaluate(() => {
    window.__noReload = 'marker';
  });
  navigations = b.navigations.length;
});

after(async () => {
  if (b) await b.close().catch(() => {});
  if (second && second.exitCode === null && second.signalCode === null) {
    second.kill('SIGTERM');
    if (!(await waitExit(second, 10_000))) second.kill('SIGKILL');
  }
  if (srv) await srv.stop();
});

describe('live updates', () => {
  test('the page opens the event stream with a single-use ticket, never the token', async () => {
    await waitLive('first open');
    const tickets = ticketRequests();
    assert.ok(tickets.length >= 1, 'a ticket was minted');
    assert.equal(tickets[0].headers.authorization, `Bearer ${viewer}`);
    const streams = eventRequests();
    assert.ok(streams.length >= 1, 'the stream was opened');
    for (const r of streams) {
      const u = new URL(r.url);
      assert.ok(u.searchParams.get('ticket'), r.url);
      assert.ok(!r.url.includes(viewer.split('.')[2]), 'the token is not in the stream URL');
      assert.equal(r.headers.authorization, undefined, 'EventSource sends no token');
    }
  });

  test('a drain and a label change made through the API show without a reload', async () => {
    const res = expectStatus(await client.request('POST', `/v1/hosts/${host.id}/drain`, { token: operator }), 200);
    assert.equal(res.state, 'drained');
    await waitRow(host.id, (r) => r.state === 'drained', 'drain');
    expectStatus(
      await client.request('PATCH', `/v1/hosts/${host.id}`, { token: operator, body: { labels: { rack: 'r42' } } }),
      200,
    );
    await waitRow(host.id, (r) => r.labels.includes('rack=r42'), 'a new label');
    assert.equal((await view.rowOf(page, host.id)).state, 'drained');
  });

  test('a host registered and deleted elsewhere appears and disappears', async () => {
    const extra = await register('live-b', '127.0.226.2');
    await waitRow(extra.id, (r) => r && r.state === 'registered', 'a new host');
    assert.equal(await page.textContent('#host-count'), '(2)');
    expectStatus(await client.request('DELETE', `/v1/hosts/${extra.id}`, { token: admin }), 204);
    await waitRow(extra.id, (r) => r === null, 'a deleted host');
    assert.equal(await page.textContent('#host-count'), '(1)');
  });

  test('work reports refresh the costs (at most every 5 s)', async () => {
    const before = b.requests.filter((r) => pathOf(r.url) === '/v1/costs').length;
    const reporter = srv.token('reporter', { args: ['--pool', pool.name] });
    const now = Date.now();
    const records = [
      {
        host_id: host.id,
        window_start: new Date(now - 600e3).toISOString(),
        window_end: new Date(now - 60e3).toISOString(),
        unit: 'requests',
        completed: 900,
        failed: 100,
        retried: 0,
        busy_seconds: 300,
      },
    ];
    expectStatus(await client.request('POST', '/v1/work-reports', { token: reporter, body: { records } }), 201);
    await page.waitForFunction(
      (id) => {
        const tr = document.querySelector(`#costs tbody tr[data-pool-id="${id}"]`);
        return tr && /per 1,000 requests/.test(tr.textContent);
      },
      pool.id,
      { timeout: 10_000 }, // the page's own refresh of the costs comes every 5 min only
    );
    const after = b.requests.filter((r) => pathOf(r.url) === '/v1/costs').length;
    assert.ok(after > before, 'the page asked for the costs again');
  });

  test("a sample, then an isolating Xid: the host's health and its open view follow, without a reload", async () => {
    const gpu = (i) => ({
      uuid: `GPU-5e1c${i}a0d-77aa-4b1c-8d2e-0f9a8b7c6d5${i}`,
      pci_bus_id: `00000000:${['18', '2A'][i]}:00.0`,
      index: i,
      name: 'NVIDIA H100 80GB HBM3',
      util_gpu: 88 + i,
      util_mem: 51,
      mem_used_mib: 70144,
      mem_total_mib: 81559,
      temp_c: 64 + i,
      power_w: 611.5,
    });
    const store = (doc) =>
      psql(
        srv.database.url,
        `SELECT monitor_store('${host.id}', $d$${JSON.stringify({ at: new Date().toISOString(), ...doc })}$d$::jsonb)`,
      );
    assert.equal((await view.rowOf(page, host.id)).health, 'unknown');
    await page.click(`#hosts button[data-open-host="${host.id}"]`);
    await view.waitView(
      page,
      (v) => v && v.health === 'unknown' && v.gpus.length === 0,
      'the view of a host never sampled',
    );
    const before = b.requests.length;
    store({ gpus: [gpu(0), gpu(1)] });
    await waitRow(host.id, (r) => r.health === 'ok' && /^sampled /.test(r.sampled), 'health ok after the first sample');
    let v = await view.waitView(page, (x) => x.gpus.length === 2, 'two GPUs', LIVE_MS);
    assert.deepEqual(
      v.gpus.map((g) => [g.index, g.util, g.temp, g.power]),
      [
        ['0', '88 %', '64 °C', '612 W'],
        ['1', '89 %', '65 °C', '612 W'],
      ],
    );
    store({
      gpus: [gpu(0), gpu(1)],
      events: [
        {
          kind: 'xid',
          code: 79,
          category: 'hardware',
          policy: 'isolate',
          pci_bus_id: gpu(1).pci_bus_id,
          message: 'Xid 79: GPU has fallen off the bus',
        },
      ],
    });
    await waitRow(host.id, (r) => r.health === 'critical', 'critical after Xid 79');
    v = await view.waitView(
      page,
      (x) => x.health === 'critical' && x.events.length === 1 && x.reason.startsWith('1 open isolating'),
      'the Xid 79 in the view',
      LIVE_MS,
    );
    assert.deepEqual(
      [v.events[0].event, v.events[0].gpu, v.events[0].policy, v.events[0].status],
      ['Xid 79 hardware', 'GPU 1', 'isolate', 'open'],
    );
    assert.equal(
      v.reason,
      `1 open isolating event, the latest Xid 79 on ${gpu(1).uuid}: Xid 79: GPU has fallen off the bus`,
      'the reason of the host.health event',
    );
    assert.equal(v.gpus[1].events, '1');
    const paths = b.requests.slice(before).map((r) => pathOf(r.url));
    assert.ok(paths.includes(`/v1/hosts/${host.id}/health`), 'the health was read again');
    assert.ok(!paths.includes(`/v1/hosts/${host.id}`), 'a GPU event does not re-read the host itself');
    await page.click('#hv-close');
  });

  test('when the server goes away the page says so, then reconnects with a new ticket and last_event_id, and catches up', async () => {
    const ticketsBefore = ticketRequests().length;
    srv.process.kill('SIGTERM');
    await waitExit(srv.process, 10_000);
    await page.waitForFunction(() => /reconnecting/.test(document.getElementById('live').textContent), null, {
      timeout: LIVE_MS,
    });
    await restart();
    // A change while the page may not be connected yet: it must show either way.
    expectStatus(
      await client.request('PATCH', `/v1/hosts/${host.id}`, { token: operator, body: { labels: { rack: 'r43' } } }),
      200,
    );
    await waitLive('after the restart');
    await waitRow(host.id, (r) => r.labels.includes('rack=r43'), 'the change made around the restart');
    assert.ok(ticketRequests().length > ticketsBefore, 'a new ticket was minted');
    const streams = eventRequests();
    const tickets = streams.map((r) => new URL(r.url).searchParams.get('ticket'));
    assert.equal(new Set(tickets).size, tickets.length, 'no ticket was used twice');
    const last = new URL(streams[streams.length - 1].url);
    assert.match(
      last.searchParams.get('last_event_id') || '',
      /^\d+$/,
      `the reopened stream names the last event seen: ${last}`,
    );
  });

  test('no reload, no CSP violation, no page error, no dialog', async () => {
    assert.equal(await page.evaluate(() => window.__noReload), 'marker', 'the page was not reloaded');
    assert.deepEqual(b.navigations.slice(navigations), [], 'no navigation since sign-in');
    assert.deepEqual(await b.cspViolations(page), []);
    assert.deepEqual(
      b.consoleErrors.filter((m) => /Content Security Policy|Refused to/i.test(m)),
      [],
    );
    assert.deepEqual(b.pageErrors, []);
    assert.deepEqual(b.dialogs, []);
  });
});
