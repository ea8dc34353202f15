'use strict';
// The project selector and the budgets on the status page (ui/projects.js), in headless
// Chromium against a real gpufleetd and PostgreSQL, without workers. Two projects, A
// (budget 100: thresholds 50/80/100) and B (budget 1000: 25/50), each with a pool and a
// host (pools moved into their project with psql, as their create bodies will name it).
// The budget pass is off: its figures (project_spend) are written with psql, as the pass
// writes them, and a budget.threshold event as it emits one. Checked: the selector's
// options come from /v1/me and /v1/projects; each budget item shows the spend against
// the budget (a <meter>), the share used, the forecast (flagged over the budget) and the
// thresholds crossed; choosing a project narrows the budgets and the costs and asks the
// lists with ?project=; a budget.threshold event redraws the bar without a reload; a
// member of B sees only B; no CSP violation, no page error.

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

let srv, client, admin, bert, b, page, projA, projB;
const pools = {};
const sql = (q) => psql(srv.database.url, q);

/** What the budgets card shows, by project name. */
function budgets() {
  return page.evaluate(() =>
    Object.fromEntries(
      [...document.querySelectorAll('#budgets li')].map((li) => {
        const f = (n) => {
          const x = li.querySelector(`[data-field="${n}"]`);
          if (!x) return null;
          const strong = x.querySelector('strong');
          return strong ? strong.textContent : x.textContent;
        };
        const bar = li.querySelector('meter');
        return [
          f('name'),
          {
            id: li.getAttribute('data-project-id'),
            spend: f('spend'),
            used: f('used'),
            forecast: f('forecast'),
            over: Boolean(li.querySelector('.budget-forecast.over')),
            exhausted: f('exhausted'),
            bar: bar ? { value: bar.value, max: bar.max } : null,
            thresholds: [...li.querySelectorAll('.threshold')].map((t) => [
              t.textContent,
              t.classList.contains('crossed'),
            ]),
            noBudget: Boolean(li.querySelector('[data-field="no-budget"]')),
          },
        ];
      }),
    ),
  );
}

const selector = () =>
  page.evaluate(() => {
    const s = document.getElementById('project');
    return {
      shown: !document.getElementById('project-pick').hidden,
      value: s.value,
      options: [...s.options].map((o) => [o.value, o.textContent]),
    };
  });
const costPools = () =>
  page.evaluate(() => [...document.querySelectorAll('#costs tbody tr')].map((tr) => tr.getAttribute('data-pool-id')));

async function waitFor(fn, pred, what) {
  const deadline = Date.now() + LIVE_MS;
  let v;
  for (;;) {
    v = await fn();
    if (pred(v)) return v;
    if (Date.now() > deadline)
      assert.fail(`${what}: not shown within ${LIVE_MS} ms; the page shows ${JSON.stringify(v)}`);
    await sleep(100);
  }
}

/** project_spend as the budget pass writes it (this month, UTC). */
function spend(p, amount, burn, forecast, exhausted = false) {
  sql(
    `INSERT INTO project_spend (project_id, month, spend, burn_per_hour, forecast, exhausted)` +
      ` VALUES ('${p.id}', date_trunc('month', now() AT TIME ZONE 'UTC')::date, ${amount}, ${burn}, ${forecast}, ${exhausted})` +
      ` ON CONFLICT (project_id) DO UPDATE SET spend = excluded.spend, burn_per_hour = excluded.burn_per_hour,` +
      ` forecast = excluded.forecast, exhausted = excluded.exhausted, computed_at = now()`,
  );
}

