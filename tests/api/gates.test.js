'use strict';
// The acceptance gate, drain/resume, active diagnostics, gate runs and the
// readiness checklist through the API, without SSH: the server runs with
// GPUFLEET_WORKERS=0, so every job stays queued. The refusals (409
// not_provisioned / host_busy / host_drained / host_not_drained /
// gate_required), body validation, roles, 404s, the audit trail, and the
// readiness answers of a fresh host and of one with a recorded accepted gate.
// Real gates over SSH are in tests/fleet/gate.test.js.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql, psqlUnguarded } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const NIL = '00000000-0000-4000-8000-000000000000';
const QUESTIONS = [
  'brief',
  'topology',
  'stack_pinned',
  'state_separation',
  'access',
  'baseline',
  'observability',
  'recovery',
  'idle_stop',
];

let srv;
let client;
let admin;
let operator;
let viewer;
let cred;
let pool;
let stack;
let key;
let n = 0;

async function register(overrides = {}) {
  return fleet.createHost(client, operator, {
    name: `g-${process.pid}-${++n}`,
    address: '127.0.0.1',
    port: 2222,
    user: 'gpufleet',
    credential_id: cred.id,
    pool_id: pool.id,
    ...overrides,
  });
}
async function getHost(id) {
  return expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: viewer }), 200);
}
async function post(path, { token = operator, body, headers } = {}) {
  return client.request('POST', path, { token, body, headers });
}
async function auditOf(action, resourceId) {
  const q = `/v1/audit-events?action=${action}&resource_id=${resourceId}`;
  return expectStatus(await client.request('GET', q, { token: admin }), 200).items;
}
async function readiness(id) {
  const r = expectStatus(await client.request('GET', `/v1/hosts/${id}/readiness`, { token: viewer }), 200);
  assert.deepEqual(
    r.questions.map((q) => q.id),
    QUESTIONS,
  );
  return { ...r, byId: Object.fromEntries(r.questions.map((q) => [q.id, q])) };
}

/** A passed check as the gate records it. */
function passed(name, values, message = 'ok') {
  return {
    name,
    status: 'pass',
    hardware_evidence: false,
    message,
    evidence: '',
    values,
    duration_ms: 3,
    phases: { command_ms: 2, parse_ms: 1 },
  };
}
/**
 * Record an accepted gate run of host h on gateStack, as a worker would (without workers
 * no gate can run), and make it the host's acceptance; the host is drained on
 * currentStack. Returns the run id.
 */
