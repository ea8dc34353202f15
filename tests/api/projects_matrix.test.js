'use strict';
// Every route × every role of project B × the objects of project A (issue 24): a member of
// B, whatever its role, never reads, lists, changes or creates into A. The table ROUTES
// holds one row per route of `gpufleetd routes`; a route without a row fails the first
// test, so a new route cannot ship without saying how it is scoped.
//
//   read     GET of one of A's objects: B answers 404 (or 403 at the door, when B's role
//            may not use the route at all); A's own admin answers 200 (the control that
//            the object exists and the 404 is the scope's)
//   list     B's page holds none of A's ids; a platform admin's holds them
//   write    B answers 404 or 403, and afterwards every object of A reads as before
//   create   a body naming project A: B answers 404 (or 403 at the door); nothing is made
//   stream   B's event stream, replayed from the start, holds no event of A
//   public   no token needed: nothing of a project is exposed
//   self     about the caller only (/v1/me)
//   platform platform admins only (projects themselves): B answers 403

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psqlUnguarded, runBin } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectStatus } = require('./lib/assert');
const { openStream } = require('./lib/sse');
const fleet = require('./lib/fleet');

const FP = 'SHA256:uGuZiKLFB1cv6TK4FSkk748vzZ525e0ThqAuUk8l+Bs';
const B_ROLES = ['viewer', 'operator', 'admin', 'reporter'];

let srv;
let client;
let platform; // a platform admin
const a = {}; // project A's world: tokens and objects
const b = {}; // project B's member tokens, by role

const body = (o) => o; // readability in the table

