'use strict';
// The status page (/ui/) in headless Chromium against a real gpufleetd, a real
// PostgreSQL and the simulated sshd fleet (needs root). Three simulated hosts are
// registered, provisioned and gated through the API (an 8x H100 that is accepted, an L4
// in a pool whose name is an HTML payload, an H100 with a missing GPU that is isolated),
// plus one host that is only registered and carries an HTML payload as a label. Then:
// sign-in keeps the token in sessionStorage only; the table shows what the API says;
// payloads stay text; filters; costs and recommendations; each host's health (from the
// monitor's real samples of the simulated hosts) and a host's view with its GPUs and
// events, host text in it literal; no CSP violation, no dialog, no page error. The README's
// screenshot is taken on a server of its own with a realistic fleet (tests/ui/lib/demo.js),
// never of the payloads above. Live updates: tests/ui/live.test.js.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { spawnSync } = require('node:child_process');

const { startServer, psql, ROOT, ARTIFACTS } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');
const { launch } = require('./lib/browser');
const view = require('./lib/view');
const { seedDemo } = require('./lib/demo');

const XSS = '<img src=x onerror=alert(1)>';
const UI_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const SHOT = path.join(ARTIFACTS, 'ui', 'status-page.png');
const DOC_SHOT = path.join(ROOT, 'docs', 'img', 'status-page.png');
const WORKER_ENV = {
  GPUFLEET_WORKERS: '2',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '10',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
  GPUFLEET_JOB_LEASE_SECONDS: '9',
  GPUFLEET_IDLE_POLICY_INTERVAL: '0',
  GPUFLEET_MONITOR: '1', // the health column and the host view show the monitor's real samples
};

let sim;
let srv;
let client;
let admin;
let operator;
let viewer;
let b; // the browser
let page;
const hosts = {}; // role → API host: h100, l4, missing, spare
const pools = {}; // h100, xss
let stack;

const ago = (ms) => new Date(Date.now() - ms).toISOString();
const SIMFLEET = path.join(ROOT, 'tests', 'fleet', 'simfleet');

function simctl(...args) {
  const r = spawnSync(SIMFLEET, [...args, '--dir', sim.dir], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `simfleet ${args.join(' ')}: ${r.stdout}${r.stderr}`);
}

/** The idle H100's last 35 minutes of samples (every 10 s, the pool's interval), all GPUs at
 * 0 %, stored as the monitor stores them: the idle policy wants GPU evidence over its window. */
function idleSamples(h) {
  const gpus = h.facts.gpus.map((g) => ({
    uuid: g.uuid,
    pci_bus_id: g.pci_bus_id,
    index: g.index,
    name: g.name,
    util_gpu: 0,
    util_mem: 0,
    mem_used_mib: 4,
    mem_total_mib: g.memory_mib,
    temp_c: 31,
    power_w: 71.5,
  }));
  const now = Date.now();
  const calls = [];
  for (let t = 35 * 60; t > 0; t -= 10) {
    calls.push(
      `SELECT monitor_store('${h.id}', $d$${JSON.stringify({ at: new Date(now - t * 1000).toISOString(), gpus })}$d$::jsonb);`,
    );
  }
  const r = spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', srv.database.url], {
    encoding: 'utf8',
    input: calls.join('\n'),
    timeout: 120_000,
  });
  assert.equal(r.status, 0, r.stderr);
}

async function apiHost(id) {
  return expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
}

const rowOf = (id) => view.rowOf(page, id);
const visibleHostIds = () => view.visibleHostIds(page);
const waitRow = (id, pred, what, timeout) => view.waitRow(page, id, pred, what, timeout);
const signIn = (token) => view.signIn(page, token);