function recordAcceptedGate(h, checks, { currentStack = stack.id, gateStack = stack.id } = {}) {
  const url = srv.database.url;
  const json = JSON.stringify(checks).replace(/'/g, "''");
  const runId = psqlUnguarded(
    url,
    `UPDATE hosts SET current_stack_id = '${currentStack}', desired_stack_id = '${currentStack}', state = 'drained' WHERE id = '${h.id}';` +
      ` INSERT INTO gate_runs (kind, host_id, stack_id, pool_id, gate_version, verdict, reason, checks, connect_ms, started_at)` +
      ` VALUES ('gate', '${h.id}', '${gateStack}', '${pool.id}', 1, 'accept', 'every check passed', '${json}'::jsonb, 12.5, now()) RETURNING id;`,
  )
    .split('\n')
    .find((l) => UUID_RE.test(l));
  psqlUnguarded(url, `UPDATE hosts SET accepted_gate_run_id = '${runId}' WHERE id = '${h.id}'`);
  return runId;
}

before(async () => {
  srv = await startServer({
    name: 'gates',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  key = fleet.sshKey();
  cred = await fleet.createCredential(client, admin, key.text);
  pool = await fleet.createPool(client, admin, { gpu_model: 'h100_sxm', gpu_count: 8, interconnect: 'nvlink' });
  stack = await fleet.createStack(client, operator);
});

after(async () => {
  if (srv) await srv.stop();
});

describe('gate', () => {
  test('a host that was never provisioned answers 409 not_provisioned', async () => {
    const h = await register();
    expectProblem(await post(`/v1/hosts/${h.id}/gate`), 409, 'not_provisioned');
    const doc = await getHost(h.id);
    assert.equal(doc.state, 'registered');
    assert.equal(doc.last_gate, null, 'no gate ran: last_gate is null');
    assert.equal((await auditOf('host.gate', h.id)).length, 0);
  });

  test('a host with a queued job answers 409 host_busy', async () => {
    const h = await register();
    await fleet.provision(client, operator, h.id, stack.id); // stays queued: no workers
    expectProblem(await post(`/v1/hosts/${h.id}/gate`), 409, 'host_busy');
  });

  test('a host with a desired stack and no job gets 202 with a gate job and its Location', async () => {
    const h = await register();
    const prov = await fleet.provision(client, operator, h.id, stack.id);
    expectStatus(await post(`/v1/jobs/${prov.id}/cancel`), 202);
    const res = await post(`/v1/hosts/${h.id}/gate`, { headers: { 'Idempotency-Key': `gate-${h.id}` } });
    const job = expectStatus(res, 202);
    assert.equal(job.kind, 'gate');
    assert.equal(job.host_id, h.id);
    assert.equal(job.state, 'queued');
    assert.equal(job.stack_id, null);
    assert.deepEqual(job.params, {});
    assert.equal(res.headers.get('location'), `/v1/jobs/${job.id}`);
    // a replay answers the same job; a second gate is refused while it is queued
    const again = await post(`/v1/hosts/${h.id}/gate`, { headers: { 'Idempotency-Key': `gate-${h.id}` } });
    assert.equal(expectStatus(again, 202).id, job.id);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    expectProblem(await post(`/v1/hosts/${h.id}/gate`), 409, 'host_busy');
    const got = expectStatus(await client.request('GET', `/v1/jobs/${job.id}`, { token: viewer }), 200);
    assert.deepEqual(got.params, {});
    assert.deepEqual(got.steps, []);
    const ev = await auditOf('host.gate', h.id);
    assert.equal(ev.length, 1);
  });

  test('viewer and reporter may not gate, drain, resume or run diagnostics', async () => {
    const h = await register();
    for (const token of [viewer, srv.token('reporter')]) {
      expectProblem(await post(`/v1/hosts/${h.id}/gate`, { token }), 403, 'insufficient_role');
      expectProblem(await post(`/v1/hosts/${h.id}/drain`, { token }), 403, 'insufficient_role');
      expectProblem(await post(`/v1/hosts/${h.id}/resume`, { token }), 403, 'insufficient_role');
      expectProblem(
        await post(`/v1/hosts/${h.id}/diagnostics`, { token, body: { level: 1 } }),
        403,
        'insufficient_role',
      );
    }
    expectProblem(await client.request('POST', `/v1/hosts/${h.id}/gate`), 401, 'missing_token');
    assert.equal((await getHost(h.id)).state, 'registered');
  });

  test('unknown hosts answer 404', async () => {
    for (const id of [NIL, 'not-a-uuid']) {
      expectProblem(await post(`/v1/hosts/${id}/gate`), 404, 'not_found');
      expectProblem(await post(`/v1/hosts/${id}/drain`), 404, 'not_found');
      expectProblem(await post(`/v1/hosts/${id}/resume`), 404, 'not_found');
      expectProblem(await post(`/v1/hosts/${id}/diagnostics`, { body: { level: 1 } }), 404, 'not_found');
      expectProblem(await client.request('GET', `/v1/hosts/${id}/readiness`, { token: viewer }), 404, 'not_found');
      expectProblem(await client.request('GET', `/v1/gate-runs/${id}`, { token: viewer }), 404, 'not_found');
    }
    expectProblem(await client.request('GET', `/v1/hosts/not-a-uuid/gate-runs`, { token: viewer }), 404, 'not_found');
  });
});

describe('drain, diagnostics and resume', () => {
  let h;
  before(async () => {
    h = await register();
  });

  test('diagnostics on a host that is not drained answers 409 host_not_drained', async () => {
    expectProblem(await post(`/v1/hosts/${h.id}/diagnostics`, { body: { level: 1 } }), 409, 'host_not_drained');
    assert.equal((await auditOf('host.diagnostics', h.id)).length, 0);
  });

  test('resume of a host that is not drained answers 409 host_not_drained', async () => {
    expectProblem(await post(`/v1/hosts/${h.id}/resume`), 409, 'host_not_drained');
  });

  test('drain of an idle host answers 200 drained; draining again changes nothing', async () => {
    const d = expectStatus(await post(`/v1/hosts/${h.id}/drain`), 200);
    assert.equal(d.id, h.id);
    assert.equal(d.state, 'drained');
    const hist = d.state_history.slice(0, 2).map((x) => [x.from, x.to]);
    assert.deepEqual(hist, [
      ['draining', 'drained'],
      ['registered', 'draining'],
    ]);
    assert.match(d.state_history[1].reason, /drain requested by/);
    const again = expectStatus(await post(`/v1/hosts/${h.id}/drain`), 200);
    assert.equal(again.state, 'drained');
    assert.equal(again.state_history.length, d.state_history.length);
    const ev = await auditOf('host.drain', h.id);
    assert.equal(ev.length, 1, 'only the drain that changed the state is audited');
    assert.equal(ev[0].role, 'operator');
  });

  test('drain and resume take no body or {"reason"} only: any other member or body is 400, nothing changes', async () => {
    const h4 = await register();
    const bad = [
      [{ reason: 'x', force: true }, 'unknown_field', 'force'],
      [{ why: 'x' }, 'unknown_field', 'why'],
      [{ reason: '' }, 'invalid_field', 'reason'],
      [{ reason: 'x'.repeat(501) }, 'invalid_field', 'reason'],
      [{ reason: 'a\nb' }, 'invalid_field', 'reason'],
      [{ reason: 7 }, 'invalid_field', 'reason'],
    ];
    for (const verb of ['drain', 'resume']) {
      for (const [body, code, field] of bad) {
        expectProblem(await post(`/v1/hosts/${h4.id}/${verb}`, { body }), 400, code, field);
      }
      for (const raw of ['[]', '"drain"', '42', 'null', '{"reason":']) {
        const res = await client.request('POST', `/v1/hosts/${h4.id}/${verb}`, {
          token: operator,
          rawBody: raw,
          contentType: 'application/json',
        });
        assert.equal(res.status, 400, `${verb} ${raw}: ${res.status} ${res.text}`);
      }
      const text = await client.request('POST', `/v1/hosts/${h4.id}/${verb}`, {
        token: operator,
        rawBody: '{"reason":"x"}',
        contentType: 'text/plain',
      });
      assert.equal(text.status, 415, `${verb} text/plain: ${text.status} ${text.text}`);
    }
    assert.equal((await getHost(h4.id)).state, 'registered', 'a refused drain changed nothing');
    assert.equal((await auditOf('host.drain', h4.id)).length, 0);
    // the reason is audited and in the history
    const d = expectStatus(await post(`/v1/hosts/${h4.id}/drain`, { body: { reason: 'rack 12 maintenance' } }), 200);
    assert.equal(d.state, 'drained');
    assert.match(d.state_history[1].reason, /^drain requested by .*: rack 12 maintenance$/);
    const ev = await auditOf('host.drain', h4.id);
    assert.equal(ev.length, 1);
    assert.equal(ev[0].reason, 'rack 12 maintenance');
  });

  test('a drained host runs no gate: 409 host_drained', async () => {
    // give it a desired stack first (so not_provisioned does not answer)
    const h2 = await register();
    const prov = await fleet.provision(client, operator, h2.id, stack.id);
    expectStatus(await post(`/v1/jobs/${prov.id}/cancel`), 202);
    expectStatus(await post(`/v1/hosts/${h2.id}/drain`), 200);
    assert.equal((await getHost(h2.id)).state, 'drained');
    expectProblem(await post(`/v1/hosts/${h2.id}/gate`), 409, 'host_drained');
  });

  test('draining a host with a queued job leaves it draining', async () => {
    const h3 = await register();
    await fleet.provision(client, operator, h3.id, stack.id);
    const d = expectStatus(await post(`/v1/hosts/${h3.id}/drain`), 200);
    assert.equal(d.state, 'draining');
    expectProblem(await post(`/v1/hosts/${h3.id}/diagnostics`, { body: { level: 1 } }), 409, 'host_not_drained');
  });

  test('the diagnostics body is validated', async () => {
    for (const [body, code, field] of [
      [{ level: 0 }, 'invalid_field', 'level'],
      [{ level: 4 }, 'invalid_field', 'level'],
      [{ level: 'x' }, 'invalid_field', 'level'],
      [{ level: 1.5 }, 'invalid_field', 'level'],
      [{}, 'missing_field', 'level'],
      [{ level: 1, extra: true }, 'unknown_field', 'extra'],
    ]) {
      expectProblem(await post(`/v1/hosts/${h.id}/diagnostics`, { body }), 400, code, field);
    }
    const res = await client.request('POST', `/v1/hosts/${h.id}/diagnostics`, { token: operator });
    assert.ok([400, 415].includes(res.status), `no body: ${res.status} ${res.text}`);
  });

  test('diagnostics on a drained host answers 202 with params.level', async () => {
    const res = await post(`/v1/hosts/${h.id}/diagnostics`, { body: { level: 2 } });
    const job = expectStatus(res, 202);
    assert.equal(job.kind, 'diagnostics');
    assert.deepEqual(job.params, { level: 2 });
    assert.equal(res.headers.get('location'), `/v1/jobs/${job.id}`);
    const listed = expectStatus(
      await client.request('GET', `/v1/jobs?kind=diagnostics&host_id=${h.id}`, { token: viewer }),
      200,
    );
    assert.deepEqual(
      listed.items.map((j) => [j.id, j.params.level]),
      [[job.id, 2]],
    );
    expectProblem(await post(`/v1/hosts/${h.id}/diagnostics`, { body: { level: 1 } }), 409, 'host_busy');
    const ev = await auditOf('host.diagnostics', h.id);
    assert.equal(ev.length, 1);
    assert.equal(ev[0].status, 202);
  });

  test('resume without an accepted gate answers 409 gate_required', async () => {
    expectProblem(await post(`/v1/hosts/${h.id}/resume`), 409, 'gate_required');
    assert.equal((await getHost(h.id)).state, 'drained');
  });
});

describe('gate runs', () => {
  test('lists are empty while no gate ran', async () => {
    const h = await register();
    for (const q of [
      '/v1/gate-runs',
      `/v1/gate-runs?host_id=${h.id}`,
      `/v1/hosts/${h.id}/gate-runs`,
      `/v1/hosts/${NIL}/gate-runs`,
      '/v1/gate-runs?verdict=accept&kind=gate',
    ]) {
      const page = expectStatus(await client.request('GET', q, { token: viewer }), 200);
      assert.deepEqual(page, { items: [], next_cursor: null }, q);
    }
  });

  test('filters are validated', async () => {
    expectProblem(
      await client.request('GET', '/v1/gate-runs?verdict=maybe', { token: viewer }),
      400,
      'invalid_parameter',
      'verdict',
    );
    expectProblem(
      await client.request('GET', '/v1/gate-runs?kind=provision', { token: viewer }),
      400,
      'invalid_parameter',
      'kind',
    );
    expectProblem(
      await client.request('GET', '/v1/gate-runs?host_id=x', { token: viewer }),
      400,
      'invalid_parameter',
      'host_id',
    );
    expectProblem(
      await client.request('GET', '/v1/gate-runs?bogus=1', { token: viewer }),
      400,
      'unknown_parameter',
      'bogus',
    );
    expectProblem(
      await client.request('GET', `/v1/hosts/${NIL}/gate-runs?host_id=${NIL}`, { token: viewer }),
      400,
      'unknown_parameter',
      'host_id',
    );
    expectProblem(await client.request('GET', '/v1/gate-runs?cursor=zzz', { token: viewer }), 400, 'invalid_cursor');
  });
});

describe('readiness', () => {
  test('a fresh host: nine questions, mostly no or unknown', async () => {
    const h = await register();
    const r = await readiness(h.id);
    assert.equal(r.host_id, h.id);
    assert.equal(r.state, 'registered');
    assert.equal(r.summary.of, 9);
    const a = Object.fromEntries(r.questions.map((q) => [q.id, q.answer]));
    assert.deepEqual(a, {
      brief: 'unknown',
      topology: 'no',
      stack_pinned: 'no',
      state_separation: 'unknown',
      access: 'no', // no host key pinned yet
      baseline: 'no', // no accepted gate, so no workload baseline
      observability: 'unknown',
      recovery: 'no',
      idle_stop: 'no',
    });
    assert.equal(r.summary.yes, 0);
    for (const q of r.questions) {
      assert.ok(q.question.endsWith('?'), q.question);
      assert.equal(typeof q.evidence, 'object');
    }
    assert.equal(r.byId.idle_stop.evidence.auto_stop, false);
    assert.equal(r.byId.idle_stop.evidence.pool_id, pool.id);
    assert.equal(r.byId.access.evidence.credential_id, cred.id);
    assert.equal(r.byId.topology.evidence.gate_covers_current_stack, null, 'no accepted gate');
    assert.equal(r.byId.baseline.evidence.values, null);
  });

  test('a pinned host key answers access yes', async () => {
    const h = await register({ host_key_sha256: 'SHA256:uGuZiKLFB1cv6TK4FSkk748vzZ525e0ThqAuUk8l+Bs' });
    const r = await readiness(h.id);
    assert.equal(r.byId.access.answer, 'yes');
    assert.equal(r.byId.access.evidence.key_type, 'ssh-ed25519');
    assert.equal(r.summary.yes, 1);
  });

  test('viewer may read it; the ETag answers 304', async () => {
    const h = await register();
    const res = await client.request('GET', `/v1/hosts/${h.id}/readiness`, { token: viewer });
    expectStatus(res, 200);
    assert.ok(res.headers.get('etag'));
    const again = await client.request('GET', `/v1/hosts/${h.id}/readiness`, {
      token: viewer,
      headers: { 'If-None-Match': res.headers.get('etag') },
    });
    assert.equal(again.status, 304);
  });

  test('a recorded accepted gate for the current stack: readiness yes, resume to ready, gate-runs listed', async () => {
    const h = await register({ host_key_sha256: 'SHA256:uGuZiKLFB1cv6TK4FSkk748vzZ525e0ThqAuUk8l+Bs' });
    const runId = recordAcceptedGate(h, [
      passed('gpu_inventory', { gpu_count: 8 }, '8 GPUs'),
      passed('workload', { metric: 'tokens_per_second', value: 2400, min: 1000 }),
      passed('topology', null),
    ]);

    const r = await readiness(h.id);
    assert.equal(r.byId.topology.answer, 'yes');
    assert.equal(r.byId.topology.evidence.gate_run_id, runId);
    assert.equal(r.byId.topology.evidence.gate_covers_current_stack, true);
    assert.equal(r.byId.baseline.answer, 'yes');
    assert.equal(r.byId.baseline.evidence.values.value, 2400);
    assert.equal(r.byId.stack_pinned.answer, 'yes');
    assert.equal(r.byId.stack_pinned.evidence.stack_id, stack.id);
    assert.equal(r.byId.access.answer, 'yes');
    assert.equal(r.summary.yes, 4);

    const run = expectStatus(await client.request('GET', `/v1/gate-runs/${runId}`, { token: viewer }), 200);
    assert.equal(run.verdict, 'accept');
    assert.deepEqual((await getHost(h.id)).last_gate, {
      id: runId,
      verdict: 'accept',
      failing_checks: [],
      finished_at: run.finished_at,
    });
    assert.equal(run.job_id, null);
    assert.equal(run.diag_level, null);
    assert.equal(run.checks.length, 3);
    for (const q of [`/v1/hosts/${h.id}/gate-runs`, `/v1/gate-runs?host_id=${h.id}&verdict=accept&kind=gate`]) {
      const page = expectStatus(await client.request('GET', q, { token: viewer }), 200);
      assert.deepEqual(
        page.items.map((x) => x.id),
        [runId],
        q,
      );
    }
    const none = expectStatus(
      await client.request('GET', `/v1/hosts/${h.id}/gate-runs?kind=diagnostics`, { token: viewer }),
      200,
    );
    assert.deepEqual(none.items, []);

    const res = expectStatus(
      await post(`/v1/hosts/${h.id}/resume`, { body: { reason: 'diagnostics passed (INC-7)' } }),
      200,
    );
    assert.equal(res.state, 'ready');
    assert.equal(res.state_history[0].from, 'drained');
    assert.match(res.state_history[0].reason, /accepted gate.*: diagnostics passed \(INC-7\)$/);
    const resumed = await auditOf('host.resume', h.id);
    assert.equal(resumed.length, 1);
    assert.equal(resumed[0].reason, 'diagnostics passed (INC-7)');
    // resume of a ready host is allowed too; diagnostics are refused on it
    assert.equal(expectStatus(await post(`/v1/hosts/${h.id}/resume`), 200).state, 'ready');
    expectProblem(await post(`/v1/hosts/${h.id}/diagnostics`, { body: { level: 1 } }), 409, 'host_not_drained');
    // a gate on a ready host is accepted (its stack is current)
    const job = expectStatus(await post(`/v1/hosts/${h.id}/gate`), 202);
    assert.equal(job.kind, 'gate');
  });

  test('an accepted gate recorded on another stack answers topology and baseline no', async () => {
    // The host moved to a new stack while its acceptance still points at a run on the old
    // one (written as a worker would not): the run says nothing about the new stack.
    const h = await register({ host_key_sha256: 'SHA256:uGuZiKLFB1cv6TK4FSkk748vzZ525e0ThqAuUk8l+Bs' });
    const other = await fleet.createStack(client, operator);
    const runId = recordAcceptedGate(
      h,
      [passed('workload', { metric: 'tokens_per_second', value: 2400, min: 1000 }), passed('topology', null)],
      {
        currentStack: other.id,
      },
    );

    const r = await readiness(h.id);
    for (const id of ['topology', 'baseline']) {
      const q = r.byId[id];
      assert.equal(q.answer, 'no', `${id}: ${JSON.stringify(q)}`);
      assert.equal(q.evidence.gate_run_id, runId);
      assert.equal(q.evidence.gate_stack_id, stack.id);
      assert.equal(q.evidence.gate_covers_current_stack, false);
    }
    assert.equal(r.byId.baseline.evidence.workload_status, 'pass', 'the run is still shown');
    assert.equal(r.byId.stack_pinned.evidence.stack_id, other.id);
    assert.equal(r.summary.yes, 2); // stack_pinned and access
    // resume applies the same rule
    expectProblem(await post(`/v1/hosts/${h.id}/resume`), 409, 'gate_required');
  });

  test('the host document carries the newest gate run in brief: verdict and the checks that failed or timed out, in order', async () => {
    const h = await register();
    const url = srv.database.url;
    const chk = (name, status) => ({
      name,
      status,
      hardware_evidence: false,
      message: status,
      evidence: '',
      values: null,
      duration_ms: 1,
      phases: { command_ms: 1, parse_ms: 0 },
    });
    const record = (kind, verdict, checks, at) =>
      psql(
        url,
        `INSERT INTO gate_runs (kind, host_id, stack_id, pool_id, gate_version, diag_level, verdict, reason, checks, started_at, finished_at)` +
          ` VALUES ('${kind}', '${h.id}', '${stack.id}', '${pool.id}', 1, ${kind === 'diagnostics' ? 1 : 'NULL'}, '${verdict}', 'recorded by the test',` +
          ` '${JSON.stringify(checks)}'::jsonb, '${at}', '${at}') RETURNING id;`,
      )
        .split('\n')
        .find((l) => UUID_RE.test(l));
    record('gate', 'accept', [chk('gpu_inventory', 'pass'), chk('storage', 'pass')], '2026-01-01T10:00:00Z');
    const newest = record(
      'gate',
      'investigate',
      [
        chk('gpu_inventory', 'pass'),
        chk('container_gpu', 'warn'),
        chk('workload', 'timeout'),
        chk('topology', 'skip'),
        chk('storage', 'fail'),
        chk('observability', 'skip'),
      ],
      '2026-01-02T10:00:00Z',
    );
    // a later diagnostics run is not a gate: last_gate stays on the gate run
    record('diagnostics', 'isolate', [chk('diagnostics', 'fail')], '2026-01-03T10:00:00Z');

    const want = {
      id: newest,
      verdict: 'investigate',
      failing_checks: ['workload', 'storage'],
      finished_at: '2026-01-02T10:00:00.000000Z',
    };
    assert.deepEqual((await getHost(h.id)).last_gate, want);
    const page = expectStatus(
      await client.request('GET', `/v1/hosts?pool_id=${pool.id}&limit=500`, { token: viewer }),
      200,
    );
    assert.deepEqual(page.items.find((x) => x.id === h.id).last_gate, want, 'the list renders the same document');
  });
});
