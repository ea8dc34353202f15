'use strict';
// Reading the status page the way a person would: what a host row shows, which rows are
// visible, waiting for a row to change; and signing in.

const assert = require('node:assert/strict');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** What the row of host `id` shows (null when there is no row). */
function rowOf(page, id) {
  return page.evaluate((hid) => {
    const tr = document.querySelector(`#hosts tbody tr[data-host-id="${hid}"]`);
    if (!tr) return null;
    const cell = (c) => tr.querySelector(`td[data-col="${c}"]`);
    const t = (c) => cell(c).textContent;
    const gate = cell('gate');
    return {
      hidden: tr.hidden,
      name: tr.querySelector('.host-name').textContent,
      labels: [...tr.querySelectorAll('.label')].map((x) => x.textContent),
      state: t('state'),
      pool: t('pool'),
      gpus: t('gpus'),
      stack: t('stack'),
      verdict: gate.querySelector('.verdict') ? gate.querySelector('.verdict').textContent : null,
      failing: gate.querySelector('.failing') ? gate.querySelector('.failing').textContent : '',
      gate: t('gate'),
      seen: t('seen'),
      health: cell('health').querySelector('.health').textContent,
      sampled: cell('health').querySelector('.sample-age')
        ? cell('health').querySelector('.sample-age').textContent
        : null,
      healthTitle: cell('health').getAttribute('title'),
    };
  }, id);
}

/** Host ids of the rows not hidden by the filters, in table order. */
function visibleHostIds(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('#hosts tbody tr')]
      .filter((tr) => !tr.hidden)
      .map((tr) => tr.getAttribute('data-host-id')),
  );
}

/** Waits until pred(row) holds (row may be null), polling the DOM; fails after timeout ms. */
async function waitRow(page, id, pred, what, timeout = 10_000) {
  const deadline = Date.now() + timeout;
  let row;
  for (;;) {
    row = await rowOf(page, id);
    if (pred(row)) return row;
    if (Date.now() > deadline) {
      assert.fail(
        `${what}: not shown within ${timeout} ms; the row shows ${JSON.stringify(row)}; live indicator: ${await page.textContent('#live')}`,
      );
    }
    await sleep(100);
  }
}

/** What the host view shows: its head, GPU rows and event rows (null when closed). */
function hostView(page) {
  return page.evaluate(() => {
    const v = document.getElementById('host-view');
    if (v.hidden) return null;
    const cells = (tr) => Object.fromEntries([...tr.cells].map((td) => [td.getAttribute('data-col'), td.textContent]));
    return {
      name: document.getElementById('hv-name').textContent,
      state: document.getElementById('hv-state').textContent,
      health: document.getElementById('hv-health').textContent,
      reason: document.getElementById('hv-reason').textContent,
      error: document.getElementById('hv-error').hidden ? null : document.getElementById('hv-error').textContent,
      gpus: [...document.querySelectorAll('#hv-gpus tbody tr')].map((tr) => ({
        uuid: tr.getAttribute('data-gpu-uuid'),
        ...cells(tr),
      })),
      events: [...document.querySelectorAll('#hv-events tbody tr')].map((tr) => ({
        id: tr.getAttribute('data-event-id'),
        ...cells(tr),
      })),
    };
  });
}

/** Waits until pred(view) holds, polling the DOM; fails after timeout ms. */
async function waitView(page, pred, what, timeout = 10_000) {
  const deadline = Date.now() + timeout;
  let v;
  for (;;) {
    v = await hostView(page);
    if (pred(v)) return v;
    if (Date.now() > deadline)
      assert.fail(`${what}: not shown within ${timeout} ms; the host view shows ${JSON.stringify(v)}`);
    await sleep(100);
  }
}

async function signIn(page, token) {
  await page.fill('#token', token);
  await page.click('#signin-form button[type="submit"]');
}

module.exports = { rowOf, visibleHostIds, waitRow, hostView, waitView, signIn };
