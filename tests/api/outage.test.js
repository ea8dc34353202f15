'use strict';
// A database outage: the server keeps running, answers 503
// database_unavailable (never 500) while PostgreSQL is down, stays live on
// /healthz, and recovers by itself when PostgreSQL is back; an event stream opened
// before the outage stays open through it and carries events written after it.
// Uses its own PostgreSQL cluster (scripts/local-pg with a private var dir).

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { startServer, ROOT, sleep, psql } = require('./lib/server');
const { openStream } = require('./lib/sse');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

let varDir;
let pgUrl;
let srv;
let client;
let viewer;
let stream;

function localPg(cmd) {
  const r = spawnSync(path.join(ROOT, 'scripts', 'local-pg'), [cmd], {
    env: { ...process.env, GPUFLEET_VAR_DIR: varDir },
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`scripts/local-pg ${cmd} failed (${r.status}):\n${r.stderr}`);
  return r.stdout.trim().split('\n').pop();
}

before(async () => {
  varDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gft-outage-'));
  pgUrl = localPg('start');
  srv = await startServer({ name: 'outage', databaseUrl: pgUrl, env: { GPUFLEET_EVENTS_HEARTBEAT_SECONDS: '1' } });
  client = api(srv);
  viewer = srv.token('viewer', { sub: 'outage-viewer' });
});

after(async () => {
  if (stream && !stream.endedFlag) stream.close();
  if (srv) await srv.stop();
  if (varDir) {
    try {
      localPg('stop');
    } catch (e) {
      console.error(e.message);
    }
    fs.rmSync(varDir, { recursive: true, force: true });
  }
});

const GET = () => client.request('GET', '/v1/gpu-models?limit=2', { token: viewer });

test('before the outage: 200', async () => {
  expectStatus(await GET(), 200);
  expectStatus(await client.request('GET', '/readyz'), 200);
  stream = await openStream(srv.url, { token: viewer });
  assert.equal(stream.status, 200);
});

test('PostgreSQL down: 503 database_unavailable, /healthz 200, process alive', async () => {
  localPg('stop');
  const res = await GET();
  expectProblem(res, 503, 'database_unavailable');
  // and again (no pooled dead connection turns into a 500 later)
  expectProblem(await GET(), 503, 'database_unavailable');
  expectProblem(await client.request('GET', '/v1/gpu-models/h100_sxm', { token: viewer }), 503, 'database_unavailable');
  expectProblem(await client.request('GET', '/readyz'), 503, 'database_unavailable');
  expectStatus(await client.request('GET', '/healthz'), 200);
  expectStatus(await client.request('GET', '/metrics'), 200);
  // Auth does not need the database: a bad token is still a 401.
  expectProblem(await client.request('GET', '/v1/gpu-models'), 401, 'missing_token');
  assert.ok(srv.alive(), 'gpufleetd exited during the outage');
});

test('PostgreSQL back: 200 again within 15 s, same process', async () => {
  const pid = srv.process.pid;
  localPg('start');
  const deadline = Date.now() + 15_000;
  let res;
  for (;;) {
    res = await GET();
    if (res.status === 200) break;
    expectProblem(res, 503, 'database_unavailable');
    assert.ok(Date.now() < deadline, 'still 503 after 15 s');
    await sleep(250);
  }
  expectStatus(res, 200);
  expectStatus(await client.request('GET', '/readyz'), 200);
  assert.ok(srv.alive());
  assert.equal(srv.process.pid, pid);
});

test('the event stream stayed open through the outage and carries an event written after it', async () => {
  assert.ok(!stream.endedFlag, 'the stream ended during the outage');
  const beats = stream.comments.length;
  await stream.waitFor((ev, st) => st.comments.length > beats, 5000, 'a heartbeat');
  psql(
    pgUrl,
    `INSERT INTO events (type, project_id, data) VALUES ('recommendation.withdrawn', '00000000-0000-4000-8000-000000000001', '{"recommendation_id":"9b0f7a8e-1c2d-4e3f-8a9b-0c1d2e3f4a5b","action":"stop"}')`,
  );
  await stream.waitFor(
    (ev) => ev.some((e) => e.json && e.json.recommendation_id === '9b0f7a8e-1c2d-4e3f-8a9b-0c1d2e3f4a5b'),
    15000,
    'the event',
  );
  const e = stream.events.find((x) => x.json && x.json.recommendation_id);
  assert.equal(e.event, 'recommendation.withdrawn');
  assert.equal(e.json.type, 'recommendation.withdrawn');
  stream.close();
});