// One row per route. path(w) gives a concrete path on A's objects; body(w) a valid body.
const ROUTES = {
  'GET /healthz': { kind: 'public' },
  'GET /readyz': { kind: 'public' },
  'GET /metrics': { kind: 'public' },
  'GET /openapi.yaml': { kind: 'public' },
  'GET /ui': { kind: 'public' },
  'GET /ui/': { kind: 'public' },
  'GET /ui/{file}': { kind: 'public' },
  'GET /v1/me': { kind: 'self' },
  'GET /v1/audit-events': {
    kind: 'list',
    path: () => '/v1/audit-events?limit=500',
    ids: (w) => [w.host.id, w.pool.id],
  },
  'GET /v1/audit-events/{id}': { kind: 'read', path: (w) => `/v1/audit-events/${w.auditId}` },
  'GET /v1/projects': { kind: 'list', path: () => '/v1/projects?limit=500', ids: (w) => [w.project.id] },
  'POST /v1/projects': {
    kind: 'platform',
    path: () => '/v1/projects',
    body: () => body({ name: `p-${fleet.uniq()}` }),
  },
  'GET /v1/projects/{id}': { kind: 'read', path: (w) => `/v1/projects/${w.project.id}` },
  'PATCH /v1/projects/{id}': {
    kind: 'write',
    path: (w) => `/v1/projects/${w.project.id}`,
    body: () => ({ description: 'taken over' }),
  },
  'DELETE /v1/projects/{id}': { kind: 'write', path: (w) => `/v1/projects/${w.project.id}` },
  'GET /v1/projects/{id}/members': { kind: 'read', path: (w) => `/v1/projects/${w.project.id}/members` },
  'PUT /v1/projects/{id}/members/{subject}': {
    kind: 'write',
    path: (w) => `/v1/projects/${w.project.id}/members/intruder`,
    body: () => ({ role: 'admin' }),
  },
  'DELETE /v1/projects/{id}/members/{subject}': {
    kind: 'write',
    path: (w) => `/v1/projects/${w.project.id}/members/a-viewer`,
  },
  'GET /v1/gpu-models': { kind: 'list', path: () => '/v1/gpu-models?limit=500', ids: (w) => [w.model.key] },
  'POST /v1/gpu-models': {
    kind: 'create',
    path: () => '/v1/gpu-models',
    body: (w) => ({ ...w.modelBody(), project: w.project.name }),
  },
  'GET /v1/gpu-models/{key}': { kind: 'read', path: (w) => `/v1/gpu-models/${w.model.key}` },
  'PATCH /v1/gpu-models/{key}': {
    kind: 'write',
    path: (w) => `/v1/gpu-models/${w.model.key}`,
    body: () => ({ shared: true }),
  },
  'GET /v1/briefs': { kind: 'list', path: () => '/v1/briefs?limit=500', ids: (w) => [w.brief.id] },
  'POST /v1/briefs': {
    kind: 'create',
    path: () => '/v1/briefs',
    body: (w) => ({ ...w.briefBody(), project: w.project.name }),
  },
  'GET /v1/briefs/{id}': { kind: 'read', path: (w) => `/v1/briefs/${w.brief.id}` },
  'PUT /v1/briefs/{id}': {
    kind: 'write',
    path: (w) => `/v1/briefs/${w.brief.id}`,
    body: (w) => w.briefBody(),
    ifMatch: true,
  },
  'DELETE /v1/briefs/{id}': { kind: 'write', path: (w) => `/v1/briefs/${w.brief.id}` },
  'GET /v1/briefs/{id}/sizing': { kind: 'read', path: (w) => `/v1/briefs/${w.brief.id}/sizing` },
  'GET /v1/briefs/{id}/placement': { kind: 'read', path: (w) => `/v1/briefs/${w.brief.id}/placement` },
  'POST /v1/sizing': { kind: 'self' }, // sizes the body it is given: no project's object
  'GET /v1/stacks': { kind: 'list', path: () => '/v1/stacks?limit=500', ids: (w) => [w.stack.id] },
  'POST /v1/stacks': {
    kind: 'create',
    path: () => '/v1/stacks',
    body: () => ({ ...fleet.stackBody(), project: a.project.name }),
  },
  'GET /v1/stacks/{id}': { kind: 'read', path: (w) => `/v1/stacks/${w.stack.id}` },
  'PATCH /v1/stacks/{id}': { kind: 'write', path: (w) => `/v1/stacks/${w.stack.id}`, body: () => ({ shared: true }) },
  'GET /v1/stacks/{id}/lineage': { kind: 'read', path: (w) => `/v1/stacks/${w.stack.id}/lineage` },
  'GET /v1/credentials': { kind: 'list', path: () => '/v1/credentials?limit=500', ids: (w) => [w.cred.id] },
  'POST /v1/credentials': {
    kind: 'create',
    path: () => '/v1/credentials',
    body: (w) => ({ name: `c-${fleet.uniq()}`, private_key: w.key.text, project: w.project.name }),
  },
  'GET /v1/credentials/{id}': { kind: 'read', path: (w) => `/v1/credentials/${w.cred.id}` },
  'PATCH /v1/credentials/{id}': {
    kind: 'write',
    path: (w) => `/v1/credentials/${w.cred.id}`,
    body: () => ({ allowed_users: ['root'] }),
  },
  'DELETE /v1/credentials/{id}': { kind: 'write', path: (w) => `/v1/credentials/${w.cred.id}` },
  'GET /v1/pools': { kind: 'list', path: () => '/v1/pools?limit=500', ids: (w) => [w.pool.id] },
  'POST /v1/pools': {
    kind: 'create',
    path: () => '/v1/pools',
    body: (w) => ({ ...fleet.poolBody(), project: w.project.name }),
  },
  'GET /v1/pools/{id}': { kind: 'read', path: (w) => `/v1/pools/${w.pool.id}` },
  'PUT /v1/pools/{id}': {
    kind: 'write',
    path: (w) => `/v1/pools/${w.pool.id}`,
    body: () => fleet.poolBody(),
    ifMatch: true,
  },
  'DELETE /v1/pools/{id}': { kind: 'write', path: (w) => `/v1/pools/${w.pool.id}` },
  'POST /v1/pools/{id}/rollouts': {
    kind: 'write',
    path: (w) => `/v1/pools/${w.pool.id}/rollouts`,
    body: (w) => ({ stack_id: w.stack.id }),
  },
  'GET /v1/rollouts': { kind: 'list', path: () => '/v1/rollouts?limit=500', ids: (w) => [w.rolloutId] },
  'GET /v1/rollouts/{id}': { kind: 'read', path: (w) => `/v1/rollouts/${w.rolloutId}` },
  'POST /v1/rollouts/{id}/pause': { kind: 'write', path: (w) => `/v1/rollouts/${w.rolloutId}/pause` },
  'POST /v1/rollouts/{id}/resume': { kind: 'write', path: (w) => `/v1/rollouts/${w.rolloutId}/resume` },
  'POST /v1/rollouts/{id}/abort': { kind: 'write', path: (w) => `/v1/rollouts/${w.rolloutId}/abort` },
  'GET /v1/hosts': { kind: 'list', path: () => '/v1/hosts?limit=500', ids: (w) => [w.host.id] },
  'POST /v1/hosts': {
    kind: 'create',
    // a pool and credential of a project B may not see: the answer of an unknown reference
    also: [[400, 'invalid_field']],
    path: () => '/v1/hosts',
    body: (w) => ({
      name: `h-${fleet.uniq()}`,
      address: '127.0.0.1',
      user: 'gpufleet',
      credential_id: w.cred.id,
      pool_id: w.pool.id,
      trust_on_first_use: true,
    }),
  },
  'GET /v1/hosts/{id}': { kind: 'read', path: (w) => `/v1/hosts/${w.host.id}` },
  'PATCH /v1/hosts/{id}': {
    kind: 'write',
    path: (w) => `/v1/hosts/${w.host.id}`,
    body: () => ({ labels: { taken: 'over' } }),
  },
  'DELETE /v1/hosts/{id}': { kind: 'write', path: (w) => `/v1/hosts/${w.host.id}` },
  'POST /v1/hosts/{id}/provision': {
    kind: 'write',
    path: (w) => `/v1/hosts/${w.host.id}/provision`,
    body: (w) => ({ stack_id: w.stack.id }),
  },
  'POST /v1/hosts/{id}/gate': { kind: 'write', path: (w) => `/v1/hosts/${w.host.id}/gate` },
  'POST /v1/hosts/{id}/drain': { kind: 'write', path: (w) => `/v1/hosts/${w.host.id}/drain` },
  'POST /v1/hosts/{id}/resume': { kind: 'write', path: (w) => `/v1/hosts/${w.host.id}/resume` },
  'POST /v1/hosts/{id}/release': {
    kind: 'write',
    path: (w) => `/v1/hosts/${w.host.id}/release`,
    body: () => ({ reason: 'mine now', repin: true }),
  },
  'POST /v1/hosts/{id}/diagnostics': {
    kind: 'write',
    path: (w) => `/v1/hosts/${w.host.id}/diagnostics`,
    body: () => ({ level: 1 }),
  },
  'POST /v1/hosts/{id}/drills': { kind: 'write', path: (w) => `/v1/hosts/${w.host.id}/drills` },
  'GET /v1/hosts/{id}/drills': {
    kind: 'list',
    path: (w) => `/v1/hosts/${w.host.id}/drills`,
    ids: (w) => [w.drillId],
  },
  'GET /v1/drills': { kind: 'list', path: () => '/v1/drills?limit=500', ids: (w) => [w.drillId] },
  'GET /v1/drills/{id}': { kind: 'read', path: (w) => `/v1/drills/${w.drillId}` },
  'POST /v1/hosts/{id}/stop': {
    kind: 'write',
    path: (w) => `/v1/hosts/${w.host.id}/stop`,
    body: () => ({ reason: 'mine now' }),
  },
  // a list under the host: another project's host answers as an unknown one, an empty page
  'GET /v1/hosts/{id}/gate-runs': {
    kind: 'list',
    path: (w) => `/v1/hosts/${w.host.id}/gate-runs`,
    ids: (w) => [w.gateRunId],
  },
  'GET /v1/hosts/{id}/readiness': { kind: 'read', path: (w) => `/v1/hosts/${w.host.id}/readiness` },
  'GET /v1/hosts/{id}/recoveries': { kind: 'read', path: (w) => `/v1/hosts/${w.host.id}/recoveries` },
  'GET /v1/hosts/{id}/health': { kind: 'read', path: (w) => `/v1/hosts/${w.host.id}/health` },
  'GET /v1/hosts/{id}/samples': { kind: 'read', path: (w) => `/v1/hosts/${w.host.id}/samples` },
  'GET /v1/gpus': { kind: 'list', path: () => '/v1/gpus?limit=500', ids: (w) => [w.gpuUuid] },
  'GET /v1/gpus/{uuid}/events': { kind: 'read', path: (w) => `/v1/gpus/${w.gpuUuid}/events` },
  'GET /v1/gate-runs': { kind: 'list', path: () => '/v1/gate-runs?limit=500', ids: (w) => [w.gateRunId] },
  'GET /v1/gate-runs/{id}': { kind: 'read', path: (w) => `/v1/gate-runs/${w.gateRunId}` },
  'GET /v1/gate-runs/{id}/baseline-comparison': {
    kind: 'read',
    path: (w) => `/v1/gate-runs/${w.gateRunId}/baseline-comparison?stack=${w.stack.id}`,
  },
  'GET /v1/jobs': { kind: 'list', path: () => '/v1/jobs?limit=500', ids: (w) => [w.job.id] },
  'GET /v1/jobs/{id}': { kind: 'read', path: (w) => `/v1/jobs/${w.job.id}` },
  'POST /v1/jobs/{id}/cancel': { kind: 'write', path: (w) => `/v1/jobs/${w.job.id}/cancel` },
  'GET /v1/baselines': { kind: 'list', path: () => '/v1/baselines?limit=500', ids: (w) => [w.baselineId] },
  'GET /v1/baselines/{id}': { kind: 'read', path: (w) => `/v1/baselines/${w.baselineId}` },
  'GET /v1/work-reports': { kind: 'list', path: () => '/v1/work-reports?limit=500', ids: (w) => [w.host.id] },
  'POST /v1/work-reports': {
    kind: 'write',
    // a batch for another project's host answers as one outside the reporter's scope (as
    // for a host that does not exist), echoing the id the caller sent
    also: [[403, 'host_out_of_scope']],
    echoes: true,
    path: () => '/v1/work-reports',
    body: (w) => ({
      records: [
        {
          host_id: w.host.id,
          window_start: '2026-01-01T00:00:00Z',
          window_end: '2026-01-01T00:05:00Z',
          unit: 'requests',
          completed: 1,
          failed: 0,
          retried: 0,
          busy_seconds: 60,
        },
      ],
    }),
  },
  'GET /v1/costs': { kind: 'list', path: () => '/v1/costs?group_by=host', ids: (w) => [w.host.id] },
  'GET /v1/recommendations': { kind: 'list', path: () => '/v1/recommendations', ids: (w) => [w.host.id] },
  'GET /v1/bottlenecks': { kind: 'read', path: (w) => `/v1/bottlenecks?host=${w.host.id}` },
  'GET /v1/events': { kind: 'stream' },
  'POST /v1/event-tickets': { kind: 'self' }, // a ticket for the caller's own stream
  'POST /v1/tokens/revoke': {
    kind: 'platform', // a project's admin may not revoke (any project's) tokens
    path: () => '/v1/tokens/revoke',
    body: () => body({ sub: 'test-viewer' }),
  },
  'GET /v1/webhooks': { kind: 'list', path: () => '/v1/webhooks?limit=500', ids: (w) => [w.webhook.id] },
  'POST /v1/webhooks': {
    kind: 'create',
    path: () => '/v1/webhooks',
    body: (w) => ({ url: 'http://127.0.0.1:9/hook', event_types: ['host.state'], project: w.project.name }),
  },
  'GET /v1/webhooks/{id}': { kind: 'read', path: (w) => `/v1/webhooks/${w.webhook.id}` },
  'DELETE /v1/webhooks/{id}': { kind: 'write', path: (w) => `/v1/webhooks/${w.webhook.id}` },
  'GET /v1/webhooks/{id}/deliveries': { kind: 'read', path: (w) => `/v1/webhooks/${w.webhook.id}/deliveries` },
  'POST /v1/webhooks/{id}/replay': {
    kind: 'write',
    path: (w) => `/v1/webhooks/${w.webhook.id}/replay`,
    body: () => ({ from_event_id: 1 }),
  },
};