before(async () => {
  srv = await startServer({
    name: 'ui-projects',
    env: {
      GPUFLEET_WORKERS: '0',
      GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
      GPUFLEET_IDLE_POLICY_INTERVAL: '0',
      GPUFLEET_BUDGET_INTERVAL: '0',
    },
  });
  client = api(srv);
  admin = srv.token('admin', { sub: 'ui-platform' });
  const mk = async (body) => expectStatus(await client.request('POST', '/v1/projects', { token: admin, body }), 201);
  projA = await mk({ name: 'ml-serving', budget: { monthly: 100 } });
  projB = await mk({ name: 'training', budget: { monthly: 1000, thresholds_pct: [25, 50] } });
  bert = srv.token('viewer', { sub: 'ui-bert', project: projB.name });
  for (const [k, p] of [
    ['a', projA],
    ['b', projB],
  ]) {
    const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
    pools[k] = await fleet.createPool(client, admin, { name: `pool-${k}`, price_per_hour: 2 });
    sql(`UPDATE credentials SET project_id = '${p.id}' WHERE id = '${cred.id}'`);
    sql(`UPDATE pools SET project_id = '${p.id}' WHERE id = '${pools[k].id}'`);
    await fleet.createHost(client, admin, {
      name: `host-${k}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pools[k].id,
    });
  }
  spend(projA, 60, 2.5, 1860);
  spend(projB, 100, 0, 100);
  b = await launch();
  page = await b.page();
  await page.goto(`${srv.url}/ui/`);
  await view.signIn(page, admin);
  await page.waitForFunction(() => document.getElementById('live').textContent === 'live', null, { timeout: LIVE_MS });
});

after(async () => {
  if (b) await b.close().catch(() => {});
  if (srv) await srv.stop();
});

describe('projects and budgets', () => {
  test('the selector lists the projects /v1/projects gives; a budget bar per project', async () => {
    const sel = await waitFor(selector, (s) => s.options.length === 4, 'the selector');
    assert.deepEqual(sel, {
      shown: true,
      value: '',
      options: [
        ['', 'all projects'],
        ['00000000-0000-4000-8000-000000000001', 'default'],
        [projA.id, 'ml-serving'],
        [projB.id, 'training'],
      ],
    });
    const all = await waitFor(budgets, (x) => x['ml-serving'] && x.training, 'the budgets');
    assert.deepEqual(all['ml-serving'], {
      id: projA.id,
      spend: '60.00 of 100.00',
      used: '60 %',
      forecast: '1,860.00',
      over: true,
      exhausted: null,
      bar: { value: 60, max: 100 },
      thresholds: [
        ['50 %', true],
        ['80 %', false],
        ['100 %', false],
      ],
      noBudget: false,
    });
    assert.deepEqual(all.training.thresholds, [
      ['25 %', false],
      ['50 %', false],
    ]);
    assert.equal(all.training.used, '10 %');
    assert.equal(all.training.over, false);
    assert.equal(all.default.noBudget, true);
    assert.equal(all.default.bar, null);
    assert.deepEqual((await costPools()).sort(), [pools.a.id, pools.b.id].sort());
  });

  test('choosing a project narrows the budgets and the costs, and asks the lists with ?project=', async () => {
    const from = b.requests.length;
    await page.selectOption('#project', projA.id);
    await waitFor(budgets, (x) => Object.keys(x).join() === 'ml-serving', 'A alone');
    await waitFor(costPools, (x) => x.join() === pools.a.id, "A's pool alone in the costs");
    const asked = b.requests.slice(from).map((r) => new URL(r.url));
    for (const path of ['/v1/hosts', '/v1/costs', '/v1/recommendations']) {
      // the newest: a refresh already under way when the project changed (the costs follow
      // work-report events) may land just after `from`, asked for the old selection
      const u = asked.findLast((x) => x.pathname === path);
      assert.ok(u, `${path} asked again`);
      assert.equal(u.searchParams.get('project'), projA.id, `${path} narrowed to A`);
    }
    assert.equal((await selector()).value, projA.id);
  });

  test('a budget.threshold event redraws the bar without a reload', async () => {
    const navigations = b.navigations.length;
    spend(projA, 105, 3, 2000, true);
    sql(
      `INSERT INTO events (type, project_id, data) VALUES ('budget.threshold', '${projA.id}',` +
        ` jsonb_build_object('project', jsonb_build_object('id', '${projA.id}', 'name', 'ml-serving'),` +
        ` 'threshold_pct', 100, 'spend', 105, 'budget', 100, 'month', '2026-01-01', 'forecast', 2000))`,
    );
    const a = await waitFor(
      budgets,
      (x) => x['ml-serving'] && x['ml-serving'].spend === '105.00 of 100.00',
      'the new spend',
    );
    assert.equal(a['ml-serving'].exhausted, 'exhausted (notify)');
    assert.deepEqual(a['ml-serving'].bar, { value: 100, max: 100 });
    assert.deepEqual(
      a['ml-serving'].thresholds.map((t) => t[1]),
      [true, true, true],
    );
    assert.equal(b.navigations.length, navigations, 'no reload');
    // Back to every project.
    await page.selectOption('#project', '');
    await waitFor(budgets, (x) => Object.keys(x).length === 3, 'every project again');
  });

  test("a member of B sees only B's budget and costs", async () => {
    const p2 = await b.page();
    await p2.goto(`${srv.url}/ui/`);
    await view.signIn(p2, bert);
    const old = page;
    page = p2;
    try {
      const sel = await waitFor(selector, (s) => s.options.length === 2, 'the selector');
      assert.deepEqual(sel.options, [
        ['', 'all my projects'],
        [projB.id, 'training'],
      ]);
      const x = await waitFor(budgets, (v) => v.training, "B's budget");
      assert.deepEqual(Object.keys(x), ['training']);
      await waitFor(costPools, (v) => v.join() === pools.b.id, "B's pool alone in the costs");
      assert.deepEqual(await b.cspViolations(p2), []);
    } finally {
      page = old;
    }
    assert.deepEqual(await b.cspViolations(page), []);
    assert.deepEqual(b.pageErrors, []);
    assert.deepEqual(b.dialogs, []);
  });
});