before(async () => {
  sim = fleet.simfleet.up({
    count: 3,
    profile: ['h100x8', 'l4x1', 'gpu_missing'],
    net: 227, // 225 is tests/fleet/recover.test.js's
    user: 'gpufleet-utest',
    delay: 0,
    dir: fs.mkdtempSync('/tmp/gft-ui-fleet-'),
  });
  srv = await startServer({ name: 'ui-status', env: WORKER_ENV });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer', { sub: 'ui-viewer' });

  const cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  stack = await fleet.createStack(client, operator, { name: 'vllm-0.6.3-cu124' });
  const gate = {
    storage_min_mbps: 20,
    workload: { command: ['python3', 'bench.py'], metric: 'tokens_per_second', min: 1000, timeout_s: 8 },
  };
  const common = {
    price_per_hour: 12,
    durable_path: sim.env.SIMFLEET_DURABLE_PATH,
    scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
    gate,
    monitor: { interval_seconds: 10 },
  };
  pools.h100 = await fleet.createPool(client, admin, {
    ...common,
    name: 'h100-nvlink',
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    interconnect: 'nvlink',
    price_per_hour: 32,
  });
  pools.xss = await fleet.createPool(client, admin, { ...common, name: XSS, gpu_model: 'l4', gpu_count: 1 });

  const sims = {
    h100: sim.ofProfile('h100x8')[0],
    l4: sim.ofProfile('l4x1')[0],
    missing: sim.ofProfile('gpu_missing')[0],
  };
  const names = { h100: 'ui-h100-a', l4: 'ui-l4-b', missing: 'ui-h100-c' };
  for (const role of ['h100', 'l4', 'missing']) {
    const h = sims[role];
    hosts[role] = await fleet.createHost(client, operator, {
      name: names[role],
      address: h.address,
      port: h.port,
      user: h.user,
      credential_id: cred.id,
      pool_id: role === 'l4' ? pools.xss.id : pools.h100.id,
      labels: { rack: `r${role.length}` },
    });
  }
  // Registered only (nothing listens there): never provisioned, never gated.
  hosts.spare = await fleet.createHost(client, operator, {
    name: 'ui-spare-d',
    address: '127.0.227.200',
    port: 2222,
    user: 'gpufleet',
    credential_id: cred.id,
    pool_id: pools.h100.id,
    labels: { note: XSS },
  });

  const gated = ['h100', 'l4', 'missing'];
  await Promise.all(
    gated.map(async (role) => {
      const p = await fleet.provision(client, operator, hosts[role].id, stack.id);
      const pj = await fleet.waitJob(client, viewer, p.id, { timeoutMs: 90_000, intervalMs: 300 });
      assert.equal(pj.state, 'succeeded', `provisioning ${role}: ${pj.error_class} ${pj.error}`);
      const g = expectStatus(
        await client.request('POST', `/v1/hosts/${hosts[role].id}/gate`, { token: operator }),
        202,
      );
      const gj = await fleet.waitJob(client, viewer, g.id, { timeoutMs: 90_000, intervalMs: 300 });
      assert.equal(gj.state, 'succeeded', `gate ${role}: ${gj.error_class} ${gj.error}`);
    }),
  );
  for (const role of Object.keys(hosts)) hosts[role] = await apiHost(hosts[role].id);
  simctl('set', sims.h100.name, 'util=0');
  simctl('set', sims.l4.name, 'util=62');
  idleSamples(hosts.h100);

  // As if the fleet had been registered four hours ago (held time comes from the state
  // history), so the work reports below fall inside the time the hosts were held.
  const ids = Object.values(hosts)
    .map((h) => `'${h.id}'`)
    .join(', ');
  psql(srv.database.url, `UPDATE host_state_history SET at = at - interval '4 hours' WHERE host_id IN (${ids})`);

  // Work reports: the L4 did work in the last hours, the H100 sat idle (a stop recommendation).
  const reporter = srv.token('reporter', { args: ['--host', hosts.l4.id, '--host', hosts.h100.id] });
  const records = [
    {
      host_id: hosts.l4.id,
      window_start: ago(3 * 3600e3),
      window_end: ago(2 * 3600e3),
      unit: 'tokens',
      completed: 120000,
      failed: 6000,
      retried: 0,
      busy_seconds: 2880,
    },
    {
      host_id: hosts.h100.id,
      window_start: ago(3 * 3600e3),
      window_end: ago(2 * 3600e3),
      unit: 'tokens',
      completed: 0,
      failed: 0,
      retried: 0,
      busy_seconds: 0,
    },
    {
      host_id: hosts.h100.id,
      window_start: ago(2 * 3600e3),
      window_end: ago(60e3),
      unit: 'tokens',
      completed: 0,
      failed: 0,
      retried: 0,
      busy_seconds: 0,
    },
  ];
  expectStatus(await client.request('POST', '/v1/work-reports', { token: reporter, body: { records } }), 201);

  b = await launch({ viewport: { width: 1440, height: 720 } });
  page = await b.page();
});