function routesOfBinary() {
  const r = runBin(['routes'], srv.env);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout
    .trim()
    .split('\n')
    .map((l) => l.split(/\s+/))
    .map(([m, p]) => `${m} ${p}`);
}

const IDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** Every object of A, as a platform admin reads it (what must not change). */
async function snapshot() {
  const paths = [
    `/v1/projects/${a.project.id}`,
    `/v1/projects/${a.project.id}/members`,
    `/v1/hosts/${a.host.id}`,
    `/v1/pools/${a.pool.id}`,
    `/v1/credentials/${a.cred.id}`,
    `/v1/stacks/${a.stack.id}`,
    `/v1/briefs/${a.brief.id}`,
    `/v1/gpu-models/${a.model.key}`,
    `/v1/jobs/${a.job.id}`,
    `/v1/webhooks/${a.webhook.id}`,
    `/v1/rollouts/${a.rolloutId}`,
    `/v1/work-reports?host_id=${a.host.id}`,
  ];
  const out = {};
  for (const p of paths) {
    const res = await client.request('GET', p, { token: platform });
    assert.equal(res.status, 200, `${p}: ${res.text}`);
    out[p] = JSON.stringify(res.body, (k, v) => (['usage', 'computed_at', 'cost'].includes(k) ? undefined : v));
  }
  return out;
}

