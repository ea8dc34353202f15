'use strict';
// /metrics behind a token and a cache (issue 25, item 5): GPUFLEET_METRICS_TOKEN_FILE makes a
// scrape carry that file's token (401 without it or with another; the file is refused at
// start when group or others may read it, or when it is empty); the rendered body is kept
// for GPUFLEET_METRICS_CACHE_SECONDS, so two scrapes within the period get the same render
// (gpufleet_metrics_renders_total unchanged; a change made between them does not show), and
// scrapes that arrive together share one render.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { startServer, runBin, makeSecrets, sleep } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

const CACHE_S = 4;

const renders = (text) => Number(/^gpufleet_metrics_renders_total (\d+)$/m.exec(text)[1]);
const requestsOf = (text, route) =>
  [...text.matchAll(new RegExp(`^gpufleet_http_requests_total\\{route="${route}",[^}]*\\} (\\d+)$`, 'gm'))]
    .map((m) => Number(m[1]))
    .reduce((a, b) => a + b, 0);

let srv;
let client;
let token;
let secrets;

before(async () => {
  secrets = makeSecrets('gft-metrics');
  const file = path.join(secrets.dir, 'metrics.token');
  const r = runBin(['keygen', file], { PATH: process.env.PATH });
  assert.equal(r.status, 0, r.stderr);
  token = fs.readFileSync(file, 'utf8').trim();
  srv = await startServer({
    name: 'metrics-access',
    secrets,
    env: { GPUFLEET_METRICS_TOKEN_FILE: file, GPUFLEET_METRICS_CACHE_SECONDS: String(CACHE_S) },
  });
  client = api(srv);
});
after(() => srv && srv.stop());

describe('token', () => {
  test("no token: 401 missing_token; another token (or a JWT of the API): 401 invalid_token; the file's token: 200", async () => {
    expectProblem(await client.request('GET', '/metrics'), 401, 'missing_token');
    // the last character changed (to 'x', or 'y' where it was 'x': one token in 64 ends in 'x')
    const changed = token.slice(0, -1) + (token.endsWith('x') ? 'y' : 'x');
    assert.notEqual(changed, token);
    expectProblem(await client.request('GET', '/metrics', { token: changed }), 401, 'invalid_token');
    expectProblem(await client.request('GET', '/metrics', { token: token + 'x' }), 401, 'invalid_token');
    expectProblem(await client.request('GET', '/metrics', { token: srv.token('admin') }), 401, 'invalid_token');
    expectProblem(
      await client.request('GET', '/metrics', { headers: { Authorization: `Basic ${token}` } }),
      401,
      'invalid_token',
    );
    const res = await client.request('GET', '/metrics', { token });
    expectStatus(res, 200);
    assert.match(res.text, /^gpufleet_build_info\{/m);
    // The other public routes stay public.
    expectStatus(await client.request('GET', '/healthz'), 200);
  });

  test('the token is not in the log', () => {
    const log = fs.readFileSync(srv.logPath, 'utf8');
    assert.ok(!log.includes(token), 'the metrics token appears in the server log');
    assert.match(log, /"token_file":"[^"]*metrics\.token"/);
  });
});

describe('cache', () => {
  test('two scrapes within the period get the same render; a change between them shows only after the period', async () => {
    // Start just after a render, so that the two scrapes fall in one period.
    await sleep(CACHE_S * 1000 + 200);
    const a = await client.request('GET', '/metrics', { token });
    expectStatus(a, 200);
    // A change between the scrapes: requests to a route the render counts.
    for (let i = 0; i < 3; i++) expectStatus(await client.request('GET', '/healthz'), 200);
    const b = await client.request('GET', '/metrics', { token });
    expectStatus(b, 200);
    assert.equal(renders(b.text), renders(a.text), 'the second scrape rendered again');
    assert.equal(b.text, a.text, 'the second scrape differs from the first');
    await sleep(CACHE_S * 1000 + 200);
    const c = await client.request('GET', '/metrics', { token });
    assert.equal(renders(c.text), renders(a.text) + 1);
    assert.ok(requestsOf(c.text, '/healthz') >= requestsOf(a.text, '/healthz') + 3, 'the change did not show');
  });

  test('scrapes that arrive together share one render', async () => {
    await sleep(CACHE_S * 1000 + 200);
    const before0 = renders((await client.request('GET', '/metrics', { token })).text);
    await sleep(CACHE_S * 1000 + 200);
    const all = await Promise.all(Array.from({ length: 12 }, () => client.request('GET', '/metrics', { token })));
    for (const r of all) expectStatus(r, 200);
    const seen = new Set(all.map((r) => renders(r.text)));
    assert.deepEqual([...seen], [before0 + 1], `renders seen: ${[...seen]}`);
  });
});

describe('settings', () => {
  test('a token file that group or others may read, an empty one, a missing one, or a bad period stop the server at start', () => {
    const dir = fs.mkdtempSync(path.join(secrets.dir, 'bad-'));
    const open = path.join(dir, 'open.token');
    fs.writeFileSync(open, token + '\n', { mode: 0o644 });
    fs.chmodSync(open, 0o644);
    const group = path.join(dir, 'group.token');
    fs.writeFileSync(group, token + '\n');
    fs.chmodSync(group, 0o640);
    const empty = path.join(dir, 'empty.token');
    fs.writeFileSync(empty, '\n');
    fs.chmodSync(empty, 0o600);
    const spaced = path.join(dir, 'spaced.token');
    fs.writeFileSync(spaced, 'a'.repeat(20) + ' ' + 'b'.repeat(20));
    fs.chmodSync(spaced, 0o600);
    const cases = [
      [{ GPUFLEET_METRICS_TOKEN_FILE: open }, /GPUFLEET_METRICS_TOKEN_FILE: .*mode 0644.*group or others/],
      [{ GPUFLEET_METRICS_TOKEN_FILE: group }, /GPUFLEET_METRICS_TOKEN_FILE: .*mode 0640/],
      [{ GPUFLEET_METRICS_TOKEN_FILE: empty }, /GPUFLEET_METRICS_TOKEN_FILE: .*holds 0 bytes/],
      [{ GPUFLEET_METRICS_TOKEN_FILE: spaced }, /GPUFLEET_METRICS_TOKEN_FILE: the token must be printable/],
      [{ GPUFLEET_METRICS_TOKEN_FILE: path.join(dir, 'missing') }, /GPUFLEET_METRICS_TOKEN_FILE: cannot read/],
      [{ GPUFLEET_METRICS_CACHE_SECONDS: '-1' }, /GPUFLEET_METRICS_CACHE_SECONDS must be a whole number/],
      [{ GPUFLEET_METRICS_CACHE_SECONDS: '3601' }, /GPUFLEET_METRICS_CACHE_SECONDS/],
    ];
    for (const [over, want] of cases) {
      const r = runBin(['serve'], { ...srv.env, ...over }, { timeout: 20_000 });
      assert.notEqual(r.status, 0, `${JSON.stringify(over)} was accepted`);
      assert.match(r.stderr, want, `${JSON.stringify(over)}: ${r.stderr}`);
      assert.ok(!r.stderr.includes(token), 'the token is in the error');
    }
  });
});