after(async () => {
  if (b) await b.close().catch(() => {});
  if (srv) await srv.stop();
  if (sim) {
    sim.down();
    fs.rmSync(sim.dir, { recursive: true, force: true });
  }
});

describe('the status page', () => {
  test('the fleet is what the page will show: a real verdict and GPU facts', () => {
    assert.equal(hosts.h100.state, 'ready');
    assert.equal(hosts.h100.last_gate.verdict, 'accept');
    assert.equal(hosts.l4.last_gate.verdict, 'accept');
    assert.equal(hosts.missing.state, 'quarantined');
    assert.equal(hosts.missing.last_gate.verdict, 'isolate');
    assert.ok(
      hosts.missing.last_gate.failing_checks.includes('gpu_inventory'),
      JSON.stringify(hosts.missing.last_gate),
    );
    assert.equal(hosts.spare.last_gate, null);
    assert.equal(hosts.h100.facts.gpus.length, 8);
  });

  test('the page loads without a token, under its strict policy, and asks for one', async () => {
    const res = await page.goto(`${srv.url}/ui`);
    assert.equal(page.url(), `${srv.url}/ui/`, '/ui redirects to /ui/');
    const h = res.headers();
    assert.equal(h['content-security-policy'], UI_CSP);
    assert.equal(h['x-content-type-options'], 'nosniff');
    assert.equal(h['referrer-policy'], 'no-referrer');
    assert.equal(h['content-type'], 'text/html; charset=utf-8');
    await page.waitForSelector('#signin:not([hidden])');
    assert.equal(await page.isVisible('#dashboard'), false);
  });

  test('a malformed token, a refused one (401) and a role that may not read (403) are shown plainly', async () => {
    await signIn('not a token');
    await page.waitForSelector('#signin-error:not([hidden])');
    assert.match(await page.textContent('#signin-error'), /not a token/);
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);

    const tampered = viewer.slice(0, -4) + (viewer.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    await signIn(tampered);
    await page.waitForFunction(() => /token was refused/.test(document.getElementById('signin-error').textContent));
    assert.equal(await page.isVisible('#signin'), true, '401: back at sign-in');
    assert.equal(
      await page.evaluate(() => sessionStorage.getItem('gpufleet.token')),
      null,
      '401: the token is forgotten',
    );

    await signIn(srv.token('reporter'));
    await page.waitForSelector('#error:not([hidden])');
    assert.match(await page.textContent('#error'), /Not allowed with this token: .*reporter/);
    await page.click('#signout');
    await page.waitForSelector('#signin:not([hidden])');
  });

  test('sign-in keeps the token in sessionStorage only: not in localStorage, a cookie or a URL', async () => {
    const from = b.requests.length;
    await signIn(viewer);
    await page.waitForFunction((n) => document.querySelectorAll('#hosts tbody tr').length === n, 4);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('gpufleet.token')), viewer);
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    assert.equal(await page.evaluate(() => document.cookie), '');
    assert.deepEqual(await page.context().cookies(), []);
    assert.equal(page.url(), `${srv.url}/ui/`);
    for (const u of b.requests)
      assert.ok(
        !u.url.includes(viewer) && !u.url.includes(viewer.split('.')[2]),
        `a request URL carries the token: ${u.url}`,
      );
    const dataCalls = b.requests.slice(from).filter((r) => new URL(r.url).pathname.startsWith('/v1/hosts'));
    assert.ok(dataCalls.length > 0);
    for (const r of dataCalls) assert.equal(r.headers.authorization, `Bearer ${viewer}`);
  });

  test('every host is listed with its state, pool, GPU model × count, stack, verdict and failing checks', async () => {
    const want = {
      h100: { gpus: '8 × NVIDIA H100 80GB HBM3', pool: 'h100-nvlink' },
      l4: { gpus: '1 × NVIDIA L4', pool: XSS },
      missing: { gpus: '7 × NVIDIA H100 80GB HBM3', pool: 'h100-nvlink' },
      spare: { gpus: '—', pool: 'h100-nvlink' },
    };
    for (const [role, h] of Object.entries(hosts)) {
      const row = await waitRow(
        h.id,
        (r) => r && (!h.current_stack_id || r.stack === stack.name),
        `${role}: stack name`,
        10_000,
      );
      assert.equal(row.name, h.name, role);
      assert.equal(row.state, h.state, role);
      assert.equal(row.pool, want[role].pool, role);
      assert.equal(row.gpus, want[role].gpus, role);
      if (h.last_gate) {
        assert.equal(row.verdict, h.last_gate.verdict, role);
        assert.equal(row.failing, h.last_gate.failing_checks.join(', '), role);
      } else {
        assert.equal(row.verdict, null, role);
        assert.equal(row.gate, 'never gated', role);
        assert.equal(row.stack, '—', role);
      }
      assert.match(row.seen, h.last_seen ? /^(just now|\d+ s ago|\d+ min ago)$/ : /^never$/, role);
    }
    assert.match((await rowOf(hosts.missing.id)).failing, /gpu_inventory/);
    assert.equal(await page.textContent('#host-count'), '(4)');
  });

  test('host-supplied text is shown literally: no element, no dialog', async () => {
    assert.deepEqual((await rowOf(hosts.spare.id)).labels, [`note=${XSS}`]);
    assert.equal((await rowOf(hosts.l4.id)).pool, XSS);
    assert.equal(await page.locator('#hosts img').count(), 0, 'no <img> in the table');
    assert.equal(await page.locator('img').count(), 0, 'no <img> anywhere');
    const options = await page.$$eval('#filter-pool option', (os) => os.map((o) => o.textContent));
    assert.ok(options.includes(XSS), `pool filter options: ${options}`);
    await fleet.sleep(500); // an onerror would have fired by now
    assert.deepEqual(b.dialogs, [], 'alert(1) never ran');
  });

  test("each host shows its health and the age of its last sample: the monitor's samples, unknown when never sampled", async () => {
    const l4 = await waitRow(hosts.l4.id, (r) => r.health === 'ok', 'the L4 sampled ok by the monitor', 45_000);
    assert.match(l4.sampled, /^sampled (just now|\d+ s ago)$/);
    const h100 = await waitRow(hosts.h100.id, (r) => r.health === 'ok', 'the H100 ok', 45_000);
    assert.match(h100.sampled, /^sampled (just now|\d+ s ago)$/);
    assert.match(h100.healthTitle, /no open event/);
    const spare = await rowOf(hosts.spare.id);
    assert.equal(spare.health, 'unknown');
    assert.equal(spare.sampled, 'never sampled');
    const api4 = expectStatus(
      await client.request('GET', `/v1/hosts/${hosts.missing.id}/health`, { token: viewer }),
      200,
    );
    await waitRow(
      hosts.missing.id,
      (r) => r.health === api4.monitor.state || r.health === 'critical',
      'the isolated H100',
      45_000,
    );
  });

  test("a host's view: its GPUs with their readings, and their recent events", async () => {
    const id = hosts.h100.id;
    await page.click(`#hosts button[data-open-host="${id}"]`);
    const v = await view.waitView(page, (x) => x && x.gpus.length === 8, "the H100's 8 GPUs");
    const doc = expectStatus(await client.request('GET', `/v1/hosts/${id}/health`, { token: viewer }), 200);
    assert.equal(v.name, hosts.h100.name);
    assert.equal(v.state, 'ready');
    assert.equal(v.health, doc.monitor.state);
    assert.deepEqual(
      v.gpus.map((g) => g.uuid),
      doc.gpus.map((g) => g.uuid),
    );
    assert.deepEqual(
      v.gpus.map((g) => g.uuid).sort(),
      hosts.h100.facts.gpus.map((g) => g.uuid).sort(),
      'the GPUs the gate saw',
    );
    for (const [i, g] of v.gpus.entries()) {
      assert.equal(g.index, String(i));
      assert.equal(g.name, 'NVIDIA H100 80GB HBM3');
      assert.match(g.util, /^(\d+ %|—)$/);
      assert.match(g.temp, /^(\d+ °C|—)$/);
      assert.match(g.power, /^([\d,]+ W|—)$/);
      assert.match(g.memory, /^([\d.,]+ GiB \/ [\d.,]+ GiB|—)$/);
    }
    assert.equal(await page.locator(`#hosts tr.selected[data-host-id="${id}"]`).count(), 1, "the host's row is marked");
    await page.click('#hv-close');
    assert.equal(await view.hostView(page), null);
  });

  test('event messages and kernel-log lines in the host view stay literal', async () => {
    const id = hosts.l4.id;
    const doc = expectStatus(await client.request('GET', `/v1/hosts/${id}/health`, { token: viewer }), 200);
    assert.ok(doc.gpus.length >= 1, 'the L4 was sampled');
    const ev = {
      kind: 'xid',
      code: 13,
      category: 'application',
      policy: 'record',
      gpu_uuid: doc.gpus[0].uuid,
      raw: `NVRM: Xid ${XSS}`,
      message: `Xid 13: ${XSS}`,
    };
    psql(
      srv.database.url,
      `SELECT monitor_store('${id}', $d$${JSON.stringify({ at: new Date().toISOString(), gpus: [], events: [ev] })}$d$::jsonb)`,
    );
    await page.click(`#hosts button[data-open-host="${id}"]`);
    const v = await view.waitView(
      page,
      (x) => x && x.events.some((e) => e.event.startsWith('Xid 13')),
      'the Xid 13 with a payload',
    );
    const row = v.events.find((e) => e.event.startsWith('Xid 13'));
    assert.equal(row.message, `Xid 13: ${XSS}`);
    assert.equal(row.gpu, 'GPU 0');
    assert.equal(row.policy, 'record');
    assert.equal(await page.locator('img').count(), 0, 'no <img> anywhere');
    await fleet.sleep(500);
    assert.deepEqual(b.dialogs, []);
    await waitRow(id, (r) => r.health === 'degraded', 'the L4 degraded by the Xid', 15_000);
    await page.click('#hv-close');
  });

  test('"last seen" is re-labelled client-side every few seconds', async () => {
    const id = hosts.h100.id;
    const first = await rowOf(id);
    const before = b.requests.length;
    // Either label moves within seconds ("last seen" is minutes old by now, the last sample is not).
    const row = await waitRow(
      id,
      (r) => r.seen !== first.seen || r.sampled !== first.sampled,
      'a new last-seen or sampled label',
      12_000,
    );
    assert.match(row.seen, /^(\d+ s ago|\d+ min ago)$/);
    assert.match(row.sampled, /^sampled (just now|\d+ s ago)$/);
    // (A health read may come with a host.health event: the monitor samples meanwhile.)
    const fetched = b.requests.slice(before).filter((r) => /^\/v1\/hosts(\/[^/]+)?$/.test(new URL(r.url).pathname));
    assert.deepEqual(
      fetched.map((r) => r.url),
      [],
      'the label changed without fetching the host',
    );
  });

  test('filters by state and by pool', async () => {
    const byState = (s) =>
      Object.values(hosts)
        .filter((h) => h.state === s)
        .map((h) => h.id)
        .sort();
    await page.selectOption('#filter-state', 'ready');
    assert.deepEqual((await visibleHostIds()).sort(), byState('ready'));
    assert.equal(byState('ready').length, 2);
    assert.equal(await page.textContent('#host-count'), '(2 of 4)');
    await page.selectOption('#filter-state', 'quarantined');
    assert.deepEqual(await visibleHostIds(), [hosts.missing.id]);
    await page.selectOption('#filter-state', 'stopped');
    assert.deepEqual(await visibleHostIds(), []);
    assert.equal(await page.isVisible('#hosts-empty'), true);

    await page.selectOption('#filter-state', '');
    await page.selectOption('#filter-pool', pools.xss.id);
    assert.deepEqual(await visibleHostIds(), [hosts.l4.id]);
    await page.selectOption('#filter-pool', pools.h100.id);
    assert.deepEqual((await visibleHostIds()).sort(), [hosts.h100.id, hosts.missing.id, hosts.spare.id].sort());
    await page.selectOption('#filter-state', 'ready');
    assert.deepEqual(await visibleHostIds(), [hosts.h100.id], 'both filters together');
    await page.selectOption('#filter-state', '');
    await page.selectOption('#filter-pool', '');
    assert.equal((await visibleHostIds()).length, 4);
  });

  test('cost per completed unit per pool over the last 24 h', async () => {
    const rows = await page.$$eval('#costs tbody tr', (trs) =>
      trs.map((tr) => ({ pool: tr.getAttribute('data-pool-id'), cells: [...tr.cells].map((c) => c.textContent) })),
    );
    const l4 = rows.find((r) => r.pool === pools.xss.id);
    assert.ok(l4, `a row for the L4 pool: ${JSON.stringify(rows)}`);
    assert.equal(l4.cells[0], XSS);
    assert.match(l4.cells[2], /^[0-9.,]+ per 1,000 tokens$/);
    assert.equal(l4.cells[3], '4.8 %', 'failed/retried share: 6,000 of 126,000');
    const h100 = rows.find((r) => r.pool === pools.h100.id);
    assert.ok(h100, 'a row for the H100 pool');
    assert.equal(h100.cells[2], 'no tokens completed');
    // The same figures as the API for the page's window.
    const rep = expectStatus(await client.request('GET', `/v1/costs?group_by=pool`, { token: viewer }), 200);
    const api4 = rep.items.find((g) => g.id === pools.xss.id);
    assert.ok(api4.cost_per_completed_unit.tokens.per_1000 > 0);
  });

  test('open recommendations are listed, with the host names', async () => {
    const list = expectStatus(await client.request('GET', '/v1/recommendations', { token: viewer }), 200);
    const stop = list.items.find((r) => r.action === 'stop' && r.target.host_ids.includes(hosts.h100.id));
    assert.ok(stop, `the idle H100 gets a stop recommendation: ${JSON.stringify(list.items)}`);
    await page.waitForSelector(`#recs li[data-rec-id="${stop.id}"]`);
    const shown = await page.$$eval('#recs li', (lis) => lis.map((li) => li.getAttribute('data-rec-id')));
    assert.deepEqual(shown.sort(), list.items.map((r) => r.id).sort());
    const text = await page.textContent(`#recs li[data-rec-id="${stop.id}"]`);
    assert.match(text, /stop/);
    assert.ok(text.includes(hosts.h100.name), text);
    // "idle for 10804 s" grows by the second, and the coverage ("100%", "99.44%") moves too
    const digitless = (x) => x.replace(/\d+(\.\d+)?/g, 'N');
    assert.ok(digitless(text).includes(digitless(stop.reason)), `${text} / ${stop.reason}`);
  });

  test("each pool's last restore drill and its recovery time, live on drill.completed", async () => {
    for (const [verdict, secs] of [
      ['fail', 1200],
      ['pass', 61.5],
    ])
      psql(
        srv.database.url,
        `INSERT INTO drills (host_id, pool_id, verdict, reason, restore_seconds, start_seconds, first_work_seconds,` +
          ` recovery_seconds, max_recovery_seconds, bytes_restored, steps, started_at) VALUES ('${hosts.spare.id}',` +
          ` '${pools.h100.id}', '${verdict}', 'r', 1, 1, 1, ${secs}, 900, 1, '[]'::jsonb, now())`,
      );
    const sel = `#drills li[data-pool-id="${pools.h100.id}"][data-verdict="pass"]`;
    await page.waitForSelector(sel, { timeout: 15_000 });
    const text = await page.textContent(sel);
    assert.ok(text.includes('h100-nvlink') && text.includes('61.5 s') && text.includes('max 900 s'), text);
    assert.equal(await page.$$eval('#drills li', (lis) => lis.length), 1); // the newest per pool
  });

  test("a screenshot for the README: a realistic fleet on a server of its own, one host's view open", async () => {
    const shot = await startServer({
      name: 'ui-shot',
      env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '10.0.0.0/8', GPUFLEET_IDLE_POLICY_INTERVAL: '0' },
    });
    try {
      const c = api(shot);
      const demo = await seedDemo(shot, c, { admin: shot.token('admin'), operator: shot.token('operator') });
      const p = await b.page();
      await p.goto(`${shot.url}/ui/`);
      await view.signIn(p, shot.token('viewer', { sub: 'sre-oncall' }));
      const names = Object.keys(demo.hosts);
      await p.waitForFunction((n) => document.querySelectorAll('#hosts tbody tr').length === n, names.length);
      const want = {
        'gpu-h100-017': 'ok',
        'gpu-h100-018': 'degraded',
        'gpu-h100-021': 'critical',
        'gpu-h100-024': 'unreachable',
        'gpu-l4-103': 'unknown',
      };
      for (const [name, health] of Object.entries(want)) {
        await view.waitRow(
          p,
          demo.hosts[name].id,
          (r) => r && r.health === health && !/^[0-9a-f]{8}$/.test(r.stack),
          `${name}: ${health}`,
          15_000,
        );
      }
      await p.waitForSelector('#recs li');
      await p.waitForFunction(() => document.getElementById('live').textContent === 'live');
      const bad = demo.hosts['gpu-h100-021'].id;
      await p.click(`#hosts button[data-open-host="${bad}"]`);
      const v = await view.waitView(
        p,
        (x) => x && x.gpus.length === 8 && x.events.length >= 2,
        "the quarantined host's GPUs and events",
      );
      assert.ok(
        v.events.some((e) => e.event === 'Xid 79 hardware' && e.policy === 'isolate'),
        JSON.stringify(v.events),
      );
      const text = await p.textContent('body');
      assert.ok(!text.includes('<img') && !text.includes('onerror'), 'no test payload in the screenshot');
      fs.mkdirSync(path.dirname(SHOT), { recursive: true });
      await p.screenshot({ path: SHOT, fullPage: true });
      assert.deepEqual(await b.cspViolations(p), []);
      await p.context().close();
    } finally {
      await shot.stop();
    }
    assert.ok(fs.statSync(SHOT).size > 10_000);
    // The README's copy is refreshed on request only, so that a test run leaves the tree clean.
    if (process.env.GPUFLEET_UPDATE_SCREENSHOT === '1') {
      fs.mkdirSync(path.dirname(DOC_SHOT), { recursive: true });
      fs.copyFileSync(SHOT, DOC_SHOT);
    }
  });

  test('no CSP violation, console CSP report, page error or dialog the whole time', async () => {
    assert.deepEqual(await b.cspViolations(page), []);
    assert.deepEqual(
      b.consoleErrors.filter((m) => /Content Security Policy|Refused to/i.test(m)),
      [],
    );
    assert.deepEqual(b.pageErrors, []);
    assert.deepEqual(b.dialogs, []);
  });

  test('sign-out forgets the token and the data', async () => {
    await page.click('#signout');
    await page.waitForSelector('#signin:not([hidden])');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('gpufleet.token')), null);
    assert.equal(await page.locator('#hosts tbody tr').count(), 0);
    assert.equal(await page.textContent('#live'), 'offline');
  });
});
