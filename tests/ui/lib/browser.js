'use strict';
// Headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, with
// everything a status-page test wants to assert on recorded from the start:
//
//   const b = await launch();
//   const page = await b.page();      // a fresh context: empty storage, no cookies
//   b.dialogs, b.pageErrors, b.consoleErrors, b.navigations, b.requests,
//   await b.cspViolations(page)
//   await b.close();
//
// A missing browser is an error (the test fails), never a skip.

const fs = require('node:fs');

const CHROMIUM = process.env.GPUFLEET_CHROMIUM || '/usr/bin/chromium';

function loadPlaywright() {
  try {
    return require('playwright-core');
  } catch (e) {
    throw new Error(`playwright-core is not installed (npm ci): ${e.message}`);
  }
}

// Collects CSP violations in the page itself. Injected by the browser before any page
// script (DevTools protocol), so the page's own policy does not apply to it.
const CSP_PROBE = `
  window.__cspViolations = [];
  document.addEventListener('securitypolicyviolation', (e) => {
    window.__cspViolations.push({ directive: e.violatedDirective, blocked: e.blockedURI, sample: e.sample });
  });
`;

async function launch({ viewport = { width: 1440, height: 900 } } = {}) {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: install Debian's chromium (scripts/bootstrap does as root)`);
  }
  const { chromium } = loadPlaywright();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true });
  const b = {
    browser,
    dialogs: [],
    pageErrors: [],
    consoleErrors: [],
    navigations: [],
    requests: [], // {url, headers} of every request the page made
    async page() {
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      await page.addInitScript(CSP_PROBE);
      page.on('dialog', (d) => {
        b.dialogs.push(`${d.type()}: ${d.message()}`);
        d.dismiss().catch(() => {});
      });
      page.on('pageerror', (e) => b.pageErrors.push(String(e && e.stack ? e.stack : e)));
      page.on('console', (m) => {
        if (m.type() === 'error') b.consoleErrors.push(m.text());
      });
      page.on('request', (r) => b.requests.push({ url: r.url(), headers: r.headers() }));
      page.on('framenavigated', (f) => {
        if (f === page.mainFrame()) b.navigations.push(f.url());
      });
      return page;
    },
    async cspViolations(page) {
      return page.evaluate(() => window.__cspViolations || []);
    },
    async close() {
      await browser.close();
    },
  };
  return b;
}

module.exports = { launch, CHROMIUM };