async function call(route, token) {
  const [method] = route.split(' ');
  const row = ROUTES[route];
  const path = row.path(a);
  const headers = {};
  if (row.ifMatch) {
    const cur = await client.request('GET', path, { token: platform });
    headers['If-Match'] = cur.headers.etag;
  }
  return client.request(method, path, { token, body: row.body ? row.body(a) : undefined, headers });
}

// A 403 at the door (the role may not use the route anywhere) leaks nothing either.
// Also takes the other answers a row allows: the same as for an object that does not exist.
function refusedWithoutLeak(res, what, also = [], echoes = false) {
  assert.ok(
    res.status === 404 ||
      (res.status === 403 && ['insufficient_role'].includes(res.body.code)) ||
      also.some(([st, code]) => res.status === st && res.body && res.body.code === code),
    `${what}: want 404 (or 403 at the door), got ${res.status} ${res.text}`,
  );
  const text = JSON.stringify(res.body || {});
  if (echoes) return;
  for (const id of [a.host.id, a.pool.id, a.cred.id])
    assert.ok(!text.includes(id) || text.includes('"path"'), `${what} names ${id}`);
}

before(async () => {
  srv = await startServer({
    name: 'projmatrix',
    env: {
      GPUFLEET_WORKERS: '0',
      GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
      GPUFLEET_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
      GPUFLEET_ALLOW_UNSCOPED_REPORTERS: '1',
    },
  });
  client = api(srv);
  platform = srv.token('admin', { sub: 'platform' });
  const mk = async (name) =>
    expectStatus(await client.request('POST', '/v1/projects', { token: platform, body: { name } }), 201);
  a.project = await mk('team-a');
  b.project = await mk('team-b');
  a.admin = srv.token('admin', { sub: 'a-admin', project: 'team-a' });
  a.operator = srv.token('operator', { sub: 'a-operator', project: 'team-a' });
  for (const role of B_ROLES) b[role] = srv.token(role, { sub: `b-${role}`, project: 'team-b' });
  expectStatus(
    await client.request('PUT', `/v1/projects/${a.project.id}/members/a-viewer`, {
      token: platform,
      body: { role: 'viewer' },
    }),
    200,
  );
  // A's world, made by A's own members (no `project` needed: they are in one project).
  a.key = fleet.sshKey();
  a.cred = await fleet.createCredential(client, a.admin, a.key.text);
  // a gate workload: the accepted gate run below records a baseline
  a.pool = await fleet.createPool(client, a.admin, {
    gate: { workload: { command: ['python3', 'bench.py'], metric: 'tokens_per_second', min: 1000, timeout_s: 60 } },
  });
  a.stack = await fleet.createStack(client, a.operator);
  a.briefBody = () => ({
    name: `brief-${fleet.uniq()}`,
    kind: 'inference_batch',
    model: { name: 'acme/model-1b', parameter_count: 1e9, precision: 'bf16' },
    load: { concurrency: 1 },
    targets: [{ metric: 'items_per_hour', value: 10 }],
  });
  a.brief = expectStatus(await client.request('POST', '/v1/briefs', { token: a.operator, body: a.briefBody() }), 201);
  a.modelBody = () => ({
    key: `lab_${fleet.uniq()}`,
    display_name: 'ACME Lab Accelerator 96GB',
    memory_gib: 96,
    supported_formats: ['bf16'],
  });
  a.model = expectStatus(await client.request('POST', '/v1/gpu-models', { token: a.admin, body: a.modelBody() }), 201);
  a.host = await fleet.createHost(client, a.operator, {
    name: `a-host-${fleet.uniq()}`,
    address: '127.0.0.1',
    user: 'gpufleet',
    credential_id: a.cred.id,
    pool_id: a.pool.id,
    host_key_sha256: FP,
  });
  a.job = await fleet.provision(client, a.operator, a.host.id, a.stack.id);
  a.webhook = expectStatus(
    await client.request('POST', '/v1/webhooks', {
      token: a.admin,
      body: { url: 'http://127.0.0.1:9/hook', event_types: ['host.state'] },
    }),
    201,
  );
  // What no API makes without workers: a gate run, a baseline, a GPU, a rollout.
  const url = srv.database.url;
  const uuid = (sql) => psqlUnguarded(url, sql).match(IDS)[0];
  psqlUnguarded(url, `UPDATE hosts SET current_stack_id = '${a.stack.id}' WHERE id = '${a.host.id}'`);
  a.gateRunId = uuid(
    `INSERT INTO gate_runs (kind, host_id, stack_id, pool_id, gate_version, verdict, reason, checks, connect_ms, started_at)` +
      ` VALUES ('gate', '${a.host.id}', '${a.stack.id}', '${a.pool.id}', 1, 'accept', 'ok',` +
      ` '[{"name":"workload","status":"pass","hardware_evidence":false,"message":"ok","evidence":"","values":{"metric":"tokens_per_second","value":2400,"min":1000},"duration_ms":3,"phases":{"command_ms":2,"parse_ms":1}}]'::jsonb,` +
      ` 10, now()) RETURNING id`,
  );
  a.drillId = uuid(
    `INSERT INTO drills (host_id, pool_id, stack_id, verdict, reason, restore_seconds, start_seconds,` +
      ` first_work_seconds, recovery_seconds, max_recovery_seconds, bytes_restored, steps, started_at)` +
      ` VALUES ('${a.host.id}', '${a.pool.id}', '${a.stack.id}', 'pass', 'recovered in 3.0 s', 1, 1, 1, 3, 900,` +
      ` 1024, '[]'::jsonb, now()) RETURNING id`,
  );
  a.baselineId = (psqlUnguarded(url, `SELECT id FROM baselines WHERE gate_run_id = '${a.gateRunId}'`).match(IDS) ||
    [])[0];
  a.gpuUuid = 'GPU-aaaaaaaa-1111-2222-3333-444444444444';
  psqlUnguarded(
    url,
    `INSERT INTO gpus (uuid, host_id, first_seen, last_seen) VALUES ('${a.gpuUuid}', '${a.host.id}', now(), now())`,
  );
  a.rolloutId = uuid(
    `INSERT INTO rollouts (pool_id, stack_id, canary, max_unavailable, max_unavailable_hosts, soak_seconds,` +
      ` pause_after_canary, force, waves, created_by, state) VALUES ('${a.pool.id}', '${a.stack.id}', 1, '1', 1, 0,` +
      ` false, false, 1, 'a-admin', 'paused') RETURNING id`,
  );
  a.reporter = srv.token('reporter', { sub: 'a-reporter', project: 'team-a' });
  expectStatus(
    await client.request('POST', '/v1/work-reports', {
      token: a.reporter,
      body: {
        records: [
          {
            host_id: a.host.id,
            window_start: '2026-01-01T00:00:00Z',
            window_end: '2026-01-01T00:05:00Z',
            unit: 'requests',
            completed: 1,
            failed: 0,
            retried: 0,
            busy_seconds: 60,
          },
        ],
      },
    }),
    201,
  );
  const audit = expectStatus(
    await client.request('GET', `/v1/audit-events?resource_id=${a.host.id}&limit=1`, { token: platform }),
    200,
  );
  a.auditId = audit.items[0].id;
});

after(async () => {
  if (srv) await srv.stop();
});

describe('every route is scoped by project', () => {
  test('every route of gpufleetd routes has a row in this matrix', () => {
    const routes = routesOfBinary();
    const missing = routes.filter((r) => !(r in ROUTES));
    assert.deepEqual(missing, [], `routes without a row: ${missing.join(', ')}`);
    const stale = Object.keys(ROUTES).filter((r) => !routes.includes(r));
    assert.deepEqual(stale, [], `rows without a route: ${stale.join(', ')}`);
  });

  test("reads of A's objects: 200 for A, 404 for every role of B", async () => {
    for (const [route, row] of Object.entries(ROUTES)) {
      if (row.kind !== 'read') continue;
      const path = row.path(a);
      const own = await client.request('GET', path, { token: platform });
      assert.equal(own.status, 200, `control: ${route} ${path}: ${own.text}`);
      for (const role of B_ROLES)
        refusedWithoutLeak(await client.request('GET', path, { token: b[role] }), `${route} as B ${role}`);
    }
  });

  test("lists: B sees none of A's rows; a platform admin sees them", async () => {
    for (const [route, row] of Object.entries(ROUTES)) {
      if (row.kind !== 'list') continue;
      const path = row.path(a);
      const want = row.ids(a).filter(Boolean);
      const own = await client.request('GET', path, { token: platform });
      assert.equal(own.status, 200, `control: ${route}: ${own.text}`);
      for (const id of want) assert.ok(own.text.includes(id), `control: ${route} lists ${id} for a platform admin`);
      for (const role of B_ROLES) {
        const res = await client.request('GET', path, { token: b[role] });
        if (res.status === 403) continue; // the door: this role may not list at all
        assert.equal(res.status, 200, `${route} as B ${role}: ${res.text}`);
        for (const id of want) assert.ok(!res.text.includes(id), `${route} as B ${role} lists A's ${id}`);
      }
    }
  });

  test("writes on A's objects and creates into A: refused for every role of B, and nothing of A changes", async () => {
    const before = await snapshot();
    for (const [route, row] of Object.entries(ROUTES)) {
      if (row.kind !== 'write' && row.kind !== 'create') continue;
      for (const role of B_ROLES)
        refusedWithoutLeak(await call(route, b[role]), `${route} as B ${role}`, row.also, row.echoes);
    }
    assert.deepEqual(await snapshot(), before);
  });

  test("platform routes: B's admin may not create projects", async () => {
    for (const [route, row] of Object.entries(ROUTES)) {
      if (row.kind !== 'platform') continue;
      const res = await call(route, b.admin);
      assert.equal(res.status, 403, `${route}: ${res.text}`);
    }
  });

  test("B's event stream, replayed from the start, holds no event of A", async () => {
    const t = expectStatus(await client.request('POST', '/v1/event-tickets', { token: b.viewer }), 201);
    const s = await openStream(srv.url, { query: `?ticket=${t.ticket}`, headers: { 'Last-Event-ID': '0' } });
    assert.equal(s.status, 200);
    await new Promise((r) => setTimeout(r, 1500));
    s.close();
    for (const e of s.events)
      for (const id of [a.host.id, a.pool.id]) assert.ok(!e.data.includes(id), `B's stream carries A's ${id}`);
    const own = expectStatus(await client.request('POST', '/v1/event-tickets', { token: a.admin }), 201);
    const sa = await openStream(srv.url, { query: `?ticket=${own.ticket}`, headers: { 'Last-Event-ID': '0' } });
    await new Promise((r) => setTimeout(r, 1500));
    sa.close();
    assert.ok(
      sa.events.some((e) => e.data.includes(a.host.id)),
      "control: A's own stream carries A's host",
    );
  });
});
